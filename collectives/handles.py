"""Persistent collectives: check and bind a call once, then run it as often as needed.

As MPI-4's ``MPI_Allreduce_init``: :func:`allreduce_init`, :func:`reduce_scatter_init` and
:func:`allgather_init` take the arguments of :func:`collectives.allreduce` etc. (NumPy
buffers over MPI), check them, agree on them across ranks when ``check`` is on, resolve
``auto``, and bind the rank's plan to the buffers as persistent requests, once.  They are
collective: every rank calls them in the same order.  The returned
:class:`PersistentCollective` runs the collective on the buffers' current contents each
time it is called, with no argument checked again; all ranks call their handles in the
same order, as they would call the collectives.

The buffers are fixed at init (as for MPI's persistent requests) and the handle keeps them
alive; a handle for a schedule also owns its scratch (and, for an out-of-place
ReduceScatter, its working buffer).  A call costs one ``Startall`` and one ``Waitall`` per
step plus the reductions, the copies of the input and output, and a look at whether the
communicator still works; ``native`` calls MPI's own collective after its hellos (with
``check=False``, mpi4py's method bound to the buffers once: a call costs what mpi4py's
does).  The executor progresses only inside a call, so there is no separate
``start``/``wait``: a call returns complete.
Messages carry the same signed tags as :func:`collectives.allreduce`'s, so ranks that
disagree still raise :class:`~collectives.ArgumentMismatchError`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .api import check_call
from .calls import BoundCall
from .executors.buffers import Call
from .executors.check import agree
from .executors.persistent import HeldPlan

__all__ = ["PersistentCollective", "allreduce_init", "reduce_scatter_init", "allgather_init"]


class PersistentCollective:
    """One collective checked and bound to its buffers; call it to run it.

    Made by :func:`allreduce_init`, :func:`reduce_scatter_init` or :func:`allgather_init`.

    Parameters
    ----------
    bound : BoundCall
        The checked call (:func:`collectives.api.check_call`), bound.
    call : Call
        Its buffers, laid out: the handle holds ``bound`` to them
        (:meth:`~collectives.calls.BoundCall.hold`).

    Attributes
    ----------
    bound : BoundCall
        As given.
    """

    __slots__ = ("bound", "_run", "_held", "_result", "_guard")

    def __init__(self, bound: BoundCall, call: Call) -> None:
        self.bound, self._result = bound, call.result
        self._guard: Any = bound.guard
        held = bound.hold(call)
        self._held = held if isinstance(held, HeldPlan) else None
        self._run: Callable[[], Any] = held.runner() if isinstance(held, HeldPlan) else held

    def __call__(self) -> np.ndarray:
        """Run the collective on the buffers' current contents.

        Returns
        -------
        numpy.ndarray
            ``recvbuf`` (for an in-place ReduceScatter, its first block).

        Raises
        ------
        ArgumentMismatchError
            When another rank ran a different call.
        CommunicatorBrokenError
            When a collective failed on the communicator before, or it was closed.
        """
        if self._guard.broken is not None:
            self._guard.check_usable()
        self._run()
        return self._result

    def free(self) -> None:
        """Free the persistent requests now (the handle cannot run afterwards)."""
        if self._held is not None:
            self._held.free()
        self._guard = _Freed()

    def __repr__(self) -> str:
        prepared = self.bound.prepared
        shape = prepared.shape
        return (f"<PersistentCollective {shape.collective} {prepared.algorithm} "
                f"({shape.dtype}, {prepared.op}, count {shape.count})>")


class _Freed:
    """Stands for the guard of a freed handle: every call says so."""

    broken = "the handle was freed"

    def check_usable(self) -> None:
        raise ValueError("this PersistentCollective was freed; create another with "
                         "collectives.allreduce_init (or reduce_scatter_init, allgather_init)")


def _init(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: Any, algorithm: str,
          check: bool | None, params: dict[str, Any]) -> PersistentCollective:
    prepared, call = check_call(collective, sendbuf, recvbuf, comm, op, algorithm, check, params)
    if call.xp is not np or prepared.transport.name != "mpi":
        raise TypeError(f"{collective}_init takes NumPy buffers over an mpi4py communicator; "
                        f"for CuPy buffers or an NcclComm call collectives.{collective}")
    if prepared.signature is not None:
        agree(prepared.signature, prepared.transport.allgather_object)
    prepared.transport.check_usable()
    return PersistentCollective(BoundCall(prepared), call)


def allreduce_init(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None, op: Any = "sum",
                   algorithm: str = "auto", check: bool | None = None,
                   **params: Any) -> PersistentCollective:
    """Check an AllReduce once and return a handle that runs it (as ``MPI_Allreduce_init``).

    Parameters and raises as :func:`collectives.allreduce` (NumPy buffers over MPI only;
    ``check`` agrees on the arguments once, here).  Collective over ``comm``.

    Returns
    -------
    PersistentCollective
        Call it to run the AllReduce on the buffers' current contents.

    Raises
    ------
    TypeError
        Also for CuPy buffers or an ``NcclComm``.

    Examples
    --------
    Under ``mpirun -n 2``:

    >>> run = collectives.allreduce_init(x, y, algorithm="ring")   # doctest: +SKIP
    >>> for _ in range(1000):                                      # doctest: +SKIP
    ...     x[:] = next_input(); run()                              # y holds the sum
    """
    return _init("allreduce", sendbuf, recvbuf, comm, op, algorithm, check, params)


def reduce_scatter_init(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None,
                        op: Any = "sum", algorithm: str = "auto", check: bool | None = None,
                        **params: Any) -> PersistentCollective:
    """Check a ReduceScatter once and return a handle that runs it.

    As :func:`allreduce_init`, with the buffers of :func:`collectives.reduce_scatter`.
    """
    return _init("reduce_scatter", sendbuf, recvbuf, comm, op, algorithm, check, params)


def allgather_init(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None,
                   algorithm: str = "auto", check: bool | None = None,
                   **params: Any) -> PersistentCollective:
    """Check an AllGather once and return a handle that runs it.

    As :func:`allreduce_init`, with the buffers of :func:`collectives.allgather`.
    """
    return _init("allgather", sendbuf, recvbuf, comm, "sum", algorithm, check, params)
