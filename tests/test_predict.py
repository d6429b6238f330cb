"""``collsim predict``: the fit, the host model, the summary, and one short run under mpirun."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from collectives import build_schedule
from collectives.launch import run_mpi
from simulator import simulate
from collectives.schedule import Recv, Schedule, Send, Step
from simulator.predict import fit_relative, host_model, model_terms, summarize


def test_fit_relative_recovers_coefficients_and_drops_negative_ones() -> None:
    steps = [3.0, 3.0, 2.0, 2.0, 3.0]
    nbytes = [10.0, 1e6, 50.0, 4e6, 2e7]
    times = [5e-5 + 2e-6 * s + 1e-9 * b for s, b in zip(steps, nbytes)]
    fitted = fit_relative([[1.0] * 5, steps, nbytes], times)
    assert fitted == pytest.approx([5e-5, 2e-6, 1e-9], rel=1e-6)
    assert fit_relative([[1.0] * 3, [1.0, 2.0, 3.0]], [3.0, 2.0, 1.0])[1] == 0.0


def test_host_model_ring_steps_move_at_the_calibrated_rate() -> None:
    beta = 1e-9
    machine = host_model(4, 1e-6, beta, 0.0)
    ring = simulate(build_schedule("allgather", "ring", 4, 4 << 20), machine, trace=False)
    assert ring.time_s == pytest.approx(3 * (1e-6 + (4 << 20) * beta), rel=1e-3)
    # two of the four ranks: a rank's share of the cores does not grow when others wait
    pair = simulate(build_schedule("allgather", "ring", 2, 2 << 20), machine, trace=False)
    assert pair.time_s == pytest.approx(1e-6 + (4 << 20) * beta, rel=1e-3)


def test_host_model_shares_a_rank_core_between_its_sends_and_receives() -> None:
    beta, n = 1e-9, 1 << 18  # elements, 1 MiB per message
    machine = host_model(4, 1e-6, beta, 0.0)
    # rank 1 receives from 0 and sends to 2 and 3 at once: three messages on its core
    inner = Schedule.from_steps("allgather", "hand", n, [
        [Step((Send(1, 0, n),))], [Step((Recv(0, 0, n), Send(2, 0, n), Send(3, 0, n)))],
        [Step((Recv(1, 0, n),))], [Step((Recv(1, 0, n),))]])
    cpu_Bps = 2 / beta
    assert simulate(inner, machine, trace=False).time_s == \
        pytest.approx(1e-6 + 4 * n / (cpu_Bps / 3), rel=1e-3)
    alone = Schedule.from_steps("allgather", "hand", n, [[Step((Send(1, 0, n),))],
                                                          [Step((Recv(0, 0, n),))], [], []])
    assert simulate(alone, machine, trace=False).time_s == \
        pytest.approx(1e-6 + 4 * n / cpu_Bps, rel=1e-3)


def test_model_terms_add_up_to_the_simulated_time_on_a_ring() -> None:
    alpha, beta, gamma, o = 2e-6, 1e-9, 5e-10, 3e-6
    terms = model_terms("reduce_scatter", "ring", 4, 1 << 20, {})
    assert terms[3] == pytest.approx(3 * 2)  # 3 steps, one message out and one in each
    machine = host_model(4, alpha, beta, gamma, overhead_s_per_message=o)
    simulated = simulate(build_schedule("reduce_scatter", "ring", 4, 1 << 18), machine,
                         trace=False).time_s
    assert simulated == pytest.approx(sum(c * t for c, t in zip((alpha, beta, gamma, o), terms)),
                                      rel=1e-6)


def test_summary_counts_good_choices_and_the_geometric_error() -> None:
    def point(n, algorithm, predicted, measured, chosen):
        return {"nbytes": n, "algorithm": algorithm, "predicted_s": predicted,
                "measured_s": measured, "chosen": chosen}

    points = [point(1 << 16, "ring", 1.25, 1.0, True), point(1 << 16, "rhd", 1.0, 1.25, False),
              point(1024, "ring", 1.0, 2.0, True), point(1024, "rhd", 2.0, 1.0, False)]
    summary = summarize(points)
    assert summary["geomean_error_from_64KiB"] == pytest.approx(0.25)
    assert summary["good_choice_share"] == 0.5
    assert summary["best_matches_share"] == 0.0
    assert [v["good"] for v in summary["verdicts"]] == [False, True]


@pytest.mark.mpi
def test_predict_runs_under_mpirun(tmp_path: Path) -> None:
    out = tmp_path / "points.json"
    result = run_mpi(2, ["-m", "collectives.cli", "predict", "-b", "4K", "-e", "64K", "-f",
                         "4", "--iters", "2", "--warmup", "1", "--json", str(out), "--plot",
                         str(tmp_path / "plot.png")], timeout_s=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "geomean error" in result.stdout and (tmp_path / "plot.png").stat().st_size > 0
    data = json.loads(out.read_text())
    assert {p["algorithm"] for p in data["points"]} == {"ring", "tree", "rhd", "pipeline"}
    assert {p["nbytes"] for p in data["points"]} == {4096, 16384, 65536}
    assert all(p["measured_s"] > 0 and p["predicted_s"] > 0 for p in data["points"])
    assert math.isfinite(data["summary"]["geomean_error_from_64KiB"])
