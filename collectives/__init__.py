"""Collective algorithms as schedules, and executors that run them over MPI and NCCL.

Importing this package needs neither MPI, nor a GPU, nor CuPy.
"""

from .api import IN_PLACE, allgather, allreduce, reduce_scatter
from .api_exchange import alltoall, alltoallv, broadcast, reduce
from .build import ALGORITHMS, BLOCK_ALGORITHMS, COMPOSED, algorithm_params, build_schedule
from .errors import CollectivesError, DeadlockError, ScheduleError
from .interpret import interpret
from .registry import Algorithm, channel_orders
from .resources import abort_on_error, close, release, workspace_bytes
from .schedule import BLOCK_COLLECTIVES, COLLECTIVES, Copy, Recv, Schedule, Send, Step
from .executors.check import ArgumentMismatchError
from .executors.guard import CommunicatorBrokenError
from .executors.nccl import NcclComm
from .handles import (PersistentCollective, allgather_init, allreduce_init, alltoall_init,
                      alltoallv_init, broadcast_init, reduce_init, reduce_scatter_init)
from .verify import verify

__all__ = [
    "ALGORITHMS", "Algorithm", "ArgumentMismatchError", "BLOCK_ALGORITHMS", "BLOCK_COLLECTIVES",
    "COLLECTIVES", "COMPOSED", "CollectivesError",
    "CommunicatorBrokenError", "IN_PLACE", "abort_on_error", "close", "release",
    "workspace_bytes",
    "NcclComm", "allgather", "allreduce", "alltoall", "alltoallv", "broadcast", "reduce",
    "reduce_scatter", "allgather_init",
    "allreduce_init", "reduce_scatter_init", "broadcast_init", "reduce_init", "alltoall_init",
    "alltoallv_init", "PersistentCollective", "Copy", "DeadlockError", "Recv",
    "Schedule", "ScheduleError", "Send", "Step", "algorithm_params", "build_schedule",
    "channel_orders",
    "interpret", "verify",
]
