"""Run a worker script under ``mpirun`` and read the summary its rank 0 prints.

Workers (tests/mpi_workers/, benchmarks) run as ``python -m mpi4py script.py``, so an
uncaught exception on any rank aborts the whole job instead of leaving the others hanging,
and rank 0 prints one line ``SUMMARY {json}`` saying what ran.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Sequence

from .launch import run_mpi

__all__ = ["SUMMARY_PREFIX", "run_worker", "read_summary", "load_script"]

SUMMARY_PREFIX = "SUMMARY "


def read_summary(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """Return the one summary of a finished job.

    Parameters
    ----------
    result : subprocess.CompletedProcess[str]
        The job, run with captured output.

    Returns
    -------
    dict[str, Any]
        The JSON after :data:`SUMMARY_PREFIX` on the job's only summary line.

    Raises
    ------
    RuntimeError
        When the job failed or did not print exactly one summary line (with the tail of
        its output).
    """
    lines = [line for line in result.stdout.splitlines() if line.startswith(SUMMARY_PREFIX)]
    if result.returncode != 0 or len(lines) != 1:
        raise RuntimeError(f"job exited {result.returncode} with {len(lines)} summary lines:\n"
                           f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
    return json.loads(lines[0][len(SUMMARY_PREFIX):])


def run_worker(nranks: int, script: str | Path, args: Sequence[str] = (),
               timeout_s: float = 300.0) -> dict[str, Any]:
    """Run ``python -m mpi4py script args...`` on ``nranks`` ranks; return its summary.

    Parameters
    ----------
    nranks : int
        Number of ranks.
    script : str or Path
        The worker script.
    args : sequence of str, optional
        The script's arguments.
    timeout_s : float, optional
        Seconds before the job is killed; default 300.

    Returns
    -------
    dict[str, Any]
        As :func:`read_summary`.

    Raises
    ------
    RuntimeError
        As :func:`read_summary`.
    subprocess.TimeoutExpired
        When the job runs past ``timeout_s``.
    """
    return read_summary(run_mpi(nranks, [str(script), *args], timeout_s=timeout_s))


def load_script(path: str | Path) -> ModuleType:
    """Import a worker script as a module (to read its case matrix) without running it.

    The module runs its top level (registered in :data:`sys.modules` under the file's
    stem); only code under ``if __name__ == "__main__"`` is left out.

    Parameters
    ----------
    path : str or Path
        The script.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    FileNotFoundError
        If the file cannot be imported as a module.
    """
    path = Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
