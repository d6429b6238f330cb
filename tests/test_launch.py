"""The mpirun command line, and forwarding a command's arguments to the ranks it launches."""

from __future__ import annotations

import argparse
import ast
import os
import sys
from pathlib import Path

import pytest

from collsim.launch import PLACEMENT, forwarded_arguments, mpirun_command, run_mpi


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



def test_ranks_are_bound_to_cores_in_order_also_when_oversubscribed() -> None:
    command = mpirun_command(4, ["-c", "pass"])
    assert command[1:1 + len(PLACEMENT)] == list(PLACEMENT)
    assert command[1 + len(PLACEMENT):] == ["-n", "4", sys.executable, "-m", "mpi4py", "-c",
                                            "pass"]


@pytest.mark.mpi
def test_consecutive_ranks_share_a_core_each_bound_to_it() -> None:
    cores = len(os.sched_getaffinity(0))
    code = ("import os; print('rank', os.environ['OMPI_COMM_WORLD_RANK'], "
            "sorted(os.sched_getaffinity(0)))")
    result = run_mpi(2 * cores, ["-c", code], timeout_s=60)
    assert result.returncode == 0, result.stderr[-2000:]
    bound = {}
    for line in result.stdout.splitlines():
        if line.startswith("rank "):
            rank, affinity = line[len("rank "):].split(" ", 1)
            bound[int(rank)] = tuple(ast.literal_eval(affinity))
    assert sorted(bound) == list(range(2 * cores))
    assert all(len(affinity) == 1 for affinity in bound.values())
    assert len(set(bound.values())) == cores
    assert all(bound[2 * k] == bound[2 * k + 1] for k in range(cores))
