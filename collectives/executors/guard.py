"""Mismatched calls caught by default: every message's tag carries the call's signature.

A rank's signature is what its plan depends on: collective, op, dtype, algorithm, and a
checksum of count and resolved parameters.  :class:`TagCodec` packs it with the message's
sequence number (its place among the messages from one rank to another in this call) into
the MPI tag.  The call's first message from each peer is taken through a matched probe
(``MPI_Mprobe``, :meth:`Guard.take_first`): its tag and length are read before any
receive is posted for it, so a peer that ran another call is caught by its first message,
which is then received whole into a buffer of its own size, and this rank raises
:class:`~collectives.executors.check.ArgumentMismatchError` naming the fields that differ,
before the data is reduced or copied anywhere.  A message is therefore never longer than
the receive it lands in (Open MPI 5.0.11 over shared memory with CMA writes such a message
whole past the buffer from about 8 KiB up).  Later receives take any tag: MPI matches a
pair's messages in order (the non-overtaking rule), so once a peer's first message carried
this call's signature, its k-th message is this call's k-th message to this rank, and
every step still compares the tags it received.  (Equal tags with unequal counts or
parameters need a 9-bit checksum collision, and equal first lengths too.)

On any failure the rank sends every other rank an empty message with a reserved tag
(so that a rank waiting on it sees that tag, at a probe or at a step's tag comparison,
and raises too instead of waiting forever; being empty, it fits any receive), the
receives still posted are cancelled, and every request is completed before its buffers
can be reused or released; a request that cannot be completed keeps its buffers alive
(:attr:`Guard.orphans`) and out of the workspace cache.  The communicator is then marked
unusable (:class:`CommunicatorBrokenError` on the next call): its private duplicate may
still hold messages of the failed call.

The check costs a matched probe per peer and call, a status per receive and one cached
look-up per call (``benchmarks/bench_mismatch_check.py`` measures it);
``algorithm="native"`` signs the hellos its ranks exchange first (:mod:`.hello`);
``check=True`` still runs the full agreement (:mod:`.check`).
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from typing import Any

from ..build import ALGORITHMS, COMPOSED
from ..errors import CollectivesError
from ..ops import DTYPES, OPS
from ..schedule import COLLECTIVES
from .buffers import discard
from .check import ArgumentMismatchError
from .plan import Plan, describe_step
from .runtime import RUNTIME

__all__ = ["CommunicatorBrokenError", "TagCodec", "SignedStep", "SignedPlan", "signed_plan",
           "CallContext", "Guard", "SEQUENCE_BITS"]

#: low tag bits that number a pair's messages within a call (modulo 2**SEQUENCE_BITS)
SEQUENCE_BITS = 6

#: (field, known values, bits) packed above the sequence number, lowest first
#: (op and dtype leave room for values the call may name beyond the known ones; the
#: collective and the algorithm take as many bits as the registry's names need, so that
#: each has its own code and a mismatch names it)
_FIELDS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("collective", COLLECTIVES, max(2, (len(COLLECTIVES) - 1).bit_length())),
    ("op", tuple(OPS), 4), ("dtype", DTYPES, 5),
    ("algorithm", (*ALGORITHMS, "native", *COMPOSED),
     max(3, (len(ALGORITHMS) + len(COMPOSED)).bit_length())))

#: bits of the checksum of count and parameters (the rest of a 31-bit tag)
_CHECKSUM_BITS = 31 - SEQUENCE_BITS - sum(bits for _, _, bits in _FIELDS)

#: seconds a failed call waits for cancelled requests to complete before leaving them
_CANCEL_WAIT_S = 1.0
#: a failed call then takes in what peers send until none has for this many seconds...
_QUIET_S = 0.1
#: ...or for at most this many
_DRAIN_S = 1.0


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
    ['collective: allreduce here, allgather at the sender']
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
    """One plan step with its tags: receives expect ``tags``, sends carry theirs.

    Attributes
    ----------
    first : int
        How many of the step's receives, from the start, are the call's first from their
        peer (:attr:`PlanStep.first`): the transport takes them through
        :meth:`Guard.take_first`.
    tags : tuple of int
        The tag each receive of the step must see, in the step's receive order.
    lengths : tuple of int
        The bytes each receive must see.
    sends : tuple of (slice, int, int)
        ``(byte_range, peer, tag)`` per send, as :attr:`PlanStep.sends` with signed tags.
    """

    first: int
    tags: tuple[int, ...]
    lengths: tuple[int, ...]
    sends: tuple[tuple[slice, int, int], ...]


@dataclass(frozen=True, slots=True)
class SignedPlan:
    """A plan's steps with the tags of one signature.

    Attributes
    ----------
    steps : tuple of SignedStep
        One per plan step.
    signature : int
        The tag of the call's first message (:meth:`TagCodec.base`): what the ranks agree
        on the first time a communicator runs the call (:mod:`.hello`).
    """

    steps: tuple[SignedStep, ...]
    signature: int = 0

#: signed plans kept (the same bound as the plan cache)
_SIGNED_CACHE_SIZE = 256


def signed_plan(plan: Plan, op: str, codec: TagCodec) -> SignedPlan:
    """Return ``plan``'s steps with the tags of a call with reduction ``op``.

    Parameters
    ----------
    plan : Plan
        The rank's plan.
    op : str
        The call's reduction.
    codec : TagCodec
        The transport's codec.

    Returns
    -------
    SignedPlan
        Cached per (plan, op) in :attr:`~.runtime.Runtime.signed`: a repeated call costs
        one dictionary look-up.
    """
    key = (plan, op)
    cache = RUNTIME.signed
    hit = cache.get(key)
    if hit is not None:
        return hit
    base = codec.base(plan.collective, plan.count, plan.dtype, op, plan.algorithm, plan.params)
    mask = (1 << SEQUENCE_BITS) - 1
    steps = tuple(SignedStep(step.first,
                             tuple(base | (tag & mask) for _, _, _, tag in step.recvs),
                             tuple(span.stop - span.start for _, span, _, _ in step.recvs),
                             tuple((span, peer, base | (tag & mask))
                                   for span, peer, tag in step.sends))
                  for step in plan.steps)
    signed = SignedPlan(steps, base)
    if len(cache) >= _SIGNED_CACHE_SIZE:
        cache.clear()
    cache[key] = signed
    return signed


@dataclass(frozen=True, slots=True)
class CallContext:
    """What the guard needs of the call whose step it completes: one per walk of a plan
    (a persistent binding keeps its own).

    Attributes
    ----------
    plan : Plan
        The rank's plan (the peer of each receive; the call, named in errors).
    signed : SignedPlan
        Its tags.
    op : str
        The call's reduction (named in errors).
    buffers : tuple of arrays
        Every buffer the call's requests read or write (kept alive if they cannot
        complete).
    """

    plan: Plan
    signed: SignedPlan
    op: str
    buffers: tuple[Any, ...]

    def describe(self, index: int) -> str:
        """Say which call and step ``index`` is, in a few words (for errors)."""
        return describe_step(self.plan, self.op, index)


class Guard:
    """Waits for a step, checks what arrived, and on failure cleans up and says why.

    One per transport (:class:`~.mpi.MpiTransport`).  The methods about a step take the
    call's :class:`CallContext` and the step's index.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI`` (``Status`` is all it asks of it here).
    comm : mpi4py.MPI.Intracomm
        The private communicator the steps run on.
    tag_ub : int
        ``MPI.TAG_UB``.

    Attributes
    ----------
    codec : TagCodec
        Packs signatures into tags.
    others : tuple of int
        Every other rank: a failing call sends each an empty message (:meth:`settle`).
    broken : str or None
        Why the communicator can no longer be used; None while it can.
    orphans : list
        ``(requests, buffers)`` that could not be completed; their buffers are kept alive
        here (and out of the workspace cache) for as long as the process lives.
    statuses : list of mpi4py.MPI.Status
        Filled by each step's ``Waitall``, reused from step to step; :meth:`fail` reads
        them.
    status : mpi4py.MPI.Status
        Filled by each matched probe (:meth:`take_first`).
    """

    def __init__(self, mpi: Any, comm: Any, tag_ub: int) -> None:
        self.mpi, self.comm = mpi, comm
        self.codec = TagCodec(tag_ub)
        self.rank = comm.Get_rank()
        self.others = tuple(peer for peer in range(comm.Get_size()) if peer != self.rank)
        self.broken: str | None = None
        self.orphans: list[tuple[list[Any], tuple[Any, ...]]] = []
        self.statuses: list[Any] = []
        self.status = mpi.Status()

    def check_usable(self) -> None:
        """Raise :class:`CommunicatorBrokenError` if a collective failed here before."""
        if self.broken is not None:
            raise CommunicatorBrokenError(
                f"a collective on this communicator failed earlier ({self.broken}); it may "
                f"still hold that call's messages, so no further collective can run on it: "
                f"use a new communicator (e.g. comm.Dup()) after handling the error")

    def take_first(self, into: list[Any], sends: list[Any], call: CallContext,
                   index: int) -> list[Any]:
        """Take the step's first messages from new peers through matched probes.

        Each of the step's first :attr:`PlanStep.first` receives is matched with
        ``MPI_Mprobe`` (any tag) and posted only when the message carries this call's tag
        and length; the step's sends must be posted before (a peer may be probing too).

        Parameters
        ----------
        into : list
            The buffer of each of those receives, in order.
        sends : list of mpi4py.MPI.Request
            The step's sends, already started (completed or kept on failure).
        call : CallContext
            The call.
        index : int
            The step's index in the plan.

        Returns
        -------
        list of mpi4py.MPI.Request
            The posted receives, in order.

        Raises
        ------
        ArgumentMismatchError
            When a message carries another call's signature or length (it is received
            whole into a buffer of its own size first); the communicator is then broken.
        """
        step, status = call.signed.steps[index], self.status
        mprobe, any_tag = self.comm.Mprobe, self.mpi.ANY_TAG
        taken = []
        for buffer, (_, _, peer, _), tag, length in zip(into, call.plan.steps[index].recvs,
                                                        step.tags, step.lengths):
            message = mprobe(peer, any_tag, status)
            if status.tag == tag and status.Get_count() == length:
                taken.append(message.Irecv(buffer))
                continue
            self.reject(message, len(taken), taken + sends, len(taken), call, index)
        return taken

    def reject(self, message: Any, k: int, requests: list[Any], nrecvs: int,
               call: CallContext, index: int) -> None:
        """Receive whole a first message that carries another call's tag or length (its
        probe's status in :attr:`status`), clean up (:meth:`settle`) and raise.

        Parameters
        ----------
        message : mpi4py.MPI.Message
            The message matched by the probe.
        k : int
            Which of the step's receives it was probed for.
        requests : list of mpi4py.MPI.Request
            The step's receives taken before it, then its sends (started).
        nrecvs : int
            How many of ``requests`` are receives.
        call, index
            As for :meth:`complete`.

        Raises
        ------
        ArgumentMismatchError
            Always; the communicator is then broken.
        """
        got, nbytes = self.status.tag, self.status.Get_count()
        message.Recv(bytearray(nbytes))
        step = call.signed.steps[index]
        reason = f"rank {self.rank}, {call.describe(index)}: " + self.stranger(
            call.plan.steps[index].recvs[k][2], got, step.tags[k], nbytes, step.lengths[k])
        self.settle(requests, nrecvs, call.buffers, reason)
        raise ArgumentMismatchError(reason + _HINT)

    def complete(self, requests: list[Any], call: CallContext, index: int) -> None:
        """Wait for a step's requests (its receives first) and check what arrived.

        Every step waits for its receives with statuses (Open MPI 5.0.11's ``MPI_Waitall``
        reports no error without them) and compares every receive's tag with the expected
        one (the empty message a failing rank sends fits any receive, and only its tag
        tells) before it waits for its sends, which may never complete when their
        receiver failed.

        Parameters
        ----------
        requests : list of mpi4py.MPI.Request
            The step's receives, in the plan step's ``recvs`` order, then its sends.
        call : CallContext
            The call (its plan, tags, op and buffers).
        index : int
            The step's index in the plan.

        Raises
        ------
        ArgumentMismatchError
            When a message carries another call's signature or a failing rank's tag, or
            did not fit (MPI truncated it); the communicator is then broken.
        CommunicatorBrokenError
            When MPI failed otherwise; the communicator is then broken.
        """
        problem = self.wait(requests, call.signed.steps[index].tags)
        if problem is not None:
            self.fail(requests, call, index, problem or None)

    def wait(self, requests: list[Any], tags: tuple[int, ...]) -> Any:
        """Wait for a step's receives with statuses, compare ``tags``, then wait for its sends.

        The fast half of :meth:`complete`, for walks that keep each step's tags: on a
        problem the caller hands what it returns to :meth:`fail`.

        Parameters
        ----------
        requests : list of mpi4py.MPI.Request
            The step's receives, then its sends.
        tags : tuple of int
            The tag each receive must carry.

        Returns
        -------
        None, mpi4py.MPI.Exception or False
            None when every request completed and every tag matched; else what MPI
            raised, or False for a tag that did not match.
        """
        mpi, statuses, nrecvs = self.mpi, self.statuses, len(tags)
        try:
            if nrecvs:
                mpi.Request.Waitall(requests[:nrecvs], statuses)
                for status, tag in zip(statuses, tags):
                    if status.tag != tag:
                        return False
            if len(requests) > nrecvs:
                mpi.Request.Waitall(requests[nrecvs:])
        except mpi.Exception as error:
            return error
        return None

    def fail(self, requests: list[Any], call: CallContext, index: int, error: Any) -> None:
        """Clean up after a failed step (:meth:`settle`) and raise, saying what arrived.

        Parameters
        ----------
        requests, call, index
            As for :meth:`complete`.
        error : mpi4py.MPI.Exception or None
            What MPI raised; None when the tags did not match.

        Raises
        ------
        ArgumentMismatchError
            When a message carries another call's signature or a failing rank's tag, or
            did not fit.
        CommunicatorBrokenError
            When MPI failed otherwise.
        """
        mpi, step = self.mpi, call.signed.steps[index]
        peers = tuple(peer for _, _, peer, _ in call.plan.steps[index].recvs)
        problems = self._problems(self.statuses, peers, step)
        if not problems and error is not None and error.Get_error_class() in (
                mpi.ERR_TRUNCATE, mpi.ERR_IN_STATUS):
            problems = [f"a message from rank {' or '.join(map(str, sorted(set(peers))))} "
                        f"did not fit its receive (MPI_ERR_TRUNCATE): that rank failed, or "
                        f"called differently"]
        reason = f"rank {self.rank}, {call.describe(index)}: " + (
            "; ".join(problems) or f"MPI failed: {error.Get_error_string()}")
        self.settle(requests, len(peers), call.buffers, reason)
        if problems:
            raise ArgumentMismatchError(reason + _HINT) from None
        raise CommunicatorBrokenError(reason) from error

    def _problems(self, statuses: list[Any], peers: tuple[int, ...],
                  step: SignedStep) -> list[str]:
        """What is wrong with each receive that completed, in words."""
        mpi, out = self.mpi, []
        for status, peer, tag, length in zip(statuses, peers, step.tags, step.lengths):
            error = status.Get_error()
            if error == mpi.ERR_TRUNCATE:
                out.append(f"the message from rank {peer} is longer than the {length} bytes "
                           f"this rank expects (MPI truncated it)" + self._sender(tag, status))
            elif error == mpi.SUCCESS and status.tag != tag:
                out.append(self.stranger(peer, status.tag, tag, status.Get_count(), length))
        return out

    def stranger(self, peer: int, got: int, tag: int, nbytes: int, length: int) -> str:
        """Say, in words, what a message from ``peer`` with tag ``got`` and ``nbytes`` bytes,
        where this call expects ``tag`` and ``length``, tells of its sender (a failing
        rank's note, another call, or another count).

        Examples
        --------
        >>> from types import SimpleNamespace
        >>> comm = SimpleNamespace(Get_rank=lambda: 0, Get_size=lambda: 2)
        >>> guard = Guard(SimpleNamespace(Status=lambda: None), comm, 2**31 - 1)
        >>> tag = guard.codec.base("allreduce", 4, "float32", "sum", "ring", ())
        >>> guard.stranger(1, guard.codec.base("allreduce", 4, "float32", "max", "ring", ()),
        ...                tag, 16, 16)
        'the message from rank 1 was sent by another call (op: sum here, max at the sender)'
        """
        if got == self.codec.poison:
            return (f"rank {peer} failed in this or an earlier call on this communicator "
                    f"and gave up (its own error says why)")
        if got != tag:
            fields = ", ".join(self.codec.differences(tag, got))
            return f"the message from rank {peer} was sent by another call ({fields})"
        return (f"the message from rank {peer} is {nbytes} bytes where this rank expects "
                f"{length}: it called with another count or parameters")

    def _sender(self, tag: int, status: Any) -> str:
        """`` (sent by another call: <fields>)`` when the status's tag is not ``tag``."""
        if status.tag == tag:
            return ""
        return f" (sent by another call: {', '.join(self.codec.differences(tag, status.tag))})"

    def settle(self, requests: list[Any], nrecvs: int, buffers: tuple[Any, ...],
               reason: str) -> None:
        """Mark broken, tell every other rank, cancel the receives, complete what completes,
        take in what peers still send.

        Every other rank (:attr:`others`) gets an empty message with the tag
        :attr:`TagCodec.poison`: it fits any receive, and the rank that takes it (at a
        probe, or at a step's tag comparison) raises too instead of waiting forever when
        the abort hooks are off.  Requests that do not complete within a second are kept,
        with their buffers.  Then every message that arrives is received whole into a
        buffer of its own size, until none has for :data:`_QUIET_S` (at most
        :data:`_DRAIN_S`): a peer's send to this rank completes, even a long one, so that
        peer reaches its own receive of the empty message.

        Parameters
        ----------
        requests : list of mpi4py.MPI.Request
            The failed call's requests, its ``nrecvs`` receives first.
        nrecvs : int
            How many of ``requests`` are receives (cancelled if still pending).
        buffers : tuple of arrays
            What the requests read or write (kept alive if they do not complete).
        reason : str
            Why the communicator is broken (:attr:`broken`).
        """
        mpi = self.mpi
        self.broken = reason
        comm, poison, empty = self.comm, self.codec.poison, bytearray()
        requests = requests + [comm.Isend(empty, peer, poison) for peer in self.others]
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
        self._drain()

    def _drain(self) -> None:
        """Receive whole whatever arrives, until none has for :data:`_QUIET_S` (at most
        :data:`_DRAIN_S`)."""
        mpi, status, improbe = self.mpi, self.status, self.comm.Improbe
        now = time.monotonic()
        quiet_until, deadline = now + _QUIET_S, now + _DRAIN_S
        while now < min(quiet_until, deadline):
            message = improbe(mpi.ANY_SOURCE, mpi.ANY_TAG, status)
            now = time.monotonic()
            if message is not None:
                message.Recv(bytearray(status.Get_count()))
                quiet_until = now + _QUIET_S


_HINT = ("; the ranks called different collectives or passed different arguments (with "
         "COLLSIM_CHECK=1 every rank names the difference before sending)")


def _done(mpi: Any, request: Any) -> bool:
    """Test ``request``; an error completes it too."""
    try:
        return request == mpi.REQUEST_NULL or bool(request.Test())
    except mpi.Exception:
        return True
