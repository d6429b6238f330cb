"""collsim bench under the pip-installed mpirun: the tables, JSON and #wrong of real runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import topology
from collectives.api import CHOICES
from collsim.args import served
from collsim.bench.options import sizes
from collsim.launch import run_mpi
from simulator import select

pytestmark = pytest.mark.mpi


def _tables(stdout: str) -> dict[str, list[list[str]]]:
    """Algorithm -> its table's data rows, split into columns."""
    tables: dict[str, list[list[str]]] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("# Algorithm: "):
            current = tables.setdefault(line.split()[2], [])
        elif line.startswith("# Best algorithm"):
            current = None
        elif current is not None and line.strip() and not line.startswith("#"):
            current.append(line.split())
    return tables


def _check_run(stdout: str, doc: dict, algorithms: list[str], nranks: int, rows: list) -> None:
    tables = _tables(stdout)
    assert list(tables) == algorithms
    assert f"{doc['collective']}, {nranks} ranks" in stdout
    assert len({line.split()[4] for line in stdout.splitlines()
                if line.startswith("#  Rank")}) == nranks  # one process per rank
    for name, table in tables.items():
        assert [(int(r[0]), int(r[1])) for r in table] == rows, name
        assert all(r[8] == "0" and r[12] == "0" for r in table), name  # #wrong
        assert all(float(r[5]) > 0 and float(r[9]) > 0 for r in table), name  # time
    assert stdout.count("# Out of bounds values : 0 OK") == len(algorithms)
    assert doc["out_of_bounds"] == 0 and doc["nranks"] == nranks
    assert len(doc["rows"]) == len(rows) * len(algorithms)
    assert all(row[p]["wrong"] == 0 for row in doc["rows"] for p in ("out_of_place", "in_place"))


def test_plain_command_launches_mpirun_for_every_algorithm(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["bench", "--ranks", "2", "-b", "8", "-e", "4K", "-f", "8", "-n", "2", "-w", "0",
            "--topology", "flat", "--json", str(out), "--csv", str(tmp_path / "b.csv"),
            "--plot", str(tmp_path / "b.png")]
    result = subprocess.run([sys.executable, "-m", "collsim", *argv], text=True,
                            capture_output=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    ran = served("--algorithms", "allreduce", None, CHOICES)  # every one that runs AllReduce
    _check_run(result.stdout, doc, ran, 2, sizes(8, 4096, 8, "allreduce", 2, "float32"))
    assert [entry["size_B"] for entry in doc["predicted"]] == [8, 64, 512, 4096]
    assert "predicted on flat" in result.stdout
    for entry in doc["predicted"]:  # the predicted column is select's choice on the model
        choice = select("allreduce", entry["size_B"], topology.flat(2, topology.FLAT_ALPHA_S,
                                                                    topology.FLAT_BETA_S_PER_BYTE))
        assert (entry["best"], entry["choice"]) == (choice.algorithm, choice.label)
        assert entry["params"][choice.algorithm] == choice.label
        assert entry["time_us"][choice.algorithm] == pytest.approx(choice.predicted_s * 1e6)
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("collective, dtype, op", [("reduce_scatter", "int8", "max"),
                                                   ("allgather", "double", "sum")])
def test_under_mpirun_on_three_ranks(tmp_path: Path, collective: str, dtype: str,
                                     op: str) -> None:
    out = tmp_path / "bench.json"
    algorithms = ["ring", "tree", "rhd", "pipeline", "native"]
    result = run_mpi(3, ["-m", "collsim", "bench", "--collective", collective, "-d", dtype,
                         "-o", op, "-b", "0", "-e", "1K", "-f", "4", "-n", "2",
                         "--topology", "none", "--algorithms", *algorithms, "--json", str(out)],
                     timeout_s=120)
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    _check_run(result.stdout, doc, algorithms, 3, sizes(0, 1024, 4, collective, 3, dtype))
    assert doc["predicted"] == [] and doc["topology"] is None
