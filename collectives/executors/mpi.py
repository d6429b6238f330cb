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
"""

from __future__ import annotations

import ctypes
import os
from collections import Counter
from contextlib import nullcontext
from functools import lru_cache
from typing import Any

import numpy as np

from ..ops import ALL_OPS, reducer
from .buffers import Call, workspace
from .persistent import PersistentPlans
from .plan import Plan, apply_copies

__all__ = ["CUDA_AWARE_ENV", "MpiTransport", "cuda_aware", "mpi_transport"]

CUDA_AWARE_ENV = "COLLSIM_MPI_CUDA_AWARE"

_MPI: Any = None  # mpi4py.MPI, imported on first use
_KEYVAL = 0  # the MPI attribute key under which each communicator keeps its transport



def _loaded_libmpi() -> str | None:
    """Path of the ``libmpi`` this process has loaded (Linux), else None."""
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


@lru_cache(maxsize=1)
def _mpi_ops() -> dict[str, Any]:
    from mpi4py import MPI
    return {name: getattr(MPI, name.upper()) for name in ALL_OPS}


@lru_cache(maxsize=None)
def _has_mpi_datatype(dtype: Any) -> bool:
    from mpi4py import MPI
    from mpi4py.util.dtlib import from_numpy_dtype
    try:
        return from_numpy_dtype(np.dtype(dtype)) != MPI.DATATYPE_NULL
    except (KeyError, ValueError):
        return False


def _walk(comm: Any, plan: Plan, work: Any, scratch: Any, reduce: Any, stream: Any) -> None:
    """Run the plan with the buffers handed straight to MPI (host, or CUDA-aware)."""
    waitall = _MPI.Request.Waitall
    irecv, isend = comm.Irecv, comm.Isend
    work_bytes = work.view("uint8")
    areas = (work_bytes, scratch.view(work_bytes.dtype))
    for step in plan.steps:
        if stream is not None:
            stream.synchronize()
        requests = [irecv(areas[into_scratch][span], peer, tag)
                    for into_scratch, span, peer, tag in step.recvs]
        requests += [isend(work_bytes[span], peer, tag) for span, peer, tag in step.sends]
        waitall(requests)
        for target, source in step.reduces:
            into = work[target]
            reduce(into, scratch[source], out=into)
        if step.copies:
            apply_copies(work, step.copies)


def _walk_staged(comm: Any, plan: Plan, work: Any, scratch: Any, reduce: Any,
                 stream: Any) -> None:
    """Run the plan on GPU buffers through page-locked host mirrors of work and scratch."""
    waitall = _MPI.Request.Waitall
    irecv, isend = comm.Irecv, comm.Isend
    host = workspace("pinned", work.dtype, plan.count, "mpi-stage-work").view(np.uint8)
    host_scratch = workspace("pinned", work.dtype, plan.scratch_count,
                             "mpi-stage-scratch").view(np.uint8)
    device = (work.view("uint8"), scratch.view("uint8"))
    areas = (host, host_scratch)
    for step in plan.steps:
        for span, _, _ in step.sends:
            device[0][span].get(stream=stream, out=host[span])
        stream.synchronize()
        requests = [irecv(areas[into_scratch][span], peer, tag)
                    for into_scratch, span, peer, tag in step.recvs]
        requests += [isend(host[span], peer, tag) for span, peer, tag in step.sends]
        waitall(requests)
        for into_scratch, span, _, _ in step.recvs:
            device[into_scratch][span].set(areas[into_scratch][span], stream=stream)
        for target, source in step.reduces:
            into = work[target]
            reduce(into, scratch[source], out=into)
        if step.copies:
            apply_copies(work, step.copies)


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
        #: collectives run, by path: "persistent" (NumPy), "direct" (CUDA-aware CuPy),
        #: "staged" (CuPy through host) or "native"
        self.runs: Counter[str] = Counter()
        self.persistent = PersistentPlans(_MPI, self.comm)

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
        """
        return self.comm.allgather(obj)

    def validate(self, call: Call, native: bool) -> None:
        """Raise TypeError before any communication if MPI cannot carry ``call.dtype``.

        Only MPI's own collectives (``native``) need an MPI datatype; the schedules move
        bytes and reduce with the array module, so they take every supported dtype.

        Parameters
        ----------
        call : Call
            The checked call.
        native : bool
            Whether the call will run MPI's own collective.

        Raises
        ------
        TypeError
            If ``native`` and the MPI library has no datatype for ``call.dtype``.
        """
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
        through host copies unless MPI is CUDA-aware.

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
        scratch = workspace(call.xp, call.dtype, plan.scratch_count, "scratch", stream)
        if call.xp is np:
            self.runs["persistent"] += 1
            self.persistent.run(plan, work, scratch, reducer(np, op))
            return
        staged = self._staged(call)
        self.runs["staged" if staged else "direct"] += 1
        walk = _walk_staged if staged else _walk
        with nullcontext() if stream is None else stream:
            walk(self.comm, plan, work, scratch, reducer(call.xp, op), stream)

    def native(self, call: Call, op: str, stream: Any) -> None:
        """Run MPI's own collective: Allreduce, Reduce_scatter_block or Allgather.

        Parameters
        ----------
        call : Call
            The checked call (``send`` None for in place).
        op : str
            The reduction, one of :data:`~collectives.ops.OPS` (ignored by AllGather).
        stream : cupy.cuda.Stream or None
            Synchronised first, when given; CuPy results staged through the host are copied
            back on it.
        """
        MPI = _MPI
        self.runs["native"] += 1
        if stream is not None:
            stream.synchronize()
        staged = self._staged(call)
        send = MPI.IN_PLACE if call.send is None else (call.send.get() if staged else call.send)
        recv = call.recv.get() if staged and call.send is None else (
            np.empty(call.recv.size, np.dtype(call.dtype.name)) if staged else call.recv)
        if call.collective == "allreduce":
            self.comm.Allreduce(send, recv, _mpi_ops()[op])
        elif call.collective == "reduce_scatter":
            self.comm.Reduce_scatter_block(send, recv, _mpi_ops()[op])
        else:
            self.comm.Allgather(send, recv)
        if staged:
            call.recv.set(recv, stream=stream)


def mpi_transport(comm: Any) -> MpiTransport:
    """Return the transport of ``comm``, creating and caching it on first use.

    The transport is kept on ``comm`` as an MPI attribute. The first call on a
    communicator is collective: it duplicates ``comm``.

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
        _KEYVAL, _MPI = MPI.Comm.Create_keyval(), MPI
    if comm is None:
        comm = _MPI.COMM_WORLD
    elif not isinstance(comm, _MPI.Intracomm) or comm == _MPI.COMM_NULL:
        raise TypeError(f"comm={comm!r} is not allowed; pass an mpi4py intracommunicator "
                        f"(e.g. MPI.COMM_WORLD) or a collectives NcclComm")
    transport = comm.Get_attr(_KEYVAL)
    if transport is None:
        transport = MpiTransport(comm)
        comm.Set_attr(_KEYVAL, transport)
    return transport
