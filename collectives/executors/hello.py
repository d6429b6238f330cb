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
exchanges nothing (neither MPI's collectives nor the schedules send anything then).
``benchmarks/bench_native_guard.py`` measures what the hellos add per call.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from .check import ArgumentMismatchError
from .guard import CommunicatorBrokenError, Guard

__all__ = ["HELLO_BYTES", "SIGNATURES_PER_COMM", "Hellos"]

#: bytes of a hello: the count and the checksum, two int64
HELLO_BYTES = 16

#: signatures whose persistent sends are kept per communicator (least recently used freed)
SIGNATURES_PER_COMM = 64

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
        self._sends: OrderedDict[tuple[int, int, int], tuple[np.ndarray, list[Any]]] = \
            OrderedDict()
        self._statuses: list[Any] = []

    def exchange(self, collective: str, count: int, dtype: str, op: str) -> None:
        """Send every peer this call's hello, receive theirs, and raise if any differs.

        Parameters
        ----------
        collective, dtype, op : str
            The call.
        count : int
            Elements of the working buffer (nothing is exchanged when 0).

        Raises
        ------
        ArgumentMismatchError
            When a peer's hello differs, or a peer sent a schedule's message or the
            guard's failure message; the communicator is then broken.
        CommunicatorBrokenError
            When MPI failed otherwise; the communicator is then broken.
        """
        if not self.peers or not count:
            return
        mpi = self._mpi
        tag = self._guard.codec.base(collective, count, dtype, op, "native", ())
        mine = (count, zlib.crc32(f"{collective} {dtype} {op}".encode()))
        if not self._recvs:
            self._recvs = [self._comm.Recv_init(self._inbox[i], peer, mpi.ANY_TAG)
                           for i, peer in enumerate(self.peers)]
        payload, sends = self._bound_sends(tag, mine)
        requests = self._recvs + sends
        mpi.Prequest.Startall(requests)
        error = None
        try:
            mpi.Request.Waitall(requests, self._statuses)
        except mpi.Exception as failure:
            error = failure
        problems = self._problems(tag, mine, error is not None)
        if not problems and error is None:
            return
        del self._sends[(tag, *mine)]  # its requests may still be active
        reason = (f"rank {self._comm.Get_rank()}, {collective} native ({dtype}, {op}, count "
                  f"{count}): " + ("; ".join(problems)
                                   or f"MPI failed: {error.Get_error_string()}"))
        self._guard.settle(mpi, requests, len(self._recvs),
                           {peer: HELLO_BYTES + 1 for peer in self.peers},
                           (self._inbox, payload), reason)
        if problems:
            raise ArgumentMismatchError(reason + _HINT) from None
        raise CommunicatorBrokenError(reason) from error

    def _bound_sends(self, tag: int, mine: tuple[int, int]) -> tuple[np.ndarray, list[Any]]:
        """The persistent sends of one signature's hello, bound on first use."""
        key = (tag, *mine)
        hit = self._sends.get(key)
        if hit is not None:
            self._sends.move_to_end(key)
            return hit
        payload = np.array(mine, np.int64)
        hit = self._sends[key] = (payload, [self._comm.Send_init(payload, peer, tag)
                                            for peer in self.peers])
        if len(self._sends) > SIGNATURES_PER_COMM:
            for request in self._sends.popitem(last=False)[1][1]:
                request.Free()
        return hit

    def _problems(self, tag: int, mine: tuple[int, int], failed: bool) -> list[str]:
        """What is wrong with each hello received, in words."""
        mpi, codec, out = self._mpi, self._guard.codec, []
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
        while self._sends:
            for request in self._sends.popitem()[1][1]:
                request.Free()
