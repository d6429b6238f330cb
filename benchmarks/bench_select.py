"""Selection at cluster scale: the analytic model's speed and its error against the DES.

Run: ``python benchmarks/bench_select.py [--nodes 1 2 4 ... 2048] [--des-nodes 4]
[--write docs/results/select.md]``

For every node count of ``topology.dgx_h100`` (8 GPUs a node) it prints

* the time ``topology.dgx_h100(nodes)`` takes to build;
* the first ``simulator.select("allreduce", 1 MiB, machine, method="closed_form")`` on a
  fresh machine (it builds that collective's table: every candidate at every size of the
  sweep), and that time over the sweep's sizes;
* the full tables of ``collsim select`` (all three collectives, every size, every
  candidate, every protocol), their time (wall and CPU: the CPU seconds are what to
  compare on a shared machine) and their peak memory (``tracemalloc``, built again from
  cold in a fresh process);
* a cached call (microseconds);
* up to ``--des-nodes`` nodes, the worst relative error of the analytic model against
  :func:`simulator.simulate` per algorithm, over every candidate of the tables (channels
  and hier included) under every protocol at a few sizes.

``--write`` also writes the table as a Markdown page (command, date and machine on top),
``docs/results/select.md`` in the repository.
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import sys
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

import topology
from collectives import BLOCK_COLLECTIVES, build_schedule
from simulator import simulate
from simulator.channel_choice import schedule_params
from simulator.gpu import protocols
from simulator.selection import SIZES, _tried, clear_cache, closed_form, select, tuning_table

from results import command, machine  # this script's folder

NODES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
#: sizes the DES is compared at (bytes)
DES_SIZES = (1 << 12, 1 << 20, 1 << 26)


def _tables(machine: topology.Topology) -> None:
    for collective in BLOCK_COLLECTIVES:
        tuning_table(collective, machine, method="closed_form")


def _peak(name: str) -> float:
    """Peak memory (MB, ``tracemalloc``) of the three tables of ``dgx_h100`` named
    ``name``, from cold (a fresh process: no route, description or table cached)."""
    machine = topology.dgx_h100(nodes=int(name.split("(")[1].rstrip(")")))
    tracemalloc.start()
    _tables(machine)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return peak


def _timings(machine: topology.Topology) -> tuple[float, float, float, float, float]:
    """First select (s), the three tables (s, and s of CPU), their peak memory (MB), a
    cached call (s)."""
    clear_cache()
    start, cpu = time.perf_counter(), time.process_time()
    select("allreduce", 1 << 20, machine, method="closed_form")
    first = time.perf_counter() - start
    _tables(machine)
    tables, tables_cpu = time.perf_counter() - start, time.process_time() - cpu
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        peak = pool.submit(_peak, machine.name).result()
    calls = 2000
    start = time.perf_counter()
    for k in range(calls):
        select("allreduce", (k * 7919) % (1 << 33), machine, method="closed_form")
    return first, tables, tables_cpu, peak, (time.perf_counter() - start) / calls


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
    """Measure every node count; print the table (and write it with ``--write``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=list(NODES))
    parser.add_argument("--des-nodes", type=int, default=4,
                        help="compare with the DES up to so many nodes (default 4)")
    parser.add_argument("--write", type=Path, help="also write the table as this page")
    args = parser.parse_args()
    view = Table(title="simulator.select on dgx_h100 (analytic model)")
    columns = ("nodes", "GPUs", "machine built (s)", "first select (ms)", "per size (ms)",
               "3 tables (s)", "3 tables CPU (s)", "peak (MB)", "cached (us)",
               "worst error vs DES, per algorithm")
    for column in columns:
        view.add_column(column, justify="right")
    rows = []
    for nodes in args.nodes:
        start = time.perf_counter()
        machine = topology.dgx_h100(nodes=nodes)
        built = time.perf_counter() - start
        first, tables, tables_cpu, peak, cached = _timings(machine)
        errors = ""
        if nodes <= args.des_nodes:
            errors = "; ".join(f"{a} {e:+.1%} ({where})" for a, (e, where) in
                               sorted(_worst(machine).items()))
        row = (str(nodes), str(machine.nranks), f"{built:.2f}", f"{first * 1e3:.0f}",
               f"{first * 1e3 / len(SIZES):.1f}", f"{tables:.2f}", f"{tables_cpu:.2f}",
               f"{peak:.0f}", f"{cached * 1e6:.1f}", errors)
        view.add_row(*row)
        rows.append(row)
        print(" | ".join(row), file=sys.stderr, flush=True)
    Console().print(view)
    if args.write:
        _write(args.write, columns, rows)


def _write(path: Path, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Write the measured ``rows`` as a Markdown table headed by the command, the date and
    the machine (a shared machine: compare the CPU column)."""
    lines = [
        "# Selection at cluster scale (benchmarks/bench_select.py)", "",
        f"- command: `{command()}`",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}", "",
        "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
