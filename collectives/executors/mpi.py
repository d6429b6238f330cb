"""The MPI executor: walks a plan over mpi4py on NumPy or CuPy buffers.

Each user communicator gets one private duplicate (``comm.Dup()``, cached on the
communicator as an MPI attribute, as NCCL and mpi4py's utilities keep internal
communicators), so the collectives' messages never meet the user's own or another
communicator's.  Collectives issued back to back cannot mix either: tags number the
messages between each pair of ranks, and MPI delivers messages between a pair in order.

NumPy buffers run as persistent requests (:mod:`.persistent`).  CuPy buffers go to MPI
directly when the library is CUDA-aware (asked through Open MPI's
``MPIX_Query_cuda_support``); otherwise, or when that cannot be known, each step stages its
messages through page-locked host memory and still reduces on the GPU: the staging is a
strategy of the one step walk (:mod:`.walk`).  The environment variable
``COLLSIM_MPI_CUDA_AWARE`` (``1`` or ``0``) overrides the detection.  MPI's own
collectives (``native``) are one table, :data:`NATIVE_MPI`.

Every message's tag carries the call's signature and receives check it (:mod:`.guard`), so
ranks that disagree raise instead of exchanging wrong data; the first call of each
signature on a communicator is agreed on first (:meth:`MpiTransport.agree`), so ranks that
chose different schedules raise instead of waiting for each other.  A walk that stops for
any reason tells every other rank (:meth:`MpiTransport.interrupted`).  MPI's own ``max``
and ``min`` of floats reduce integer keys (:mod:`.extrema`), and its AllReduce of more than
:data:`MPI_COUNT_MAX` elements runs in parts.  The private duplicate is
freed with the user's communicator (an attribute delete callback, run by ``comm.Free()``)
or by :func:`collectives.close`.  The first transport installs the abort-on-failure hooks
(:mod:`.abort`).
"""

from __future__ import annotations

import ctypes
import os
from collections import Counter
from functools import lru_cache, partial
from reprlib import repr as brief
from typing import Any, Callable

import numpy as np

from ..ops import ALL_OPS, NCCL_ONLY_OPS, check_dtype, reducer
from . import abort
from .buffers import Call, workspace
from .extrema import keyed, keyed_dtype
from .guard import CallContext, Guard, SignedPlan, signed_plan
from .hello import Hellos
from .persistent import PersistentPlans
from .plan import Plan
from .runtime import RUNTIME
from .transport import Native, Walker
from .walk import DeviceBytes, Direct, Posted, Staged, walk

__all__ = ["AGREED_PER_COMM", "MPI_COUNT_MAX", "CUDA_AWARE_ENV", "COMPILED_ENV", "NATIVE_MPI",
           "MpiTransport", "compiled_walk", "cuda_aware", "mpi_transport",
           "close"]

CUDA_AWARE_ENV = "COLLSIM_MPI_CUDA_AWARE"
#: ``0`` runs NumPy calls through the Python walk instead of the compiled one
COMPILED_ENV = "COLLSIM_MPI_COMPILED"

_MPI: Any = None  # mpi4py.MPI, imported on first use
_KEYVAL = 0  # the MPI attribute key under which each communicator keeps its transport

#: private duplicates on which a collective failed, never freed (see MpiTransport.close)
_BROKEN: list[Any] = []

#: reduction name -> mpi4py's ``MPI.Op``, filled when mpi4py is first imported
_MPI_OPS: dict[str, Any] = {}

#: the most elements one of MPI's collectives is handed: its counts are C ints (Open MPI
#: 5.0.11 answers MPI_ERR_ARG beyond, even through the large-count functions mpi4py calls)
MPI_COUNT_MAX = 2**31 - 1

#: signatures of agreed calls kept per communicator (all forgotten together when full)
AGREED_PER_COMM = 4096


@lru_cache(maxsize=1)
def _loaded_libmpi() -> str | None:
    """Path of the ``libmpi`` this process has loaded (Linux), else None (read once: with
    Numba loaded, ``/proc/self/maps`` takes ~1 ms to read, once per new communicator)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                if "/libmpi.so" in path:
                    return path
    except OSError:
        return None
    return None


@lru_cache(maxsize=1)
def cuda_aware() -> bool | None:
    """Return whether MPI accepts CUDA device buffers: True, False, or None if unknown.

    ``COLLSIM_MPI_CUDA_AWARE=1`` or ``0`` decides; otherwise Open MPI's
    ``MPIX_Query_cuda_support()`` is called on the loaded ``libmpi``.  Other libraries
    answer None, and CuPy buffers are then staged through host memory.
    """
    forced = os.environ.get(CUDA_AWARE_ENV)
    if forced is not None:
        if forced not in ("0", "1"):
            raise ValueError(f"{CUDA_AWARE_ENV}={forced!r} is not allowed; use 1 or 0")
        return forced == "1"
    from mpi4py import MPI  # noqa: F401  (loads libmpi)
    path = _loaded_libmpi()
    if path is None:
        return None
    query = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
    return None if query is None else bool(query())


def compiled_walk() -> Any:
    """The compiled walk of bound plans (:func:`.compiled.kernel`), or None where it cannot
    run (not Open MPI) or ``COLLSIM_MPI_COMPILED=0``."""
    forced = os.environ.get(COMPILED_ENV, "1")
    if forced not in ("0", "1"):
        raise ValueError(f"{COMPILED_ENV}={forced!r} is not allowed; use 1 or 0")
    if forced == "0":
        return None
    from .compiled import kernel
    return kernel(_MPI, _loaded_libmpi())


@lru_cache(maxsize=None)
def _has_mpi_datatype(dtype: Any) -> bool:
    from mpi4py import MPI
    from mpi4py.util.dtlib import from_numpy_dtype
    try:
        return from_numpy_dtype(np.dtype(dtype)) != MPI.DATATYPE_NULL
    except (KeyError, ValueError):
        return False


#: MPI's own collective for each collective: ``entry(comm, shape) -> (method, reduces)``,
#: the mpi4py method (bound to what the call's shape fixes: a root, an AllToAllv's counts)
#: called as ``method(send, recv)``, or ``method(send, recv, mpi_op)`` where ``reduces``.
#: Adding a collective is one entry here and one in :data:`~.nccl.NATIVE_NCCL`
NATIVE_MPI: dict[str, Callable[[Any, Call], tuple[Callable[..., None], bool]]] = {
    "allreduce": lambda comm, shape: (comm.Allreduce, True),
    "reduce_scatter": lambda comm, shape: (comm.Reduce_scatter_block, True),
    "allgather": lambda comm, shape: (comm.Allgather, False),
    "broadcast": lambda comm, shape: (partial(_bcast, comm.Bcast, shape.root), False),
    "reduce": lambda comm, shape: (partial(_reduce, comm.Reduce, shape.root), True),
    "alltoall": lambda comm, shape: (comm.Alltoall, False),
    "alltoallv": lambda comm, shape: (partial(_alltoallv, comm.Alltoallv, shape.vector), False),
}

#: the collectives whose ``max`` and ``min`` of floats MPI reduces on keys (:mod:`.extrema`)
_KEYED = ("allreduce", "reduce_scatter")


def _bcast(bcast: Callable[..., None], root: int, send: Any, recv: np.ndarray) -> None:
    """``MPI_Bcast`` of ``recv`` (the buffer, in place) from ``root``."""
    bcast(recv, root)


def _reduce(reduce: Callable[..., None], root: int, send: np.ndarray, recv: np.ndarray | None,
            mpi_op: Any) -> None:
    """``MPI_Reduce`` of ``send`` into the root's ``recv`` (None elsewhere)."""
    reduce(send, recv, mpi_op, root)


def _alltoallv(alltoallv: Callable[..., None], vector: tuple[Any, ...] | None,
               send: np.ndarray, recv: np.ndarray) -> None:
    """``MPI_Alltoallv`` with the counts and displacements of ``vector``
    (:attr:`~.buffers.Call.vector`)."""
    assert vector is not None, "an AllToAllv's call carries its vector"
    from mpi4py.util.dtlib import from_numpy_dtype
    kind = from_numpy_dtype(send.dtype)
    sendcounts, sdispls, recvcounts, rdispls = vector[:4]
    alltoallv([send, (sendcounts, sdispls), kind], [recv, (recvcounts, rdispls), kind])


class MpiTransport:
    """Collectives over one mpi4py intracommunicator, through its private duplicate.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The user's communicator; it is duplicated once (a collective call).
    """

    name = "mpi"

    def __init__(self, comm: Any) -> None:
        self.comm = comm.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        #: waits for steps, checks signatures, cleans up after failures
        self.guard = Guard(_MPI, self.comm, _MPI.COMM_WORLD.Get_attr(_MPI.TAG_UB))
        #: collectives run, by path: "persistent" (NumPy), "direct" (CUDA-aware CuPy),
        #: "staged" (CuPy through host) or "native"
        self.runs: Counter[str] = Counter()
        self.persistent = PersistentPlans(_MPI, self.comm, self.guard, compiled_walk(),
                                          self.agree)
        #: native calls announce themselves first, so that ranks that disagree raise
        self.hellos = Hellos(_MPI, self.comm, self.guard)
        #: the signatures of the schedules' calls the ranks agreed on (:meth:`agree`)
        self.agreed: set[int] = set()
        RUNTIME.transports.add(self)

    def allgather_object(self, obj: Any) -> list[Any]:
        """All-gather a small picklable object (used by the agreement check).

        Parameters
        ----------
        obj : Any
            This rank's object.

        Returns
        -------
        list
            Every rank's object, in rank order.

        Raises
        ------
        CommunicatorBrokenError
            If a collective failed on this communicator before.
        """
        self.guard.check_usable()
        return self.comm.allgather(obj)

    def check_usable(self) -> None:
        """Raise :class:`~.guard.CommunicatorBrokenError` if a collective failed here before."""
        self.guard.check_usable()

    def validate(self, call: Call, op: str, native: bool) -> None:
        """Raise before any communication if MPI cannot run ``op`` or carry ``call.dtype``.

        Only MPI's own collectives (``native``) need an MPI datatype; the schedules move
        bytes and reduce with the array module, so they take every supported dtype.

        Parameters
        ----------
        call : Call
            The checked call.
        op : str
            The reduction (checked by :func:`~collectives.ops.check_op`).
        native : bool
            Whether the call will run MPI's own collective.

        Raises
        ------
        ValueError
            If ``op`` is NCCL's own (``avg``), which MPI does not have, or ``native`` of
            a ReduceScatter or AllGather with a block of more than :data:`MPI_COUNT_MAX`
            elements (an AllReduce runs in parts).
        TypeError
            If ``native`` and the MPI library has no datatype for ``call.dtype``.
        """
        if op in NCCL_ONLY_OPS and call.collective != "allgather":
            raise ValueError(f"op {op!r} is NCCL's (ncclAvg) and runs over an NcclComm only; "
                             f"MPI has no average: choose one of {list(ALL_OPS)} (e.g. 'sum', "
                             f"then divide by the number of ranks)")
        if native and call.collective != "allreduce" and call.part > MPI_COUNT_MAX:
            raise ValueError(f"a block of {call.part} elements is more than MPI's "
                             f"{call.collective} takes ({MPI_COUNT_MAX}, its counts are C "
                             f"ints); algorithm='native' cannot run it, choose one of "
                             f"{_schedules(call.collective)}")
        if native and not _has_mpi_datatype(call.dtype):
            order = "" if call.dtype.isnative else " (MPI's datatypes are in native byte order)"
            raise TypeError(f"dtype {call.dtype.str!r} has no MPI datatype in this MPI "
                            f"library{order}; algorithm='native' cannot run it, choose one of "
                            f"{_schedules(call.collective)}")

    def _staged(self, xp: Any) -> bool:
        return xp is not np and not cuda_aware()

    def walker(self, plan: Plan, op: str, xp: Any) -> Walker:
        """Return the walk of ``plan`` with ``op`` on ``xp``'s buffers, bound once.

        NumPy buffers run as persistent requests (:mod:`.persistent`, :meth:`run_host`);
        CuPy buffers go through :func:`~.walk.walk`, staged through host memory unless MPI
        is CUDA-aware (:meth:`run_device`).  The caller found the communicator usable.

        Parameters
        ----------
        plan : Plan
            The rank's compiled steps.
        op : str
            The reduction, one of :data:`~collectives.ops.OPS`.
        xp : module
            ``numpy`` or ``cupy``.

        Returns
        -------
        callable
            ``walk(work, send, stream)``: the working buffer (updated in place), the input
            just laid into it (None in place), the CuPy stream (None for NumPy); for NumPy
            also ``walk(work, send, None, recv)``, input and output bound directly.
        """
        signed = signed_plan(plan, op, self.guard.codec)
        if xp is np:
            return partial(self.run_host, plan, signed, op)
        return partial(self.run_device, plan, signed, op, xp)

    def run_host(self, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
                 send: np.ndarray | None, stream: Any = None,
                 recv: np.ndarray | None = None) -> None:
        """Walk ``plan`` on NumPy buffers, as persistent requests (what :meth:`walker`
        returns for them).

        Parameters
        ----------
        plan : Plan
            The rank's compiled steps.
        signed : SignedPlan
            Its steps with the call's tags (:func:`~.guard.signed_plan`).
        op : str
            The reduction, one of :data:`~collectives.ops.OPS`.
        work : numpy.ndarray
            The working buffer, updated in place.
        send : numpy.ndarray or None
            The input just copied into ``work`` (None in place), or bound directly.
        stream : None
            Unused (NumPy buffers).
        recv : numpy.ndarray, optional
            The output, for a plan bound directly to ``send`` and ``recv``
            (:func:`collectives.calls.direct`).
        """
        if not plan.count:  # nothing moves, but a peer with elements must not wait for ever
            self.hellos.exchange(plan.collective, 0, plan.dtype, op, plan.algorithm)
        scratch = workspace(np, work.dtype, plan.scratch_count, "scratch")
        self.runs["persistent"] += 1
        try:
            self.persistent.run(plan, signed, op, work, scratch, send, recv)
        except BaseException as error:
            self.interrupted(plan, error)
            raise

    def run_device(self, plan: Plan, signed: SignedPlan, op: str, xp: Any, work: Any,
                   send: Any, stream: Any) -> None:
        """Walk ``plan`` on CuPy buffers on ``stream`` (what :meth:`walker` returns for them).

        Parameters
        ----------
        plan, signed, op
            As for :meth:`run_host`.
        xp : module
            ``cupy``.
        work : cupy.ndarray
            The working buffer, updated in place.
        send : cupy.ndarray or None
            Unused (the sends read ``work``).
        stream : cupy.cuda.Stream
            The stream to run on.
        """
        if not plan.count:  # nothing moves, but a peer with elements must not wait for ever
            self.hellos.exchange(plan.collective, 0, plan.dtype, op, plan.algorithm)
        else:
            self.agree(plan, signed, op)
        scratch = workspace(xp, work.dtype, plan.scratch_count, "scratch", stream)
        staged = self._staged(xp)
        self.runs["staged" if staged else "direct"] += 1
        buffers: tuple[Any, ...] = (work, scratch)
        strategy: Staged | Direct
        try:
            if staged:
                mirrors = Staged(work, scratch, plan.count, plan.scratch_count, stream)
                strategy, areas = mirrors, mirrors.mirrors
                buffers += areas
            else:
                strategy = Direct(stream)
                areas = (DeviceBytes(_MPI, work), DeviceBytes(_MPI, scratch))
            posting = Posted(_MPI, self.comm, plan, areas, work, scratch, reducer(xp, op))
            with stream:
                walk(self.guard, CallContext(plan, signed, op, buffers), posting, strategy)
        except BaseException as error:
            self.interrupted(plan, error)
            raise

    def agree(self, plan: Plan, signed: SignedPlan, op: str) -> None:
        """Agree on a schedule's call with every rank (:meth:`~.hello.Hellos.agree`) unless
        this communicator agreed on its signature before.

        Every rank of a program that calls alike asks at the same calls, the first of each
        signature: a CuPy call every time, a NumPy call when its plan is bound to buffers
        (:meth:`~.persistent.PersistentPlans.run`, whose bindings were all bound after
        their signature was agreed), a persistent handle when it is made.  The set of
        signatures is emptied when it holds :data:`AGREED_PER_COMM`, and the bindings are
        freed with it, so that every rank asks again.

        Parameters
        ----------
        plan : Plan
            The rank's plan (with elements).
        signed : SignedPlan
            Its steps with the call's tags.
        op : str
            The call's reduction.

        Raises
        ------
        ArgumentMismatchError
            When a rank chose another algorithm, parameters or call (the communicator is
            then broken).
        """
        if signed.signature in self.agreed:
            return
        self.hellos.agree(plan.collective, plan.count, plan.dtype, op, plan.algorithm,
                          plan.params)
        if len(self.agreed) >= AGREED_PER_COMM:
            self.agreed.clear()
            self.persistent.free()
        self.agreed.add(signed.signature)

    def interrupted(self, plan: Plan, error: BaseException) -> None:
        """Mark the communicator broken after ``error`` stopped a walk of ``plan``, and
        tell every other rank.

        A failure between steps (a reduction, an interrupt) leaves the other ranks
        mid-schedule: the communicator cannot be trusted any more, and they would wait
        for this rank's messages for ever, so each gets the guard's failure message
        (:meth:`~.guard.Guard.settle`) and raises too, whether the abort hooks are on or
        not.  A reason the guard gave already is kept (it told the ranks then).
        """
        if self.guard.broken is None:
            self.guard.settle([], 0, (), (
                f"rank {self.rank}, {plan.collective} {plan.algorithm} was interrupted by "
                f"{type(error).__name__}: {error}"))

    def native_runner(self, shape: Call, op: str, signed: bool) -> Native:
        """Return MPI's own collective for calls shaped as ``shape``, bound once.

        The ranks exchange hellos first (:mod:`.hello`) when ``signed``: ranks that
        disagree on the call, or run a schedule instead, raise before MPI's collective is
        posted.  The caller found the communicator usable.

        Parameters
        ----------
        shape : Call
            The checked call (its buffers are not read).
        op : str
            The reduction, one of :data:`~collectives.ops.OPS` (ignored by AllGather).
        signed : bool
            Exchange the hellos first; False (``check=False``) calls MPI's collective bare,
            as mpi4py does: ranks that disagree then get whatever MPI makes of it.

        Returns
        -------
        callable
            ``run(send, recv, stream)`` on flat buffers, ``send`` None in place.
        """
        if shape.xp is not np:
            return partial(self._native_device, shape, op, signed)
        exchange, runs, in_place, name = self.hellos.exchange, self.runs, _MPI.IN_PLACE, \
            check_dtype(shape.dtype)
        collective, count = shape.collective, shape.count
        method, mpi_op = self._mpi_collective(shape, op, shape.dtype, count)

        def run(send: np.ndarray | None, recv: np.ndarray, stream: Any = None) -> None:
            if signed:
                exchange(collective, count, name, op)
            runs["native"] += 1
            if mpi_op is None:  # called without unpacking: this is a hot path
                method(in_place if send is None else send, recv)
            else:
                method(in_place if send is None else send, recv, mpi_op)
        return run

    def _native_device(self, shape: Call, op: str, signed: bool, send: Any, recv: Any,
                       stream: Any) -> None:
        """MPI's own collective on CuPy buffers (staged through the host where MPI cannot
        read them, or where the keys of :mod:`.extrema` are computed)."""
        if signed:
            self.hellos.exchange(shape.collective, shape.count, check_dtype(shape.dtype), op)
        self.runs["native"] += 1
        MPI = _MPI
        stream.synchronize()
        staged = self._staged(shape.xp) or bool(keyed_dtype(op, shape.dtype))  # keys on host
        device = recv
        send = MPI.IN_PLACE if send is None else (send.get() if staged else send)
        if device is None:  # a Reduce off its root: nothing comes back
            method, mpi_op = self._mpi_collective(shape, op, shape.dtype, shape.count)
            method(send, None, mpi_op)
            return
        # in place, or an AllToAllv (whose gaps MPI leaves as they are), recv starts as recvbuf
        kept = send is MPI.IN_PLACE or shape.vector is not None
        recv = device.get() if staged and kept else (
            np.empty(device.size, np.dtype(shape.dtype.name)) if staged else device)
        if shape.collective == "reduce_scatter" and send is MPI.IN_PLACE and not staged:
            # CUDA-aware Open MPI up to 5.0.10 (and 4.x) reads past recvbuf in an in-place
            # Reduce_scatter_block on device memory (open-mpi/ompi#14249): go out of place
            with stream:
                send, recv = device.copy(), device[:shape.part]
            stream.synchronize()
        method, mpi_op = self._mpi_collective(shape, op, recv.dtype, recv.size)
        if mpi_op is None:
            method(send, recv)
        else:
            method(send, recv, mpi_op)
        if staged:
            device.set(recv, stream=stream)

    def native_call(self, call: Call, op: str) -> Callable[[], Any]:
        """Return MPI's own collective on host buffers, bound to them (no hellos).

        What an unchecked handle (``allreduce_init(..., algorithm="native", check=False)``)
        calls: mpi4py's method with its arguments bound, so that a call costs what
        mpi4py's own does.

        Parameters
        ----------
        call : Call
            The checked call, on NumPy buffers (``send`` None for in place).
        op : str
            The reduction, one of :data:`~collectives.ops.ALL_OPS` (ignored by AllGather).

        Returns
        -------
        callable
            Runs the collective on the buffers' current contents.
        """
        method, mpi_op = self._mpi_collective(call, op, call.dtype, call.count)
        send = _MPI.IN_PLACE if call.send is None else call.send
        return partial(method, send, call.recv) if mpi_op is None else partial(
            method, send, call.recv, mpi_op)

    def _mpi_collective(self, shape: Call, op: str, dtype: Any,
                        count: int) -> tuple[Callable[..., None], Any]:
        """MPI's own ``collective`` on this communicator (:data:`NATIVE_MPI`), as
        ``(method, mpi_op)``, ``mpi_op`` None for a collective that does not reduce; a
        reducing one reduces the keys of floats for ``max`` and ``min`` (:mod:`.extrema`),
        and an ``Allreduce`` of more than :data:`MPI_COUNT_MAX` elements runs in parts of
        at most that many."""
        collective = shape.collective
        method, reduces = NATIVE_MPI[collective](self.comm, shape)
        if not reduces:
            return method, None
        if collective == "allreduce" and count > MPI_COUNT_MAX:
            method = partial(_in_parts, method, _MPI.IN_PLACE)
        if collective in _KEYED and keyed_dtype(op, np.dtype(dtype)):
            method = keyed(method, collective, self.size, op, _MPI.IN_PLACE)
        return method, _MPI_OPS[op]

    def release(self) -> None:
        """Free the persistent requests, unless a collective failed here
        (:func:`collectives.release`)."""
        if self.guard.broken is None:
            self.persistent.free()
            self.hellos.free()

    def close(self) -> None:
        """Free the private duplicate (no collective may run on this transport after).

        A duplicate on which a collective failed is kept instead, for the life of the
        process (:data:`_BROKEN`): messages of the failed call may still arrive on it, and
        Open MPI would deliver them to whichever communicator reuses its context id.
        """
        if self.guard.broken is not None:
            _BROKEN.append(self.comm)
        elif self.comm != _MPI.COMM_NULL and not _MPI.Is_finalized():
            self.persistent.free()
            self.hellos.free()
            self.comm.Free()
        self.guard.broken = self.guard.broken or "the communicator was closed"


def _schedules(collective: str) -> str:
    """The schedules that run ``collective``, named for an error message."""
    from ..registry import names
    return ", ".join(names(collective=collective))


def _in_parts(method: Callable[..., None], in_place: Any, send: Any, recv: np.ndarray,
              mpi_op: Any) -> None:
    """``method(send, recv, mpi_op)`` (an ``Allreduce``) on parts of at most
    :data:`MPI_COUNT_MAX` elements, one after another."""
    for start in range(0, recv.size, MPI_COUNT_MAX):
        part = slice(start, start + MPI_COUNT_MAX)
        method(in_place if send is in_place else send[part], recv[part], mpi_op)


def _delete_transport(comm: Any, keyval: int, transport: MpiTransport) -> None:
    """Attribute delete callback: the user's communicator is freed, so free ours."""
    transport.close()


def close(comm: Any = None) -> None:
    """Free the private duplicate the collectives keep for ``comm`` (if any).

    ``comm.Free()`` does it too; a later collective on ``comm`` duplicates it anew.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm or None
        The communicator; ``MPI.COMM_WORLD`` when None.
    """
    if _MPI is None:
        return
    comm = _MPI.COMM_WORLD if comm is None else comm
    if comm.Get_attr(_KEYVAL) is not None:
        comm.Delete_attr(_KEYVAL)


def mpi_transport(comm: Any) -> MpiTransport:
    """Return the transport of ``comm``, creating and caching it on first use.

    The transport is kept on ``comm`` as an MPI attribute, whose delete callback frees the
    duplicate when ``comm`` is freed. The first call on a communicator is collective: it
    duplicates ``comm``; the first in the process installs :mod:`.abort`'s hooks.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm or None
        The communicator; ``MPI.COMM_WORLD`` when None.

    Returns
    -------
    MpiTransport
        The communicator's transport.

    Raises
    ------
    TypeError
        If ``comm`` is not an mpi4py intracommunicator (or is ``COMM_NULL``).
    """
    global _MPI, _KEYVAL
    if _MPI is None:
        from mpi4py import MPI
        _KEYVAL, _MPI = MPI.Comm.Create_keyval(delete_fn=_delete_transport), MPI
        _MPI_OPS.update({name: getattr(MPI, name.upper()) for name in ALL_OPS})
    if comm is None:
        comm = _MPI.COMM_WORLD
    elif not isinstance(comm, _MPI.Intracomm) or comm == _MPI.COMM_NULL:
        raise TypeError(f"comm={brief(comm)} is not allowed; pass an mpi4py intracommunicator "
                        f"(e.g. MPI.COMM_WORLD) or a collectives NcclComm")
    transport = comm.Get_attr(_KEYVAL)
    if transport is None:
        abort.install()
        transport = MpiTransport(comm)
        comm.Set_attr(_KEYVAL, transport)
    return transport
