"""Ranks that disagree, each case on a fresh communicator; rank 0 prints one SUMMARY line.

Run under ``mpirun -n P python mismatch.py`` (P >= 2) with ``COLLSIM_ABORT_ON_ERROR=0``, so
that a rank's error is caught here instead of aborting the job.  Rank 0 calls differently
from the others in each case; every rank records what its call did (returned, or the
error's type and message).  Then the failed communicator must refuse further calls, and a
new one must work.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np
from mpi4py import MPI

import collectives
import collectives.auto
from collectives.executors import abort
from collectives.tuning import Rule, Tuning

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
N = 60  # elements per rank's block: messages stay small (eager), so no send waits
#: elements of a call whose messages go by rendezvous (a rank must take another call's
#: message whole, never into a smaller receive: Open MPI would write past it)
LONG = 1 << 18


def odd(rank0: Any, others: Any) -> Any:
    """``rank0`` on rank 0, ``others`` elsewhere."""
    return rank0 if RANK == 0 else others


def ones(count: int, dtype: str = "float32") -> np.ndarray:
    return np.ones(count, dtype)


def disagreeing(algorithm: str, prefix: str = "",
                counted: str | None = None) -> dict[str, Callable[[Any], Any]]:
    """Calls on ``algorithm`` where rank 0 passes another op, dtype, count (on
    ``counted``, default ``algorithm``) or collective, named ``prefix + field``."""
    return {
        f"{prefix}op": lambda comm: collectives.allreduce(
            ones(SIZE * N), comm=comm, algorithm=algorithm, op=odd("max", "sum")),
        f"{prefix}dtype": lambda comm: collectives.allreduce(
            ones(SIZE * N, odd("int32", "float32")), comm=comm, algorithm=algorithm),
        f"{prefix}count": lambda comm: collectives.allreduce(
            ones(SIZE * N + odd(1, 0)), comm=comm, algorithm=counted or algorithm),
        f"{prefix}collective": lambda comm: odd(
            lambda: collectives.allgather(ones(N), comm=comm, algorithm=algorithm),
            lambda: collectives.allreduce(ones(SIZE * N), comm=comm, algorithm=algorithm))(),
    }


CASES: dict[str, Callable[[Any], Any]] = {
    **disagreeing("ring", counted="rhd"),
    "algorithm": lambda comm: collectives.allreduce(ones(SIZE * N), comm=comm,
                                                    algorithm=odd("tree", "ring")),
    "checked": lambda comm: collectives.allreduce(ones(SIZE * N), comm=comm, check=True,
                                                  algorithm=odd("tree", "ring")),
    **disagreeing("native", "native/"),
    "native/schedule": lambda comm: collectives.allreduce(ones(SIZE * N), comm=comm,
                                                          algorithm=odd("native", "rhd")),
    "native/schedule/long": lambda comm: collectives.allreduce(
        ones(LONG), comm=comm, algorithm=odd("native", "ring")),
    "schedule/native": lambda comm: collectives.reduce_scatter(
        ones(SIZE * N), comm=comm, algorithm=odd("tree", "native")),
    "long/count": lambda comm: collectives.allreduce(ones(LONG + odd(LONG, 0)), comm=comm,
                                                     algorithm="ring"),
    "long/dtype": lambda comm: collectives.allreduce(
        ones(LONG, odd("float64", "float32")), comm=comm, algorithm="rhd"),
    "long/collective": lambda comm: odd(
        lambda: collectives.allgather(ones(LONG), comm=comm, algorithm="ring"),
        lambda: collectives.allreduce(ones(LONG), comm=comm, algorithm="ring"))(),
    "zero/count": lambda comm: collectives.allreduce(ones(odd(0, SIZE * N)), comm=comm,
                                                     algorithm="ring"),
    "zero/native": lambda comm: collectives.allgather(ones(odd(0, N)), comm=comm,
                                                      algorithm="native"),
    "auto": lambda comm: auto_on_rank0_table(lambda: collectives.allreduce(ones(SIZE * N),
                                                                           comm=comm)),
}

#: cases in which every rank agrees: they must return the right result
AGREED: dict[str, Callable[[Any], Any]] = {
    "native/agreed": lambda comm: collectives.allreduce(ones(SIZE * N), comm=comm,
                                                        algorithm="native"),
    "zero/agreed": lambda comm: collectives.allreduce(ones(0), comm=comm,
                                                      algorithm=odd("native", "ring")),
}


def auto_on_rank0_table(call: Callable[[], Any]) -> Any:
    """Run ``call`` with a tuning table on rank 0 only that makes ``auto`` choose native
    (the other ranks keep the static rule, a schedule)."""
    if RANK == 0:
        rule = Rule("allreduce", SIZE, 0, 0, 1 << 30, "native")
        collectives.auto.use_tuning(Tuning.from_rules([rule], "rank 0 only"))
    try:
        return call()
    finally:
        collectives.auto.use_tuning(None)


def check_sum(result: np.ndarray) -> None:
    if not (result == SIZE).all():  # (an empty result passes)
        raise AssertionError(f"wrong result {result[:4]}")


def attempt(call: Callable[[], Any]) -> dict[str, str]:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - recorded and checked by the test
        return {"outcome": type(error).__name__, "message": str(error)}
    return {"outcome": "returned", "message": ""}


def main() -> None:
    assert not abort.installed()
    records: dict[str, dict[str, str]] = {}
    for name, case in CASES.items():
        comm = WORLD.Dup()
        records[name] = attempt(lambda: case(comm))
        records[f"{name}/again"] = attempt(
            lambda: collectives.allreduce(ones(4), comm=comm, algorithm="ring"))
        comm.Free()
    for name, case in AGREED.items():
        comm = WORLD.Dup()
        records[name] = attempt(lambda: check_sum(case(comm)))
        comm.Free()
    fresh = WORLD.Dup()
    result = collectives.allreduce(ones(SIZE * N), comm=fresh, algorithm="ring")
    records["fresh"] = {"outcome": "returned" if (result == SIZE).all() else "wrong",
                        "message": ""}
    fresh.Free()
    rows = WORLD.gather(records)
    if RANK == 0:
        print("SUMMARY " + json.dumps({"nranks": SIZE, "abort_hooks": abort.installed(),
                                       "ranks": rows}), flush=True)


if __name__ == "__main__":
    main()
