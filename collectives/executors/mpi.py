"""The MPI executor: walks a plan over mpi4py on NumPy or CuPy buffers.

Each user communicator gets one private duplicate (``comm.Dup()``, cached on the
communicator as an MPI attribute, as NCCL and mpi4py's utilities keep internal
communicators), so the collectives' messages never meet the user's own or another
communicator's.  Collectives issued back to back cannot mix either: tags number the
messages between each pair of ranks, and MPI delivers messages between a pair in order.

CuPy buffers go to MPI directly when the library is CUDA-aware (asked through Open MPI's
``MPIX_Query_cuda_support``); otherwise, or when that cannot be known, each step stages its
messages through page-locked host memory and still reduces on the GPU.  The environment
variable ``COLLSIM_MPI_CUDA_AWARE`` (``1`` or ``0``) overrides the detection.

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
import weakref
from collections import Counter
from contextlib import nullcontext
from functools import lru_cache, partial
from reprlib import repr as brief
from typing import Any, Callable

import numpy as np

from ..ops import ALL_OPS, NCCL_ONLY_OPS, check_dtype, reducer
from . import abort
from .buffers import Call, staged_done, staging, workspace
from .extrema import keyed, keyed_dtype
from .guard import Guard, SignedPlan, signed_plan
from .hello import Hellos
from .persistent import PersistentPlans
from .plan import Plan, PlanStep, apply_copies, apply_reduces, describe_step

__all__ = ["AGREED_PER_COMM", "MPI_COUNT_MAX", "CUDA_AWARE_ENV", "COMPILED_ENV", "MpiTransport", "compiled_walk", "cuda_aware",
           "mpi_transport", "close", "post_step"]

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

#: every live transport, so that :func:`release_bindings` reaches their persistent requests
_TRANSPORTS: "weakref.WeakSet[MpiTransport]" = weakref.WeakSet()



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


class _DeviceBytes:
    """A device array's bytes, sliced into MPI buffers over its raw address.

    mpi4py would otherwise take each CuPy slice through DLPack (an exception and a capsule
    per message); ``MPI.buffer.fromaddress`` costs neither.  Only a CUDA-aware MPI reads
    these addresses.

    Parameters
    ----------
    array : cupy.ndarray
        A contiguous device array.
    """

    __slots__ = ("ptr",)

    def __init__(self, array: Any) -> None:
        self.ptr = array.data.ptr

    def __getitem__(self, span: slice) -> Any:
        """Return the bytes ``span`` as an ``MPI.buffer``."""
        return _MPI.buffer.fromaddress(self.ptr + span.start, span.stop - span.start)


def post_step(transport: "MpiTransport", step: PlanStep, signed: SignedPlan, index: int,
          areas: tuple[Any, Any], source: Any, buffers: tuple[Any, ...],
          describe: Any) -> list[Any]:
    """Post a step's receives (into ``areas[into_scratch]``) and sends (from ``source``).

    A step with the call's first messages from some peers posts its sends, takes those
    through :meth:`~.guard.Guard.take_first`, then posts the other receives.

    Parameters
    ----------
    transport : MpiTransport
        Its private communicator and guard.
    step : PlanStep
        The step.
    signed : SignedPlan
        The call's tags.
    index : int
        The step's index in the plan.
    areas : tuple
        The working and the scratch buffer's bytes (sliced by byte ranges).
    source : array or _DeviceBytes
        The bytes the sends read.
    buffers : tuple of arrays
        Every buffer the requests use (kept alive if a failure leaves them pending).
    describe : callable
        Names the step in errors.

    Returns
    -------
    list of mpi4py.MPI.Request
        The receives, in ``step.recvs`` order, then the sends.
    """
    irecv, isend, any_tag = transport.comm.Irecv, transport.comm.Isend, _MPI.ANY_TAG
    first = step.first
    if not first:
        requests = [irecv(areas[into_scratch][span], peer, any_tag)
                    for into_scratch, span, peer, _ in step.recvs]
        return requests + [isend(source[span], peer, tag)
                           for span, peer, tag in signed.steps[index].sends]
    sends = [isend(source[span], peer, tag) for span, peer, tag in signed.steps[index].sends]
    requests = transport.guard.take_first(
        _MPI, [areas[into_scratch][span] for into_scratch, span, _, _ in step.recvs[:first]],
        step, signed, index, sends, buffers, describe)
    requests += [irecv(areas[into_scratch][span], peer, any_tag)
                 for into_scratch, span, peer, _ in step.recvs[first:]]
    return requests + sends


def _walk(transport: "MpiTransport", plan: Plan, signed: SignedPlan, work: Any,
          scratch: Any, reduce: Any, op: str, stream: Any) -> None:
    """Run the plan with the buffers handed straight to MPI (host, or CUDA-aware).

    With device buffers the stream is synchronized before a step's messages are posted
    only when GPU work was queued since the last time (the input's layout, reductions,
    copies).
    """
    complete = transport.guard.complete
    describe = partial(describe_step, plan, op)
    if stream is None:
        work_bytes = work.view("uint8")
        areas = (work_bytes, scratch.view(work_bytes.dtype))
    else:
        work_bytes = _DeviceBytes(work)
        areas = (work_bytes, _DeviceBytes(scratch))
    queued = stream is not None
    for index, step in enumerate(plan.steps):
        if queued:
            stream.synchronize()
        requests = post_step(transport, step, signed, index, areas, work_bytes, (work, scratch),
                         describe)
        complete(_MPI, requests, step, signed, index, (work, scratch), describe)
        apply_reduces(work, scratch, step.reduces, reduce)
        if step.copies:
            apply_copies(work, step.copies)
        queued = stream is not None and bool(step.reduces or step.copies)


def _walk_staged(transport: "MpiTransport", plan: Plan, signed: SignedPlan,
                 work: Any, scratch: Any, reduce: Any, op: str, stream: Any) -> None:
    """Run the plan on GPU buffers through page-locked host mirrors of work and scratch.

    The mirrors belong to ``stream`` (:func:`~.buffers.staging`): the copies of a call
    read them on that stream, and the next call on it waits for the event recorded after
    the last of them before writing them again.
    """
    complete = transport.guard.complete
    describe = partial(describe_step, plan, op)
    host, host_scratch = staging(work.dtype, plan.count, plan.scratch_count, stream)
    host, host_scratch = host.view(np.uint8), host_scratch.view(np.uint8)
    device = (work.view("uint8"), scratch.view("uint8"))
    areas = (host, host_scratch)
    buffers = (host, host_scratch, work, scratch)
    for index, step in enumerate(plan.steps):
        for span, _, _ in step.sends:
            device[0][span].get(stream=stream, out=host[span])
        stream.synchronize()
        requests = post_step(transport, step, signed, index, areas, host, buffers, describe)
        complete(_MPI, requests, step, signed, index, buffers, describe)
        for into_scratch, span, _, _ in step.recvs:
            device[into_scratch][span].set(areas[into_scratch][span], stream=stream)
        apply_reduces(work, scratch, step.reduces, reduce)
        if step.copies:
            apply_copies(work, step.copies)
    staged_done(stream, host, host_scratch)


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
        self.guard = Guard(self.comm, _MPI.COMM_WORLD.Get_attr(_MPI.TAG_UB), _MPI.Status())
        #: collectives run, by path: "persistent" (NumPy), "direct" (CUDA-aware CuPy),
        #: "staged" (CuPy through host) or "native"
        self.runs: Counter[str] = Counter()
        self.persistent = PersistentPlans(_MPI, self.comm, self.guard, compiled_walk(),
                                          self.agree)
        #: native calls announce themselves first, so that ranks that disagree raise
        self.hellos = Hellos(_MPI, self.comm, self.guard)
        #: the signatures of the schedules' calls the ranks agreed on (:meth:`agree`)
        self.agreed: set[int] = set()
        _TRANSPORTS.add(self)

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
                             f"ints); algorithm='native' cannot run it, choose one of ring, "
                             f"tree, rhd, pipeline")
        if native and not _has_mpi_datatype(call.dtype):
            order = "" if call.dtype.isnative else " (MPI's datatypes are in native byte order)"
            raise TypeError(f"dtype {call.dtype.str!r} has no MPI datatype in this MPI "
                            f"library{order}; algorithm='native' cannot run it, choose one of "
                            f"ring, tree, rhd, pipeline")

    def _staged(self, call: Call) -> bool:
        return call.xp is not np and not cuda_aware()

    def run(self, plan: Plan, call: Call, work: Any, op: str, stream: Any) -> None:
        """Walk ``plan`` on the working buffer ``work`` (``plan.count`` elements).

        NumPy buffers run as persistent requests (:mod:`.persistent`); CuPy buffers go
        through host copies unless MPI is CUDA-aware.  Any exception leaves the
        communicator marked broken (:class:`~.guard.CommunicatorBrokenError` on the next
        call).

        Parameters
        ----------
        plan : Plan
            The rank's compiled steps.
        call : Call
            The checked call (array module and dtype).
        work : numpy.ndarray or cupy.ndarray
            The working buffer, updated in place.
        op : str
            The reduction, one of :data:`~collectives.ops.OPS`.
        stream : cupy.cuda.Stream or None
            The CuPy stream to run on; None for NumPy or the current stream.
        """
        self.guard.check_usable()
        signed = signed_plan(plan, op, self.guard.codec)
        if call.xp is np:
            self.run_host(plan, signed, op, work, call.send)
            return
        if not plan.count:  # nothing moves, but a peer with elements must not wait for ever
            self.hellos.exchange(plan.collective, 0, plan.dtype, op, plan.algorithm)
        else:
            self.agree(plan, signed, op)
        scratch = workspace(call.xp, call.dtype, plan.scratch_count, "scratch", stream)
        try:
            staged = self._staged(call)
            self.runs["staged" if staged else "direct"] += 1
            walk = _walk_staged if staged else _walk
            with nullcontext() if stream is None else stream:
                walk(self, plan, signed, work, scratch, reducer(call.xp, op), op, stream)
        except BaseException as error:
            self.interrupted(plan, error)
            raise

    def run_host(self, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
                 send: np.ndarray | None) -> None:
        """:meth:`run` on NumPy buffers, as persistent requests, once the communicator was
        found usable; what a repeated call runs (:mod:`collectives.calls`).

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
            The input just copied into ``work`` (None in place).
        """
        if not plan.count:  # nothing moves, but a peer with elements must not wait for ever
            self.hellos.exchange(plan.collective, 0, plan.dtype, op, plan.algorithm)
        scratch = workspace(np, work.dtype, plan.scratch_count, "scratch")
        self.runs["persistent"] += 1
        try:
            self.persistent.run(plan, signed, op, work, scratch, send)
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
            others = tuple(peer for peer in range(self.size) if peer != self.rank)
            self.guard.settle(_MPI, [], 0, others, (), (
                f"rank {self.rank}, {plan.collective} {plan.algorithm} was interrupted by "
                f"{type(error).__name__}: {error}"))

    def native(self, call: Call, op: str, stream: Any, signed: bool = True) -> None:
        """Run MPI's own collective: Allreduce, Reduce_scatter_block or Allgather.

        The ranks exchange hellos first (:mod:`.hello`): ranks that disagree on the call,
        or run a schedule instead, raise before MPI's collective is posted.

        Parameters
        ----------
        call : Call
            The checked call (``send`` None for in place).
        op : str
            The reduction, one of :data:`~collectives.ops.OPS` (ignored by AllGather).
        stream : cupy.cuda.Stream or None
            Synchronised first, when given; CuPy results staged through the host are copied
            back on it.
        signed : bool
            Exchange the hellos first; False (``check=False``) calls MPI's collective bare,
            as mpi4py does: ranks that disagree then get whatever MPI makes of it.

        Raises
        ------
        ArgumentMismatchError
            When the ranks disagree (the communicator is then broken).
        CommunicatorBrokenError
            If a collective failed on this communicator before.
        """
        MPI = _MPI
        self.guard.check_usable()
        if signed:
            self.hellos.exchange(call.collective, call.count, check_dtype(call.dtype), op)
        self.runs["native"] += 1
        if call.xp is np and stream is None:
            send, recv = MPI.IN_PLACE if call.send is None else call.send, call.recv
            self._native(call.collective, send, recv, op)
            return
        if stream is not None:
            stream.synchronize()
        staged = self._staged(call) or bool(keyed_dtype(op, call.dtype))  # keys on the host
        send = MPI.IN_PLACE if call.send is None else (call.send.get() if staged else call.send)
        recv = call.recv.get() if staged and call.send is None else (
            np.empty(call.recv.size, np.dtype(call.dtype.name)) if staged else call.recv)
        if call.collective == "reduce_scatter" and send is MPI.IN_PLACE and not staged:
            # CUDA-aware Open MPI up to 5.0.10 (and 4.x) reads past recvbuf in an in-place
            # Reduce_scatter_block on device memory (open-mpi/ompi#14249): go out of place
            with stream:
                send, recv = call.recv.copy(), call.recv[:call.part]
            stream.synchronize()
        self._native(call.collective, send, recv, op)
        if staged:
            call.recv.set(recv, stream=stream)

    def native_host(self, collective: str, count: int, dtype: Any, op: str,
                    signed: bool) -> Callable[[np.ndarray | None, np.ndarray], None]:
        """Return :meth:`native` on NumPy buffers for a repeated call (:mod:`collectives.calls`),
        whose caller found the communicator usable: its hellos' key and MPI's method bound.

        Parameters
        ----------
        collective : str
            The collective.
        count : int
            Elements of the working buffer.
        dtype : numpy.dtype
            The buffers' dtype (one MPI has a datatype for).
        op : str
            The reduction, one of :data:`~collectives.ops.ALL_OPS` (ignored by AllGather).
        signed : bool
            Exchange the hellos first, as :meth:`native` does.

        Returns
        -------
        callable
            ``run(send, recv)`` on flat buffers, ``send`` None in place.
        """
        exchange, runs, in_place, name = self.hellos.exchange, self.runs, _MPI.IN_PLACE, \
            check_dtype(dtype)
        method, tail = self._mpi_collective(collective, op, dtype, count)
        mpi_op = tail[0] if tail else None  # called without unpacking: this is a hot path

        def run(send: np.ndarray | None, recv: np.ndarray) -> None:
            if signed:
                exchange(collective, count, name, op)
            runs["native"] += 1
            if mpi_op is None:
                method(in_place if send is None else send, recv)
            else:
                method(in_place if send is None else send, recv, mpi_op)
        return run

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
        method, tail = self._mpi_collective(call.collective, op, call.dtype, call.count)
        return partial(method, _MPI.IN_PLACE if call.send is None else call.send, call.recv,
                       *tail)

    def _mpi_collective(self, collective: str, op: str, dtype: Any,
                        count: int) -> tuple[Callable[..., None], tuple]:
        """MPI's own ``collective`` on this communicator, as ``(method, arguments after
        send and receive buffers)``: ``Allreduce`` and ``Reduce_scatter_block`` take the op,
        and reduce the keys of floats for ``max`` and ``min`` (:mod:`.extrema`); an
        ``Allreduce`` of more than :data:`MPI_COUNT_MAX` elements runs in parts of at most
        that many."""
        if collective == "allgather":
            return self.comm.Allgather, ()
        comm = self.comm
        method = comm.Allreduce if collective == "allreduce" else comm.Reduce_scatter_block
        if collective == "allreduce" and count > MPI_COUNT_MAX:
            method = partial(_in_parts, method, _MPI.IN_PLACE)
        if keyed_dtype(op, np.dtype(dtype)):
            method = keyed(method, collective, self.size, op, _MPI.IN_PLACE)
        return method, (_MPI_OPS[op],)

    def _native(self, collective: str, send: Any, recv: Any, op: str) -> None:
        """Call MPI's own ``collective`` on host or device buffers MPI can read."""
        method, tail = self._mpi_collective(collective, op, recv.dtype, recv.size)
        method(send, recv, *tail)

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


def _in_parts(method: Callable[..., None], in_place: Any, send: Any, recv: np.ndarray,
              mpi_op: Any) -> None:
    """``method(send, recv, mpi_op)`` (an ``Allreduce``) on parts of at most
    :data:`MPI_COUNT_MAX` elements, one after another."""
    for start in range(0, recv.size, MPI_COUNT_MAX):
        part = slice(start, start + MPI_COUNT_MAX)
        method(in_place if send is in_place else send[part], recv[part], mpi_op)


def release_bindings() -> None:
    """Free the persistent requests of every usable transport (:func:`collectives.release`)."""
    for transport in list(_TRANSPORTS):
        if transport.guard.broken is None:
            transport.persistent.free()
            transport.hellos.free()


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
