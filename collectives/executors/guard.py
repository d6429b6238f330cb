"""Mismatched calls caught by default: every message's tag carries the call's signature.

A rank's signature is what its plan depends on: collective, op, dtype, algorithm, and a
checksum of count and resolved parameters.  :class:`TagCodec` packs it with the message's
sequence number (its place among the messages from one rank to another in this call) into
the MPI tag.  Receives are posted with ``MPI.ANY_TAG``: MPI still matches a pair's
messages in order (the non-overtaking rule), so the k-th receive gets the k-th message
whatever its tag, and the tag then says whether the sender ran the same call.  A message
that is longer than the receive fails with ``MPI_ERR_TRUNCATE`` and is never written past
the buffer; one that is shorter, or carries another signature, raises
:class:`~collectives.executors.check.ArgumentMismatchError` naming the fields that differ,
before the data is reduced or copied anywhere.

On any failure the rank sends every other rank an empty message with a reserved tag (so
that a rank waiting on it raises too instead of waiting forever), the receives still
posted are cancelled, and every request is completed
before its buffers can be reused or released; a request that cannot be completed keeps
its buffers alive (:attr:`Guard.orphans`) and out of the workspace cache.  The
communicator is then marked unusable (:class:`CommunicatorBrokenError` on the next call):
its private duplicate may still hold messages of the failed call.

The check costs one status per receive, compared against precomputed tags
(``benchmarks/bench_mismatch_check.py`` measures it); ``check=True`` still runs the full
agreement (:mod:`.check`), which also covers ``algorithm="native"``.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable

from ..build import ALGORITHMS
from ..errors import CollectivesError
from ..ops import DTYPES, OPS
from ..schedule import COLLECTIVES
from .buffers import discard
from .check import ArgumentMismatchError
from .plan import Plan, PlanStep

__all__ = ["CommunicatorBrokenError", "TagCodec", "SignedStep", "signed_steps", "Guard",
           "release_signed", "SEQUENCE_BITS"]

#: low tag bits that number a pair's messages within a call (modulo 2**SEQUENCE_BITS)
SEQUENCE_BITS = 6

#: (field, known values, bits) packed above the sequence number, lowest first
_FIELDS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("collective", COLLECTIVES, 2), ("op", tuple(OPS), 4), ("dtype", DTYPES, 5),
    ("algorithm", ALGORITHMS, 3))

#: bits of the checksum of count and parameters (the rest of a 31-bit tag)
_CHECKSUM_BITS = 31 - SEQUENCE_BITS - sum(bits for _, _, bits in _FIELDS)

#: seconds a failed call waits for cancelled requests to complete before leaving them
_CANCEL_WAIT_S = 1.0


class CommunicatorBrokenError(CollectivesError, RuntimeError):
    """A collective failed earlier on this communicator, which can no longer be used."""


def _code(value: str, known: tuple[str, ...], bits: int) -> int:
    if value in known and known.index(value) < 1 << bits:
        return known.index(value)
    return zlib.crc32(value.encode()) & ((1 << bits) - 1)


class TagCodec:
    """Packs a call's signature and a message's sequence number into an MPI tag.

    Parameters
    ----------
    tag_ub : int
        The communicator's largest tag (``MPI.TAG_UB``; at least 32767).  With 31 bits
        (Open MPI, MPICH) every field has its own bits and a mismatch is reported field by
        field; with fewer, the signature is folded into the bits there are and a
        mismatch is reported as one.

    Examples
    --------
    >>> codec = TagCodec(2**31 - 1)
    >>> base = codec.base("allreduce", 10, "float32", "sum", "ring", ())
    >>> codec.differences(base, codec.base("allgather", 10, "float32", "sum", "ring", ()))
    ['collective: allgather here, allreduce at the sender']
    """

    def __init__(self, tag_ub: int) -> None:
        if tag_ub < 32767:
            raise ValueError(f"tag_ub={tag_ub} is not allowed; MPI guarantees >= 32767")
        self.bits = min((tag_ub + 1).bit_length() - 1, 31)
        self.fields_fit = self.bits == 31
        #: the tag of the empty message a failing rank sends every other rank; no
        #: signature's tags reach it
        self.poison = (1 << self.bits) - 1

    def base(self, collective: str, count: int, dtype: str, op: str, algorithm: str,
             params: tuple[tuple[str, Any], ...]) -> int:
        """Return the tag of a call's first message (sequence number 0).

        Parameters
        ----------
        collective, dtype, op, algorithm : str
            The call.
        count : int
            Elements of the working buffer.
        params : tuple of (str, value)
            The resolved schedule parameters (:attr:`Plan.params`).

        Returns
        -------
        int
            The signature shifted above the sequence bits.
        """
        word, shift = 0, 0
        for value, (_, known, bits) in zip((collective, op, dtype, algorithm), _FIELDS):
            word |= _code(value, known, bits) << shift
            shift += bits
        checksum = zlib.crc32(repr((count, params)).encode())
        word |= (checksum & ((1 << _CHECKSUM_BITS) - 1)) << shift
        if not self.fields_fit:
            folded = zlib.crc32(word.to_bytes(4, "little"))
            word = folded & ((1 << (self.bits - SEQUENCE_BITS)) - 1)
        base = word << SEQUENCE_BITS
        if base | ((1 << SEQUENCE_BITS) - 1) == self.poison:
            base ^= 1 << SEQUENCE_BITS
        return base

    def differences(self, expected: int, received: int) -> list[str]:
        """Say which fields of two tags' signatures differ.

        Parameters
        ----------
        expected, received : int
            This rank's tag and the tag of the message that arrived.

        Returns
        -------
        list of str
            ``"<field>: <here>, <there> at the sender"`` per field that differs; the count
            and parameters share one checksum; one line when the fields were folded.
        """
        if not self.fields_fit:
            return ["the signature (the tags are too short to say which field)"]
        here, there = expected >> SEQUENCE_BITS, received >> SEQUENCE_BITS
        out = []
        for name, known, bits in _FIELDS:
            mask = (1 << bits) - 1
            a, b = here & mask, there & mask
            if a != b:
                out.append(f"{name}: {_name(known, a)} here, {_name(known, b)} at the sender")
            here, there = here >> bits, there >> bits
        if here != there:
            out.append("count or algorithm parameters")
        return out


def _name(known: tuple[str, ...], code: int) -> str:
    return known[code] if code < len(known) else f"<code {code}>"


@dataclass(frozen=True, slots=True)
class SignedStep:
    """One plan step with its tags: receives expect ``tags``, sends carry ``send_tags``.

    Attributes
    ----------
    tags : tuple of int
        The tag each receive of the step must see, in the step's receive order.
    lengths : tuple of int
        The bytes each receive must see.
    send_tags : tuple of int
        The tag of each send, in the step's send order.
    """

    tags: tuple[int, ...]
    lengths: tuple[int, ...]
    send_tags: tuple[int, ...]


_signed: dict[tuple[int, int], tuple[Plan, tuple[SignedStep, ...]]] = {}

#: signed plans kept (the same bound as the plan cache)
_SIGNED_CACHE_SIZE = 256


def signed_steps(plan: Plan, base: int) -> tuple[SignedStep, ...]:
    """Return the tags of every step of ``plan`` for a call whose signature is ``base``.

    Parameters
    ----------
    plan : Plan
        The rank's plan.
    base : int
        :meth:`TagCodec.base` of the call.

    Returns
    -------
    tuple of SignedStep
        One per plan step; cached per (plan, base).
    """
    key = (id(plan), base)
    hit = _signed.get(key)
    if hit is not None and hit[0] is plan:
        return hit[1]
    mask = (1 << SEQUENCE_BITS) - 1
    steps = tuple(SignedStep(tuple(base | (tag & mask) for _, _, _, tag in step.recvs),
                             tuple(span.stop - span.start for _, span, _, _ in step.recvs),
                             tuple(base | (tag & mask) for _, _, tag in step.sends))
                  for step in plan.steps)
    if len(_signed) >= _SIGNED_CACHE_SIZE:
        _signed.clear()
    _signed[key] = (plan, steps)
    return steps


def release_signed() -> None:
    """Forget every signed plan (:func:`collectives.release`)."""
    _signed.clear()


class Guard:
    """Waits for a step, checks what arrived, and on failure cleans up and says why.

    One per transport (:class:`~.mpi.MpiTransport`).

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The private communicator the steps run on.
    tag_ub : int
        ``MPI.TAG_UB``.

    Attributes
    ----------
    codec : TagCodec
        Packs signatures into tags.
    broken : str or None
        Why the communicator can no longer be used; None while it can.
    orphans : list
        ``(requests, buffers)`` that could not be completed; their buffers are kept alive
        here (and out of the workspace cache) for as long as the process lives.
    """

    def __init__(self, comm: Any, tag_ub: int) -> None:
        self.comm = comm
        self.codec = TagCodec(tag_ub)
        self.rank = comm.Get_rank()
        self.broken: str | None = None
        self.orphans: list[tuple[list[Any], tuple[Any, ...]]] = []
        self._statuses: list[Any] = []

    def check_usable(self) -> None:
        """Raise :class:`CommunicatorBrokenError` if a collective failed here before."""
        if self.broken is not None:
            raise CommunicatorBrokenError(
                f"a collective on this communicator failed earlier ({self.broken}); it may "
                f"still hold that call's messages, so no further collective can run on it: "
                f"use a new communicator (e.g. comm.Dup()) after handling the error")

    def complete(self, mpi: Any, requests: list[Any], plan_step: PlanStep, step: SignedStep,
                 buffers: tuple[Any, ...], describe: Callable[[int], str], index: int) -> None:
        """Wait for a step's requests (its receives first) and check every receive.

        Parameters
        ----------
        mpi : module
            ``mpi4py.MPI``.
        requests : list of mpi4py.MPI.Request
            The step's receives, in ``plan_step.recvs`` order, then its sends.
        plan_step : PlanStep
            The step (the peer of each receive).
        step : SignedStep
            The tags and lengths the receives must see.
        buffers : tuple of arrays
            Every buffer the requests read or write (kept alive if they cannot complete).
        describe : callable
            Says, given ``index``, which call and step this is (only on failure).
        index : int
            The step's index in the plan.

        Raises
        ------
        ArgumentMismatchError
            When a message carries another call's signature, is shorter than this rank
            expects, or was longer (MPI truncated it); the communicator is then broken.
        CommunicatorBrokenError
            When MPI failed otherwise; the communicator is then broken.
        """
        statuses = self._statuses
        try:
            mpi.Request.Waitall(requests, statuses)
        except mpi.Exception as error:
            peers = tuple(peer for _, _, peer, _ in plan_step.recvs)
            problems = self._problems(mpi, statuses, peers, step)
            reason = f"rank {self.rank}, {describe(index)}: " + (
                "; ".join(problems) or f"MPI failed: {error.Get_error_string()}")
            self._settle(mpi, requests, len(peers), buffers, reason)
            if problems:
                raise ArgumentMismatchError(reason + _HINT) from None
            raise CommunicatorBrokenError(reason) from error
        for status, tag, length in zip(statuses, step.tags, step.lengths):
            if status.tag != tag or status.Get_count() != length:
                peers = tuple(peer for _, _, peer, _ in plan_step.recvs)
                reason = (f"rank {self.rank}, {describe(index)}: "
                          + "; ".join(self._problems(mpi, statuses, peers, step)))
                self._settle(mpi, requests, len(peers), buffers, reason)
                raise ArgumentMismatchError(reason + _HINT)

    def _problems(self, mpi: Any, statuses: list[Any], peers: tuple[int, ...],
                  step: SignedStep) -> list[str]:
        """What is wrong with each receive that completed, in words."""
        out = []
        for status, peer, tag, length in zip(statuses, peers, step.tags, step.lengths):
            error = status.Get_error()
            if error == mpi.ERR_TRUNCATE:
                out.append(f"the message from rank {peer} is longer than the {length} bytes "
                           f"this rank expects (MPI truncated it)")
            elif error not in (mpi.SUCCESS, mpi.ERR_PENDING):
                continue
            elif error == mpi.SUCCESS and status.tag == self.codec.poison:
                out.append(f"rank {peer} failed in this or an earlier call on this "
                           f"communicator and gave up (its own error says why)")
            elif error == mpi.SUCCESS and status.tag != tag:
                fields = ", ".join(self.codec.differences(tag, status.tag))
                out.append(f"the message from rank {peer} was sent by another call "
                           f"({fields})")
            elif error == mpi.SUCCESS and status.Get_count() != length:
                out.append(f"the message from rank {peer} has {status.Get_count()} bytes, "
                           f"this rank expects {length}")
        return out

    def _settle(self, mpi: Any, requests: list[Any], nrecvs: int, buffers: tuple[Any, ...],
                reason: str) -> None:
        """Mark broken, tell every other rank, cancel the receives, complete what completes.

        The empty message with the tag :attr:`TagCodec.poison` completes any receive
        another rank has posted from this one on this communicator, so ranks waiting on
        this one raise too instead of waiting forever (when the abort hooks are off).
        Requests that do not complete within a second are kept, with their buffers.
        """
        self.broken = reason
        comm, poison = self.comm, self.codec.poison
        requests = requests + [comm.Isend(_EMPTY, peer, poison)
                               for peer in range(comm.Get_size()) if peer != self.rank]
        for request in requests[:nrecvs]:
            try:
                if request != mpi.REQUEST_NULL and not request.Get_status():
                    request.Cancel()
            except mpi.Exception:
                pass  # failed already: the Test below completes it
        pending = list(requests)
        deadline = time.monotonic() + _CANCEL_WAIT_S
        while pending and time.monotonic() < deadline:
            pending = [r for r in pending if not _done(mpi, r)]
        if pending:
            self.orphans.append((pending, buffers))
            for buffer in buffers:
                discard(buffer)


_EMPTY = bytearray()

_HINT = ("; the ranks called different collectives or passed different arguments (with "
         "COLLSIM_CHECK=1 every rank names the difference before sending)")


def _done(mpi: Any, request: Any) -> bool:
    """Test ``request``; an error completes it too."""
    try:
        return request == mpi.REQUEST_NULL or bool(request.Test())
    except mpi.Exception:
        return True
