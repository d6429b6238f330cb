"""Buffers: which array module owns them, the checks made before any communication, and
the reusable workspace (scratch for reducing receives, staging areas).

NumPy and CuPy arrays are accepted; CuPy is imported only when a CuPy array is passed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ops import ALL_DTYPES, GPU_DTYPES, check_dtype
from .runtime import RUNTIME

__all__ = ["IN_PLACE", "Call", "array_module", "prepare", "workspace", "is_in_place",
           "WORKSPACE_ENV", "workspace_limit", "workspace_bytes", "discard", "staging", "staged_done", "check_overlap", "lay_input", "take_block",
           "flat_buffer"]

#: environment variable: bytes of workspace kept between calls (default 64 MiB)
WORKSPACE_ENV = "COLLSIM_WORKSPACE_BYTES"

_DEFAULT_WORKSPACE_BYTES = 64 << 20


class _InPlace:
    """The type of :data:`IN_PLACE`."""

    _instance: "_InPlace | None" = None

    def __new__(cls) -> "_InPlace":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "collectives.IN_PLACE"

    def __reduce__(self) -> str:
        return "IN_PLACE"


#: pass as ``sendbuf`` to take the input from ``recvbuf`` and overwrite it (as ``MPI.IN_PLACE``)
IN_PLACE = _InPlace()


def is_in_place(sendbuf: Any, recvbuf: Any) -> bool:
    """Return True for :data:`IN_PLACE`, mpi4py's ``MPI.IN_PLACE``, or ``sendbuf is recvbuf``.

    Parameters
    ----------
    sendbuf : Any
        The send argument.
    recvbuf : Any
        The receive argument.

    Returns
    -------
    bool
        Whether the call is in place.
    """
    if sendbuf is IN_PLACE or (sendbuf is recvbuf and recvbuf is not None):
        return True
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and sendbuf is mpi.IN_PLACE


def array_module(name: str, buf: Any) -> Any:
    """Return ``numpy`` or ``cupy``, whichever owns ``buf``.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    buf : Any
        The buffer.

    Returns
    -------
    module
        ``numpy`` or ``cupy``.

    Raises
    ------
    TypeError
        If ``buf`` is neither a NumPy nor a CuPy array, or looks like a CuPy array where
        CuPy cannot be imported.
    """
    if isinstance(buf, np.ndarray):
        return np
    if type(buf).__module__.startswith("cupy"):
        try:
            import cupy
        except ImportError as error:
            raise TypeError(f"{name} is a {type(buf).__module__}.{type(buf).__name__} but "
                            f"CuPy cannot be imported here ({error}); install CuPy for GPU "
                            f"buffers, or pass a numpy.ndarray") from None
        if isinstance(buf, cupy.ndarray):
            return cupy
    raise TypeError(f"{name} is a {type(buf).__module__}.{type(buf).__name__}; "
                    f"pass a numpy.ndarray or a cupy.ndarray")


@dataclass(slots=True)
class Call:
    """One collective call, checked and laid out, ready for an executor.

    Attributes
    ----------
    collective : str
        The collective.
    xp : module
        ``numpy`` or ``cupy``.
    dtype : dtype
        Element type of both buffers.
    count : int
        Elements of the working buffer (see :mod:`collectives.layout`).
    part : int
        Elements of one rank's block for ReduceScatter and AllGather (``count`` for
        AllReduce).
    send : array or None
        ``sendbuf`` flattened, or None in place.
    recv : array
        ``recvbuf`` flattened (allocated when the caller passed None).
    result : array
        What the call returns: ``recvbuf`` as passed or allocated (for an in-place
        ReduceScatter, the first ``part`` elements of it).
    root : int
        The root of a Broadcast or Reduce (0 for the others).
    vector : tuple or None
        An AllToAllv's ``(sendcounts, sdispls, recvcounts, rdispls, counts)``: the
        caller's lists and the agreed matrix (:func:`collectives.vcounts.agree_counts`);
        None for the others.
    """

    collective: str
    xp: Any
    dtype: Any
    count: int
    part: int
    send: Any
    recv: Any
    result: Any
    root: int = 0
    vector: tuple | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of the working buffer."""
        return self.count * self.dtype.itemsize


def _flat(name: str, buf: Any) -> Any:
    if not buf.flags.c_contiguous:
        raise ValueError(f"{name} is not contiguous (shape {buf.shape}, strides {buf.strides}); "
                         f"pass a C-contiguous array, e.g. {name}.copy()")
    return buf.reshape(-1)


def _shown(dtype: Any) -> str:
    """The dtype's name, with its byte order when that is not the machine's."""
    return dtype.name if dtype.isnative else dtype.str


def _check_dtype(name: str, dtype: Any, xp: Any) -> None:
    if dtype.name in GPU_DTYPES:
        if xp is not np:
            return
        raise TypeError(f"{name} has dtype {dtype.name!r}, which the collectives take on CuPy "
                        f"buffers only (NCCL's ncclBfloat16, CuPy's kernels); pass a "
                        f"cupy.ndarray, or a NumPy array of one of {list(ALL_DTYPES)}")
    try:
        check_dtype(dtype)
    except TypeError:
        gpu = f", or on CuPy buffers {list(GPU_DTYPES)}" if xp is not np else ""
        raise TypeError(f"{name} has dtype {_shown(dtype)!r}, which the collectives do not "
                        f"support (MPI has no datatype for it); choose one of "
                        f"{list(ALL_DTYPES)}{gpu}") from None


def flat_buffer(name: str, buf: Any, writeable: bool = False) -> tuple[Any, Any]:
    """Check one buffer of a collective and return its array module and a flat view.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    buf : numpy.ndarray or cupy.ndarray
        The buffer: C-contiguous, of a supported dtype (bfloat16 on CuPy only).
    writeable : bool
        Whether the collective writes it (a read-only NumPy array is refused).

    Returns
    -------
    xp : module
        ``numpy`` or ``cupy``.
    flat : array
        ``buf`` as a 1-D view.

    Raises
    ------
    TypeError
        For a buffer that is neither a NumPy nor a CuPy array, or an unsupported dtype.
    ValueError
        For a non-contiguous buffer, or a read-only one that is written.
    """
    xp = array_module(name, buf)
    _check_dtype(name, buf.dtype, xp)
    flat = _flat(name, buf)
    if writeable and xp is np and not flat.flags.writeable:
        raise ValueError(f"{name} is read-only; pass a writeable array")
    return xp, flat


def check_pair(send: Any, recv: Any, xp: Any, xp_recv: Any) -> None:
    """Raise unless ``send`` and ``recv`` (flat) share an array module, a dtype and a GPU.

    Raises
    ------
    TypeError
        For NumPy and CuPy mixed, or dtypes that differ.
    ValueError
        For CuPy buffers on different GPUs.
    """
    if xp_recv is not xp:
        raise TypeError(f"sendbuf is a {xp.__name__} array but recvbuf is a "
                        f"{xp_recv.__name__} array; pass both from the same array module")
    if send.dtype != recv.dtype:
        raise TypeError(f"sendbuf has dtype {_shown(send.dtype)} but recvbuf has "
                        f"{_shown(recv.dtype)}; both must have the same dtype")
    _check_device(xp, send, recv)


def _check_device(xp: Any, send: Any, recv: Any) -> None:
    if xp is not np and send.device != recv.device:
        raise ValueError(f"sendbuf is on {send.device} but recvbuf is on {recv.device}; "
                         f"both must be on the same GPU")


def check_overlap(xp: Any, send: Any, recv: Any) -> None:
    """Raise ValueError if ``send`` and ``recv`` (arrays of module ``xp``) share memory."""
    if xp is np:
        overlap = np.may_share_memory(send, recv)
    else:
        lo_s, lo_r = send.data.ptr, recv.data.ptr
        overlap = (send.nbytes and recv.nbytes and lo_s < lo_r + recv.nbytes
                   and lo_r < lo_s + send.nbytes)
    if overlap:
        raise ValueError("sendbuf and recvbuf overlap in memory; to work in place pass "
                         "sendbuf=collectives.IN_PLACE with the data in recvbuf")


def _allocate(collective: str, xp: Any, send: Any, nranks: int) -> Any:
    shape = send.shape
    if collective == "allreduce":
        return xp.empty(shape, send.dtype)
    if collective == "allgather":
        return xp.empty((nranks * shape[0], *shape[1:]) if shape else (nranks,), send.dtype)
    if shape and shape[0] % nranks == 0:
        return xp.empty((shape[0] // nranks, *shape[1:]), send.dtype)
    return xp.empty(send.size // nranks, send.dtype)


def _sizes(collective: str, send_size: int | None, recv_size: int, nranks: int) -> tuple[int, int]:
    """Return ``(count, part)`` after checking the buffers' sizes against each other."""
    if collective == "allreduce":
        if send_size is not None and send_size != recv_size:
            raise ValueError(f"recvbuf has {recv_size} elements; an allreduce of sendbuf's "
                             f"{send_size} elements needs {send_size}")
        return recv_size, recv_size
    if send_size is None:  # in place: recvbuf holds all nranks blocks
        if recv_size % nranks:
            raise ValueError(f"recvbuf has {recv_size} elements; an in-place {collective} on "
                             f"{nranks} ranks needs a multiple of {nranks}")
        return recv_size, recv_size // nranks
    whole, part = (send_size, recv_size) if collective == "reduce_scatter" else (recv_size, send_size)
    if whole != nranks * part:
        big, small = ("sendbuf", "recvbuf") if collective == "reduce_scatter" else ("recvbuf", "sendbuf")
        raise ValueError(f"{big} has {whole} elements; a {collective} on {nranks} ranks needs "
                         f"nranks x {small}.size = {nranks} x {part} = {nranks * part}")
    return whole, part


def prepare(collective: str, sendbuf: Any, recvbuf: Any, nranks: int) -> Call:
    """Check a call's buffers and lay them out; no communication happens here.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    sendbuf : numpy.ndarray, cupy.ndarray or IN_PLACE
        The input (in place: taken from ``recvbuf``).
    recvbuf : numpy.ndarray, cupy.ndarray or None
        The output; None allocates it.
    nranks : int
        Ranks of the communicator.

    Returns
    -------
    Call

    Raises
    ------
    TypeError
        For a buffer that is not a NumPy or CuPy array, an unsupported dtype, dtypes that
        differ, or NumPy and CuPy mixed.
    ValueError
        For a non-contiguous or read-only buffer, sizes that do not fit the collective,
        buffers on different GPUs, overlapping buffers, or in place without ``recvbuf``.
    """
    in_place = is_in_place(sendbuf, recvbuf)
    if in_place and recvbuf is None:
        raise ValueError("recvbuf=None with sendbuf=IN_PLACE: an in-place call takes its "
                         "input from recvbuf, so pass recvbuf")
    send = None
    if not in_place:
        xp, send = flat_buffer("sendbuf", sendbuf)
        if recvbuf is None:
            if collective == "reduce_scatter" and send.size % nranks:
                raise ValueError(f"sendbuf has {send.size} elements; a reduce_scatter on "
                                 f"{nranks} ranks needs a multiple of {nranks}")
            recvbuf = _allocate(collective, xp, sendbuf, nranks)
    xp_recv = array_module("recvbuf", recvbuf)
    if send is not None and xp_recv is not xp:
        check_pair(send, recvbuf, xp, xp_recv)  # raises
    xp, recv = flat_buffer("recvbuf", recvbuf, writeable=True)
    if send is not None:
        check_pair(send, recv, xp, xp)
        check_overlap(xp, send, recv)
    count, part = _sizes(collective, None if send is None else send.size, recv.size, nranks)
    result = recvbuf
    if in_place and collective == "reduce_scatter":
        result = recv[:part]
    return Call(collective, xp, recv.dtype, count, part, send, recv, result)


def lay_input(xp: Any, collective: str, dtype: Any, count: int, send: Any, recv: Any,
              plan_input: slice, stream: Any = None) -> Any:
    """Lay the input into the buffer a schedule works on, copying only what must move.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    collective : str
        The collective.
    dtype : dtype
        The buffers' dtype.
    count : int
        Elements of the working buffer.
    send : array or None
        The input, flat (None in place: the input is in ``recv`` already).
    recv : array
        ``recvbuf``, flat.
    plan_input : slice
        Where the input lies in the working buffer (:attr:`~.plan.Plan.input`).
    stream : cupy.cuda.Stream, optional
        The stream of a CuPy workspace.

    Returns
    -------
    array
        The working buffer: ``recv``, or for an out-of-place ReduceScatter a workspace
        holding the input.
    """
    if send is None:
        return recv
    if collective == "reduce_scatter":
        work = workspace(xp, dtype, count, "reduce_scatter-work", stream)
        work[...] = send
        return work
    recv[plan_input] = send
    return recv


def take_block(recv: Any, work: Any, output: slice, part: int) -> None:
    """Copy a ReduceScatter's result, ``work[output]``, into the first ``part`` elements of
    ``recv`` (flat), unless it is there already.

    Parameters
    ----------
    recv : array
        ``recvbuf``, flattened.
    work : array
        The working buffer the plan ran on (``recv`` itself in place).
    output : slice
        This rank's block in ``work`` (:attr:`~.plan.Plan.output`).
    part : int
        Elements of one block.
    """
    if work is not recv:
        recv[...] = work[output]
    elif output.start:
        recv[:part] = work[output]


def workspace_limit() -> int:
    """Return the bytes of workspace kept between calls: ``COLLSIM_WORKSPACE_BYTES`` or 64 MiB.

    Returns
    -------
    int
        The limit (0 keeps nothing).

    Raises
    ------
    ValueError
        If ``COLLSIM_WORKSPACE_BYTES`` is not a non-negative integer.
    """
    text = os.environ.get(WORKSPACE_ENV, "").strip()
    if not text:
        return _DEFAULT_WORKSPACE_BYTES
    if not text.isdigit():
        raise ValueError(f"{WORKSPACE_ENV}={text!r} is not allowed; give a number of bytes "
                         f">= 0, e.g. {_DEFAULT_WORKSPACE_BYTES}")
    return int(text)


def workspace_bytes() -> int:
    """Return the bytes the workspace cache holds now."""
    return sum(array.nbytes for array in RUNTIME.workspace.values())


def discard(array: Any) -> None:
    """Drop ``array`` (or the cached array it is a view of) from the workspace cache.

    A later call then allocates anew instead of reusing memory that a request which could
    not be completed may still write (:mod:`.guard`).

    Parameters
    ----------
    array : array
        A workspace array or a view of one; anything else is ignored.
    """
    base = array if getattr(array, "base", None) is None else array.base
    cache = RUNTIME.workspace
    for key, cached in list(cache.items()):
        if cached is array or cached is base:
            del cache[key]


def workspace(xp: Any, dtype: Any, count: int, purpose: str, stream: Any = None) -> Any:
    """Return a reusable 1-D array of ``count`` elements for ``purpose``.

    One array per ``(module, dtype, purpose, device, stream)`` is kept and replaced by a
    larger one on demand, so steady-state calls allocate nothing.  The cache holds at most
    :func:`workspace_limit` bytes: a new array that would exceed it evicts the others, and
    one larger than the limit by itself is not kept (it is freed once the call drops it).

    Parameters
    ----------
    xp : module or str
        ``numpy``, ``cupy``, or ``"pinned"`` for page-locked host memory (CuPy's
        ``cupyx.empty_pinned``).
    dtype : dtype
        Element type.
    count : int
        Elements needed.
    purpose : str
        What the array is for; arrays of different purposes never alias.
    stream : cupy.cuda.Stream, optional
        The stream the array is used on; each stream gets its own.

    Returns
    -------
    array
        A view of ``count`` elements (uninitialised), valid until the next call with
        the same key.
    """
    on = None if stream is None else stream.ptr
    if xp is np:
        key: tuple = ("numpy", dtype, purpose, None, on)
    elif isinstance(xp, str):
        import cupy
        key = (xp, dtype, purpose, cupy.cuda.Device().id, on)
    else:
        key = (xp.__name__, dtype, purpose, xp.cuda.Device().id, on)
    cache = RUNTIME.workspace
    array = cache.get(key)
    if array is not None and array.size >= count:
        return array[:count]
    cache.pop(key, None)
    if xp == "pinned":
        import cupyx
        array = cupyx.empty_pinned(count, dtype)
    else:
        array = xp.empty(count, dtype)
    limit = workspace_limit()
    if array.nbytes <= limit:
        if workspace_bytes() + array.nbytes > limit:
            RUNTIME.wait_staged()
            cache.clear()
        cache[key] = array
    return array[:count]


def staging(dtype: Any, count: int, scratch_count: int, stream: Any) -> tuple[Any, Any]:
    """Return the page-locked host mirrors of the working and scratch buffers for ``stream``.

    Waits first for the event :func:`staged_done` recorded on ``stream`` after the previous
    call's last host-to-device copies, so a call never writes a mirror (or lets a grown one
    replace it) while those copies still read it.

    Parameters
    ----------
    dtype : dtype
        Element type.
    count, scratch_count : int
        Elements of the working and scratch buffers.
    stream : cupy.cuda.Stream
        The stream the call's copies run on.

    Returns
    -------
    host, host_scratch : numpy.ndarray
        Pinned arrays of ``count`` and ``scratch_count`` elements.
    """
    pending = RUNTIME.staging.pop(stream.ptr, None)
    if pending is not None:
        pending[0].synchronize()
    return (workspace("pinned", dtype, count, "mpi-stage-work", stream),
            workspace("pinned", dtype, scratch_count, "mpi-stage-scratch", stream))


def staged_done(stream: Any, *mirrors: Any) -> None:
    """Record, on ``stream``, the event :func:`staging` waits for before the next reuse,
    and hold ``mirrors`` until then.

    CuPy's ``ndarray.set`` from pinned memory is an asynchronous copy that does not keep
    the host array alive, and a mirror larger than :func:`workspace_limit` is not kept by
    the workspace: without this reference it would be freed (and its pinned memory reused)
    while the copies still read it.

    Parameters
    ----------
    stream : cupy.cuda.Stream
        The stream the call's last host-to-device copies were enqueued on.
    *mirrors : numpy.ndarray
        The pinned arrays those copies read.
    """
    import cupy
    event = cupy.cuda.Event(block=False, disable_timing=True)
    event.record(stream)
    # held until the event is reached, so that a mirror the workspace did not keep (larger
    # than its limit) is not freed while a copy still reads it
    RUNTIME.staging[stream.ptr] = (event, mirrors)
