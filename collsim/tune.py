"""``collsim tune``: time every candidate on the running job and write the table ``auto`` reads.

Under ``mpirun -n N python -m collsim tune --output FILE`` (or ``collsim tune --ranks N
--output FILE``, which launches that job) every candidate -- MPI's own collective
(``native``) and each algorithm with each of its parameters the simulator's tables try
(:func:`simulator.selection.candidates`) -- is timed on the job's ranks over a size sweep,
per collective and element size.  Sizes follow nccl-tests: the full vector's bytes,
rounded down to whole elements on every rank.  Each time is the slowest rank's mean over
``-n`` calls after ``-w`` warm-up calls (``--per-call``: the least over single calls each
timed after a barrier), the least of ``--rounds`` rounds that visit the candidates in turn
(a shared machine's noise hits every candidate alike).  Between
measured sizes the choice follows the least of the piecewise-linear interpolations, as
for predicted tables (:func:`simulator.selection.measured_table`).

Rank 0 writes ``FILE`` as a :class:`collectives.tuning.Tuning` (``COLLSIM_TUNING=FILE``
or :func:`collectives.auto.use_tuning` make ``auto`` read it), and, when asked, the same
choices for Open MPI's coll/tuned (``--ompi-rules``).  (NCCL's tuner file names NCCL's own
algorithms, which the measured schedules are not: ``collsim select --nccl-csv`` writes it
from the model.)  A progress bar goes to rank 0's stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from collectives.build import ALGORITHMS
from collectives.schedule import BLOCK_COLLECTIVES as COLLECTIVES

from .args import (MAX_ITERS, MAX_STEPFACTOR, MAX_TIMEOUT_S, UsageError, check_distinct,
                   check_memory, check_output, launch_limit, seconds, size, whole)
from .launch import in_mpi_job

__all__ = ["add_arguments", "main", "Sweep", "candidates", "sweep_sizes", "measure",
           "slowest_seconds", "tables", "PROGRESS_ENV"]

#: set to 1 by ``collsim tune --ranks N`` when its own stderr is a terminal, so that rank 0
#: (whose stderr mpirun turns into a pipe) still draws the progress bar
PROGRESS_ENV = "COLLSIM_PROGRESS"

#: what ``--algorithms`` takes: the schedules and MPI's own collective
_CANDIDATES = (*ALGORITHMS, "native")

Params = tuple[tuple[str, Any], ...]


def _dtype(text: str) -> str:
    from collectives.ops import ALL_DTYPES, check_dtype
    try:
        return check_dtype(np.dtype(text))
    except TypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; choose one of "
                                         f"{list(ALL_DTYPES)}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``collsim tune``'s arguments (nccl-tests' ``-b -e -f -n -w``) to ``parser``."""
    parser.add_argument("--output", type=Path, required=True,
                        help="tuning file to write (JSON, collectives.tuning)")
    parser.add_argument("-b", "--minbytes", type=size(), default=8,
                        help="smallest size, bytes, with suffix K, M, G or T, at most 1T "
                             "(default 8)")
    parser.add_argument("-e", "--maxbytes", type=size(), default=16 << 20,
                        help="largest size, at most 1T (default 16M)")
    parser.add_argument("-f", "--stepfactor", type=whole(1, MAX_STEPFACTOR), default=4,
                        help=f"multiply the size by this between sizes, 1 to {MAX_STEPFACTOR} "
                             "(1: -b and -e only; default 4)")
    parser.add_argument("-n", "--iters", type=whole(1, MAX_ITERS), default=10,
                        help=f"timed calls per candidate, size and round, at most {MAX_ITERS} "
                             "(default 10)")
    parser.add_argument("-w", "--warmup_iters", type=whole(0, MAX_ITERS), default=2,
                        help=f"untimed calls before them, at most {MAX_ITERS} (default 2)")
    parser.add_argument("--rounds", type=whole(1, MAX_ITERS), default=2,
                        help="rounds over the candidates; the least time counts (default 2)")
    parser.add_argument("--per-call", action="store_true",
                        help="time calls one by one after a barrier; the least counts "
                             "(steadier on a shared, loaded machine)")
    parser.add_argument("--unchecked", action="store_true",
                        help="time every candidate with check=False (native without its "
                             "hellos), for a job that calls them so")
    parser.add_argument("--collectives", nargs="+", choices=COLLECTIVES,
                        default=list(COLLECTIVES), help="collectives to tune (default all; auto reads tables of these three)")
    parser.add_argument("--algorithms", nargs="+", choices=_CANDIDATES,
                        default=list(_CANDIDATES), help="candidates (default all, native too)")
    parser.add_argument("--dtypes", nargs="+", type=_dtype, default=["float32"],
                        help="element types; one table per element size (default float32)")
    parser.add_argument("--ranks", type=whole(1, launch_limit()), default=4,
                        help="ranks to launch when not already under mpirun, at most "
                             f"{launch_limit()} (default 4)")
    parser.add_argument("--ompi-rules", type=Path,
                        help="also write Open MPI coll/tuned dynamic rules")
    parser.add_argument("--timeout", type=seconds(), default=3600.0,
                        help=f"seconds before a launched job is ended, at most "
                             f"{MAX_TIMEOUT_S:g} (default 3600)")


def candidates(collective: str, algorithms: Sequence[str]) -> list[tuple[str, Params]]:
    """``native`` (first: it wins ties), then the simulator's candidates of ``algorithms``.

    Parameters
    ----------
    collective : str
        The collective.
    algorithms : sequence of str
        Algorithms to try, ``native`` among them or not.

    Returns
    -------
    list of (str, params)

    Examples
    --------
    >>> [a for a, _ in candidates("allreduce", ["ring", "tree", "native"])]
    ['native', 'ring', 'tree', 'tree', 'tree']
    """
    from simulator.selection import candidates as simulated
    ours = [(a, p) for a, p in simulated(collective) if a in algorithms]
    return ([("native", ())] if "native" in algorithms else []) + ours


def sweep_sizes(collective: str, minbytes: int, maxbytes: int, factor: int, nranks: int,
                itemsize: int) -> list[int]:
    """Working-buffer elements per size of the sweep, distinct and increasing.

    Parameters
    ----------
    collective : str
        The collective.
    minbytes, maxbytes : int
        The sweep's first and last size, bytes of the full vector.
    factor : int
        Ratio between consecutive sizes.
    nranks, itemsize : int
        Ranks and bytes per element.

    Returns
    -------
    list of int
        Element counts of the working buffer (multiples of ``nranks`` for ReduceScatter
        and AllGather, at least one element per rank).

    Examples
    --------
    >>> sweep_sizes("allgather", 8, 1024, 4, 4, 4)
    [4, 8, 32, 128, 256]
    """
    counts, nbytes = [], minbytes
    while nbytes <= maxbytes:
        count = nbytes // itemsize
        if collective != "allreduce":
            count = max(count // nranks * nranks, nranks)
        counts.append(count)
        if nbytes == maxbytes:
            break
        nbytes = min(nbytes * factor, maxbytes) if factor > 1 else maxbytes
    return sorted(set(counts))


@dataclass(frozen=True)
class Sweep:
    """What to measure: nccl-tests' iteration counts, the candidates' rounds, whether the
    least single call counts instead of the mean, and the ``check`` every call passes
    (False: ``native`` without its hellos, as the job will call it)."""

    iters: int
    warmup: int
    rounds: int
    per_call: bool = False
    check: bool | None = None


def _buffers(collective: str, count: int, nranks: int, dtype: str) -> tuple[np.ndarray, ...]:
    part = count // nranks
    whole = np.ones(count, dtype)
    if collective == "allreduce":
        return whole, np.empty(count, dtype)
    if collective == "reduce_scatter":
        return whole, np.empty(part, dtype)
    return np.ones(part, dtype), np.empty(count, dtype)


def slowest_seconds(world: Any, call: Callable[[], Any], iters: int, per_call: bool) -> float:
    """Seconds per ``call()`` on the slowest rank of ``world``.

    Parameters
    ----------
    world : mpi4py.MPI.Intracomm
        The ranks that call together.
    call : callable
        One collective call, no arguments.
    iters : int
        Timed calls.
    per_call : bool
        Time each call alone after a barrier and return the least over the calls of the
        slowest rank's time (OSU's least latency: steadier on a shared machine); else the
        slowest rank's mean over ``iters`` calls in a row.

    Returns
    -------
    float
    """
    from mpi4py import MPI
    if per_call:
        times = np.empty(iters)
        for i in range(iters):
            world.Barrier()
            start = time.perf_counter()
            call()
            times[i] = time.perf_counter() - start
        slowest = np.empty_like(times)
        world.Allreduce(times, slowest, op=MPI.MAX)
        return float(slowest.min())
    world.Barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call()
    return world.allreduce((time.perf_counter() - start) / iters, op=MPI.MAX)


def _time(world: Any, call: Callable[[], Any], sweep: Sweep) -> float:
    """:func:`slowest_seconds` of ``call`` after the sweep's warm-up calls."""
    for _ in range(sweep.warmup):
        call()
    return slowest_seconds(world, call, sweep.iters, sweep.per_call)


def measure(world: Any, collective: str, dtype: str, counts: Sequence[int],
            tried: Sequence[tuple[str, Params]], sweep: Sweep,
            advance: Callable[[str], None]) -> list[list[float]]:
    """Every candidate's time at every size: ``times[i][c]`` seconds.

    Parameters
    ----------
    world : mpi4py.MPI.Intracomm
        The job's ranks.
    collective, dtype : str
        What to run.
    counts : sequence of int
        Working-buffer elements per size (:func:`sweep_sizes`).
    tried : sequence of (str, params)
        The candidates (:func:`candidates`).
    sweep : Sweep
        Iterations and rounds.
    advance : callable
        Called with a description after each (size, candidate, round).

    Returns
    -------
    list of list of float
        The same on every rank.
    """
    import collectives
    function = getattr(collectives, collective)
    nranks = world.Get_size()
    times = []
    for count in counts:
        send, recv = _buffers(collective, count, nranks, dtype)
        row = [float("inf")] * len(tried)
        for _ in range(sweep.rounds):
            for c, (algorithm, params) in enumerate(tried):
                def call() -> Any:
                    return function(send, recv, comm=world, algorithm=algorithm,
                                    check=sweep.check, **dict(params))
                row[c] = min(row[c], _time(world, call, sweep))
                advance(f"{collective} {dtype} {count * send.itemsize} B {algorithm}")
        times.append(row)
    return times


def tables(world: Any, args: argparse.Namespace, advance: Callable[[str], None]) -> list[Any]:
    """Measure every collective at every element size; one measured table each.

    Parameters
    ----------
    world : mpi4py.MPI.Intracomm
        The job's ranks.
    args : argparse.Namespace
        ``collsim tune``'s arguments.
    advance : callable
        The progress bar's step.

    Returns
    -------
    list of simulator.TuningTable
    """
    from simulator.selection import measured_table
    nranks = world.Get_size()
    sweep = Sweep(args.iters, args.warmup_iters, args.rounds, args.per_call,
                  False if args.unchecked else None)
    source = f"measured on {socket.gethostname()}"
    out = []
    for dtype in _by_size(args.dtypes):
        itemsize = np.dtype(dtype).itemsize
        for collective in args.collectives:
            counts = sweep_sizes(collective, args.minbytes, args.maxbytes, args.stepfactor,
                                 nranks, itemsize)
            tried = candidates(collective, args.algorithms)
            times = measure(world, collective, dtype, counts, tried, sweep, advance)
            out.append(measured_table(collective, source, nranks, itemsize, tried,
                                      [c * itemsize for c in counts], times))
    return out


def _by_size(dtypes: Sequence[str]) -> list[str]:
    """The first dtype of each element size."""
    first: dict[int, str] = {}
    for dtype in dtypes:
        first.setdefault(np.dtype(dtype).itemsize, dtype)
    return list(first.values())


def _steps(args: argparse.Namespace, nranks: int) -> int:
    return sum(len(sweep_sizes(c, args.minbytes, args.maxbytes, args.stepfactor, nranks,
                               np.dtype(d).itemsize))
               * len(candidates(c, args.algorithms)) * args.rounds
               for d in _by_size(args.dtypes) for c in args.collectives)


def _progress(total: int, enabled: bool) -> tuple[Callable[[str], None], Callable[[], None]]:
    """A rich progress bar on stderr: ``(advance, stop)``; no-ops when not ``enabled``."""
    if not enabled:
        return (lambda text: None), (lambda: None)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("{task.description:<44}"), BarColumn(),
                   TextColumn("{task.completed}/{task.total}"), TimeRemainingColumn(),
                   console=Console(stderr=True, force_terminal=True), transient=True)
    task = bar.add_task("tune", total=total)
    bar.start()
    return (lambda text: bar.update(task, advance=1, description=text)), bar.stop


def check_args(args: argparse.Namespace) -> None:
    """Raise UsageError for arguments that disagree, before any job starts.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Raises
    ------
    UsageError
        If ``-b`` exceeds ``-e``, a collective or candidate is named twice, buffers of
        ``-e`` bytes do not fit in the launched ranks' memory, or an output cannot be
        written (:func:`collsim.args.check_output`).
    """
    if args.minbytes > args.maxbytes:
        raise UsageError(f"-b {args.minbytes} is larger than -e {args.maxbytes}; "
                         "need minbytes <= maxbytes")
    for flag in ("--collectives", "--algorithms"):
        check_distinct(flag, getattr(args, flag[2:]))
    if not in_mpi_job():
        check_memory("-e", args.maxbytes, args.ranks)
    for flag, path in (("--output", args.output), ("--ompi-rules", args.ompi_rules)):
        check_output(flag, path)


def _write(args: argparse.Namespace, measured: list[Any]) -> list[str]:
    """Write the tuning file and the exports asked for; return what was written."""
    from collectives.tuning import Tuning
    from simulator.export import to_ompi_rules
    from simulator.for_auto import tuning_rules
    rules = [rule for table in measured for rule in tuning_rules([table], table.dtype_size)]
    source = f"measured: collsim {' '.join(sys.argv[1:])}"
    Tuning.from_rules(rules, source).save(args.output)
    written = [str(args.output)]
    if args.ompi_rules is not None:
        first = [t for t in measured if t.dtype_size == measured[0].dtype_size]
        args.ompi_rules.write_text(to_ompi_rules(first))
        written.append(str(args.ompi_rules))
    return written


def _summary(measured: list[Any]) -> str:
    lines = []
    for table in measured:
        shown = ", ".join(f"{r.min_bytes}-{r.max_bytes if r.max_bytes < 1 << 62 else 'inf'} B "
                          f"{_label(table.candidates[r.index])}" for r in table.ranges)
        lines.append(f"# {table.collective}, {table.dtype_size}-byte elements: {shown}")
    return "\n".join(lines)


def _label(candidate: tuple[str, Params]) -> str:
    algorithm, params = candidate
    return algorithm + "".join(f" {k}={v}" for k, v in params)


def main(args: argparse.Namespace) -> int:
    """Run ``collsim tune``: launch the job, or measure on it and write the files.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments (:func:`add_arguments`).

    Returns
    -------
    int
        0 on success; the job's exit status when it was launched.
    """
    from .launch import relaunch
    check_args(args)
    if not in_mpi_job():
        if sys.stderr.isatty():
            os.environ[PROGRESS_ENV] = "1"
        return relaunch("tune", args, add_arguments, args.ranks, args.timeout)
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    rank = world.Get_rank()
    shown = rank == 0 and (sys.stderr.isatty() or os.environ.get(PROGRESS_ENV) == "1")
    advance, stop = _progress(_steps(args, world.Get_size()), shown)
    try:
        measured = tables(world, args, advance)
    finally:
        stop()
    if rank == 0:
        print(_summary(measured))
        print("# wrote " + ", ".join(_write(args, measured)))
    return 0
