"""``collsim select``: the tuning table of a collective on a machine, with its crossovers.

Prints, for every size of the sweep (1 B .. 8 GiB, powers of two and 1.5x between, or the
``-b``/``-e`` part of it), the best algorithm, its predicted time and busbw, and the best
time of each algorithm family; then the sizes within ``-b``/``-e`` where the choice
changes.  Sizes below one ``-d`` element are left out of the table and the exports.  ``--ompi-rules``
writes the tables for Open MPI's coll/tuned; ``--nccl-csv`` writes NCCL's example tuner
plugin's file for the machine, ranking NCCL's own algorithms in the model and never
choosing what NCCL's own choice would beat (see :mod:`simulator.export`).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from rich.console import Console
from rich.table import Table

import topology

from collectives import ALGORITHMS, COLLECTIVES, COMPOSED
from collectives.tuning import Tuning

from simulator.busbw import bandwidths
from simulator.export import to_nccl_csv, to_ompi_rules
from simulator.for_auto import tuning_rules
from simulator.nccl_algorithms import ALGORITHMS as NCCL_ALGORITHMS
from simulator.selection import METHODS, TuningTable, tuning_table

from .args import (ITEMSIZES, MAX_SELECT_RANKS, UsageError, add_machine, add_sweep,
                   check_distinct, check_output, datatype, machine, model_ranks, whole)
from .terminal import console, progress

__all__ = ["add_arguments", "main"]

#: the most ``--nccl-nnodes`` written to the CSV (above any machine that is built)
MAX_NCCL_NODES = 1 << 16

#: the export flags and what each writes
_EXPORTS = {"nccl_csv": "--nccl-csv", "ompi_rules": "--ompi-rules", "tuning_out": "--tuning-out"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("collectives", nargs="*", default=["allreduce"], metavar="COLLECTIVE",
                        help=f"one or more of {', '.join(COLLECTIVES)} (default allreduce)")
    add_machine(parser, "dgx-h100", max_ranks=MAX_SELECT_RANKS)
    parser.add_argument("-d", "--datatype", type=datatype, default="float32", metavar="TYPE",
                        help="element type: float (default), half, bfloat16, double, int8, ...")
    add_sweep(parser, 1, 8 << 30, stepfactor=None)
    parser.add_argument("--algorithms", nargs="+", default=None,
                        choices=(*ALGORITHMS, *COMPOSED, *NCCL_ALGORITHMS), metavar="ALGO",
                        help="restrict the candidates, as NCCL_ALGO does (default: every "
                        "schedule; hier needs several nodes); NCCL's own "
                        f"{', '.join(NCCL_ALGORITHMS)} join where NCCL runs them")
    parser.add_argument("--method", choices=METHODS, default="auto",
                        help="simulate, closed_form, or auto (simulate up to 8 ranks)")
    parser.add_argument("--nccl-csv", type=Path, metavar="CSV",
                        help="write the NCCL example tuner plugin's file (NCCL 2.27.5+) for "
                        "all of the machine's ranks: NCCL's algorithms only, ours where the "
                        "model predicts them at least as fast as NCCL's own choice")
    parser.add_argument("--nccl-nnodes", type=whole(-1, MAX_NCCL_NODES), default=-1,
                        metavar="N", help="the NCCL file's nNodes: the machine's node count "
                        "(--nodes), the only one its choices hold for; -1 (default) takes it")
    parser.add_argument("--ompi-rules", type=Path, metavar="FILE",
                        help="write an Open MPI coll/tuned dynamic rules file")
    parser.add_argument("--tuning-out", type=Path, metavar="JSON",
                        help="write a tuning file for auto (set COLLSIM_TUNING to it)")


def _print(out: Console, table: TuningTable, low: int, high: int) -> None:
    families = list(dict.fromkeys(algorithm for algorithm, _ in table.candidates))
    view = Table(title=f"{table.collective} on {table.topology_name}: {table.nranks} ranks, "
                       f"{table.dtype_size}-byte elements ({table.method})")
    for column in ("size (B)", "best", "time (us)", "busbw (GB/s)",
                   *(f"{f} (us)" for f in families)):
        view.add_column(column, justify="right", overflow="fold")
    for (size, _, label, seconds), times in zip(table.rows(), table.times):
        if not max(low, table.dtype_size) <= size <= high:
            continue
        per_family = [min((t for (a, _), t in zip(table.candidates, times) if a == f),
                          default=float("nan")) for f in families]
        busbw = bandwidths(table.collective, table.nranks, size, seconds)[1]
        view.add_row(str(size), label, f"{seconds * 1e6:.2f}", f"{busbw / 1e9:.2f}",
                     *(f"{t * 1e6:.2f}" for t in per_family))
    out.print(view)
    lines = [f"  from {size} B: {old} -> {new}" for size, old, new in table.crossovers()
             if low < size <= high]
    out.print("crossovers:" if lines else "crossovers: none", *lines, sep="\n")


def _whole_elements(table: TuningTable) -> TuningTable:
    """``table`` without the ranges of sizes below one element (the first range kept
    starts where the table did)."""
    kept = [r for r in table.ranges if r.max_bytes >= table.dtype_size]
    kept[0] = dataclasses.replace(kept[0], min_bytes=table.ranges[0].min_bytes)
    return dataclasses.replace(table, ranges=tuple(kept))


def check(args: argparse.Namespace) -> None:
    """Check every argument before any table is built.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by a parser set up with :func:`add_arguments`.

    Raises
    ------
    UsageError
        Naming the flag, its value and what is allowed.
    """
    unknown = [c for c in args.collectives if c not in COLLECTIVES]
    if unknown:
        raise UsageError(f"collective {unknown[0]!r} is not supported; choose from "
                         f"{', '.join(COLLECTIVES)}")
    check_distinct("COLLECTIVE", args.collectives)
    if args.algorithms is not None:
        check_distinct("--algorithms", args.algorithms)
    if args.datatype == "all":
        raise UsageError("-d all is not allowed here; a tuning table holds one element size "
                         "(float, half, bfloat16, double, ...)")
    if args.minbytes > args.maxbytes:
        raise UsageError(f"-b {args.minbytes} is larger than -e {args.maxbytes}; "
                         "need minbytes <= maxbytes")
    if args.nccl_nnodes not in (-1, args.nodes or 1):
        raise UsageError(f"--nccl-nnodes {args.nccl_nnodes} is not allowed; the NCCL file's "
                         f"choices hold for the machine's {args.nodes or 1} node(s): give "
                         f"--nodes {args.nccl_nnodes}, or leave --nccl-nnodes out")
    for dest, flag in _EXPORTS.items():
        check_output(flag, getattr(args, dest))


def _table(args: argparse.Namespace, collective: str, model: topology.Topology,
           itemsize: int) -> TuningTable:
    """The tuning table; ``--algorithms`` that leave no candidate on this machine (``hier``
    on one node) are refused before any prediction (tuning_table checks them first)."""
    try:
        return tuning_table(collective, model, args.ranks, itemsize, args.method,
                            args.algorithms)
    except ValueError as error:
        if args.algorithms is None:
            raise
        raise UsageError(f"--algorithms {' '.join(args.algorithms)} is not allowed here: "
                         f"{error}") from None


def main(args: argparse.Namespace) -> int:
    """Build and print the tuning tables; write the export files asked for."""
    check(args)
    model = machine(args)
    model_ranks(args, model, MAX_SELECT_RANKS)
    itemsize = ITEMSIZES[args.datatype]
    out = console()
    tables = []
    with progress(f"select on {model.name}", len(args.collectives)) as advance:
        for collective in args.collectives:
            advance(collective, 0)
            tables.append(_whole_elements(_table(args, collective, model, itemsize)))
            advance(collective)
    for table in tables:
        _print(out, table, args.minbytes, args.maxbytes)
    if args.nccl_csv is not None:
        args.nccl_csv.write_text(to_nccl_csv(model, args.collectives, itemsize))
        out.print(f"NCCL tuner CSV written to {args.nccl_csv}")
    if args.ompi_rules is not None:
        args.ompi_rules.write_text(to_ompi_rules(tables))
        out.print(f"Open MPI dynamic rules written to {args.ompi_rules}")
    if args.tuning_out is not None:
        tuning = Tuning.from_rules(tuning_rules(tables, itemsize),
                                   f"predicted on {model.name} ({tables[0].method})")
        tuning.save(args.tuning_out)
        out.print(f"tuning file for auto written to {args.tuning_out}")
    return 0
