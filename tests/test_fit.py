"""collsim.fit.figures and ``collsim fit``: figures recovered from curves the model made,
figures no curve decides reported so, the written machine read by select, the check's
last line, and one-line errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import topology
from collsim.cli import main
from collsim.fit.cli import summary
from collsim.fit.figures import FIGURES, apply, check, curve_of, fit, preset_of
from collsim.fit.logs import read_log
from simulator.fidelity import Curve, Rule, machine, predict
from simulator.selection import select

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "nccl_logs"

#: figures a one-node H100 cluster might have, away from the preset's
KNOWN = {"launch": 2e-6, "latency nvlink LL": 1.3, "latency nvlink LL128": 0.8,
         "latency nvlink Simple": 1.5, "efficiency nvlink": 0.80}


def _generated(ranks: int, model: topology.GpuModel) -> Curve:
    """The curve ``model`` predicts for ``ranks`` H100s of one node, 8 B to 8 GiB."""
    sizes = tuple(8 << k for k in range(31))
    blank = Curve(f"made{ranks}", {}, "H100", 1, ranks, 1, None, None, sizes,
                  (1.0,) * len(sizes), Rule())
    times = tuple(t for *_, t in predict(blank, machine(blank, model)))
    return Curve(f"made{ranks}", {}, "H100", 1, ranks, 1, None, None, sizes, times, Rule())


def test_figures_of_a_curve_the_model_made_are_recovered() -> None:
    values = {f.name: 1.0 for f in FIGURES} | {"efficiency ib": 0.98} | KNOWN
    model = apply(topology.DGX_H100_GPU, values)
    # two rank counts tell the cost per call from the latency per hop
    result = fit([_generated(8, model), _generated(2, model)])
    decided = {n for n, d in result.determined.items() if d >= 0.95}
    assert {"launch", "latency nvlink LL", "latency nvlink Simple",
            "efficiency nvlink"} <= decided
    for name in decided:
        assert result.values[name] == pytest.approx(values[name], rel=0.02), name
    # one node says nothing of the network: those figures are the preset's, and said so
    network = {f.name for f in FIGURES if "network" in f.name} | {"efficiency ib", "flow ib"}
    assert network <= set(result.undetermined)
    assert all(result.values[n] == values[n] for n in network)
    fitted, preset = result.scores()[0]
    assert fitted.geomean < 0.01 < preset.geomean
    assert re.fullmatch(r"Fit\(2 curves, 10 figures, undetermined \[.*\]\)", repr(result))


#: NCCL's defaults and the tuned run's settings (h100_8node_tuned): 2 and 6 flows a NIC
TUNED = (("NCCL_IB_QPS_PER_CONNECTION", "2"), ("NCCL_MIN_CTAS", "24"))


def _two_nodes(model: topology.GpuModel, settings: tuple[tuple[str, str], ...]) -> Curve:
    """The Ring curve ``model`` predicts on two H100 nodes run with ``settings``, 256 MiB to
    1 GiB (where the network's rate sets the time)."""
    sizes = tuple(256 << (20 + k) for k in range(3))
    blank = Curve("made", {}, "H100", 2, 16, 1, "ring", None, sizes, (1.0,) * 3, Rule(),
                  settings)
    times = tuple(t for *_, t in predict(blank, machine(blank, model), engine="compiled"))
    return Curve("made", {}, "H100", 2, 16, 1, "ring", None, sizes, times, Rule(), settings)


def test_fit_to_nccl_s_defaults_predicts_the_tuned_run() -> None:
    """The flow rate is the machine's, the flows a setting: a curve with NCCL's defaults
    (2 flows a NIC, where they bind) decides the flow rate within 2% and not the NIC's
    efficiency, and the fit predicts the tuned run (6 flows, the NIC binds) within 1%."""
    values = {f.name: 1.0 for f in FIGURES} | {"efficiency ib": 0.98, "flow ib": 0.6,
                                               "efficiency nvlink": 0.87, "launch": 0.0}
    model = apply(topology.DGX_H100_GPU, values)
    default, tuned = _two_nodes(model, ()), _two_nodes(model, TUNED)
    result = fit([default], max_evaluations=4)
    assert result.values["flow ib"] == pytest.approx(0.6, rel=0.02)
    assert "efficiency ib" in result.undetermined
    _, predicted = check(tuned, result.model)
    assert predicted.geomean < 0.01
    _, before = check(default, topology.DGX_H100_GPU)
    assert before.geomean > 0.3  # the preset's flows are far from these


def test_fitted_figures_stay_within_their_bounds() -> None:
    slow = apply(topology.DGX_H100_GPU, {f.name: 1.0 for f in FIGURES}
                 | {"efficiency ib": 0.98, "efficiency nvlink": 0.87, "launch": 0.0})
    curve = _generated(8, slow)
    tenfold = Curve(curve.name, {}, "H100", 1, 8, 1, None, None, curve.nbytes,
                    tuple(10 * t for t in curve.time_s), Rule())
    result = fit([tenfold], max_evaluations=4)
    assert result.values["efficiency nvlink"] >= 0.5 * 0.87 - 1e-12
    assert all(0.25 - 1e-12 <= result.values[f.name] <= 4 + 1e-12
               for f in FIGURES if f.name.startswith("latency"))
    assert result.values["launch"] <= 20e-6 + 1e-12


def test_fit_writes_a_machine_select_and_check_take(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cluster.toml"
    log = LOGS / "a100_1node_g8.log"
    assert main(["fit", str(log), "--output", str(out), "--nodes", "2"]) == 0
    text = capsys.readouterr().out
    for figure in FIGURES:
        assert figure.name in text
    assert "not determined by these logs (left near the preset's): " in text
    assert "latency network LL" in text.split("not determined")[1]
    assert re.search(r"a100_1node_g8: preset geomean [\d.]+% .*\n.*a100_1node_g8: fitted "
                     r"geomean [\d.]+%", text)
    machine2 = topology.load(out)
    assert machine2.name == "dgx_a100(2)" and machine2.nranks == 16
    assert machine2.gpu != topology.DGX_A100_GPU
    assert out.read_text().startswith("# dgx_a100(2), GPU figures fitted by collsim fit")
    assert select("allreduce", 1 << 20, machine2, method="closed_form").predicted_s > 0
    csv = tmp_path / "tuner.csv"
    assert main(["select", "--topology", str(out), "-b", "1M", "-e", "4M",
                 "--nccl-csv", str(csv)]) == 0
    assert csv.read_text()
    capsys.readouterr()
    assert main(["fit", "--machine", str(out), "--check", str(log)]) == 0
    fitted = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["fit", "--machine", "dgx-a100", "--check", str(log)]) == 0
    preset = capsys.readouterr().out.strip().splitlines()[-1]
    pattern = r"geomean ([\d.]+)% \(<1MiB ([\d.]+|-)%?, >=64MiB ([\d.]+|-)%?\)"
    assert re.fullmatch(pattern, fitted) and re.fullmatch(pattern, preset)
    assert float(re.fullmatch(pattern, fitted)[1]) < float(re.fullmatch(pattern, preset)[1])


def test_check_scores_as_the_model_predicts(capsys: pytest.CaptureFixture) -> None:
    curve = curve_of(read_log(LOGS / "h100_2node_ring.log"))
    predicted, score = check(curve, preset_of("H100"))
    assert [t for *_, t in predicted] == [t for *_, t in predict(curve)]
    assert score.compared == len(curve.nbytes) and score.geomean_small is None
    # the log's settings are the run's; --env states others in their place
    log = str(LOGS / "h100_2node_ring.log")
    lines = {}
    for env in ([], ["--env", "NCCL_IB_QPS_PER_CONNECTION=1", "--env", "NCCL_MIN_CTAS=16"]):
        assert main(["fit", "--machine", "dgx-h100", "--check", log, *env]) == 0
        lines[len(env)] = capsys.readouterr().out.strip().splitlines()[-1]
    assert lines[0] == summary(score) != lines[4]


@pytest.mark.parametrize("argv, message", [
    (["fit"], "give LOG [LOG ...] and --output FILE to fit, or --machine FILE --check LOG"),
    (["fit", "--machine", "dgx-h100"], "--machine and --check go together"),
    (["fit", "--machine", "nowhere.toml", "--check", "x.log"],
     "--machine 'nowhere.toml' is neither a file nor one of dgx-h100, dgx-a100"),
    (["fit", "LOGS/h100_2node_ring.log", "--output", "/nonexistent/c.toml"],
     "--output '/nonexistent/c.toml' is not allowed: folder '/nonexistent' does not exist"),
    (["fit", "LOGS/h100_2node_ring.log", "--output", "OUT", "--nodes", "0"], "--nodes"),
    (["fit", "LOGS/missing.log", "--output", "OUT"], "missing.log: cannot be read"),
    (["fit", "--machine", "dgx-a100", "--check", "LOGS/h100_2node_ring.log"],
     "ran on H100; --machine 'dgx-a100' is an A100 machine"),
    (["fit", "LOGS/h100_2node_ring.log", "--output", "OUT", "--proto", "LL64"],
     "argument --proto: 'LL64' is not allowed; it must be one of LL, LL128, Simple"),
    (["fit", "LOGS/h100_2node_ring.log", "--output", "OUT", "--env", "MIN_CTAS=4"],
     "argument --env: 'MIN_CTAS=4' is not allowed; it must be NCCL_NAME=VALUE"),
    (["fit", "--machine", "dgx-h100", "--check", "LOGS/h100_2node_ring.log", "--env",
      "NCCL_IB_QPS_PER_CONNECTION=0"],
     "h100_2node_ring.log: NCCL_IB_QPS_PER_CONNECTION='0' is not allowed; it must be a "
     "whole number from 1 to 128"),
])
def test_bad_arguments_end_in_one_line(argv: list[str], message: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture) -> None:
    argv = [a.replace("LOGS", str(LOGS)).replace("OUT", str(tmp_path / "c.toml"))
            for a in argv]
    try:
        code = main(argv)
    except SystemExit as refused:  # argparse refuses a bad value as it parses
        code = refused.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("collsim fit: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_the_command_runs_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "collsim", "fit", "--machine", "dgx-h100",
                             "--check", str(LOGS / "h100_2node_ring.log")],
                            capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"geomean [\d.]+% \(<1MiB -, >=64MiB [\d.]+%\)",
                        result.stdout.strip().splitlines()[-1])


def test_prediction_held_to_its_candidates_gives_their_times() -> None:
    curve = curve_of(read_log(LOGS / "a100_2node_roce_default.json"))
    curve = Curve(curve.name, {}, "A100", 2, 16, 1, None, None, curve.nbytes[16:22],
                  curve.time_s[16:22], Rule())
    free = predict(curve)
    held = predict(curve, only=[f"{label} {k}" for label, k, _ in free], engine="compiled")
    assert held == free and {label for label, *_ in free} >= {"ring x8"}
    tree_only = predict(curve, only=["tree(segments=1) x8 LL128"] * 6)
    assert all(label == "tree(segments=1) x8" for label, *_ in tree_only)
    assert all(t >= f[2] for (*_, t), f in zip(tree_only, free))
    with pytest.raises(ValueError, match=r"only\[0\] = 'rhd x8 LL' is not allowed at 524288 B"):
        predict(curve, only=["rhd x8 LL"] * 6)
