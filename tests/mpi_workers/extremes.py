"""``max`` and ``min`` of floats with NaN, signed zeros and infinities, on every algorithm.

Run under ``mpirun -n P python extremes.py`` (P >= 2).  Each rank's input mixes ``0.0``,
``-0.0``, ``1.5``, ``-2.0``, ``inf`` and ``-inf``; rank 1 alone holds NaNs.  Every rank
checks its result, bit for bit, against the documented semantics (a NaN anywhere gives
NaN, ``-0.0 < +0.0``), computed here element by element from every rank's input; rank 0
prints one ``SUMMARY`` line with the cases that differ.
"""

from __future__ import annotations

import json
import math

import numpy as np
from mpi4py import MPI

import collectives
from collectives.registry import names

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
PART = 41  # elements per rank's block
#: every reducing algorithm (those that run AllReduce run ReduceScatter too)
CHOICES = (*((name, {}) for name in (*names(composed=False, collective="allreduce"), "native",
                                     "auto")),
           ("rhd", {"doubling": True}), ("ring", {"channels": 2}))


def inputs(dtype: str) -> list[np.ndarray]:
    """Every rank's input (the same on every rank, so each computes the expectation)."""
    pool = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, 0.0, -0.0], dtype)
    out = []
    for rank in range(SIZE):
        values = pool[np.random.default_rng([rank, SIZE]).integers(0, pool.size, SIZE * PART)]
        if rank == 1:
            values[::5] = np.nan
        out.append(values)
    return out


def expected(data: list[np.ndarray], op: str) -> np.ndarray:
    """The semantics, element by element: NaN if any is; else the largest (smallest) value
    where ``-0.0`` counts as less than ``0.0``."""
    pick = max if op == "max" else min
    out = []
    for column in zip(*(values.tolist() for values in data)):
        if any(math.isnan(x) for x in column):
            out.append(math.nan)
        else:
            out.append(pick(column, key=lambda x: (x, math.copysign(1.0, x))))
    return np.array(out, data[0].dtype)


def same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bits, except that any NaN matches any NaN."""
    nan = np.isnan(want)
    return bool((np.isnan(got) == nan).all()) and \
        got[~nan].tobytes() == want[~nan].tobytes()


def main() -> None:
    wrong = []
    cases = 0
    for dtype in ("float32", "float64"):
        data = inputs(dtype)
        for op in ("max", "min"):
            want = expected(data, op)
            part = slice(RANK * PART, (RANK + 1) * PART)
            for algorithm, params in CHOICES:
                for collective in ("allreduce", "reduce_scatter")[:1 if params.get(
                        "doubling") else 2]:
                    cases += 1
                    got = getattr(collectives, collective)(data[RANK], op=op,
                                                           algorithm=algorithm, **params)
                    if not same(got, want if collective == "allreduce" else want[part]):
                        wrong.append(f"{collective} {algorithm} {params} {dtype} {op}")
                in_place = data[RANK].copy()
                collectives.allreduce(collectives.IN_PLACE, in_place, op=op,
                                      algorithm=algorithm, **params)
                if not same(in_place, want):
                    wrong.append(f"allreduce in place {algorithm} {params} {dtype} {op}")
    rows = WORLD.gather({"cases": cases, "wrong": wrong})
    if RANK == 0:
        print("SUMMARY " + json.dumps({"nranks": SIZE, "ranks": rows}), flush=True)


if __name__ == "__main__":
    main()
