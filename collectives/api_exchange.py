"""The public Broadcast, Reduce, AllToAll and AllToAllv calls, over MPI or NCCL on NumPy or
CuPy buffers.

Signatures after mpi4py's (``Bcast``, ``Reduce``, ``Alltoall``, ``Alltoallv``) and the
keywords of :mod:`collectives.api`::

    broadcast(buf, *, root=0, comm=None, algorithm="auto", check=None, stream=None, **params)
    reduce(sendbuf, recvbuf=None, *, root=0, op="sum", comm=None, algorithm="auto", ...)
    alltoall(sendbuf, recvbuf=None, *, comm=None, algorithm="auto", ...)
    alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, *, comm=None, ...)

``algorithm`` is one of the schedules that serve the collective
(:func:`collectives.registry.names`), ``native`` (the library's own: ``MPI_Bcast``,
``MPI_Reduce``, ``MPI_Alltoall``, ``MPI_Alltoallv``, entries of
:data:`~collectives.executors.mpi.NATIVE_MPI`; over an :class:`~collectives.NcclComm`
``ncclBroadcast``, ``ncclReduce`` and grouped ``ncclSend``/``ncclRecv``, entries of
:data:`~collectives.executors.nccl.NATIVE_NCCL`) or ``auto``, which chooses as MPICH's
defaults do (:func:`collectives.auto.mpich_choice`).  Every argument is checked before
any communication (:mod:`collectives.exchange_calls`); ``alltoallv``'s counts are
exchanged first (one allgather of every rank's counts) and checked for agreement, so that
every rank raises the same :class:`~collectives.ArgumentMismatchError` or builds the same
schedule.  A checked call then runs through the one call path (:mod:`collectives.calls`):
it binds a :class:`~collectives.calls.BoundCall`, which the call cache keeps for NumPy
buffers over MPI (not an AllToAllv's, whose counts are agreed on every call, nor a
Reduce's off its root).  Ranks that disagree on anything else raise as the other
collectives' schedules do (every message's tag carries the call's signature, root and
counts included); ``check=True`` (or ``COLLSIM_CHECK=1``) makes them agree on the whole
call first, ``native`` included, which otherwise runs bare over MPI, without hellos; over
an ``NcclComm`` the ranks agree once per call shape unless ``check=False``.

CuPy buffers run as the other collectives' do: over MPI staged through host memory, or
directly where MPI is CUDA-aware; over NCCL on the communicator's GPU, enqueued on
``stream`` (the current one by default).  Persistent handles (``broadcast_init``, ...)
are in :mod:`collectives.handles`.

Importing this module imports neither mpi4py nor CuPy.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .api import on_device
from .calls import BoundCall, Prepared, key, lookup, remember
from .exchange_calls import check_alltoall, check_alltoallv, check_broadcast, check_reduce
from .executors.buffers import IN_PLACE, Call

__all__ = ["broadcast", "reduce", "alltoall", "alltoallv"]


def _cached(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: Any, algorithm: Any,
            check: bool | None, stream: Any,
            params: dict[str, Any]) -> tuple[tuple | None, BoundCall | None]:
    """The call cache's facts for a call (None where the send buffer is not a NumPy array
    of its own), and the bound call kept under them, if any."""
    if type(sendbuf) is not np.ndarray or sendbuf is recvbuf:
        return None, None
    facts = key(collective, sendbuf, recvbuf, comm, op, algorithm, check, stream, params)
    return facts, lookup(facts)


def _run(facts: tuple | None, checked: tuple[Prepared, Call], stream: Any) -> Any:
    """Bind a checked call (:class:`~collectives.calls.BoundCall`), remember it under
    ``facts`` (where it has an output here), and run it (CuPy buffers on ``stream``, the
    current stream when None)."""
    prepared, call = checked
    bound = BoundCall(prepared)
    if call.recv is not None:
        remember(facts, bound)
    if call.xp is not np and stream is None:
        stream = call.xp.cuda.get_current_stream()
    return bound.first(call, stream)


def broadcast(buf: Any, *, root: int = 0, comm: Any = None, algorithm: str = "auto",
              check: bool | None = None, stream: Any = None, **params: Any) -> Any:
    """Broadcast ``buf`` from ``root`` to every rank, in place (``MPI_Bcast``).

    Parameters
    ----------
    buf : numpy.ndarray or cupy.ndarray
        The vector: the root's is sent, every other rank's is overwritten (same size and
        dtype on every rank).
    root : int
        The rank that broadcasts.
    comm : mpi4py.MPI.Intracomm, NcclComm or None
        The communicator (``MPI.COMM_WORLD`` by default).
    algorithm : str
        ``chain``, ``binomial``, ``scatter_allgather``, ``native`` or ``auto``.
    check : bool or None
        True: the ranks agree on the call first.
    stream : cupy.cuda.Stream or None
        The stream for CuPy buffers; the current stream by default.
    **params
        The algorithm's parameters (``segments`` for ``chain``).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``buf``.

    Raises
    ------
    ValueError, TypeError
        For a bad argument, before any communication.
    ArgumentMismatchError
        When the ranks disagree.
    """
    facts = key("broadcast", IN_PLACE, buf, comm, "sum", algorithm, check, stream,
                {**params, "root": root})
    bound = lookup(facts)
    if bound is not None:
        return bound(IN_PLACE, buf)
    with on_device(comm, stream):
        return _run(facts, check_broadcast(buf, root, comm, algorithm, check, params), stream)


def reduce(sendbuf: Any, recvbuf: Any = None, *, root: int = 0, op: str = "sum",
           comm: Any = None, algorithm: str = "auto", check: bool | None = None,
           stream: Any = None, **params: Any) -> Any:
    """Reduce every rank's ``sendbuf`` into the root's ``recvbuf`` (``MPI_Reduce``).

    Parameters
    ----------
    sendbuf : numpy.ndarray or cupy.ndarray
        This rank's vector (same size and dtype on every rank).
    recvbuf : numpy.ndarray, cupy.ndarray or None
        The root's result buffer (allocated when None); ignored elsewhere.
    root : int
        The rank that receives the result.
    op : str
        The reduction (:data:`collectives.ops.ALL_OPS`, defined for the dtype; over an
        ``NcclComm`` also ``avg``).
    comm, algorithm, check, stream, **params
        As for :func:`broadcast`; ``algorithm`` is ``chain``, ``binomial``,
        ``rabenseifner``, ``native`` or ``auto``.

    Returns
    -------
    numpy.ndarray, cupy.ndarray or None
        At the root the result (``recvbuf``), elsewhere None.

    Raises
    ------
    ValueError, TypeError
        For a bad argument, before any communication.
    ArgumentMismatchError
        When the ranks disagree.
    """
    facts, bound = _cached("reduce", sendbuf, recvbuf, comm, op, algorithm, check, stream,
                           {**params, "root": root})
    if bound is not None:
        return bound(sendbuf, recvbuf)
    with on_device(comm, stream):
        return _run(facts, check_reduce(sendbuf, recvbuf, root, op, comm, algorithm, check,
                                        params), stream)


def alltoall(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None, algorithm: str = "auto",
             check: bool | None = None, stream: Any = None) -> Any:
    """Send block ``j`` of ``sendbuf`` to rank ``j``; receive rank ``i``'s into block ``i``
    (``MPI_Alltoall``).

    Parameters
    ----------
    sendbuf : numpy.ndarray or cupy.ndarray
        ``nranks`` blocks of equal size.
    recvbuf : numpy.ndarray, cupy.ndarray or None
        As large as ``sendbuf`` (allocated when None).
    comm, algorithm, check, stream
        As for :func:`broadcast`; ``algorithm`` is ``pairwise``, ``bruck_alltoall``,
        ``linear``, ``native`` or ``auto``.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``recvbuf``.

    Raises
    ------
    ValueError, TypeError
        For a bad argument (a ``sendbuf`` that does not cut into ``nranks`` blocks), before
        any communication.
    """
    facts, bound = _cached("alltoall", sendbuf, recvbuf, comm, "sum", algorithm, check, stream,
                           {})
    if bound is not None:
        return bound(sendbuf, recvbuf)
    with on_device(comm, stream):
        return _run(facts, check_alltoall(sendbuf, recvbuf, comm, algorithm, check), stream)


def alltoallv(sendbuf: Any, sendcounts: Sequence[int], sdispls: Sequence[int], recvbuf: Any,
              recvcounts: Sequence[int], rdispls: Sequence[int], *, comm: Any = None,
              algorithm: str = "pairwise", stream: Any = None) -> Any:
    """Send ``sendcounts[j]`` elements from ``sdispls[j]`` to rank ``j`` and receive
    ``recvcounts[i]`` from rank ``i`` at ``rdispls[i]`` (``MPI_Alltoallv``).

    Parameters
    ----------
    sendbuf, recvbuf : numpy.ndarray or cupy.ndarray
        The buffers (one dtype); every block must lie in its buffer and receive blocks
        must not overlap.
    sendcounts, sdispls, recvcounts, rdispls : sequence of int
        One entry per rank (:mod:`collectives.vcounts`).
    comm : mpi4py.MPI.Intracomm, NcclComm or None
        The communicator.
    algorithm : str
        ``pairwise``, ``linear`` or ``native``.
    stream : cupy.cuda.Stream or None
        The stream for CuPy buffers; the current stream by default.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``recvbuf``.

    Raises
    ------
    ValueError, TypeError
        For a bad argument, before any communication.
    ArgumentMismatchError
        On every rank, when a rank's ``recvcounts`` are not what the others send it.
    """
    with on_device(comm, stream):
        return _run(None, check_alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts,
                                          rdispls, comm, algorithm), stream)
