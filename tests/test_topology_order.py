"""ring_order: NVLink neighbours first, one network crossing per node boundary, same rail."""

import pytest

import topology
from collectives import build_schedule, interpret


def _ring_hops(t, order):
    return [t.hops(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]


@pytest.mark.parametrize("nodes", [2, 3, 4, 5])
def test_dgx_ring_crosses_each_boundary_once_on_one_rail(nodes):
    t = topology.dgx_h100(nodes)
    order = topology.ring_order(t)
    assert sorted(order) == list(range(t.nranks))
    hops = _ring_hops(t, order)
    # 8 * nodes - nodes NVLink steps (2 hops), nodes same-rail NIC-leaf-NIC steps (4 hops)
    assert hops.count(2) == 7 * nodes and hops.count(4) == nodes
    assert [r // 8 for r in order] == sorted(r // 8 for r in order)  # node by node
    natural = _ring_hops(t, tuple(range(t.nranks)))
    assert natural.count(6) == nodes  # the identity order crosses rails through a spine


def test_leaf_groups_pay_the_spine_only_between_groups():
    t = topology.dgx_a100(8, nodes_per_leaf=4)
    hops = _ring_hops(t, topology.ring_order(t))
    assert hops.count(6) == 2 and hops.count(4) == 6


@pytest.mark.parametrize("t", [topology.flat(7, 1e-6, 1e-9), topology.dgx_h100(1),
                               topology.pcie_node(8)])
def test_single_node_order_is_the_identity(t):
    assert topology.ring_order(t) == tuple(range(t.nranks))


def test_pcie_ring_keeps_switch_neighbours_together():
    t = topology.pcie_node(8, gpus_per_switch=4, sockets=2)
    order = topology.ring_order(t)
    assert [r // 4 for r in order] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_order_drives_the_schedule_builder():
    import numpy as np

    t = topology.dgx_h100(2)
    order = topology.ring_order(t)
    schedule = build_schedule("allreduce", "ring", t.nranks, 40, order=order)
    assert dict(schedule.params)["order"] == order
    inputs = [np.arange(40, dtype=np.float64) * (r + 1) for r in range(16)]
    out = interpret(schedule, inputs)
    assert all(np.array_equal(o, sum(inputs)) for o in out)


def test_costs_agree_with_routes():
    t = topology.dgx_h100(3)
    for a in (0, 13):
        forward, backward = t.costs(a), t.costs(a, reverse=True)
        for b in range(t.nranks):
            assert forward[b] == (t.hops(a, b), pytest.approx(t.alpha(a, b)))
            assert backward[b] == (t.hops(b, a), pytest.approx(t.alpha(b, a)))


def test_ring_order_rejects_non_topology():
    with pytest.raises(TypeError, match="topology=8"):
        topology.ring_order(8)
