"""Under mpirun: run allreduce with algorithm="auto" at the sizes given on the command line
and print, on rank 0, ``RAN {json}``: per size the algorithm whose plan ran and whether the
result was right, and whether the simulator was imported (it must not be).  The plan cache
says which algorithm ran (the plan ``auto`` built)."""

import json
import sys

import numpy as np
from mpi4py import MPI

import collectives
from collectives.executors.runtime import RUNTIME

comm = MPI.COMM_WORLD
ran = {}
for nbytes in map(int, sys.argv[1:]):
    count = nbytes // 4
    before = set(RUNTIME.plans)
    out = collectives.allreduce(np.full(count, comm.Get_rank() + 1, dtype=np.float32))
    new = [key for key in RUNTIME.plans if key not in before and key[4] == count]
    p = comm.Get_size()
    ran[nbytes] = {"algorithms": sorted({key[1] for key in new}),
                   "correct": bool(np.all(out == p * (p + 1) / 2))}
ran["simulator_imported"] = "simulator" in sys.modules
if comm.Get_rank() == 0:
    print("RAN " + json.dumps(ran))
