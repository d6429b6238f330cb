"""Timing collectives under MPI: the calibration runs and every candidate, in shuffled rounds.

:func:`measure_all` times jobs (``(collective, nbytes, algorithm, params)``) through the real
MPI executor, in rounds over all of them so that other load on the machine falls on every
job alike; :func:`calibration_jobs` are the runs the host model is fitted to,
:func:`candidate_jobs` those it predicts; :func:`calibrate_loaded` times the former and fits.
Importing this module does not import mpi4py: every function takes the communicator.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any, Callable

import numpy as np

from .fitting import CALIBRATION_SIZES, HostFit, fit_calibration
from .model import IN_PLACE_PARAM, Job, split_params

__all__ = ["CALIBRATION_RUNS", "ORDER_SEED", "calibrate_loaded", "calibration_jobs",
           "candidate_jobs", "job_cores", "measure", "measure_all"]

#: what the calibration times: step counts from 2 to 24 and 1 to 5 messages per step
#: (ring, rhd, tree, pipeline), with a reduction or without; and ring and rhd in place
#: too, so that the executor's local copies (``L`` of :func:`.model.model_terms`: a ReduceScatter
#: copies its whole input, an AllGather one block) are told apart from the schedule's
#: copies and reductions, which grow with the size alike
CALIBRATION_RUNS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("allgather", "ring", {}), ("allgather", "rhd", {}),
    ("allgather", "tree", {"segments": 4}), ("allgather", "pipeline", {"segments": 8}),
    ("reduce_scatter", "ring", {}), ("reduce_scatter", "rhd", {}),
    ("reduce_scatter", "tree", {"segments": 4}),
    ("allgather", "ring", {IN_PLACE_PARAM: True}),
    ("allgather", "rhd", {IN_PLACE_PARAM: True}),
    ("reduce_scatter", "ring", {IN_PLACE_PARAM: True}),
    ("reduce_scatter", "rhd", {IN_PLACE_PARAM: True}))

#: seed of the order in which :func:`measure_all` visits the jobs in each round (the
#: same on every rank, so all ranks call the same collective)
ORDER_SEED = 6


def calibration_jobs(nranks: int) -> list[Job]:
    """The runs :func:`calibrate_loaded` times and fits.

    Parameters
    ----------
    nranks : int
        Number of ranks; every size is rounded down to whole float32 blocks per rank.

    Returns
    -------
    list of Job
        ``(collective, nbytes, algorithm, params)`` for each of :data:`CALIBRATION_RUNS`
        at each of :data:`.fitting.CALIBRATION_SIZES`.
    """
    quantum = 4 * nranks * 8  # whole float32 blocks of 8 segments per rank, never 0 bytes
    return [(collective, n, algorithm, params)
            for collective, algorithm, params in CALIBRATION_RUNS
            for n in sorted({max(quantum, n - n % quantum) for n in CALIBRATION_SIZES})]


def candidate_jobs(collective: str, sizes: list[int]) -> list[Job]:
    """Every candidate of the tuning tables at every size, what :func:`.report.compare`
    needs measured.

    Parameters
    ----------
    collective : str
        Collective name (see :func:`simulator.selection.candidates`).
    sizes : list of int
        Message sizes in bytes.

    Returns
    -------
    list of Job
        ``(collective, nbytes, algorithm, params)``, size-major.
    """
    from simulator.selection import candidates

    return [(collective, n, algorithm, dict(params)) for n in sizes
            for algorithm, params in candidates(collective)]


def job_cores(comm: Any) -> int:
    """Cores the ranks of ``comm`` run on, all together (each may be bound to fewer).

    Collective: call on every rank of ``comm``.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator.

    Returns
    -------
    int
        The number of distinct cores in the ranks' CPU affinities, the same on every rank.
    """
    return len(set().union(*comm.allgather(os.sched_getaffinity(0))))


def measure_all(comm: Any, jobs: list[Job], iters: int, warmup: int,
                rounds: int | None = None,
                progress: Callable[[str], None] | None = None) -> list[float]:
    """Per job: the median over ``iters`` calls of the slowest rank's time for one call.

    The calls are made in ``rounds`` passes over all jobs, each pass in a new shuffled
    order (seeded, the same on every rank), so that other load on the machine, which
    comes and goes over seconds, falls on every job alike: on the calibration runs as on
    the runs predicted from them.  Within a pass the jobs of one size run back to back
    (the sizes and the jobs within a size in shuffled order), so that the algorithms
    compared at a size see the same load in every pass; they share their buffers (one
    pair per collective and size, allocated and touched once), so each finds them as an
    application calling collectives on the same arrays would.  Each job is called
    ``warmup`` times untimed before its first timed call.  Every call follows a barrier
    and is timed on every rank.  Collective: call on every rank.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator to run on.
    jobs : list of Job
        ``(collective, nbytes, algorithm, params)`` per job (float32 buffers).
    iters : int
        Timed calls per job, over all rounds.
    warmup : int
        Untimed calls per job before its first timed call.
    rounds : int or None, optional
        Passes over the jobs; default None: ``iters`` (one timed call per pass).
    progress : callable or None, optional
        Called as ``progress(text)`` after each pass.

    Returns
    -------
    list of float
        Seconds per call, one per job, the same on every rank.

    Raises
    ------
    ValueError
        If ``iters`` or ``rounds`` is below 1 or ``warmup`` below 0.
    """
    rounds = iters if rounds is None else rounds
    for name, value, minimum in (("iters", iters, 1), ("rounds", rounds, 1),
                                 ("warmup", warmup, 0)):
        if value < minimum:
            raise ValueError(f"{name}={value!r} is not allowed; it must be >= {minimum}")
    per_round = [iters // rounds + (r < iters % rounds) for r in range(rounds)]
    samples: list[list[float]] = [[] for _ in jobs]
    by_size: dict[int, list[int]] = {}
    buffers: dict[tuple[str, int, bool], tuple[Any, Any]] = {}
    keys = [(collective, nbytes, split_params(params)[0]) for collective, nbytes, _, params in jobs]
    for j, key in enumerate(keys):
        by_size.setdefault(key[1], []).append(j)
        if key not in buffers:
            buffers[key] = _buffers(comm.Get_size(), *key)
    groups, shuffle = list(by_size.values()), random.Random(ORDER_SEED).shuffle
    for r, timed in enumerate(per_round):
        shuffle(groups)
        for group in groups:
            shuffle(group)
            for j in group:
                collective, nbytes, algorithm, params = jobs[j]
                if timed:
                    samples[j] += _time_calls(comm, buffers[keys[j]], collective,
                                              algorithm, params, timed,
                                              0 if samples[j] else warmup)
        if progress is not None:
            progress(f"round {r + 1} of {rounds}")
    everyone = np.array(comm.allgather(samples))  # rank, job, sample
    return [float(np.median(slowest)) for slowest in everyone.max(axis=0)]


def _buffers(nranks: int, collective: str, nbytes: int, in_place: bool) -> tuple[Any, Any]:
    """Float32 send and receive buffers of ``collective`` for a working buffer of ``nbytes``.

    In place: :data:`collectives.IN_PLACE` and a receive buffer of the whole working
    buffer, zeros (so that the sums called on it again and again stay finite).
    """
    count = nbytes // 4
    if in_place:
        from collectives import IN_PLACE

        return IN_PLACE, np.zeros(count, dtype=np.float32)
    send = np.ones(count // nranks if collective == "allgather" else count, dtype=np.float32)
    recv = np.ones(count // nranks if collective == "reduce_scatter" else count,
                   dtype=np.float32)
    return send, recv


def _call(collective: str) -> Any:
    """The public function of ``collective`` (``collectives.allreduce``, ...)."""
    import collectives

    return getattr(collectives, collective)


def _time_calls(comm: Any, buffers: tuple[Any, Any], collective: str, algorithm: str,
                params: dict[str, Any], timed: int, warmup: int) -> list[float]:
    """Seconds of each of ``timed`` calls on this rank, each after a barrier, after
    ``warmup`` untimed ones."""
    send, recv = buffers
    run = _call(collective)
    params = split_params(params)[1]
    samples = []
    for i in range(warmup + timed):
        comm.Barrier()
        start = time.perf_counter()
        run(send, recv, comm=comm, algorithm=algorithm, **params)
        elapsed = time.perf_counter() - start
        if i >= warmup:
            samples.append(elapsed)
    return samples


def measure(comm: Any, collective: str, nbytes: int, algorithm: str,
            params: dict[str, Any], iters: int, warmup: int) -> float:
    """Median over ``iters`` of the slowest rank's time for one call, seconds.

    Collective: call on every rank of ``comm``; one round (see :func:`measure_all`).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator to run on.
    collective : str
        Collective name.
    nbytes : int
        Message size in bytes (float32 buffers).
    algorithm : str
        Algorithm name.
    params : dict[str, Any]
        Algorithm parameters.
    iters : int
        Timed calls.
    warmup : int
        Untimed calls first.

    Returns
    -------
    float
        Seconds per call.
    """
    return measure_all(comm, [(collective, nbytes, algorithm, params)], iters, warmup, 1)[0]


def calibrate_loaded(comm: Any, iters: int, warmup: int) -> HostFit:
    """Time the calibration runs on ``comm`` and fit the host model to them.

    Every rank busy, oversubscribed as the measurements will be: the AllGather and
    ReduceScatter runs of :data:`CALIBRATION_RUNS` (step and message counts far enough
    apart to tell per-call, per-step and per-message costs apart) through the real MPI
    executor (:func:`measure_all`) at :data:`.fitting.CALIBRATION_SIZES`, fitted by
    :func:`.fitting.fit_calibration`.  Collective: call on every rank of ``comm``.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator to calibrate on.
    iters : int
        Timed calls per run.
    warmup : int
        Untimed calls before the timed ones, per round.

    Returns
    -------
    HostFit
        The same on every rank: per-call overhead, alpha, beta per band, gamma, ``o``,
        kappa and the fit's error.
    """
    runs = calibration_jobs(comm.Get_size())
    return fit_calibration(comm.Get_size(), runs, measure_all(comm, runs, iters, warmup),
                           job_cores(comm))
