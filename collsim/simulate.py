"""``collsim simulate``: predicted time, algbw and busbw per size and algorithm.

Sizes follow nccl-tests: ``-b`` smallest, ``-e`` largest, ``-f`` multiplication factor
or ``-i`` increment (suffixes K, M, G for powers of 1024), each rounded down to whole
``-d`` elements.  The machine options are ``select``'s (:func:`collsim.args.add_machine`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from collectives import ALGORITHMS, COLLECTIVES, build_schedule
from collectives.layout import count_of
from collectives.registry import names
from collectives.schedule import ROOTED

from simulator.busbw import bandwidths
from simulator.engine import simulate

from .args import (ITEMSIZES, MAX_SIMULATE_RANKS, UsageError, add_machine, add_sweep,
                   check_output, datatype, machine, model_ranks, served, sweep, whole)
from .terminal import console, progress

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("collective", nargs="?", default="allreduce", choices=COLLECTIVES)
    parser.add_argument("--algorithms", nargs="+", default=None,
                        choices=ALGORITHMS, metavar="ALGO",
                        help="algorithms to simulate (default: every one that serves the "
                             "collective; for allreduce "
                             f"{' '.join(names(collective='allreduce', composed=False))})")
    parser.add_argument("-r", "--root", type=whole(0, MAX_SIMULATE_RANKS - 1), default=0,
                        help="the root of broadcast and reduce (nccl-tests' -r; default 0)")
    add_sweep(parser, 8 << 10, 64 << 20, stepfactor=8)
    parser.add_argument("-d", "--datatype", type=datatype, default="float32", metavar="TYPE",
                        help="element type: float (default), half, bfloat16, double, int8, ...")
    add_machine(parser, "dgx-h100", max_ranks=MAX_SIMULATE_RANKS)
    parser.add_argument("--timeline", type=Path, metavar="PNG",
                        help="draw the largest size's first algorithm per rank")


def _sizes(args: argparse.Namespace) -> list[int]:
    """The sweep's sizes rounded down to whole elements, at least one element each."""
    itemsize = ITEMSIZES[args.datatype]
    sizes = [size - size % itemsize for size in sweep(args) if size >= itemsize]
    return list(dict.fromkeys(sizes))


def check(args: argparse.Namespace) -> list[int]:
    """Check every argument; return the sizes to simulate.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by a parser set up with :func:`add_arguments`.

    Returns
    -------
    list of int
        Sizes in bytes, whole elements.

    Raises
    ------
    UsageError
        Naming the flag, its value and what is allowed.
    """
    if args.datatype == "all":
        raise UsageError("-d all is not allowed here; the simulator needs one element size "
                         "(float, half, bfloat16, double, ...)")
    args.algorithms = served("--algorithms", args.collective, args.algorithms, ALGORITHMS)
    if args.collective in ROOTED and not 0 <= args.root < model_ranks(args, machine(args),
                                                                      MAX_SIMULATE_RANKS):
        raise UsageError(f"-r {args.root} is not allowed: the root must be one of the ranks")
    check_output("--timeline", args.timeline)
    sizes = _sizes(args)
    if not sizes:
        raise UsageError(f"-e {args.maxbytes} is not allowed with -d {args.datatype}: no size "
                         f"holds one {ITEMSIZES[args.datatype]}-byte element")
    return sizes


def main(args: argparse.Namespace) -> int:
    """Simulate every algorithm at every size and print the nccl-tests style table."""
    sizes = check(args)
    model = machine(args)
    p = model_ranks(args, model, MAX_SIMULATE_RANKS)
    itemsize = ITEMSIZES[args.datatype]
    table = Table(title=f"{args.collective} on {model.name}: {p} ranks, {args.datatype} "
                        "(simulated)")
    for column in ("size (B)", "count", "algorithm", "time (us)", "algbw (GB/s)",
                   "busbw (GB/s)"):
        table.add_column(column, justify="right", overflow="fold")
    last = None
    with progress("simulate", len(sizes) * len(args.algorithms)) as advance:
        for nbytes in sizes:
            count = count_of(args.collective, nbytes, itemsize, p)
            for algorithm in args.algorithms:
                rooted = {"root": args.root} if args.collective in ROOTED else {}
                schedule = build_schedule(args.collective, algorithm, p, count, **rooted)
                result = simulate(schedule, model, itemsize, trace=args.timeline is not None)
                algbw, busbw = bandwidths(args.collective, p, nbytes, result.time_s)
                table.add_row(str(nbytes), str(count), algorithm, f"{result.time_s * 1e6:.2f}",
                              f"{algbw / 1e9:.2f}", f"{busbw / 1e9:.2f}")
                if algorithm == args.algorithms[0]:
                    last = (result, f"{algorithm} {args.collective}, {nbytes} B on {model.name}")
                advance(f"{algorithm} {nbytes} B")
            table.add_section()
    out = console()
    out.print(table)
    if args.timeline is not None and last is not None:
        from simulator.timeline import plot_timeline
        plot_timeline(last[0], args.timeline, title=last[1])
        out.print(f"timeline written to {args.timeline}")
    return 0
