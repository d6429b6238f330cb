"""NCCL's own choice (simulator.nccl_tuner): tuning.cc's formulas, pinned by hand."""

from __future__ import annotations

import pytest

from simulator.nccl_tuner import TUNERS, nccl_channels, nccl_choice, nccl_time_us


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


def test_nvls_is_ranked_as_tuning_cc_ranks_it_on_one_h100_node() -> None:
    # 8 heads x min(40 x 0.85 x 7/8 x 2, 60) = 476 GB/s busbw, algbw x 8/14; hwLat 25 us
    n = 1 << 30
    assert nccl_time_us("H100", "nvls", "Simple", n, 8, 1) == pytest.approx(
        25.0 + n / (1000 * 476.0 * 8 / 14))
    assert nccl_time_us("H100", "nvls", "LL", n, 8, 1) == float("inf")  # Simple only
    assert nccl_time_us("A100", "nvls", "Simple", n, 8, 1) == float("inf")  # Hopper on
    assert nccl_time_us("H100", "nvls", "Simple", n, 16, 2) == float("inf")  # CollNet only
    # AllGather: 8 x 40 x 0.85 x 7/8 x 7/8, not converted to algorithm bandwidth
    assert nccl_time_us("H100", "nvls", "Simple", n, 8, 1, "allgather") == pytest.approx(
        25.0 + n / (1000 * 8 * 40 * 0.85 * 7 / 8 * 7 / 8))
    switch = next(n for n in (1 << k for k in range(10, 30))
                  if nccl_choice("H100", n, 8, 1)[0] == "nvls")
    assert switch == 1 << 21  # h100_1node_dgx_default_nvls: "NVLS above ~1 MB"


def test_nvls_tree_and_pat_take_their_caps_and_conditions() -> None:
    n = 1 << 30
    # 2 nodes: min(59.5, 48 x 2, cap 57.7) x 8 heads, algbw x 16/30; 25 + 2 x 20.9 us
    assert nccl_time_us("H100", "nvls_tree", "Simple", n, 16, 2) == pytest.approx(
        25.0 + 2 * 20.9 + n / (1000 * 57.7 * 8 * 16 / 30))
    assert nccl_time_us("H100", "nvls_tree", "Simple", n, 8, 1) == float("inf")
    # PAT: one GPU per node, the ring's bandwidth x 0.75, 8 + log2(N) x 14/3.5 + N x 2.8 us
    bw = TUNERS["H100"].channels * TUNERS["H100"].inter_GBps * 0.75
    assert nccl_time_us("H100", "pat", "Simple", n, 4, 4, "reduce_scatter") == pytest.approx(
        8.0 + 2 * 14.0 / 3.5 + 4 * 2.8 + n / (1000 * bw))
    assert nccl_time_us("H100", "pat", "Simple", n, 16, 2, "allgather") == float("inf")
    assert nccl_time_us("H100", "pat", "Simple", n, 4, 4) == float("inf")  # not AllReduce


def test_channels_drop_below_the_thread_thresholds_as_enqueue_cc_drops_them() -> None:
    # Simple: one channel per 512 threads x 64 B; Ring LL's threshold x the ranks
    assert [nccl_channels("H100", "ring", "Simple", k << 15, 8, 1) for k in (1, 5, 16, 99)] \
        == [1, 5, 16, 16]
    assert nccl_channels("H100", "ring", "LL", 5 << 15, 16, 2) == 2  # 512 x 8 x 16 B each
    assert nccl_channels("H100", "tree", "LL", 5 << 12, 16, 2) == 5
    assert nccl_channels("H100", "nvls", "Simple", 8, 8, 1) == 16
