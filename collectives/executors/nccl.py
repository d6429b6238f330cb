"""The NCCL executor: walks a plan through ``cupy.cuda.nccl`` on CuPy buffers.

Each step's sends and receives are posted inside one ``groupStart``/``groupEnd`` on the
call's stream, and its reductions run as CuPy kernels on the same stream, so a step never
waits on the host: the whole collective is enqueued and the call returns (as NCCL's own
collectives do).  NCCL matches a pair's sends and receives in order, so no tags are needed.
A repeated walk is captured once as a CUDA graph and replayed (:mod:`.graphs`).

:class:`NcclComm` creates the NCCL communicator from an MPI communicator: rank 0 makes
the unique id and broadcasts it over MPI.  It keeps that MPI communicator's private
duplicate, over which the ranks agree on each call shape the first time they meet it
(:meth:`NcclComm.agree_once`; NCCL has no tags to catch ranks that disagree).  Each rank
drives one GPU: by default the one its rank among the ranks of its node picks (an MPI
shared-memory split), and every call runs under that device.  Two ranks of a node on one
GPU are refused unless ``NCCL_MULTI_RANK_GPU_ENABLE=1`` and this NCCL is 2.30 or later,
which has that variable (``src/init.cc``; older ones refuse a GPU used twice); at most
:data:`MAX_RANKS_PER_GPU` then share one.

A failure inside a step never launches part of its group: the group is failed on purpose
(an NCCL call with an invalid peer sets NCCL's group error, and ``ncclGroupEnd`` then
launches nothing, ``src/group.cc``), the communicator is aborted, and the error raised;
peers waiting for this rank are released by the job's abort (:mod:`.abort`).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence

from ..ops import reducer
from .buffers import Call, workspace
from .check import agree
from .graphs import Graphs, graphs_enabled
from .guard import CommunicatorBrokenError
from .plan import Plan, apply_reduces
from .transport import Native, Walker

__all__ = ["NcclComm", "NCCL_DTYPES", "NCCL_OPS", "NATIVE_NCCL", "fail_group", "SHARED_GPU_ENV", "SHARED_GPU_VERSION",
           "MAX_RANKS_PER_GPU", "ranks_per_gpu", "local_device"]

#: NCCL's variable that lets several ranks of a communicator share a GPU
SHARED_GPU_ENV = "NCCL_MULTI_RANK_GPU_ENABLE"
#: the first NCCL with it (2.30.x, ``nccl.get_version()`` codes 2.x.y as 20000 + 100x + y)
SHARED_GPU_VERSION = 23000
#: ranks per GPU allowed with it (NCCL's docs warn that more may hang)
MAX_RANKS_PER_GPU = 2

#: dtype name -> name of the ``cupy.cuda.nccl`` constant (NCCL 2.x ncclDataType_t;
#: bfloat16 is ml_dtypes' type, which CuPy >= 14 computes on)
NCCL_DTYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
               "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
               "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
               "bfloat16": "NCCL_BFLOAT16"}

#: op name -> name of the ``cupy.cuda.nccl`` constant of ncclRedOp_t (``NCCL_AVG`` is
#: ncclAvg, NCCL >= 2.10)
NCCL_OPS = {"sum": "NCCL_SUM", "prod": "NCCL_PROD", "max": "NCCL_MAX", "min": "NCCL_MIN",
            "avg": "NCCL_AVG"}


def ranks_per_gpu(enabled: str | None, version: int) -> int:
    """Return how many ranks of a node may drive one GPU with this NCCL.

    Parameters
    ----------
    enabled : str or None
        The value of ``NCCL_MULTI_RANK_GPU_ENABLE`` (None when unset).
    version : int
        ``cupy.cuda.nccl.get_version()`` (e.g. 22809 for 2.28.9, 23004 for 2.30.4).

    Returns
    -------
    int
        1, or :data:`MAX_RANKS_PER_GPU` where the variable is ``1`` and NCCL has it.

    Examples
    --------
    >>> ranks_per_gpu("1", 22809), ranks_per_gpu("1", 23004), ranks_per_gpu(None, 23004)
    (1, 2, 1)
    """
    return MAX_RANKS_PER_GPU if enabled == "1" and version >= SHARED_GPU_VERSION else 1


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


def local_device(mpi_comm: Any, devices: int, per_gpu: int, version: int) -> int:
    """Return the GPU of this rank: its rank among the ranks of its node, wrapped around
    the GPUs where ``per_gpu`` ranks may share one.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Intracomm
        The ranks (split by shared memory, a collective call).
    devices : int
        GPUs visible to this rank.
    per_gpu : int
        Ranks allowed per GPU (:func:`ranks_per_gpu`).
    version : int
        NCCL's version code, for the message.

    Returns
    -------
    int
        The device index.

    Raises
    ------
    ValueError
        If the node has more ranks than its GPUs take, or no GPU.
    """
    from mpi4py import MPI
    node = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank, local_size = node.Get_rank(), node.Get_size()
    node.Free()
    if devices < 1:
        raise ValueError("NcclComm found no CUDA GPU on this rank")
    if local_size > devices * per_gpu:
        if per_gpu > 1:
            hint = f"NCCL takes at most {MAX_RANKS_PER_GPU} ranks per GPU"
        elif version >= SHARED_GPU_VERSION:
            hint = f"or set {SHARED_GPU_ENV}=1 for up to {MAX_RANKS_PER_GPU} ranks per GPU"
        else:
            hint = (f"NCCL {_shown_version(version)} refuses ranks sharing a GPU "
                    f"({SHARED_GPU_ENV} needs NCCL >= 2.30)")
        raise ValueError(f"{local_size} ranks on this node but {devices} GPU(s): run at "
                         f"most {devices * per_gpu} ranks per node; {hint}")
    return local_rank % devices


def _shown_version(code: int) -> str:
    """``22809`` as ``2.28.9``."""
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


class NcclComm:
    """An NCCL communicator over the ranks of an MPI communicator, one GPU per rank.

    Pass it as ``comm=`` to the collectives to run them over NCCL; :meth:`close` (or a
    ``with`` block) destroys it.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Intracomm, optional
        The ranks, and the channel for the unique id and the agreement on call shapes;
        ``MPI.COMM_WORLD`` by default.
    device : int, optional
        The GPU this rank drives; by default its rank among the ranks on its node
        (:func:`local_device`).
    graphs : bool, optional
        Capture repeated walks as CUDA graphs (:mod:`.graphs`); None (default): as
        ``COLLSIM_CUDA_GRAPHS`` says, on unless ``0``.

    Raises
    ------
    ImportError
        If CuPy or its NCCL is missing, saying what to install.
    ValueError
        If a node has more ranks than its GPUs take (:func:`local_device`), or ``device``
        is not a GPU of this rank.

    Examples
    --------
    >>> with NcclComm() as comm:                                   # doctest: +SKIP
    ...     collectives.allreduce(cupy.ones(8, "f4"), comm=comm)
    """

    name = "nccl"

    def __init__(self, mpi_comm: Any = None, device: int | None = None,
                 graphs: bool | None = None) -> None:
        nccl = _nccl()
        import cupy
        from .mpi import mpi_transport
        self._mpi = mpi_transport(mpi_comm)
        self.rank, self.size = self._mpi.rank, self._mpi.size
        devices = cupy.cuda.runtime.getDeviceCount()
        #: NCCL's version code (``nccl.get_version()``, e.g. 22809 for 2.28.9)
        self.version = nccl.get_version()
        if device is None:
            per_gpu = ranks_per_gpu(os.environ.get(SHARED_GPU_ENV), self.version)
            device = local_device(self._mpi.comm, devices, per_gpu, self.version)
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
        #: the walks captured as CUDA graphs and replayed (:mod:`.graphs`)
        self.graphs = Graphs(graphs_enabled(graphs))
        #: why the communicator was aborted (None while it works)
        self.broken: str | None = None
        self._lib = nccl
        self._agreed: set[tuple] = set()

    def close(self) -> None:
        """Destroy the NCCL communicator (once; later calls on it raise)."""
        if self.nccl is not None:
            self.graphs.clear()
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
        """Return the NCCL communicator, or raise if it was aborted or closed."""
        if self.broken is not None:
            raise CommunicatorBrokenError(f"this NcclComm was aborted: {self.broken}; "
                                          f"create a new one")
        if self.nccl is None:
            raise ValueError("this NcclComm is closed; create a new one")
        return self.nccl

    def _abort(self, error: BaseException) -> None:
        """Abort the NCCL communicator after ``error`` stopped a call (its peers may wait
        for work this rank never enqueues)."""
        if self.broken is None:
            self.broken = f"rank {self.rank}: {type(error).__name__}: {error}"
        if self.nccl is not None:
            self.graphs.clear()
            with self.device:
                self.nccl.abort()
            self.nccl = None

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

    def agree_once(self, signature: tuple) -> None:
        """Agree on ``signature`` over MPI the first time this rank calls with it.

        NCCL has no tags: ranks that disagree would hang.  A call shape every rank meets
        for the first time together is checked; a shape agreed once is not checked again.

        Parameters
        ----------
        signature : tuple
            The call's :func:`~.check.signature`.

        Raises
        ------
        ArgumentMismatchError
            On every rank, when the ranks disagree.
        """
        if signature not in self._agreed:
            agree(signature, self.allgather_object)
            self._agreed.add(signature)

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
            If ``recvbuf`` (a Reduce's ``sendbuf`` off its root) is on another GPU than this
            communicator's, or ``native`` with an op NCCL does not have.
        CommunicatorBrokenError
            If the communicator was aborted.
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
        name, buf = ("recvbuf", call.recv) if call.recv is not None else ("sendbuf", call.send)
        if buf.device.id != device:
            raise ValueError(f"{name} is on GPU {buf.device.id} but this NcclComm "
                             f"drives GPU {device}")

    def check_usable(self) -> None:
        """Raise if the communicator was aborted or closed."""
        self._live()

    def walker(self, plan: Plan, op: str, xp: Any) -> Walker:
        """Return :meth:`run` bound to ``plan`` and ``op``: ``walk(work, send, stream)``."""
        return partial(self.run, plan, op, xp)

    def run(self, plan: Plan, op: str, xp: Any, work: Any, send: Any, stream: Any) -> None:
        """Enqueue ``plan`` on ``stream``: grouped send/recv per step, CuPy reductions; a
        repeated walk as one CUDA graph launch (:class:`~.graphs.Graphs`).

        Parameters
        ----------
        plan : Plan
            The rank's compiled steps.
        op : str
            The reduction, one of :data:`~collectives.ops.OPS`.
        xp : module
            ``cupy``.
        work : cupy.ndarray
            The working buffer, updated in place.
        send : cupy.ndarray or None
            Unused (the sends read ``work``).
        stream : cupy.cuda.Stream
            The stream to enqueue on.

        Raises
        ------
        CommunicatorBrokenError
            If the communicator was aborted before; any error of this walk aborts it.
        """
        comm = self._live()
        self.runs["nccl"] += 1
        if not plan.steps:  # one rank: nothing to enqueue
            return
        with self.device, stream:
            scratch = workspace(xp, work.dtype, plan.scratch_count, "scratch", stream)
            walk = partial(self._walk, comm, plan, work, scratch, reducer(xp, op), stream.ptr)
            try:
                self.graphs.run(Graphs.key(plan, op, work, scratch, stream), stream, walk,
                                plan, xp, work.dtype)
            except BaseException as error:
                self._abort(error)
                raise

    def _walk(self, comm: Any, plan: Plan, work: Any, scratch: Any, reduce: Any,
              stream_ptr: int, copy: Any) -> None:
        """Enqueue every step: its group of sends and receives, reductions, then copies."""
        bases = (work.data.ptr, scratch.data.ptr)
        for step in plan.steps:
            self._group(comm, step, bases, stream_ptr)
            apply_reduces(work, scratch, step.reduces, reduce)
            if step.copies:
                copy(work, step.copies)

    def _group(self, comm: Any, step: Any, bases: tuple[int, int], stream_ptr: int) -> None:
        """Post a step's receives and sends as one NCCL group; on an error none of them is
        launched (:meth:`_fail_group`)."""
        nccl = self._lib
        byte = nccl.NCCL_UINT8
        nccl.groupStart()
        try:
            for into_scratch, span, peer, _ in step.recvs:
                comm.recv(bases[into_scratch] + span.start, span.stop - span.start, byte,
                          peer, stream_ptr)
            for span, peer, _ in step.sends:
                comm.send(bases[0] + span.start, span.stop - span.start, byte, peer,
                          stream_ptr)
        except BaseException:
            self._fail_group(comm, stream_ptr)
            raise
        nccl.groupEnd()

    def _fail_group(self, comm: Any, stream_ptr: int) -> None:
        """End the open group without launching what it holds (:func:`fail_group`)."""
        fail_group(self._lib, comm, stream_ptr)

    def native_runner(self, shape: Call, op: str, signed: bool) -> Native:
        """Return NCCL's own collective for calls shaped as ``shape`` (:data:`NATIVE_NCCL`):
        ``run(send, recv, stream)``; NCCL's collectives are enqueued without hellos whatever
        ``signed`` says (the shapes are agreed on by :meth:`agree_once`)."""
        return partial(self.native, shape, op)

    def native(self, shape: Call, op: str, send: Any, recv: Any, stream: Any) -> None:
        """Enqueue NCCL's own collective of a call shaped as ``shape`` on ``stream``.

        Parameters
        ----------
        shape : Call
            The checked call (its buffers are not read).
        op : str
            The reduction, one of :data:`~collectives.ops.OPS` (ignored by AllGather).
        send, recv : cupy.ndarray
            The flat buffers (``send`` None in place).
        stream : cupy.cuda.Stream
            The stream to enqueue on.

        Raises
        ------
        CommunicatorBrokenError
            If the communicator was aborted before; an error here aborts it.
        """
        nccl, comm = self._lib, self._live()
        self.runs["native"] += 1
        datatype = getattr(nccl, NCCL_DTYPES[shape.dtype.name])
        with self.device, stream:
            try:
                NATIVE_NCCL[shape.collective](
                    _NcclCall(nccl, comm, self.rank, self.size, shape, datatype,
                              getattr(nccl, NCCL_OPS[op]), send, recv, stream.ptr))
            except BaseException as error:
                self._abort(error)
                raise


def fail_group(nccl: Any, comm: Any, stream_ptr: int) -> None:
    """End the open group without launching what it holds: a send to peer -1 fails NCCL's
    argument check, which sets the group's error (``ncclGroupErrCheck``), and
    ``ncclGroupEnd`` then cleans the group up instead of launching it.

    Parameters
    ----------
    nccl : module
        ``cupy.cuda.nccl``.
    comm : cupy.cuda.nccl.NcclCommunicator
        The communicator the group posts on.
    stream_ptr : int
        The group's stream.
    """
    for end in (partial(comm.send, 0, 0, nccl.NCCL_UINT8, -1, stream_ptr), nccl.groupEnd):
        try:
            end()
        except nccl.NcclError:
            pass  # expected: both report the error that discards the group


@dataclass(frozen=True, slots=True)
class _NcclCall:
    """What one of NCCL's collectives is enqueued with (an entry of :data:`NATIVE_NCCL`)."""

    nccl: Any
    comm: Any
    rank: int
    size: int
    shape: Call
    datatype: int
    op: int
    send: Any
    recv: Any
    stream: int


def _allreduce(call: _NcclCall) -> None:
    recv = call.recv.data.ptr
    send = recv if call.send is None else call.send.data.ptr
    call.comm.allReduce(send, recv, call.shape.count, call.datatype, call.op, call.stream)


def _reduce_scatter(call: _NcclCall) -> None:
    # NCCL in place: recvbuff = sendbuff + rank * recvcount; MPI's (ours) puts the block
    # first, so move it there afterwards (the ranges are disjoint for rank > 0)
    part, rank = call.shape.part, call.rank
    recv = call.recv.data.ptr
    send = recv if call.send is None else call.send.data.ptr
    into = recv + rank * part * call.shape.dtype.itemsize if call.send is None else recv
    call.comm.reduceScatter(send, into, part, call.datatype, call.op, call.stream)
    if call.send is None and rank:
        call.recv[:part] = call.recv[rank * part:(rank + 1) * part]


def _allgather(call: _NcclCall) -> None:
    part = call.shape.part
    recv = call.recv.data.ptr
    send = (recv + call.rank * part * call.shape.dtype.itemsize if call.send is None
            else call.send.data.ptr)
    call.comm.allGather(send, recv, part, call.datatype, call.stream)


def _broadcast(call: _NcclCall) -> None:
    """``ncclBroadcast`` in place (``sendbuff == recvbuff``): the root's buffer is sent."""
    buf = call.recv.data.ptr
    call.comm.broadcast(buf, buf, call.shape.count, call.datatype, call.shape.root,
                        call.stream)


def _reduce(call: _NcclCall) -> None:
    """``ncclReduce``; off the root, which has no ``recvbuf``, NCCL ignores ``recvbuff``
    and is given ``sendbuff`` there."""
    send = call.send.data.ptr
    recv = send if call.recv is None else call.recv.data.ptr
    call.comm.reduce(send, recv, call.shape.count, call.datatype, call.op, call.shape.root,
                     call.stream)


def _exchange(call: _NcclCall) -> None:
    """An AllToAll(v) as grouped ``ncclSend``/``ncclRecv`` with every rank, this one
    included (nccl-tests' ``alltoall_perf`` before ``ncclAlltoAll``): block ``j`` of the
    send buffer to rank ``j``, rank ``i``'s into block ``i`` (an AllToAllv's at its
    counts and displacements).  On an error none of the group is launched."""
    nccl, comm, itemsize = call.nccl, call.comm, call.shape.dtype.itemsize
    sendcounts, sdispls, recvcounts, rdispls = _displacements(call.shape, call.size)
    send, recv = call.send.data.ptr, call.recv.data.ptr
    nccl.groupStart()
    try:
        for peer in range(call.size):  # empty blocks are not posted (on neither side)
            if sendcounts[peer]:
                comm.send(send + sdispls[peer] * itemsize, sendcounts[peer], call.datatype,
                          peer, call.stream)
            if recvcounts[peer]:
                comm.recv(recv + rdispls[peer] * itemsize, recvcounts[peer], call.datatype,
                          peer, call.stream)
    except BaseException:
        fail_group(nccl, comm, call.stream)
        raise
    nccl.groupEnd()


def _displacements(shape: Call, size: int) -> tuple[Sequence[int], ...]:
    """An AllToAll(v)'s ``(sendcounts, sdispls, recvcounts, rdispls)`` in elements: an
    AllToAllv's as given, an AllToAll's ``size`` equal blocks in rank order."""
    if shape.vector is not None:
        return tuple(shape.vector[:4])
    counts, displs = [shape.count] * size, [peer * shape.count for peer in range(size)]
    return counts, displs, counts, displs


#: NCCL's own collective for each collective, enqueued under the communicator's device and
#: the call's stream; adding a collective is one entry here and one in
#: :data:`~.mpi.NATIVE_MPI`
NATIVE_NCCL: dict[str, Callable[[_NcclCall], None]] = {
    "allreduce": _allreduce, "reduce_scatter": _reduce_scatter, "allgather": _allgather,
    "broadcast": _broadcast, "reduce": _reduce, "alltoall": _exchange, "alltoallv": _exchange}
