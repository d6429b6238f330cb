"""NCCL's own algorithms in the model: where NCCL runs them (tuning.cc's conditions), their
closed forms pinned by hand on the GPU model, and selection naming them."""

from __future__ import annotations

import math

import pytest

import topology
from simulator.for_auto import tuning_rules
from simulator.gpu import gpu_terms
from simulator.nccl_algorithms import ALGORITHMS, available, nccl_costs, nccl_protocols
from simulator.nccl_tuner import TUNERS
from simulator.selection import UNRUN_S, select, tuning_table

H100, A100 = topology.dgx_h100(1), topology.dgx_a100(1)
ONE_PER_NODE = topology.rail_fat_tree(4, gpus_per_node=1)


@pytest.mark.parametrize("machine, collective, expected", [
    (H100, "allreduce", {"nccl-tree", "nccl-nvls"}),
    (H100, "allgather", {"nccl-nvls"}),
    (A100, "allreduce", {"nccl-tree"}),  # no NVLS before Hopper
    (topology.dgx_h100(2), "allreduce", {"nccl-tree", "nccl-nvlstree"}),  # NVLS: CollNet only
    (topology.dgx_h100(2), "reduce_scatter", set()),
    (ONE_PER_NODE, "allgather", {"nccl-pat"}),
    (ONE_PER_NODE, "allreduce", {"nccl-tree"}),
    (topology.flat(8, 1e-6, 1e-9), "allreduce", set()),  # no GPU model NCCL's is known for
])
def test_nccl_runs_each_where_tuning_cc_says(machine, collective, expected) -> None:
    assert {a for a in ALGORITHMS if available(collective, a, machine)} == expected
    assert not available(collective, "nccl-tree", machine, nranks=machine.nranks - 1)


def test_nvls_runs_simple_only_and_says_so() -> None:
    assert nccl_protocols("nccl-nvls", H100) == ("Simple",)
    assert not available("allreduce", "nccl-nvls", H100, protocol="LL")
    with pytest.raises(ValueError, match="algorithm='nccl-nvls' is not allowed"):
        nccl_costs("allreduce", "nccl-nvls", H100, [8], "LL")


def test_nvls_is_the_switch_reducing_at_nvlink_rate() -> None:
    machine, _ = gpu_terms(H100, "Simple")
    rate = 1 / machine.beta(0, 1) * 0.85 * 7 / 8  # tuning.cc nvlsEfficiency, (heads-1)/heads
    n = 1 << 30
    small, large = nccl_costs("allreduce", "nccl-nvls", H100, [0, n])
    assert small == pytest.approx(25e-6)  # tuning.cc hwLat NVLink NVLS; H100 launch 0
    assert large - small == pytest.approx(n * (1 + 1 / 8) / rate)  # no GPU reduction
    gather = nccl_costs("allgather", "nccl-nvls", H100, [n])[0]
    assert gather - small == pytest.approx(n * 7 / 8 / rate)


def test_nccls_tree_is_a_chain_in_the_node_and_a_tree_over_nodes() -> None:
    for nodes in (1, 2, 8):
        machine = topology.dgx_h100(nodes)
        terms, call_s = gpu_terms(machine, "LL", "tree")
        depth = 2 * (7 * terms.alpha(0, 1) + int(math.log2(nodes)) * (
            terms.alpha(0, 8) if nodes > 1 else 0))
        assert nccl_costs("allreduce", "nccl-tree", machine, [0], "LL")[0] == \
            pytest.approx(call_s + depth)
    two, eight = (nccl_costs("allreduce", "nccl-nvlstree", topology.dgx_h100(k), [1 << 33])[0]
                  for k in (2, 8))
    assert eight > two  # on two nodes each sends half what it sends on more


def test_pat_moves_what_a_ring_moves_in_log_rounds() -> None:
    machine, call_s = gpu_terms(ONE_PER_NODE, "Simple")
    n = 1 << 28
    t = nccl_costs("allgather", "nccl-pat", ONE_PER_NODE, [n])[0]
    assert t == pytest.approx(call_s + 2 * machine.alpha(0, 1) + n * 3 / 4 * machine.beta(0, 1))


def test_selection_names_them_where_asked_and_auto_runs_them_natively() -> None:
    names = ("ring", "nccl-nvls", "nccl-tree")
    small, large = (select("allreduce", n, H100, algorithms=names) for n in (1 << 10, 1 << 30))
    assert (small.algorithm, large.algorithm, large.protocol) == ("ring", "nccl-nvls", "Simple")
    assert "nccl-nvls" not in {a for a, _ in tuning_table("allreduce", H100).candidates}
    table = tuning_table("allreduce", H100, algorithms=names)
    nvls = table.candidates.index(("nccl-nvls", ()))
    assert {row[nvls] for row in table.protocol_times[0]} == {UNRUN_S}  # never under LL
    assert {r.algorithm for r in tuning_rules([table])} == {"ring", "native"}
    assert [a for a, _ in tuning_table("allreduce", A100, algorithms=names).candidates] == \
        ["ring", "nccl-tree"]
    with pytest.raises(ValueError, match="leaves no candidate"):
        tuning_table("allreduce", A100, algorithms=("nccl-nvls",))
    assert TUNERS["A100"].nvls_channels == 0
