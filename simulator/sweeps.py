"""Simulated sweeps in parallel, with progress on stderr.

``method="simulate"`` tables play every candidate under every protocol over the size
sweep; each (protocol, candidate) is one job.  :func:`run_jobs` runs them

* under ``mpirun`` with ``COLLSIM_POOL=mpi``, on the ranks of the job through
  ``mpi4py.futures.MPIPoolExecutor`` (start the command as
  ``mpirun -n N python -m mpi4py.futures -m collsim.cli select ...``);
* otherwise, from :data:`PARALLEL_FROM_RANKS` ranks on, in a process per core
  (``concurrent.futures.ProcessPoolExecutor``; ``COLLSIM_SIMULATE_WORKERS`` sets how many,
  1 runs them here);
* smaller tables here, one after another (starting processes would cost more).

A bar on stderr (rich) counts the jobs done when stderr is a terminal.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import nullcontext
from typing import Any, Callable, Sequence

__all__ = ["PARALLEL_FROM_RANKS", "POOL_ENV", "WORKERS_ENV", "run_jobs"]

#: tables on at least so many ranks simulate in a process per core
PARALLEL_FROM_RANKS = 16
#: ``mpi``: run the jobs on the ranks of an ``mpirun`` job (mpi4py.futures)
POOL_ENV = "COLLSIM_POOL"
#: processes for the jobs on one host (default: the cores)
WORKERS_ENV = "COLLSIM_SIMULATE_WORKERS"


def _executor(nranks: int, jobs: int) -> Executor | None:
    """The executor for ``jobs`` jobs of a table on ``nranks`` ranks; None: run here."""
    if os.environ.get(POOL_ENV) == "mpi":
        from mpi4py.futures import MPIPoolExecutor

        return MPIPoolExecutor()
    workers = int(os.environ.get(WORKERS_ENV, os.cpu_count() or 1))
    if workers < 2 or jobs < 2 or nranks < PARALLEL_FROM_RANKS:
        return None
    return ProcessPoolExecutor(max_workers=min(workers, jobs))


def _bar(description: str, total: int) -> Any:
    """A transient rich bar on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


def run_jobs(function: Callable[..., Any], jobs: Sequence[tuple[Any, ...]], nranks: int,
             description: str) -> list[Any]:
    """``[function(*job) for job in jobs]``, in parallel where it pays (module docstring).

    Parameters
    ----------
    function : callable
        A module-level function (it is pickled to the workers).
    jobs : sequence of tuple
        Its arguments, one tuple per call (picklable).
    nranks : int
        Ranks of the table, which decides whether processes pay.
    description : str
        What the bar says.

    Returns
    -------
    list
        The results, in the order of ``jobs``.
    """
    bar = _bar(description, len(jobs))
    with bar if bar is not None else nullcontext():
        task = bar.add_task(description, total=len(jobs)) if bar is not None else None
        executor = _executor(nranks, len(jobs))
        if executor is None:
            out = []
            for job in jobs:
                out.append(function(*job))
                if bar is not None:
                    bar.advance(task)
            return out
        with executor:
            futures = {executor.submit(function, *job): k for k, job in enumerate(jobs)}
            results: list[Any] = [None] * len(jobs)
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if bar is not None:
                    bar.advance(task)
        return results
