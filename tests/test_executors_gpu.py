"""The executors on CuPy buffers: over MPI (CUDA-aware or staged through host memory) and
over NCCL. Skipped without CuPy or a CUDA GPU; scripts/gpu_check.sh runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from collsim.mpi_runner import load_script, run_worker

pytestmark = [pytest.mark.gpu, pytest.mark.mpi]

cupy = pytest.importorskip("cupy")

MATRIX = Path(__file__).parent / "mpi_workers" / "executor_matrix.py"


def gpu_count() -> int:
    """CUDA devices visible, 0 when the driver or runtime is missing."""
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


if gpu_count() == 0:
    pytest.skip("no CUDA GPU", allow_module_level=True)


def run_matrix(nranks: int, transport: str) -> tuple[dict, object]:
    report = run_worker(nranks, MATRIX, ["--xp", "cupy", "--transport", transport],
                        timeout_s=600)
    return report, load_script(MATRIX)


@pytest.mark.parametrize("nranks", [1, 3, 4])
def test_cupy_over_mpi(nranks: int) -> None:
    """Ranks may share a GPU; the path is the one MPI's CUDA support calls for."""
    report, worker = run_matrix(nranks, "mpi")
    matrix = worker.cases(nranks, "cupy")
    assert report["transport"] == "mpi" and report["xp"] == "cupy"
    path = "direct" if report["cuda_aware"] else "staged"
    assert report["runs"] == worker.expected_runs(matrix, path)
    assert report["failures"] == [], f"{report['failure_count']} failures"


def test_nccl() -> None:
    """One rank per GPU (NCCL refuses two ranks of a communicator on one GPU)."""
    nranks = min(gpu_count(), 4)
    report, worker = run_matrix(nranks, "nccl")
    matrix = worker.cases(nranks, "cupy")
    assert report["transport"] == "nccl" and report["xp"] == "cupy"
    assert report["runs"] == worker.expected_runs(matrix, "nccl")
    assert report["failures"] == [], f"{report['failure_count']} failures"
