"""Simulator speed: AllReduce of 1 GiB on 128 DGX-H100 nodes (1024 ranks) per algorithm.

Run ``python benchmarks/bench_simulator.py [--nodes 128] [--algorithms ring tree rhd
pipeline]``.  Prints, per algorithm, the seconds spent generating every rank's steps, the
seconds simulating them (wall clock, and CPU seconds of this process, which a loaded
machine disturbs less), the transfers simulated, transfers per second of simulation and
the total (steps and simulation).
"""

from __future__ import annotations

import argparse
import time

import topology
from collectives import ALGORITHMS, build_schedule
from collectives.gcpause import gc_paused
from simulator import simulate


def main() -> None:
    """Time schedule generation and simulation of each algorithm."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--nbytes", type=int, default=1 << 30)
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=ALGORITHMS)
    args = parser.parse_args()
    start = time.perf_counter()
    machine = topology.dgx_h100(nodes=args.nodes)
    print(f"dgx_h100(nodes={args.nodes}): {machine.nranks} ranks, {len(machine.links)} links, "
          f"built in {time.perf_counter() - start:.2f} s")
    print(f"{'algorithm':>10} {'steps s':>8} {'sim s':>8} {'sim cpu s':>9} {'transfers':>10} "
          f"{'transfers/s':>12} {'total s':>8} {'predicted ms':>13}")
    for algorithm in args.algorithms:
        start = time.perf_counter()
        schedule = build_schedule("allreduce", algorithm, machine.nranks, args.nbytes // 4)
        with gc_paused():  # as simulate() itself does while it builds the steps
            for rank in range(machine.nranks):
                schedule.steps(rank)
        built = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()
        result = simulate(schedule, machine, trace=False)
        simulated, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"{algorithm:>10} {built:8.2f} {simulated:8.2f} {cpu:9.2f} "
              f"{result.transfer_count:10d} {result.transfer_count / simulated:12.0f} "
              f"{built + simulated:8.2f} "
              f"{result.time_s * 1e3:13.3f}",
              flush=True)


if __name__ == "__main__":
    main()
