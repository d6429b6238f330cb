"""``collsim simulate``: predicted time, algbw and busbw per size and algorithm.

Sizes follow nccl-tests: ``-b`` smallest, ``-e`` largest, ``-f`` multiplication factor
(suffixes K, M, G for powers of 1024).
"""

from __future__ import annotations

import argparse

from pathlib import Path

from rich.console import Console
from rich.table import Table

import topology
from collectives import ALGORITHMS, COLLECTIVES, build_schedule
from .sizes import parse_size

from simulator.busbw import bandwidths
from simulator.engine import simulate

__all__ = ["add_arguments", "main", "parse_size"]



def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("collective", nargs="?", default="allreduce", choices=COLLECTIVES)
    parser.add_argument("-a", "--algorithms", nargs="+", default=list(ALGORITHMS),
                        choices=ALGORITHMS, metavar="ALGO")
    parser.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("8K"))
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("64M"))
    parser.add_argument("-f", "--stepfactor", type=int, default=8)
    parser.add_argument("-t", "--topology", default="dgx-h100",
                        help=f"preset ({', '.join(topology.PRESET_NAMES)}) or a topology file")
    parser.add_argument("--nodes", type=int, default=1, help="nodes of a DGX preset")
    parser.add_argument("-p", "--nranks", type=int, default=8, help="ranks of the flat preset")
    parser.add_argument("--alpha", type=float, default=topology.FLAT_ALPHA_S,
                        help="flat latency, s")
    parser.add_argument("--beta", type=float, default=topology.FLAT_BETA_S_PER_BYTE,
                        help="flat s per byte")
    parser.add_argument("-d", "--dtype-size", type=int, default=4, help="bytes per element")
    parser.add_argument("--timeline", type=Path, metavar="PNG",
                        help="draw the largest size's first algorithm per rank")


def _topology(args: argparse.Namespace) -> topology.Topology:
    if args.topology in topology.PRESET_NAMES:
        return topology.preset(args.topology, nranks=args.nranks, nodes=args.nodes,
                               alpha=args.alpha, beta=args.beta)
    if Path(args.topology).is_file():
        return topology.load(args.topology)
    raise SystemExit(f"--topology {args.topology!r} is neither a preset "
                     f"({', '.join(topology.PRESET_NAMES)}) nor a file")


def _sizes(args: argparse.Namespace) -> list[int]:
    if args.stepfactor < 2:
        raise SystemExit(f"-f {args.stepfactor} is not allowed; it must be >= 2")
    if args.minbytes > args.maxbytes:
        raise SystemExit(f"-b {args.minbytes} is larger than -e {args.maxbytes}; "
                         "need minbytes <= maxbytes")
    sizes, size = [], max(args.minbytes, args.dtype_size)
    while size <= args.maxbytes:
        sizes.append(size - size % args.dtype_size)
        size *= args.stepfactor
    return sizes


def main(args: argparse.Namespace) -> int:
    """Simulate every algorithm at every size and print the nccl-tests style table."""
    machine = _topology(args)
    p = machine.nranks
    table = Table(title=f"{args.collective} on {machine.name}: {p} ranks (simulated)")
    for column in ("size (B)", "count", "algorithm", "time (us)", "algbw (GB/s)",
                   "busbw (GB/s)"):
        table.add_column(column, justify="right")
    last = None
    for nbytes in _sizes(args):
        count = nbytes // args.dtype_size
        for algorithm in args.algorithms:
            schedule = build_schedule(args.collective, algorithm, p, count)
            result = simulate(schedule, machine, args.dtype_size, trace=args.timeline is not None)
            algbw, busbw = bandwidths(args.collective, p, nbytes, result.time_s)
            table.add_row(str(nbytes), str(count), algorithm, f"{result.time_s * 1e6:.2f}",
                          f"{algbw / 1e9:.2f}", f"{busbw / 1e9:.2f}")
            if algorithm == args.algorithms[0]:
                last = (result, f"{algorithm} {args.collective}, {nbytes} B on {machine.name}")
        table.add_section()
    Console().print(table)
    if args.timeline is not None and last is not None:
        from simulator.timeline import plot_timeline
        plot_timeline(last[0], args.timeline, title=last[1])
        print(f"timeline written to {args.timeline}")
    return 0
