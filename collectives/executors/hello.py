"""MPI's own collectives announce themselves, so that ranks that disagree raise, never hang.

MPI's collectives carry no tags the guard (:mod:`.guard`) could sign, and a rank in
``MPI_Allreduce`` cannot see that a peer runs a schedule instead (``auto`` decided
differently there, or the ranks named different algorithms): each would wait for the other
for ever.  So before ``algorithm="native"`` posts MPI's collective, every rank sends every
other rank a *hello*: 16 bytes (the count, and a checksum of collective, dtype and op)
whose tag is the call's signature with the algorithm ``native`` (:class:`~.guard.TagCodec`),
and takes one in from each (:class:`Hellos` says how).  MPI's collective is posted only once
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
Schedules agree the same way once per communicator and call signature
(:meth:`Hellos.agree`, asked by :meth:`~.mpi.MpiTransport.agree`): their hellos carry the
schedule's algorithm and parameters in the tag, so ranks that chose different schedules,
which may otherwise each wait for a peer that waits for another with no message between
them, raise on the first call instead.
``benchmarks/bench_native_guard.py`` measures what the hellos add per call.  Watching for
point-to-point messages beside a non-blocking native collective instead would be cheaper
but wrong: in a correct program a peer that finished first sends its next call's message
while this rank is still in the collective (``benchmarks/native_watch_false_alarms.py``
counts it).
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .check import ArgumentMismatchError
from .guard import SEQUENCE_BITS, Guard
from .plan import choice

__all__ = ["HELLO_BYTES", "SIGNATURES_PER_COMM", "Hellos"]

#: bytes of a hello: the count and the checksum, two int64
HELLO_BYTES = 16

#: signatures whose persistent sends are kept per communicator (least recently used freed)
SIGNATURES_PER_COMM = 64

#: the sequence bits of a schedule's hello (the last: a schedule's first message has 0)
_LAST = (1 << SEQUENCE_BITS) - 1


@dataclass(frozen=True, slots=True)
class _Signature:
    """One call's hello: its tag, its bytes, and its persistent sends (one per peer)."""

    tag: int
    payload: np.ndarray
    expected: bytes
    sends: list[Any]


_HINT = ("; the ranks called different collectives or passed different arguments, or "
         "algorithm='auto' chose differently on some ranks (different COLLSIM_TUNING, "
         "COLLSIM_TOPOLOGY or collectives.auto tables)")


class Hellos:
    """The hellos of one communicator's native calls.

    A hello is taken in only after a matched probe says it is one (the tag, and
    :data:`HELLO_BYTES` bytes): a receive smaller than the message that matches it is
    never posted, since Open MPI 5.0.11 writes a truncated rendezvous message whole past
    the receive buffer (shared memory, single copy through CMA).  Any other message is
    received whole into a buffer of its own size and reported.

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
        #: per peer, ``(peer, the bytes its hello goes to)``
        self._slots = tuple((peer, memoryview(self._inbox[i]).cast("B"))
                            for i, peer in enumerate(self.peers))
        self._signatures: OrderedDict[tuple, _Signature] = OrderedDict()
        self._status = mpi.Status()

    def exchange(self, collective: str, count: int, dtype: str, op: str,
                 algorithm: str = "native") -> None:
        """Send every peer this call's hello, take in theirs, and raise if any differs.

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
        """
        if not self.peers:
            return
        key = (collective, count, dtype, op)
        signature = self._signatures.get(key)
        if signature is None:
            signature = self._bind(key)
        self._swap(key, signature, algorithm)

    def agree(self, collective: str, count: int, dtype: str, op: str, algorithm: str,
              params: tuple[tuple[str, Any], ...]) -> None:
        """Exchange hellos signed with a schedule's signature (its algorithm and parameters).

        What a communicator does the first time it runs a schedule's call (the transport
        keeps which it agreed on): ranks that chose different schedules may otherwise
        each wait for a peer that waits for another, with no message sent between them
        that could show it.  A hello's tag is the signature of the call's first message
        with the last sequence number (a schedule's first message has the first), so a
        rank that runs the call's steps without agreeing (or another call) is caught by
        the hello it takes first.

        Parameters
        ----------
        collective, dtype, op : str
            The call.
        count : int
            Elements of the working buffer.
        algorithm : str
            The schedule.
        params : tuple of (str, value)
            Its resolved parameters (:attr:`~.plan.Plan.params`).

        Raises
        ------
        ArgumentMismatchError
            As :meth:`exchange`.
        """
        if not self.peers:
            return
        key = (collective, count, dtype, op, algorithm, params)
        signature = self._signatures.get(key)
        if signature is None:
            signature = self._bind(key)
        self._swap(key, signature, algorithm)

    def _swap(self, key: tuple, signature: _Signature, algorithm: str) -> None:
        """Send the hellos of ``signature``, take in every peer's, raise if any differs."""
        mpi, status = self._mpi, self._status
        improbe, any_tag, tag = self._comm.Improbe, mpi.ANY_TAG, signature.tag
        mpi.Prequest.Startall(signature.sends)
        pending: Any = self._slots
        while pending:
            waiting = []
            for slot in pending:
                message = improbe(slot[0], any_tag, status)
                if message is None:
                    waiting.append(slot)
                elif status.tag == tag and status.Get_count() == HELLO_BYTES:
                    message.Recv(slot[1])
                else:
                    nbytes = status.Get_count()
                    message.Recv(bytearray(nbytes))
                    self._fail(key, signature, algorithm, self._guard.stranger(
                        slot[0], status.tag, tag, nbytes, HELLO_BYTES))
            pending = waiting
        mpi.Request.Waitall(signature.sends)
        if self._inbox.tobytes() != signature.expected:
            self._fail(key, signature, algorithm, self._differences(signature.payload))

    def _bind(self, key: tuple) -> _Signature:
        """Bind the persistent sends of one call's hello: ``(collective, count, dtype, op)``
        for a native call's, with ``(algorithm, params)`` after them for a schedule's."""
        collective, count, dtype, op = key[:4]
        if len(key) == 4:
            tag = self._guard.codec.base(collective, count, dtype, op, "native", ())
        else:
            tag = self._guard.codec.base(collective, count, dtype, op, *key[4:]) | _LAST
        payload = np.array([count, zlib.crc32(f"{collective} {dtype} {op}".encode())],
                           np.int64)
        signature = self._signatures[key] = _Signature(
            tag, payload, payload.tobytes() * len(self.peers),
            [self._comm.Send_init(payload, peer, tag) for peer in self.peers])
        if len(self._signatures) > SIGNATURES_PER_COMM:
            for request in self._signatures.popitem(last=False)[1].sends:
                request.Free()
        return signature

    def _differences(self, mine: np.ndarray) -> str:
        """How the hellos taken in differ from ``mine``, in words."""
        out = []
        for peer, (count, checksum) in zip(self.peers, self._inbox):
            if count != mine[0]:
                out.append(f"count: {mine[0]} here, {count} at rank {peer}")
            elif checksum != mine[1]:
                out.append(f"rank {peer} called another collective, dtype or op")
        return "; ".join(out)

    def _fail(self, key: tuple, signature: _Signature, algorithm: str, problem: str) -> None:
        """Mark the communicator broken, tell every rank, take in what peers still send
        (:meth:`~.guard.Guard.settle`), and raise saying why."""
        collective, count, dtype, op = key[:4]
        del self._signatures[key]  # its sends may still be active: never start them again
        chosen = choice(algorithm, key[5]) if len(key) > 4 else algorithm
        reason = (f"rank {self._comm.Get_rank()}, {collective} {chosen} ({dtype}, {op}, "
                  f"count {count}): {problem}")
        self._guard.settle(list(signature.sends), 0, (self._inbox, signature.payload), reason)
        raise ArgumentMismatchError(reason + _HINT)

    def free(self) -> None:
        """Free every persistent request (none may be active)."""
        while self._signatures:
            for request in self._signatures.popitem()[1].sends:
                request.Free()
