"""Ranks that run different schedules (or parameters), each case on a fresh communicator.

Run under ``mpirun -n P python divergent.py`` (P >= 2) with ``COLLSIM_ABORT_ON_ERROR=0``.
Each case gives every rank one of two choices (an algorithm with its parameters) from a
per-rank pattern, over every ordered pair of distinct algorithms and every collective, so
one launch covers every pair at this rank count.  Every rank records what its call did
(its outcome, its message, its seconds); rank 0 prints one ``SUMMARY`` line.  A case that
hangs hangs the job (the test's timeout says so); rank 0 writes each case's name to stderr
before it runs, so the last name says which.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from typing import Any

import numpy as np
from mpi4py import MPI

import collectives
from collectives.registry import names
from collectives.executors import abort

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
N = 40  # elements per rank's block

Choice = tuple[str, dict[str, Any]]
#: every algorithm the executors run without a machine description
CHOICES: tuple[Choice, ...] = tuple((name, {}) for name in (*collectives.ALGORITHMS, "native"))


def runs(choice: Choice, collective: str) -> bool:
    """Whether ``choice`` runs ``collective`` (``native`` runs every one)."""
    return choice[0] == "native" or choice[0] in names(collective=collective)
#: choices of one algorithm that differ only in a parameter
PARAMETERS: tuple[tuple[str, Choice, Choice], ...] = (
    ("allreduce", ("ring", {"channels": 1}), ("ring", {"channels": 2})),
    ("allreduce", ("pipeline", {"segments": 2}), ("pipeline", {"segments": 3})),
    ("allreduce", ("rhd", {"doubling": False}), ("rhd", {"doubling": True})),
    ("reduce_scatter", ("tree", {"segments": 1}), ("tree", {"segments": 2})),
)


def patterns(size: int) -> list[tuple[int, ...]]:
    """Which of two choices each rank takes: one rank apart, halves, alternating."""
    out = {tuple([0] + [1] * (size - 1)), tuple(i * 2 // size for i in range(size)),
           tuple(i % 2 for i in range(size))}
    return sorted(out)


def run(collective: str, choice: Choice, comm: Any) -> None:
    algorithm, params = choice
    count = SIZE * N if collective != "allgather" else N
    getattr(collectives, collective)(np.ones(count, np.float32), comm=comm,
                                     algorithm=algorithm, **params)


def cases() -> list[tuple[str, str, tuple[Choice, Choice], tuple[int, ...]]]:
    out = []
    for collective in collectives.BLOCK_COLLECTIVES:
        for a, b in itertools.permutations([c for c in CHOICES if runs(c, collective)], 2):
            for pattern in patterns(SIZE):
                out.append((f"{collective} {a[0]}/{b[0]} {pattern}", collective, (a, b),
                            pattern))
    for collective, a, b in PARAMETERS:
        for pattern in patterns(SIZE):
            out.append((f"params {collective} {a} | {b} {pattern}", collective, (a, b),
                        pattern))
    return out


def attempt(collective: str, choice: Choice, comm: Any) -> dict[str, Any]:
    start = time.monotonic()
    try:
        run(collective, choice, comm)
    except Exception as error:  # noqa: BLE001 - recorded and checked by the test
        outcome, message = type(error).__name__, str(error)
    else:
        outcome, message = "returned", ""
    return {"outcome": outcome, "message": message, "seconds": time.monotonic() - start}


def main() -> None:
    assert not abort.installed()
    collectives.allreduce(np.ones(SIZE, np.float32), algorithm="ring")  # compiles the walk
    records = {}
    for name, collective, choices, pattern in cases():
        if RANK == 0:
            print(name, file=sys.stderr, flush=True)
        comm = WORLD.Dup()
        records[name] = attempt(collective, choices[pattern[RANK]], comm)
        comm.Free()
        WORLD.Barrier()  # the next case starts once every rank is out of this one
    rows = WORLD.gather(records)
    if RANK == 0:
        print("SUMMARY " + json.dumps({"nranks": SIZE, "ranks": rows}), flush=True)


if __name__ == "__main__":
    main()
