"""Channel orders from the topology: rings cross every node boundary on one rail and use every
NIC once each way; the simulator then sees the whole machine."""

from __future__ import annotations

import dataclasses

import pytest

import topology
from collectives import Send, build_schedule, channel_orders
from collectives.algorithms.tree import tree_node
from simulator import simulate
from simulator.busbw import bandwidths
from simulator.channel_choice import schedule_params
from topology.channels import equal_node_size, nics_per_node, ranks_per_node


def _crossings(order: tuple[int, ...], size: int) -> list[tuple[int, int]]:
    """(from, to) ranks of each ring edge that leaves a node."""
    edges = zip(order, order[1:] + order[:1])
    return [(a, b) for a, b in edges if a // size != b // size]


@pytest.mark.parametrize("nodes", [2, 3, 4, 5])
def test_rings_cross_on_one_rail_and_use_every_nic_once_each_way(nodes: int) -> None:
    machine = topology.dgx_h100(nodes)
    orders = channel_orders(machine, 8, "ring")
    assert len(orders) == 8
    sends: dict[int, list[int]] = {}
    receives: dict[int, list[int]] = {}
    for order in orders:
        assert sorted(order) == list(range(8 * nodes))
        crossings = _crossings(order, 8)
        assert len(crossings) == nodes  # each node left once
        for a, b in crossings:
            assert a % 8 == b % 8, (a, b)  # one rail: the edge turns at that rail's leaf
            sends.setdefault(a // 8, []).append(a % 8)
            receives.setdefault(b // 8, []).append(b % 8)
    for node in range(nodes):
        assert sorted(sends[node]) == sorted(receives[node]) == list(range(8))


def test_one_node_and_flat_machines_keep_todays_order() -> None:
    one = topology.dgx_h100(1)
    assert channel_orders(one, 3, "ring") == (topology.ring_order(one),) * 3
    flat = topology.flat(5, 1e-6, 1e-9)
    assert channel_orders(flat, 2, "tree") == (tuple(range(5)),) * 2


def test_tree_orders_keep_nodes_together_rotated_per_channel() -> None:
    orders = channel_orders(topology.dgx_h100(2), 8, "tree")
    for c, order in enumerate(orders):
        assert [r // 8 for r in order] == [0] * 8 + [1] * 8
        assert order[0] == c and order[8] == 8 + c


@pytest.mark.parametrize("nodes", [2, 3, 5])
def test_trees_over_the_tree_orders_cross_nodes_on_the_channels_rail(nodes: int) -> None:
    """Channel c's trees leave and enter every node at GPU c (NIC c), so the 8 channels'
    network traffic is spread over the 8 NICs of every node."""
    machine = topology.dgx_h100(nodes)
    size = equal_node_size(machine)
    assert size == 8
    orders = channel_orders(machine, 8, "tree")
    for c, order in enumerate(orders):
        for t in (0, 1):
            for v, rank in enumerate(order):
                parent = tree_node(t, machine.nranks, v, size).parent
                if parent >= 0 and order[parent] // 8 != rank // 8:
                    assert order[parent] % 8 == rank % 8 == c
    schedule = build_schedule("allreduce", "tree", machine.nranks, 1 << 12,
                              **schedule_params("tree", (("channels", 8),), machine))
    crossings = [(rank, op.peer) for rank in range(machine.nranks)
                 for step in schedule.steps(rank) for op in step.ops
                 if isinstance(op, Send) and op.peer // 8 != rank // 8]
    assert all(a % 8 == b % 8 for a, b in crossings)
    assert {a for a, _ in crossings} == set(range(machine.nranks))


def test_trees_are_over_nodes_only_on_several_nodes() -> None:
    flat, one = topology.flat(5, 1e-6, 1e-9), topology.dgx_h100(1)
    assert equal_node_size(flat) is equal_node_size(one) is None
    assert "ranks_per_node" not in schedule_params("tree", (("channels", 8),), one)
    assert schedule_params("tree", (), topology.dgx_h100(2))["ranks_per_node"] == 8
    assert "ranks_per_node" not in schedule_params("tree", (), topology.dgx_h100(2), nranks=8)
    assert "ranks_per_node" not in schedule_params("ring", (), topology.dgx_h100(2))


def test_rhd_orders_cross_nodes_at_the_small_masks_on_one_rail() -> None:
    orders = channel_orders(topology.dgx_h100(4), 2, "rhd")
    for c, order in enumerate(orders):
        for v, rank in enumerate(order):
            for mask in (1, 2):  # partners across nodes, same local rank
                peer = order[v ^ mask]
                assert peer // 8 != rank // 8 and peer % 8 == rank % 8 == (v // 4 + c) % 8
            assert order[v ^ 4] // 8 == rank // 8  # larger masks stay inside the node


def test_ranks_and_nics_per_node() -> None:
    assert ranks_per_node(topology.dgx_h100(3)) == 8
    assert nics_per_node(topology.dgx_h100(3)) == 8 and nics_per_node(topology.dgx_a100(1)) == 0
    uneven = dataclasses.replace(topology.rail_fat_tree(2, gpus_per_node=2), fabric=None,
                                 placement=("n0.gpu0", "n0.gpu1", "n1.gpu0"))
    with pytest.raises(ValueError, match="unequal size"):
        ranks_per_node(uneven)


@pytest.mark.parametrize("args, error, match", [
    (("machine", 2, "ring"), TypeError, "Topology"),
    ((None, 0, "ring"), ValueError, "channels=0"),
    ((None, 2, "hier"), ValueError, "algorithm='hier'"),
])
def test_bad_channel_orders_input_is_refused(args: tuple, error: type, match: str) -> None:
    machine = topology.dgx_h100(2)
    args = (args[0] if args[0] is not None else machine, *args[1:])
    with pytest.raises(error, match=match):
        channel_orders(*args)


@pytest.mark.parametrize("nodes", [2, 3])
def test_ring_with_a_channel_per_nic_reaches_the_network_bound(nodes: int) -> None:
    machine = topology.dgx_h100(nodes, gpu_model=None)  # line rates: the links alone
    nbytes = 1 << 30
    bound = 8 * 50e9  # NICs per node x NIC rate (the preset's NDR 400 Gb/s)
    busbw = {}
    for channels in (1, 8):
        schedule = build_schedule("allreduce", "ring", machine.nranks, nbytes // 4,
                                  channels=channels,
                                  order=channel_orders(machine, channels, "ring"))
        time_s = simulate(schedule, machine, trace=False).time_s
        busbw[channels] = bandwidths("allreduce", machine.nranks, nbytes, time_s)[1]
    assert busbw[8] >= 0.95 * bound
    assert busbw[1] <= bound / 8 * 1.01
