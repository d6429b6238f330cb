"""Selection at cluster scale: the analytic model's speed and its error against the DES.

Run: ``python benchmarks/bench_select.py [--nodes 1 2 4 ... 2048] [--des-nodes 4]``

For every node count of ``topology.dgx_h100`` (8 GPUs a node) it prints

* the first ``simulator.select("allreduce", 1 MiB, machine, method="closed_form")`` on a
  fresh machine (it builds that collective's table: every candidate at every size of the
  sweep);
* the full tables of ``collsim select`` (all three collectives, every size, every
  candidate, every protocol), their time and their peak memory (``tracemalloc``, a second
  pass);
* a cached call (microseconds);
* up to ``--des-nodes`` nodes, the worst relative error of the analytic model against
  :func:`simulator.simulate` per algorithm, over every candidate of the tables (channels
  and hier included) under every protocol at a few sizes.

It writes the table to ``docs/results/select.md`` (command, date and machine on top).
Building the topology itself is not timed (``dgx_h100(2048)`` takes a few seconds).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

from rich.console import Console
from rich.table import Table

import topology
from collectives import BLOCK_COLLECTIVES, build_schedule
from simulator import simulate
from simulator.channel_choice import schedule_params
from simulator.gpu import protocols
from simulator.selection import _tried, clear_cache, closed_form, select, tuning_table

NODES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
#: sizes the DES is compared at (bytes)
DES_SIZES = (1 << 12, 1 << 20, 1 << 26)
OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "select.md"


def _tables(machine: topology.Topology) -> None:
    for collective in BLOCK_COLLECTIVES:
        tuning_table(collective, machine, method="closed_form")


def _timings(machine: topology.Topology) -> tuple[float, float, float, float]:
    """First select (s), the three tables (s), their peak memory (MB), a cached call (s)."""
    clear_cache()
    start = time.perf_counter()
    select("allreduce", 1 << 20, machine, method="closed_form")
    first = time.perf_counter() - start
    start = time.perf_counter()
    _tables(machine)
    tables = first + time.perf_counter() - start
    clear_cache()
    tracemalloc.start()
    _tables(machine)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    calls = 2000
    start = time.perf_counter()
    for k in range(calls):
        select("allreduce", (k * 7919) % (1 << 33), machine, method="closed_form")
    return first, tables, peak, (time.perf_counter() - start) / calls


def _worst(machine: topology.Topology) -> dict[str, tuple[float, str]]:
    """Per algorithm, the worst relative error of the model against the DES, and where."""
    worst: dict[str, tuple[float, str]] = {}
    for collective in BLOCK_COLLECTIVES:
        for algorithm, params in _tried(collective, machine, machine.nranks, "closed_form", None):
            full = schedule_params(algorithm, params, machine)
            for protocol in protocols(machine):
                for nbytes in DES_SIZES:
                    schedule = build_schedule(collective, algorithm, machine.nranks,
                                              nbytes // 4, **full)
                    des = simulate(schedule, machine, protocol=protocol).time_s
                    model = closed_form(collective, algorithm, machine, nbytes,
                                        protocol=protocol, **dict(params))
                    error = model / des - 1
                    if abs(error) > abs(worst.get(algorithm, (0.0, ""))[0]):
                        where = (f"{collective} {dict(params)} {protocol} {nbytes} B")
                        worst[algorithm] = (error, where)
    return worst


def main() -> None:
    """Measure every node count; print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=list(NODES))
    parser.add_argument("--des-nodes", type=int, default=4,
                        help="compare with the DES up to so many nodes (default 4)")
    args = parser.parse_args()
    view = Table(title="simulator.select on dgx_h100 (analytic model)")
    columns = ("nodes", "GPUs", "first select (ms)", "3 tables (s)", "peak (MB)",
               "cached (us)", "worst error vs DES, per algorithm")
    for column in columns:
        view.add_column(column, justify="right")
    rows = []
    for nodes in args.nodes:
        machine = topology.dgx_h100(nodes=nodes)
        first, tables, peak, cached = _timings(machine)
        errors = ""
        if nodes <= args.des_nodes:
            errors = "; ".join(f"{a} {e:+.1%} ({where})" for a, (e, where) in
                               sorted(_worst(machine).items()))
        row = (str(nodes), str(machine.nranks), f"{first * 1e3:.0f}", f"{tables:.2f}",
               f"{peak:.0f}", f"{cached * 1e6:.1f}", errors)
        view.add_row(*row)
        rows.append(row)
        print(" | ".join(row), file=sys.stderr, flush=True)
    Console().print(view)
    _write(columns, rows)


def _write(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    command = "python benchmarks/bench_select.py " + " ".join(sys.argv[1:])
    lines = [
        "# Selection at cluster scale (benchmarks/bench_select.py)", "",
        f"- command: `{command.strip()}`",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.node()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}", "",
        "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
