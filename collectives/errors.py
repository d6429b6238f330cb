"""Exceptions raised by the collectives package."""

__all__ = ["CollectivesError", "ScheduleError", "DeadlockError"]


class CollectivesError(Exception):
    """Base class of every error this project raises on its own account."""


class ScheduleError(CollectivesError, ValueError):
    """A schedule is malformed: it names the rank, step and range at fault."""


class DeadlockError(ScheduleError):
    """A schedule cannot make progress: some ranks wait forever on each other."""
