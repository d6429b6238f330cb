"""``collsim predict``: the fit, the host model, the summary, and one short run under mpirun."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from collectives import build_schedule
from collsim.launch import run_mpi
from simulator import simulate
from collectives.schedule import Recv, Schedule, Send, Step
from collsim.predict import (BAND_BYTES, IN_PLACE_PARAM, HostFit, HostPredictor, band_weights,
                             calibration_jobs, fit_calibration, fit_relative, fitted_model,
                             host_model, local_copy_bytes, measure_all, model_terms,
                             predicted_time, shared_cores_time, summarize)
from simulator.selection import candidates


def test_fit_relative_recovers_coefficients_and_drops_negative_ones() -> None:
    steps = [3.0, 3.0, 2.0, 2.0, 3.0]
    nbytes = [10.0, 1e6, 50.0, 4e6, 2e7]
    times = [5e-5 + 2e-6 * s + 1e-9 * b for s, b in zip(steps, nbytes)]
    fitted = fit_relative([[1.0] * 5, steps, nbytes], times)
    assert fitted == pytest.approx([5e-5, 2e-6, 1e-9], rel=1e-6)
    assert fit_relative([[1.0] * 3, [1.0, 2.0, 3.0]], [3.0, 2.0, 1.0])[1] == 0.0


def test_host_model_shares_one_copy_throughput_between_all_messages() -> None:
    beta = 1e-9
    machine = host_model(4, 1e-6, beta, 0.0)
    # a ring step: four messages of 4 MiB at once share the host's 1 / beta bytes per second
    ring = simulate(build_schedule("allgather", "ring", 4, 4 << 20), machine, trace=False)
    assert ring.time_s == pytest.approx(3 * (1e-6 + 4 * (4 << 20) * beta), rel=1e-3)
    # one message alone (a chain's hop) gets all of it: 16 MiB as fast as the ring's step
    n = 4 << 20  # elements
    alone = Schedule.from_steps("allgather", "hand", n, [[Step((Send(1, 0, n),))],
                                                          [Step((Recv(0, 0, n),))], [], []])
    assert simulate(alone, machine, trace=False).time_s == \
        pytest.approx(1e-6 + 4 * n * beta, rel=1e-3)


def test_host_model_inner_tree_rank_shares_with_the_others() -> None:
    beta, n = 1e-9, 1 << 18  # elements, 1 MiB per message
    machine = host_model(4, 1e-6, beta, 0.0)
    # rank 1 receives from 0 and sends to 2 and 3 at once: three messages through the host
    inner = Schedule.from_steps("allgather", "hand", 2 * n, [
        [Step((Send(1, 0, n),))], [Step((Recv(0, 0, n), Send(2, n, 2 * n), Send(3, n, 2 * n)))],
        [Step((Recv(1, 0, n),))], [Step((Recv(1, 0, n),))]])
    assert simulate(inner, machine, trace=False).time_s == \
        pytest.approx(1e-6 + 3 * 4 * n * beta, rel=1e-3)


def test_model_terms_share_reductions_and_messages_between_the_cores() -> None:
    n = 1 << 20  # bytes
    latency, moved, reduced, messages, copied = model_terms("reduce_scatter", "ring", 4, n, {},
                                                            cores=2)
    assert latency == pytest.approx(3)  # three steps on the critical path
    assert moved == pytest.approx(3 * n)  # three steps of four n / 4 messages
    # every rank reduces three blocks of n / 4 at the same time as the others: the work of
    # all four over 2 cores (more than one rank's own); it posts two messages per step,
    # taking turns with another rank on a core
    assert reduced == pytest.approx(4 * 3 * n / 4 / 2)
    assert messages == pytest.approx(3 * 2 * 4 / 2)
    # every rank copies its input into the working buffer and its block out, four ranks
    # on 2 cores; in place only the block out
    assert copied == pytest.approx(4 * (n + n / 4) / 2)
    in_place = model_terms("reduce_scatter", "ring", 4, n, {IN_PLACE_PARAM: True}, cores=2)
    assert in_place == pytest.approx([latency, moved, reduced, messages, 4 * n / 4 / 2])
    assert local_copy_bytes("allreduce", 4, n, False) == n
    assert local_copy_bytes("allgather", 4, n, False) == n / 4
    # on 8 cores each rank's own reductions and messages, one after another, take longest
    assert model_terms("reduce_scatter", "ring", 4, n, {}, cores=8)[2:4] == \
        pytest.approx([3 * n / 4, 3 * 2])
    # a chain reduces the whole vector and passes it on, one rank after another
    chain = model_terms("allreduce", "pipeline", 4, n, {"segments": 1}, cores=2)
    assert chain[2] == pytest.approx(3 * n)
    assert chain[3] == pytest.approx(shared_cores_time(
        build_schedule("allreduce", "pipeline", 4, n // 4, segments=1),
        lambda step: sum(isinstance(op, (Send, Recv)) for op in step.ops), 2))
    with pytest.raises(ValueError, match="cores=0"):
        model_terms("allreduce", "ring", 4, n, {}, cores=0)


def test_shared_cores_time_lets_ranks_take_turns_on_the_cores() -> None:
    def hand(steps):
        return Schedule.from_steps("allgather", "hand", 8, steps)

    def message(step):
        return float(sum(isinstance(op, (Send, Recv)) for op in step.ops))

    # a chain 0 -> 1 -> 2: all three post their first message at once, then rank 1,
    # having received, posts its send alone
    chain = hand([[Step((Send(1, 0, 8),))],
                  [Step((Recv(0, 0, 8),)), Step((Send(2, 0, 8),))],
                  [Step((Recv(1, 0, 8),))]])
    assert shared_cores_time(chain, message, 3) == pytest.approx(1 + 1)
    assert shared_cores_time(chain, message, 1) == pytest.approx(3 + 1)
    # the k-th send matches the k-th receive: each rank receives before it sends, so
    # neither can finish its first step
    crossed = hand([[Step((Recv(1, 0, 8),)), Step((Send(1, 0, 8),))],
                    [Step((Recv(0, 0, 8),)), Step((Send(0, 0, 8),))]])
    with pytest.raises(ValueError, match="cannot complete"):
        shared_cores_time(crossed, message, 2)


def test_band_weights_blend_neighbouring_bands() -> None:
    assert band_weights(1) == band_weights(BAND_BYTES[0]) == [1.0, 0.0, 0.0, 0.0]
    assert band_weights(1 << 40) == [0.0, 0.0, 0.0, 1.0]
    for nbytes in (5000, 1 << 17, 3 << 20):
        weights = band_weights(nbytes)
        assert sum(weights) == pytest.approx(1.0) and sum(w > 0 for w in weights) == 2
    with pytest.raises(ValueError, match="nbytes=0"):
        band_weights(0)


def _true_fit() -> HostFit:
    return HostFit(overhead_s=80e-6, alpha_s=2e-6, beta_s_per_byte=(2e-9, 8e-10, 3e-10, 4e-10),
                   band_bytes=BAND_BYTES, gamma_s_per_byte=1e-10, overhead_s_per_message=5e-6,
                   copy_s_per_byte=2e-10, cores=2, fit_error=0.0)


def test_fit_calibration_recovers_the_model_that_made_the_times() -> None:
    truth = _true_fit()
    runs = calibration_jobs(4)
    times = [truth.overhead_s + predicted_time(truth, model_terms(c, a, 4, n, params), n)
             for c, n, a, params in runs]
    fit = fit_calibration(4, runs, times)
    for key in ("overhead_s", "alpha_s", "beta_s_per_byte", "gamma_s_per_byte",
                "overhead_s_per_message", "copy_s_per_byte"):
        assert getattr(fit, key) == pytest.approx(getattr(truth, key), rel=1e-3), key
    assert fit.fit_error < 1e-3


def test_host_fit_to_dict_has_every_figure_for_json() -> None:
    fit = _true_fit()
    assert fit.to_dict() == {
        "overhead_s": 80e-6, "alpha_s": 2e-6, "beta_s_per_byte": [2e-9, 8e-10, 3e-10, 4e-10],
        "band_bytes": list(BAND_BYTES), "gamma_s_per_byte": 1e-10,
        "overhead_s_per_message": 5e-6, "copy_s_per_byte": 2e-10, "cores": 2, "fit_error": 0.0}
    assert json.loads(json.dumps(fit.to_dict())) == fit.to_dict()
    with pytest.raises(ValueError, match="band_bytes 4"):
        replace(fit, beta_s_per_byte=(1e-9,))


def test_host_predictor_chooses_the_least_predicted_time() -> None:
    fit = _true_fit()
    predictor = HostPredictor("allreduce", 4, fit)
    for nbytes in (1024, 1 << 24):
        choice = predictor.choice(nbytes)
        assert len(choice.candidates) == len(candidates("allreduce"))
        assert choice.predicted_s == min(c.predicted_s for c in choice.candidates)
        ring = next(c for c in choice.candidates if c.algorithm == "ring")
        assert ring.predicted_s == pytest.approx(
            predicted_time(fit, model_terms("allreduce", "ring", 4, nbytes, {}), nbytes))
    # per-message CPU time alone: the chain's ranks mostly post one at a time (7 messages'
    # time); the unsegmented tree's and rhd's all at once, two ranks per core (12, 16)
    messages_only = replace(fit, alpha_s=0.0, beta_s_per_byte=(0.0,) * 4,
                            gamma_s_per_byte=0.0, copy_s_per_byte=0.0, cores=2)
    choice = HostPredictor("allreduce", 4, messages_only).choice(1 << 20)
    assert choice.label == "pipeline(segments=1)"
    assert choice.predicted_s == pytest.approx(7 * fit.overhead_s_per_message)
    for label, messages in (("tree(segments=1)", 12), ("rhd", 16)):
        other = next(c for c in choice.candidates if c.label == label)
        assert other.predicted_s == pytest.approx(messages * fit.overhead_s_per_message)


def test_fitted_model_and_measure_all_reject_bad_arguments() -> None:
    fit = _true_fit()
    assert fitted_model(4, fit).nranks == 4
    with pytest.raises(ValueError, match="band=4"):
        fitted_model(4, fit, band=4)
    with pytest.raises(ValueError, match="iters=0"):
        measure_all(None, [], iters=0, warmup=1)
    with pytest.raises(ValueError, match="warmup=-1"):
        measure_all(None, [], iters=3, warmup=-1)


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
    result = run_mpi(2, ["-m", "collsim", "predict", "-b", "4K", "-e", "64K", "-f",
                         "4", "-n", "2", "-w", "1", "--json", str(out), "--plot",
                         str(tmp_path / "plot.png")], timeout_s=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "geomean error" in result.stdout and (tmp_path / "plot.png").stat().st_size > 0
    assert "\x1b" not in result.stdout + result.stderr  # Open MPI's pty is no terminal
    data = json.loads(out.read_text())
    assert {p["algorithm"] for p in data["points"]} == {"ring", "tree", "rhd", "pipeline"}
    assert {p["nbytes"] for p in data["points"]} == {4096, 16384, 65536}
    assert all(p["measured_s"] > 0 and p["predicted_s"] > 0 for p in data["points"])
    assert math.isfinite(data["summary"]["geomean_error_from_64KiB"])
    calibration = [r for r in data["runs"] if r["calibration"]]
    assert {r["collective"] for r in calibration} == {"allgather", "reduce_scatter"}
    assert {bool(r["params"].get(IN_PLACE_PARAM)) for r in calibration} == {False, True}
    assert {r["collective"] for r in data["runs"] if not r["calibration"]} == {"allreduce"}
    assert list(data["calibration"]) == list(HostFit.__dataclass_fields__)
