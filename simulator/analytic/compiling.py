"""The analytic model's compiled plays compile visibly: a line on stderr before, one after.

:mod:`.filling`, :mod:`.chain_play`, :mod:`.coupled_play` and :mod:`.shift_play` are
compiled by Numba on their first call and kept in its cache (``cache=True``), so later
processes load them in a fraction of a second.  The first call after an install, or after their sources change,
compiles them instead: some 1-4 s each, inside whichever call first plays them.
:func:`announce_compiles` makes that pause visible, as :func:`simulator.jit.prepare`
does for the DES's engine: Numba reports a compile only on a cache miss (its
``numba:compile`` event), and each outermost compile of a function of this package is
said on stderr with the seconds it took.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from numba.core import event

__all__ = ["announce_compiles"]

_listening = False


def _ours(data: Any) -> bool:
    """Whether a compile event's function belongs to this package."""
    function = getattr(data.get("dispatcher"), "py_func", None)
    return getattr(function, "__module__", "").startswith(__package__ + ".")


class _Announcer(event.Listener):
    """Say when an outermost compile of this package's functions starts and ends.

    The functions a compiled function calls compile inside its compile (nested events);
    only the outermost is said.
    """

    def __init__(self) -> None:
        self._depth = 0
        self._start = 0.0

    def on_start(self, ev: event.Event) -> None:
        """Say which function compiles, if it is ours and the outermost compile."""
        if not _ours(ev.data):
            return
        if self._depth == 0:
            function = ev.data["dispatcher"].py_func
            print(f"collsim: compiling the analytic model's {function.__module__}."
                  f"{function.__name__} with Numba (once: the cache keeps it for later "
                  "runs)...", file=sys.stderr, flush=True)
            self._start = time.perf_counter()
        self._depth += 1

    def on_end(self, ev: event.Event) -> None:
        """Say the seconds the outermost compile took."""
        if not _ours(ev.data):
            return
        self._depth -= 1
        if self._depth == 0:
            print(f"collsim: compiled it in {time.perf_counter() - self._start:.1f} s",
                  file=sys.stderr, flush=True)


def announce_compiles() -> None:
    """Listen to Numba's compiles of this package's functions, once per process."""
    global _listening
    if not _listening:
        event.register("numba:compile", _Announcer())
        _listening = True
