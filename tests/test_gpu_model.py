"""The GPU cost model's pieces: cost per call, protocols, achievable rates, agreement.

The expectations are computed from the model's own figures (``topology.gpu``), never from
the published curves, so a change to how the simulator applies a figure fails here.
"""

from __future__ import annotations

import dataclasses
import pickle
import re

import pytest

import topology
from collectives import build_schedule
from collectives.schedule import Recv, Schedule, Send, Step
from simulator import select, simulate, tuning_table
from simulator.gpu import gpu_terms, nic_flows, protocols, route_shares, with_settings
from simulator.analytic import price_one as machine_cost
from simulator.selection import closed_form
from topology import GpuModel, LinkFigures, Protocol, TopologyError

H100 = topology.dgx_h100()
MODEL = H100.gpu
LINE_Bps = 1 / topology.dgx_h100(gpu_model=None).beta(0, 1)


def _ring_closed_form(protocol: str, p: int, nbytes: int) -> float:
    """Ring AllReduce on one NVSwitch node from the figures alone (n divisible by p): a
    block's latency less what its bytes past one FIFO slot outlast, the slot of NCCL's
    channels side by side (one simulated channel)."""
    nvlink = MODEL.figures("nvlink")
    rate = LINE_Bps * nvlink.efficiency * MODEL.protocol(protocol).bandwidth_fraction
    slot = MODEL.protocol(protocol).slot_bytes * MODEL.channels
    past_slot = max(0.0, nbytes / p - slot) / rate
    step = max(0.0, 2 * nvlink.latency(protocol) - past_slot)  # GPU -> NVSwitch -> GPU
    share = (p - 1) / p * nbytes
    return MODEL.call_s(protocol) + 2 * (p - 1) * step + 2 * share / rate \
        + share / MODEL.reduce_Bps


@pytest.mark.parametrize("protocol", MODEL.protocol_names)
@pytest.mark.parametrize("algorithm", ["ring", "tree", "rhd", "pipeline"])
@pytest.mark.parametrize("count", [0, 1, 1000])
def test_a_call_costs_at_least_the_launch_and_setup(protocol: str, algorithm: str,
                                                    count: int) -> None:
    schedule = build_schedule("allreduce", algorithm, 8, count)
    assert simulate(schedule, H100, protocol=protocol).time_s >= MODEL.call_s(protocol) > 0


def test_a_call_on_one_rank_costs_exactly_the_call() -> None:
    machine = topology.dgx_a100(gpu_model=dataclasses.replace(topology.DGX_A100_GPU,
                                                              gpus_per_process=8))
    result = simulate(build_schedule("allreduce", "ring", 1, 100), machine, protocol="LL")
    model = machine.gpu
    assert result.time_s == model.launch_s + 7 * model.launch_per_gpu_s \
        + model.protocol("LL").call_s


@pytest.mark.parametrize("protocol", MODEL.protocol_names)
@pytest.mark.parametrize("nbytes", [8 * 4, 8 * 4096, 8 * (1 << 20)])
def test_ring_on_one_node_is_the_closed_form_of_the_figures(protocol: str, nbytes: int) -> None:
    schedule = build_schedule("allreduce", "ring", 8, nbytes // 4)
    expected = _ring_closed_form(protocol, 8, nbytes)
    assert simulate(schedule, H100, protocol=protocol).time_s == pytest.approx(expected,
                                                                              rel=1e-9)


def _crossover(a: str, b: str) -> float:
    """Bytes at which ring AllReduce under protocols ``a`` and ``b`` take equal time."""
    t0 = [_ring_closed_form(x, 8, 0) for x in (a, b)]
    slope = [(_ring_closed_form(x, 8, 1 << 30) - t) / (1 << 30) for x, t in zip((a, b), t0)]
    return (t0[1] - t0[0]) / (slope[0] - slope[1])


@pytest.mark.parametrize("low, high", [("LL", "LL128"), ("LL", "Simple")])
def test_protocols_cross_over_where_the_model_says(low: str, high: str) -> None:
    crossing = _crossover(low, high)
    assert 1 << 10 < crossing < 1 << 30
    for nbytes, faster in ((crossing / 2, low), (crossing * 2, high)):
        n = int(nbytes) // 32 * 32
        times = {x: simulate(build_schedule("allreduce", "ring", 8, n // 4), H100,
                             protocol=x, trace=False).time_s for x in (low, high)}
        assert min(times, key=times.get) == faster


def test_select_picks_the_low_latency_protocol_small_and_the_bandwidth_one_large() -> None:
    small, large = select("allreduce", 1024, H100), select("allreduce", 1 << 30, H100)
    assert (small.protocol, large.protocol) == ("LL", "Simple")
    ring = [c for c in small.candidates if c.algorithm == "ring"][0]
    assert ring.predicted_s == pytest.approx(_ring_closed_form("LL", 8, 1024), rel=1e-3)


@pytest.mark.parametrize("collective", ["allgather", "allreduce"])
def test_large_messages_approach_the_achievable_rate_never_the_line_rate(collective: str) -> None:
    nbytes = 8 << 30
    machine, _ = gpu_terms(H100, "Simple")
    achievable = 1 / machine.beta(0, 1)
    assert achievable == pytest.approx(LINE_Bps * MODEL.figures("nvlink").efficiency)
    time_s = closed_form(collective, "ring", H100, nbytes, protocol="Simple")
    busbw = nbytes / time_s * (2 if collective == "allreduce" else 1) * 7 / 8
    assert busbw < achievable < LINE_Bps
    assert busbw > (0.99 if collective == "allgather" else 0.9) * achievable


FLAT_GPU = GpuModel((Protocol("LL", 0.4, 5e-6), Protocol("Simple", 1.0, 8e-6)),
                    (LinkFigures("flat", 0.8, (("LL", 1e-6), ("Simple", 4e-6))),),
                    reduce_Bps=1e12, launch_s=2e-6)


def _flat_with_gpu(p: int) -> topology.Topology:
    t = topology.mesh(p, 1e-6, 1e-10)  # the closed forms': the mesh's
    return dataclasses.replace(t, gpu=FLAT_GPU)


@pytest.mark.parametrize("algorithm, params", [("ring", {}), ("rhd", {}),
                                               ("pipeline", {"segments": 4}),
                                               ("tree", {"segments": 2})])
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("protocol", ["LL", "Simple"])
def test_simulator_and_closed_forms_agree_with_the_gpu_terms_on(
        algorithm: str, params: dict, collective: str, protocol: str) -> None:
    p, count = 6, 6 * 2 * 4 * 50
    machine = _flat_with_gpu(p)
    schedule = build_schedule(collective, algorithm, p, count, **params)
    simulated = simulate(schedule, machine, protocol=protocol).time_s
    formula = machine_cost(collective, algorithm, machine, count * 4, protocol=protocol,
                           **params)
    if algorithm == "tree" and collective == "allgather":  # lock-step rounds: an upper bound
        assert simulated * (1 - 1e-9) <= formula <= 2 * simulated
    else:
        assert simulated == pytest.approx(formula, rel=1e-9)
    assert simulated > simulate(schedule, topology.mesh(p, 1e-6, 1e-10)).time_s


@pytest.mark.parametrize("algorithm", ["ring", "tree", "pipeline"])
def test_compiled_engine_gives_the_event_engine_result_with_the_gpu_terms(algorithm: str) -> None:
    cluster = topology.dgx_h100(nodes=2)
    schedule = build_schedule("allreduce", algorithm, 16, 1 << 16)
    for protocol in ("LL", "Simple"):
        events = simulate(schedule, cluster, engine="events", protocol=protocol)
        assert simulate(schedule, cluster, engine="compiled", protocol=protocol) == events


def test_flat_and_host_models_have_no_gpu_terms() -> None:
    flat = topology.flat(4, 1e-6, 1e-9)
    assert flat.gpu is None and topology.pcie_node().gpu is None
    assert protocols(flat) == (None,) and gpu_terms(flat) == (flat, 0.0)
    with pytest.raises(ValueError, match="protocol='LL' is not allowed.*no GPU model"):
        simulate(build_schedule("allreduce", "ring", 4, 100), flat, protocol="LL")
    assert select("allreduce", 1024, flat).protocol is None


def test_unknown_protocol_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"protocol='LL64'.*\['LL', 'LL128', 'Simple'\]"):
        simulate(build_schedule("allreduce", "ring", 8, 100), H100, protocol="LL64")


def test_a_model_must_cover_every_link_kind() -> None:
    with pytest.raises(TopologyError, match="no figures for link kind 'nvlink'"):
        topology.dgx_h100(gpu_model=FLAT_GPU)


@pytest.mark.parametrize("make, message", [
    (lambda: Protocol("LL", 1.5, 1e-6), "bandwidth_fraction = 1.5"),
    (lambda: Protocol("LL", 0.5, 1e-6, 0), "LL.slot_bytes = 0 is not allowed"),
    (lambda: LinkFigures("nvlink", 0.9, (("LL", -1.0),)), "latency_s\\['LL'\\] = -1.0"),
    (lambda: LinkFigures("ib", 0.9, (("LL", 1e-6),), in_step="no"), "ib.in_step = 'no'"),
    (lambda: dataclasses.replace(MODEL, gpus_per_process=0), "gpus_per_process = 0"),
    (lambda: dataclasses.replace(MODEL, default_protocol="LL64"), "protocol='LL64'"),
    (lambda: dataclasses.replace(MODEL, links=MODEL.links[:1] + MODEL.links[:1]),
     "unique kinds"),
])
def test_figures_out_of_range_are_named(make, message: str) -> None:
    with pytest.raises((TopologyError, ValueError), match=message):
        make()


def test_presets_carry_a_figure_for_every_protocol_and_link() -> None:
    for machine in (topology.dgx_a100(2), topology.dgx_h100(2)):
        kinds = {link.kind for link in machine.links}
        assert {f.kind for f in machine.gpu.links} == kinds
        assert machine.gpu.protocol_names == ("LL", "LL128", "Simple")
    assert topology.dgx_h100(gpu_model=None).gpu is None


@pytest.mark.parametrize("protocol", MODEL.protocol_names)
def test_the_network_post_overhead_is_the_host_cpu_s(protocol: str) -> None:
    # tuning.cc getNetOverhead: 2 us a post on an AMD host (DGX A100), 1 us on Intel (DGX H100)
    amd, intel = (m.link_terms("pcie", protocol)[0]
                  for m in (topology.DGX_A100_GPU, topology.DGX_H100_GPU))
    assert amd == pytest.approx(2 * intel, rel=1e-12)


def test_a_file_overrides_a_figure(tmp_path) -> None:
    path = tmp_path / "h100.toml"
    topology.save(H100, path)
    assert topology.load(path) == H100
    text, replaced = re.subn(r"^launch = .*$", 'launch = "10 us"', path.read_text(), count=1,
                             flags=re.MULTILINE)
    assert replaced == 1
    path.write_text(text)
    edited = topology.load(path)
    schedule = build_schedule("allreduce", "ring", 8, 1000)
    assert simulate(schedule, edited, protocol="LL").time_s == pytest.approx(
        simulate(schedule, H100, protocol="LL").time_s + 10e-6, rel=1e-12)


def test_a_file_carries_each_protocol_s_slot_with_a_unit() -> None:
    text = topology.dumps(H100)
    assert text.count('slot = "512 KiB"') == 1 and 'slot = "562.5 KiB"' in text
    assert topology.loads(text.replace("channels = 16", "channels = 4")).gpu.channels == 4
    assert topology.loads(text).gpu.protocol("LL").slot_bytes == 32 << 10
    bare = text.replace('slot = "512 KiB"', "slot = 524288")
    with pytest.raises(TopologyError, match=r"gpu.protocols\[2\].slot = 524288 has no unit"):
        topology.loads(bare)
    unslotted = topology.loads(re.sub(r', slot = "[^"]*"', "", text))
    assert [p.slot_bytes for p in unslotted.gpu.protocols] == [None] * 3
    assert "slot" not in topology.dumps(unslotted)


def test_a_file_with_a_bad_gpu_table_names_the_key() -> None:
    text = topology.dumps(H100).replace('efficiency = 0.87', 'efficency = 0.87')
    with pytest.raises(TopologyError, match="gpu.links\\[0\\]: unknown key 'efficency'"):
        topology.loads(text)


def _pairs(pairs: list[tuple[int, int]], count: int, p: int = 16) -> Schedule:
    """One step per rank: each ``(src, dst)`` pair moves ``count`` elements (a range of
    its own)."""
    ranks: list[list] = [[] for _ in range(p)]
    for k, (src, dst) in enumerate(pairs):
        ranks[src].append(Send(dst, k * count, (k + 1) * count))
        ranks[dst].append(Recv(src, k * count, (k + 1) * count))
    return Schedule.from_steps("allgather", "hand", count * len(pairs),
                               [[Step(tuple(ops))] if ops else [] for ops in ranks])


def test_more_channels_over_more_nics_carry_more() -> None:
    cluster = topology.dgx_h100(nodes=2)
    count = 1 << 24
    one = simulate(_pairs([(0, 8)], count), cluster, protocol="Simple").time_s
    two_nics = simulate(_pairs([(0, 8), (1, 9)], count), cluster, protocol="Simple").time_s
    one_nic = simulate(_pairs([(0, 8), (0, 8)], count // 2), cluster,
                       protocol="Simple").time_s
    ib = cluster.gpu.figures("ib")
    nic_Bps = min(50e9 * ib.efficiency, nic_flows(cluster) * ib.flow_Bps)
    assert one == pytest.approx(two_nics, rel=1e-12)
    assert one_nic == pytest.approx(one, rel=1e-12)  # half each, sharing one NIC
    effective, call_s = gpu_terms(cluster, "Simple")
    nbytes, slot = 4 * count, cluster.gpu.protocol("Simple").slot_bytes * cluster.gpu.channels
    shares = route_shares(effective, effective.route(0, 8))  # NCCL's channels, out of step
    assert shares == cluster.gpu.channels and not cluster.gpu.figures("ib").in_step
    assert one == pytest.approx(call_s + max(nbytes / nic_Bps, effective.alpha(0, 8)
                                             + min(nbytes, slot) / shares / nic_Bps), rel=1e-9)


def test_nccl_settings_set_the_flows_a_nic_carries() -> None:
    """NCCL_MIN_CTAS / NCCL_MAX_CTAS clamp the channels and NCCL_IB_QPS_PER_CONNECTION sets
    the queue pairs: a NIC link carries at most its flows (channels on it x queue pairs)
    times the flow rate, the line rate times the efficiency once they are enough."""
    ib = MODEL.figures("ib")
    assert ib.flow_Bps is not None
    for env, flows in (({}, 2), ({"NCCL_MIN_CTAS": "24"}, 3),
                       ({"NCCL_MIN_CTAS": "24", "NCCL_IB_QPS_PER_CONNECTION": "2"}, 6),
                       ({"NCCL_MAX_CTAS": "4", "NCCL_MIN_NCHANNELS": "2"}, 1),
                       ({"NCCL_MIN_CTAS": "40", "NCCL_MAX_NCHANNELS": "32"}, 4)):
        cluster = topology.dgx_h100(2, gpu_model=with_settings(MODEL, env))
        assert nic_flows(cluster) == flows, env
        effective, _ = gpu_terms(cluster, "Simple")
        nic = next(link for link in effective.links
                   if link.src == "n0.nic0" and link.kind == "ib")
        assert nic.bandwidth_Bps == pytest.approx(min(50e9 * ib.efficiency, flows * ib.flow_Bps),
                                                  rel=1e-12), env
        spine = max((link for link in effective.links if link.kind == "ib"),
                    key=lambda link: link.bandwidth_Bps)
        assert spine.bandwidth_Bps == pytest.approx(200e9 * ib.efficiency, rel=1e-12)
    assert nic_flows(topology.dgx_h100(1)) == 0
    for env in ({"NCCL_MIN_CTAS": "0"}, {"NCCL_IB_QPS_PER_CONNECTION": "two"},
                {"NCCL_MAX_CTAS": "65"}):
        with pytest.raises(ValueError, match=f"{next(iter(env))}=.* is not allowed"):
            with_settings(MODEL, env)
    assert with_settings(MODEL, {"NCCL_DEBUG": "INFO"}) == MODEL


def _in_step(model: GpuModel) -> GpuModel:
    """``model`` with NCCL's channels in step on every link kind."""
    return dataclasses.replace(model, links=tuple(dataclasses.replace(f, in_step=True)
                                                  for f in model.links))


@pytest.mark.parametrize("protocol", MODEL.protocol_names)
def test_fifo_slots_hide_a_long_message_s_latency_never_more(protocol: str) -> None:
    cluster = topology.dgx_h100(nodes=2, gpu_model=_in_step(MODEL))
    effective, call_s = gpu_terms(cluster, protocol)
    lat, rate = effective.alpha(0, 8), 1 / effective.beta(0, 8)
    slot = int(cluster.gpu.protocol(protocol).slot_bytes) * cluster.gpu.channels  # 1 channel
    assert slot > 4 * lat * rate / 1e3 > 0  # a slot is more than a few bytes
    past = []
    for nbytes in (4, slot // 2, slot, slot + int(lat * rate / 2), slot + int(2 * lat * rate),
                   64 * slot):
        times = {engine: simulate(_pairs([(0, 8)], -(-nbytes // 4)), cluster, engine=engine,
                                  protocol=protocol).time_s - call_s
                 for engine in ("events", "compiled")}
        assert times["events"] == times["compiled"]
        sent = 4 * -(-nbytes // 4)
        assert times["events"] >= sent / rate * (1 - 1e-12)  # never faster than the bytes
        if sent <= slot:  # up to one slot: the full latency
            assert times["events"] == pytest.approx(lat + sent / rate, rel=1e-12)
        past.append(times["events"] - sent / rate)
    assert past[2] > past[3] > past[4] == pytest.approx(0.0, abs=1e-15)
    assert past[3] == pytest.approx(lat / 2, abs=8 / rate)  # bytes rounded to elements
    assert past[5] == pytest.approx(0.0, abs=1e-15)


#: slots of 4 KiB, and 4 NCCL channels that cross the mesh's links out of step
OUT_OF_STEP_GPU = dataclasses.replace(
    FLAT_GPU, protocols=tuple(dataclasses.replace(x, slot_bytes=4096.0)
                              for x in FLAT_GPU.protocols),
    links=(dataclasses.replace(FLAT_GPU.links[0], in_step=False),), channels=4)


@pytest.mark.parametrize("count", [6, 6 * 256, 6 * 1024, 6 * 3000, 6 * 65536])
@pytest.mark.parametrize("in_step", [True, False])
def test_channels_out_of_step_hide_a_step_s_latency_behind_all_but_their_share(
        count: int, in_step: bool) -> None:
    """A ring step of ``b`` bytes over a route of latency ``lat`` and rate ``r`` takes
    ``max(b / r, lat + min(b, slot) / (shares r))``: shares 1 with the channels in step,
    the channels a simulated one stands for (4) out of step; both engines and the closed
    form price it alike."""
    p = 6
    model = _in_step(OUT_OF_STEP_GPU) if in_step else OUT_OF_STEP_GPU
    machine = dataclasses.replace(topology.mesh(p, 1e-6, 1e-10), gpu=model)
    effective, call_s = gpu_terms(machine, "Simple")
    assert effective.out_of_step == (() if in_step else (("flat", 4.0),))
    lat, rate, shares = effective.alpha(0, 1), 1 / effective.beta(0, 1), 1 if in_step else 4
    block = 4 * count / p
    step = max(block / rate, lat + min(block, 4 * 4096) / shares / rate)
    expected = call_s + 2 * (p - 1) * step + (p - 1) * block / model.reduce_Bps
    schedule = build_schedule("allreduce", "ring", p, count)
    times = [simulate(schedule, machine, engine=engine, protocol="Simple").time_s
             for engine in ("events", "compiled")]
    formula = machine_cost("allreduce", "ring", machine, 4 * count, protocol="Simple")
    assert times[0] == times[1] == pytest.approx(expected, rel=1e-9)
    assert formula == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("channels", [1, 3, 8, 16, 32])
def test_a_simulated_channel_moves_the_slots_of_the_nccl_channels_it_stands_for(
        channels: int) -> None:
    slot = MODEL.protocol("LL128").slot_bytes
    assert MODEL.channels == 16
    effective = gpu_terms(H100, "LL128", channels=channels)[0]
    assert effective.slot_bytes == slot * max(1.0, 16 / channels)
    unslotted = dataclasses.replace(MODEL.protocols[1], slot_bytes=None)
    assert gpu_terms(topology.dgx_h100(gpu_model=dataclasses.replace(
        MODEL, protocols=(MODEL.protocols[0], unslotted, MODEL.protocols[2]))),
        "LL128", channels=channels)[0].slot_bytes is None


def test_ring_over_two_nodes_reaches_the_nic_bound_at_4_gib() -> None:
    from simulator.channel_choice import schedule_params
    from topology.channels import nics_per_node

    # with the flows to fill a NIC: h100_2node_ring's settings (6 flows a NIC)
    cluster = topology.dgx_h100(nodes=2, gpu_model=with_settings(MODEL, {
        "NCCL_MIN_CTAS": "24", "NCCL_IB_QPS_PER_CONNECTION": "2"}))
    nbytes, p = 4 << 30, cluster.nranks
    schedule = build_schedule("allreduce", "ring", p, nbytes // 4,
                              **schedule_params("ring", (("channels", 8),), cluster))
    nic = next(link for link in cluster.links if link.kind == "ib")
    bound = nics_per_node(cluster) * nic.bandwidth_Bps * cluster.gpu.figures("ib").efficiency
    hidden = {engine: simulate(schedule, cluster, engine=engine) for engine in
              ("events", "compiled")}
    assert hidden["events"] == hidden["compiled"]
    assert 2 * (p - 1) / p * nbytes / hidden["events"].time_s >= 0.95 * bound
    model = cluster.gpu
    unslotted = dataclasses.replace(cluster, gpu=dataclasses.replace(model, protocols=tuple(
        dataclasses.replace(x, slot_bytes=None) for x in model.protocols)))
    # without slots each of the 2(p-1) steps pays a route's latency, at least NVLink's
    steps_s = 2 * (p - 1) * gpu_terms(cluster, "Simple")[0].alpha(0, 1)
    assert simulate(schedule, unslotted).time_s > hidden["events"].time_s + steps_s


def test_a_topology_with_a_gpu_model_pickles() -> None:
    cluster = topology.dgx_a100(2)
    assert pickle.loads(pickle.dumps(cluster)) == cluster
    effective = gpu_terms(cluster, "LL128", channels=8)[0]
    assert effective.out_of_step == (("ib", 3.0),)  # 24 NCCL channels over 8
    assert pickle.loads(pickle.dumps(effective)).out_of_step == effective.out_of_step


def test_table_protocols_are_the_fastest_of_the_interpolated_lines() -> None:
    table = tuning_table("allreduce", H100)
    sizes = [0, 1, 3000, 1 << 20, 3 << 21, 5 << 22, 1 << 30, 1 << 36] + \
        [int(1.37 ** k) for k in range(120)]
    for n in sizes:
        per = {k: table.times_under(k, n) for k in table.protocols}
        for c, chosen in enumerate(table.protocols_at(n)):
            assert per[chosen][c] == min(times[c] for times in per.values()), (n, c)


def test_a_link_kind_may_give_a_protocol_its_own_fraction(tmp_path) -> None:
    nvlink = MODEL.figures("nvlink")
    slow = dataclasses.replace(nvlink, protocol_fraction=(("LL128", 0.5),))
    edited = topology.dgx_h100(2, gpu_model=dataclasses.replace(
        MODEL, links=tuple(slow if f.kind == "nvlink" else f for f in MODEL.links)))
    base, _ = gpu_terms(topology.dgx_h100(2), "LL128")
    machine, _ = gpu_terms(edited, "LL128")
    scale = {"nvlink": 0.5 / MODEL.protocol("LL128").bandwidth_fraction, "ib": 1.0,
             "pcie": 1.0}
    assert {link.kind for link in machine.links} == set(scale)
    for link, before in zip(machine.links, base.links):
        assert link.bandwidth_Bps == pytest.approx(before.bandwidth_Bps * scale[link.kind])
    assert gpu_terms(edited, "Simple")[0].links == gpu_terms(topology.dgx_h100(2),
                                                             "Simple")[0].links
    path = tmp_path / "slow.toml"
    topology.save(edited, path)
    assert "protocol_fraction" in path.read_text() and topology.load(path) == edited
    with pytest.raises(TopologyError, match="protocol_fraction names \\['LL64'\\]"):
        dataclasses.replace(MODEL, links=(dataclasses.replace(
            nvlink, protocol_fraction=(("LL64", 0.5),)),) + MODEL.links[1:])
    with pytest.raises(TopologyError, match="protocol_fraction\\['LL'\\] = 0"):
        LinkFigures("nvlink", 0.9, (("LL", 1e-6),), (("LL", 0),))
