"""Forwarding a command's arguments to the ranks it launches."""

from __future__ import annotations

import argparse
from pathlib import Path

from collectives.launch import forwarded_arguments


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("collective", nargs="?", default="allreduce")
    parser.add_argument("-n", "--nprocs", type=int, default=4)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--quiet", action="store_true")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    _add(parser)
    return parser.parse_args(argv)


def test_every_argument_round_trips_and_defaults_stay_out() -> None:
    args = _parse(["allgather", "--sizes", "1", "2", "3", "--plot", "x.png", "--quiet"])
    argv = forwarded_arguments(args, _add)
    assert argv == ["allgather", "--sizes", "1", "2", "3", "--plot", "x.png", "--quiet"]
    assert vars(_parse(argv)) == vars(args)
    assert forwarded_arguments(_parse([]), _add) == ["allreduce"]
