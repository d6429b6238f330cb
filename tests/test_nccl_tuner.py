"""NCCL's own choice (simulator.nccl_tuner): tuning.cc's formulas, pinned by hand."""

from __future__ import annotations

import pytest

from simulator.nccl_tuner import TUNERS, nccl_choice, nccl_time_us


def test_ring_latency_and_bandwidth_are_tuning_cc_on_one_node() -> None:
    # LL: baseLat 6.6 + 14 steps x 0.6 us; bus bandwidth min(llMaxBw 87.7, 240 x 0.5)
    small = nccl_time_us("A100", "ring", "LL", 64, 8, 1)
    assert small == pytest.approx(6.6 + 14 * 0.6 + 64 / (1000 * 87.7 * 8 / 14))
    # Simple: 8.4 + 14 x 3.4 us and the whole 24 x 10 GB/s
    large = nccl_time_us("A100", "ring", "Simple", 1 << 30, 8, 1)
    assert large == pytest.approx(8.4 + 14 * 3.4 + (1 << 30) / (1000 * 240 * 8 / 14))


def test_ring_simple_pays_the_plateau_factor_only_on_several_nodes() -> None:
    n = 1 << 30
    one = nccl_time_us("H100", "ring", "Simple", n, 8, 1)
    two = nccl_time_us("H100", "ring", "Simple", n, 16, 2)
    bw = TUNERS["H100"].channels * TUNERS["H100"].intra_GBps
    lat_two = 8.4 + 28 * 3.4 + 2 * 14.0
    assert two == pytest.approx(1.4 * lat_two + n / (1000 * bw * 16 / 30))
    assert one == pytest.approx(8.4 + 14 * 3.4 + n / (1000 * bw * 8 / 14))


def test_tree_takes_the_per_size_correction() -> None:
    # 64 KiB: log2(65536 >> 6) = 10, Simple factor .6; 1 GiB: beyond the table, none
    lat = 8.4 + 2 * (7 * 4.0 + 1 * 14.0)
    bw = min(TUNERS["H100"].channels * TUNERS["H100"].intra_GBps * 0.92,
             TUNERS["H100"].channels * 41.4) * 0.5
    assert nccl_time_us("H100", "tree", "Simple", 1 << 16, 16, 2) == pytest.approx(
        lat + (1 << 16) / (1000 * bw * 0.6))
    assert nccl_time_us("H100", "tree", "Simple", 1 << 30, 16, 2) == pytest.approx(
        lat + (1 << 30) / (1000 * bw))


def test_choice_crosses_protocols_and_algorithms_where_the_formulas_cross() -> None:
    sizes = [1 << k for k in range(3, 34)]
    choices = [nccl_choice("A100", n, 8, 1) for n in sizes]
    for n, choice in zip(sizes, choices):
        times = {(a, k): nccl_time_us("A100", a, k, n, 8, 1)
                 for a in ("ring", "tree") for k in ("LL", "LL128", "Simple")}
        assert times[choice] == min(times.values())
    assert [k for _, k in choices] == sorted((k for _, k in choices),
                                             key=("LL", "LL128", "Simple").index)
    assert nccl_choice("H100", 8, 64, 8)[0] == "tree"
    assert nccl_choice("H100", 8, 64, 8, algorithms=("ring",), protocols=("Simple",)) == \
        ("ring", "Simple")


def test_unknown_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="gpu='V100'"):
        nccl_time_us("V100", "ring", "LL", 8, 8, 1)
    with pytest.raises(ValueError, match="algorithm='rhd'"):
        nccl_time_us("A100", "rhd", "LL", 8, 8, 1)
    with pytest.raises(ValueError, match="protocol='LL64'"):
        nccl_time_us("A100", "ring", "LL64", 8, 8, 1)
