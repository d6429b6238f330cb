"""``collsim select``: the tuning table of a collective on a machine, with its crossovers.

Prints, for every size of the sweep (1 B .. 8 GiB, powers of two and 1.5x between, or the
``-b``/``-e`` part of it), the best algorithm, its predicted time and busbw, and the best
time of each algorithm family; then the sizes where the choice changes.  ``--nccl-csv``
and ``--ompi-rules`` write the tables for NCCL's example tuner plugin and Open MPI's
coll/tuned (see :mod:`simulator.export`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

import topology

from collectives import ALGORITHMS, COLLECTIVES

from simulator.busbw import bandwidths
from .simulate import _topology
from .sizes import parse_size
from simulator.export import to_nccl_csv, to_ompi_rules
from collectives.tuning import Tuning
from simulator.for_auto import tuning_rules
from simulator.selection import METHODS, TuningTable, tuning_table

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("collectives", nargs="*", default=["allreduce"], metavar="COLLECTIVE",
                        help=f"one or more of {', '.join(COLLECTIVES)} (default allreduce)")
    parser.add_argument("-t", "--topology", default="dgx-h100",
                        help=f"preset ({', '.join(topology.PRESET_NAMES)}) or a topology file")
    parser.add_argument("--nodes", type=int, default=1, help="nodes of a DGX preset")
    parser.add_argument("-p", "--nranks", type=int, default=None,
                        help="ranks (default: all the topology places; 8 for flat)")
    parser.add_argument("--alpha", type=float, default=topology.FLAT_ALPHA_S,
                        help="flat latency, s")
    parser.add_argument("--beta", type=float, default=topology.FLAT_BETA_S_PER_BYTE,
                        help="flat s per byte")
    parser.add_argument("-d", "--dtype-size", type=int, default=4, help="bytes per element")
    parser.add_argument("-b", "--minbytes", type=parse_size, default=1)
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("8G"))
    parser.add_argument("--method", choices=METHODS, default="auto",
                        help="simulate, closed_form, or auto (simulate up to 8 ranks)")
    parser.add_argument("--nccl-csv", type=Path, metavar="CSV",
                        help="write the NCCL example tuner plugin's CSV")
    parser.add_argument("--nnodes", type=int, default=-1,
                        help="nNodes column of the NCCL CSV (default -1: any)")
    parser.add_argument("--ompi-rules", type=Path, metavar="FILE",
                        help="write an Open MPI coll/tuned dynamic rules file")
    parser.add_argument("--tuning-out", type=Path, metavar="JSON",
                        help="write a tuning file for auto (set COLLSIM_TUNING to it)")


def _print(console: Console, table: TuningTable, low: int, high: int) -> None:
    families = list(ALGORITHMS)
    view = Table(title=f"{table.collective} on {table.topology_name}: {table.nranks} ranks, "
                       f"{table.dtype_size}-byte elements ({table.method})")
    for column in ("size (B)", "best", "time (us)", "busbw (GB/s)",
                   *(f"{f} (us)" for f in families)):
        view.add_column(column, justify="right")
    for (size, _, label, seconds), times in zip(table.rows(), table.times):
        if not low <= size <= high:
            continue
        per_family = [min((t for (a, _), t in zip(table.candidates, times) if a == f),
                          default=float("nan")) for f in families]
        busbw = bandwidths(table.collective, table.nranks, size, seconds)[1]
        view.add_row(str(size), label, f"{seconds * 1e6:.2f}", f"{busbw / 1e9:.2f}",
                     *(f"{t * 1e6:.2f}" for t in per_family))
    console.print(view)
    crossings = table.crossovers()
    lines = [f"  from {size} B: {old} -> {new}" for size, old, new in crossings]
    console.print("crossovers:" if lines else "crossovers: none", *lines, sep="\n")


def main(args: argparse.Namespace) -> int:
    """Build and print the tuning tables; write the export files asked for."""
    unknown = [c for c in args.collectives if c not in COLLECTIVES]
    if unknown:
        raise SystemExit(f"collective {unknown[0]!r} is not supported; choose from "
                         f"{', '.join(COLLECTIVES)}")
    if args.topology == "flat" and args.nranks is None:
        args.nranks = 8
    machine = _topology(args)
    console = Console()
    tables = [tuning_table(c, machine, args.nranks, args.dtype_size, args.method)
              for c in dict.fromkeys(args.collectives)]
    for table in tables:
        _print(console, table, args.minbytes, args.maxbytes)
    if args.nccl_csv is not None:
        args.nccl_csv.write_text(to_nccl_csv(tables, nnodes=args.nnodes))
        console.print(f"NCCL tuner CSV written to {args.nccl_csv}")
    if args.ompi_rules is not None:
        args.ompi_rules.write_text(to_ompi_rules(tables))
        console.print(f"Open MPI dynamic rules written to {args.ompi_rules}")
    if args.tuning_out is not None:
        tuning = Tuning.from_rules(tuning_rules(tables, args.dtype_size),
                                   f"predicted on {machine.name} ({tables[0].method})")
        tuning.save(args.tuning_out)
        console.print(f"tuning file for auto written to {args.tuning_out}")
    return 0
