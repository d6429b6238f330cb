"""Simulator speed: AllReduce of 1 GiB on 128 DGX-H100 nodes (1024 ranks) per algorithm.

Run ``python benchmarks/bench_simulator.py [--nodes 128] [--algorithms ring tree rhd
pipeline hier] [--channels 8] [--output docs/results/simulator_speed.md]``; with channels,
each channel runs over its order from :func:`topology.channels.channel_orders` (hier:
``ranks_per_node`` from the machine).  Prints, per algorithm, the seconds from a new
schedule to the simulated result (wall clock, and CPU seconds of this process, which a
loaded machine disturbs less): building the schedule, reading every rank's operations
(as steps for ring and rhd, as lanes for tree and pipeline, see
:func:`simulator.flatten.flatten`) and simulating them; then the transfers simulated,
transfers per second, the predicted time and the process's peak memory so far.  The
engine is compiled (or loaded from Numba's cache) before the first timing
(:func:`simulator.jit.prepare`).  ``--output`` appends the table to a Markdown file,
with the command, the date, the machine and its load on top.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from datetime import datetime, timezone

import topology
from collectives import ALGORITHMS, COMPOSED, build_schedule
from simulator import simulate
from simulator.channel_choice import schedule_params
from simulator.jit import prepare
from topology.channels import ranks_per_node


def main() -> None:
    """Time schedule generation and simulation of each algorithm."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--nbytes", type=int, default=1 << 30)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS),
                        choices=ALGORITHMS + COMPOSED)
    parser.add_argument("--channels", type=int, default=1)
    parser.add_argument("--output", default=None, help="append the table to this Markdown file")
    args = parser.parse_args()
    prepare()
    start = time.perf_counter()
    machine = topology.dgx_h100(nodes=args.nodes)
    lines = [f"dgx_h100(nodes={args.nodes}): {machine.nranks} ranks, {len(machine.links)} "
             f"links, built in {time.perf_counter() - start:.2f} s; {args.channels} channel(s)",
             f"{'algorithm':>10} {'total s':>8} {'cpu s':>8} {'transfers':>10} "
             f"{'transfers/s':>12} {'predicted ms':>13} {'peak MB':>8}"]
    print(*lines, sep="\n")
    for algorithm in args.algorithms:
        start, cpu = time.perf_counter(), time.process_time()
        params = {"channels": args.channels}
        if algorithm in COMPOSED:
            params["ranks_per_node"] = ranks_per_node(machine)
        elif args.channels > 1:
            params = schedule_params(algorithm, tuple(params.items()), machine)
        schedule = build_schedule("allreduce", algorithm, machine.nranks, args.nbytes // 4,
                                  **params)
        result = simulate(schedule, machine, trace=False)
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
        lines.append(f"{algorithm:>10} {total:8.2f} {cpu:8.2f} {result.transfer_count:10d} "
                     f"{result.transfer_count / total:12.0f} {result.time_s * 1e3:13.3f} "
                     f"{peak_MB:8.0f}")
        print(lines[-1], flush=True)
    if args.output:
        _write(args.output, lines)


def _write(path: str, lines: list[str]) -> None:
    """Append the table to ``path`` with the command, date, machine and load on top."""
    with open(path, "a") as out:
        out.write(f"\n## `python {' '.join(sys.argv)}`\n\n"
                  f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {platform.node()}, "
                  f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; load "
                  f"average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (1, 5, 15 min) at "
                  "the end\n\n```\n" + "\n".join(lines) + "\n```\n")


if __name__ == "__main__":
    main()
