"""The discrete-event simulator: contention, traces, link accounting, errors."""

from __future__ import annotations

import pytest

import topology
from collectives import (DeadlockError, Recv, Schedule, ScheduleError,
                         Send, Step, build_schedule)
from simulator import simulate
from topology import Device, Link, Topology

from .reference import ALLREDUCE, SERVED, explicit_mesh

ALPHA, BETA = 1e-6, 1e-9


def _star(nranks: int) -> Topology:
    """Ranks joined by one switch: every route is rank -> switch -> rank."""
    ids = [f"r{r}" for r in range(nranks)]
    links = [Link(i, "sw", ALPHA / 2, 1 / BETA, "x") for i in ids]
    links += [Link("sw", i, ALPHA / 2, 1 / BETA, "x") for i in ids]
    return Topology("star", (*(Device(i, "rank") for i in ids), Device("sw", "switch")),
                    tuple(links), tuple(ids))


def _pairwise(base: Topology) -> Topology:
    """A dedicated link per ordered pair with ``base``'s per-pair alpha and beta."""
    p = base.nranks
    ids = tuple(f"r{r}" for r in range(p))
    links = tuple(Link(ids[a], ids[b], base.alpha(a, b), 1 / base.beta(a, b), "pair")
                  for a in range(p) for b in range(p) if a != b)
    return Topology(f"pairwise({base.name})", tuple(Device(i, "rank") for i in ids), links, ids)


def _steps(*ranks: list[list]) -> Schedule:
    """A hand-made schedule over a buffer of 64 elements, or as many as its ranges reach."""
    count = max([64, *(op.stop for r in ranks for ops in r for op in ops)])
    return Schedule.from_steps("allgather", "hand", count, [[Step(tuple(ops)) for ops in r]
                                                            for r in ranks])


def test_two_flows_on_one_link_each_take_twice_as_long() -> None:
    n = 16  # elements: 64 bytes
    both = _steps([[Send(1, 0, n), Send(1, n, 2 * n)]], [[Recv(0, 0, n), Recv(0, n, 2 * n)]])
    one = _steps([[Send(1, 0, n)]], [[Recv(0, 0, n)]])
    flat = topology.flat(2, ALPHA, BETA)
    shared, alone = simulate(both, flat, trace=True), simulate(one, flat)
    assert alone.time_s == pytest.approx(ALPHA + 64 * BETA, rel=1e-12)
    assert [t.end_s - t.start_s for t in shared.transfers] == \
        pytest.approx([ALPHA + 2 * 64 * BETA] * 2, rel=1e-12)
    assert shared.link_bytes[flat.route(0, 1)[0]] == 128


def test_two_senders_into_one_receiver_share_its_downlink() -> None:
    n = 256
    schedule = _steps([[Send(2, 0, n)]], [[Send(2, 0, n)]], [[Recv(0, 0, n), Recv(1, n, 2 * n)]])
    result = simulate(schedule, _star(3))
    assert result.time_s == pytest.approx(ALPHA + 2 * 4 * n * BETA, rel=1e-12)
    downlink = _star(3).route(0, 2)[-1]
    assert result.link_busy_s[downlink] == pytest.approx(2 * 4 * n * BETA, rel=1e-12)


def test_max_min_fairness_gives_a_lone_flow_the_leftover() -> None:
    # flows 0->2 and 1->2 share sw->r2; flow 1->3 shares r1->sw with 1->2 only
    n = 1000
    schedule = _steps([[Send(2, 0, n)]], [[Send(2, 0, n), Send(3, 0, n)]],
                      [[Recv(0, 0, n), Recv(1, n, 2 * n)]], [[Recv(1, 0, n)]])
    result = simulate(schedule, _star(4), trace=True)
    ends = {(t.src, t.dst): t.end_s - t.start_s for t in result.transfers}
    # 1->2 and 0->2 get half of sw->r2; 1->3 gets the other half of r1->sw, then all of it
    assert ends[(1, 2)] == pytest.approx(ALPHA + 2 * 4 * n * BETA, rel=1e-9)
    assert ends[(1, 3)] == pytest.approx(ALPHA + 2 * 4 * n * BETA, rel=1e-9)


def _trunk(trunk_Bps: float) -> Topology:
    """Ranks 0 and 1 reach ranks 2 and 3 through one trunk link ``a -> b``; every other
    link runs at 1/BETA, the trunk at ``trunk_Bps``."""
    ids = [f"r{r}" for r in range(4)]
    edge = ALPHA / 4  # route latency: edge + trunk + edge = ALPHA
    links = [Link(ids[0], "a", edge, 1 / BETA, "x"), Link(ids[1], "a", edge, 1 / BETA, "x"),
             Link("a", "b", ALPHA / 2, trunk_Bps, "trunk"),
             Link("b", ids[2], edge, 1 / BETA, "x"), Link("b", ids[3], edge, 1 / BETA, "x")]
    links += [Link(link.dst, link.src, link.latency_s, link.bandwidth_Bps, link.kind)
              for link in links]  # the way back, unused by the flows under test
    return Topology("trunk", (*(Device(i, "rank") for i in ids), Device("a", "switch"),
                              Device("b", "switch")), tuple(links), tuple(ids))


@pytest.mark.parametrize("trunk_beta, share", [(BETA / 2, 1.0), (BETA / 1.5, 0.75)])
def test_a_trunk_limits_flows_only_when_their_bottlenecks_exceed_it(trunk_beta: float,
                                                                    share: float) -> None:
    n = 1000  # elements: 4000 bytes per flow
    schedule = _steps([[Send(2, 0, n)]], [[Send(3, 0, n)]], [[Recv(0, 0, n)]], [[Recv(1, 0, n)]])
    result = simulate(schedule, _trunk(1 / trunk_beta), trace=True)
    assert [t.end_s - t.start_s for t in result.transfers] == \
        pytest.approx([ALPHA + 4 * n * BETA / share] * 2, rel=1e-12)


def test_flat_is_single_ported_and_the_mesh_is_not() -> None:
    n = 250  # elements: 1000 bytes per message
    fan_out = _steps([[Send(1, 0, n), Send(2, n, 2 * n)]], [[Recv(0, 0, n)]], [[Recv(0, 0, n)]])
    flat, mesh = topology.flat(3, ALPHA, BETA), topology.mesh(3, ALPHA, BETA)
    # two sends at once share the sender's port; on the mesh each has its own link
    assert simulate(fan_out, flat).time_s == pytest.approx(ALPHA + 2 * 4 * n * BETA, rel=1e-12)
    assert simulate(fan_out, mesh).time_s == pytest.approx(ALPHA + 4 * n * BETA, rel=1e-12)
    # one send and one receive at once both run at the port's full rate
    swap = _steps([[Send(1, 0, n), Recv(1, n, 2 * n)]], [[Send(0, 0, n), Recv(0, n, 2 * n)]])
    assert simulate(swap, flat).time_s == pytest.approx(ALPHA + 4 * n * BETA, rel=1e-12)


@pytest.mark.parametrize("engine", ["events", "compiled"])
def test_no_allreduce_beats_the_single_port_bound_on_flat(engine: str) -> None:
    # Thakur, Rabenseifner and Gropp (2005): an AllReduce moves at least 2 (p - 1) / p of
    # the vector in and out of every port; ring meets it, with 2 (p - 1) latencies
    p, count = 8, 1 << 18
    nbytes = 4 * count
    bound = 2 * (p - 1) / p * nbytes * BETA
    flat, mesh = topology.flat(p, ALPHA, BETA), topology.mesh(p, ALPHA, BETA)
    ring = simulate(build_schedule("allreduce", "ring", p, count), flat, engine=engine)
    assert ring.time_s == pytest.approx(bound + 2 * (p - 1) * ALPHA, rel=1e-12)
    for algorithm in ALLREDUCE:
        for segments in ((1, 16) if algorithm in ("tree", "pipeline") else (None,)):
            params = {} if segments is None else {"segments": segments}
            schedule = build_schedule("allreduce", algorithm, p, count, **params)
            assert simulate(schedule, flat, engine=engine).time_s >= bound * (1 - 1e-12), \
                (algorithm, segments)
    tree = build_schedule("allreduce", "tree", p, count, segments=16)
    assert simulate(tree, mesh, engine=engine).time_s < bound  # many peers at once


@pytest.mark.parametrize("nranks", [2, 3, 5, 8])
def test_mesh_simulates_as_the_explicit_full_mesh(nranks: int) -> None:
    mesh, explicit = topology.mesh(nranks, ALPHA, BETA), explicit_mesh(nranks, ALPHA, BETA)
    for algorithm, collective in SERVED:
        schedule = build_schedule(collective, algorithm, nranks, 1000)
        assert simulate(schedule, mesh, gamma=2e-10, trace=True, engine="events") == \
            simulate(schedule, explicit, gamma=2e-10, trace=True, engine="events")
    crowded = _steps(*[[[*(Send((r + k) % nranks, 0, 32) for k in range(1, nranks)),
                         *(Recv((r - k) % nranks, 32, 64) for k in range(1, nranks))]]
                       for r in range(nranks)])  # every ordered pair at once
    # timing only: every receive lands in one range, which verify rejects
    assert simulate(crowded, mesh, trace=True, verify=False) == \
        simulate(crowded, explicit, trace=True, verify=False)


def test_reduction_pays_gamma_at_the_receiver() -> None:
    schedule = _steps([[Send(1, 0, 100)]], [[Recv(0, 0, 100, True)]])
    flat = topology.flat(2, ALPHA, BETA)
    result = simulate(schedule, flat, gamma=2e-9)
    assert result.rank_finish_s[0] == pytest.approx(ALPHA + 400 * BETA, rel=1e-12)
    assert result.rank_finish_s[1] == pytest.approx(ALPHA + 400 * (BETA + 2e-9), rel=1e-12)


def test_trace_and_link_bytes_account_for_every_byte() -> None:
    p, count = 6, 6000
    flat = topology.flat(p, ALPHA, BETA)
    schedule = build_schedule("allreduce", "ring", p, count)
    result = simulate(schedule, flat, trace=True)
    assert result.transfer_count == len(result.transfers) == p * 2 * (p - 1)
    assert sum(t.nbytes for t in result.transfers) \
        == 4 * sum(schedule.sent_elements(r) for r in range(p))
    # every byte crosses its sender's port and its receiver's
    assert sum(result.link_bytes) == sum(t.nbytes * len(t.links) for t in result.transfers) \
        == 2 * sum(t.nbytes for t in result.transfers)
    assert all(t.links == flat.route(t.src, t.dst) and t.end_s > t.start_s
               for t in result.transfers)
    assert max(result.rank_finish_s) == result.time_s
    assert simulate(schedule, flat, trace=False).transfers == ()
    assert simulate(schedule, flat).transfers == ()  # no trace unless asked


def test_rail_optimized_cluster_ring_is_contention_free_and_tree_is_not() -> None:
    cluster = topology.dgx_h100(nodes=2, gpu_model=None)  # the link graph alone
    pairwise = _pairwise(cluster)
    ring = build_schedule("allreduce", "ring", 16, 1 << 22)
    assert simulate(ring, cluster).time_s == pytest.approx(simulate(ring, pairwise).time_s,
                                                           rel=1e-12)
    tree = build_schedule("allreduce", "tree", 16, 1 << 22)
    assert simulate(tree, cluster).time_s > 1.2 * simulate(tree, pairwise).time_s


def test_ring_across_two_nodes_is_slower_than_on_nvlink_alone() -> None:
    cluster = topology.dgx_h100(nodes=2, gpu_model=None)  # the link graph alone
    nvlink = topology.flat(16, cluster.alpha(0, 1), cluster.beta(0, 1))
    ring = build_schedule("allreduce", "ring", 16, 1 << 22)
    assert simulate(ring, cluster).time_s > 2 * simulate(ring, nvlink).time_s


def test_simulation_does_not_depend_on_rank_count_of_the_topology_beyond_the_schedule() -> None:
    schedule = build_schedule("allgather", "ring", 4, 400)
    assert simulate(schedule, topology.flat(8, ALPHA, BETA)).time_s == \
        simulate(schedule, topology.flat(4, ALPHA, BETA)).time_s


def test_unmatched_send_and_deadlock_are_reported() -> None:
    flat = topology.flat(2, ALPHA, BETA)
    with pytest.raises(ScheduleError, match="unmatched send"):
        simulate(_steps([[Send(1, 0, 4)]], [[]]), flat)
    crossed = _steps([[Recv(1, 0, 4)], [Send(1, 0, 4)]], [[Recv(0, 0, 4)], [Send(0, 0, 4)]])
    with pytest.raises(DeadlockError):
        simulate(crossed, flat)
    with pytest.raises(ScheduleError, match="length"):
        simulate(_steps([[Send(1, 0, 4)]], [[Recv(0, 0, 5)]]), flat)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"dtype_size": 0}, ValueError, "dtype_size=0"),
    ({"gamma": -1.0}, ValueError, "gamma=-1.0"),
    ({"schedule": "ring"}, TypeError, "schedule must be"),
    ({"topology": topology.flat(2, ALPHA, BETA)}, ValueError, "schedule.nranks=4"),
])
def test_bad_arguments_are_named(kwargs: dict, error: type, message: str) -> None:
    args = {"schedule": build_schedule("allreduce", "ring", 4, 8),
            "topology": topology.flat(4, ALPHA, BETA), **kwargs}
    with pytest.raises(error, match=message):
        simulate(**args)


def _with_overhead(base: Topology, overhead: float) -> Topology:
    return Topology(base.name, base.devices, base.links, base.placement,
                    base.gamma_s_per_byte, overhead)


def test_overhead_is_charged_at_both_ends_of_every_message() -> None:
    o, n = 3e-6, 16  # 64 bytes
    machine = _with_overhead(_star(2), o)
    one = _steps([[Send(1, 0, n)]], [[Recv(0, 0, n)]])
    assert simulate(one, machine).time_s == pytest.approx(o + ALPHA + 64 * BETA + o)
    assert simulate(one, _star(2)).time_s == pytest.approx(ALPHA + 64 * BETA)


def test_overheads_of_one_rank_run_one_after_another() -> None:
    o, n = 3e-6, 16
    machine = _with_overhead(_star(3), o)
    # rank 0 sends to 1 and 2 in one step: the second message leaves after 2 o
    fan = _steps([[Send(1, 0, n), Send(2, 0, n)]], [[Recv(0, 0, n)]], [[Recv(0, 0, n)]])
    result = simulate(fan, machine)
    assert result.rank_finish_s[1] == pytest.approx(o + ALPHA + 64 * BETA + o)
    assert result.rank_finish_s[2] == pytest.approx(2 * o + ALPHA + 64 * BETA + o)
    # rank 0 receives two messages arriving together (sharing its link: 2 x 64 bytes):
    # it completes them one after another
    gather = _steps([[Recv(1, 0, n), Recv(2, 0, n)]], [[Send(0, 0, n)]], [[Send(0, 0, n)]])
    done = simulate(gather, machine, verify=False).rank_finish_s[0]  # two into one range
    assert done == pytest.approx(o + ALPHA + 2 * 64 * BETA + 2 * o)


def test_overhead_delays_each_step_of_a_ring_by_two_o() -> None:
    base = topology.flat(4, ALPHA, BETA)
    schedule = build_schedule("allreduce", "ring", 4, 1024)
    plain = simulate(schedule, base).time_s
    steps = len(schedule.steps(0))
    assert simulate(schedule, _with_overhead(base, 2e-6)).time_s == \
        pytest.approx(plain + steps * 2 * 2e-6)


def test_negative_overhead_is_rejected() -> None:
    with pytest.raises(ValueError, match="overhead_s_per_message = -1.0 is not allowed"):
        _with_overhead(_star(2), -1.0)


def test_auto_engine_counts_a_sample_of_a_composed_schedules_ranks() -> None:
    """8-channel rhd on 1,024 ranks holds some 327,000 lane entries, built anew at each
    read: an even sample of ranks shows it is past COMPILED_FROM_OPERATIONS (counting
    rank by rank read 820 ranks).  Small schedules are still counted to the end."""
    from dataclasses import replace

    from simulator.engine import COMPILED_FROM_OPERATIONS, SAMPLED_RANKS, _has_operations

    large = build_schedule("allreduce", "rhd", 1024, 1 << 20, channels=8)
    read: list[int] = []

    def counted(rank: int):
        read.append(rank)
        return large.lanes(rank)

    assert _has_operations(replace(large, lanes=counted), COMPILED_FROM_OPERATIONS)
    assert len(read) == SAMPLED_RANKS
    assert not _has_operations(build_schedule("allreduce", "rhd", 200, 1000),
                               COMPILED_FROM_OPERATIONS)
