"""The schedule data model, the verifier, build_schedule's checks and ring's properties."""

from __future__ import annotations

import json

import numpy as np
import pytest

from collectives import (BLOCK_COLLECTIVES, Copy, DeadlockError, Recv, Schedule,
                         ScheduleError, Send, Step, build_schedule, interpret, verify)
from collectives.layout import block, split

from .reference import SERVED


def hand_made(*ranks: list[list], collective: str = "allreduce", count: int = 8) -> Schedule:
    """A schedule from per-rank lists of steps, each step a list of ops."""
    return Schedule.from_steps(collective, "hand", count,
                               [[Step(tuple(ops)) for ops in steps] for steps in ranks])


def exchange(count: int = 8) -> Schedule:
    """Two ranks swap halves and reduce: a correct schedule to break."""
    return hand_made([[Send(1, 0, 4), Recv(1, 4, 8, True)]],
                     [[Send(0, 4, 8), Recv(0, 0, 4, True)]], count=count)


def test_hand_made_schedule_verifies_and_runs() -> None:
    schedule = exchange()
    verify(schedule)
    out = interpret(schedule, [np.arange(8), np.arange(8) * 10])
    assert out[0][4:].tolist() == [44, 55, 66, 77]
    assert out[1][:4].tolist() == [0, 11, 22, 33]


@pytest.mark.parametrize("broken, message", [
    (hand_made([[Send(1, 0, 4)]], [[]]), r"rank 0 step 0: send \[0:4\) -> 1: unmatched send"),
    (hand_made([[]], [[Recv(0, 0, 4)]]), r"rank 1 step 0: recv \[0:4\) <- 0: unmatched receive"),
    (hand_made([[Send(1, 0, 4)]], [[Recv(0, 0, 3)]]), r"length 4 does not match rank 1 step 0"),
    (hand_made([[Send(1, 0, 9)]], [[Recv(0, 0, 9)]]), r"rank 0 step 0: send \[0:9\) -> 1: range out of bounds"),
    (hand_made([[Send(1, -1, 2)]], [[Recv(0, 0, 3)]]), r"range out of bounds"),
    (hand_made([[Copy(0, 4, 6)]], [[]]), r"rank 0 step 0: copy .*range out of bounds"),
    (hand_made([[Send(1, 0, 4), Send(1, 4, 8)]], [[Recv(0, 0, 4), Recv(0, 2, 6)]]),
     r"rank 1 step 0: .* write overlapping ranges in the same step"),
    (hand_made([[Send(1, 0, 4), Recv(1, 2, 6)]], [[Recv(0, 0, 4), Send(0, 0, 4)]]),
     r"rank 0 step 0: send \[0:4\) -> 1 reads a range that recv \[2:6\) <- 1 writes"),
    (hand_made([[Send(2, 0, 4)]], [[Send(2, 0, 4)]], [[Recv(0, 0, 4, True), Recv(1, 0, 4, True)]]),
     r"rank 2 step 0: reduce \[0:4\) <- 0 and reduce \[0:4\) <- 1 write overlapping ranges"),
    (hand_made([[Send(0, 0, 4)]], [[]]), r"peer 0 must be another rank"),
    (hand_made([[Send(5, 0, 4)]], [[]]), r"peer 5 must be another rank in 0..1"),
])
def test_verifier_rejects_broken_schedules(broken: Schedule, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        verify(broken)


def test_verifier_rejects_deadlock() -> None:
    # Both ranks receive first and send in a later step: each waits for the other.
    broken = hand_made([[Recv(1, 0, 4)], [Send(1, 4, 8)]], [[Recv(0, 4, 8)], [Send(0, 0, 4)]])
    with pytest.raises(DeadlockError, match=r"rank 0 at step 0 waits for rank 1 to reach step 1"):
        verify(broken)


def test_cyclic_wait_across_three_ranks_is_a_deadlock() -> None:
    ranks = [[[Recv((r - 1) % 3, 0, 1)], [Send((r + 1) % 3, 1, 2)]] for r in range(3)]
    with pytest.raises(DeadlockError, match="3 rank"):
        verify(hand_made(*ranks))


def test_json_round_trip_and_str() -> None:
    schedule = build_schedule("reduce_scatter", "ring", 3, 7, order=(2, 0, 1))
    again = Schedule.from_json(schedule.to_json())
    assert again == schedule and again.param_dict == {"order": (2, 0, 1)}
    text = str(schedule)
    assert text.splitlines()[0] == "ring reduce_scatter: 3 ranks, 7 elements (order=(2, 0, 1))"
    assert "step 0: send" in text and "reduce" in text


def test_swapped_reduce_round_trips_and_says_so() -> None:
    schedule = build_schedule("allreduce", "rhd", 3, 5, doubling=True)
    again = Schedule.from_json(schedule.to_json())
    assert again == schedule and again.steps(2)[0].ops[1] == Recv(1, 0, 5, True, True)
    assert str(again.steps(2)[0]) == "send [0:5) -> 1; reduce [0:5) <- 1 (received first)"
    plain = json.loads(build_schedule("allreduce", "rhd", 2, 4).to_json())
    assert plain["ranks"][0][0][1] == ["recv", 1, 0, 2, True]  # no swap written where unset


def test_a_reducing_receive_may_write_what_its_step_sends() -> None:
    verify(hand_made([[Send(1, 0, 4), Recv(1, 0, 4, True)]],
                     [[Send(0, 0, 4), Recv(0, 0, 4, True, True)]]))
    with pytest.raises(ScheduleError, match="reads a range that"):
        verify(hand_made([[Send(1, 0, 4), Recv(1, 0, 4)]], [[Send(0, 0, 4), Recv(0, 0, 4)]]))


def test_schedule_is_immutable_and_cached() -> None:
    schedule = build_schedule("allreduce", "ring", 4, 10)
    assert build_schedule("allreduce", "ring", 4, 10) is schedule
    with pytest.raises(AttributeError):
        schedule.count = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="rank 4 is out of range"):
        schedule.steps(4)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"collective": "bcast"}, ValueError, r"collective 'bcast' is not supported; choose one of"),
    ({"algorithm": "butterfly"}, ValueError, r"algorithm 'butterfly' is not supported"),
    ({"nranks": 0}, ValueError, r"nranks=0 is not allowed; it must be an integer >= 1"),
    ({"count": -1}, ValueError, r"count=-1 is not allowed"),
    ({"count": 2.5}, ValueError, r"count=2.5 is not allowed"),
    ({"order": (0, 0, 1)}, ValueError, r"order=\(0, 0, 1\) is not allowed; it must be a permutation"),
    ({"fanout": 3}, TypeError, r"parameter 'fanout' is not taken by algorithm 'ring'"),
])
def test_build_schedule_rejects_bad_arguments(kwargs: dict, error: type, message: str) -> None:
    arguments = {"collective": "allreduce", "algorithm": "ring", "nranks": 3, "count": 10, **kwargs}
    with pytest.raises(error, match=message):
        build_schedule(**arguments)


@pytest.mark.parametrize("nranks", [1, 2, 3, 7, 8, 16, 33])
def test_ring_steps_and_bytes(nranks: int) -> None:
    count = nranks * 12
    allreduce = build_schedule("allreduce", "ring", nranks, count)
    assert allreduce.num_steps() == 2 * (nranks - 1)
    for collective in ("reduce_scatter", "allgather"):
        schedule = build_schedule(collective, "ring", nranks, count)
        assert schedule.num_steps() == nranks - 1
        assert {schedule.sent_elements(r) for r in range(nranks)} == {(nranks - 1) * count // nranks}
    assert {allreduce.sent_elements(r) for r in range(nranks)} == {2 * (nranks - 1) * count // nranks}


@pytest.mark.parametrize("algorithm, collective", SERVED)
def test_order_relabels_ranks(algorithm: str, collective: str) -> None:
    nranks, count = 6, 23
    order = (3, 5, 0, 2, 4, 1)
    schedule = build_schedule(collective, algorithm, nranks, count, order=order)
    verify(schedule)
    plain = build_schedule(collective, algorithm, nranks, count)
    rng = np.random.default_rng(1)
    full = rng.integers(-9, 9, (nranks, count))
    inputs = [full[r] if collective != "allgather" else full[r, slice(*block(count, nranks, r))]
              for r in range(nranks)]
    for got, want in zip(interpret(schedule, inputs), interpret(plain, inputs)):
        assert got.tolist() == want.tolist()


def test_split_and_block() -> None:
    assert [split(0, 10, 3, i) for i in range(3)] == [(0, 4), (4, 7), (7, 10)]
    assert [block(2, 4, r) for r in range(4)] == [(0, 1), (1, 2), (2, 2), (2, 2)]
    assert split(5, 5, 3, 2) == (5, 5)


def _ring_json() -> dict:
    return json.loads(build_schedule("allreduce", "ring", 3, 9).to_json())


JSON_FAULTS = [  # (field path, value, message)
    (("ranks", 0, 0, 0, 1), "1", "ranks[0][0][0].peer='1' is not allowed; it must be an "
                                 "integer in [0, 2]"),
    (("ranks", 0, 0, 0, 1), 3, "ranks[0][0][0].peer=3 is not allowed"),
    (("ranks", 0, 0, 0, 3), 100, "ranks[0][0][0].stop=100 is not allowed"),
    (("ranks", 1, 0, 1, 4), "yes", "ranks[1][0][1].reduce = 'yes' is not allowed; it must be "
                                   "true or false"),
    (("ranks", 1, 0, 1), ["bogus", 1], "ranks[1][0][1] = ['bogus', 1] is not allowed"),
    (("ranks", 1, 0, 1), ["send", 0, 1], "a send has 3 fields after its name"),
    (("ranks", 2), "steps", "ranks[2] = 'steps' is not allowed; it must be a list"),
    (("nranks",), 4, "ranks lists 3 ranks; nranks = 4"),
    (("nranks",), True, "nranks=True is not allowed"),
    (("count",), -1, "count=-1 is not allowed"),
    (("collective",), "scan", "collective = 'scan' is not allowed"),
    (("params",), [1], "params = [1] is not allowed; it must be an object"),
    (("extra",), 1, "field 'extra' is unknown"),
]


@pytest.mark.parametrize("path, value, message", JSON_FAULTS,
                         ids=[".".join(map(str, p)) for p, _, _ in JSON_FAULTS])
def test_schedule_json_is_checked_field_by_field(path: tuple, value: object,
                                                 message: str) -> None:
    document = _ring_json()
    place = document
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    with pytest.raises(ValueError) as error:
        Schedule.from_json(json.dumps(document))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_deeply_nested_schedule_json_is_one_error() -> None:
    with pytest.raises(ValueError, match="^not a schedule: its JSON is nested too deeply$"):
        Schedule.from_json("[" * 100_000 + "]" * 100_000)
    document = _ring_json()
    document["params"] = {"order": [[[0, 1, 2]]]}  # lists at every level become tuples
    assert Schedule.from_json(json.dumps(document)).params == (("order", (((0, 1, 2),),)),)
