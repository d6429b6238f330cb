"""The ``collsim`` command: one entry point, one module per subcommand.

Each subcommand module defines ``add_arguments(parser)`` and ``main(args) -> int``; it is
imported only when its subcommand runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

__all__ = ["COMMANDS", "main"]

#: subcommand -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "schedule": ("collsim.schedule", "print a schedule step by step, or summarise it"),
    "simulate": ("collsim.simulate", "predict time, algbw and busbw per size and algorithm"),
    "calibrate": ("collsim.calibrate", "measure alpha, beta, gamma; write a topology file"),
    "select": ("collsim.select", "tuning table: best algorithm per size, crossovers, exports"),
    "predict": ("collsim.predict", "under mpirun: calibrate, predict and measure each algorithm"),
    "bench": ("collsim.bench.cli", "time every algorithm beside native under mpirun (nccl-tests)"),
    "tune": ("collsim.tune", "under mpirun: time every candidate, write the table auto reads"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; return its exit status.

    Parameters
    ----------
    argv : sequence of str or None, optional
        The arguments after ``collsim``; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        The subcommand's exit status (0 when it returns None).

    Raises
    ------
    SystemExit
        From argparse, for ``--help`` or arguments it rejects.
    """
    parser = argparse.ArgumentParser(
        prog="collsim", description="Collective algorithms from one schedule: run, benchmark, "
        "simulate, select and calibrate.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    args_list = list(sys.argv[1:] if argv is None else argv)
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if args_list and args_list[0] == name:
            importlib.import_module(module_name).add_arguments(sub_parser)
    args = parser.parse_args(args_list)
    return int(importlib.import_module(COMMANDS[args.command][0]).main(args) or 0)

