"""The executors on CuPy buffers, every collective (Broadcast, Reduce and AllToAll(v) with
their native baselines included): over MPI (CUDA-aware, staged through host memory, and the
direct path on managed memory) and over NCCL, at one rank on any GPU and at more where
there are GPUs for them (or NCCL lets two ranks share one). Skipped without CuPy or a CUDA
GPU; scripts/gpu_check.sh runs them.

The pip Open MPI is not CUDA-aware, so there the MPI tests take the staged path; the
managed-memory test forces the direct path (``COLLSIM_MPI_CUDA_AWARE=1``), which a
non-CUDA-aware MPI can read because managed memory is host-accessible.  Every count a
test expects comes from the worker's own functions, on the arguments the worker ran with.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collsim.launch import run_mpi
from collsim.mpi_runner import load_script, read_summary

pytestmark = [pytest.mark.gpu, pytest.mark.mpi]

cupy = pytest.importorskip("cupy")

WORKERS = Path(__file__).parent / "mpi_workers"
MATRIX = WORKERS / "executor_matrix.py"
EXTRAS = WORKERS / "nccl_extras.py"


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


@pytest.mark.parametrize("nranks", [2, 3])
def test_cupy_over_mpi(nranks: int) -> None:
    """Ranks may share a GPU; the path is the one MPI's CUDA support calls for."""
    report, worker = run_matrix(nranks, "mpi")
    assert report["transport"] == "mpi" and report["xp"] == "cupy"
    path = "direct" if report["cuda_aware"] else "staged"
    assert report["runs"] == worker.expected_runs(worker.cases(nranks, "cupy", "mpi"), path)
    assert report["exchange_cases"] == worker.exchange_count(nranks)  # Broadcast, Reduce, ...
    assert report["failures"] == [], f"{report['failure_count']} failures"


def test_direct_path_on_managed_memory() -> None:
    """The CUDA-aware path, exercised with any MPI: managed memory is host-readable."""
    report, worker = run_matrix(2, "mpi", "--managed", env={"COLLSIM_MPI_CUDA_AWARE": "1"})
    assert report["managed"] is True and report["cuda_aware"] is True
    assert report["runs"] == worker.expected_runs(worker.cases(2, "cupy", "mpi"), "direct")
    assert report["exchange_cases"] == worker.exchange_count(2)
    assert report["failures"] == [], f"{report['failure_count']} failures"


def test_staging_mirrors_outlive_their_copies() -> None:
    """With no workspace kept (COLLSIM_WORKSPACE_BYTES=0) every pinned mirror is the call's
    own: it must stay alive until its asynchronous host-to-device copies have read it."""
    argv = [str(WORKERS / "stream_order.py"), "--xp", "cupy", "--transport", "mpi"]
    report = read_summary(run_mpi(2, argv, timeout_s=300,
                                  env={"COLLSIM_WORKSPACE_BYTES": "0",
                                       "COLLSIM_MPI_CUDA_AWARE": "0"}))
    worker = load_script(WORKERS / "stream_order.py")
    assert report["cases"] == len(worker.cases()) and report["failures"] == []


def nccl_ranks() -> int:
    """Ranks NCCL takes here, up to 4: one per GPU, or two per GPU where NCCL_MULTI_RANK_GPU_ENABLE
    and NCCL (>= 2.30) allow it."""
    from cupy.cuda import nccl

    from collectives.executors.nccl import SHARED_GPU_ENV, ranks_per_gpu
    per_gpu = ranks_per_gpu(os.environ.get(SHARED_GPU_ENV), nccl.get_version())
    return min(gpu_count() * per_gpu, 4)


def check_nccl_matrix(nranks: int) -> None:
    report, worker = run_matrix(nranks, "nccl")
    assert report["transport"] == "nccl" and report["xp"] == "cupy"
    assert report["nranks"] == nranks
    assert report["runs"] == worker.expected_runs(worker.cases(nranks, "cupy", "nccl"), "nccl")
    # Broadcast, Reduce, AllToAll(v): every schedule, and ncclBroadcast, ncclReduce and
    # grouped ncclSend/ncclRecv, bitwise against the interpreter
    assert report["exchange_cases"] == worker.exchange_count(nranks)
    assert report["failures"] == [], f"{report['failure_count']} failures"


def check_nccl_extras(nranks: int) -> None:
    report = read_summary(run_mpi(nranks, [str(EXTRAS)], timeout_s=300))
    worker = load_script(EXTRAS)
    assert report["nranks"] == nranks
    assert report["graphs"] == worker.expected_graphs(nranks, True)
    assert report["plain_graphs"] == worker.expected_graphs(nranks, False)
    assert report["failures"] == []


def test_nccl_one_rank() -> None:
    """Everything one GPU runs: NCCL's own collectives (in place, avg, count 0), every
    schedule at one rank, a group sending to itself, a failed group, graph replay."""
    check_nccl_matrix(1)
    check_nccl_extras(1)


def test_nccl() -> None:
    """One rank per GPU, or two per GPU where NCCL allows it."""
    nranks = nccl_ranks()
    if nranks < 2:
        pytest.skip(f"{gpu_count()} GPU and NCCL takes one rank per GPU here "
                    f"(NCCL_MULTI_RANK_GPU_ENABLE=1 with NCCL >= 2.30 lets two share one)")
    check_nccl_matrix(nranks)
    check_nccl_extras(nranks)
