"""Pause CPython's cyclic garbage collector while a rank's steps are built.

Generating one rank's steps allocates thousands to hundreds of thousands of small
objects (operations, steps, tuples) that all survive and form no reference cycles.
The collector cannot free any of them, yet every 700 allocations it walks the young
ones, and as the schedule's cache grows it walks all of them again and again: building
every rank of a 1024-rank tree AllReduce of 1 GiB spent about 3/4 of its time in the
collector (``benchmarks/bench_schedules.py --all-ranks``, before and after). Pausing it
per rank removes that work; it runs again as soon as the rank is done.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block (or decorated function).

    The collector is re-enabled on exit, also when the block raises, unless it was
    already disabled on entry. Reference counting still frees objects as usual. In a
    multi-threaded program another thread's ``gc.disable()`` made during the block is
    undone on exit; only the collector's timing, never correctness, depends on it.

    Yields
    ------
    None

    Examples
    --------
    >>> import gc
    >>> with gc_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
