"""Rank 1 raises while the other ranks wait inside an allreduce.

Run under ``mpirun -n P python -m mpi4py raise_midway.py``: mpi4py's runner aborts the
whole job on rank 1's uncaught exception, so the job exits non-zero instead of hanging.
"""

from mpi4py import MPI
import numpy as np

import collectives

rank = MPI.COMM_WORLD.Get_rank()
data = np.ones(1 << 16, np.float32)
collectives.allreduce(data, algorithm="ring")  # one collective that completes
print(f"rank {rank} finished the first allreduce", flush=True)
if rank == 1:
    # bad input on one rank: raises before posting, while the others are in the ring
    collectives.allreduce(np.zeros(data.size, "datetime64[s]"), algorithm="ring")
collectives.allreduce(data, algorithm="ring")
print(f"rank {rank} should never get here", flush=True)
