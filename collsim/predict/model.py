"""The host model: ranks sharing one host's cores and copy throughput, and a run's terms on it.

A run of a collective costs ``alpha S + beta B + gamma R + o O + kappa L`` on the host
(:func:`model_terms`): messages share the host's copy throughput (simulated on
:func:`host_model`), reductions, per-message CPU time (:func:`shared_cores_time`) and the
executor's local copies (:func:`local_copy_bytes`) its cores.  Nothing here is fitted or
measured: :mod:`.fitting` fits the coefficients, :mod:`.predictor` predicts with them.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from topology.checks import check_int

from collectives.schedule import Recv, Schedule, Send, Step

__all__ = ["IN_PLACE_PARAM", "Job", "TINY", "available_cores", "host_model", "local_copy_bytes",
           "model_terms", "shared_cores_time", "split_params"]

#: the key of a job's ``params`` that makes the call in place (``collectives.IN_PLACE``)
IN_PLACE_PARAM = "in_place"

#: one run: ``(collective, nbytes, algorithm, params)``, float32 buffers of ``nbytes``
Job = tuple[str, int, str, dict[str, Any]]

#: stands for 0 where the host model needs a positive latency or seconds per byte
TINY = 1e-30
#: (alpha, beta, gamma, o) of the host models whose simulated times are the latency, copy
#: and critical-path reduction terms of :func:`model_terms`
_UNITS = ((1.0, TINY, 0.0, 0.0), (TINY, 1.0, 0.0, 0.0), (TINY, TINY, 1.0, 0.0))


def available_cores() -> int:
    """Cores this process may run on.

    Returns
    -------
    int
        The size of this process's CPU affinity.
    """
    return len(os.sched_getaffinity(0))


def split_params(params: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """``(in place, the algorithm's own parameters)`` of a job's ``params``.

    Parameters
    ----------
    params : dict[str, Any]
        A job's parameters, perhaps with :data:`IN_PLACE_PARAM`.

    Returns
    -------
    tuple of (bool, dict[str, Any])
        Whether the call is in place, and the rest of ``params``.

    Examples
    --------
    >>> split_params({"segments": 4, IN_PLACE_PARAM: True})
    (True, {'segments': 4})
    """
    own = {k: v for k, v in params.items() if k != IN_PLACE_PARAM}
    return bool(params.get(IN_PLACE_PARAM, False)), own


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

    cores = available_cores() if cores is None else cores
    check_int(cores, "cores", 1)
    in_place, params = split_params(params)
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


def shared_cores_time(schedule: Schedule, work: Callable[[Step], float], cores: int) -> float:
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


def _peer_steps(schedule: Schedule) -> list[list[list[tuple[int, int]]]]:
    """Per rank and step: the (peer, peer's step) of each message's other end
    (:func:`collectives.progress.match`)."""
    from collectives.progress import match

    partners = match(schedule).partners
    return [[[(op.peer, at) for op, at in zip(step.ops, partners[rank][index])
              if at >= 0 and isinstance(op, (Send, Recv))]
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
    cores = available_cores() if cores is None else cores
    return Topology(f"calibrated host({nranks} ranks, {cores} cores)", tuple(devices),
                    tuple(links), tuple(ids), gamma, overhead_s_per_message)
