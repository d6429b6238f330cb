"""Rank 1 is interrupted inside an AllReduce and catches it; the others must raise, not hang.

Run under ``mpirun -n P python interrupted.py`` (P >= 3) with ``COLLSIM_ABORT_ON_ERROR=0``
and ``COLLSIM_MPI_COMPILED=0`` (the Python walk, between whose MPI calls a signal's
handler runs).  Rank 0 enters the call a second late; rank 1 arms a timer whose handler
raises ``KeyboardInterrupt`` (as Ctrl-C does) and goes in at once: it is interrupted as
rank 0's first message reaches it, mid-schedule.  Every rank records what its call did;
rank 0 prints one ``SUMMARY`` line.
"""

from __future__ import annotations

import json
import signal
import time

import numpy as np
from mpi4py import MPI

import collectives
from collectives.executors import abort

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()


def main() -> None:
    assert not abort.installed()
    data = np.ones(SIZE * 1000, np.float32)
    collectives.allreduce(data, algorithm="ring")  # agreed: the next call walks at once
    WORLD.Barrier()
    if RANK == 0:
        time.sleep(1.0)
    if RANK == 1:
        signal.signal(signal.SIGALRM, signal.default_int_handler)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
    start = time.monotonic()
    try:
        collectives.allreduce(data, algorithm="ring")
        outcome, message = "returned", ""
    except (Exception, KeyboardInterrupt) as error:  # noqa: BLE001 - checked by the test
        outcome, message = type(error).__name__, str(error)
    record = {"outcome": outcome, "message": message, "seconds": time.monotonic() - start}
    rows = WORLD.gather(record)
    if RANK == 0:
        print("SUMMARY " + json.dumps({"nranks": SIZE, "ranks": rows}), flush=True)


if __name__ == "__main__":
    main()
