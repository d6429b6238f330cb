"""MPI's own collectives past 2**31 elements, on one rank; prints one ``SUMMARY`` line.

Run under ``mpirun -n 1 python large_count.py``.  One buffer of ``2**31 + 8`` int8 (2 GiB):
``native`` AllReduce runs it in parts (every element must come back), and in-place
``native`` ReduceScatter and AllGather, whose blocks MPI cannot count, are refused before
any communication with an error that says so.
"""

from __future__ import annotations

import json

import numpy as np
from mpi4py import MPI

import collectives
from collectives.executors.mpi import MPI_COUNT_MAX


def attempt(call) -> str:  # type: ignore[no-untyped-def]
    try:
        call()
    except Exception as error:  # noqa: BLE001 - recorded and checked by the test
        return f"{type(error).__name__}: {error}"
    return "returned"


def main() -> None:
    data = np.ones(MPI_COUNT_MAX + 9, np.int8)
    data[-1] = 3
    report = {"allreduce": attempt(lambda: collectives.allreduce(
        collectives.IN_PLACE, data, algorithm="native"))}
    report["intact"] = bool(data[-1] == 3 and data[0] == 1 and data[MPI_COUNT_MAX] == 1)
    for collective in ("reduce_scatter", "allgather"):
        report[collective] = attempt(lambda: getattr(collectives, collective)(
            collectives.IN_PLACE, data, algorithm="native"))
    report["usable"] = attempt(lambda: collectives.allreduce(np.ones(4), algorithm="native"))
    print("SUMMARY " + json.dumps(report), flush=True)


if __name__ == "__main__":
    assert MPI.COMM_WORLD.Get_size() == 1
    main()
