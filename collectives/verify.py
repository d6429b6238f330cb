"""Check a schedule without running it."""

from __future__ import annotations

from reprlib import repr as brief

from .errors import ScheduleError
from .progress import completion_order, match
from .schedule import COLLECTIVES, Copy, Recv, Schedule, Send, Step

__all__ = ["verify"]


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
    if schedule.collective not in COLLECTIVES:
        raise ScheduleError(f"collective {brief(schedule.collective)} is not one of {COLLECTIVES}")
    if schedule.nranks < 1 or schedule.count < 0 or schedule.elements < 0:
        raise ScheduleError(f"nranks={schedule.nranks} must be >= 1 and count={schedule.count} "
                            f"and elements={schedule.elements} >= 0")
    for rank in range(schedule.nranks):
        for index, step in enumerate(schedule.steps(rank)):
            _check_step(rank, index, step, schedule.elements)
    completion_order(schedule, match(schedule))
