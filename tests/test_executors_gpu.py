"""The executors on CuPy buffers: over MPI (CUDA-aware, staged through host memory, and the
direct path on managed memory) and over NCCL. Skipped without CuPy or a CUDA GPU;
scripts/gpu_check.sh runs them.

The pip Open MPI is not CUDA-aware, so there the MPI tests take the staged path; the
managed-memory test forces the direct path (``COLLSIM_MPI_CUDA_AWARE=1``), which a
non-CUDA-aware MPI can read because managed memory is host-accessible.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collsim.launch import run_mpi
from collsim.mpi_runner import load_script, read_summary

pytestmark = [pytest.mark.gpu, pytest.mark.mpi]

cupy = pytest.importorskip("cupy")

MATRIX = Path(__file__).parent / "mpi_workers" / "executor_matrix.py"

#: NCCL's switch for several ranks of a communicator on one GPU (NCCL >= 2.30)
SHARED_GPU = "NCCL_MULTI_RANK_GPU_ENABLE"


def gpu_count() -> int:
    """CUDA devices visible, 0 when the driver or runtime is missing."""
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


if gpu_count() == 0:
    pytest.skip("no CUDA GPU", allow_module_level=True)


def run_matrix(nranks: int, transport: str, *extra: str,
               env: dict[str, str] | None = None) -> tuple[dict, object]:
    argv = [str(MATRIX), "--xp", "cupy", "--transport", transport, *extra]
    report = read_summary(run_mpi(nranks, argv, timeout_s=600, env=env))
    return report, load_script(MATRIX)


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_cupy_over_mpi(nranks: int) -> None:
    """Ranks may share a GPU; the path is the one MPI's CUDA support calls for."""
    report, worker = run_matrix(nranks, "mpi")
    matrix = worker.cases(nranks, "cupy", "nccl")
    assert report["transport"] == "mpi" and report["xp"] == "cupy"
    path = "direct" if report["cuda_aware"] else "staged"
    assert report["runs"] == worker.expected_runs(matrix, path)
    assert report["failures"] == [], f"{report['failure_count']} failures"


def test_direct_path_on_managed_memory() -> None:
    """The CUDA-aware path, exercised with any MPI: managed memory is host-readable."""
    report, worker = run_matrix(2, "mpi", "--managed", env={"COLLSIM_MPI_CUDA_AWARE": "1"})
    assert report["managed"] is True and report["cuda_aware"] is True
    assert report["runs"] == worker.expected_runs(worker.cases(2), "direct")
    assert report["failures"] == [], f"{report['failure_count']} failures"


def nccl_ranks() -> int:
    """Ranks for the NCCL test: one per GPU up to 4, or 4 sharing the GPUs if allowed."""
    if os.environ.get(SHARED_GPU) == "1":
        return 4
    return min(gpu_count(), 4)


def test_nccl() -> None:
    """One rank per GPU, or several per GPU where NCCL allows it; never a lone rank."""
    nranks = nccl_ranks()
    if nranks < 2:
        pytest.skip(f"NCCL needs 2 ranks and this machine has {gpu_count()} GPU: one rank "
                    f"sends nothing, so the test would check nothing (set {SHARED_GPU}=1 "
                    f"where NCCL >= 2.30 lets ranks share a GPU)")
    report, worker = run_matrix(nranks, "nccl")
    matrix = worker.cases(nranks, "cupy", "nccl")
    assert report["transport"] == "nccl" and report["xp"] == "cupy"
    assert report["nranks"] == nranks
    assert report["runs"] == worker.expected_runs(matrix, "nccl")
    assert report["failures"] == [], f"{report['failure_count']} failures"
