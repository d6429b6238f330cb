"""A bound plan walked in one native call: Numba code calling the loaded ``libmpi``.

The Python walk (:meth:`~.persistent.PersistentPlans.walk`) costs a few microseconds per
step in mpi4py calls and ufunc dispatch, several times MPI's own small-message latency.
:func:`kernel` returns a C function, compiled once with Numba (``cfunc``, cached on disk),
that runs every step of a binding as that walk does, in the same order: ``MPI_Startall``
of the sends, then per first receive from a new peer ``MPI_Mprobe``, ``MPI_Get_count``,
the tag and length compared, ``MPI_Imrecv``; ``MPI_Startall`` of the other receives (of
receives and sends together at steps without first receives); ``MPI_Waitall`` of the
receives with statuses, every tag compared; ``MPI_Waitall`` of the sends; then the
reductions, element by element in the ufunc's order (``into = into + source``), and the
copies, byte by byte.

The binding describes itself as one flat ``int64`` table (:data:`HEADER`, then rows per
step, per request, per reduction and per copy; :func:`~.persistent.bind` fills it), whose
request rows are the ``MPI_Request`` array the calls read and write; the handles are those
mpi4py created (``MPI._handleof``).  At the first problem the kernel stops and returns a
code (:data:`FIRST_MISMATCH`, :data:`TAG_MISMATCH`, :data:`RECV_ERROR`,
:data:`SEND_ERROR`, :data:`RAISED`), with the step and what it needs in the table's state
fields, and the Python side hands it to the guard as the Python walk would.

Only Open MPI is supported (handles are pointers, ``MPI_Status`` is 24 bytes, and
``MPI_STATUSES_IGNORE`` is NULL: :func:`kernel` checks the first two and the vendor), and
only the reductions :data:`DTYPE_CODES` x :data:`OP_CODES`: the Python walk runs the rest.
Floating-point ``max`` and ``min`` are left to NumPy, whose SIMD and scalar loops order
signed zeros differently.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numba import carray, cfunc, njit, types

from .flat import (ANY_TAG, BYTE, COMM, COPIES_AT, COPY, COUNT, DETAIL, DTYPE, FIRST_MISMATCH,
                   HEADER, MESSAGE, N_REQUESTS, N_STEPS, OP, RAISED, RECV_ERROR, REDUCE,
                   REDUCES_AT, REQUEST, REQUESTS_AT, SCRATCH_BYTES, SEND_ERROR, STAGE_BYTES,
                   STATUS_BYTES, STATUSES, STEP, STEPS_AT, TABLE, TABLE_LENGTH, TAG_MISMATCH,
                   WORK_BYTES, AT_STEP)

__all__ = ["kernel"]

_int, _ptr = types.int32, types.intp
_startall = types.ExternalFunction("MPI_Startall", _int(_int, _ptr))
_waitall = types.ExternalFunction("MPI_Waitall", _int(_int, _ptr, _ptr))
_mprobe = types.ExternalFunction("MPI_Mprobe", _int(_int, _int, _ptr, _ptr, _ptr))
_get_count = types.ExternalFunction("MPI_Get_count", _int(_ptr, _ptr, _ptr))
_imrecv = types.ExternalFunction("MPI_Imrecv", _int(_ptr, _int, _ptr, _ptr, _ptr))


@njit(cache=True)
def _reduce(into: np.ndarray, source: np.ndarray, at: int, start: int, n: int,
            op: int) -> None:
    """``into[at:at+n] = op(into[at:at+n], source[start:start+n])``, element by element
    (on slices: loops over them vectorise, loops over offset indices did not: 10x slower
    than NumPy at 64 KiB, measured)."""
    a, b = into[at:at + n], source[start:start + n]
    if op == 0:
        for i in range(n):
            a[i] = a[i] + b[i]
    elif op == 1:
        for i in range(n):
            a[i] = a[i] * b[i]
    elif op == 2:
        for i in range(n):
            a[i] = max(a[i], b[i])
    else:
        for i in range(n):
            a[i] = min(a[i], b[i])


@njit(cache=True)
def _reduce_bytes(work: np.ndarray, scratch: np.ndarray, row: np.ndarray, dtype: int,
                  op: int) -> None:
    """One reduction row on the byte buffers, viewed as the dtype of code ``dtype``."""
    if dtype == 0:
        _reduce(work.view(np.int32), scratch.view(np.int32), row[0], row[1], row[2], op)
    elif dtype == 1:
        _reduce(work.view(np.int64), scratch.view(np.int64), row[0], row[1], row[2], op)
    elif dtype == 2:
        _reduce(work.view(np.float32), scratch.view(np.float32), row[0], row[1], row[2], op)
    else:
        _reduce(work.view(np.float64), scratch.view(np.float64), row[0], row[1], row[2], op)


@njit(cache=True)
def _stop(table: np.ndarray, detail: int, code: int) -> int:
    """Note ``detail`` in the table and return ``code``."""
    table[DETAIL] = detail
    return code


@njit(cache=True)
def _take_first(table: np.ndarray, statuses: np.ndarray, handles: int, h0: int,
                first: int) -> int:
    """Take a step's first receives through matched probes (its sends started already)."""
    message, count = table[TABLE] + 8 * MESSAGE, table[TABLE] + 8 * COUNT
    for k in range(h0, h0 + first):
        row = table[REQUEST * k + table[REQUESTS_AT]:]
        status = table[STATUSES] + STATUS_BYTES * k
        table[COUNT] = 0
        error = _mprobe(row[0], table[ANY_TAG], table[COMM], message, status)
        if not error:
            error = _get_count(status, table[BYTE], count)
        if error:
            return _stop(table, error, RAISED)
        if statuses[6 * k + 1] != row[1] or table[COUNT] != row[2]:
            return _stop(table, k, FIRST_MISMATCH)
        error = _imrecv(row[3], row[2], table[BYTE], message, handles + 8 * k)
        if error:
            return _stop(table, error, RAISED)
    return 0


@njit(cache=True)
def _exchange(table: np.ndarray, statuses: np.ndarray, step: np.ndarray) -> int:
    """Post one step's messages, wait for them and compare the tags; 0 or a code."""
    h0, first, nrecvs, nsends = step[0], step[1], step[2], step[3]
    handles = table[TABLE] + 8 * (table[REQUESTS_AT] + REQUEST * table[N_REQUESTS])
    if first:
        error = _startall(nsends, handles + 8 * (h0 + nrecvs)) if nsends else 0
        if error:
            return _stop(table, error, RAISED)
        code = _take_first(table, statuses, handles, h0, first)
        if code:
            return code
        error = _startall(nrecvs - first, handles + 8 * (h0 + first)) if nrecvs > first else 0
    else:
        error = _startall(nrecvs + nsends, handles + 8 * h0) if nrecvs + nsends else 0
    if error:
        return _stop(table, error, RAISED)
    if nrecvs:
        error = _waitall(nrecvs, handles + 8 * h0, table[STATUSES] + STATUS_BYTES * h0)
        if error:
            return _stop(table, error, RECV_ERROR)
        for k in range(h0, h0 + nrecvs):
            if statuses[6 * k + 1] != table[table[REQUESTS_AT] + REQUEST * k + 1]:
                return TAG_MISMATCH
    if nsends:
        error = _waitall(nsends, handles + 8 * (h0 + nrecvs), 0)  # MPI_STATUSES_IGNORE
        if error:
            return _stop(table, error, SEND_ERROR)
    return 0


@njit(cache=True)
def _run(table: np.ndarray, statuses: np.ndarray, work: np.ndarray, scratch: np.ndarray,
         stage: np.ndarray) -> int:
    """Walk every step; 0, or the code of the first problem (its step in ``AT_STEP``)."""
    areas = (work, stage)
    for index in range(table[N_STEPS]):
        step = table[table[STEPS_AT] + STEP * index:table[STEPS_AT] + STEP * (index + 1)]
        table[AT_STEP] = index
        code = _exchange(table, statuses, step)
        if code:
            return code
        for r in range(step[4], step[5]):
            at = table[REDUCES_AT] + REDUCE * r
            _reduce_bytes(work, scratch, table[at:at + REDUCE], table[DTYPE], table[OP])
        for c in range(step[6], step[7]):
            row = table[table[COPIES_AT] + COPY * c:table[COPIES_AT] + COPY * (c + 1)]
            areas[row[2]][row[3]:row[3] + row[4]] = areas[row[0]][row[1]:row[1] + row[4]]
    return 0


_SIGNATURE = types.int64(types.CPointer(types.int64), types.CPointer(types.int32),
                         types.CPointer(types.uint8), types.CPointer(types.uint8),
                         types.CPointer(types.uint8))


def _entry(table_p, statuses_p, work_p, scratch_p, stage_p):  # type: ignore[no-untyped-def]
    """The C entry point (compiled by :func:`kernel`): arrays over the pointers, then
    :func:`_run`."""
    head = carray(table_p, HEADER)
    table = carray(table_p, head[TABLE_LENGTH])
    return _run(table, carray(statuses_p, 6 * head[N_REQUESTS]),
                carray(work_p, head[WORK_BYTES]), carray(scratch_p, head[SCRATCH_BYTES]),
                carray(stage_p, head[STAGE_BYTES]))


@lru_cache(maxsize=1)
def kernel(mpi: Any, path: str | None) -> Callable[..., int] | None:
    """The compiled walk as a ctypes function of five addresses (table, statuses, work,
    scratch, stage), or None where it cannot run: no ``libmpi`` path, or not Open MPI's
    pointer handles and 24-byte statuses.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI``.
    path : str or None
        The ``libmpi`` this process loaded (its symbols are made visible to the JIT).
    """
    if (path is None or not mpi.Get_library_version().startswith("Open MPI")
            or mpi._sizeof(mpi.Request) != 8 or mpi._sizeof(mpi.Status) != STATUS_BYTES):
        return None
    from llvmlite import binding
    binding.load_library_permanently(path)
    prototype = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * 5)
    return prototype(cfunc(_SIGNATURE, cache=True)(_entry).address)


