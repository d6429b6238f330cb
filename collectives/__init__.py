"""Collective algorithms as schedules, and executors that run them over MPI and NCCL.

Importing this package needs neither MPI, nor a GPU, nor CuPy.
"""

from .build import ALGORITHMS, algorithm_params, build_schedule
from .errors import CollectivesError, DeadlockError, ScheduleError
from .interpret import interpret
from .schedule import COLLECTIVES, Copy, Recv, Schedule, Send, Step
from .verify import verify

__all__ = [
    "ALGORITHMS", "COLLECTIVES", "CollectivesError", "Copy", "DeadlockError", "Recv",
    "Schedule", "ScheduleError", "Send", "Step", "algorithm_params", "build_schedule",
    "interpret", "verify",
]
