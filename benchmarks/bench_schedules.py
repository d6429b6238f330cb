"""How long building schedules takes: one rank's steps, and every rank's.

Run: ``python benchmarks/bench_schedules.py [--nranks 1024] [--count 268435456]``

A rank of a running job builds only its own steps (what the executors do); the
simulator and the verifier need every rank's.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from collectives import ALGORITHMS, COLLECTIVES, build_schedule
from collectives.build import _build


def _time(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    """Print a table of build times per algorithm and collective."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nranks", type=int, default=1024)
    parser.add_argument("--count", type=int, default=1 << 28, help="elements (default 2**28)")
    parser.add_argument("--all-ranks", action="store_true", help="also build every rank's steps")
    args = parser.parse_args()
    table = Table(title=f"schedule build time, {args.nranks} ranks, {args.count} elements")
    for column in ("algorithm", "collective", "steps", "build + one rank (ms)", "every rank (s)"):
        table.add_column(column, justify="right")
    for algorithm in ALGORITHMS:
        for collective in COLLECTIVES:
            _build.cache_clear()
            holder = {}

            def one_rank() -> None:
                holder["s"] = build_schedule(collective, algorithm, args.nranks, args.count)
                holder["s"].steps(args.nranks // 2)

            one = _time(one_rank)
            every = _time(lambda: holder["s"].ranks) if args.all_ranks else float("nan")
            table.add_row(algorithm, collective, str(holder["s"].num_steps(args.nranks // 2)),
                          f"{one * 1e3:.2f}", f"{every:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
