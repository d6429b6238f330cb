"""verify on arrays against the checks it replaced: the same verdict and the same error on
randomly broken schedules, and lanes read as their steps."""

from __future__ import annotations

import dataclasses
import importlib
import random

import numpy as np
import pytest

from collectives import (Copy, CollectivesError, Recv, Schedule, Send, Step, build_schedule,
                         verify)
from collectives.verify import OBJECTS_UP_TO_RANKS, check_arrays as on_arrays
from collectives.verify import check_operations as reference
from collectives import verify_arrays
from collectives.verify_arrays import Values, rank_ops
from simulator import simulate
import topology

#: (algorithm, collective, parameters) of the schedules broken below, lanes or steps
BUILT = [("ring", "allreduce", {}), ("ring", "allgather", {"channels": 2}),
         ("tree", "allreduce", {"segments": 3}), ("pipeline", "allreduce", {"segments": 3}),
         ("pipeline", "reduce_scatter", {"segments": 2}), ("rhd", "allreduce", {}),
         ("rhd", "allreduce", {"doubling": True}), ("chain", "broadcast", {"segments": 3}),
         ("pairwise", "alltoall", {})]


def outcome(check: object, schedule: Schedule) -> tuple[str, str]:
    """The error ``check(schedule)`` raises, as (type, message); ("", "") if none."""
    try:
        check(schedule)  # type: ignore[operator]
    except CollectivesError as error:
        return type(error).__name__, str(error)
    return "", ""


def mutate(ranks: list[list[list]], count: int, rng: random.Random) -> None:
    """Break ``ranks`` (lists of steps of operations) in one random place."""
    p = len(ranks)
    rank = rng.randrange(p)
    steps = ranks[rank]
    if not steps:
        steps.append([])
    step = rng.choice(steps)
    how = rng.randrange(7)
    if how == 0 or not step:  # a local copy, maybe overlapping what the step touches
        start = rng.randrange(count + 1)
        stop = rng.randrange(start, count + 2)
        step.append(Copy(start, stop, rng.randrange(-1, count + 1)))
    elif how == 1:  # a range moved
        i = rng.randrange(len(step))
        op = step[i]
        shift = rng.choice((-2, -1, 1, 2))
        if isinstance(op, Copy):
            step[i] = Copy(op.start, op.stop, op.dst + shift)
        elif isinstance(op, Send):
            step[i] = Send(op.peer, op.start + shift, op.stop + rng.choice((0, shift)))
        else:
            step[i] = Recv(op.peer, op.start + shift, op.stop + rng.choice((0, shift)),
                           op.reduce, op.swap)
    elif how == 2:  # another peer
        i = rng.randrange(len(step))
        op = step[i]
        if not isinstance(op, Copy):
            step[i] = type(op)(rng.randrange(-1, p + 1), *[getattr(op, f) for f in
                                                         op.__slots__[1:]])
    elif how == 3:  # an operation dropped
        del step[rng.randrange(len(step))]
    elif how == 4:  # a reduction turned into a copy in place, or back
        i = rng.randrange(len(step))
        op = step[i]
        if isinstance(op, Recv):
            step[i] = Recv(op.peer, op.start, op.stop, not op.reduce, op.swap)
    elif how == 5:  # two steps of a rank swapped
        a, b = rng.randrange(len(steps)), rng.randrange(len(steps))
        steps[a], steps[b] = steps[b], steps[a]
    else:  # an operation moved to another step of its rank
        op = step.pop(rng.randrange(len(step)))
        rng.choice(steps).append(op)


def compare_on_broken(algorithm: str, collective: str, params: dict, trials: int,
                      sizes: tuple[int, int] = (2, 7), check: object = on_arrays) -> set[str]:
    """Break ``trials`` random schedules of the algorithm on ``sizes`` ranks (a range);
    assert that ``check`` fails on each as the reference does; return the kinds of error
    met ("" for none)."""
    rng = random.Random(f"{algorithm}{collective}{params}")
    failures = set()
    for trial in range(trials):
        nranks, count = rng.randrange(*sizes), rng.randrange(0, 20)
        built = build_schedule(collective, algorithm, nranks, count, **params)
        ranks = [[list(step.ops) for step in built.steps(r)] for r in range(nranks)]
        for _ in range(rng.randrange(1, 3)):
            mutate(ranks, built.elements, rng)
        broken = Schedule.from_steps(built.collective, algorithm, built.count,
                                     [[Step(tuple(ops)) for ops in steps] for steps in ranks],
                                     working=built.working)
        expected = outcome(reference, broken)
        assert outcome(check, broken) == expected, broken.to_text()
        failures.add(expected[0])
    return failures


@pytest.mark.parametrize("algorithm, collective, params", BUILT)
def test_broken_schedules_fail_as_before(algorithm: str, collective: str,
                                         params: dict) -> None:
    # the mutations both break and keep schedules
    assert compare_on_broken(algorithm, collective, params, 60) >= {"", "ScheduleError"}


def test_pairs_numbered_by_sorting_match_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_arrays, "_DENSE_PAIRS", 0)  # as for more than 5,792 ranks
    assert compare_on_broken("ring", "allreduce", {"channels": 2}, 60) >= {"", "ScheduleError"}


def test_deadlocks_are_reported_as_before() -> None:
    # ranks 0-2 wait for each other in a cycle; 3 and 4 exchange, then 3 waits for 0
    ranks = [[Step((Recv((r - 1) % 3, 0, 1),)), Step((Send((r + 1) % 3, 1, 2),))]
             for r in range(3)]
    ranks[0].append(Step((Send(3, 1, 2),)))
    ranks += [[Step((Send(4, 1, 2),)), Step((Recv(0, 0, 1),))], [Step((Recv(3, 0, 1),))]]
    broken = Schedule.from_steps("allreduce", "hand", 2, ranks)
    expected = outcome(reference, broken)
    assert expected[0] == "DeadlockError" and outcome(on_arrays, broken) == expected


def simulated(schedule: Schedule) -> None:
    """Simulate ``schedule`` on the compiled engine, verified (the default)."""
    simulate(schedule, topology.flat(schedule.nranks, 1e-6, 1e-9), engine="compiled")


@pytest.mark.parametrize("algorithm, collective, params", [
    ("ring", "allreduce", {"channels": 2}), ("rhd", "allreduce", {})])
def test_simulate_rejects_large_broken_schedules_as_verify(algorithm: str, collective: str,
                                                           params: dict) -> None:
    # past OBJECTS_UP_TO_RANKS the engine's reading checks the steps, its matching and
    # play stand for verify's, and verify words the error
    assert compare_on_broken(algorithm, collective, params, 12,
                             (OBJECTS_UP_TO_RANKS + 1, OBJECTS_UP_TO_RANKS + 9),
                             simulated) >= {"", "ScheduleError"}


def test_simulate_reports_a_large_deadlock_as_verify() -> None:
    # the deadlock of test_deadlocks_are_reported_as_before among idle ranks
    ranks = [[Step((Recv((r - 1) % 3, 0, 1),)), Step((Send((r + 1) % 3, 1, 2),))]
             for r in range(3)]
    ranks += [[] for _ in range(OBJECTS_UP_TO_RANKS)]
    broken = Schedule.from_steps("allreduce", "hand", 2, ranks)
    expected = outcome(reference, broken)
    assert expected[0] == "DeadlockError" and outcome(simulated, broken) == expected


def test_simulate_reads_large_lane_columns_once_and_verifies() -> None:
    built = build_schedule("reduce_scatter", "tree", OBJECTS_UP_TO_RANKS + 8, 400, channels=2)
    assert built.lane_columns is not None
    read = []
    columns = built.lane_columns
    broken = dataclasses.replace(built, lane_columns=lambda rank: read.append(rank) or columns(rank))
    simulated(broken)
    assert sorted(read) == list(range(built.nranks))


def assert_read_as_steps(built: Schedule) -> None:
    """Assert that every rank of ``built`` reads as the same columns as its steps do."""
    steps = Schedule.from_steps(built.collective, built.algorithm, built.count, built.ranks,
                                working=built.working)
    values = Values()
    for rank in range(built.nranks):
        read, from_steps = rank_ops(built, rank, values), rank_ops(steps, rank, values)
        assert all(np.array_equal(a, b) for a, b in zip(read, from_steps)), rank


@pytest.mark.parametrize("algorithm, collective, params", [
    *[entry for entry in BUILT if entry[0] in ("ring", "tree", "pipeline")],
    ("rhd", "allreduce", {"channels": 2})])
@pytest.mark.parametrize("nranks, count", [(2, 0), (5, 3), (7, 61)])
def test_lanes_read_as_their_steps(algorithm: str, collective: str, params: dict,
                                   nranks: int, count: int) -> None:
    built = build_schedule(collective, algorithm, nranks, count, **params)
    assert built.lanes is not None
    assert_read_as_steps(built)


@pytest.mark.parametrize("algorithm", ["tree", "rhd"])
@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
@pytest.mark.parametrize("nranks, count, params", [
    (6, 61, {"channels": 2}), (7, 30, {"channels": 3}),
    (8, 97, {"channels": 2, "order": ((0, 1, 2, 3, 4, 5, 6, 7), (1, 2, 3, 0, 5, 6, 7, 4))})])
def test_lane_columns_read_as_their_steps(algorithm: str, collective: str, nranks: int,
                                          count: int, params: dict) -> None:
    # channels cut at their blocks: read from lane_columns and lane_starts, not lanes
    built = build_schedule(collective, algorithm, nranks, count, **params)
    assert built.lane_starts is not None and all(
        built.lane_starts(rank) is not None for rank in range(nranks))
    assert_read_as_steps(built)


def test_verify_checks_small_schedules_on_operations_and_large_ones_on_arrays(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("collectives.verify")  # the package's name is the function
    calls: list[tuple[str, int]] = []
    monkeypatch.setattr(module, "check_operations", lambda s: calls.append(("ops", s.nranks)))
    monkeypatch.setattr(module, "check_arrays", lambda s: calls.append(("arrays", s.nranks)))
    for nranks in (1, OBJECTS_UP_TO_RANKS, OBJECTS_UP_TO_RANKS + 1):
        verify(build_schedule("allreduce", "ring", nranks, 10))
    assert calls == [("ops", 1), ("ops", OBJECTS_UP_TO_RANKS), ("arrays", OBJECTS_UP_TO_RANKS + 1)]


def test_a_large_broken_schedule_fails_on_arrays_as_on_operations() -> None:
    built = build_schedule("allreduce", "ring", OBJECTS_UP_TO_RANKS + 3, 100)
    ranks = [list(built.steps(r)) for r in range(built.nranks)]
    ranks[7][3] = Step((*ranks[7][3].ops, Send(8, 0, 200)))  # past the buffer's end
    broken = Schedule.from_steps("allreduce", "ring", built.count, ranks, working=built.working)
    expected = outcome(reference, broken)
    assert expected[0] == "ScheduleError" and outcome(verify, broken) == expected
