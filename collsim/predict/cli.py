"""The ``collsim predict`` command line: time, calibrate, predict and report on one MPI job.

Outside ``mpirun`` :func:`main` launches ``-n`` ranks that run this command
(:func:`collsim.launch.relaunch`); under ``mpirun`` :func:`_run` times the calibration runs
and every candidate in the same rounds (:mod:`.measurement`), fits the host model on the
former (:mod:`.fitting`), predicts (:mod:`.predictor`) and, on rank 0, reports
(:mod:`.report`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .fitting import fit_calibration
from .measurement import calibration_jobs, candidate_jobs, job_cores, measure_all
from .predictor import HostPredictor
from .report import compare, describe_fit, plot_points, print_report, summarize

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    from ..sizes import parse_size

    parser.add_argument("collective", nargs="?", default="allreduce",
                        choices=("allreduce", "reduce_scatter", "allgather"))
    parser.add_argument("-n", "--nprocs", type=int, default=4,
                        help="ranks to launch when not under mpirun (default 4)")
    parser.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("1K"))
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("16M"))
    parser.add_argument("-f", "--stepfactor", type=int, default=2)
    parser.add_argument("--iters", type=int, default=30,
                        help="timed calls per point, one per round (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    parser.add_argument("--plot", type=Path, default=None, metavar="PNG",
                        help="draw predicted and measured times")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="write every point and the summary as JSON")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds before a launched job is killed")


def _check(args: argparse.Namespace) -> None:
    """Exit with a message naming the flag when an argument is out of range."""
    for name, minimum in (("nprocs", 2), ("iters", 1), ("warmup", 0), ("stepfactor", 2)):
        if getattr(args, name) < minimum:
            raise SystemExit(f"--{name} {getattr(args, name)} is not allowed; it must be "
                             f">= {minimum}")
    if not 1 <= args.minbytes <= args.maxbytes:
        raise SystemExit(f"-b {args.minbytes} -e {args.maxbytes} is not allowed; "
                         "need 1 <= -b <= -e")


def _sizes(args: argparse.Namespace, p: int) -> list[int]:
    """The sizes of ``-b``, ``-e`` and ``-f``, rounded down to whole float32 blocks of ``p``
    ranks."""
    sizes, size = [], args.minbytes
    quantum = 4 * p  # whole float32 blocks per rank, so every collective takes the size
    while size <= args.maxbytes:
        sizes.append(max(quantum, size - size % quantum))
        size *= args.stepfactor
    return sorted(set(sizes))


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
    times = measure_all(comm, calibration + candidates, args.iters, args.warmup)
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
    """Run on this MPI job, or launch one on ``args.nprocs`` ranks that does."""
    _check(args)
    from collsim.launch import in_mpi_job, relaunch

    if not in_mpi_job():
        return relaunch("predict", args, add_arguments, args.nprocs, args.timeout)
    return _run(args)
