"""The compiled engine's first run: Numba compiles it once, visibly, and its cache keeps it.

The functions of :mod:`simulator.flatten` and :mod:`simulator.compiled` that Python calls
are compiled with ``cache=True`` (the functions they call are linked into them): the
machine code lands next to the sources (or in ``NUMBA_CACHE_DIR``) and later processes
load it in a fraction of a second.  The first compiled simulation after an
install (or after the sources change) compiles them, which takes some 12 s of CPU;
:func:`prepare` does that before the user's schedule is read, with a line on stderr
saying so and another with the time it took, so that it is never a silent pause inside
a call.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

from collectives.gcpause import gc_paused

__all__ = ["prepare", "uncached"]

_prepared = False


def _cached(dispatcher: Any) -> bool:
    """Whether Numba's cache holds machine code of ``dispatcher`` for its current source
    (a function that is not cached counts as held: its callers' code holds it)."""
    try:
        cache = dispatcher._cache
        return isinstance(cache, NullCache) or bool(cache._cache_file._load_index())
    except (AttributeError, OSError):  # another Numba's internals: assume it is
        return True


def uncached() -> list[str]:
    """Return the names of the engine's functions that Numba's cache does not hold.

    Returns
    -------
    list of str
        Empty when every function loads from the cache.
    """
    from . import compiled, flatten

    return [f"{module.__name__}.{name}" for module in (flatten, compiled)
            for name, value in vars(module).items()
            if isinstance(value, CPUDispatcher) and not _cached(value)]


def _warm_up() -> None:
    """Run a small schedule through every compiled function (the types of any other run)."""
    import topology
    from collectives import build_schedule

    from .compiled import run_compiled
    from .flatten import flatten

    schedule = build_schedule("allreduce", "tree", 4, 64, segments=2)  # read from lanes
    machine = topology.flat(4, 1e-6, 1e-9)
    assert flatten(schedule, machine, 4, dense_pairs=0) is not None  # pairs by sorting
    flat = flatten(schedule, machine, 4)
    assert flat is not None
    run_compiled(flat, 1e-10, 0.0, False)


def prepare(stream: TextIO | None = None) -> float | None:
    """Compile (or load) the compiled engine now, once per process.

    Parameters
    ----------
    stream : text file or None, optional
        Where to say that it compiles, when Numba's cache does not hold the engine
        (default ``sys.stderr``).

    Returns
    -------
    float or None
        The seconds compiling took, or None when the engine was loaded from the cache or
        prepared before in this process.
    """
    global _prepared
    if _prepared:
        return None
    cold = uncached()
    out = sys.stderr if stream is None else stream
    if cold:
        print(f"collsim: compiling the simulator's engine with Numba ({len(cold)} functions; "
              "once: the cache keeps it for later runs)...", file=out, flush=True)
    start = time.perf_counter()
    with gc_paused():  # Numba's compiler makes millions of objects; collecting them cost ~10%
        _warm_up()
    _prepared = True
    if not cold:
        return None
    seconds = time.perf_counter() - start
    print(f"collsim: compiled the simulator's engine in {seconds:.1f} s", file=out, flush=True)
    return seconds
