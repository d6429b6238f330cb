"""Cost of :func:`collectives.verify` on AllReduce schedules on DGX-H100 nodes.

Run ``python benchmarks/bench_verify.py [--nodes 32 128] [--algorithms ring tree rhd
pipeline] [--channels 8] [--simulate]`` (under ``/usr/bin/time -v`` for the peak memory of
one configuration); each configuration builds a fresh schedule (the channel orders of
:func:`simulator.channel_choice.schedule_params`) and prints the seconds that ``verify``
takes and the process's peak memory so far; with ``--simulate``, also the seconds of
``simulate(schedule, machine, verify=True)`` on another fresh schedule.  The simulator's
engine and verify's kernels are compiled (or loaded from Numba's cache) before the first
timing.
"""

from __future__ import annotations

import argparse
import resource
import time

import topology
from collectives import Recv, Schedule, Send, Step, build_schedule, verify
from simulator import simulate
from simulator.channel_choice import schedule_params
from simulator.jit import prepare


def main() -> None:
    """Time verify (and optionally a verified simulation) per algorithm and machine."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[32])
    parser.add_argument("--algorithms", nargs="+", default=["ring", "tree", "rhd", "pipeline"])
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--count", type=int, default=1 << 28)
    parser.add_argument("--simulate", action="store_true",
                        help="also time simulate(..., verify=True)")
    args = parser.parse_args()
    prepare()
    verify(build_schedule("allreduce", "ring", 2, 2))  # read from lanes
    verify(Schedule.from_steps("allreduce", "warm-up", 1, [[Step((Send(1, 0, 1),))],
                                                           [Step((Recv(0, 0, 1),))]]))
    print(f"{'ranks':>6} {'algorithm':>10} {'verify s':>9} {'simulate s':>11} {'peak MB':>8}")
    for nodes in args.nodes:
        machine = topology.dgx_h100(nodes=nodes)
        for algorithm in args.algorithms:
            params = schedule_params(algorithm, (("channels", args.channels),), machine)
            start = time.perf_counter()
            verify(build_schedule("allreduce", algorithm, machine.nranks, args.count, **params))
            verified = time.perf_counter() - start
            simulated = float("nan")
            if args.simulate:
                schedule = build_schedule("allreduce", algorithm, machine.nranks, args.count,
                                          **params)
                start = time.perf_counter()
                simulate(schedule, machine, trace=False, verify=True)
                simulated = time.perf_counter() - start
            peak_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
            print(f"{machine.nranks:6d} {algorithm:>10} {verified:9.2f} {simulated:11.2f} "
                  f"{peak_MB:8.0f}", flush=True)


if __name__ == "__main__":
    main()
