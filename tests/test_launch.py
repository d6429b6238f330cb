"""The mpirun command line, and forwarding a command's arguments to the ranks it launches."""

from __future__ import annotations

import argparse
import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collsim.jobs import descendants, end_job
from collsim.launch import (PLACEMENT, TIMED_OUT, forwarded_arguments, mpirun_command,
                            run_mpi)

ROOT = Path(__file__).resolve().parents[1]

#: a benchmark that runs for minutes on 2 ranks unless it is ended
_LONG_BENCH = [sys.executable, "-m", "collsim.cli", "bench", "--ranks", "2", "-b", "8",
               "-e", "16M", "-n", "100000", "--topology", "none", "--algorithms", "ring"]


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


def _ranks_of(process: subprocess.Popen[str]) -> list[int]:
    """Wait until ``process`` has launched its 2 ranks; return it and every process below."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        below = descendants(process.pid)
        ranks = [pid for pid in below if _cmdline(pid).startswith(sys.executable)]
        if len(ranks) == 2:
            time.sleep(1.0)  # inside the benchmark's loop
            return descendants(process.pid)
        time.sleep(0.2)
    process.kill()
    raise AssertionError("the benchmark launched no ranks in 120 s")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still run (zombies excluded), half a second after the end."""
    time.sleep(0.5)
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def _default_stop_signals() -> None:
    """In the child before it runs the command: SIGTERM and SIGHUP to their defaults."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _bench(extra: list[str], signum: int | None) -> tuple[subprocess.Popen[str], str, list[int]]:
    """Run the long benchmark, send it ``signum`` once its ranks run (None: let it time
    out); return it, its stderr and the processes of its job still running after it
    ended (which are then killed, so that a failing test leaves nothing running)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # the command starts with the signals' default handlers, as from a shell: under
    # nohup SIGHUP is ignored and the ignoring inherited, which the command puts back
    process = subprocess.Popen([*_LONG_BENCH, *extra], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=_default_stop_signals)
    job: list[int] = []
    try:
        job = _ranks_of(process)
        assert any(Path(_cmdline(pid).split("\0")[0]).name in ("prterun", "mpirun")
                   for pid in job)  # the job ran under mpirun
        if signum is not None:
            process.send_signal(signum)
        err = process.communicate(timeout=120)[1]
    finally:
        left = _alive(job)
        if process.poll() is None:
            end_job(process, grace_s=5)
        for pid in _alive(left):
            os.kill(pid, signal.SIGKILL)
    return process, err, left


@pytest.mark.mpi
def test_sigterm_sighup_and_the_timeout_end_the_whole_job() -> None:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        process, _, left = _bench([], signum)
        assert process.returncode == -signum  # ended as the signal ends a command
        assert left == [], f"outlived {signum.name}"
    process, err, left = _bench(["--timeout", "8"], None)
    assert process.returncode == TIMED_OUT and err.endswith(
        "collsim bench: the job ran past --timeout 8 s and was ended (every rank); give a "
        "larger --timeout\n")
    assert left == [], "outlived the timeout"
