"""What the public collectives need of a transport: the interface MPI's and NCCL's share.

:class:`~.mpi.MpiTransport` (over an mpi4py communicator) and
:class:`~.nccl.NcclComm` (over NCCL) are the two transports; :func:`~collectives.executors.
transport_for` returns one of them for a call's ``comm``.  Neither inherits from
:class:`Transport`: it is a structural type that the type checker holds both to.  A call
binds what it runs once (:class:`~collectives.calls.BoundCall`): the transport's walk of
its plan (:meth:`Transport.walker`) or its library's own collective
(:meth:`Transport.native_runner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from .buffers import Call
    from .plan import Plan

__all__ = ["Transport", "Walker", "Native"]

#: a plan's walk bound once: ``walk(work, send, stream)``, the working buffer updated in
#: place, the input just laid into it (None in place), the CuPy stream (None for NumPy);
#: over MPI on NumPy buffers also ``walk(work, send, None, recv)``, the plan's input and
#: output bound to ``send`` and ``recv`` themselves (:func:`collectives.calls.direct`)
Walker = Callable[..., None]
#: the library's own collective bound once: ``run(send, recv, stream)`` on flat buffers,
#: ``send`` None in place
Native = Callable[[Any, Any, Any], None]


class Transport(Protocol):
    """A communicator that runs plans and its library's own collectives.

    Attributes
    ----------
    name : str
        ``"mpi"`` or ``"nccl"``.
    rank, size : int
        This rank and the number of ranks.
    """

    name: str
    rank: int
    size: int

    def validate(self, call: Call, op: str, native: bool) -> None:
        """Raise, before any communication, for buffers, dtype or op it cannot run."""

    def check_usable(self) -> None:
        """Raise if a collective failed on it before, or it was closed."""

    def allgather_object(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (the agreement of ``check=True``)."""

    def walker(self, plan: Plan, op: str, xp: Any) -> Walker:
        """The walk of ``plan`` reducing with ``op`` on ``xp``'s buffers, bound once."""

    def native_runner(self, shape: Call, op: str, signed: bool) -> Native:
        """The library's own collective for calls shaped as ``shape`` (its buffers are not
        read), after hellos when ``signed``, bound once."""
