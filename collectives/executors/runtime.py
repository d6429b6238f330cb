"""Everything the collectives keep between calls, in one object that :func:`release` clears.

:data:`RUNTIME` holds the caches that used to live in their own modules and were kept
consistent by hand: the remembered calls (:mod:`collectives.calls`), ``auto``'s decisions
(:mod:`collectives.auto`), the plans (:mod:`.plan`), the signed plans (:mod:`.guard`), the
workspace and the staging events (:mod:`.buffers`), and the live MPI transports whose
persistent requests (bindings, hellos) it frees (:mod:`.mpi`).  What depends on what is
said once, here: forgetting ``auto``'s decisions (a new table or predictor) forgets the
calls that were checked under them (:meth:`Runtime.forget_decisions`).

Importing this module imports neither mpi4py nor CuPy.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Runtime", "RUNTIME"]


@dataclass(frozen=True, eq=False)
class Runtime:
    """The per-process state of the collectives.

    Its containers are never replaced, only emptied, so a hot path may hold one of them
    (``auto``'s decisions, the bound calls) under a name of its own.

    Attributes
    ----------
    calls : dict
        :func:`collectives.calls.key` -> :class:`~collectives.calls.BoundCall`.
    decisions : dict
        ``auto``'s ``(collective, nbytes, nranks, dtype_size)`` -> ``(algorithm, params)``.
    plans : OrderedDict
        Plan key -> :class:`~.plan.Plan` (least recently used first).
    signed : dict
        ``(plan, op)`` -> ``SignedPlan``.
    workspace : dict
        Workspace key -> array (:func:`~.buffers.workspace`).
    staging : dict
        Stream pointer -> (event, pinned mirrors) (:func:`~.buffers.staged_done`).
    transports : weakref.WeakSet
        Every live MPI transport.
    """

    calls: dict[tuple, Any] = field(default_factory=dict)
    decisions: dict[tuple, Any] = field(default_factory=dict)
    plans: OrderedDict[tuple, Any] = field(default_factory=OrderedDict)
    signed: dict[tuple, Any] = field(default_factory=dict)
    workspace: dict[tuple, Any] = field(default_factory=dict)
    staging: dict[int, Any] = field(default_factory=dict)
    transports: "weakref.WeakSet[Any]" = field(default_factory=weakref.WeakSet)

    def forget_decisions(self) -> None:
        """Forget ``auto``'s decisions, and the calls checked under them."""
        self.decisions.clear()
        self.calls.clear()

    def wait_staged(self) -> None:
        """Wait for every host-to-device copy that may still read a pinned staging area."""
        for event, _ in self.staging.values():
            event.synchronize()
        self.staging.clear()

    def release(self) -> None:
        """Forget every call, plan and signed plan, free the persistent requests of every
        usable transport, and drop the workspace (:func:`collectives.release`).

        ``auto``'s decisions are kept: they depend on the tables and predictors installed,
        not on memory.
        """
        self.calls.clear()
        for transport in list(self.transports):
            transport.release()
        self.wait_staged()
        self.workspace.clear()
        self.plans.clear()
        self.signed.clear()


#: this process's runtime
RUNTIME = Runtime()
