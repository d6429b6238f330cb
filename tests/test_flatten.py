"""Reading a schedule's lanes gives the arrays that reading its steps gives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from collectives import build_schedule
from collectives.rounds import Lane, merge_lanes
from collectives.schedule import Copy, Op, Recv, Schedule, Send, Step, new_recv, new_send
import topology
from simulator import flatten as flatten_module
from simulator.flatten import _ends, _lane_ends, flatten

pytestmark = pytest.mark.xdist_group("compiled")  # one worker compiles (or loads) _merge


def _by_rank(start: np.ndarray, steps: np.ndarray, *per_end: np.ndarray) -> list:
    """Each rank's steps, each a list of its ends (code, then each of ``per_end``), read
    by following the heads from the rank's first step."""
    end_at = np.cumsum(steps >= 0) - 1  # an entry's place among the ends
    ranks = []
    for head in start.tolist():
        read = []
        while head != len(steps) - 1:
            stop = head + 1
            while steps[stop] >= 0:
                stop += 1
            read.append([(int(steps[e]), *(int(column[end_at[e]]) for column in per_end))
                         for e in range(head + 1, stop)])
            head -= int(steps[head])
        ranks.append(read)
    return ranks


def _same(schedule: Schedule) -> bool:
    from_steps, from_lanes = _ends(schedule), _lane_ends(schedule)
    return all(a.dtype == b.dtype for a, b in zip(from_steps, from_lanes)) and \
        _by_rank(*from_steps) == _by_rank(*from_lanes)


@pytest.mark.parametrize("algorithm", ["ring", "tree", "pipeline"])
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_lanes_read_as_the_steps(algorithm: str, collective: str) -> None:
    for p in (1, 2, 3, 5, 8, 13):
        for count in (0, 1, 7, 1000, 100003):
            for params in ({}, {"segments": 1}, {"segments": 3})[:1 if algorithm == "ring" else 3]:
                schedule = build_schedule(collective, algorithm, p, count, **params)
                assert schedule.lanes is not None
                assert _same(schedule), (p, count, params)


def test_gaps_copies_and_negative_rounds_read_as_the_steps() -> None:
    def copy(peer: int, start: int, stop: int) -> Op:
        return Copy(start, stop, peer)

    lanes = {0: [Lane(-3, new_send, 1, [0, None, 4, 6], [2, None, 6, 9]),
                 Lane(-1, copy, 5, [None, 1], [None, 2]),
                 Lane(2, new_recv, 1, [None, 0], [None, 3], (True,)),
                 Lane(0, new_recv, 1, [], [])],
             1: [Lane(5, new_recv, 0, [0, 2, 4, 6], [2, 4, 6], (False,)),
                 Lane(9, new_send, 0, [0], [3])]}
    schedule = Schedule("allreduce", "handmade", 2, 10, (),
                        lambda rank: tuple(merge_lanes(lanes[rank])), lanes.__getitem__)
    assert _same(schedule)


def test_rhd_alone_has_no_lanes() -> None:
    assert build_schedule("allreduce", "rhd", 4, 100).lanes is None


@pytest.mark.parametrize("algorithm", ["ring", "tree", "rhd", "pipeline"])
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_channels_and_orders_read_as_the_steps(algorithm: str, collective: str) -> None:
    for p in (2, 5, 8):
        reverse = tuple(range(p))[::-1]
        for count in (0, 3, 1000):
            for channels in (1, 2, 3):
                orders = [reverse] * channels if channels == 1 else \
                    [tuple(range(p))] + [reverse] * (channels - 1)
                schedule = build_schedule(collective, algorithm, p, count, channels=channels,
                                          order=orders)
                assert schedule.lanes is not None
                assert _same(schedule), (p, count, channels)


@pytest.mark.parametrize("algorithm", ["tree", "rhd"])
@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_channels_cut_at_blocks_read_as_columns_as_their_lanes(algorithm: str,
                                                               collective: str) -> None:
    machine = topology.dgx_h100(2, gpu_model=None)
    orders = topology.channels.node_major(machine, 8)
    for count in (1001, 100003):  # blocks of uneven pieces per channel
        schedule = build_schedule(collective, algorithm, 16, count, channels=8, order=orders)
        assert schedule.lane_columns is not None
        as_columns = flatten(schedule, machine, 4)
        as_lanes = flatten(replace(schedule, lane_columns=None), machine, 4)
        for name in ("rank_start", "steps", "message", "message_route", "route_ranks"):
            assert np.array_equal(getattr(as_columns, name), getattr(as_lanes, name)), name


@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_hier_reads_as_its_steps(collective: str) -> None:
    for inner in ("ring", "tree", "rhd"):
        schedule = build_schedule(collective, "hier", 6, 101, channels=2, ranks_per_node=2,
                                  inner=inner)
        assert schedule.lanes is not None and _same(schedule)


def test_pairs_numbered_by_sorting_as_through_an_array() -> None:
    machine = topology.dgx_h100(nodes=2)
    schedule = build_schedule("allreduce", "tree", 16, 1000, channels=2)
    dense = flatten(schedule, machine, 4)
    hashed = flatten(schedule, machine, 4, dense_pairs=0)
    assert all(np.array_equal(getattr(dense, name), getattr(hashed, name))
               for name in dense.__dataclass_fields__)


@pytest.mark.parametrize("ranks", [
    [[[Send(1, 0, 4)]], [[]]],  # a send without its receive
    [[[Send(1, 0, 4)], [Send(1, 0, 4)]], [[Recv(0, 0, 4)], [Recv(2, 0, 4)]], [[]]],  # two pairs
    [[[Send(1, 0, 4)]], [[Recv(0, 0, 5)]]],  # ends of different lengths
])
def test_unmatched_ends_are_no_flat_schedule(ranks: list) -> None:
    schedule = Schedule.from_steps("allgather", "hand", 64, [[Step(tuple(ops)) for ops in r]
                                                             for r in ranks])
    machine = topology.flat(len(ranks), 1e-6, 1e-9)
    assert flatten(schedule, machine, 4) is None
    assert flatten(schedule, machine, 4, dense_pairs=0) is None


def test_steps_and_lengths_are_int32_while_they_fit() -> None:
    schedule = build_schedule("allreduce", "ring", 8, 1000)
    assert flatten(schedule, topology.flat(8, 1e-6, 1e-9), 4).steps.dtype == np.int32
    assert flatten_module._steps_dtype(32767) is np.int32  # codes up to 2 p^2: int32's max
    assert flatten_module._steps_dtype(32768) is np.int64
    assert flatten_module._narrowed(np.array([0, -1, 2**31 - 1])).dtype == np.int32
    assert flatten_module._narrowed(np.array([0, 2**31])).dtype == np.int64


def test_a_steps_stream_links_each_ranks_steps_and_names_their_messages() -> None:
    schedule = build_schedule("allreduce", "ring", 3, 3)
    flat = flatten(schedule, topology.flat(3, 1e-6, 1e-9), 4)
    assert flat is not None
    routes = [tuple(pair) for pair in flat.route_ranks.tolist()]
    ends = 0
    for rank, read in enumerate(_by_rank(flat.rank_start, flat.steps)):
        expected = [[(op.peer, type(op).__name__) for op in step.ops
                     if type(op) in (Send, Recv)] for step in schedule.steps(rank)]
        assert [[(routes[flat.message_route[c >> 1]][1 - (c & 1)], "Recv" if c & 1 else "Send")
                 for c, in step] for step in read] == [step for step in expected if step]
        assert all(routes[flat.message_route[c >> 1]][c & 1] == rank  # the rank's own end
                   for step in read for c, in step)
        ends += sum(map(len, read))
    # a message's send and receive name it, each once
    codes = flat.steps[flat.steps >= 0]
    assert ends == len(codes) == 2 * len(flat.message) == 3 * 2 * 2 * 2
    assert sorted(codes.tolist()) == list(range(2 * len(flat.message)))


def _layout_order(flat) -> list[tuple[int, int]]:
    """Each step's rank and its place among the rank's steps, in the order of ``steps``;
    every head is a step of one rank, each pointing forward to the rank's next."""
    owner = {}
    for rank, head in enumerate(flat.rank_start.tolist()):
        k = 0
        while head != len(flat.steps) - 1:
            assert flat.steps[head] < 0 and head not in owner
            owner[head] = (rank, k)
            head -= int(flat.steps[head])
            k += 1
    heads = np.flatnonzero(flat.steps < 0)[:-1].tolist()  # the last: after every last step
    assert sorted(owner) == heads
    return [owner[head] for head in heads]


def _numbered_as_met(flat) -> bool:
    messages = (flat.steps[flat.steps >= 0] >> 1).tolist()
    return list(dict.fromkeys(messages)) == list(range(len(flat.message)))


def test_steps_read_as_steps_lie_a_few_places_together_rank_by_rank() -> None:
    ring = build_schedule("allreduce", "ring", 6, 1000)
    as_steps = Schedule.from_steps("allreduce", "ring", ring.count,
                                   [list(ring.steps(rank)) for rank in range(6)])
    for schedule in (as_steps, build_schedule("allreduce", "rhd", 6, 1000)):
        assert schedule.lanes is None
        flat = flatten(schedule, topology.flat(6, 1e-6, 1e-9), 4)
        assert flat is not None and _numbered_as_met(flat)
        order = _layout_order(flat)  # a few places together, rank by rank
        together = flatten_module._TOGETHER
        assert together > 1 and order == sorted(
            order, key=lambda step: (step[1] // together, step[0], step[1]))


@pytest.mark.parametrize("algorithm", ["tree", "pipeline"])
def test_steps_read_from_lanes_lie_by_the_schedules_rounds(algorithm: str) -> None:
    schedule = build_schedule("allreduce", algorithm, 7, 1000, segments=3)
    flat = flatten(schedule, topology.flat(7, 1e-6, 1e-9), 4)
    assert flat is not None and _numbered_as_met(flat)
    rounds = []  # each rank's rounds with a message end
    for rank in range(7):
        ends = {lane.first_round + i for lane in schedule.lanes(rank)
                for i, op in enumerate(lane.ops()) if type(op) in (Send, Recv)}
        rounds.append(sorted(ends))
    laid = [rounds[rank][k] for rank, k in _layout_order(flat)]
    blocks = [(when - min(laid)) // flatten_module._TOGETHER for when in laid]
    assert blocks == sorted(blocks) and len(set(blocks)) > 1 and laid != sorted(laid)
