"""Routes, hop counts, alpha and beta on every preset."""

import pickle

import pytest

import topology
from topology.presets import (HDR_Bps, IB_LATENCY_S, NDR_Bps, NVLINK3_Bps, NVLINK4_Bps,
                              NVLINK_LATENCY_S, PCIE4_X16_Bps, PCIE_LATENCY_S, UPI_Bps,
                              UPI_LATENCY_S)

from .reference import explicit_mesh


def _path(t: topology.Topology, a: int, b: int) -> list[str]:
    """Device ids along the route from rank a to rank b, both ends included."""
    route = t.route(a, b)
    return [t.links[route[0]].src] + [t.links[i].dst for i in route] if route else []


def test_flat_gives_every_rank_one_port_into_a_switch():
    t = topology.flat(5, 3e-6, 2e-10)
    assert len(t.links) == 10 and t.devices[-1] == topology.Device("switch", "switch")
    for a in range(5):
        for b in range(5):
            if a != b:  # up a's port, down b's: every route is two links, alpha in all
                assert _path(t, a, b) == [f"r{a}", "switch", f"r{b}"]
                assert t.route(a, b) == (2 * a, 2 * b + 1)
                assert (t.alpha(a, b), t.hops(a, b)) == (3e-6, 2)
                assert t.beta(a, b) == pytest.approx(2e-10, rel=1e-15)
    assert {link.kind for link in t.links} == {"flat"}
    assert t.route(3, 3) == () and t.alpha(3, 3) == 0.0 and t.beta(3, 3) == 0.0
    assert pickle.loads(pickle.dumps(t)) == t


@pytest.mark.parametrize("alpha", [3e-6, 1e-7, 7.3e-6, 1.1e-5])
def test_flat_routes_sum_to_alpha_exactly(alpha: float) -> None:
    t = topology.flat(3, alpha, 1e-9)  # halves are exact in binary floating point
    assert t.alpha(0, 2) == alpha and t.costs(0)[2] == (2, alpha)


def test_mesh_every_pair_its_own_link():
    t = topology.mesh(5, 3e-6, 2e-10)
    routes = {(a, b): t.route(a, b) for a in range(5) for b in range(5) if a != b}
    assert all(len(r) == 1 for r in routes.values())
    assert len({r[0] for r in routes.values()}) == 20  # no two pairs share a link
    for (a, b), (i,) in routes.items():
        assert (t.links[i].src, t.links[i].dst) == (f"r{a}", f"r{b}")
    assert t.alpha(2, 4) == 3e-6
    assert t.beta(2, 4) == pytest.approx(2e-10, rel=1e-15)
    assert t.route(3, 3) == () and t.alpha(3, 3) == 0.0 and t.beta(3, 3) == 0.0


def test_mesh_holds_no_link_objects() -> None:
    t = topology.mesh(1024, 5e-6, 4e-11)
    assert isinstance(t.links, topology.FullMesh) and len(t.links) == 1024 * 1023
    assert len(pickle.dumps(t)) < 100_000  # a million links would take tens of megabytes
    assert pickle.loads(pickle.dumps(t)) == t
    assert t.links[-1] == topology.Link("r1023", "r1022", 5e-6, 1 / 4e-11, "flat")
    assert t.route(1023, 1022) == (len(t.links) - 1,) and t.beta(7, 9) == pytest.approx(4e-11)
    assert t.bandwidths_Bps == (1 / 4e-11,) * len(t.links)
    with pytest.raises(IndexError, match="link 1047552 is out of range"):
        t.links[len(t.links)]


@pytest.mark.parametrize("nranks", [1, 2, 3, 6])
def test_mesh_is_the_full_mesh_it_stands_for(nranks: int) -> None:
    mesh, explicit = topology.mesh(nranks, 3e-6, 2e-10), explicit_mesh(nranks, 3e-6, 2e-10)
    assert tuple(mesh.links) == mesh.links[:] == explicit.links
    assert [mesh.links[i] for i in range(-len(mesh.links), len(mesh.links))] == \
        list(explicit.links) * 2
    assert mesh.bandwidths_Bps == explicit.bandwidths_Bps
    for a in range(nranks):
        assert mesh.costs(a) == explicit.costs(a)
        assert mesh.costs(a, reverse=True) == explicit.costs(a, reverse=True)
        for b in range(nranks):
            assert mesh.route(a, b) == explicit.route(a, b)
            assert (mesh.alpha(a, b), mesh.beta(a, b), mesh.hops(a, b)) == \
                (explicit.alpha(a, b), explicit.beta(a, b), explicit.hops(a, b))
    assert topology.ring_order(mesh) == topology.ring_order(explicit)


def test_a_mesh_checks_its_devices() -> None:
    d = topology.Device
    with pytest.raises(topology.TopologyError, match="mesh ids 2 ids"):
        topology.FullMesh(("a", "a"), 1e-6, 1e9, "x")
    with pytest.raises(topology.TopologyError, match="mesh latency_s = 0.0"):
        topology.FullMesh(("a", "b"), 0.0, 1e9, "x")
    with pytest.raises(topology.TopologyError, match=r"links.ids\[1\] = 'c' names no device"):
        topology.Topology("t", (d("a", "gpu"), d("b", "gpu")),
                          topology.FullMesh(("a", "c"), 1e-6, 1e9, "x"), ("a", "b"))
    with pytest.raises(topology.TopologyError,
                       match=r"placement\[0\] = 'a' cannot reach placement\[1\] = 'b'"):
        topology.Topology("t", (d("a", "gpu"), d("b", "gpu"), d("c", "gpu")),
                          topology.FullMesh(("b", "c"), 1e-6, 1e9, "x"), ("a", "b"))
    alone = topology.Topology("t", (d("a", "gpu"), d("b", "gpu")),
                              topology.FullMesh(("b",), 1e-6, 1e9, "x"), ("a", "a"))
    assert alone.route(0, 1) == () and len(alone.links) == 0


def test_default_flat_is_flat_with_the_default_figures() -> None:
    t = topology.default_flat(4)
    assert t.name == "default flat(4)" and t.nranks == 4
    assert (t.alpha(0, 3), t.beta(1, 2), t.gamma_s_per_byte) == (
        topology.DEFAULT_ALPHA_S, pytest.approx(topology.DEFAULT_BETA_S_PER_BYTE),
        topology.DEFAULT_GAMMA_S_PER_BYTE)
    assert t.links == topology.flat(4, topology.DEFAULT_ALPHA_S,
                                    topology.DEFAULT_BETA_S_PER_BYTE).links
    assert topology.preset("flat", nranks=4).links == t.links  # the command lines' default


@pytest.mark.parametrize("preset, nvlink, nic, pcie", [
    (topology.dgx_a100, NVLINK3_Bps, HDR_Bps, PCIE4_X16_Bps),
    (topology.dgx_h100, NVLINK4_Bps, NDR_Bps, None),
])
def test_dgx_routes(preset, nvlink, nic, pcie):
    t = preset(3)
    assert t.nranks == 24
    assert _path(t, 1, 6) == ["n0.gpu1", "n0.nvswitch", "n0.gpu6"]
    assert t.alpha(1, 6) == pytest.approx(2 * NVLINK_LATENCY_S)
    assert 1 / t.beta(1, 6) == pytest.approx(nvlink)
    # same rail, other node: NIC - leaf - NIC, no spine
    assert _path(t, 3, 19) == ["n0.gpu3", "n0.nic3", "leaf0.rail3", "n2.nic3", "n2.gpu3"]
    assert t.alpha(3, 19) == pytest.approx(2 * PCIE_LATENCY_S + 2 * IB_LATENCY_S)
    assert 1 / t.beta(3, 19) == pytest.approx(nic)
    # other rail, other node: up to a spine and down the other rail
    path = _path(t, 3, 12)
    assert len(path) == 7 and path[3].startswith("spine") and path[4] == "leaf0.rail4"
    assert t.alpha(3, 12) == pytest.approx(2 * PCIE_LATENCY_S + 4 * IB_LATENCY_S)
    if pcie is not None:
        assert t.links[t.route(3, 12)[0]].bandwidth_Bps == pcie


def test_fat_tree_groups_oversubscription_and_ecmp():
    t = topology.dgx_h100(6, nodes_per_leaf=2, spines=4, oversubscription=2.0)
    # nodes 0 and 4 are in different leaf groups: even the same rail climbs to a spine
    assert t.hops(0, 8) == 4 and t.hops(0, 32) == 6
    assert _path(t, 0, 32)[2:5:2] == ["leaf0.rail0", "leaf2.rail0"]
    assert 1 / t.beta(0, 32) == pytest.approx(2 * NDR_Bps / 2.0 / 4)  # leaf-spine uplink
    spines = {_path(t, a, b)[3] for a in range(8) for b in range(32, 40)}
    assert spines == {f"spine{k}" for k in range(4)}  # pairs spread over all spines


@pytest.mark.parametrize("shape", [
    dict(nodes=5, gpus_per_node=3, nodes_per_leaf=2, spines=3),
    dict(nodes=3, gpus_per_node=1, nodes_per_leaf=1, spines=2),
    dict(nodes=4, gpus_per_node=8, nodes_per_leaf=32, spines=8, oversubscription=2.0),
])
def test_fat_tree_routes_in_closed_form_are_the_searched_routes(shape):
    t = topology.rail_fat_tree(**shape)
    searched = topology.Topology(t.name, t.devices, t.links, t.placement, gpu=t.gpu)
    assert t.fabric is not None and searched.fabric is None
    pairs = [(a, b) for a in range(t.nranks) for b in range(t.nranks)]
    assert [t.route(a, b) for a, b in pairs] == [searched.route(a, b) for a, b in pairs]
    assert t.costs(1) == searched.costs(1)
    # many pairs at once: in closed form, and pair by pair where the search routes
    flat = [link for a, b in pairs for link in t.route(a, b)]
    for machine in (t, searched):
        lengths, links = machine.routes(*zip(*pairs))
        assert lengths.tolist() == [len(t.route(a, b)) for a, b in pairs]
        assert links.tolist() == flat
    with pytest.raises(ValueError, match=rf"b holds rank {t.nranks}; ranks must be in"):
        t.routes([0], [t.nranks])


def test_a_fabric_is_refused_where_the_links_are_not_its_layout():
    t, other = topology.dgx_h100(3), topology.dgx_h100(2)
    with pytest.raises(topology.TopologyError, match="fabric = RailFatTree"):
        topology.Topology("reversed", t.devices, t.links[::-1], t.placement, fabric=t.fabric)
    with pytest.raises(topology.TopologyError, match="not laid out"):
        topology.Topology("other", t.devices, t.links, t.placement, fabric=other.fabric)
    with pytest.raises(TypeError, match="fabric = int"):
        topology.Topology("int", t.devices, t.links, t.placement, fabric=3)


def test_routes_are_deterministic_and_cached():
    a, b = topology.dgx_h100(4), topology.dgx_h100(4)
    assert [a.route(r, 31 - r) for r in range(32)] == [b.route(r, 31 - r) for r in range(32)]
    assert a.route(0, 17) is a.route(0, 17)


def test_topologies_pickle_and_hash():
    import pickle

    t = topology.dgx_a100(2)
    t.route(0, 9)
    copy = pickle.loads(pickle.dumps(t))
    assert copy == t and hash(copy) == hash(t) and copy.route(0, 9) == t.route(0, 9)
    assert {t: 1}[topology.dgx_a100(2)] == 1


def test_pcie_node_hops():
    t = topology.pcie_node(8, gpus_per_switch=2, sockets=2)
    assert [t.hops(0, b) for b in range(8)] == [0, 2, 4, 4, 5, 5, 5, 5]
    assert _path(t, 0, 5) == ["gpu0", "pcie0", "cpu0", "cpu1", "pcie2", "gpu5"]
    assert t.alpha(0, 5) == pytest.approx(4 * PCIE_LATENCY_S + UPI_LATENCY_S)
    assert 1 / t.beta(0, 5) == pytest.approx(min(PCIE4_X16_Bps, UPI_Bps))
    assert 1 / t.beta(0, 1) == pytest.approx(PCIE4_X16_Bps)


@pytest.mark.parametrize("call, match", [
    (lambda: topology.flat(0, 1e-6, 1e-9), "nranks=0"),
    (lambda: topology.flat(2, 0.0, 1e-9), "alpha=0.0"),
    (lambda: topology.flat(2, 1e-6, -1.0), "beta=-1.0"),
    (lambda: topology.dgx_h100(2, oversubscription=0), "oversubscription=0"),
    (lambda: topology.dgx_a100(nodes=1.5), "nodes=1.5"),
    (lambda: topology.pcie_node(2, gpus_per_switch=2, sockets=2), "sockets=2"),
    (lambda: topology.flat(2, 1e-6, 1e-9).route(0, 2), "b=2"),
    (lambda: topology.mesh(0, 1e-6, 1e-9), "nranks=0"),
    (lambda: topology.mesh(2, 1e-6, 0.0), "beta=0.0"),
])
def test_preset_arguments_are_checked(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _random_topology(seed: int) -> topology.Topology:
    """Switches joined at random (some links one way only), two GPUs on random switches each."""
    import random

    rng = random.Random(seed)
    switches = [f"s{i}" for i in range(12)]
    gpus = [f"g{i}" for i in range(6)]
    links = []
    for i, a in enumerate(switches):  # a ring keeps it connected, chords make it interesting
        for b in {switches[(i + 1) % 12], rng.choice(switches), rng.choice(switches)} - {a}:
            latency = rng.choice([1e-6, 2e-6, 3e-6])
            links.append(topology.Link(a, b, latency, rng.choice([1e9, 5e9]), "x"))
            if rng.random() < 0.7:
                links.append(topology.Link(b, a, latency, 1e9, "x"))
    for g in gpus:
        for sw in rng.sample(switches, 2):
            links += [topology.Link(g, sw, 1e-6, 1e9, "x"), topology.Link(sw, g, 1e-6, 1e9, "x")]
    devices = [topology.Device(x, "switch") for x in switches]
    devices += [topology.Device(g, "gpu") for g in gpus]
    return topology.Topology(f"random{seed}", tuple(devices), tuple(links), tuple(gpus))


@pytest.mark.parametrize("seed", range(12))
def test_routes_are_shortest_and_valid_on_random_graphs(seed):
    t = _random_topology(seed)
    for a in range(t.nranks):
        costs = t.costs(a)  # an independent one-way search
        for b in range(t.nranks):
            route = t.route(a, b)
            devices = [t.placement[a]] + [t.links[i].dst for i in route]
            assert all(t.links[i].src == devices[k] for k, i in enumerate(route))
            assert devices[-1] == t.placement[b]
            assert all(d.startswith("s") for d in devices[1:-1])  # GPUs never forward
            assert (t.hops(a, b), t.alpha(a, b)) == (costs[b][0], pytest.approx(costs[b][1]))


def test_preset_resolves_every_command_line_name() -> None:
    assert topology.preset("flat", nranks=3, alpha=1e-6, beta=2e-9).name == "flat(3)"
    assert topology.preset("flat", nranks=3, alpha=1e-6, beta=2e-9).alpha(0, 2) == 1e-6
    assert topology.preset("mesh", nranks=3, alpha=1e-6, beta=2e-9) == \
        topology.mesh(3, 1e-6, 2e-9)
    assert topology.preset("dgx-h100", nodes=2) == topology.dgx_h100(nodes=2)
    assert topology.preset("dgx-a100") == topology.dgx_a100()
    assert topology.preset("pcie") == topology.pcie_node()
    assert set(topology.PRESET_NAMES) == {"flat", "mesh", "dgx-h100", "dgx-a100",
                                         "pcie"}
    with pytest.raises(ValueError, match="name='dgx-b200' is not a preset; it must be one of"):
        topology.preset("dgx-b200")
