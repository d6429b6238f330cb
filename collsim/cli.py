"""The ``collsim`` command: one entry point, one module per subcommand.

Each subcommand module defines ``add_arguments(parser)`` and ``main(args) -> int``; it is
imported only when its subcommand runs.  A bad argument, whether argparse or the command
finds it (:class:`collsim.args.UsageError`, raised before anything launches or measures),
ends the command with one line on stderr, ``collsim CMD: error: ...``, and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn, Sequence

from .args import UsageError

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
    "fit": ("collsim.fit.cli", "fit the GPU model to nccl-tests output; score a machine on a log"),
}


#: flags these commands took before they followed nccl-tests (issue 17) -> the flag now
RENAMED: dict[str, str] = {"-t": "--topology", "-p": "--ranks", "--np": "--ranks",
                           "--nprocs": "--ranks", "--nranks": "--ranks", "-a": "--algorithms",
                           "-C": "--collective", "--dtype-size": "-d/--datatype",
                           "--iters": "-n/--iters", "--warmup": "-w/--warmup_iters",
                           "--array-module": "--buffer", "--nnodes": "--nodes",
                           "-o": "--output", "-c": "--count"}


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block)."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: message`` on stderr and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; return its exit status.

    Parameters
    ----------
    argv : sequence of str or None, optional
        The arguments after ``collsim``; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        The subcommand's exit status (0 when it returns None; 2 for a
        :class:`~collsim.args.UsageError`).

    Raises
    ------
    SystemExit
        From argparse: status 0 for ``--help``, 2 for arguments it rejects.
    """
    parser = _Parser(
        prog="collsim", description="Collective algorithms from one schedule: run, benchmark, "
        "simulate, select and calibrate.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    args_list = list(sys.argv[1:] if argv is None else argv)
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if args_list and args_list[0] == name:
            importlib.import_module(module_name).add_arguments(sub_parser)
    if args_list and args_list[0] in COMMANDS:
        _refuse_renamed(sub.choices[args_list[0]], args_list[1:])
    args = parser.parse_args(args_list)
    try:
        return int(importlib.import_module(COMMANDS[args.command][0]).main(args) or 0)
    except UsageError as error:
        print(f"collsim {args.command}: error: {error}", file=sys.stderr)
        return 2


def _refuse_renamed(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Exit with one line when ``argv`` has a flag this command no longer takes."""
    for token in argv:
        if token in RENAMED and token not in parser._option_string_actions:  # no public map
            parser.error(f"{token} is not a flag of {parser.prog}; did you mean "
                         f"{RENAMED[token]}? (see the README's flag table)")


if __name__ == "__main__":  # python -m collsim.cli, as python -m collsim
    sys.exit(main())
