"""``collsim schedule``: build a schedule, verify it and print it or a summary."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from .build import ALGORITHMS, build_schedule
from .schedule import COLLECTIVES
from .verify import verify

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("collective", nargs="?", default="allreduce", choices=COLLECTIVES)
    parser.add_argument("-a", "--algorithms", nargs="+", default=list(ALGORITHMS),
                        choices=ALGORITHMS, metavar="ALGO")
    parser.add_argument("-p", "--nranks", type=int, default=8, help="ranks (default 8)")
    parser.add_argument("-c", "--count", type=int, default=1 << 20,
                        help="elements of the full vector (default 2**20)")
    parser.add_argument("--steps", action="store_true", help="print every step of every rank")


def main(args: argparse.Namespace) -> int:
    """Print each algorithm's schedule summary (or its steps with ``--steps``)."""
    console = Console()
    table = Table(title=f"{args.collective}: {args.nranks} ranks, {args.count} elements")
    for column in ("algorithm", "params", "steps", "max elements sent by a rank", "operations"):
        table.add_column(column)
    for algorithm in args.algorithms:
        schedule = build_schedule(args.collective, algorithm, args.nranks, args.count)
        verify(schedule)
        if args.steps:
            console.print(schedule.to_text(), highlight=False)
        sent = max(schedule.sent_elements(r) for r in range(args.nranks))
        operations = sum(len(step.ops) for steps in schedule for step in steps)
        params = ", ".join(f"{k}={v}" for k, v in schedule.params) or "-"
        table.add_row(algorithm, params, str(schedule.num_steps()), str(sent), str(operations))
    console.print(table)
    return 0
