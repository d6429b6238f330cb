"""The project installed as users install it: non-editable, into a fresh environment.

Only what ``pip install .`` ships is there (no checkout beside it): the packages, their
package data (the published curves :mod:`simulator.fidelity` reads) and the ``collsim``
script.  The environment sees the system's site-packages so the dependencies are not
downloaded again; the test checks that the installed copy, not the checkout nor an
editable install, is what ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from simulator import fidelity

ROOT = Path(__file__).resolve().parent.parent

#: what a source distribution of the project holds
SHIPPED = ("pyproject.toml", "README.md", "collsim", "collectives", "simulator", "topology")

#: scores one published curve from the installed package data
SCORE = """
import simulator, simulator.fidelity as f
curves = {c.name: c for c in f.read_curves()}
curve = curves["a100_1node_nccl2.16.2"]
result = f.score(curve, [t for _, _, t in f.predict(curve)])
print(simulator.__file__)
print(len(curves), result.compared, f"{result.geomean:.4f}")
"""


def _copy(source: Path) -> None:
    """Copy what the project ships to ``source``, without caches or build outputs."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)


@pytest.mark.slow
def test_a_non_editable_install_selects_and_scores_from_another_folder(tmp_path: Path) -> None:
    source, env_dir, elsewhere = tmp_path / "src", tmp_path / "venv", tmp_path / "elsewhere"
    source.mkdir()
    elsewhere.mkdir()
    _copy(source)
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps",
                              "--no-build-isolation", "--no-index", "--quiet", str(source)],
                             env=env, cwd=elsewhere, capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    shutil.rmtree(source)  # nothing of the copy may be needed once installed
    select = subprocess.run([str(env_dir / "bin" / "collsim"), "select", "-e", "64K"],
                            capture_output=True, text=True, env=env, cwd=elsewhere)
    assert select.returncode == 0, select.stderr
    assert "allreduce on dgx_h100(1): 8 ranks" in select.stdout
    scored = subprocess.run([str(python), "-c", SCORE], capture_output=True, text=True,
                            env=env, cwd=elsewhere)
    assert scored.returncode == 0, scored.stderr
    where, figures = scored.stdout.split("\n")[:2]
    assert Path(where).is_relative_to(env_dir), f"ran {where}, not the installed copy"
    curves = {c.name: c for c in fidelity.read_curves()}
    curve = curves["a100_1node_nccl2.16.2"]
    result = fidelity.score(curve, [t for _, _, t in fidelity.predict(curve)])
    assert figures.split() == [f"{len(curves)}", f"{result.compared}", f"{result.geomean:.4f}"]
