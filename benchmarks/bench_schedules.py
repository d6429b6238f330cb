"""How long building schedules takes: one rank's steps, and every rank's.

Run: ``python benchmarks/bench_schedules.py [--nranks 1024] [--count 268435456]
[--all-ranks] [--algorithms tree pipeline] [--collectives allreduce]``

A rank of a running job builds only its own steps (what the executors do); the
simulator and the verifier need every rank's. Every rank's steps are timed twice: as a
plain loop, and with the garbage collector paused over the whole loop
(:func:`collectives.gcpause.gc_paused`), which is what a caller that keeps every rank's
steps alive saves: with millions of live operations each full collection walks them all.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from collectives import ALGORITHMS, BLOCK_COLLECTIVES, build_schedule
from collectives.registry import names
from collectives.build import _build
from collectives.gcpause import gc_paused
from collectives.schedule import Schedule


def _time(function: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """Seconds one call of ``function(*args)`` takes, and what it returns."""
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def _one_rank(collective: str, algorithm: str, nranks: int, count: int) -> Schedule:
    """Build a schedule and the steps of its middle rank (what one rank of a job does)."""
    schedule = build_schedule(collective, algorithm, nranks, count)
    schedule.steps(nranks // 2)
    return schedule


def _every_rank(collective: str, algorithm: str, nranks: int, count: int) -> Schedule:
    """Build a fresh schedule and every rank's steps."""
    _build.cache_clear()
    schedule = build_schedule(collective, algorithm, nranks, count)
    for rank in range(nranks):
        schedule.steps(rank)
    return schedule


def _every_rank_gc_paused(collective: str, algorithm: str, nranks: int, count: int) -> Schedule:
    """:func:`_every_rank` with the garbage collector paused throughout."""
    with gc_paused():
        return _every_rank(collective, algorithm, nranks, count)


def main() -> None:
    """Print a table of build times per algorithm and collective."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nranks", type=int, default=1024)
    parser.add_argument("--count", type=int, default=1 << 28, help="elements (default 2**28)")
    parser.add_argument("--all-ranks", action="store_true", help="also build every rank's steps")
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    parser.add_argument("--collectives", nargs="+", default=list(BLOCK_COLLECTIVES), choices=BLOCK_COLLECTIVES)
    args = parser.parse_args()
    table = Table(title=f"schedule build time, {args.nranks} ranks, {args.count} elements")
    for column in ("algorithm", "collective", "steps", "build + one rank (ms)", "every rank (s)",
                   "every rank, GC paused (s)"):
        table.add_column(column, justify="right")
    shape = (args.nranks, args.count)
    for algorithm in args.algorithms:
        for collective in (c for c in args.collectives if algorithm in names(collective=c)):
            _build.cache_clear()
            one, schedule = _time(_one_rank, collective, algorithm, *shape)
            every = paused = float("nan")
            if args.all_ranks:
                every = _time(_every_rank, collective, algorithm, *shape)[0]
                paused = _time(_every_rank_gc_paused, collective, algorithm, *shape)[0]
            table.add_row(algorithm, collective, str(schedule.num_steps(args.nranks // 2)),
                          f"{one * 1e3:.2f}", f"{every:.2f}", f"{paused:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
