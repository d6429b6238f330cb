"""Rank 1 fails after one collective while the others wait in the next one.

Run as a plain script, ``mpirun -n P python rank_fails.py raise|exit DIR`` (not under
``python -m mpi4py``): rank 1 raises, or calls ``sys.exit(3)``.  The hooks the first
collective installs abort the job, so ``mpirun`` exits non-zero instead of hanging.
Each rank leaves a file ``DIR/rank<R>.first`` once its first collective returned: a file,
because output still in mpirun's forwarding when the job is aborted may be lost; a barrier
after it, because a ring's ranks leave the first AllReduce at different times, and rank 1
failing before rank 0 has written its file would abort rank 0 first.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI

import collectives

rank = MPI.COMM_WORLD.Get_rank()
data = np.ones(1 << 10, np.float32)
collectives.allreduce(data, algorithm="ring")
(Path(sys.argv[2]) / f"rank{rank}.first").write_text("finished the first allreduce\n")
MPI.COMM_WORLD.Barrier()  # every file is written before rank 1 fails and the job is aborted
if rank == 1:
    if sys.argv[1] == "raise":
        raise RuntimeError("rank 1 fails on purpose")
    sys.exit(3)
collectives.allreduce(data, algorithm="ring")
print(f"rank {rank} should never get here", flush=True)
