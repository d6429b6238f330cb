"""The executors under the pip-installed mpirun: one launch per rank count runs the whole
matrix of tests/mpi_workers/executor_matrix.py; one launch proves a raising rank aborts."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from collectives.launch import run_mpi

pytestmark = pytest.mark.mpi

WORKERS = Path(__file__).parent / "mpi_workers"


def load_worker(name: str):
    """Import a worker script as a module (to count its matrix)."""
    spec = importlib.util.spec_from_file_location(name, WORKERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def summary(result: subprocess.CompletedProcess) -> dict:
    """The ``SUMMARY {json}`` line rank 0 printed."""
    lines = [line for line in result.stdout.splitlines() if line.startswith("SUMMARY ")]
    assert result.returncode == 0 and len(lines) == 1, result.stdout[-2000:] + result.stderr[-4000:]
    return json.loads(lines[0][len("SUMMARY "):])


def expected_runs(matrix) -> dict[str, int]:
    """Schedule runs and native runs the matrix makes (natives include the comparisons)."""
    ours = sum(case.algorithm != "native" for case in matrix)
    native = sum(case.algorithm == "native" or case.exact for case in matrix)
    return {"direct": ours, "native": native}


@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 5, 7, 8])
def test_matrix_matches_interpret_and_native(nranks: int) -> None:
    result = run_mpi(nranks, ["-m", "mpi4py", str(WORKERS / "executor_matrix.py")], timeout_s=120)
    report = summary(result)
    matrix = load_worker("executor_matrix").cases(nranks)
    assert report["transport"] == "mpi" and report["xp"] == "numpy"
    assert report["nranks"] == nranks
    assert report["cases"] == len(matrix)
    assert report["runs"] == expected_runs(matrix)
    assert report["failures"] == [], f"{report['failure_count']} failures"


def test_a_raising_rank_aborts_the_job() -> None:
    result = run_mpi(3, ["-m", "mpi4py", str(WORKERS / "raise_midway.py")], timeout_s=60)
    assert result.returncode != 0
    assert "complex64" in result.stderr
    assert result.stdout.count("finished the first allreduce") == 3
    assert "should never get here" not in result.stdout
