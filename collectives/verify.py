"""Check a schedule without running it.

The checks read every rank's operations as arrays (:mod:`collectives.verify_arrays`: from
the rank's lanes where the schedule has them, so a large schedule's operations are never
built) and run in compiled loops, in time and memory proportional to the operations;
an error is worded from the operations at fault, as the checks on operation objects
(:func:`_check_step` and :mod:`collectives.progress`) word it.  Schedules of at most
:data:`OBJECTS_UP_TO_RANKS` ranks are checked on their operation objects instead: at that
size they take well under a second, and the compiled loops' first compile on a fresh
install (seconds) is paid only where it saves far more.
A reader that reads every rank anyway, matches the messages and plays the steps (the
simulator's compiled engine) shares the work (:func:`verify_while_read`): the steps are
checked on its reading, and its matching and play stand for the checks of matching and
progress.
"""

from __future__ import annotations

from array import array
from reprlib import repr as brief
from types import ModuleType
from typing import Any, NamedTuple, Sequence

import numpy as np

from .errors import DeadlockError, ScheduleError
from .progress import completion_order, match
from .progress import describe as _describe
from .rounds import LaneColumns
from .schedule import COLLECTIVES, Copy, Recv, Schedule, Send, Step

__all__ = ["verify", "verify_while_read", "StepCheck", "OBJECTS_UP_TO_RANKS"]

#: the typecodes of :mod:`array` of integers of 1, 4 and 8 bytes
_TYPECODES = {1: "b", 4: "i", 8: "q"}

#: schedules of at most so many ranks are checked on their operations (no compiled loops)
OBJECTS_UP_TO_RANKS = 32


class _Ends(NamedTuple):
    """Every send and receive of a schedule, rank by rank and step by step: rank ``r``'s
    steps are the global steps ``step_ptr[r]:step_ptr[r + 1]``, global step ``g``'s ends
    ``end_ptr[g]:end_ptr[g + 1]``; per end, whether it sends, its peer and its length."""

    step_ptr: np.ndarray
    end_ptr: np.ndarray
    is_send: np.ndarray
    peer: np.ndarray
    length: np.ndarray


def _bounds_error(rank: int, index: int, op: object, count: int) -> ScheduleError:
    return ScheduleError(f"rank {rank} step {index}: {op}: range out of bounds "
                         f"(the working buffer holds {count} elements)")


def _check_step(rank: int, index: int, step: Step, count: int) -> None:
    """Check bounds and that no write of the step overlaps another access of it, except
    that a reducing receive may write what a send of the step reads (it lands in scratch
    and is reduced in once the step's sends completed)."""
    writes: list[tuple[int, int, object]] = []
    reads: list[tuple[int, int, object]] = []
    for op in step.ops:
        if isinstance(op, Copy):
            length = op.stop - op.start
            if not (0 <= op.start <= op.stop <= count and 0 <= op.dst <= count - length):
                raise _bounds_error(rank, index, op, count)
            reads.append((op.start, op.stop, op))
            writes.append((op.dst, op.dst + length, op))
            continue
        if not 0 <= op.start <= op.stop <= count:
            raise _bounds_error(rank, index, op, count)
        (writes if isinstance(op, Recv) else reads).append((op.start, op.stop, op))
    writes = sorted((w for w in writes if w[0] < w[1]), key=lambda w: w[:2])
    for (_, stop, first), (start, _, second) in zip(writes, writes[1:]):
        if start < stop:
            raise ScheduleError(f"rank {rank} step {index}: {first} and {second} write "
                                f"overlapping ranges in the same step")
    for lo, hi, reader in reads:
        for start, stop, writer in writes:
            if start < hi and lo < stop and writer is not reader and not (
                    isinstance(reader, Send) and isinstance(writer, Recv) and writer.reduce):
                raise ScheduleError(f"rank {rank} step {index}: {reader} reads a range that "
                                    f"{writer} writes in the same step")


def verify(schedule: Schedule) -> None:
    """Raise :class:`~collectives.errors.ScheduleError` if ``schedule`` is malformed.

    Checks, without running anything: every operation's range lies inside the working
    buffer (:attr:`~collectives.Schedule.elements`); in each step, no receive or copy writes a range that another operation of the
    step reads or writes (but a reducing receive may reduce into a range that a send of
    the step sends: every executor reduces once the step's sends completed); every send has a matching receive of the same length and vice
    versa; and the schedule completes under synchronous-send semantics (no deadlock).

    Parameters
    ----------
    schedule : Schedule
        The schedule to check.

    Raises
    ------
    ScheduleError
        Naming the rank, step and range at fault.
    DeadlockError
        When the schedule cannot complete.

    Examples
    --------
    >>> from collectives import build_schedule, verify
    >>> verify(build_schedule("allreduce", "ring", 4, 10))
    """
    _check_header(schedule)
    if schedule.nranks <= OBJECTS_UP_TO_RANKS:
        check_operations(schedule)
    else:
        check_arrays(schedule)


def verify_while_read(schedule: Schedule) -> StepCheck | None:
    """:func:`verify` shared with a reader that reads every rank of ``schedule`` anyway,
    matches its messages and plays its steps (:func:`simulator.flatten.flatten` and the
    compiled engine).

    Runs :func:`verify`'s first checks; for a schedule that :func:`verify` checks on
    arrays, returns the :class:`StepCheck` that the reader drives, rank by rank; for a
    smaller one, runs :func:`verify`'s checks on operations and returns None.  The reader
    takes on the rest: it must match as :func:`collectives.progress.match` does (the
    k-th send from ``a`` to ``b`` with the k-th receive at ``b`` from ``a``, of the same
    length) and play steps as :func:`collectives.progress.completion_order` does (a
    step completes once each peer has reached its partner's step: a rendezvous); where
    either fails, it calls :func:`verify`, which raises the error.

    Parameters
    ----------
    schedule : Schedule
        The schedule to check.

    Returns
    -------
    StepCheck or None

    Raises
    ------
    ScheduleError, DeadlockError
        As :func:`verify` (its first checks, or its checks on operations).
    """
    _check_header(schedule)
    if schedule.nranks <= OBJECTS_UP_TO_RANKS:
        check_operations(schedule)
        return None
    return StepCheck(schedule)


class StepCheck:
    """:func:`verify`'s checks of each rank's steps, a rank at a time, on the operations a
    reader read already (:func:`verify_while_read`): a rank's lanes as columns, or its
    steps, read once serve both.

    Call :meth:`read` for every rank in order (it raises the first step check's error,
    rank by rank, step by step, as :func:`verify` does), then :meth:`finish`.  Nothing
    is kept per message end: matching and progress are the reader's.

    Parameters
    ----------
    schedule : Schedule
        The schedule to check.
    """

    def __init__(self, schedule: Schedule) -> None:
        from . import verify_arrays  # imports Numba: only once a schedule is checked

        self.schedule = schedule
        self.arrays = verify_arrays
        self.values = verify_arrays.Values()
        self.peers_known = True

    def read(self, rank: int, columns: LaneColumns | None = None,
             lanes: Sequence[Any] | None = None, steps: Sequence[Step] | None = None) -> None:
        """Check ``rank``'s steps, read from ``columns``, ``lanes`` or ``steps`` where the
        reader read them (:func:`collectives.verify_arrays.rank_ops`), else from the
        schedule; note whether each of its sends and receives names another rank."""
        ops = _checked_rank(self.schedule, rank, self.arrays, self.values, columns, lanes,
                            steps)
        if self.peers_known:
            self.peers_known = self.arrays.peers_known(ops, rank, self.schedule.nranks)

    def finish(self) -> None:
        """Every rank read: raise :func:`verify`'s error for a peer that is not another
        rank (the first in program order)."""
        if not self.peers_known:
            check_arrays(self.schedule)


def _check_header(schedule: Schedule) -> None:
    """:func:`verify`'s first checks: the collective, ranks, count and elements."""
    if schedule.collective not in COLLECTIVES:
        raise ScheduleError(f"collective {brief(schedule.collective)} is not one of {COLLECTIVES}")
    if schedule.nranks < 1 or schedule.count < 0 or schedule.elements < 0:
        raise ScheduleError(f"nranks={schedule.nranks} must be >= 1 and count={schedule.count} "
                            f"and elements={schedule.elements} >= 0")


def check_operations(schedule: Schedule) -> None:
    """:func:`verify`'s checks on the operation objects: each step's, then matching,
    then progress (:mod:`collectives.progress`)."""
    for rank in range(schedule.nranks):
        for index, step in enumerate(schedule.steps(rank)):
            _check_step(rank, index, step, schedule.elements)
    completion_order(schedule, match(schedule))


def check_arrays(schedule: Schedule) -> None:
    """:func:`verify`'s checks on arrays in compiled loops (the same verdict and message as
    :func:`check_operations`, in time and memory proportional to the operations)."""
    from . import verify_arrays as arrays  # imports Numba: only once a schedule is checked

    ends = _read_ends(schedule, arrays)
    partner_step = _match(schedule, ends, arrays)
    step_ptr, end_ptr, _, peer, _ = ends
    current = arrays.progress(step_ptr, end_ptr, peer, partner_step)
    if np.array_equal(current, np.diff(step_ptr)):
        return
    stuck = np.flatnonzero(current < np.diff(step_ptr)).tolist()
    details = "; ".join(
        f"rank {r} at step {current[r]} waits for "
        + ", ".join(f"rank {peer[e]} to reach step {partner_step[e]}"
                    for e in range(end_ptr[step_ptr[r] + current[r]],
                                   end_ptr[step_ptr[r] + current[r] + 1])
                    if current[peer[e]] < partner_step[e])
        for r in stuck[:4])
    raise DeadlockError(f"schedule deadlocks: {len(stuck)} rank(s) stuck: {details}")


def _read_ends(schedule: Schedule, arrays: ModuleType) -> _Ends:
    """Read every rank's operations, run the step checks on them and return every send
    and receive; raise the first step check's error, rank by rank, step by step."""
    values = arrays.Values()
    steps_per_rank = np.zeros(schedule.nranks, dtype=np.int64)
    # grown in place (a list of each rank's arrays joined at the end held tens of
    # millions of message ends twice): each step's end offset, and is_send, peer, length
    end_ptr = array("q", [0])
    read: list[tuple[array, np.dtype]] = []
    for rank in range(schedule.nranks):
        ops = _checked_rank(schedule, rank, arrays, values)
        steps_per_rank[rank] = len(ops.step_ptr) - 1
        per_step, *ends = arrays.ends_of(ops, schedule.nranks, schedule.elements)
        offsets = np.cumsum(per_step, dtype=np.int64)
        offsets += end_ptr[-1]
        end_ptr.frombytes(offsets.data.cast("B"))
        if not read:
            read = [(array(_TYPECODES[column.dtype.itemsize]), column.dtype) for column in ends]
        for (grown, _), column in zip(read, ends):
            grown.frombytes(column.data.cast("B"))
    is_send, peer, length = (np.frombuffer(grown, dtype=dtype) for grown, dtype in read)
    return _Ends(_offsets(steps_per_rank), np.frombuffer(end_ptr, dtype=np.int64), is_send,
                 peer, length)


def _checked_rank(schedule: Schedule, rank: int, arrays: ModuleType, values: Any,
                  columns: LaneColumns | None = None, lanes: Sequence[Any] | None = None,
                  steps: Sequence[Step] | None = None) -> Any:
    """Read ``rank``'s operations (:func:`collectives.verify_arrays.rank_ops`, from
    ``columns``, ``lanes`` or ``steps`` where given) and run the step checks on them;
    raise the first one's error, step by step."""
    ops = arrays.rank_ops(schedule, rank, values, columns, lanes, steps)
    if arrays.first_faulty_step(*ops, schedule.elements) >= 0:
        for index, step in enumerate(schedule.steps(rank) if steps is None else steps):
            _check_step(rank, index, step, schedule.elements)
    return ops


def _op(schedule: Schedule, ends: _Ends, end: int) -> tuple[int, int, Send | Recv]:
    """The rank, step and operation of message end ``end``."""
    step = int(np.searchsorted(ends.end_ptr, end, side="right")) - 1
    rank = int(np.searchsorted(ends.step_ptr, step, side="right")) - 1
    index = step - int(ends.step_ptr[rank])
    ops = [op for op in schedule.steps(rank)[index].ops if not isinstance(op, Copy)]
    return rank, index, ops[end - int(ends.end_ptr[step])]


def _match(schedule: Schedule, ends: _Ends, arrays: ModuleType) -> np.ndarray:
    """Pair every send with its receive as :func:`collectives.progress.match` does and
    raise its first error; return each end's partner's step (at the partner's rank)."""
    bad = arrays.bad_peer(ends.step_ptr, ends.end_ptr, ends.peer)
    if bad >= 0:
        at, index, op = _op(schedule, ends, bad)
        raise ScheduleError(f"{_describe(at, index, op)}: peer {op.peer} must be "
                            f"another rank in 0..{schedule.nranks - 1}")
    matched = arrays.match(*ends)
    if matched.bad_send >= 0:  # a send's error first, as match raises them
        raise _matching_error(schedule, ends, matched.bad_send,
                              matched.bad_send_partner, matched.bad_send_k)
    if matched.bad_recv >= 0:
        raise _matching_error(schedule, ends, matched.bad_recv, -1, matched.bad_recv_k)
    return matched.partner_step


def _matching_error(schedule: Schedule, ends: _Ends, end: int, partner: int,
                    k: int) -> ScheduleError:
    """The error of message end ``end``: the ``k``-th of its pair, unmatched
    (``partner`` -1) or matched with an end of another length."""
    at, index, op = _op(schedule, ends, end)
    src, dst = (at, op.peer) if isinstance(op, Send) else (op.peer, at)
    if partner >= 0:
        other = _op(schedule, ends, partner)
        return ScheduleError(f"{_describe(at, index, op)}: length {op.stop - op.start} does "
                             f"not match {_describe(*other)} of length "
                             f"{other[2].stop - other[2].start}")
    if isinstance(op, Send):
        return ScheduleError(f"{_describe(at, index, op)}: unmatched send (message {k} "
                             f"from {src} to {dst} has no receive)")
    return ScheduleError(f"{_describe(at, index, op)}: unmatched receive (message {k} "
                         f"from {src} to {dst} is never sent)")


def _offsets(counts: np.ndarray) -> np.ndarray:
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr
