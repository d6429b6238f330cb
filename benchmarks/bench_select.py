"""How long ``simulator.select`` takes: the first call (builds the tuning table) and the
calls after it (a lookup), in microseconds.

Run: ``python benchmarks/bench_select.py [--calls 20000]``

The first call for a (topology, collective, nranks, dtype size) simulates or evaluates the
closed forms over the whole size sweep; every later call, whatever its size, bisects the
table's ranges and interpolates the candidates' times.
"""

from __future__ import annotations

import argparse
import random
import time

from rich.console import Console
from rich.table import Table

import topology
from simulator.selection import clear_cache, select, tuning_table

CASES = (
    ("flat(4)", lambda: topology.flat(4, 2e-6, 1e-10), "allreduce"),
    ("flat(8)", lambda: topology.flat(8, 2e-6, 1e-10), "allgather"),
    ("dgx_h100(1)", lambda: topology.dgx_h100(), "allreduce"),
    ("dgx_h100(1)", lambda: topology.dgx_h100(), "reduce_scatter"),
    ("flat(64)", lambda: topology.flat(64, 5e-6, 1e-10), "allreduce"),
    ("dgx_h100(16)", lambda: topology.dgx_h100(nodes=16), "allreduce"),
)


def main() -> None:
    """Print first-call and cached-call times per case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000, help="cached calls timed per case")
    args = parser.parse_args()
    view = Table(title="simulator.select: first call vs cached call")
    for column in ("topology", "ranks", "collective", "method", "first call (ms)",
                   "cached call (us)"):
        view.add_column(column, justify="right")
    rng = random.Random(0)
    sizes = [rng.randrange(0, 1 << 33) for _ in range(args.calls)]
    for name, build, collective in CASES:
        machine = build()
        clear_cache()
        start = time.perf_counter()
        select(collective, 1 << 20, machine)
        first = time.perf_counter() - start
        start = time.perf_counter()
        for n in sizes:
            select(collective, n, machine)
        cached = (time.perf_counter() - start) / len(sizes)
        method = tuning_table(collective, machine).method
        view.add_row(name, str(machine.nranks), collective, method, f"{first * 1e3:.1f}",
                     f"{cached * 1e6:.2f}")
    Console().print(view)


if __name__ == "__main__":
    main()
