"""The public collectives: ``allreduce``, ``reduce_scatter`` and ``allgather``.

One signature for all three, in the manner of mpi4py and CuPy::

    collective(sendbuf, recvbuf=None, *, comm=None, op="sum", algorithm="auto",
               check=None, stream=None, **params)

* ``recvbuf=None`` allocates the result and returns it; ``recvbuf`` given is filled and
  returned.
* In place, as with ``MPI.IN_PLACE``: pass ``sendbuf=collectives.IN_PLACE`` (or
  ``MPI.IN_PLACE``, or the same array as both) with the input in ``recvbuf``.  For
  ``reduce_scatter`` ``recvbuf`` then holds all ``nranks`` blocks and the result is its
  first block; for ``allgather`` this rank's block is taken from its place in ``recvbuf``.
* ``comm`` is an mpi4py intracommunicator (``MPI.COMM_WORLD`` by default) to run over
  MPI, or a :class:`~collectives.executors.nccl.NcclComm` to run over NCCL.
* ``algorithm`` is ``ring``, ``tree``, ``rhd``, ``pipeline``, ``hier`` (with
  ``ranks_per_node=``), ``native`` (the library's own collective) or ``auto`` (:func:`collectives.auto.choose`).  The environment variable
  ``COLLSIM_ALGO`` overrides it for every call, as ``NCCL_ALGO`` does for NCCL; ``params``
  are then kept only if the forced algorithm is the one asked for.  The ``COLLSIM_*``
  variables are read when a call of a new shape is checked (:mod:`collectives.calls`): a
  change while the program runs counts from :func:`collectives.release` on.  ``params`` include
  ``channels=C`` for every algorithm, bounded by ``COLLSIM_MIN_NCHANNELS`` and
  ``COLLSIM_MAX_NCHANNELS`` (:mod:`collectives.nchannels`).
* Ranks that disagree raise :class:`ArgumentMismatchError` by default: every message's
  tag carries the call's signature (:mod:`collectives.executors.guard`), and ``native``
  over MPI first exchanges signed hellos (:mod:`collectives.executors.hello`), so a rank
  in MPI's collective beside ranks in a schedule raises too.  ``check=True`` (or
  ``COLLSIM_CHECK=1``) makes the ranks agree on collective, count, dtype, op, algorithm
  and params first, so every rank names the difference.  ``check=False`` drops the
  hellos: ``native`` then calls MPI's collective bare, at mpi4py's own cost, and ranks
  that disagree get whatever MPI makes of it (an MPI error, a wrong result, a hang);
  schedules keep their signed tags, which cost nothing.  Over an ``NcclComm``, which has
  no tags, the ranks agree over its MPI communicator the first time they meet a call
  shape (:meth:`~collectives.executors.nccl.NcclComm.agree_once`), unless ``check=False``.
* ``stream`` (CuPy buffers) is the CUDA stream to work on, the current one by default.
  The call returns with the work enqueued on it, as NCCL and CuPy do.

Importing this module imports neither mpi4py nor CuPy.
"""

from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from reprlib import repr as brief
from typing import Any, Iterator

import numpy as np

from . import auto
from .calls import BoundCall, Prepared, key, lookup, remember
from .build import ALGORITHMS, COMPOSED
from .nchannels import clamp_channels
from .executors import transport_for
from .executors.nccl import NcclComm
from .executors.buffers import IN_PLACE, Call, prepare
from .executors.check import check_enabled, signature
from .executors.extrema import keyed_dtype
from .executors.mpi import MPI_COUNT_MAX
from .executors.plan import get_plan
from .ops import GPU_DTYPES, check_op, check_op_dtype

__all__ = ["IN_PLACE", "ALGORITHM_ENV", "CHOICES", "allreduce", "reduce_scatter", "allgather"]

#: environment variable that forces an algorithm for every call (as ``NCCL_ALGO``)
ALGORITHM_ENV = "COLLSIM_ALGO"

#: the algorithms that run with no parameters (tools that run every choice take these)
CHOICES: tuple[str, ...] = (*ALGORITHMS, "native", "auto")
#: what ``algorithm=`` accepts: also the composed ones, which need ``ranks_per_node=``
ACCEPTED: tuple[str, ...] = (*CHOICES, *COMPOSED)


def _resolve_algorithm(algorithm: str, call: Call, nranks: int, op: str,
                       params: dict[str, Any], native_carries: bool
                       ) -> tuple[str, dict[str, Any]]:
    forced = os.environ.get(ALGORITHM_ENV, "").strip()
    if forced:
        if forced not in ACCEPTED:
            raise ValueError(f"{ALGORITHM_ENV}={forced!r} is not allowed; choose one of "
                             f"{list(ACCEPTED)}")
        if forced != algorithm:
            params = {}
        algorithm = forced
    elif algorithm not in ACCEPTED:
        raise ValueError(f"algorithm={brief(algorithm)} is not supported; choose one of "
                         f"{list(ACCEPTED)}")
    if algorithm in ("native", "auto") and params:
        raise TypeError(f"algorithm={brief(algorithm)} takes no parameters, got "
                        f"{sorted(params)}; name an algorithm to tune it")
    if algorithm == "auto":
        algorithm, params = auto.choose(call.collective, call.nbytes, nranks, call.dtype.itemsize)
        if algorithm == "native" and (not native_carries  # no datatype for it there
                                      or keyed_dtype(op, call.dtype) is None  # nor keys
                                      or call.collective != "allreduce"
                                      and call.part > MPI_COUNT_MAX):  # nor such a count
            algorithm, params = auto.static_choice(call.collective, call.nbytes, nranks)
    if "channels" in params:
        params = {**params, "channels": clamp_channels(params["channels"])}
    return algorithm, params


def check_call(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: Any,
               algorithm: str, check: bool | None,
               params: dict[str, Any]) -> tuple[Prepared, Call]:
    """Check a call in full and decide what it runs; no communication happens here.

    Parameters
    ----------
    collective : str
        The collective.
    sendbuf, recvbuf, comm, op, algorithm, check, params
        As passed to :func:`allreduce` etc.

    Returns
    -------
    prepared : Prepared
        What was decided, to bind (:class:`~collectives.calls.BoundCall`).
    call : Call
        The buffers, laid out.

    Raises
    ------
    TypeError, ValueError
        For bad buffers, an unknown op or algorithm, or a bad parameter.
    """
    op = check_op(op)
    transport = transport_for(comm)
    call = prepare(collective, sendbuf, recvbuf, transport.size)
    if collective != "allgather":
        check_op_dtype(op, call.dtype)
    # MPI has no datatype for a byte-swapped dtype, nor for bfloat16 (NCCL has one)
    native_carries = call.dtype.isnative and (call.dtype.name not in GPU_DTYPES
                                              or transport.name == "nccl")
    algorithm, params = _resolve_algorithm(algorithm, call, transport.size, op, params,
                                           native_carries)
    native = algorithm == "native"
    transport.validate(call, op, native)
    plan = None if native else get_plan(collective, algorithm, transport.size, transport.rank,
                                        call.count, call.dtype, params)
    if plan is not None and collective == "reduce_scatter":
        block = plan.output
        assert block.stop - block.start == call.part, "layout.block must cut equal blocks"
    # over an NcclComm, which has no tags, the ranks agree once per call shape unless
    # check=False (NcclComm.agree_once); with check on, every call agrees
    checked = check_enabled(check)
    once = not checked and check is not False and transport.name == "nccl"
    agreed = (signature(collective, call.count, call.dtype.name, op, algorithm, params)
              if checked or once else None)
    shape = replace(call, send=None, recv=None, result=None)
    return Prepared(comm, transport, shape, op, algorithm, call.send is None, plan, agreed,
                    once, check is not False), call


def _collective(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: str,
                algorithm: str, check: bool | None, stream: Any,
                params: dict[str, Any]) -> Any:
    facts = key(collective, sendbuf, recvbuf, comm, op, algorithm, check, stream, params)
    bound = lookup(facts)
    if bound is not None:
        return bound(sendbuf, recvbuf)
    if stream is None and not isinstance(comm, NcclComm):
        return _first_call(collective, sendbuf, recvbuf, comm, op, algorithm, check, stream,
                           params, facts)
    with on_device(comm, stream):
        return _first_call(collective, sendbuf, recvbuf, comm, op, algorithm, check, stream,
                           params, facts)


@contextmanager
def on_device(comm: Any, stream: Any) -> Iterator[None]:
    """Make the communicator's GPU (an ``NcclComm``'s), then ``stream``, current while a
    call is prepared and run: ``recvbuf``, the input's copy, the scratch and the default
    stream are theirs.

    Parameters
    ----------
    comm : Any
        The call's communicator.
    stream : cupy.cuda.Stream or None
        The call's stream.
    """
    device = comm.device if isinstance(comm, NcclComm) else None
    with nullcontext() if device is None else device, \
            nullcontext() if stream is None else stream:
        yield


def _first_call(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: str,
                algorithm: str, check: bool | None, stream: Any, params: dict[str, Any],
                facts: tuple | None) -> Any:
    """Check the call in full, bind it, remember it, and run it."""
    prepared, call = check_call(collective, sendbuf, recvbuf, comm, op, algorithm, check, params)
    bound = BoundCall(prepared)
    remember(facts, bound)
    if call.xp is not np and stream is None:
        stream = call.xp.cuda.get_current_stream()
    return bound.first(call, stream)


def allreduce(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None, op: str = "sum",
              algorithm: str = "auto", check: bool | None = None, stream: Any = None,
              **params: Any) -> Any:
    """Reduce ``sendbuf`` over all ranks with ``op``; every rank gets the result.

    Parameters
    ----------
    sendbuf : numpy.ndarray, cupy.ndarray or IN_PLACE
        This rank's input (C-contiguous).
    recvbuf : numpy.ndarray or cupy.ndarray, optional
        The output, as many elements as ``sendbuf``; allocated when None.
    comm : mpi4py.MPI.Intracomm or NcclComm, optional
        The ranks; ``MPI.COMM_WORLD`` by default.
    op : str or mpi4py.MPI.Op
        The reduction: ``sum``, ``prod``, ``max``, ``min``, ``land``, ``lor``, ``lxor``,
        ``band``, ``bor`` or ``bxor`` where MPI defines it for the dtype
        (:data:`collectives.ops.OP_KINDS`), or mpi4py's ``MPI.SUM`` etc.; over an
        ``NcclComm`` also NCCL's ``avg`` (integer and floating dtypes).
    algorithm : {"auto", "ring", "tree", "rhd", "pipeline", "native"}
        The schedule to run, or the library's own collective.
    check : bool, optional
        True: agree on the arguments across ranks first.  None (default): as
        ``COLLSIM_CHECK`` says, else signed messages (and hellos before ``native``).
        False: ``native`` runs MPI's collective bare, without hellos.
    stream : cupy.cuda.Stream, optional
        The stream for CuPy buffers; the current stream by default.
    **params
        The algorithm's tuning parameters (:func:`collectives.algorithm_params`).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``recvbuf``, holding the reduction.

    Raises
    ------
    TypeError, ValueError
        For bad buffers, an unknown op or algorithm, or a bad parameter, before any
        communication.
    ArgumentMismatchError
        When ranks disagree on the arguments (with ``check``, on every rank, first).
    CommunicatorBrokenError
        When a collective failed on ``comm`` before.

    Examples
    --------
    Under ``mpirun -n 2``:

    >>> import numpy as np, collectives                     # doctest: +SKIP
    >>> collectives.allreduce(np.arange(3.0), algorithm="ring")  # doctest: +SKIP
    array([0., 2., 4.])
    """
    return _collective("allreduce", sendbuf, recvbuf, comm, op, algorithm, check, stream, params)


def reduce_scatter(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None, op: str = "sum",
                   algorithm: str = "auto", check: bool | None = None, stream: Any = None,
                   **params: Any) -> Any:
    """Reduce ``sendbuf`` over all ranks; rank ``r`` gets block ``r`` of the result.

    ``sendbuf`` holds ``nranks x recvbuf.size`` elements (as ``MPI_Reduce_scatter_block``
    and ``ncclReduceScatter``). Parameters, returns and raises as :func:`allreduce`; the
    result is ``recvbuf`` (in place: its first block).

    Examples
    --------
    Under ``mpirun -n 2``:

    >>> collectives.reduce_scatter(np.arange(4.0))   # doctest: +SKIP
    array([0., 2.])                                  # on rank 0; [4., 6.] on rank 1
    """
    return _collective("reduce_scatter", sendbuf, recvbuf, comm, op, algorithm, check, stream,
                       params)


def allgather(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None, algorithm: str = "auto",
              check: bool | None = None, stream: Any = None, **params: Any) -> Any:
    """Gather every rank's ``sendbuf``, in rank order, into ``recvbuf`` on every rank.

    Parameters
    ----------
    sendbuf : numpy.ndarray, cupy.ndarray or IN_PLACE
        This rank's input (C-contiguous); with IN_PLACE, this rank's block of ``recvbuf``.
    recvbuf : numpy.ndarray or cupy.ndarray, optional
        The output, ``nranks x sendbuf.size`` elements; allocated with shape
        ``(nranks * sendbuf.shape[0], ...)`` when None.
    comm : mpi4py.MPI.Intracomm or NcclComm, optional
        The ranks; ``MPI.COMM_WORLD`` by default.
    algorithm : {"auto", "ring", "tree", "rhd", "pipeline", "native"}
        The schedule to run, or the library's own collective.
    check : bool, optional
        True: agree on the arguments across ranks first.  None (default): as
        ``COLLSIM_CHECK`` says, else signed messages (and hellos before ``native``).
        False: ``native`` runs MPI's collective bare, without hellos.
    stream : cupy.cuda.Stream, optional
        The stream for CuPy buffers; the current stream by default.
    **params
        The algorithm's tuning parameters (:func:`collectives.algorithm_params`).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``recvbuf``, holding every rank's block in rank order.

    Raises
    ------
    TypeError, ValueError
        For bad buffers, an unknown algorithm, or a bad parameter, before any
        communication.
    ArgumentMismatchError
        With ``check``, on every rank, when ranks disagree on the arguments.

    Examples
    --------
    Under ``mpirun -n 2``:

    >>> collectives.allgather(np.full(2, rank))   # doctest: +SKIP
    array([0, 0, 1, 1])
    """
    return _collective("allgather", sendbuf, recvbuf, comm, "sum", algorithm, check, stream,
                       params)
