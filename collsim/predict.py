"""``collsim predict``: calibrate, predict and measure every algorithm, side by side.

Run as ``collsim predict -n 4``: outside ``mpirun`` it launches itself on ``-n`` ranks
(:func:`collsim.launch.relaunch`); under ``mpirun`` it runs on the job's ranks:

1. **Time** the calibration runs (:func:`calibration_jobs`: AllGather and ReduceScatter,
   never the collective being predicted) and every candidate of the tuning table at every
   size (:func:`candidate_jobs`) through the real MPI executor (:func:`measure_all`): in
   rounds over all of them, one timed call per job per round, each round in a new
   shuffled order with the jobs of one size back to back, so that other load on the
   machine falls on calibration and measurement alike, and on the algorithms compared at
   a size alike; per call a barrier, then the call, timed on every rank; a call's time
   is the slowest rank's; the result is the median over calls.
2. **Calibrate** (:func:`fit_calibration`, on the calibration runs only): per-call
   overhead, alpha, beta per band of working-buffer sizes (:data:`BAND_BYTES`), gamma,
   the per-message CPU overhead ``o`` and the seconds per byte ``kappa`` of the local
   copies around the schedule (the input into the working buffer: some calibration runs
   are made in place, without it, so that it is told apart) of the executor as it runs,
   every rank busy.  The machine is one host whose cores all ranks share
   (:func:`model_terms`): messages share its copy throughput (simulated on
   :func:`host_model`), reductions, per-message CPU time and local copies its cores.
   :func:`calibrated_model` calibrates and builds a topology for :func:`simulator.select`
   in one call (``collsim bench --topology calibrate`` uses it; :func:`fitted_model` says
   what it leaves out).
3. **Predict** (:class:`HostPredictor`): per size, every candidate of the tuning tables
   (:func:`simulator.selection.candidates`) on the calibrated host; each algorithm's
   best segment count and time, and the overall choice; the fitted per-call overhead of
   the executor is added to every predicted time; each is set beside the measured time
   of the same algorithm with the same parameters.
4. **Report** (rank 0): a table of predicted and measured times with the relative error,
   whether the predicted best is the measured best and whether the chosen algorithm is
   within 10% of the measured best; the geometric-mean error over sizes >= 64 KiB; a PNG
   plot (``--plot``) and a JSON file (``--json``: the fit, the points, the summary and
   every timed run, so that a fit can be redone offline with :func:`fit_calibration`).

The error of one prediction is ``|predicted / measured - 1|``; the geometric mean error is
``exp(mean |ln(predicted / measured)|) - 1`` (a factor of 1.25 either way counts 25%).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["add_arguments", "main", "fit_relative", "calibrate_loaded", "calibration_jobs",
           "IN_PLACE_PARAM", "local_copy_bytes",
           "fit_calibration", "BAND_BYTES", "band_weights", "host_model", "calibrated_model",
           "fitted_model", "HostPredictor", "model_terms", "shared_cores_time", "job_cores",
           "predicted_time", "measure", "measure_all", "candidate_jobs", "compare", "summarize"]

#: sizes from which the geometric-mean error is reported (the issue's threshold)
ERROR_FROM_BYTES = 64 * 1024
#: a chosen algorithm within this factor of the measured best is a good choice
GOOD_CHOICE = 1.10
#: whole-vector sizes of the calibrating ring AllGather: 1 KiB .. 16 MiB
CALIBRATION_SIZES = tuple(1024 * 4**k for k in range(8))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    from .sizes import parse_size

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
    for name, minimum in (("nprocs", 2), ("iters", 1), ("warmup", 0), ("stepfactor", 2)):
        if getattr(args, name) < minimum:
            raise SystemExit(f"--{name} {getattr(args, name)} is not allowed; it must be "
                             f">= {minimum}")
    if not 1 <= args.minbytes <= args.maxbytes:
        raise SystemExit(f"-b {args.minbytes} -e {args.maxbytes} is not allowed; "
                         "need 1 <= -b <= -e")


def fit_relative(columns: list[list[float]], times: list[float],
                 rounds: int = 20) -> list[float]:
    """Non-negative least-relative-error coefficients of ``t = sum(c[k] * columns[k])``.

    Minimises the sum of the *relative* errors' magnitudes (small times weigh as much as
    large ones, and a few times inflated by other load on the machine pull less than in
    least squares) by iteratively reweighted least squares, ``rounds`` rounds; a
    coefficient the fit drives below zero is dropped and the rest refitted (then
    reported as 0).

    Parameters
    ----------
    columns : list of list of float
        One regressor per coefficient, each with one value per time.
    times : list of float
        Measured times, all positive.
    rounds : int, optional
        Reweighting rounds per fit; default 20.

    Returns
    -------
    list of float
        One coefficient per column, each >= 0.
    """
    t = np.asarray(times, dtype=np.float64)
    keep = list(range(len(columns)))
    while True:
        matrix = np.stack([np.asarray(columns[k], dtype=np.float64) / t for k in keep], axis=1)
        weights = np.ones_like(t)
        for _ in range(rounds):
            fitted = np.linalg.lstsq(matrix * weights[:, None], weights, rcond=None)[0]
            weights = 1 / np.sqrt(np.maximum(np.abs(matrix @ fitted - 1), 1e-3))
        if (fitted >= 0).all() or len(keep) == 1:
            coefficients = [0.0] * len(columns)
            for k, value in zip(keep, fitted):
                coefficients[k] = max(float(value), 0.0)
            return coefficients
        keep.pop(int(np.argmin(fitted)))


def model_terms(collective: str, algorithm: str, nranks: int, nbytes: int,
                params: dict[str, Any], cores: int | None = None) -> list[float]:
    """The latency, copy, reduction, per-message and local-copy terms of one run on the host.

    The host model's time is ``alpha S + beta B + gamma R + o O + kappa L``:

    * ``S`` and ``B``: the simulated time of the schedule on :func:`host_model` with
      alpha, respectively beta, set to 1 and the rest to (practically) 0 (latencies on
      the critical path; bytes through the host's shared copy throughput);
    * ``R``: bytes reduced, work for the cores the ranks share: the larger of the
      simulated bytes along the critical path (a rank reduces its own pieces one after
      another; :func:`host_model` with gamma set to 1) and the bytes of all ranks over the
      ``cores`` (a ring step, every rank reducing at once, waits for all of them; a
      chain's hops, one rank at a time, do not share);
    * ``O``: messages, each costing CPU time at the end that posts it, with the ranks
      taking turns on the ``cores`` (:func:`shared_cores_time`): a chain's hops, one
      rank busy at a time, cost one message each end; a ring step, every rank busy at
      once, costs its messages times the ranks per core.  (Measured with ``collsim
      predict -n 4`` on a 2-core host: this form of the turns the ranks take chose
      better than the sum of a rank's own messages and all ranks' over the cores.)
    * ``L``: bytes the executor copies locally around the schedule, all ranks at once over
      the ``cores`` (:func:`local_copy_bytes`: the input into the working buffer, a
      ReduceScatter's block out of it).

    Parameters
    ----------
    collective : str
        Collective name.
    algorithm : str
        Algorithm name.
    nranks : int
        Number of ranks.
    nbytes : int
        Message size in bytes (float32 elements: ``nbytes // 4``).
    params : dict[str, Any]
        Algorithm parameters passed to :func:`collectives.build_schedule`, and
        ``in_place=True`` for a call made in place (:data:`IN_PLACE_PARAM`).
    cores : int or None, optional
        Cores the ranks share; default None: those this process may run on.

    Returns
    -------
    list of float
        ``[S, B, R, O, L]``: the terms multiplying alpha, beta, gamma, ``o`` and kappa.

    Raises
    ------
    ValueError
        If ``cores`` is below 1.
    """
    from collectives import build_schedule
    from collectives.schedule import Recv, Send

    from simulator.engine import simulate

    cores = _cores() if cores is None else cores
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise ValueError(f"cores={cores!r} is not allowed; it must be an int >= 1")
    in_place, params = _split(params)
    schedule = build_schedule(collective, algorithm, nranks, nbytes // 4, **params)
    latency, moved, reduced = (
        simulate(schedule, host_model(nranks, *unit, cores=cores), 4, trace=False).time_s
        for unit in _UNITS)
    ops = [op for rank in range(nranks) for step in schedule.steps(rank) for op in step.ops]
    reduced_all = 4 * sum(op.stop - op.start for op in ops if isinstance(op, Recv) and op.reduce)
    messages = shared_cores_time(
        schedule, lambda step: sum(isinstance(op, (Send, Recv)) for op in step.ops), cores)
    copied = nranks * local_copy_bytes(collective, nranks, nbytes, in_place) / cores
    return [latency, moved, max(reduced, reduced_all / cores), messages, copied]


#: the key of a job's ``params`` that makes the call in place (``collectives.IN_PLACE``)
IN_PLACE_PARAM = "in_place"


def _split(params: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """``(in place, the algorithm's own parameters)`` of a job's ``params``."""
    own = {k: v for k, v in params.items() if k != IN_PLACE_PARAM}
    return bool(params.get(IN_PLACE_PARAM, False)), own


def local_copy_bytes(collective: str, nranks: int, nbytes: int, in_place: bool) -> float:
    """Bytes the slowest rank copies locally in one call, besides the schedule's own work.

    The executor lays the input into the working buffer (the whole vector for AllReduce
    and ReduceScatter, this rank's block for AllGather) unless the call is in place, and
    a ReduceScatter copies its block out of it (in place too, for every rank whose block
    is not the first).

    Parameters
    ----------
    collective : str
        Collective name.
    nranks : int
        Number of ranks, >= 1.
    nbytes : int
        Bytes of the working buffer.
    in_place : bool
        Whether the call is in place.

    Returns
    -------
    float
        Bytes.

    Examples
    --------
    >>> local_copy_bytes("reduce_scatter", 4, 1024, False)
    1280.0
    >>> local_copy_bytes("allgather", 4, 1024, True)
    0.0
    """
    block = nbytes / nranks
    if collective == "reduce_scatter":
        return (0.0 if in_place else float(nbytes)) + (block if nranks > 1 else 0.0)
    if in_place:
        return 0.0
    return float(nbytes) if collective == "allreduce" else block


def shared_cores_time(schedule: Any, work: Callable[[Any], float], cores: int) -> float:
    """How long the ranks of ``schedule`` take to do ``work`` per step on shared cores.

    Each rank runs its steps in order: first the step's work (posting its messages),
    then it waits until every peer it exchanges with in the step has done the work of
    the matching step (the k-th send from ``a`` to ``b`` matches the k-th receive at
    ``b`` from ``a``); waiting costs no core.  The ranks with work left share the
    ``cores`` equally (processor sharing): ``k`` of them progress at ``min(1, cores / k)``
    each.

    Parameters
    ----------
    schedule : collectives.Schedule
        The schedule.
    work : callable
        Work of one step (a :class:`collectives.schedule.Step`), in seconds of one core.
    cores : int
        Cores the ranks share, >= 1.

    Returns
    -------
    float
        When the last rank has finished its last step.

    Raises
    ------
    ValueError
        If the schedule cannot complete (a step waits on a peer's step that never comes).

    Examples
    --------
    >>> from collectives import build_schedule
    >>> ring = build_schedule("reduce_scatter", "ring", 4, 1024)
    >>> shared_cores_time(ring, lambda step: 1.0, 4), shared_cores_time(ring, lambda step: 1.0, 2)
    (3.0, 6.0)
    """
    steps = [schedule.steps(rank) for rank in range(schedule.nranks)]
    needs = _peer_steps(schedule)
    current = [0] * len(steps)  # the step each rank is at
    posted = [-1] * len(steps)  # the last step whose work each rank has done
    left = [float(work(mine[0])) if mine else 0.0 for mine in steps]
    now = 0.0
    while True:
        _advance(steps, needs, current, posted, left, work)
        busy = [rank for rank, mine in enumerate(steps) if current[rank] < len(mine)
                and left[rank] > 0]
        if not busy:
            if any(current[rank] < len(mine) for rank, mine in enumerate(steps)):
                raise ValueError(f"schedule {schedule.algorithm!r} cannot complete: ranks "
                                 f"wait at steps {current}")
            return now
        done = min(left[rank] for rank in busy)
        now += done / min(1.0, cores / len(busy))
        for rank in busy:
            left[rank] = 0.0 if left[rank] <= done else left[rank] - done


def _peer_steps(schedule: Any) -> list[list[list[tuple[int, int]]]]:
    """Per rank and step: the (peer, peer's step) of each message's other end
    (:func:`collectives.progress.match`)."""
    from collectives.progress import match

    partners = match(schedule).partners
    return [[[(op.peer, at) for op, at in zip(step.ops, partners[rank][index]) if at >= 0]
             for index, step in enumerate(schedule.steps(rank))]
            for rank in range(schedule.nranks)]


def _advance(steps: list[Any], needs: list[list[list[tuple[int, int]]]], current: list[int],
             posted: list[int], left: list[float], work: Callable[[Any], float]) -> None:
    """Move every rank whose step's work is done past the steps its peers let it finish."""
    moved = True
    while moved:
        moved = False
        for rank, mine in enumerate(steps):
            index = current[rank]
            if index == len(mine) or left[rank] > 0:
                continue
            if posted[rank] < index:
                posted[rank], moved = index, True
            if all(posted[peer] >= j for peer, j in needs[rank][index]):
                current[rank], moved = index + 1, True
                left[rank] = float(work(mine[index + 1])) if index + 1 < len(mine) else 0.0


def predicted_time(fit: dict[str, Any], terms: list[float], nbytes: int) -> float:
    """The time the calibrated host model gives a run of ``terms``, without the per-call
    overhead.

    Parameters
    ----------
    fit : dict[str, Any]
        A fit from :func:`fit_calibration`.
    terms : list of float
        ``[S, B, R, O, L]`` of the run (:func:`model_terms`).
    nbytes : int
        Bytes of the working buffer (chooses the bands' betas, :func:`band_weights`).

    Returns
    -------
    float
        Seconds.
    """
    latency, moved, reduced, messages, copied = terms
    beta = sum(w * b for w, b in zip(band_weights(nbytes), fit["beta_s_per_byte"]))
    return (fit["alpha_s"] * latency + beta * moved + fit["gamma_s_per_byte"] * reduced
            + fit["overhead_s_per_message"] * messages + fit["copy_s_per_byte"] * copied)


def calibrate_loaded(comm: Any, iters: int, warmup: int) -> dict[str, Any]:
    """Per-call overhead, alpha, beta, gamma, ``o`` and kappa of the executor as it runs.

    Every rank busy, oversubscribed as the measurements will be: the AllGather and
    ReduceScatter runs of :data:`CALIBRATION_RUNS` (step and message counts far enough
    apart to tell per-call, per-step and per-message costs apart) through the real MPI
    executor (:func:`measure_all`) at :data:`CALIBRATION_SIZES`.  In the model each costs
    about ``alpha S + beta B + gamma R + o O + kappa L`` (:func:`model_terms`), so a fit
    of ``t = overhead + alpha S + beta(n) B + gamma R + o O + kappa L``
    (:func:`fit_relative`, with ``beta(n)`` one coefficient per band of working-buffer
    sizes ``n``, blended by :func:`band_weights`) separates the per-call overhead
    (argument checks, plan lookup, barrier exit skew) from the per-step latency, the
    per-byte cost of moving (per band: cache-resident buffers move faster than
    memory-bound ones), of reducing (scratch receive and ``np.add``) and of the local
    copies around the schedule (told apart by the runs made in place) and the CPU time
    each message costs the rank that posts and completes it
    (request objects, matching, progress), with the Python executor's costs and the
    sharing of cores included.  Collective: call on every rank of ``comm``.

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
    dict[str, Any]
        The same on every rank: ``overhead_s``, ``alpha_s``, ``beta_s_per_byte`` (a list,
        one per size of ``band_bytes``, :data:`BAND_BYTES`), ``gamma_s_per_byte``,
        ``overhead_s_per_message``, ``copy_s_per_byte`` (kappa) and ``fit_error`` (the
        largest relative error of the
        fitted model, simulated, on the calibration runs).
    """
    runs = calibration_jobs(comm.Get_size())
    return fit_calibration(comm.Get_size(), runs, measure_all(comm, runs, iters, warmup),
                           job_cores(comm))


def calibration_jobs(nranks: int) -> list[Job]:
    """The runs :func:`calibrate_loaded` times.

    Parameters
    ----------
    nranks : int
        Number of ranks; every size is rounded down to whole float32 blocks per rank.

    Returns
    -------
    list of Job
        ``(collective, nbytes, algorithm, params)`` for each of :data:`CALIBRATION_RUNS`
        at each of :data:`CALIBRATION_SIZES`.
    """
    quantum = 4 * nranks * 8  # whole float32 blocks of 8 segments per rank, never 0 bytes
    return [(collective, n, algorithm, params)
            for collective, algorithm, params in CALIBRATION_RUNS
            for n in sorted({max(quantum, n - n % quantum) for n in CALIBRATION_SIZES})]


def fit_calibration(nranks: int, runs: list[Job], times: list[float],
                    cores: int | None = None) -> dict[str, Any]:
    """Fit the model of :func:`calibrate_loaded` to the measured ``times`` of ``runs``.

    Parameters
    ----------
    nranks : int
        Number of ranks the runs used.
    runs : list of Job
        The runs, as from :func:`calibration_jobs`.
    times : list of float
        Measured seconds per call, one per run.
    cores : int or None, optional
        Cores the ranks shared (:func:`job_cores`); default None: those this process may
        run on.

    Returns
    -------
    dict[str, Any]
        As :func:`calibrate_loaded` returns.
    """
    p, cores = nranks, _cores() if cores is None else cores
    terms = [model_terms(c, a, p, n, params, cores) for c, n, a, params in runs]
    rows = [[1.0, latency, *(moved * w for w in band_weights(n)), reduced, messages, copied]
            for (latency, moved, reduced, messages, copied), (_, n, _, _) in zip(terms, runs)]
    overhead, alpha, *betas, gamma, o, kappa = fit_relative([list(c) for c in zip(*rows)],
                                                            times)
    fit: dict[str, Any] = {
        "overhead_s": overhead, "alpha_s": alpha, "beta_s_per_byte": list(betas),
        "band_bytes": list(BAND_BYTES), "gamma_s_per_byte": gamma,
        "overhead_s_per_message": o, "copy_s_per_byte": kappa, "cores": cores}
    fit["fit_error"] = max(abs((overhead + predicted_time(fit, run_terms, n)) / t - 1)
                           for run_terms, (_, n, _, _), t in zip(terms, runs, times))
    return fit


#: the calibration fits one seconds-per-byte per band of working-buffer sizes: these
#: sizes (every other calibration size, 4 KiB .. 16 MiB) are the bands' centres, and a
#: size between two centres is predicted by blending their models (:func:`band_weights`).
#: The host's copy throughput depends on the size: buffers that fit the caches move faster
#: than buffers that stream from memory
BAND_BYTES: tuple[int, ...] = CALIBRATION_SIZES[1::2]


def band_weights(nbytes: int) -> list[float]:
    """Weight of each band of :data:`BAND_BYTES` at a working buffer of ``nbytes``.

    Linear in ``log2(nbytes)`` between two neighbouring bands' sizes (a tent per band);
    below the first size all weight is on the first band, above the last on the last.

    Parameters
    ----------
    nbytes : int
        Bytes of the working buffer (the AllReduce vector, ReduceScatter input or
        AllGather output), >= 1.

    Returns
    -------
    list of float
        One weight per band, each in [0, 1], summing to 1.

    Raises
    ------
    ValueError
        If ``nbytes`` is below 1.

    Examples
    --------
    >>> band_weights(4096), band_weights(16384)
    ([1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0])
    """
    if nbytes < 1:
        raise ValueError(f"nbytes={nbytes!r} is not allowed; it must be >= 1")
    x = math.log2(min(max(nbytes, BAND_BYTES[0]), BAND_BYTES[-1]))
    knots = [math.log2(b) for b in BAND_BYTES]
    weights = [0.0] * len(knots)
    k = min(max(i for i, knot in enumerate(knots) if knot <= x), len(knots) - 2)
    upper = (x - knots[k]) / (knots[k + 1] - knots[k])
    weights[k], weights[k + 1] = 1.0 - upper, upper
    return weights


#: what the calibration times: step counts from 2 to 24 and 1 to 5 messages per step
#: (ring, rhd, tree, pipeline), with a reduction or without; and ring and rhd in place
#: too, so that the executor's local copies (``L`` of :func:`model_terms`: a ReduceScatter
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

#: (alpha, beta, gamma, o) of the host models whose simulated times are the latency, copy
#: and critical-path reduction terms of :func:`model_terms`
#: stands for 0 where the host model needs a positive latency or seconds per byte
_TINY = 1e-30
_UNITS = ((1.0, _TINY, 0.0, 0.0), (_TINY, 1.0, 0.0, 0.0), (_TINY, _TINY, 1.0, 0.0))


def _cores() -> int:
    """Cores this process may run on."""
    import os

    return len(os.sched_getaffinity(0))


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
    import os

    return len(set().union(*comm.allgather(os.sched_getaffinity(0))))


def host_model(nranks: int, alpha: float, beta: float, gamma: float,
               overhead_s_per_message: float = 0.0, cores: int | None = None) -> Any:
    """Ranks sharing one host: every byte any rank sends goes through one copy engine.

    Shared-memory MPI moves a message by copying it through memory on the CPUs of the
    ranks at its ends; all ranks share the host's cores and memory bandwidth, so the host
    copies about the same number of bytes per second whether one message is in flight or
    one per rank (measured with ``collsim predict -n 4`` on a 2-core host: a 16 MiB
    AllReduce took about as long on the ring, whose steps move four 4 MiB messages at
    once, as on the unsegmented chain, whose hops move one 16 MiB message each, while
    other jobs loaded the host; on an idle host the chain took about 1.7x as long, one copy
    at a time using one core, which this model does not show).  Rank ``r`` reaches rank
    ``s`` through ``rank r -> copy.in -> copy.out -> rank s``; the ``copy.in -> copy.out`` link
    carries every message at ``1 / beta`` bytes per second in all, shared max-min fairly
    by the messages in flight; each rank's own links carry its sends or its receives at
    the same rate, so they never limit a message more than the shared link does; latency
    ``alpha / 3`` per link.

    Parameters
    ----------
    nranks : int
        Ranks on the host.
    alpha, beta, gamma : float
        Latency per message, s; seconds per byte the host copies, all messages together;
        seconds per byte reduced.
    overhead_s_per_message : float, optional
        CPU time per message at each end, serialised on the rank (LogGP's ``o``; with
        every rank busy, as calibrated); default 0.
    cores : int or None, optional
        Cores of the host, for the topology's name; default None: those this process may
        run on.

    Returns
    -------
    topology.Topology
        The host: one ``cpu`` device per rank and the shared copy engine.
    """
    from topology import Device, Link, Topology

    copy_Bps = 1 / beta
    latency = alpha / 3
    ids = [f"rank{r}" for r in range(nranks)]
    devices = [Device(i, "cpu") for i in ids] + [Device("copy.in", "memory"),
                                                   Device("copy.out", "memory")]
    links = [Link("copy.in", "copy.out", latency, copy_Bps, "measured")]
    for i in ids:
        links += [Link(i, "copy.in", latency, copy_Bps, "measured"),
                  Link("copy.out", i, latency, copy_Bps, "measured")]
    cores = _cores() if cores is None else cores
    return Topology(f"calibrated host({nranks} ranks, {cores} cores)", tuple(devices),
                    tuple(links), tuple(ids), gamma, overhead_s_per_message)


def calibrated_model(comm: Any, iters: int, warmup: int) -> tuple[Any, dict[str, Any]]:
    """Calibrate on ``comm`` and return the fitted :func:`host_model` and the fit.

    The topology is :func:`fitted_model` of the largest band of :data:`BAND_BYTES`
    (memory-bound copies); :class:`HostPredictor` predicts with the whole fit.

    Collective: call on every rank of ``comm`` (:func:`calibrate_loaded`).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator to calibrate on.
    iters : int
        Timed calls per calibration run.
    warmup : int
        Untimed calls before the timed ones, per round.

    Returns
    -------
    tuple
        ``(topology, fit)``: the :class:`topology.Topology` and the dict of
        :func:`calibrate_loaded`.
    """
    fit = calibrate_loaded(comm, iters, warmup)
    return fitted_model(comm.Get_size(), fit), fit


def fitted_model(nranks: int, fit: dict[str, Any], band: int = -1) -> Any:
    """A :func:`host_model` for :func:`simulator.select` from a calibration ``fit``.

    One topology cannot hold the whole fit: it leaves out the executor's local copies
    (``copy_s_per_byte``, the same for every algorithm); its seconds per byte are those of
    one band, and reductions and per-message CPU time are charged per rank as when every
    rank is busy (a ring step): ``gamma`` times the ranks, ``o`` times the ranks per core
    (at least 1).  :class:`HostPredictor` predicts with the whole fit.

    Parameters
    ----------
    nranks : int
        Ranks on the host.
    fit : dict[str, Any]
        A fit from :func:`fit_calibration` or :func:`calibrate_loaded`.
    band : int, optional
        Index into ``fit["band_bytes"]``: whose seconds per byte the model copies at;
        default -1, the largest.

    Returns
    -------
    topology.Topology
        The host model.

    Raises
    ------
    ValueError
        If ``band`` is not an index of ``fit["beta_s_per_byte"]``.
    """
    betas = fit["beta_s_per_byte"]
    if isinstance(band, bool) or not isinstance(band, int) or not -len(betas) <= band < len(betas):
        raise ValueError(f"band={band!r} is not allowed; it must be an int in "
                         f"[{-len(betas)}, {len(betas)})")
    busy = max(1.0, nranks / fit["cores"])
    return host_model(nranks, max(fit["alpha_s"], _TINY), max(betas[band], _TINY),
                      fit["gamma_s_per_byte"] * nranks, fit["overhead_s_per_message"] * busy,
                      fit["cores"])


@dataclass(frozen=True)
class HostPredictor:
    """Every candidate's time on the calibrated host, as :func:`predicted_time` gives it.

    Attributes
    ----------
    collective : str
        The collective.
    nranks : int
        Ranks on the host.
    fit : dict[str, Any]
        A fit from :func:`fit_calibration`.
    """

    collective: str
    nranks: int
    fit: dict[str, Any]

    def choice(self, nbytes: int) -> Any:
        """Every candidate's time at ``nbytes`` and the least, as :class:`simulator.Choice`.

        The candidates are those of the tuning tables (:func:`simulator.selection.candidates`);
        the earliest wins a tie.  The per-call overhead is not included.

        Parameters
        ----------
        nbytes : int
            Bytes of the working buffer, >= 1 (float32 elements: ``nbytes // 4``).

        Returns
        -------
        simulator.Choice
            The predicted best candidate, its time and every candidate's time.
        """
        from simulator.selection import Candidate, Choice, candidates

        tried = candidates(self.collective)
        times = [predicted_time(self.fit, model_terms(self.collective, a, self.nranks, nbytes,
                                                      dict(params), self.fit["cores"]), nbytes)
                 for a, params in tried]
        best = min(range(len(times)), key=times.__getitem__)
        return Choice(*tried[best], times[best],
                      tuple(Candidate(a, params, t) for (a, params), t in zip(tried, times)))


def _call(collective: str) -> Any:
    import collectives

    return getattr(collectives, collective)


#: seed of the order in which :func:`measure_all` visits the jobs in each round (the
#: same on every rank, so all ranks call the same collective)
ORDER_SEED = 6

Job = tuple[str, int, str, dict[str, Any]]


def measure_all(comm: Any, jobs: list[Job], iters: int, warmup: int,
                rounds: int | None = None) -> list[float]:
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
    keys = [(collective, nbytes, _split(params)[0]) for collective, nbytes, _, params in jobs]
    for j, key in enumerate(keys):
        by_size.setdefault(key[1], []).append(j)
        if key not in buffers:
            buffers[key] = _buffers(comm.Get_size(), *key)
    groups, shuffle = list(by_size.values()), random.Random(ORDER_SEED).shuffle
    for timed in per_round:
        shuffle(groups)
        for group in groups:
            shuffle(group)
            for j in group:
                collective, nbytes, algorithm, params = jobs[j]
                if timed:
                    samples[j] += _time_calls(comm, buffers[keys[j]], collective,
                                              algorithm, params, timed,
                                              0 if samples[j] else warmup)
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


def _time_calls(comm: Any, buffers: tuple[Any, Any], collective: str, algorithm: str,
                params: dict[str, Any], timed: int, warmup: int) -> list[float]:
    send, recv = buffers
    run = _call(collective)
    params = _split(params)[1]
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


def _sizes(args: argparse.Namespace, p: int) -> list[int]:
    sizes, size = [], args.minbytes
    quantum = 4 * p  # whole float32 blocks per rank, so every collective takes the size
    while size <= args.maxbytes:
        sizes.append(max(quantum, size - size % quantum))
        size *= args.stepfactor
    return sorted(set(sizes))


def candidate_jobs(collective: str, sizes: list[int]) -> list[Job]:
    """Every candidate of the tuning tables at every size: what :func:`compare` needs measured.

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


def compare(table: Any, sizes: list[int], measured: dict[tuple[int, str, str], float],
            overhead_s: float = 0.0) -> list[dict[str, Any]]:
    """Predicted and measured time of every algorithm family at every size.

    Each family takes the parameters the table predicts fastest; ``overhead_s``, the
    executor's per-call cost, is added to every prediction (it is the same for every
    algorithm, so it changes no choice).

    Parameters
    ----------
    table : TuningTable or HostPredictor
        The predictions: anything whose ``choice(nbytes)`` returns a
        :class:`simulator.Choice` (:func:`simulator.tuning_table`, :class:`HostPredictor`).
    sizes : list of int
        Message sizes in bytes.
    measured : dict[tuple[int, str, str], float]
        ``measured[(nbytes, algorithm, label)]``: a measured time in seconds (see
        :func:`candidate_jobs`).
    overhead_s : float, optional
        Seconds added to every prediction; default 0.

    Returns
    -------
    list of dict
        One per size and family: ``nbytes``, ``algorithm``, ``label``, ``predicted_s``,
        ``measured_s`` and ``chosen`` (whether the table picks this family).

    Raises
    ------
    KeyError
        When ``measured`` lacks a point the table needs.
    """
    from collectives import ALGORITHMS

    points = []
    for nbytes in sizes:
        choice = table.choice(nbytes)
        for family in ALGORITHMS:
            best = min((c for c in choice.candidates if c.algorithm == family),
                       key=lambda c: c.predicted_s)
            points.append({"nbytes": nbytes, "algorithm": family, "label": best.label,
                           "predicted_s": overhead_s + best.predicted_s,
                           "measured_s": measured[(nbytes, family, best.label)],
                           "chosen": family == choice.algorithm})
    return points


def summarize(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-size verdicts and the two headline figures (see the module docstring).

    Parameters
    ----------
    points : list of dict
        Points from :func:`compare`; not empty.

    Returns
    -------
    dict[str, Any]
        ``verdicts`` (per size: predicted, measured and chosen best, and whether the
        choice is ``good``), ``geomean_error_from_64KiB`` (None without such sizes),
        ``good_choice_share`` and ``best_matches_share``.
    """
    by_size: dict[int, list[dict[str, Any]]] = {}
    for point in points:
        by_size.setdefault(point["nbytes"], []).append(point)
    verdicts = []
    for nbytes, group in sorted(by_size.items()):
        measured_best = min(group, key=lambda q: q["measured_s"])
        predicted_best = min(group, key=lambda q: q["predicted_s"])
        chosen = next(q for q in group if q["chosen"])
        verdicts.append({"nbytes": nbytes, "predicted_best": predicted_best["algorithm"],
                         "measured_best": measured_best["algorithm"],
                         "chosen": chosen["algorithm"],
                         "good": chosen["measured_s"] <= GOOD_CHOICE * measured_best["measured_s"]})
    logs = [abs(math.log(q["predicted_s"] / q["measured_s"])) for q in points
            if q["nbytes"] >= ERROR_FROM_BYTES and q["predicted_s"] > 0]
    return {"verdicts": verdicts,
            "geomean_error_from_64KiB": math.exp(statistics.mean(logs)) - 1 if logs else None,
            "good_choice_share": sum(v["good"] for v in verdicts) / len(verdicts),
            "best_matches_share": sum(v["predicted_best"] == v["measured_best"]
                                      for v in verdicts) / len(verdicts)}


def _print(points: list[dict[str, Any]], summary: dict[str, Any], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("size (B)", "algorithm", "params", "predicted (us)", "measured (us)",
                   "error"):
        table.add_column(column, justify="right")
    verdicts = {v["nbytes"]: v for v in summary["verdicts"]}
    last = None
    for q in points:
        if last is not None and q["nbytes"] != last:
            v = verdicts[last]
            table.add_row("", "", "", f"best: {v['predicted_best']}",
                          f"best: {v['measured_best']}", "good" if v["good"] else "BAD")
            table.add_section()
        last = q["nbytes"]
        mark = "*" if q["chosen"] else ""
        table.add_row(str(q["nbytes"]), q["algorithm"] + mark, q["label"],
                      f"{q['predicted_s'] * 1e6:.1f}", f"{q['measured_s'] * 1e6:.1f}",
                      f"{q['predicted_s'] / q['measured_s'] - 1:+.0%}")
    v = verdicts[last]
    table.add_row("", "", "", f"best: {v['predicted_best']}", f"best: {v['measured_best']}",
                  "good" if v["good"] else "BAD")
    console = Console(width=120)
    console.print(table)
    error = summary["geomean_error_from_64KiB"]
    console.print(f"geomean error, sizes >= 64 KiB: "
                  f"{'n/a' if error is None else f'{error:.1%}'}; chosen (*) within 10% of "
                  f"the measured best: {summary['good_choice_share']:.0%} of sizes; "
                  f"predicted best = measured best: {summary['best_matches_share']:.0%}")


def _plot(points: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for i, family in enumerate(dict.fromkeys(q["algorithm"] for q in points)):
        mine = [q for q in points if q["algorithm"] == family]
        sizes = [q["nbytes"] for q in mine]
        color = f"C{i}"
        ax.plot(sizes, [q["measured_s"] * 1e6 for q in mine], "o-", color=color,
                label=f"{family} measured")
        ax.plot(sizes, [q["predicted_s"] * 1e6 for q in mine], "--", color=color,
                label=f"{family} predicted")
    ax.set(xscale="log", yscale="log", xlabel="size (bytes)", ylabel="time (us)", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _run(args: argparse.Namespace) -> int:
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
    points = compare(table, sizes, measured, fit["overhead_s"])
    if comm.Get_rank() != 0:
        return 0
    summary = summarize(points)
    title = f"{args.collective}, {p} ranks, float32 NumPy: predicted vs measured"
    copies = ", ".join(f"{1 / beta / 1e9 if beta else math.inf:.2f} GB/s at {n >> 10} KiB"
                       for n, beta in zip(fit["band_bytes"], fit["beta_s_per_byte"]))
    print(f"calibrated on allgather and reduce_scatter runs, all {p} ranks busy: per call "
          f"{fit['overhead_s'] * 1e6:.1f} us + per message {fit['alpha_s'] * 1e6:.2f} us "
          f"latency and {fit['overhead_s_per_message'] * 1e6:.2f} us CPU at each end; the "
          f"host ({fit['cores']} cores) copies {copies} and reduces "
          f"{fit['gamma_s_per_byte'] * 1e9:.3f} ns/B, all ranks together, and around the "
          f"schedule copies {fit['copy_s_per_byte'] * 1e9:.3f} ns/B per core; fit error up to "
          f"{fit['fit_error']:.0%}")
    _print(points, summary, title)
    if args.plot is not None:
        _plot(points, args.plot, title)
        print(f"plot written to {args.plot}")
    if args.json is not None:
        runs = [{"collective": c, "nbytes": n, "algorithm": a, "params": params, "measured_s": t,
                 "calibration": j < len(calibration)}
                for j, ((c, n, a, params), t) in enumerate(zip(calibration + candidates, times))]
        args.json.write_text(json.dumps({"calibration": fit, "points": points, "summary": summary,
                                         "runs": runs}, indent=1))
        print(f"JSON written to {args.json}")
    return 0


def main(args: argparse.Namespace) -> int:
    """Run on this MPI job, or launch one on ``args.nprocs`` ranks that does."""
    _check(args)
    from collsim.launch import in_mpi_job, relaunch

    if not in_mpi_job():
        return relaunch("predict", args, add_arguments, args.nprocs, args.timeout)
    return _run(args)

