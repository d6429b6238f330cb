"""The pieces that make schedule generation fast: op builders, splits, lanes, GC pause."""

from __future__ import annotations

import dataclasses
import gc
import pickle
import random

import pytest

from collectives.gcpause import gc_paused
from collectives.layout import split, splits
from collectives.rounds import Lane, lane, merge_lanes
from collectives.schedule import Copy, Recv, Send, Step, new_recv, new_send


@pytest.mark.parametrize("built, plain", [
    (new_send(3, 0, 7), Send(3, 0, 7)),
    (new_recv(3, 0, 7), Recv(3, 0, 7)),
    (new_recv(3, 0, 7, True), Recv(3, 0, 7, True)),
    (new_recv(3, 0, 7, reduce=True), Recv(3, 0, 7, reduce=True)),
])
def test_builders_make_the_same_objects(built, plain) -> None:
    assert type(built) is type(plain)
    assert built == plain and hash(built) == hash(plain)
    assert repr(built) == repr(plain) and str(built) == str(plain)
    assert dataclasses.astuple(built) == dataclasses.astuple(plain)
    assert pickle.loads(pickle.dumps(built)) == plain
    assert Step((built,)) == Step((plain,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.start = 1


def test_built_ops_keep_their_type_in_equality() -> None:
    assert new_send(1, 2, 3) != Copy(1, 2, 3)
    assert new_recv(1, 2, 3) != new_recv(1, 2, 3, True)
    assert new_send(1, 2, 3) != new_recv(1, 2, 3)
    assert len({new_send(1, 2, 3), Send(1, 2, 3), new_recv(1, 2, 3), Copy(1, 2, 3)}) == 3


@pytest.mark.parametrize("start, stop", [(0, 0), (0, 1), (3, 10), (5, 100003)])
@pytest.mark.parametrize("parts", [1, 2, 3, 7, 64])
def test_splits_are_the_parts_of_split(start: int, stop: int, parts: int) -> None:
    starts, stops = splits(start, stop, parts)
    assert list(zip(starts, stops)) == [split(start, stop, parts, i) for i in range(parts)]


def _merge_by_dict(lanes: list[Lane]) -> list[Step]:
    """The plain way: a dict from round to operations, filled lane by lane."""
    rounds: dict[int, list] = {}
    for each in lanes:
        for offset, (a, b) in enumerate(zip(each.starts, each.stops)):
            if a is not None:
                rounds.setdefault(each.first_round + offset, []).append(
                    each.make(each.peer, a, b, *each.flags))
    return [Step(tuple(rounds[r])) for r in sorted(rounds)]


def _random_lane(rng: random.Random, peer: int) -> Lane:
    make, flags = rng.choice([(new_send, ()), (new_recv, (True,)), (new_recv, (False,)),
                              (new_recv, ())])
    n = rng.randint(0, 8)
    starts = [None if rng.random() < 0.2 else i for i in range(n)]
    stops = [None if a is None else a + rng.randint(0, 3) for a in starts]
    return Lane(rng.randint(-6, 6), make, peer, starts, stops[:rng.randint(n - 1, n)], flags)


@pytest.mark.parametrize("seed", range(20))
def test_merge_lanes_orders_rounds_then_lanes(seed: int) -> None:
    rng = random.Random(seed)
    lanes = [_random_lane(rng, peer) for peer in range(rng.randint(0, 5))]
    assert merge_lanes(lanes) == _merge_by_dict(lanes)


def test_merge_lanes_skips_empty_rounds() -> None:
    a, b = Send(1, 0, 1), Send(1, 2, 3)
    assert merge_lanes([]) == merge_lanes([lane(4, new_send, 1, [], [])]) == []
    assert merge_lanes([Lane(0, new_send, 1, [None, None], [None, None])]) == []
    assert merge_lanes([Lane(-2, new_send, 1, [0, None, 2], [1, None, 3])]) == [Step((a,)),
                                                                                   Step((b,))]


def test_operations_are_truthy() -> None:
    """merge_lanes drops falsy entries: an empty range must still count as an operation."""
    assert all([Send(0, 0, 0), Recv(0, 0, 0), Copy(0, 0, 0)])
    assert merge_lanes([lane(0, new_send, 1, [0], [0])]) == [Step((Send(1, 0, 0),))]


def test_lane_makes_one_op_per_round() -> None:
    assert lane(-1, new_recv, 5, [0, 3], [3, 9], True).ops() == [Recv(5, 0, 3, True),
                                                                 Recv(5, 3, 9, True)]
    assert lane(0, new_send, 5, [0, 3, 9], [3, 9]).ops() == [Send(5, 0, 3), Send(5, 3, 9)]


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), gc_paused():
        raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_gc_paused_decorates() -> None:
    @gc_paused()
    def probe() -> bool:
        return gc.isenabled()

    assert probe() is False and probe() is False
    assert gc.isenabled()
