"""Reading, predicting and scoring published curves (simulator.fidelity), on made-up curves."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from collectives import build_schedule
from simulator import simulate
from simulator.fidelity import (DATA_DIR, GROUP_LAUNCH_FROM_BYTES, channel_count,
                                disagreements, machine, predict, read_curve, read_curves,
                                score)
from simulator.nccl_tuner import nccl_choice
from collectives import channel_orders
from topology.channels import nics_per_node

HEADER = """# all_reduce_perf (nccl-tests), out-of-place columns, float32 sum; GB = 1e9 bytes
# hardware: {hardware}
# launch: {launch}
# algorithm: {algorithm}
# ranks: {ranks}, nodes: {nodes}
# source: made up for a test{note}
bytes,time_us,algbw_GBps,busbw_GBps
"""


def _curve(tmp_path: Path, rows: list[tuple[int, float]], *, hardware: str = "8x H100 SXM",
           launch: str = "one process per GPU", algorithm: str = "NCCL default",
           ranks: int = 8, nodes: int = 1, note: str = "", name: str = "made_up") -> Path:
    path = tmp_path / f"{name}.csv"
    path.write_text(HEADER.format(hardware=hardware, launch=launch, algorithm=algorithm,
                                  ranks=ranks, nodes=nodes, note=note)
                    + "".join(f"{n},{t},0,0\n" for n, t in rows))
    return path


def test_header_says_machine_launch_and_forced_algorithm(tmp_path: Path) -> None:
    curve = read_curve(_curve(tmp_path, [(1024, 20.0)], hardware="2 x 8 A100-SXM4-40GB",
                              launch="one process, -g 8", ranks=16, nodes=2,
                              algorithm="NCCL_ALGO=Ring, NCCL_PROTO=LL128, NCCL_MIN_CTAS=32, "
                                        "NCCL_IB_QPS_PER_CONNECTION=4, NCCL_DEBUG=INFO"))
    assert (curve.gpu, curve.ranks, curve.nodes, curve.gpus_per_process) == ("A100", 16, 2, 8)
    assert (curve.algorithm, curve.protocol, curve.nccl_algorithms) == ("ring", "LL128",
                                                                         ("ring",))
    assert curve.settings == (("NCCL_DEBUG", "INFO"), ("NCCL_IB_QPS_PER_CONNECTION", "4"),
                              ("NCCL_MIN_CTAS", "32"))
    target = machine(curve)
    assert target.nranks == 16 and target.gpu.gpus_per_process == 8
    assert (target.gpu.channels, target.gpu.qps_per_connection) == (32, 4)
    assert curve.time_s == (pytest.approx(20e-6),)


def test_a_default_curve_mentioning_a_setting_forces_nothing(tmp_path: Path) -> None:
    curve = read_curve(_curve(tmp_path, [(8, 10.0)], nodes=2, ranks=16,
                              algorithm="NCCL default (with NCCL_ALGO=Ring it is slower)"))
    assert curve.algorithm is None and curve.nccl_algorithms == ("ring", "tree")


def test_group_launch_outliers_and_named_rows_are_not_compared(tmp_path: Path) -> None:
    rows = [(8, 40.0), (16, 200.0), (32, 41.0), (GROUP_LAUNCH_FROM_BYTES, 45.0),
            (8 << 20, 400.0), (16 << 20, 300.0)]
    plain = read_curve(_curve(tmp_path, rows, note="; the 8 MiB row is an outlier", name="a"))
    assert plain.compared == (True, False, True, True, False, True)
    grouped = read_curve(_curve(tmp_path, rows, launch="one process, -g 8", name="b"))
    assert grouped.compared == (False, False, False, True, True, True)
    assert "-g 8" in grouped.why and "16 B" in plain.why


def test_score_is_the_geomean_of_log_ratios_over_compared_sizes(tmp_path: Path) -> None:
    curve = read_curve(_curve(tmp_path, [(8, 10.0), (16, 10.0), (64 << 20, 100.0)]))
    result = score(curve, [20e-6, 5e-6, 110e-6])
    assert result.geomean == pytest.approx(math.exp((2 * math.log(2) + math.log(1.1)) / 3) - 1)
    assert result.geomean_large == pytest.approx(0.1)
    assert result.geomean_small == pytest.approx(1.0)
    assert (result.worst_bytes, result.worst, result.compared) == (8, pytest.approx(1.0), 3)
    with pytest.raises(ValueError, match="predicted_s has 2 values"):
        score(curve, [1.0, 1.0])


def test_prediction_uses_the_forced_algorithm_and_protocol(tmp_path: Path) -> None:
    curve = read_curve(_curve(tmp_path, [(1 << 20, 50.0), (1 << 26, 300.0)], nodes=1,
                              algorithm="NCCL_ALGO=Ring, NCCL_PROTO=LL128"))
    assert [(label, protocol) for label, protocol, _ in predict(curve)] == \
        [("ring", "LL128")] * 2


def test_every_published_curve_is_read() -> None:
    curves = read_curves()
    assert len(curves) == len([f for f in DATA_DIR.iterdir() if f.name.endswith(".csv")]) >= 11
    assert all(curve.header.get("source") and any(curve.compared) for curve in curves)


def test_the_benchmark_prints_a_row_per_curve_and_plots(tmp_path: Path) -> None:
    data = tmp_path / "curves"
    data.mkdir()
    for name in ("a100_1node_nccl2.16.2", "h100_1node_dgx_default_nvls"):
        (data / f"{name}.csv").write_text((DATA_DIR / f"{name}.csv").read_text())
    plot, page = tmp_path / "fidelity.png", tmp_path / "fidelity.md"
    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(repo / "benchmarks" / "bench_fidelity.py"),
                          "--data", str(data), "--plot", str(plot), "--write", str(page)],
                         capture_output=True, text=True, check=True, cwd=repo).stdout
    rows = [line for line in out.splitlines() if line.startswith(("a100_", "h100_"))]
    assert [row.split()[0] for row in rows[:2]] == ["a100_1node_nccl2.16.2",
                                                    "h100_1node_dgx_default_nvls"]
    assert all("%" in row for row in rows[:2])
    assert plot.stat().st_size > 10_000
    head, _, body = page.read_text().partition("```text\n")
    assert f"--write {page}" in head and "- date: 20" in head and " cores, load " in head
    assert all(row in body for row in rows[:2])


def test_a_multi_node_prediction_runs_a_channel_per_nic(tmp_path: Path) -> None:
    curve = read_curve(_curve(tmp_path, [(1 << 30, 5000.0)], hardware="2 x 8 H100 SXM",
                              ranks=16, nodes=2, algorithm="NCCL_ALGO=Ring, NCCL_PROTO=Simple"))
    target = machine(curve)
    assert channel_count(target) == nics_per_node(target) == 8
    [(label, protocol, seconds)] = predict(curve)
    assert (label, protocol) == ("ring x8", "Simple")
    count = (1 << 30) // 4
    orders = channel_orders(target, 8, "ring")
    assert seconds == simulate(build_schedule("allreduce", "ring", 16, count, channels=8,
                                              order=orders),
                               target, trace=False, protocol="Simple").time_s
    one_nic = simulate(build_schedule("allreduce", "ring", 16, count, order=orders[0]),
                       target, trace=False, protocol="Simple").time_s
    assert seconds < one_nic / 4


def test_a_default_curve_runs_what_nccls_own_model_ranks_first(tmp_path: Path) -> None:
    sizes = [1 << 20, 4 << 20, 64 << 20]
    curve = read_curve(_curve(tmp_path, [(n, 100.0) for n in sizes],
                              hardware="8x A100-SXM4-80GB"))
    expected = [nccl_choice("A100", n, 8, 1, ("ring",)) for n in sizes]
    assert [(label, k) for label, k, _ in predict(curve)] == [(a, k) for a, k in expected]
    assert [k for _, k in expected] == ["LL", "LL128", "Simple"]


def test_curves_of_one_machine_kind_are_set_side_by_side(tmp_path: Path) -> None:
    a = read_curve(_curve(tmp_path, [(8, 10.0), (1 << 20, 100.0)], name="a"))
    b = read_curve(_curve(tmp_path, [(1 << 20, 130.0), (1 << 30, 9000.0)], name="b"))
    other = read_curve(_curve(tmp_path, [(1 << 20, 50.0)], nodes=2, ranks=16, name="c"))
    ring = read_curve(_curve(tmp_path, [(1 << 20, 50.0)], algorithm="NCCL_ALGO=Ring",
                             name="d"))
    [pair] = disagreements([a, b, other, ring])
    assert (pair.first, pair.second, pair.nbytes) == ("a", "b", (1 << 20,))
    assert pair.ratios == (pytest.approx(1.3),) and pair.spread == pytest.approx(0.3)


def test_where_nccl_reduced_in_the_switch_the_models_nvls_predicts_it(tmp_path: Path) -> None:
    sizes = [1 << 10, 1 << 30]
    h100 = read_curve(_curve(tmp_path, [(n, 100.0) for n in sizes], name="h",
                             algorithm="NCCL default (Ring/LL, NVLS above ~1 MB)"))
    assert [(label, k) for label, k, _ in predict(h100)] == [("ring", "LL"),
                                                             ("nccl-nvls", "Simple")]
    a100 = read_curve(_curve(tmp_path, [(n, 100.0) for n in sizes], name="a",
                             hardware="8x A100-SXM4-80GB", algorithm="NCCL default, NVLS"))
    assert [label for label, _, _ in predict(a100)] == ["ring", "ring"]  # no NVLS on A100
    forced = read_curve(_curve(tmp_path, [(1 << 30, 100.0)], name="r",
                               algorithm="NCCL_ALGO=Ring"))
    unstated = read_curve(_curve(tmp_path, [(1 << 30, 100.0)], name="u"))
    assert [label for label, _, _ in predict(forced) + predict(unstated)] == ["ring"] * 2
    for name in ("h100_1node_dgx_default_nvls", "h100_2node_default_nccl2.26.2"):
        assert read_curve(DATA_DIR / f"{name}.csv").compared[-1]  # the NVLS sizes too


def test_the_sizes_where_nccls_tree_beat_the_ring_on_two_nodes_are_compared() -> None:
    curve = read_curve(DATA_DIR / "a100_2node_roce_default.csv")
    assert all(curve.compared) and curve.why == ""  # 1-8 GiB, where NCCL ran its tree, too
    assert curve.settings == (("NCCL_CROSS_NIC", "1"), ("NCCL_IB_QPS_PER_CONNECTION", "4"))
    assert machine(curve).gpu.qps_per_connection == 4
