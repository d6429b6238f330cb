"""The ``collsim predict`` command line: time, calibrate, predict and report on one MPI job.

Outside ``mpirun`` :func:`main` checks the arguments (:mod:`collsim.args`) and launches
``--ranks`` ranks that run this command (:func:`collsim.launch.relaunch`); under ``mpirun`` :func:`_run` times the calibration runs
and every candidate in the same rounds (:mod:`.measurement`), fits the host model on the
former (:mod:`.fitting`), predicts (:mod:`.predictor`) and, on rank 0, reports
(:mod:`.report`).  Rank 0 shows the timing rounds' progress on stderr
(:mod:`collsim.terminal`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..args import (MAX_ITERS, MAX_TIMEOUT_S, UsageError, add_sweep, check_memory,
                    check_output, launch_limit, seconds, sweep, whole)
from ..launch import in_mpi_job
from ..terminal import progress
from .fitting import fit_calibration
from .measurement import calibration_jobs, candidate_jobs, job_cores, measure_all
from .predictor import HostPredictor
from .report import compare, describe_fit, plot_points, print_report, summarize

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("collective", nargs="?", default="allreduce",
                        choices=("allreduce", "reduce_scatter", "allgather"))
    parser.add_argument("--ranks", type=whole(2, launch_limit()), default=4, metavar="N",
                        help=f"ranks to launch when not under mpirun, 2 to {launch_limit()} "
                             "(default 4)")
    add_sweep(parser, 1 << 10, 16 << 20, stepfactor=2)
    parser.add_argument("-n", "--iters", type=whole(1, MAX_ITERS), default=30,
                        help=f"timed calls per point, one per round, at most {MAX_ITERS} "
                             "(default 30)")
    parser.add_argument("-w", "--warmup_iters", type=whole(0, MAX_ITERS), default=3,
                        help=f"untimed calls first, at most {MAX_ITERS} (default 3)")
    parser.add_argument("--plot", type=Path, default=None, metavar="PNG",
                        help="draw predicted and measured times")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="write every point and the summary as JSON")
    parser.add_argument("--timeout", type=seconds(), default=900.0,
                        help=f"seconds before a launched job is ended, at most "
                             f"{MAX_TIMEOUT_S:g} (default 900)")


def _check(args: argparse.Namespace) -> None:
    """Raise UsageError naming the flag when an argument is out of range."""
    if args.minbytes < 1:
        raise UsageError(f"-b {args.minbytes} is not allowed; it must be >= 1")
    sweep(args)
    if not in_mpi_job():
        check_memory("-e", args.maxbytes, args.ranks)
    check_output("--plot", args.plot)
    check_output("--json", args.json)


def _sizes(args: argparse.Namespace, p: int) -> list[int]:
    """The sizes of ``-b``, ``-e`` and ``-f`` or ``-i``, rounded down to whole float32
    blocks of ``p`` ranks."""
    quantum = 4 * p  # whole float32 blocks per rank, so every collective takes the size
    return sorted({max(quantum, size - size % quantum) for size in sweep(args)})


def _run(args: argparse.Namespace) -> int:
    """Time, fit, predict and compare on this MPI job; rank 0 reports."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    p = comm.Get_size()
    from simulator.selection import Candidate

    # the calibration runs and every candidate at every size, timed in the same rounds so
    # that other load on the machine falls on both alike; the fit sees only the former
    sizes = _sizes(args, p)
    calibration, candidates = calibration_jobs(p), candidate_jobs(args.collective, sizes)
    with progress("predict: timing", args.iters, enabled=comm.Get_rank() == 0) as advance:
        times = measure_all(comm, calibration + candidates, args.iters, args.warmup_iters,
                            progress=advance)
    fit = fit_calibration(p, calibration, times[:len(calibration)], job_cores(comm))
    table = HostPredictor(args.collective, p, fit)
    measured = {(n, a, Candidate(a, tuple(params.items()), 0.0).label): t
                for (_, n, a, params), t in zip(candidates, times[len(calibration):])}
    points = compare(table, sizes, measured, fit.overhead_s)
    if comm.Get_rank() != 0:
        return 0
    summary = summarize(points)
    title = f"{args.collective}, {p} ranks, float32 NumPy: predicted vs measured"
    print(describe_fit(fit, p))
    print_report(points, summary, title)
    if args.plot is not None:
        plot_points(points, args.plot, title)
        print(f"plot written to {args.plot}")
    if args.json is not None:
        runs = [{"collective": c, "nbytes": n, "algorithm": a, "params": params, "measured_s": t,
                 "calibration": j < len(calibration)}
                for j, ((c, n, a, params), t) in enumerate(zip(calibration + candidates, times))]
        args.json.write_text(json.dumps({"calibration": fit.to_dict(), "points": points,
                                         "summary": summary, "runs": runs}, indent=1))
        print(f"JSON written to {args.json}")
    return 0


def main(args: argparse.Namespace) -> int:
    """Run on this MPI job, or launch one on ``args.ranks`` ranks that does."""
    _check(args)
    from collsim.launch import relaunch

    if not in_mpi_job():
        return relaunch("predict", args, add_arguments, args.ranks, args.timeout)
    return _run(args)
