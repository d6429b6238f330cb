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
    for first, entries in lanes:
        for offset, op in enumerate(entries):
            if op is not None:
                rounds.setdefault(first + offset, []).append(op)
    return [Step(tuple(rounds[r])) for r in sorted(rounds)]


@pytest.mark.parametrize("seed", range(20))
def test_merge_lanes_orders_rounds_then_lanes(seed: int) -> None:
    rng = random.Random(seed)
    kinds = [lambda peer, i: Send(peer, i, i), lambda peer, i: Recv(peer, i, i + 1, True),
             lambda peer, i: Copy(i, i + 2, peer), lambda peer, i: None]
    lanes = [(rng.randint(-6, 6), [rng.choice(kinds)(peer, i) for i in range(rng.randint(0, 8))])
             for peer in range(rng.randint(0, 5))]
    assert merge_lanes(lanes) == _merge_by_dict(lanes)


def test_merge_lanes_skips_empty_rounds() -> None:
    a, b = Send(1, 0, 1), Recv(2, 0, 1)
    assert merge_lanes([]) == merge_lanes([(4, [])]) == merge_lanes([(0, [None, None])]) == []
    assert merge_lanes([(-2, [a, None, b])]) == [Step((a,)), Step((b,))]


def test_operations_are_truthy() -> None:
    """merge_lanes drops falsy entries: an empty range must still count as an operation."""
    assert all([Send(0, 0, 0), Recv(0, 0, 0), Copy(0, 0, 0)])


def test_lane_makes_one_op_per_round() -> None:
    assert lane(-1, new_recv, 5, [0, 3], [3, 9], True) == (-1, [Recv(5, 0, 3, True),
                                                                Recv(5, 3, 9, True)])
    assert lane(0, new_send, 5, [0, 3, 9], [3, 9]) == (0, [Send(5, 0, 3), Send(5, 3, 9)])


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
