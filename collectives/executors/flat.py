"""A bound plan laid out as one flat table for the compiled walk (:mod:`.compiled`).

The table is an ``int64`` array: :data:`HEADER` fields, then :data:`STEP` fields per step,
:data:`REQUEST` fields per request, the requests' ``MPI_Request`` handles (the array the
MPI calls read and write), :data:`REDUCE` fields per reduction and :data:`COPY` fields per
copy.  Its statuses are a separate ``int32`` array, one 24-byte ``MPI_Status`` per request.
Importing this module needs neither MPI nor Numba.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HEADER", "STEP", "REQUEST", "REDUCE", "COPY", "STATUS_BYTES", "DTYPE_CODES",
           "OP_CODES", "FIRST_MISMATCH", "TAG_MISMATCH", "RECV_ERROR", "SEND_ERROR", "RAISED",
           "Flat", "FlatStep", "supports"]

#: header fields of the table, by index
(N_STEPS, COMM, BYTE, ANY_TAG, DTYPE, OP, WORK_BYTES, SCRATCH_BYTES, STAGE_BYTES, TABLE,
 TABLE_LENGTH, STATUSES, AT_STEP, DETAIL, MESSAGE, COUNT, STEPS_AT, REQUESTS_AT, REDUCES_AT,
 COPIES_AT, N_REQUESTS) = range(21)
#: int64 fields of the header
HEADER = 21
#: per step: first request row, first receives, receives, sends, reduce rows [from, to),
#: copy rows [from, to)
STEP = 8
#: per request: peer, tag, bytes, buffer address (for first receives); the handles are
#: the ``N_REQUESTS`` int64 that follow these rows
REQUEST = 4
#: per reduction: work element, scratch element, elements
REDUCE = 3
#: per copy (bytes): source in stage (0 or 1), source, destination in stage, destination,
#: length
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
    reduces : list of (int, int, int)
        ``(work element, scratch element, elements)`` per reduction.
    copies : list of (int, int, int, int, int)
        :data:`COPY` rows, in bytes.
    """

    first: int
    receives: list[tuple[int, int, int, int]]
    handles: list[int]
    nsends: int
    reduces: list[tuple[int, int, int]]
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
        The work, scratch and stage buffers as contiguous ``uint8`` arrays.
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
        table[[WORK_BYTES, SCRATCH_BYTES, STAGE_BYTES]] = [area.size for area in areas]
        handles = table[requests_at + REQUEST * nrequests:reduces_at]
        null, reduced, copied = mpi._handleof(mpi.REQUEST_NULL), 0, 0
        for index, (step, h0) in enumerate(zip(steps, rows)):
            nrecvs = len(step.receives)
            table[steps_at + STEP * index:steps_at + STEP * (index + 1)] = [
                h0, step.first, nrecvs, step.nsends, reduced, reduced + len(step.reduces),
                copied, copied + len(step.copies)]
            for k, row in enumerate(step.receives):
                at = requests_at + REQUEST * (h0 + k)
                table[at:at + REQUEST] = row
            handles[h0:h0 + step.first] = null
            handles[h0 + step.first:h0 + nrecvs + step.nsends] = step.handles
            for row in step.reduces:
                table[reduces_at + REDUCE * reduced:reduces_at + REDUCE * (reduced + 1)] = row
                reduced += 1
            for row in step.copies:
                table[copies_at + COPY * copied:copies_at + COPY * (copied + 1)] = row
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
