"""Persistent collectives: check and bind a call once, then run it as often as needed.

As MPI-4's ``MPI_Allreduce_init``: :func:`allreduce_init`, :func:`reduce_scatter_init`,
:func:`allgather_init`, :func:`broadcast_init`, :func:`reduce_init`, :func:`alltoall_init`
and :func:`alltoallv_init` take the arguments of :func:`collectives.allreduce` etc. (NumPy
buffers over MPI), check them, agree on them across ranks when ``check`` is on, resolve
``auto``, and bind the rank's plan to the buffers as persistent requests, once (an
AllToAllv's counts are agreed here, once, not at every call).  They are
collective: every rank calls them in the same order.  The returned
:class:`PersistentCollective` runs the collective on the buffers' current contents each
time it is called, with no argument checked again; all ranks call their handles in the
same order, as they would call the collectives.

The buffers are fixed at init (as for MPI's persistent requests) and the handle keeps them
alive; a handle for a schedule also owns its scratch (and, for an out-of-place
ReduceScatter, a Broadcast, Reduce or AllToAll(v), its working buffer).  A call costs one ``Startall`` and one ``Waitall`` per
step plus the reductions, the copies of the input and output, and a look at whether the
communicator still works; ``native`` calls MPI's own collective after its hellos (with
``check=False``, mpi4py's method bound to the buffers once: a call costs what mpi4py's
does).  The executor progresses only inside a call, so there is no separate
``start``/``wait``: a call returns complete.
Messages carry the same signed tags as :func:`collectives.allreduce`'s, so ranks that
disagree still raise :class:`~collectives.ArgumentMismatchError`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .api import check_call
from .calls import BoundCall, Prepared
from .exchange_calls import check_alltoall, check_alltoallv, check_broadcast, check_reduce
from .executors.buffers import Call
from .executors.check import agree
from .executors.persistent import HeldPlan

__all__ = ["PersistentCollective", "allreduce_init", "reduce_scatter_init", "allgather_init",
           "broadcast_init", "reduce_init", "alltoall_init", "alltoallv_init"]


class PersistentCollective:
    """One collective checked and bound to its buffers; call it to run it.

    Made by :func:`allreduce_init` and the other ``*_init`` functions of this module.

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

    def __call__(self) -> np.ndarray | None:
        """Run the collective on the buffers' current contents.

        Returns
        -------
        numpy.ndarray or None
            ``recvbuf`` (for an in-place ReduceScatter, its first block; for a Broadcast,
            ``buf``; for a Reduce off its root, None).

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
                         "collectives.allreduce_init (or another *_init)")


def _init(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: Any, algorithm: str,
          check: bool | None, params: dict[str, Any]) -> PersistentCollective:
    return _hold(collective, check_call(collective, sendbuf, recvbuf, comm, op, algorithm,
                                        check, params))


def _hold(collective: str, checked: tuple[Prepared, Call]) -> PersistentCollective:
    """A handle for a checked call: NumPy buffers over MPI only; the ranks agree on it here
    where ``check`` asked."""
    prepared, call = checked
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


def broadcast_init(buf: Any, *, root: int = 0, comm: Any = None, algorithm: str = "auto",
                   check: bool | None = None, **params: Any) -> PersistentCollective:
    """Check a Broadcast once and return a handle that runs it (as ``MPI_Bcast_init``).

    As :func:`allreduce_init`, with the arguments of :func:`collectives.broadcast`; the
    handle broadcasts the root's ``buf`` into every other rank's, and returns ``buf``.
    """
    return _hold("broadcast", check_broadcast(buf, root, comm, algorithm, check, params))


def reduce_init(sendbuf: Any, recvbuf: Any = None, *, root: int = 0, op: Any = "sum",
                comm: Any = None, algorithm: str = "auto", check: bool | None = None,
                **params: Any) -> PersistentCollective:
    """Check a Reduce once and return a handle that runs it (as ``MPI_Reduce_init``).

    As :func:`allreduce_init`, with the arguments of :func:`collectives.reduce`; the handle
    returns the result at the root (``recvbuf``, allocated here when None) and None
    elsewhere.
    """
    return _hold("reduce", check_reduce(sendbuf, recvbuf, root, op, comm, algorithm, check,
                                        params))


def alltoall_init(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None,
                  algorithm: str = "auto", check: bool | None = None) -> PersistentCollective:
    """Check an AllToAll once and return a handle that runs it (as ``MPI_Alltoall_init``).

    As :func:`allreduce_init`, with the arguments of :func:`collectives.alltoall`.
    """
    return _hold("alltoall", check_alltoall(sendbuf, recvbuf, comm, algorithm, check))


def alltoallv_init(sendbuf: Any, sendcounts: Sequence[int], sdispls: Sequence[int],
                   recvbuf: Any, recvcounts: Sequence[int], rdispls: Sequence[int], *,
                   comm: Any = None, algorithm: str = "pairwise") -> PersistentCollective:
    """Check an AllToAllv once, agreeing on its counts, and return a handle that runs it
    (as ``MPI_Alltoallv_init``).

    As :func:`allreduce_init`, with the arguments of :func:`collectives.alltoallv`: the
    counts and displacements are fixed with the buffers.

    Raises
    ------
    ArgumentMismatchError
        On every rank, when a rank's ``recvcounts`` are not what the others send it.
    """
    return _hold("alltoallv", check_alltoallv(sendbuf, sendcounts, sdispls, recvbuf,
                                              recvcounts, rdispls, comm, algorithm))
