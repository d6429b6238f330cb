"""The CPU-runnable plumbing of scripts/gpu_check.sh: its stream-order worker on NumPy
buffers over MPI (a stand-in that checks the script's cases and results, not stream
order, which needs a GPU) and the script's shell syntax."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from collsim.mpi_runner import run_worker

ROOT = Path(__file__).parents[1]


@pytest.mark.mpi
def test_stream_order_worker_stand_in() -> None:
    report = run_worker(2, ROOT / "tests" / "mpi_workers" / "stream_order.py",
                        ["--xp", "numpy", "--transport", "mpi"], timeout_s=120)
    assert report == {"transport": "mpi", "xp": "numpy", "nranks": 2, "cases": 16,
                      "failures": []}


def test_gpu_check_script_parses() -> None:
    result = subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu_check.sh")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
