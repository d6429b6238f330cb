"""Rank 1 raises while the other ranks wait inside an allreduce.

Run under ``mpirun -n P python -m mpi4py raise_midway.py DIR``: mpi4py's runner aborts
the whole job on rank 1's uncaught exception, so the job exits non-zero instead of hanging.
Each rank leaves a file ``DIR/rank<R>.first`` once its first collective returned: a file,
because output still in mpirun's forwarding when the job is aborted may be lost.
"""

import sys
from pathlib import Path

from mpi4py import MPI
import numpy as np

import collectives

rank = MPI.COMM_WORLD.Get_rank()
data = np.ones(1 << 16, np.float32)
collectives.allreduce(data, algorithm="ring")  # one collective that completes
(Path(sys.argv[1]) / f"rank{rank}.first").write_text("finished the first allreduce\n")
if rank == 1:
    # bad input on one rank: raises before posting, while the others are in the ring
    collectives.allreduce(np.zeros(data.size, "datetime64[s]"), algorithm="ring")
collectives.allreduce(data, algorithm="ring")
print(f"rank {rank} should never get here", flush=True)
