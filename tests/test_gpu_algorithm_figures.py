"""Figures of one algorithm in the GPU model (tuning.cc's Tree figures for the tree).

The expectations come from the model's own figures (``topology.gpu``), so a change to how
the simulator applies them fails here.
"""

from __future__ import annotations

import dataclasses

import pytest

import topology
from collectives import build_schedule
from collectives.schedule import Recv, Schedule, Send, Step
from simulator import simulate
from simulator.gpu import gpu_terms, route_shares
from simulator.nccl_tuner import ll_share
from simulator.analytic import price_one as machine_cost
from topology import AlgorithmFigures, GpuModel, LinkFigures, Protocol, TopologyError

TWO = topology.dgx_h100(2)
MODEL = TWO.gpu


def _message(algorithm: str, count: int, p: int = 16) -> Schedule:
    """Rank 0 sends ``count`` elements to rank 8 (the other node), named ``algorithm``."""
    ranks: list[list] = [[] for _ in range(p)]
    ranks[0], ranks[8] = [Step((Send(8, 0, count),))], [Step((Recv(0, 0, count),))]
    return Schedule.from_steps("allgather", algorithm, count, ranks)


@pytest.mark.parametrize("protocol", MODEL.protocol_names)
def test_a_tree_pays_the_trees_network_latency_and_a_ring_keeps_the_rings(protocol: str) -> None:
    tree = MODEL.algorithm_figures("tree")
    for algorithm in ("ring", "rhd", "pipeline", "tree"):
        machine, call_s = gpu_terms(TWO, protocol, algorithm)
        own = dict(dict(tree.latency_s)["ib"]) if algorithm == "tree" else {}
        ib = [link for link in machine.links if link.kind == "ib"]
        assert {link.latency_s for link in ib} == {
            own.get(protocol, MODEL.figures("ib").latency(protocol))}
        expected = dict(tree.call_s if algorithm == "tree" else ()).get(
            protocol, MODEL.protocol(protocol).call_s)
        assert call_s == pytest.approx(MODEL.launch_s + expected, abs=1e-15)
        seconds = simulate(_message(algorithm, 1), TWO, protocol=protocol).time_s
        # NCCL's 16 channels cross the network out of step: the latency waits for a share
        shares = route_shares(machine, machine.route(0, 8))
        assert shares == MODEL.channels
        assert seconds == pytest.approx(call_s + machine.alpha(0, 8)
                                        + 4 * machine.beta(0, 8) / shares, rel=1e-12)
    assert gpu_terms(TWO, protocol, "rhd")[0] is gpu_terms(TWO, protocol, "ring")[0]


def test_the_trees_network_hop_is_tuning_cc_s() -> None:
    ring, tree = (gpu_terms(TWO, "LL", a)[0] for a in ("ring", "tree"))
    # tuning.cc hwLat NET {LL}: Tree 5.0 us, Ring 2.7 us a hop, the pcie post overhead alike
    assert tree.alpha(0, 8) - ring.alpha(0, 8) == pytest.approx(5.0e-6 - 2.7e-6, rel=1e-9)
    rates = [(1 / ring.beta(0, 8), 1 / tree.beta(0, 8)) for ring, tree in
             [(gpu_terms(TWO, k, "ring")[0], gpu_terms(TWO, k, "tree")[0])
              for k in MODEL.protocol_names]]
    assert all(t < r for r, t in rates)  # every tree protocol derated below the ring's


def test_engines_and_closed_form_agree_under_an_algorithms_figures() -> None:
    flat = GpuModel((Protocol("LL", 0.4, 5e-6), Protocol("Simple", 1.0, 8e-6)),
                    (LinkFigures("flat", 0.8, (("LL", 1e-6), ("Simple", 4e-6))),),
                    reduce_Bps=1e12, launch_s=2e-6,
                    algorithms=(AlgorithmFigures("tree", (("LL", 7e-6),), (("LL", 0.2),),
                                                 (("flat", (("LL", 3e-6),)),)),))
    machine = dataclasses.replace(topology.flat(6, 1e-6, 1e-10), gpu=flat)
    plain = dataclasses.replace(machine, gpu=dataclasses.replace(flat, algorithms=()))
    schedule = build_schedule("allreduce", "tree", 6, 6 * 400, segments=2)
    events = simulate(schedule, machine, protocol="LL", engine="events")
    assert simulate(schedule, machine, protocol="LL", engine="compiled") == events
    assert events.time_s == pytest.approx(
        machine_cost("allreduce", "tree", machine, 6 * 400 * 4, protocol="LL",
                     segments=2), rel=1e-9)
    assert events.time_s > simulate(schedule, plain, protocol="LL").time_s
    assert simulate(schedule, machine, protocol="Simple") == \
        simulate(schedule, plain, protocol="Simple")


def test_a_file_overrides_an_algorithms_figure() -> None:
    text = topology.dumps(TWO)
    assert topology.loads(text) == TWO
    block = text.index("[gpu.algorithms.latency.ib]")
    edited = topology.loads(text[:block] + text[block:].replace('LL = "2.5 us"',
                                                                'LL = "4 us"', 1))
    tree, _ = gpu_terms(edited, "LL", "tree")
    assert {link.latency_s for link in tree.links if link.kind == "ib"} == {4e-6}
    assert gpu_terms(edited, "LL", "ring")[0].links == gpu_terms(TWO, "LL", "ring")[0].links


@pytest.mark.parametrize("old, new, message", [
    ("[gpu.algorithms.bandwidth_fraction]\nLL = ", "[gpu.algorithms.bandwidth_fraction]\nLL = 1",
     r"algorithms tree.bandwidth_fraction\['LL'\] = 1\d"),
    ("[gpu.algorithms.latency.ib]\nLL", "[gpu.algorithms.latency.ib]\nLL64",
     r"algorithms tree names protocols \['LL64'\]"),
    ("[gpu.algorithms.latency.ib]", "[gpu.algorithms.latency.infiniband]",
     r"latency_s names link kinds \['infiniband'\]"),
    ('name = "tree"', 'name = "tree"\ncalls = 1', r"gpu.algorithms\[0\]: unknown key 'calls'"),
    ('[gpu.algorithms.call]\nLL = "6.8 us"', '[gpu.algorithms.call]\nLL = "6.8 parsecs"',
     r"gpu.algorithms\[0\].call.LL"),
])
def test_a_bad_algorithms_table_names_the_field(old: str, new: str, message: str) -> None:
    text = topology.dumps(TWO)
    assert old in text
    with pytest.raises(TopologyError, match=message):
        topology.loads(text.replace(old, new, 1))


def test_figures_must_be_unique_per_algorithm() -> None:
    tree = MODEL.algorithm_figures("tree")
    with pytest.raises(TopologyError, match=r"algorithms \['tree', 'tree'\] are not allowed"):
        dataclasses.replace(MODEL, algorithms=(tree, tree))


@pytest.mark.parametrize("preset", [topology.dgx_a100, topology.dgx_h100])
@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_the_trees_ll_carries_what_nccl_s_cap_on_ll_leaves(preset, nodes: int) -> None:
    machine = preset(nodes)
    share = ll_share(machine.gpu.nccl_kind, "tree", machine.nranks, nodes)
    assert share == 1.0 if nodes == 1 else share < 1.0  # tuning.cc llMaxBws binds across nodes
    # NVLink, GPU 0 -> 1, no flow limit: a rate is the line rate times the protocol's fraction
    for algorithm, capped in (("tree", share), ("ring", 1.0)):  # the Ring's LL holds it already
        ll, ll128 = (1 / gpu_terms(machine, k, algorithm)[0].beta(0, 1) for k in ("LL", "LL128"))
        fraction = [machine.gpu.link_terms("nvlink", k, algorithm)[1] for k in ("LL", "LL128")]
        assert ll / ll128 == pytest.approx(capped * fraction[0] / fraction[1], rel=1e-9)
