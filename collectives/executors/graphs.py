"""A plan's walk captured as a CUDA graph, so that a repeated call is one graph launch.

The NCCL executor enqueues a step as a group of sends and receives and its reductions as
CuPy kernels: on 8 GPUs a ring AllReduce is 14 groups and 7 kernels per call, each a host
round trip through NCCL and CuPy.  :class:`Graphs` records them once, with CUDA stream
capture (NCCL supports capturing its calls, CuPy's ``Stream.begin_capture``), and replays
the graph from then on.

A graph holds raw device addresses, so it is kept per key: the plan, the op, the working
and scratch buffers' addresses and the stream (:meth:`Graphs.key`).  A call whose buffers
sit at the same addresses replays it; any other is a new key.  The first call of a key
runs directly (it also makes NCCL connect its peers outside a capture), the second is
captured and launched, later ones replay.  Nothing allocates inside a capture: the walk's
local copies go through an area the graph owns.  Capture is skipped where CUDA does not
allow it (the legacy default stream, a stream that is capturing already), and everywhere
with ``COLLSIM_CUDA_GRAPHS=0`` or ``NcclComm(graphs=False)``.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any, Callable

from .plan import Plan, apply_copies

__all__ = ["GRAPHS_ENV", "GRAPHS_KEPT", "Graphs", "graphs_enabled", "copy_count",
           "copies_through"]

#: environment variable: ``0`` never captures (default ``1``)
GRAPHS_ENV = "COLLSIM_CUDA_GRAPHS"

#: graphs kept per communicator (the least recently used dropped first)
GRAPHS_KEPT = 64

_SEEN, _REFUSED = "seen", "refused"


def graphs_enabled(flag: bool | None) -> bool:
    """Return ``flag``, or when None what ``COLLSIM_CUDA_GRAPHS`` says (default on).

    Parameters
    ----------
    flag : bool or None
        The caller's choice.

    Returns
    -------
    bool
        Whether repeated walks are captured.

    Raises
    ------
    ValueError
        If ``COLLSIM_CUDA_GRAPHS`` is neither ``0`` nor ``1``.

    Examples
    --------
    >>> graphs_enabled(False)
    False
    """
    if flag is not None:
        return bool(flag)
    value = os.environ.get(GRAPHS_ENV, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(f"{GRAPHS_ENV}={value!r} is not allowed; use 1 or 0")
    return value == "1"


def copy_count(plan: Plan) -> int:
    """Elements the busiest step's local copies move (the area :func:`copies_through` uses).

    Examples
    --------
    >>> import numpy as np
    >>> from collectives.executors.plan import get_plan
    >>> copy_count(get_plan("allgather", "ring", 1, 0, 5, np.dtype("f4"), {}))
    0
    """
    return max((sum(source.stop - source.start for source, _ in step.copies)
                for step in plan.steps), default=0)


def copies_through(area: Any) -> Callable[[Any, tuple[tuple[slice, slice], ...]], None]:
    """Return ``apply_copies`` (:func:`~.plan.apply_copies`) that stages through ``area``
    instead of allocating: every source is read into ``area`` before any destination is
    written."""
    def copy(work: Any, copies: tuple[tuple[slice, slice], ...]) -> None:
        offset, placed = 0, []
        for source, destination in copies:
            length = source.stop - source.start
            held = area[offset:offset + length]
            held[...] = work[source]
            placed.append((destination, held))
            offset += length
        for destination, held in placed:
            work[destination] = held
    return copy


class Graphs:
    """Captured walks of one communicator, by key.

    Parameters
    ----------
    enabled : bool
        False runs every walk directly.

    Attributes
    ----------
    runs : dict
        Walks by how they ran: ``direct``, ``captured`` (recorded, then launched) and
        ``replayed``.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.runs = {"direct": 0, "captured": 0, "replayed": 0}
        self._kept: OrderedDict[tuple, Any] = OrderedDict()

    @staticmethod
    def key(plan: Plan, op: str, work: Any, scratch: Any, stream: Any) -> tuple:
        """Return what a captured walk depends on: the plan, the op, the buffers' addresses
        and sizes, and the stream."""
        return (plan.collective, plan.algorithm, plan.nranks, plan.rank, plan.count,
                plan.dtype, plan.params, op, work.data.ptr, work.size, scratch.data.ptr,
                scratch.size, stream.ptr)

    def run(self, key: tuple, stream: Any, walk: Callable[[Callable], None], plan: Plan,
            xp: Any, dtype: Any) -> str:
        """Run ``walk(copy)`` on ``stream``: directly, captured, or as the graph of ``key``.

        Parameters
        ----------
        key : tuple
            From :meth:`key`.
        stream : cupy.cuda.Stream
            The stream the walk enqueues on (current while it runs).
        walk : callable
            Enqueues the plan; takes the function that applies a step's local copies.
        plan : Plan
            The plan walked (for the size of the copies' area).
        xp : module
            ``cupy``.
        dtype : dtype
            The buffers' dtype.

        Returns
        -------
        str
            How it ran: ``direct``, ``captured`` or ``replayed``.
        """
        entry = self._kept.get(key) if self.enabled and stream.ptr not in (0, 1) else _REFUSED
        if entry is None or entry is _REFUSED:
            if entry is None:
                self._remember(key, _SEEN)
            walk(apply_copies)
            return self._count("direct")
        if isinstance(entry, tuple):
            self._kept.move_to_end(key)
            entry[0].launch(stream)
            return self._count("replayed")
        area = xp.empty(copy_count(plan), dtype)  # allocated before the capture, owned by it
        try:
            stream.begin_capture()
        except Exception:  # noqa: BLE001 - CUDA refuses capture here: run as before
            self._kept[key] = _REFUSED
            walk(apply_copies)
            return self._count("direct")
        try:
            walk(copies_through(area))
        finally:
            graph = stream.end_capture()
        self._kept[key] = (graph, area)
        graph.launch(stream)
        return self._count("captured")

    def _remember(self, key: tuple, entry: Any) -> None:
        """Keep ``entry`` for ``key``, dropping the least recently used past the limit."""
        self._kept[key] = entry
        if len(self._kept) > GRAPHS_KEPT:
            self._kept.popitem(last=False)

    def _count(self, how: str) -> str:
        """Count a walk that ran ``how``; return ``how``."""
        self.runs[how] += 1
        return how

    def clear(self) -> None:
        """Drop every graph (when the communicator is destroyed)."""
        self._kept.clear()
