"""The executors under the pip-installed mpirun: one launch per rank count runs the whole
matrix of tests/mpi_workers/executor_matrix.py (Broadcast, Reduce and AllToAll(v) against
MPI's own included, and their persistent handles); one launch proves a raising rank aborts."""

from __future__ import annotations

from pathlib import Path

import pytest

from collsim.launch import run_mpi
from collsim.mpi_runner import load_script, run_worker

pytestmark = pytest.mark.mpi

WORKERS = Path(__file__).parent / "mpi_workers"
MATRIX = WORKERS / "executor_matrix.py"


@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 5, 6, 7, 8])
def test_matrix_matches_interpret_and_native(nranks: int) -> None:
    report = run_worker(nranks, MATRIX, timeout_s=300)  # 8 ranks on 2 cores under load: ~2 min
    worker = load_script(MATRIX)
    matrix = worker.cases(nranks)
    assert report["transport"] == "mpi" and report["xp"] == "numpy"
    assert report["nranks"] == nranks
    assert report["cases"] == len(matrix)
    assert report["runs"] == worker.expected_runs(matrix, "persistent")
    if nranks > 1:  # the last bindings cached: float32 sums compiled, float16 in Python
        assert report["walks"]["compiled"] > 0 and report["walks"]["python"] > 0, report["walks"]
    # every exchange case, and an AllToAllv per algorithm, returned (rank 0's count)
    assert report["exchange_cases"] == worker.exchange_count(nranks)
    # and ran twice as a persistent handle
    assert report["exchange_handles"] == worker.exchange_count(nranks)
    assert report["failures"] == [], f"{report['failure_count']} failures"


def test_a_raising_rank_aborts_the_job(tmp_path: Path) -> None:
    result = run_mpi(3, [str(WORKERS / "raise_midway.py"), str(tmp_path)], timeout_s=60)
    assert result.returncode != 0
    assert "datetime64" in result.stderr
    finished = sorted(path.name for path in tmp_path.glob("rank*.first"))
    assert finished == ["rank0.first", "rank1.first", "rank2.first"], (finished, result.stdout)
    assert "should never get here" not in result.stdout
