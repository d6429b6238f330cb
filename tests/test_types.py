"""The packages' annotations hold: mypy, configured in ``pyproject.toml``, finds no error.

The public boundaries say what they take (``topology.Topology``, ``collectives.Schedule``,
the executors' :class:`~collectives.executors.transport.Transport`), so a caller passing
the wrong thing, or a change that breaks a signature's promise, fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_finds_no_error_in_the_packages(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    checked = [line for line in run.stdout.splitlines() if line.startswith("Success")]
    assert checked and "source files" in checked[0], run.stdout
