"""A bound plan walked in one native call: Numba code calling the loaded ``libmpi``.

The Python walk (:meth:`~.persistent.PersistentPlans.walk`) costs a few microseconds per
step in mpi4py calls and ufunc dispatch, several times MPI's own small-message latency.
:func:`kernel` returns a C function, compiled once with Numba (``cfunc``, cached on disk),
that runs every step of a binding as that walk does, in the same order: ``MPI_Startall``
of the sends, then per first receive from a new peer ``MPI_Mprobe``, ``MPI_Get_count``,
the tag and length compared, ``MPI_Imrecv``; ``MPI_Startall`` of the other receives (of
receives and sends together at steps without first receives); ``MPI_Waitall`` of the
receives with statuses, every tag compared; ``MPI_Waitall`` of the sends; then the
reductions, element by element with the ufunc's operand order (``into = into + source``,
or ``into = source + into`` for a receive that swaps, which differ in which of two NaNs
a float sum keeps), and the copies.

The binding describes itself as one flat ``int64`` table (:class:`Flat`, which
:func:`~.persistent.bind` fills): :data:`HEADER` fields, then :data:`STEP` fields per step,
:data:`REQUEST` fields per request, the requests' handles (the ``MPI_Request`` array the
calls read and write, holding the handles mpi4py created, ``MPI._handleof``),
:data:`REDUCE` fields per reduction and :data:`COPY` fields per copy; beside it, one
24-byte ``MPI_Status`` per request in an ``int32`` array.  At the first problem the
kernel stops and returns a code (:data:`FIRST_MISMATCH`, :data:`TAG_MISMATCH`,
:data:`RECV_ERROR`, :data:`SEND_ERROR`, :data:`RAISED`), with the step and what it needs
in the table's state fields, and the Python side hands it to the guard as the Python
walk would.

Only Open MPI is supported (handles are pointers, ``MPI_Status`` is 24 bytes, and
``MPI_STATUSES_IGNORE`` is NULL: :func:`kernel` checks the first two and the vendor), and
only the reductions :data:`DTYPE_CODES` x :data:`OP_CODES`: the Python walk runs the rest.
Floating-point ``max`` and ``min`` are left to NumPy, whose SIMD and scalar loops order
signed zeros differently.  Of two NaNs a float sum or product keeps the one the loop's
instruction keeps (on x86 the left operand's); NumPy's scalar loop may keep the other
(its compiler swaps the operands), so such an element may carry another NaN than NumPy
gives, but the same on every rank: ranks that reduce the same operands do so in the same
order (a swapped receive has its own loop) with the same lengths.

Importing this module needs neither MPI nor Numba (:func:`kernel` compiles).
"""

from __future__ import annotations

import atexit
import ctypes
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterator, cast

import numpy as np

__all__ = ["HEADER", "STEP", "REQUEST", "REDUCE", "COPY", "STATUS_BYTES", "DTYPE_CODES",
           "OP_CODES", "FIRST_MISMATCH", "TAG_MISMATCH", "RECV_ERROR", "SEND_ERROR", "RAISED",
           "Flat", "FlatStep", "kernel", "supports"]

#: header fields of the table, by index
(N_STEPS, COMM, BYTE, ANY_TAG, DTYPE, OP, WORK_BYTES, SCRATCH_BYTES, STAGE_BYTES, SEND_BYTES,
 RECV_BYTES, TABLE, TABLE_LENGTH, STATUSES, AT_STEP, DETAIL, MESSAGE, COUNT, STEPS_AT,
 REQUESTS_AT, REDUCES_AT, COPIES_AT, N_REQUESTS) = range(23)
#: int64 fields of the header
HEADER = 23
#: per step: first request row, first receives, receives, sends, reduce rows [from, to),
#: copy rows [from, to)
STEP = 8
#: per request: peer, tag, bytes, buffer address (for first receives); the handles are
#: the ``N_REQUESTS`` int64 that follow these rows
REQUEST = 4
#: per reduction: element of its area, scratch element, elements, swapped (the scratch
#: element on the left: 1, else 0), the area reduced into (as a copy's areas)
REDUCE = 5
#: per copy (bytes): source area (0 work, 1 stage, 2 input, 3 output, as
#: :data:`~.persistent.WORK` and its neighbours), source, destination area, destination, bytes
COPY = 5

#: dtypes whose reductions are compiled (native byte order)
DTYPE_CODES: dict[str, int] = {"int32": 0, "int64": 1, "float32": 2, "float64": 3}
#: reductions compiled, and the dtype codes each is compiled for
OP_CODES: dict[str, int] = {"sum": 0, "prod": 1, "max": 2, "min": 3}
_OP_DTYPES = {"sum": (0, 1, 2, 3), "prod": (0, 1, 2, 3), "max": (0, 1), "min": (0, 1)}

#: return codes: a first message with another tag or length (DETAIL: its request row,
#: MESSAGE: its handle, its status in that row), a tag compared unequal, MPI_Waitall of the
#: receives or of the sends failed (DETAIL: the error code), another MPI call failed
#: (DETAIL: the error code)
FIRST_MISMATCH, TAG_MISMATCH, RECV_ERROR, SEND_ERROR, RAISED = range(1, 6)

#: bytes of an Open MPI ``MPI_Status`` ({int source, tag, error, _cancelled; size_t _ucount})
STATUS_BYTES = 24


def supports(dtype: np.dtype, op: str) -> bool:
    """Whether the kernel reduces ``op`` on ``dtype`` (native byte order) as NumPy does."""
    code = DTYPE_CODES.get(dtype.name)
    return dtype.isnative and code is not None and code in _OP_DTYPES.get(op, ())


@dataclass(frozen=True, slots=True)
class FlatStep:
    """One step as the table holds it.

    Attributes
    ----------
    first : int
        How many of ``receives`` are first receives, taken through matched probes.
    receives : list of (int, int, int, int)
        ``(peer, tag, bytes, buffer address)`` per receive, first receives first.
    handles : list of int
        The persistent requests' handles: the receives after the first ones, then the sends.
    nsends : int
        How many of ``handles`` are sends.
    reduces : list of (int, int, int, bool, int)
        ``(element, scratch element, elements, swap, area)`` per reduction, into the
        working buffer or the output bound directly.
    copies : list of (int, int, int, int, int)
        :data:`COPY` rows, in bytes.
    """

    first: int
    receives: list[tuple[int, int, int, int]]
    handles: list[int]
    nsends: int
    reduces: list[tuple[int, int, int, bool, int]]
    copies: list[tuple[int, int, int, int, int]]


class Flat:
    """A binding's table, statuses and buffers, and the addresses the kernel is called with.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI``.
    comm : mpi4py.MPI.Intracomm
        The communicator of the persistent requests.
    steps : list of FlatStep
        The steps.
    areas : tuple of numpy.ndarray
        The work, scratch and stage buffers, and the input and output bound directly
        (empty unless :func:`~.plan.binds_directly`), as contiguous ``uint8`` arrays.
    dtype, op : int
        :data:`DTYPE_CODES` and :data:`OP_CODES` of the reductions (0 when there are none).
    """

    __slots__ = ("table", "statuses", "areas", "args", "rows")

    def __init__(self, mpi: Any, comm: Any, steps: list[FlatStep], areas: tuple[np.ndarray, ...],
                 dtype: int, op: int) -> None:
        nrequests = sum(len(step.receives) + step.nsends for step in steps)
        rows = np.cumsum([0] + [len(step.receives) + step.nsends for step in steps])
        steps_at = HEADER
        requests_at = steps_at + STEP * len(steps)
        reduces_at = requests_at + (REQUEST + 1) * nrequests
        copies_at = reduces_at + REDUCE * sum(len(step.reduces) for step in steps)
        length = copies_at + COPY * sum(len(step.copies) for step in steps)
        table = np.zeros(length, np.int64)
        statuses = np.zeros((max(nrequests, 1), STATUS_BYTES // 4), np.int32)
        table[[N_STEPS, COMM, BYTE, ANY_TAG, DTYPE, OP, TABLE, TABLE_LENGTH, STATUSES, STEPS_AT,
               REQUESTS_AT, REDUCES_AT, COPIES_AT, N_REQUESTS]] = [
            len(steps), mpi._handleof(comm), mpi._handleof(mpi.BYTE), mpi.ANY_TAG, dtype, op,
            table.ctypes.data, length, statuses.ctypes.data, steps_at, requests_at, reduces_at,
            copies_at, nrequests]
        table[[WORK_BYTES, SCRATCH_BYTES, STAGE_BYTES, SEND_BYTES, RECV_BYTES]] = [
            area.size for area in areas]
        handles = table[requests_at + REQUEST * nrequests:reduces_at]
        null, reduced, copied = mpi._handleof(mpi.REQUEST_NULL), 0, 0
        for index, (step, h0) in enumerate(zip(steps, rows)):
            nrecvs = len(step.receives)
            table[steps_at + STEP * index:steps_at + STEP * (index + 1)] = [
                h0, step.first, nrecvs, step.nsends, reduced, reduced + len(step.reduces),
                copied, copied + len(step.copies)]
            for k, receive in enumerate(step.receives):
                at = requests_at + REQUEST * (h0 + k)
                table[at:at + REQUEST] = receive
            handles[h0:h0 + step.first] = null
            handles[h0 + step.first:h0 + nrecvs + step.nsends] = step.handles
            for reduction in step.reduces:
                table[reduces_at + REDUCE * reduced:reduces_at + REDUCE * (reduced + 1)] = \
                    reduction
                reduced += 1
            for copy in step.copies:
                table[copies_at + COPY * copied:copies_at + COPY * (copied + 1)] = copy
                copied += 1
        self.table, self.statuses, self.areas, self.rows = table, statuses, areas, rows
        self.args = (table.ctypes.data, statuses.ctypes.data,
                     *(area.ctypes.data for area in areas))

    def stopped(self) -> tuple[int, int]:
        """The step the kernel stopped at and its detail (a request row or an error code)."""
        return int(self.table[AT_STEP]), int(self.table[DETAIL])

    def message(self, mpi: Any) -> Any:
        """The ``mpi4py.MPI.Message`` matched by the probe that found a stranger."""
        return mpi.Message.fromhandle(int(self.table[MESSAGE]))

    def handles(self, start: int, stop: int) -> list[int]:
        """The request handles of rows ``start`` to ``stop`` (as the kernel left them)."""
        at = self.table[REQUESTS_AT] + REQUEST * self.table[N_REQUESTS]
        return [int(handle) for handle in self.table[at + start:at + stop]]

    def status_into(self, row: int, status: Any, mpi: Any) -> None:
        """Copy the status of request row ``row`` into an ``mpi4py.MPI.Status``."""
        ctypes.memmove(mpi._addressof(status), self.statuses[row].ctypes.data, STATUS_BYTES)


#: the MPI functions and Numba's ``carray``, bound by :func:`kernel` before it compiles
_startall = _waitall = _mprobe = _get_count = _imrecv = _memmove = carray = cast(Any, None)


def _reduce(into: np.ndarray, source: np.ndarray, at: int, start: int, n: int,
            op: int, swap: int) -> None:
    """``into[at:at+n] = op(into[at:at+n], source[start:start+n])``, element by element
    (on slices: loops over them vectorise, loops over offset indices did not: 10x slower
    than NumPy at 64 KiB, measured); ``op(source, into)`` where ``swap`` (only the float
    sum and product have a swapped loop: the integer ones, and ``max`` and ``min``, which
    are compiled for integers only, give the same bits either way)."""
    a, b = into[at:at + n], source[start:start + n]
    if swap and op == 0:
        for i in range(n):
            a[i] = b[i] + a[i]
    elif swap and op == 1:
        for i in range(n):
            a[i] = b[i] * a[i]
    elif op == 0:
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


def _reduce_bytes(work: np.ndarray, scratch: np.ndarray, row: np.ndarray, dtype: int,
                  op: int) -> None:
    """One reduction row on the byte buffers, viewed as the dtype of code ``dtype``."""
    if dtype == 0:
        _reduce(work.view(np.int32), scratch.view(np.int32), row[0], row[1], row[2], op, 0)
    elif dtype == 1:
        _reduce(work.view(np.int64), scratch.view(np.int64), row[0], row[1], row[2], op, 0)
    elif dtype == 2:
        _reduce(work.view(np.float32), scratch.view(np.float32), row[0], row[1], row[2], op,
                row[3])
    else:
        _reduce(work.view(np.float64), scratch.view(np.float64), row[0], row[1], row[2], op,
                row[3])


def _stop(table: np.ndarray, detail: int, code: int) -> int:
    """Note ``detail`` in the table and return ``code``."""
    table[DETAIL] = detail
    return code


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


def _run(table: np.ndarray, statuses: np.ndarray, work: np.ndarray, scratch: np.ndarray,
         stage: np.ndarray, send: np.ndarray, recv: np.ndarray) -> int:
    """Walk every step; 0, or the code of the first problem (its step in ``AT_STEP``).
    Copies name their areas in the order of :data:`~.persistent.WORK` and its neighbours:
    the working buffer, the staging area, the input and the output bound directly."""
    areas = (work, stage, send, recv)
    for index in range(table[N_STEPS]):
        step = table[table[STEPS_AT] + STEP * index:table[STEPS_AT] + STEP * (index + 1)]
        table[AT_STEP] = index
        code = _exchange(table, statuses, step)
        if code:
            return code
        for r in range(step[4], step[5]):
            at = table[REDUCES_AT] + REDUCE * r
            row = table[at:at + REDUCE]
            _reduce_bytes(areas[row[4]], scratch, row, table[DTYPE], table[OP])
        for c in range(step[6], step[7]):
            row = table[table[COPIES_AT] + COPY * c:table[COPIES_AT] + COPY * (c + 1)]
            # libc's memmove: Numba's slice assignment copied a byte at a time through a
            # temporary (1 MiB: 334 us against memmove's 25 us, measured on this machine)
            _memmove(areas[row[2]].ctypes.data + row[3], areas[row[0]].ctypes.data + row[1],
                     row[4])
    return 0


def _entry(table_p, statuses_p, work_p, scratch_p, stage_p, send_p, recv_p):
    """The C entry point (compiled by :func:`kernel`): arrays over the pointers, then
    :func:`_run`."""
    head = carray(table_p, HEADER)
    table = carray(table_p, head[TABLE_LENGTH])
    return _run(table, carray(statuses_p, 6 * head[N_REQUESTS]),
                carray(work_p, head[WORK_BYTES]), carray(scratch_p, head[SCRATCH_BYTES]),
                carray(stage_p, head[STAGE_BYTES]), carray(send_p, head[SEND_BYTES]),
                carray(recv_p, head[RECV_BYTES]))


@lru_cache(maxsize=1)
def kernel(mpi: Any, path: str | None) -> Callable[..., int] | None:
    """The compiled walk as a ctypes function of seven addresses (table, statuses, work,
    scratch, stage, send, recv), or None where it cannot run: no ``libmpi`` path, or not Open MPI's
    pointer handles and 24-byte statuses.

    The first call imports Numba and compiles this module's walk functions in place
    (cached on disk: about 5 s of CPU the first time, 0.3 s after, measured on this
    2-core machine under load); they are plain functions until then, so importing the
    module needs no Numba, and they sit in the file that defines the table's layout,
    whose changes therefore invalidate Numba's cache.

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
    from numba import carray, cfunc, njit, types
    binding.load_library_permanently(path)
    integer, address = types.int32, types.intp
    external = {"_startall": ("MPI_Startall", integer(integer, address)),
                "_waitall": ("MPI_Waitall", integer(integer, address, address)),
                "_mprobe": ("MPI_Mprobe", integer(integer, integer, address, address, address)),
                "_get_count": ("MPI_Get_count", integer(address, address, address)),
                "_imrecv": ("MPI_Imrecv", integer(address, integer, address, address, address)),
                "_memmove": ("memmove", types.voidptr(address, address, address))}
    names = globals()
    for name, (symbol, signature) in external.items():
        names[name] = types.ExternalFunction(symbol, signature)
    names["carray"] = carray
    for function in (_reduce, _reduce_bytes, _stop, _take_first, _exchange, _run):
        names[function.__name__] = njit(cache=True)(function)
    pointers = [types.CPointer(t) for t in (types.int64, types.int32, *[types.uint8] * 5)]
    with _no_terminal_reset_at_exit():
        entry = cfunc(types.int64(*pointers), cache=True)(_entry)
    pointer = cast(int, entry.address)  # set once cfunc compiled
    return ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * 7)(pointer)


@contextmanager
def _no_terminal_reset_at_exit() -> Iterator[None]:
    """Compile without leaving colorama's exit handler behind.

    Numba formats messages while it compiles or loads from its cache, and with colorama
    installed that initialises colorama, which registers an exit handler writing a
    terminal reset (``ESC[0m``) to stdout whenever stdout is a terminal: under mpirun every
    rank's stdout is a pseudo-terminal, so output piped from ``mpirun`` would end in
    escape codes.  The handler is removed again when this registered it (not when the
    application had initialised colorama before).
    """
    try:
        from colorama import initialise
    except ImportError:
        yield
        return
    registered = initialise.atexit_done
    try:
        yield
    finally:
        if not registered and initialise.atexit_done:
            atexit.unregister(initialise.reset_all)
            initialise.atexit_done = False
