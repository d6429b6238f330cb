"""``collsim schedule``: build a schedule, verify it and print it or a summary."""

from __future__ import annotations

import argparse

from rich.table import Table

from collectives.build import ALGORITHMS, build_schedule
from collectives.schedule import COLLECTIVES
from collectives.verify import verify

from .args import MAX_BYTES, MAX_MODEL_RANKS, served, whole
from .terminal import console, progress

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("collective", nargs="?", default="allreduce", choices=COLLECTIVES)
    parser.add_argument("--algorithms", nargs="+", choices=ALGORITHMS, metavar="ALGO",
                        help=f"algorithms to build, of {' '.join(ALGORITHMS)} (default: "
                             f"those that run the collective)")
    parser.add_argument("--ranks", type=whole(1, MAX_MODEL_RANKS), default=8, metavar="N",
                        help=f"ranks, at most {MAX_MODEL_RANKS} (default 8)")
    parser.add_argument("--count", type=whole(0, MAX_BYTES), default=1 << 20,
                        help="elements of the full vector, at most 2**40 (default 2**20)")
    parser.add_argument("--steps", action="store_true", help="print every step of every rank")


def main(args: argparse.Namespace) -> int:
    """Print each algorithm's schedule summary (or its steps with ``--steps``)."""
    args.algorithms = served("--algorithms", args.collective, args.algorithms, ALGORITHMS)
    out = console()
    table = Table(title=f"{args.collective}: {args.ranks} ranks, {args.count} elements")
    for column in ("algorithm", "params", "steps", "max elements sent by a rank", "operations"):
        table.add_column(column, overflow="fold")
    with progress("schedule", len(args.algorithms)) as advance:
        for algorithm in args.algorithms:
            advance(f"{algorithm}: build and verify", 0)
            schedule = build_schedule(args.collective, algorithm, args.ranks, args.count)
            verify(schedule)
            if args.steps:
                out.print(schedule.to_text(), highlight=False)
            sent = max(schedule.sent_elements(r) for r in range(args.ranks))
            operations = sum(len(step.ops) for steps in schedule for step in steps)
            params = ", ".join(f"{k}={v}" for k, v in schedule.params) or "-"
            table.add_row(algorithm, params, str(schedule.num_steps()), str(sent),
                          str(operations))
            advance(algorithm)
    out.print(table)
    return 0
