"""The MPI executor's one step walk, and what varies around it as strategies.

Every MPI walk in Python is :func:`walk`: per step, the staging strategy readies the
bytes the step sends (:class:`Staging`), the posting strategy posts its receives and sends
(:class:`Posting`), the guard waits for them and checks their tags
(:meth:`~.guard.Guard.complete`), the staging strategy brings what arrived to where it is
reduced, and the posting strategy applies the step's reductions and copies.

* Postings: :class:`Posted`, non-blocking sends and receives created per step (CuPy
  buffers), and :class:`~.persistent.Binding`, persistent requests created once (NumPy
  buffers, which the compiled walk of :mod:`.compiled` also runs).
* Stagings: None for host buffers, :class:`Direct` for device buffers handed to a
  CUDA-aware MPI (the stream synchronized before a step's messages only when GPU work was
  queued since), :class:`Staged` for device buffers through page-locked host mirrors.

Importing this module imports neither mpi4py nor CuPy.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .buffers import staged_done, staging
from .guard import CallContext, Guard
from .plan import Plan, PlanStep, apply_copies, apply_reduces

__all__ = ["Posting", "Staging", "Posted", "Direct", "Staged", "DeviceBytes", "walk"]


class Posting(Protocol):
    """How a walk posts a step's messages and applies what they brought."""

    def post(self, index: int, guard: Guard, call: CallContext) -> list[Any]:
        """Post step ``index``: its receives, in the plan step's order, then its sends."""

    def apply(self, index: int) -> None:
        """Apply step ``index``'s reductions and local copies."""


class Staging(Protocol):
    """Where a walk's messages go from and arrive to, and the copies between."""

    def before(self, step: PlanStep) -> None:
        """Ready the bytes ``step`` sends."""

    def after(self, step: PlanStep) -> None:
        """Bring what ``step`` received to the buffers it is reduced in."""

    def done(self) -> None:
        """The walk ended."""


def walk(guard: Guard, call: CallContext, posting: Posting, staged: Staging | None) -> None:
    """Run every step of ``call.plan``: stage, post, complete through the guard, apply.

    Parameters
    ----------
    guard : Guard
        The transport's guard.
    call : CallContext
        The call (its plan, tags, op and buffers).
    posting : Posting
        Posts each step and applies it.
    staged : Staging or None
        Moves bytes around each step; None for host buffers.

    Raises
    ------
    ArgumentMismatchError, CommunicatorBrokenError
        From the guard, when a step fails.
    """
    complete = guard.complete
    for index, step in enumerate(call.plan.steps):
        if staged is not None:
            staged.before(step)
        complete(posting.post(index, guard, call), call, index)
        if staged is not None:
            staged.after(step)
        posting.apply(index)
    if staged is not None:
        staged.done()


class DeviceBytes:
    """A device array's bytes, sliced into MPI buffers over its raw address.

    mpi4py would otherwise take each CuPy slice through DLPack (an exception and a capsule
    per message); ``MPI.buffer.fromaddress`` costs neither.  Only a CUDA-aware MPI reads
    these addresses.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI``.
    array : cupy.ndarray
        A contiguous device array.
    """

    __slots__ = ("ptr", "_fromaddress")

    def __init__(self, mpi: Any, array: Any) -> None:
        self.ptr, self._fromaddress = array.data.ptr, mpi.buffer.fromaddress

    def __getitem__(self, span: slice) -> Any:
        """Return the bytes ``span`` as an ``MPI.buffer``."""
        return self._fromaddress(self.ptr + span.start, span.stop - span.start)


class Posted:
    """Posting by non-blocking sends and receives, created anew for every step.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI``.
    comm : mpi4py.MPI.Intracomm
        The private communicator.
    plan : Plan
        The rank's plan.
    areas : tuple
        The bytes receives land in: the working buffer's, then the scratch buffer's
        (sliced by byte ranges); sends read the first.
    work, scratch : array
        The working and scratch buffers the reductions and copies apply to.
    reduce : ufunc
        The reduction.
    """

    def __init__(self, mpi: Any, comm: Any, plan: Plan, areas: tuple[Any, Any], work: Any,
                 scratch: Any, reduce: Any) -> None:
        self._irecv, self._isend, self._any_tag = comm.Irecv, comm.Isend, mpi.ANY_TAG
        self._steps, self._areas = plan.steps, areas
        self._work, self._scratch, self._reduce = work, scratch, reduce

    def post(self, index: int, guard: Guard, call: CallContext) -> list[Any]:
        """Post the step's receives, then its sends; a step with the call's first messages
        from some peers posts its sends first, takes those through
        :meth:`~.guard.Guard.take_first`, then posts the other receives."""
        step, areas, irecv, any_tag = self._steps[index], self._areas, self._irecv, \
            self._any_tag
        source, isend, first = areas[0], self._isend, step.first
        sends = call.signed.steps[index].sends
        if not first:
            requests = [irecv(areas[into_scratch][span], peer, any_tag)
                        for into_scratch, span, peer, _ in step.recvs]
            return requests + [isend(source[span], peer, tag) for span, peer, tag in sends]
        started = [isend(source[span], peer, tag) for span, peer, tag in sends]
        requests = guard.take_first([areas[into_scratch][span] for into_scratch, span, _, _
                                     in step.recvs[:first]], started, call, index)
        return requests + [irecv(areas[into_scratch][span], peer, any_tag)
                           for into_scratch, span, peer, _ in step.recvs[first:]] + started

    def apply(self, index: int) -> None:
        """Apply the step's reductions, then its copies."""
        step = self._steps[index]
        apply_reduces(self._work, self._scratch, step.reduces, self._reduce)
        if step.copies:
            apply_copies(self._work, step.copies)


class Direct:
    """Device buffers handed straight to a CUDA-aware MPI: the stream is synchronized
    before a step's messages only when GPU work was queued since (the input's layout,
    reductions, copies).

    Parameters
    ----------
    stream : cupy.cuda.Stream
        The call's stream.
    """

    def __init__(self, stream: Any) -> None:
        self._stream, self._queued = stream, True

    def before(self, step: PlanStep) -> None:
        """Synchronize the stream if GPU work was queued since the last time."""
        if self._queued:
            self._stream.synchronize()

    def after(self, step: PlanStep) -> None:
        """Note whether the step queues GPU work (its reductions and copies)."""
        self._queued = bool(step.reduces or step.copies)

    def done(self) -> None:
        """Nothing to do."""


class Staged:
    """Device buffers through page-locked host mirrors of work and scratch.

    The mirrors belong to ``stream`` (:func:`~.buffers.staging`): the copies of a call
    read them on that stream, and the next call on it waits for the event recorded after
    the last of them before writing them again.  Messages go from and to the mirrors; the
    reductions stay on the GPU.

    Parameters
    ----------
    work, scratch : cupy.ndarray
        The call's working and scratch buffers.
    count, scratch_count : int
        Their elements.
    stream : cupy.cuda.Stream
        The call's stream.
    """

    def __init__(self, work: Any, scratch: Any, count: int, scratch_count: int,
                 stream: Any) -> None:
        host, host_scratch = staging(work.dtype, count, scratch_count, stream)
        self.mirrors = (host.view(np.uint8), host_scratch.view(np.uint8))
        self._device = (work.view("uint8"), scratch.view("uint8"))
        self._stream = stream

    def before(self, step: PlanStep) -> None:
        """Copy the bytes the step sends to the host mirror, and wait for them."""
        device, host, stream = self._device[0], self.mirrors[0], self._stream
        for span, _, _ in step.sends:
            device[span].get(stream=stream, out=host[span])
        stream.synchronize()

    def after(self, step: PlanStep) -> None:
        """Copy what the step received from the mirrors to the device."""
        for into_scratch, span, _, _ in step.recvs:
            self._device[into_scratch][span].set(self.mirrors[into_scratch][span],
                                                 stream=self._stream)

    def done(self) -> None:
        """Record the event the next call on the stream waits for (:func:`~.buffers.staged_done`)."""
        staged_done(self._stream, *self.mirrors)
