"""What the public collectives need of a transport: the interface MPI's and NCCL's share.

:class:`~.mpi.MpiTransport` (over an mpi4py communicator) and
:class:`~.nccl.NcclComm` (over NCCL) are the two transports; :func:`~collectives.executors.
transport_for` returns one of them for a call's ``comm``.  Neither inherits from
:class:`Transport`: it is a structural type that the type checker holds both to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .buffers import Call
    from .plan import Plan

__all__ = ["Transport"]


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

    def allgather_object(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (the agreement of ``check=True``)."""

    def run(self, plan: Plan, call: Call, work: Any, op: str, stream: Any) -> None:
        """Walk ``plan`` on the working buffer ``work``, reducing with ``op``."""

    def native(self, call: Call, op: str, stream: Any, signed: bool = True) -> None:
        """Run the library's own collective for ``call`` (after hellos when ``signed``)."""
