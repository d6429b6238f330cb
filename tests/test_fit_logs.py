"""nccl-tests output read by collsim.fit.logs: the printed tables (two nccl-tests versions)
and the -J JSON, against the published curves whose numbers the fixtures carry; bad logs
fail naming the file and line."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from collsim.fit.figures import curve_of
from collsim.fit.logs import LogError, parse_text, read_log
from simulator.fidelity import DATA_DIR, read_curve

LOGS = Path(__file__).resolve().parent / "data" / "nccl_logs"

#: fixture -> (published curve, hosts, ranks per node, nGpus, NCCL_ALGO, GPU)
FIXTURES = {
    "h100_2node_ring.log": ("h100_2node_ring_nccl2.26", 2, 8, 1, "Ring", "NVIDIA H100 80GB HBM3"),
    "h100_8node_default.log": ("h100_8node_default", 8, 8, 1, None, "NVIDIA H100 80GB HBM3"),
    "h100_8node_tuned.log": ("h100_8node_tuned", 8, 8, 1, None, "NVIDIA H100 80GB HBM3"),
    "a100_1node_g8.log": ("a100_1node_nccl2.19.3_g8", 1, 8, 8, None, "NVIDIA A100-SXM4-80GB"),
    "a100_2node_roce_default.json": ("a100_2node_roce_default", 2, 8, 1, None,
                                     "NVIDIA A100-SXM4-40GB"),
}


@pytest.mark.parametrize("name", FIXTURES)
def test_a_log_reads_as_the_published_curve(name: str) -> None:
    published, nodes, per_node, ngpus, algo, gpu = FIXTURES[name]
    log = read_log(LOGS / name)
    curve = read_curve(DATA_DIR / f"{published}.csv")
    assert (log.nodes, log.ranks_per_node, log.ranks) == (nodes, per_node, nodes * per_node)
    assert (log.gpus_per_thread, log.algo, log.proto, log.gpu) == (ngpus, algo, None, gpu)
    assert [r.nbytes for r in log.rows] == list(curve.nbytes)
    assert [r.time_s for r in log.rows] == pytest.approx(curve.time_s, rel=1e-9)
    assert all(r.wrong == 0 and r.count == r.nbytes // 4 for r in log.rows)
    assert all(r.in_place_s == pytest.approx(r.time_s, rel=0.011) for r in log.rows)
    assert log.program == "all_reduce_perf" and log.collective == "allreduce"
    assert log.avg_busbw_GBps is not None and log.avg_busbw_GBps > 0
    fitted = curve_of(log)
    assert (fitted.gpu, fitted.nodes, fitted.ranks, fitted.gpus_per_process) == (
        curve.gpu, curve.nodes, curve.ranks, curve.gpus_per_process)
    # the same sizes compared, but for the outliers only the published header names
    unnamed = dataclasses.replace(curve, header={})
    assert fitted.algorithm == curve.algorithm and fitted.compared == unnamed.compared
    assert re.fullmatch(r"Log\(.+\)", repr(log)) and len(repr(log)) < 200


def test_the_caller_states_what_the_run_was_given() -> None:
    log = read_log(LOGS / "h100_8node_tuned.log", algo="Ring", proto="ll128")
    assert (log.algo, log.proto) == ("Ring", "ll128")
    assert (curve_of(log).algorithm, curve_of(log).protocol) == ("ring", "LL128")
    assert curve_of(read_log(LOGS / "h100_8node_tuned.log", algo="ring,tree")).algorithm is None
    with pytest.raises(LogError, match=r"h100_8node_tuned.log: NCCL_ALGO='NVLS' is not one"):
        curve_of(read_log(LOGS / "h100_8node_tuned.log", algo="NVLS"))


def test_settings_on_a_command_line_and_in_json_env_are_read(tmp_path: Path) -> None:
    text = (LOGS / "h100_8node_default.log").read_text()
    path = tmp_path / "run.log"
    path.write_text("$ mpirun -x NCCL_PROTO=Simple ./all_reduce_perf -b 1M\n" + text)
    assert read_log(path).proto == "Simple"
    document = json.loads((LOGS / "a100_2node_roce_default.json").read_text())
    document["env"].append("NCCL_ALGO=Tree")
    path.write_text(json.dumps(document))
    assert read_log(path).algo == "Tree" and curve_of(read_log(path)).algorithm == "tree"


def test_nccl_settings_are_read_and_priced_as_the_published_curve_s(tmp_path: Path) -> None:
    """The tuned run's -x NCCL_MIN_CTAS / NCCL_IB_QPS_PER_CONNECTION are its settings, as
    the published curve's header states them; INFO lines and --env state them too; a
    priced setting out of NCCL's range or stated twice differently is refused by name."""
    tuned = read_log(LOGS / "h100_8node_tuned.log")
    published = read_curve(DATA_DIR / "h100_8node_tuned.csv")
    assert dict(tuned.settings) == {"NCCL_MIN_CTAS": "24", "NCCL_IB_QPS_PER_CONNECTION": "2"}
    assert curve_of(tuned).priced_settings == published.priced_settings != ()
    assert read_log(LOGS / "h100_8node_default.log").settings == ()
    text = (LOGS / "h100_8node_default.log").read_text()
    info = "gpu-a01:41000:41100 [0] NCCL INFO NCCL_IB_QPS_PER_CONNECTION set by environment to 4."
    path = _broken(tmp_path, info + "\n" + info + "\n" + text, "info.log")
    assert dict(read_log(path).settings) == {"NCCL_IB_QPS_PER_CONNECTION": "4"}
    stated = read_log(path, env={"NCCL_IB_QPS_PER_CONNECTION": "1", "NCCL_MAX_CTAS": "8"})
    assert dict(stated.settings) == {"NCCL_IB_QPS_PER_CONNECTION": "1", "NCCL_MAX_CTAS": "8"}
    other = info.replace("to 4.", "to 8.")
    with pytest.raises(LogError, match=r"line 2: NCCL_IB_QPS_PER_CONNECTION=8 here but 4"):
        read_log(_broken(tmp_path, info + "\n" + other + "\n" + text))
    with pytest.raises(LogError, match=r"bad.log: NCCL_MIN_CTAS='0' is not allowed; it must "
                                       r"be a whole number from 1 to 64"):
        curve_of(read_log(_broken(tmp_path, "-x NCCL_MIN_CTAS=0\n" + text)))


def _broken(tmp_path: Path, text: str, name: str = "bad.log") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_bad_logs_name_the_file_and_line(tmp_path: Path) -> None:
    good = (LOGS / "h100_2node_ring.log").read_text().splitlines()
    row = next(i for i, line in enumerate(good) if line.strip().startswith("1048576"))
    cases = {
        "": r"bad.log: the file is empty",
        "hello\nworld\n": r"bad.log: no '# nThread N nGpus G' header",
        "\n".join(l for l in good if "Rank" not in l): r"no '#  Rank N",
        "\n".join(l for l in good if not l.strip()[:1].isdigit()): r"no size rows",
        "\n".join(good[:row] + [good[row].replace("156.90", "fast")] + good[row + 1:]):
            rf"bad.log, line {row + 1}: time 'fast' is not a number",
        "\n".join(good[:row] + [good[row].rsplit(None, 2)[0]] + good[row + 1:]):
            rf"bad.log, line {row + 1}: a size row has 11 columns",
        "\n".join(good[:row] + ["x NCCL INFO NCCL_ALGO set by environment to Tree"]
                  + good[row:]): rf"bad.log, line {row + 1}: NCCL_ALGO=Tree here but Ring",
        "\n".join(l for l in good if "Rank  3 " not in l): r"the device lines give",
    }
    for text, message in cases.items():
        with pytest.raises(LogError, match=message):
            read_log(_broken(tmp_path, text))
    uneven = "\n".join(good).replace("Rank 15 Group  0 Pid  41107 on    gpu-a02",
                                     "Rank 15 Group  0 Pid  41107 on    gpu-a03")
    with pytest.raises(LogError, match=r"ranks per host differ"):
        read_log(_broken(tmp_path, uneven))
    with pytest.raises(LogError, match=r"missing.log: cannot be read"):
        read_log(tmp_path / "missing.log")


def test_bad_json_names_the_file_line_and_key(tmp_path: Path) -> None:
    with pytest.raises(LogError, match=r"bad.json, line 2: not valid JSON"):
        read_log(_broken(tmp_path, '{"config": 1,\n ]', "bad.json"))
    with pytest.raises(LogError, match=r"bad.json: not nccl-tests JSON"):
        read_log(_broken(tmp_path, '{"results": []}', "bad.json"))
    document = json.loads((LOGS / "a100_2node_roce_default.json").read_text())
    document["results"][3]["out_of_place"]["time"] = 0
    with pytest.raises(LogError, match=r"bad.json: results\[3\] = .* is not a nccl-tests"):
        read_log(_broken(tmp_path, json.dumps(document), "bad.json"))


def test_what_the_model_does_not_cover_is_refused_by_name(tmp_path: Path) -> None:
    text = (LOGS / "h100_2node_ring.log").read_text()
    gather = _broken(tmp_path, text.replace("all_reduce_perf", "all_gather_perf"))
    assert read_log(gather).collective == "allgather"
    with pytest.raises(LogError, match=r"all_gather_perf is not fitted"):
        curve_of(read_log(gather))
    with pytest.raises(LogError, match=r"GPU 'NVIDIA L40S' has no preset"):
        curve_of(read_log(_broken(tmp_path, text.replace("NVIDIA H100 80GB HBM3",
                                                         "NVIDIA L40S"))))
    four = "\n".join(l for l in text.splitlines()
                     if not re.search(r"device  [4-7] \[", l)).replace(
        "Rank  8", "Rank  4").replace("Rank  9", "Rank  5").replace(
        "Rank 10", "Rank  6").replace("Rank 11", "Rank  7")
    with pytest.raises(LogError, match=r"4 ranks per node on 2 nodes; the presets have 8"):
        curve_of(read_log(_broken(tmp_path, four)))


def test_only_out_of_place_columns_and_other_programs_parse() -> None:
    text = "\n".join([
        "# nThread 1 nGpus 8 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5",
        "#  Rank  0 Group  0 Pid   1234 on      host1 device  0 [0x07] NVIDIA A100-SXM4-80GB",
        "        1024           256     float    none       0    12.50    0.08    0.07      0",
        "        2048           512     float    none       0    13.00    0.16    0.14    N/A",
    ])
    log = parse_text(text.replace("none       0    12.50    0.08    0.07      0",
                                  "none       0    12.50    0.08    0.07      0"), "b.log")
    assert [r.time_s for r in log.rows] == pytest.approx([12.5e-6, 13e-6])
    assert [r.wrong for r in log.rows] == [0, None] and log.rows[0].in_place_s is None
    assert log.program is None and log.collective == "allreduce"
    assert parse_text("# broadcast_perf\n" + text, "b.log").collective is None
