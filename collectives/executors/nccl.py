"""The NCCL executor: walks a plan through ``cupy.cuda.nccl`` on CuPy buffers.

Each step's sends and receives are posted inside one ``groupStart``/``groupEnd`` on the
call's stream, and its reductions run as CuPy kernels on the same stream, so a step never
waits on the host: the whole collective is enqueued and the call returns (as NCCL's own
collectives do).  NCCL matches a pair's sends and receives in order, so no tags are needed.

:class:`NcclComm` creates the NCCL communicator from an MPI communicator: rank 0 makes
the unique id and broadcasts it over MPI.  It keeps that MPI communicator's private
duplicate for the ``check=True`` agreement.  Each rank drives one GPU: by default the one
its rank among the ranks of its node picks (an MPI shared-memory split), and every call
runs under that device.  Two ranks of a node on one GPU are refused unless
``NCCL_MULTI_RANK_GPU_ENABLE=1`` says that this NCCL (2.30 or later) allows it.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from ..ops import reducer
from .buffers import Call, workspace
from .plan import Plan, apply_copies, apply_reduces

__all__ = ["NcclComm", "NCCL_DTYPES", "NCCL_OPS", "SHARED_GPU_ENV", "local_device"]

#: NCCL's variable that lets several ranks of a communicator share a GPU (NCCL >= 2.30)
SHARED_GPU_ENV = "NCCL_MULTI_RANK_GPU_ENABLE"

#: dtype name -> name of the ``cupy.cuda.nccl`` constant (NCCL 2.x ncclDataType_t)
NCCL_DTYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
               "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
               "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}

#: op name -> ncclRedOp_t (nccl.h: ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, and ncclAvg 4
#: from NCCL 2.10, which ``cupy.cuda.nccl`` has no constant for; its methods take an int)
NCCL_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


def _nccl() -> Any:
    """Return ``cupy.cuda.nccl``, or raise saying what to install."""
    try:
        from cupy.cuda import nccl
    except ImportError as error:
        raise ImportError(f"NcclComm needs CuPy ({error}); install the extra for this "
                          f"machine's CUDA: pip install 'collsim[gpu-cuda12]' or "
                          f"'collsim[gpu-cuda13]'") from None
    if not nccl.available:
        raise ImportError("CuPy cannot load NCCL (cupy.cuda.nccl.available is False); install "
                          "the NCCL wheel of this machine's CUDA with a CuPy that finds it: "
                          "pip install 'collsim[gpu-cuda12]' (cupy-cuda12x>=13.5, "
                          "nvidia-nccl-cu12) or 'collsim[gpu-cuda13]' (cupy-cuda13x>=14, "
                          "nvidia-nccl-cu13), one of them only")
    return nccl


def local_device(mpi_comm: Any, devices: int, shared_allowed: bool) -> int:
    """Return the GPU of this rank: its rank among the ranks of its node.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Intracomm
        The ranks (split by shared memory, a collective call).
    devices : int
        GPUs visible to this rank.
    shared_allowed : bool
        Whether several ranks may drive one GPU (then ranks wrap around the GPUs).

    Returns
    -------
    int
        The device index.

    Raises
    ------
    ValueError
        If the node has more ranks than GPUs and sharing is not allowed, or no GPU.
    """
    from mpi4py import MPI
    node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank, local_size = node.Get_rank(), node.Get_size()
    node.Free()
    if devices < 1:
        raise ValueError("NcclComm found no CUDA GPU on this rank")
    if local_size > devices and not shared_allowed:
        raise ValueError(f"{local_size} ranks on this node but {devices} GPU(s): NCCL needs "
                         f"one GPU per rank; run at most {devices} ranks per node, or set "
                         f"{SHARED_GPU_ENV}=1 where NCCL (>= 2.30) allows ranks to share one")
    return local_rank % devices


class NcclComm:
    """An NCCL communicator over the ranks of an MPI communicator, one GPU per rank.

    Pass it as ``comm=`` to the collectives to run them over NCCL; :meth:`close` (or a
    ``with`` block) destroys it.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Intracomm, optional
        The ranks, and the channel for the unique id; ``MPI.COMM_WORLD`` by default.
    device : int, optional
        The GPU this rank drives; by default its rank among the ranks on its node
        (:func:`local_device`).

    Raises
    ------
    ImportError
        If CuPy or its NCCL is missing, saying what to install.
    ValueError
        If a node has more ranks than GPUs (unless ``NCCL_MULTI_RANK_GPU_ENABLE=1``), or
        ``device`` is not a GPU of this rank.

    Examples
    --------
    >>> with NcclComm() as comm:                                   # doctest: +SKIP
    ...     collectives.allreduce(cupy.ones(8, "f4"), comm=comm)
    """

    name = "nccl"

    def __init__(self, mpi_comm: Any = None, device: int | None = None) -> None:
        nccl = _nccl()
        import cupy
        from .mpi import mpi_transport
        self._mpi = mpi_transport(mpi_comm)
        self.rank, self.size = self._mpi.rank, self._mpi.size
        devices = cupy.cuda.runtime.getDeviceCount()
        shared = os.environ.get(SHARED_GPU_ENV, "0") == "1"
        if device is None:
            device = local_device(self._mpi.comm, devices, shared)
        elif not 0 <= device < devices:
            raise ValueError(f"device={device} is not allowed; this rank sees GPUs "
                             f"0..{devices - 1}")
        #: the GPU this rank drives
        self.device = cupy.cuda.Device(device)
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = self._mpi.comm.bcast(uid, root=0)
        with self.device:
            self.nccl = nccl.NcclCommunicator(self.size, uid, self.rank)
        #: collectives run, by path: "nccl" (a schedule) or "native"
        self.runs: Counter[str] = Counter()
        self._lib = nccl

    def close(self) -> None:
        """Destroy the NCCL communicator (once; later calls on it raise)."""
        if self.nccl is not None:
            with self.device:
                self.nccl.destroy()
            self.nccl = None

    def __enter__(self) -> "NcclComm":
        """Return this communicator, destroyed when the ``with`` block ends."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Destroy the NCCL communicator (:meth:`close`)."""
        self.close()

    def _live(self) -> Any:
        """Return the NCCL communicator, or raise if :meth:`close` destroyed it."""
        if self.nccl is None:
            raise ValueError("this NcclComm is closed; create a new one")
        return self.nccl

    def allgather_object(self, obj: Any) -> list[Any]:
        """All-gather a small picklable object over MPI (used by the agreement check).

        Parameters
        ----------
        obj : Any
            This rank's object.

        Returns
        -------
        list
            Every rank's object, in rank order.
        """
        return self._mpi.allgather_object(obj)

    def validate(self, call: Call, op: str, native: bool) -> None:
        """Raise before any communication for buffers NCCL cannot reach or carry.

        Parameters
        ----------
        call : Call
            The checked call.
        op : str
            The reduction (checked by :func:`~collectives.ops.check_op`).
        native : bool
            Whether the call will run NCCL's own collective, which has only
            :data:`NCCL_OPS` (the schedules reduce with CuPy: every op).

        Raises
        ------
        TypeError
            If the buffers are not CuPy arrays or NCCL has no datatype for ``call.dtype``.
        ValueError
            If ``recvbuf`` is on another GPU than this communicator's, or ``native`` with
            an op NCCL does not have.
        """
        if native and call.collective != "allgather" and op not in NCCL_OPS:
            raise ValueError(f"op {op!r} is not one of NCCL's own; algorithm='native' over an "
                             f"NcclComm takes {list(NCCL_OPS)}, the schedules (ring, tree, "
                             f"rhd, pipeline) take every op")
        if call.xp.__name__ != "cupy":
            raise TypeError(f"comm is an NcclComm but the buffers are {call.xp.__name__} arrays; "
                            f"NCCL needs cupy arrays on this rank's GPU")
        if call.dtype.name not in NCCL_DTYPES:
            raise TypeError(f"dtype {call.dtype.name!r} is not carried by NCCL; choose one of "
                            f"{sorted(NCCL_DTYPES)}")
        device = self._live().device_id()
        if call.recv.device.id != device:
            raise ValueError(f"recvbuf is on GPU {call.recv.device.id} but this NcclComm "
                             f"drives GPU {device}")

    def run(self, plan: Plan, call: Call, work: Any, op: str, stream: Any) -> None:
        """Enqueue ``plan`` on ``stream``: grouped send/recv per step, CuPy reductions.

        Parameters
        ----------
        plan : Plan
            The rank's compiled steps.
        call : Call
            The checked call (array module and dtype).
        work : cupy.ndarray
            The working buffer, updated in place.
        op : str
            The reduction, one of :data:`~collectives.ops.OPS`.
        stream : cupy.cuda.Stream
            The stream to enqueue on.
        """
        self.runs["nccl"] += 1
        nccl, comm, stream_ptr = self._lib, self._live(), stream.ptr
        byte = nccl.NCCL_UINT8
        scratch = workspace(call.xp, call.dtype, plan.scratch_count, "scratch", stream)
        bases = (work.data.ptr, scratch.data.ptr)
        reduce = reducer(call.xp, op)
        with self.device, stream:
            for step in plan.steps:
                nccl.groupStart()
                try:
                    for into_scratch, span, peer, _ in step.recvs:
                        comm.recv(bases[into_scratch] + span.start, span.stop - span.start,
                                  byte, peer, stream_ptr)
                    for span, peer, _ in step.sends:
                        comm.send(bases[0] + span.start, span.stop - span.start, byte, peer,
                                  stream_ptr)
                finally:
                    nccl.groupEnd()
                apply_reduces(work, scratch, step.reduces, reduce)
                if step.copies:
                    apply_copies(work, step.copies)

    def native(self, call: Call, op: str, stream: Any, signed: bool = True) -> None:
        """Enqueue NCCL's own ncclAllReduce, ncclReduceScatter or ncclAllGather.

        Parameters
        ----------
        call : Call
            The checked call (``send`` None for in place).
        op : str
            The reduction, one of :data:`~collectives.ops.OPS` (ignored by AllGather).
        stream : cupy.cuda.Stream
            The stream to enqueue on.
        signed : bool
            Unused: NCCL's collectives are enqueued without hellos either way.
        """
        self.runs["native"] += 1
        nccl, comm = self._lib, self._live()
        with self.device:
            self._native(nccl, comm, call, op, stream)

    def _native(self, nccl: Any, comm: Any, call: Call, op: str, stream: Any) -> None:
        """Enqueue the NCCL collective of ``call`` (under this communicator's device)."""
        datatype = getattr(nccl, NCCL_DTYPES[call.dtype.name])
        recv = call.recv.data.ptr
        itemsize = call.dtype.itemsize
        if call.collective == "allreduce":
            send = recv if call.send is None else call.send.data.ptr
            comm.allReduce(send, recv, call.count, datatype, NCCL_OPS[op],
                           stream.ptr)
        elif call.collective == "reduce_scatter":
            # NCCL in place: recvbuff = sendbuff + rank * recvcount; MPI's (ours) puts the
            # block first, so move it there afterwards (the ranges are disjoint for rank > 0)
            send = recv if call.send is None else call.send.data.ptr
            into = recv + self.rank * call.part * itemsize if call.send is None else recv
            comm.reduceScatter(send, into, call.part, datatype, NCCL_OPS[op],
                               stream.ptr)
            if call.send is None and self.rank:
                with stream:
                    block = call.recv[self.rank * call.part:(self.rank + 1) * call.part]
                    call.recv[:call.part] = block
        else:
            send = (recv + self.rank * call.part * itemsize if call.send is None
                    else call.send.data.ptr)
            comm.allGather(send, recv, call.part, datatype, stream.ptr)
