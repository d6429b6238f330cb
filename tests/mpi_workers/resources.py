"""Communicators and memory given back; rank 0 prints one SUMMARY line.

Run under ``mpirun -n P python -m mpi4py resources.py CYCLES``: ``CYCLES`` times a new
communicator, one collective on it and ``Free`` (the private duplicate must go with it:
Open MPI runs out of context ids after about 65,000); ``collectives.close``; and the
process's resident memory before a large ReduceScatter, after it (the workspace kept) and
after ``collectives.release()``.
"""

from __future__ import annotations

import json
import os
import resource
import sys

import numpy as np
from mpi4py import MPI

import collectives
from collectives.executors.buffers import WORKSPACE_ENV

WORLD = MPI.COMM_WORLD
PAGE = resource.getpagesize()


def resident_mib() -> float:
    """This process's resident memory in MiB (from /proc/self/statm)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def cycles(count: int) -> int:
    x = np.ones(4, np.float32)
    for _ in range(count):
        comm = WORLD.Dup()
        collectives.allreduce(x, comm=comm, algorithm="ring")
        comm.Free()
    return count


def close_then_reuse() -> bool:
    comm = WORLD.Dup()
    x = np.ones(4, np.float32)
    first = collectives.allreduce(x, comm=comm, algorithm="ring")
    collectives.close(comm)
    again = collectives.allreduce(x, comm=comm, algorithm="ring")  # duplicates anew
    comm.Free()
    return bool((first == again).all())


def memory(mib: int) -> dict[str, float]:
    """Resident MiB around a ReduceScatter whose workspace is ``mib`` MiB."""
    size = WORLD.Get_size()
    send = np.ones(mib << 18, np.float32)
    recv = np.full(send.size // size, -1.0, np.float32)  # touched: resident before start
    os.environ[WORKSPACE_ENV] = str(4 * mib << 20)
    start = resident_mib()
    collectives.reduce_scatter(send, recv, algorithm="ring")
    kept = collectives.workspace_bytes() / 2**20
    after_call = resident_mib()
    collectives.release()
    after_release = resident_mib()
    del os.environ[WORKSPACE_ENV]  # the default bound: 64 MiB
    collectives.reduce_scatter(send, recv, algorithm="ring")
    kept_by_default = collectives.workspace_bytes() / 2**20
    return {"start": start, "kept": kept, "after_call": after_call,
            "after_release": after_release, "kept_by_default": kept_by_default}


def main() -> None:
    report = {"nranks": WORLD.Get_size(), "cycles": cycles(int(sys.argv[1])),
              "close_then_reuse": close_then_reuse(), "memory_mib": memory(96)}
    if WORLD.Get_rank() == 0:
        print("SUMMARY " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
