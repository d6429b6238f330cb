"""The analytic model's compiled plays say on stderr when Numba compiles them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_QUEUE_PLAY = """
import numpy as np
from simulator.analytic.filling import _queue_play
print(_queue_play(np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)))[0, 0])
"""


def _run(cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-c", _QUEUE_PLAY], env=env, capture_output=True,
                          text=True, check=True, timeout=300)


def test_a_cold_cache_compiles_the_play_once_and_says_so(tmp_path: Path) -> None:
    cold = _run(tmp_path)  # an empty cache, as after an install
    assert float(cold.stdout) == 1.0  # one byte at one byte a second, from 0
    lines = cold.stderr.splitlines()
    assert len(lines) == 2, cold.stderr
    assert lines[0].startswith("collsim: compiling the analytic model's "
                               "simulator.analytic.filling._queue_play with Numba")
    assert lines[1].startswith("collsim: compiled it in ") and lines[1].endswith(" s")
    warm = _run(tmp_path)  # the cache holds it now: silent
    assert warm.stderr == "" and warm.stdout == cold.stdout
