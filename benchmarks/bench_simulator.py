"""Simulator speed: a collective of 1 GiB on 128 DGX-H100 nodes (1024 ranks) per algorithm.

Run ``python benchmarks/bench_simulator.py [--nodes 128] [--algorithms ring tree rhd
pipeline hier] [--channels 1 8] [--collectives allreduce reduce_scatter allgather]
[--verify] [--write docs/results/simulator.md]`` (AllReduce unless told); with channels, each
channel runs over its order from :func:`topology.channels.channel_orders` (hier:
``ranks_per_node`` from the machine); several counts run one after another.
Prints, per algorithm, the seconds from a new schedule to the simulated
result (wall clock, and CPU seconds of this process, which a loaded machine disturbs
less): building the schedule, reading every rank's operations (as steps for ring and
rhd, as lanes for tree and pipeline, see :func:`simulator.flatten.flatten`) and
simulating them; then the transfers simulated, transfers per second and the predicted
time and the process's peak memory so far.  The schedule is not verified again
(``verify=False``: :func:`collectives.build_schedule` made it; ``bench_verify.py``
times :func:`collectives.verify`, a cost of the collectives layer, not of the simulator)
unless ``--verify``: then :func:`simulator.simulate` verifies it, its default (on the
compiled engine the check shares the engine's reading and matching).
The engine is compiled (or loaded from Numba's cache) before the first timing
(:func:`simulator.jit.prepare`).  ``--write`` also writes what it printed as a page of
``docs/results/`` (with the command, date and machine on top, :mod:`results`).
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import topology
from collectives import ALGORITHMS, BLOCK_COLLECTIVES, COMPOSED, build_schedule
from collectives.registry import names
from simulator import simulate
from simulator.channel_choice import schedule_params
from simulator.jit import prepare
from topology.channels import ranks_per_node

from results import Output, write

#: what the page's figures are
ABOUT = """Seconds from a new schedule to the simulated result (wall clock, and CPU seconds
of the process, which a loaded machine disturbs less): building the schedule, reading
every rank's operations (steps, or lanes for ring, tree and pipeline) and simulating them
on the compiled engine (unverified: `build_schedule` made the schedule; verified by
`simulate`, its default, where a heading says so); then the
transfers simulated, transfers per second and the predicted time of the collective.  With
channels, each runs over its order from `collectives.channel_orders`.  The first run in a
checkout also compiles the engine's Numba code (cached on disk, some 10 s of CPU): these
are a later run's figures."""


def main() -> None:
    """Time schedule generation and simulation of each algorithm."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--nbytes", type=int, default=1 << 30)
    parser.add_argument("--algorithms", nargs="+",
                        default=list(names(composed=False, collective="allreduce")),
                        choices=ALGORITHMS + COMPOSED)
    parser.add_argument("--channels", type=int, nargs="+", default=[1])
    parser.add_argument("--collectives", nargs="+", default=["allreduce"],
                        choices=BLOCK_COLLECTIVES)
    parser.add_argument("--verify", action="store_true",
                        help="verify each schedule in simulate (its default) and time that too")
    parser.add_argument("--write", type=Path, help="also write the output as this page")
    args = parser.parse_args()
    out = Output()
    prepare()
    start = time.perf_counter()
    machine = topology.dgx_h100(nodes=args.nodes)
    out(f"dgx_h100(nodes={args.nodes}): {machine.nranks} ranks, {len(machine.links)} links, "
        f"built in {time.perf_counter() - start:.2f} s; {args.nbytes} B a collective")
    for collective in args.collectives:
        for channels in args.channels:
            out(f"\n{collective}, {channels} channel(s)"
                + (", verified" if args.verify else ""))
            out(f"{'algorithm':>10} {'total s':>8} {'cpu s':>8} {'transfers':>10} "
                f"{'transfers/s':>12} {'predicted ms':>13} {'peak MB':>8}")
            for algorithm in args.algorithms:
                out(_row(collective, algorithm, machine, channels, args.nbytes, args.verify))
    if args.write:
        write(args.write, "Simulator speed", out.text, ABOUT)


def _row(collective: str, algorithm: str, machine: topology.Topology, channels: int,
         nbytes: int, verify: bool = False) -> str:
    """Build and simulate one collective (verified in ``simulate`` if ``verify``); its row:
    seconds, CPU seconds, transfers, time."""
    start, cpu = time.perf_counter(), time.process_time()
    params = {"channels": channels}
    if algorithm in COMPOSED:
        params["ranks_per_node"] = ranks_per_node(machine)
    elif channels > 1:
        params = schedule_params(algorithm, tuple(params.items()), machine)
    schedule = build_schedule(collective, algorithm, machine.nranks, nbytes // 4, **params)
    result = simulate(schedule, machine, trace=False, verify=verify)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_MB = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return (f"{algorithm:>10} {total:8.2f} {cpu:8.2f} {result.transfer_count:10d} "
            f"{result.transfer_count / total:12.0f} {result.time_s * 1e3:13.3f} {peak_MB:8.0f}")


if __name__ == "__main__":
    main()
