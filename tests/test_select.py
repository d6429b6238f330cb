"""Selection: tuning tables agree with the closed forms on flat topologies, the choice is the
least predicted time, crossovers are where it changes, and bad input is refused."""

from __future__ import annotations

import random

import pytest

import topology
from collectives import build_schedule
from simulator import cost, simulate
from simulator.selection import (SIZES, Choice, _label, candidates, clear_cache, closed_form,
                                 select, tuning_table)

ALPHA, BETA = 2e-6, 1e-10


@pytest.fixture(scope="module")
def flat4():
    return topology.flat(4, ALPHA, BETA)


@pytest.fixture(scope="module")
def flat64():
    return topology.flat(64, 5e-6, BETA)


def test_sweep_is_powers_of_two_and_one_and_a_half_times_them() -> None:
    assert SIZES[:6] == (1, 2, 3, 4, 6, 8) and SIZES[-2:] == (6 << 30, 8 << 30)
    assert all(a < b for a, b in zip(SIZES, SIZES[1:]))


@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_closed_form_table_is_the_closed_forms(flat64, collective: str) -> None:
    table = tuning_table(collective, flat64, method="closed_form")
    assert table.method == "closed_form" and table.nranks == 64
    for i in range(0, len(SIZES), 7):
        n = SIZES[i] - SIZES[i] % 4
        expected = [closed_form(collective, a, flat64, n, **dict(p))
                    for a, p in candidates(collective)]
        assert list(table.times[i]) == pytest.approx(expected, rel=1e-12)


def test_simulated_table_reproduces_exact_closed_forms_on_flat(flat4) -> None:
    table = tuning_table("allreduce", flat4, method="simulate")
    exact = [c for c, (a, p) in enumerate(table.candidates)
             if a in ("ring", "rhd", "pipeline") or p == (("segments", 4),)]
    assert len(exact) == 8  # rhd twice: halving-doubling and recursive doubling
    for i, n in enumerate(SIZES):
        if n >= 4096:
            for c in exact:
                a, p = table.candidates[c]
                expected = closed_form("allreduce", a, flat4, n, **dict(p))
                # a chain's two directions share a rank's single port for a few rounds,
                # for a few rounds more than the chain's steady state (8% at 4 segments)
                rel = 0.1 if a == "pipeline" else 1e-6
                assert table.times[i][c] == pytest.approx(expected, rel=rel), (n, a, p)


def test_linear_read_off_matches_direct_simulation() -> None:
    machine = topology.dgx_h100()
    table = tuning_table("allgather", machine)
    assert table.method == "simulate"
    for n in (1 << 28, 3 << 30):
        i = SIZES.index(n)
        for c, (a, p) in enumerate(table.candidates):
            direct = simulate(build_schedule("allgather", a, 8, n // 4, **dict(p)), machine,
                              trace=False).time_s
            assert table.times[i][c] == pytest.approx(direct, rel=1e-3), (n, a, p)


def test_latency_bound_family_wins_small_messages_at_many_ranks(flat64) -> None:
    for collective in ("allreduce", "reduce_scatter", "allgather"):
        for n in (64, 1024, 8192):
            choice = select(collective, n, flat64)
            assert choice.algorithm in ("rhd", "tree"), (collective, n, choice.label)
            ring = next(c.predicted_s for c in choice.candidates if c.algorithm == "ring")
            assert choice.predicted_s < ring / 3


def test_ring_wins_large_messages_with_one_link_per_rank() -> None:
    machine = topology.dgx_h100()
    for n in (16 << 20, 1 << 30, 8 << 30):
        choice = select("allreduce", n, machine, nranks=6)
        assert choice.algorithm == "ring", (n, choice.label)
        assert choice.predicted_s == min(c.predicted_s for c in choice.candidates)


def test_choice_is_the_least_interpolated_time(flat4) -> None:
    table = tuning_table("allreduce", flat4)
    rng = random.Random(6)
    for n in [rng.randrange(1, 1 << 33) for _ in range(300)] + [r.min_bytes for r in table.ranges]:
        choice = select("allreduce", n, flat4)
        times = [c.predicted_s for c in choice.candidates]
        assert choice.predicted_s == min(times), n
        assert (choice.algorithm, choice.params) == candidates("allreduce")[times.index(min(times))]


def test_interpolation_is_exact_at_sweep_sizes_and_between_them(flat4) -> None:
    table = tuning_table("reduce_scatter", flat4)
    i = SIZES.index(1 << 20)
    assert table.times_at(1 << 20) == list(table.times[i])
    middle = table.times_at(((1 << 20) + (3 << 19)) // 2)
    assert middle == pytest.approx([(a + b) / 2 for a, b in zip(table.times[i], table.times[i + 1])])


def test_ranges_cover_every_size_and_crossovers_mark_changes(flat64) -> None:
    table = tuning_table("allreduce", flat64, method="closed_form")
    assert table.ranges[0].min_bytes == 0 and table.ranges[-1].max_bytes == (1 << 63) - 1
    for a, b in zip(table.ranges, table.ranges[1:]):
        assert a.max_bytes + 1 == b.min_bytes and a.index != b.index
        assert table.choice(a.max_bytes).algorithm != table.choice(b.min_bytes).algorithm \
            or table.choice(a.max_bytes).params != table.choice(b.min_bytes).params
    assert [size for size, _, _ in table.crossovers()] == [r.min_bytes for r in table.ranges[1:]]


def test_deterministic_and_cached(flat4) -> None:
    first = select("allgather", 12345 * 4, flat4)
    assert isinstance(first, Choice)
    assert select("allgather", 12345 * 4, flat4) == first
    table = tuning_table("allgather", flat4)
    assert tuning_table("allgather", flat4) is table
    clear_cache()
    assert tuning_table("allgather", flat4) is not table
    assert select("allgather", 12345 * 4, flat4) == first


@pytest.mark.parametrize("call, match", [
    (lambda t: select("bcast", 8, t), "collective='bcast'"),
    (lambda t: select("allreduce", -1, t), "nbytes=-1"),
    (lambda t: select("allreduce", 1.5, t), "nbytes=1.5"),
    (lambda t: select("allreduce", 8, t, nranks=5), "nranks=5"),
    (lambda t: select("allreduce", 8, t, dtype_size=0), "dtype_size=0"),
    (lambda t: select("allreduce", 8, t, method="guess"), "method='guess'"),
])
def test_bad_arguments_are_named(flat4, call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call(flat4)


def test_not_a_topology_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="topology="):
        select("allreduce", 8, "flat")


@pytest.fixture(scope="module")
def two_nodes():
    return topology.dgx_h100(2)


def test_simulated_tables_try_channels_and_hier(two_nodes) -> None:
    table = tuning_table("allreduce", two_nodes, method="simulate", algorithms=("ring", "hier"))
    labels = [_label(a, p) for a, p in table.candidates]
    assert labels == ["ring", "ring(channels=8)",
                      *(f"hier(channels=1,inner={i},ranks_per_node=8)"
                        for i in ("ring", "tree", "rhd")),
                      *(f"hier(channels=8,inner={i},ranks_per_node=8)" for i in ("ring", "rhd"))]
    big = table.choice(4 << 30)
    assert big.label == "ring(channels=8)"
    small = table.choice(64 << 10)
    assert small.algorithm == "hier"  # fewer network steps win small and mid sizes


def test_algorithms_restrict_the_candidates(two_nodes, flat4) -> None:
    assert {c.algorithm for c in select("allreduce", 1024, flat4, algorithms="tree").candidates} \
        == {"tree"}
    with pytest.raises(ValueError, match="algorithms=\\('bus',\\)"):
        select("allreduce", 1024, flat4, algorithms=("bus",))
    with pytest.raises(ValueError, match="leaves no candidate"):
        tuning_table("allreduce", flat4, method="closed_form", algorithms=("hier",))


def test_channel_counts_follow_the_environment(two_nodes, monkeypatch) -> None:
    from simulator.channel_choice import channel_counts
    assert channel_counts(two_nodes) == (1, 8)
    monkeypatch.setenv("COLLSIM_MAX_NCHANNELS", "2")
    assert channel_counts(two_nodes) == (1, 2)
    monkeypatch.setenv("COLLSIM_MIN_NCHANNELS", "2")
    assert channel_counts(two_nodes) == (2,)
    monkeypatch.setenv("COLLSIM_MIN_NCHANNELS", "4")
    with pytest.raises(ValueError, match="COLLSIM_MIN_NCHANNELS=4 exceeds"):
        channel_counts(two_nodes)
    monkeypatch.setenv("COLLSIM_MIN_NCHANNELS", "x")
    with pytest.raises(ValueError, match="COLLSIM_MIN_NCHANNELS='x'"):
        channel_counts(two_nodes)
