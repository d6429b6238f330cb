"""MPI's own collectives announce themselves, so that ranks that disagree raise, never hang.

MPI's collectives carry no tags the guard (:mod:`.guard`) could sign, and a rank in
``MPI_Allreduce`` cannot see that a peer runs a schedule instead (``auto`` decided
differently there, or the ranks named different algorithms): each would wait for the other
for ever.  So before ``algorithm="native"`` posts MPI's collective, every rank sends every
other rank a *hello*: 16 bytes (the count, and a checksum of collective, dtype and op)
whose tag is the call's signature with the algorithm ``native`` (:class:`~.guard.TagCodec`),
and receives one from each with ``MPI.ANY_TAG``.  MPI's collective is posted only once
every hello matches this rank's own:

* ranks whose native calls differ (collective, count, dtype, op): each rank sees every
  rank's hello, so every rank sees a difference and raises, before MPI's collective is
  posted (nothing is left pending on any buffer);
* a rank in native while others run a schedule: the schedule's first receive from the
  native rank gets the hello, whose tag says ``native``, so that rank raises and sends
  every rank the guard's failure message (:meth:`~.guard.Guard.settle`); the native
  rank's receive from a schedule rank gets that rank's data (another tag, or too long) or
  its failure message, and it raises too.  A schedule rank cannot finish without some
  rank having received from the native one, so no rank is left waiting.

Nothing here depends on state that may differ between ranks: every native call, the
first or the millionth, exchanges its hellos.  The requests are persistent: the receives
are bound once per communicator, the sends once per signature.  A call with no elements
exchanges hellos whatever its algorithm (a schedule has no message to carry its signature
then, and MPI's collectives return at once), so that a rank with elements beside it raises
instead of waiting.
``benchmarks/bench_native_guard.py`` measures what the hellos add per call.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .check import ArgumentMismatchError
from .guard import CommunicatorBrokenError, Guard

__all__ = ["HELLO_BYTES", "SIGNATURES_PER_COMM", "Hellos"]

#: bytes of a hello: the count and the checksum, two int64
HELLO_BYTES = 16

#: signatures whose persistent sends are kept per communicator (least recently used freed)
SIGNATURES_PER_COMM = 64

@dataclass(frozen=True, slots=True)
class _Signature:
    """One call's hello: its tag, the bytes every peer's must hold, its persistent requests
    (the receives, then the sends)."""

    tag: int
    expected: bytes
    payload: np.ndarray
    requests: list[Any]

    @property
    def sends(self) -> list[Any]:
        """The sends (the second half of :attr:`requests`)."""
        return self.requests[len(self.requests) // 2:]


_HINT = ("; the ranks called different collectives or passed different arguments, or "
         "algorithm='auto' chose differently on some ranks (different COLLSIM_TUNING, "
         "COLLSIM_TOPOLOGY or collectives.auto tables)")


class Hellos:
    """The hellos of one communicator's native calls.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI``.
    comm : mpi4py.MPI.Intracomm
        The private communicator.
    guard : Guard
        Its guard: the tag codec, the failure message, the broken flag.
    """

    def __init__(self, mpi: Any, comm: Any, guard: Guard) -> None:
        self._mpi, self._comm, self._guard = mpi, comm, guard
        rank = comm.Get_rank()
        self.peers = tuple(peer for peer in range(comm.Get_size()) if peer != rank)
        self._inbox = np.zeros((len(self.peers), 2), np.int64)
        self._recvs: list[Any] = []
        self._signatures: OrderedDict[tuple[str, int, str, str], _Signature] = OrderedDict()
        self._statuses: list[Any] = []

    def exchange(self, collective: str, count: int, dtype: str, op: str,
                 algorithm: str = "native") -> None:
        """Send every peer this call's hello, receive theirs, and raise if any differs.

        Parameters
        ----------
        collective, dtype, op : str
            The call.
        count : int
            Elements of the working buffer.
        algorithm : str
            The algorithm asked for, named in errors (the hello itself says ``native``).

        Raises
        ------
        ArgumentMismatchError
            When a peer's hello differs, or a peer sent a schedule's message or the
            guard's failure message; the communicator is then broken.
        CommunicatorBrokenError
            When MPI failed otherwise; the communicator is then broken.
        """
        if not self.peers:
            return
        key = (collective, count, dtype, op)
        signature = self._signatures.get(key)
        if signature is None:
            signature = self._bind(key)
        mpi, requests, statuses = self._mpi, signature.requests, self._statuses
        mpi.Prequest.Startall(requests)
        try:
            mpi.Request.Waitall(requests, statuses)
        except mpi.Exception as error:
            self._fail(key, signature, algorithm, error)
        tag = signature.tag
        for index in range(len(self.peers)):
            if statuses[index].tag != tag:
                self._fail(key, signature, algorithm, None)
        if self._inbox.tobytes() != signature.expected:
            self._fail(key, signature, algorithm, None)

    def _bind(self, key: tuple[str, int, str, str]) -> "_Signature":
        """Bind the receives (once) and the sends of one call's hello."""
        collective, count, dtype, op = key
        comm, mpi = self._comm, self._mpi
        if not self._recvs:
            self._recvs = [comm.Recv_init(self._inbox[i], peer, mpi.ANY_TAG)
                           for i, peer in enumerate(self.peers)]
        tag = self._guard.codec.base(collective, count, dtype, op, "native", ())
        payload = np.array([count, zlib.crc32(f"{collective} {dtype} {op}".encode())],
                           np.int64)
        sends = [comm.Send_init(payload, peer, tag) for peer in self.peers]
        signature = self._signatures[key] = _Signature(
            tag, payload.tobytes() * len(self.peers), payload, self._recvs + sends)
        if len(self._signatures) > SIGNATURES_PER_COMM:
            for request in self._signatures.popitem(last=False)[1].sends:
                request.Free()
        return signature

    def _fail(self, key: tuple[str, int, str, str], signature: "_Signature", algorithm: str,
              error: Any) -> None:
        """Mark the communicator broken, tell every rank, and raise saying why."""
        collective, count, dtype, op = key
        del self._signatures[key]  # its sends may still be active: never start them again
        problems = self._problems(signature, error is not None)
        reason = (f"rank {self._comm.Get_rank()}, {collective} {algorithm} ({dtype}, {op}, "
                  f"count {count}): " + ("; ".join(problems)
                                   or f"MPI failed: {error.Get_error_string()}"))
        self._guard.settle(self._mpi, signature.requests, len(self.peers),
                           {peer: HELLO_BYTES + 1 for peer in self.peers},
                           (self._inbox, signature.payload), reason)
        if problems:
            raise ArgumentMismatchError(reason + _HINT) from None
        raise CommunicatorBrokenError(reason) from error

    def _problems(self, signature: "_Signature", failed: bool) -> list[str]:
        """What is wrong with each hello received, in words."""
        mpi, codec, out = self._mpi, self._guard.codec, []
        tag, mine = signature.tag, signature.payload
        for status, peer, (count, checksum) in zip(self._statuses, self.peers, self._inbox):
            error = status.Get_error() if failed else mpi.SUCCESS
            if error not in (mpi.SUCCESS, mpi.ERR_TRUNCATE):
                continue
            if status.tag == codec.poison:
                out.append(f"rank {peer} failed in this or an earlier call on this "
                           f"communicator and gave up (its own error says why)")
            elif status.tag != tag or error == mpi.ERR_TRUNCATE:
                fields = ", ".join(codec.differences(tag, status.tag)) or "a longer message"
                out.append(f"rank {peer} sent a message of another call ({fields}): it does "
                           f"not run this native call")
            elif count != mine[0]:
                out.append(f"count: {mine[0]} here, {count} at rank {peer}")
            elif checksum != mine[1]:
                out.append(f"rank {peer} called another collective, dtype or op")
        return out

    def free(self) -> None:
        """Free every persistent request (none may be active)."""
        for request in self._recvs:
            request.Free()
        self._recvs = []
        while self._signatures:
            for request in self._signatures.popitem()[1].sends:
                request.Free()
