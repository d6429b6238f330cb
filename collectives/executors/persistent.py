"""The fast MPI walk on host buffers: a plan bound once to its buffers as persistent requests.

A :class:`Binding` is one rank's :class:`~.plan.Plan` bound to one working buffer and one
scratch buffer: every send and every receive of every step is created once as a persistent
request (``Recv_init`` / ``Send_init``, with the plan's peers, on the transport's private
communicator; sends carry the call's signed tags and receives take any tag, as in the
non-persistent walk, so the :class:`~.guard.Guard` checks them), except the call's first
receive from each peer, which the guard takes through a matched probe on every call
(:meth:`~.guard.Guard.take_first`), and every reduction and local copy once as a pair of
array views.  A call then costs, per step, one ``Startall`` (two, and a probe per new peer,
at the steps that first hear from a peer), the guard's wait (``Waitall`` with statuses,
and the tags compared) and one ufunc call per reduction (``reduce(into, source,
out=into)``, or ``reduce(source, into, out=into)`` for a receive that swaps: in place, no
temporaries); nothing is sliced or parsed.

Bindings are cached per transport by (plan, reduction, buffer addresses, taken with
``MPI.Get_address``): calls that reuse their buffers, as applications and benchmarks do,
reuse the requests.  A binding refers to its
buffers by address (``MPI.buffer.fromaddress``), so it keeps no user array alive; it is
looked up only for a buffer at the same address with the same size and dtype, whose
memory therefore covers every range the binding touches.  The least recently used
bindings are freed first (their requests with ``Request.Free``).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..ops import reducer
from .compiled import (DTYPE_CODES, FIRST_MISMATCH, OP_CODES, RAISED, TAG_MISMATCH, Flat,
                       FlatStep, supports)
from .guard import Guard, SignedPlan, SignedStep
from .plan import Plan, PlanStep, describe_step

__all__ = ["BINDINGS_PER_COMM", "Binding", "BoundStep", "PersistentPlans", "bind"]

#: bindings kept per communicator (least recently used freed first)
BINDINGS_PER_COMM = 64

Views = tuple[tuple[np.ndarray, np.ndarray], ...]
#: per reduction ``(left, right, into)``: ``reduce(left, right, out=into)``
Reductions = tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]


@dataclass(frozen=True, slots=True)
class Binding:
    """A plan bound to buffers: per step, its persistent requests, reductions and copies.

    Attributes
    ----------
    plan : Plan
        The plan bound (kept so the cache can tell a recycled ``id`` from the same plan).
    reduce : numpy.ufunc
        The reduction.
    steps : tuple of BoundStep
        One per plan step.
    flat : Flat or None
        The same steps as the compiled walk's table, when it runs them.
    """

    plan: Plan
    reduce: Any
    steps: tuple["BoundStep", ...]
    flat: Flat | None = None

    def free(self) -> None:
        """Free every persistent request (the binding must not be run afterwards)."""
        for step in self.steps:
            for request in step.requests:
                request.Free()


@dataclass(frozen=True, slots=True)
class BoundStep:
    """One step of a :class:`Binding`.

    Attributes
    ----------
    requests : list of mpi4py.MPI.Prequest
        The step's persistent receives, then its persistent sends.
    first : tuple of numpy.ndarray
        The byte views the step's first receives from new peers land in (empty at steps
        that hear from no new peer); those receives are taken through the guard's probes
        after the sends start, and the persistent receives start after them.
    receives, sends : list of mpi4py.MPI.Prequest
        ``requests`` split: the receives are waited for (and their tags compared) before
        the sends.
    tags : tuple of int
        The tag each receive must carry, in the plan's receive order.
    reduces : tuple of (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        ``(left, right, into)`` per reduction: ``(work_view, scratch_view, work_view)``,
        or ``(scratch_view, work_view, work_view)`` where the receive swaps.
    copies : tuple of (numpy.ndarray, numpy.ndarray)
        ``(source, destination)`` views per copy, applied in order (where a copy's
        destination overlaps a copy's source, through a staging area allocated with the
        binding: every source into it first, then out of it).
    """

    requests: list[Any]
    first: tuple[np.ndarray, ...]
    receives: list[Any]
    sends: list[Any]
    tags: tuple[int, ...]
    reduces: Reductions
    copies: Views


def _over(mpi: Any, array: np.ndarray, count: int) -> np.ndarray:
    """A NumPy array of ``count`` elements over ``array``'s memory that does not own it."""
    nbytes = count * array.dtype.itemsize
    memory = mpi.buffer.fromaddress(array.ctypes.data, nbytes) if nbytes else bytearray()
    return np.frombuffer(memory, np.uint8).view(array.dtype)


def _overlaps(a: slice, b: slice) -> bool:
    return a.start < b.stop and b.start < a.stop


def _copy_rows(copies: tuple[tuple[slice, slice], ...]
               ) -> tuple[list[tuple[int, int, int, int, int]], int]:
    """A step's copies as ``(source_in_stage, source, destination_in_stage, destination,
    elements)`` rows, applied in order: directly when no destination overlaps a source,
    else through a staging area (every source copied into it before any destination is
    written); and the staging elements that needs."""
    if not any(_overlaps(dst, src) for _, dst in copies for src, _ in copies):
        return [(0, source.start, 0, destination.start, source.stop - source.start)
                for source, destination in copies], 0
    into, out_of, offset = [], [], 0
    for source, destination in copies:
        length = source.stop - source.start
        into.append((0, source.start, 1, offset, length))
        out_of.append((1, offset, 0, destination.start, length))
        offset += length
    return into + out_of, offset


def _operands(into: np.ndarray, source: np.ndarray,
              swap: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(left, right, into)`` of one reduction: the received ``source`` on the right, or
    on the left where the receive swaps."""
    return (source, into, into) if swap else (into, source, into)


def _send_buffers(plan: Plan, work: np.ndarray, send: np.ndarray | None) -> list[list[Any]]:
    """Per step, the bytes each send reads: ranges of ``work``, except that the first step
    reads the input's ranges from ``send``, which the caller copied into ``work`` just
    before: the same bytes, but a peer reading memory just written, still in this core's
    cache, took 1.5-4x as long (measured, 2 ranks on 2 cores, 1 MiB per rank: 158-432 us
    from the fresh copy, 105 us from the send buffer).
    """
    whole = work.view(np.uint8)
    out = [[whole[span] for span, _, _ in step.sends] for step in plan.steps]
    if send is not None and plan.steps:
        low, high = plan.input.start * work.itemsize, plan.input.stop * work.itemsize
        given = send.view(np.uint8)
        out[0] = [given[span.start - low:span.stop - low]
                  if low <= span.start and span.stop <= high else whole[span]
                  for span, _, _ in plan.steps[0].sends]
    return out


def bind(mpi: Any, comm: Any, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
         scratch: np.ndarray, send: np.ndarray | None = None, kernel: Any = None) -> Binding:
    """Create the persistent requests and views that run ``plan`` on these buffers.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI``.
    comm : mpi4py.MPI.Intracomm
        The private communicator the requests are created on.
    plan : Plan
        The rank's plan.
    signed : SignedPlan
        The plan's steps with the call's signed tags (:func:`~.guard.signed_plan`).
    op : str
        The reduction, a key of :data:`~collectives.ops.ALL_OPS`.
    work, scratch : numpy.ndarray
        The working buffer (``plan.count`` elements) and the scratch buffer (at least
        ``plan.scratch_count`` elements), contiguous, of the plan's dtype.
    send : numpy.ndarray, optional
        The input the caller copies into ``plan.input`` of ``work`` before each run (out
        of place); the first step's sends of the input read it there instead.

    Returns
    -------
    Binding
    """
    if send is not None:
        send = _over(mpi, send, plan.input.stop - plan.input.start)
    work = _over(mpi, work, plan.count)
    scratch = _over(mpi, scratch, plan.scratch_count)
    copies = [_copy_rows(step.copies) for step in plan.steps]
    stage = np.empty(max((staged for _, staged in copies), default=0), work.dtype)
    areas = (work.view(np.uint8), scratch.view(np.uint8))
    steps, flat_steps = [], []
    for step, signed_step, sources, (rows, _) in zip(plan.steps, signed.steps,
                                                     _send_buffers(plan, work, send), copies):
        first = tuple(areas[into_scratch][span]
                      for into_scratch, span, _, _ in step.recvs[:step.first])
        receives = [comm.Recv_init(areas[into_scratch][span], peer, mpi.ANY_TAG)
                    for into_scratch, span, peer, _ in step.recvs[step.first:]]
        sends = [comm.Send_init(source, peer, tag)
                 for source, (_, peer, tag) in zip(sources, signed_step.sends)]
        reduces = tuple(_operands(work[target], scratch[source], swap)
                        for target, source, swap in step.reduces)
        views = tuple(((work, stage)[a][s:s + n], (work, stage)[b][d:d + n])
                      for a, s, b, d, n in rows)
        steps.append(BoundStep(receives + sends, first, receives, sends, signed_step.tags,
                               reduces, views))
        if kernel is not None:
            flat_steps.append(_flat_step(mpi, step, signed_step, areas, receives + sends, rows,
                                   work.itemsize))
    flat = None
    if kernel is not None:
        codes = (DTYPE_CODES.get(plan.dtype, 0), OP_CODES.get(op, 0))
        flat = Flat(mpi, comm, flat_steps, (*areas, stage.view(np.uint8)), *codes)
    return Binding(plan, reducer(np, op), tuple(steps), flat)


def _flat_step(mpi: Any, step: PlanStep, signed: SignedStep, areas: tuple[np.ndarray, ...],
               requests: list[Any], copies: list[tuple[int, int, int, int, int]],
               itemsize: int) -> FlatStep:
    """A bound step as the compiled walk's table holds it (:mod:`.compiled`)."""
    receives = [(peer, tag, length, areas[into_scratch][span].ctypes.data)
                for (into_scratch, span, peer, _), tag, length
                in zip(step.recvs, signed.tags, signed.lengths)]
    reduces = [(target.start, source.start, target.stop - target.start, swap)
               for target, source, swap in step.reduces]
    return FlatStep(step.first, receives, [mpi._handleof(r) for r in requests],
                    len(step.sends), reduces,
                    [(a, s * itemsize, b, d * itemsize, n * itemsize) for a, s, b, d, n in copies])


class PersistentPlans:
    """The bindings of one communicator, and the walk that runs them.

    Parameters
    ----------
    mpi : module
        ``mpi4py.MPI``.
    comm : mpi4py.MPI.Intracomm
        The private communicator.
    guard : Guard
        Its guard: each step completes through it (signed tags, the failure message).
    kernel : ctypes function, optional
        The compiled walk (:func:`~.compiled.kernel`): it runs every binding whose
        reductions it has (:func:`~.compiled.supports`); the Python walk runs the others.
    agree : callable, optional
        ``agree(plan, signed, op)``, called before a plan is bound
        (:meth:`~.mpi.MpiTransport.agree`): every binding runs a call the ranks agreed on.
    """

    def __init__(self, mpi: Any, comm: Any, guard: Guard, kernel: Any = None,
                 agree: Any = None) -> None:
        self._mpi, self._comm, self._guard, self._kernel = mpi, comm, guard, kernel
        self._agree = agree
        self._startall, self._address = mpi.Prequest.Startall, mpi.Get_address
        self._bindings: OrderedDict[tuple, Binding] = OrderedDict()

    def __len__(self) -> int:
        return len(self._bindings)

    def walks(self) -> dict[str, int]:
        """How many of the cached bindings each walk runs: ``compiled`` and ``python``."""
        compiled = sum(binding.flat is not None for binding in self._bindings.values())
        return {"compiled": compiled, "python": len(self._bindings) - compiled}

    def run(self, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
            scratch: np.ndarray, send: np.ndarray | None = None) -> None:
        """Run ``plan`` on ``work`` (updated in place), binding it first on a cache miss.

        Each step waits as :meth:`~.guard.Guard.wait` does; on a failure
        :meth:`~.guard.Guard.fail` cancels the receives, marks the communicator broken and
        raises.

        Parameters
        ----------
        plan : Plan
            The rank's plan.
        signed : SignedPlan
            Its steps with the call's signed tags.
        op : str
            The call's reduction (bindings are kept per reduction: the tags differ).
        work : numpy.ndarray
            The working buffer, ``plan.count`` contiguous elements.
        scratch : numpy.ndarray
            Scratch of at least ``plan.scratch_count`` elements.
        send : numpy.ndarray, optional
            The input just copied into ``work`` (out of place), for :func:`bind`.
        """
        if not plan.steps:
            return
        address = self._address
        key = (id(plan), op, address(work), address(scratch),
               None if send is None else address(send))
        bindings = self._bindings
        binding = bindings.get(key)
        if binding is None or binding.plan is not plan:
            if self._agree is not None:
                self._agree(plan, signed, op)  # may free every binding
            binding = bindings.pop(key, None)
            if binding is not None:
                binding.free()
            binding = bindings[key] = self.bind(plan, signed, op, work, scratch, send)
            if len(bindings) > BINDINGS_PER_COMM:
                bindings.popitem(last=False)[1].free()
        else:
            bindings.move_to_end(key)
        try:
            self.walk(binding, signed, op, work, scratch)
        except BaseException:
            del bindings[key]  # its requests may still be active: never start them again
            raise

    def bind(self, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
             scratch: np.ndarray, send: np.ndarray | None = None) -> Binding:
        """:func:`bind` on this communicator, laid out for the compiled walk where it runs
        the plan's reductions (every plan without any)."""
        kernel = self._kernel if self._kernel is not None and (
            supports(work.dtype, op) or not any(step.reduces for step in plan.steps)) else None
        return bind(self._mpi, self._comm, plan, signed, op, work, scratch, send, kernel)

    def walk(self, binding: Binding, signed: SignedPlan, op: str, work: np.ndarray,
             scratch: np.ndarray) -> None:
        """Run a binding's steps, in one call of the compiled walk where it has a table,
        else in Python (:meth:`walk_python`).

        Parameters
        ----------
        binding : Binding
            Created by :meth:`bind`.
        signed, op, work, scratch
            What it was bound with (``work`` and ``scratch`` only for the failure path).

        Raises
        ------
        ArgumentMismatchError, CommunicatorBrokenError
            From the guard, when a step fails.
        """
        if binding.flat is None:
            self.walk_python(binding, signed, op, work, scratch)
            return
        code = self._kernel(*binding.flat.args)
        if code:
            self._flat_failed(binding, signed, op, code, work, scratch)

    def walk_python(self, binding: Binding, signed: SignedPlan, op: str, work: np.ndarray,
                    scratch: np.ndarray) -> None:
        """:meth:`walk` in Python: per step ``Startall`` (with the guard's probes at steps
        that first hear from a peer), the guard's wait, the reductions and copies."""
        mpi, startall, copyto = self._mpi, self._startall, np.copyto
        # Guard.wait, inlined: a call per step is a tenth of a small step's cost
        waitall, statuses, reduce = mpi.Request.Waitall, self._guard.statuses, binding.reduce
        for index, step in enumerate(binding.steps):
            receives, sends = step.receives, step.sends
            if step.first:
                receives = self._take_first(binding, signed, op, index, work, scratch)
            elif step.requests:
                startall(step.requests)
            try:
                if receives:
                    waitall(receives, statuses)
                    for status, tag in zip(statuses, step.tags):
                        if status.tag != tag:
                            self._fail(binding, signed, op, index, receives + sends,
                                       (work, scratch))
                if sends:
                    waitall(sends)
            except mpi.Exception as error:
                self._fail(binding, signed, op, index, receives + sends, (work, scratch), error)
            for left, right, into in step.reduces:
                reduce(left, right, out=into)
            for source, destination in step.copies:
                copyto(destination, source)

    def _take_first(self, binding: Binding, signed: SignedPlan, op: str, index: int,
                    work: np.ndarray, scratch: np.ndarray) -> list[Any]:
        """Start a step's sends, take its first receives through the guard's probes,
        start its other receives; return the receives."""
        step = binding.steps[index]
        if step.sends:
            self._startall(step.sends)
        taken = self._guard.take_first(self._mpi, list(step.first), binding.plan.steps[index],
                                       signed, index, step.sends, (work, scratch),
                                       partial(describe_step, binding.plan, op))
        if step.receives:
            self._startall(step.receives)
        return taken + step.receives

    def _flat_failed(self, binding: Binding, signed: SignedPlan, op: str, code: int,
                     work: np.ndarray, scratch: np.ndarray) -> None:
        """Raise as the Python walk would where the compiled walk stopped with ``code``:
        the requests it left, wrapped back as mpi4py objects, and the statuses it filled
        go to the guard."""
        mpi, flat = self._mpi, binding.flat
        assert flat is not None, "only the compiled walk stops with a code"
        index, detail = flat.stopped()
        if code == RAISED:
            raise mpi.Exception(detail)
        step, h0 = binding.steps[index], int(flat.rows[index])
        taken = [mpi.Request.fromhandle(handle) for handle in
                 flat.handles(h0, detail if code == FIRST_MISMATCH else h0 + len(step.first))]
        if code == FIRST_MISMATCH:
            flat.status_into(detail, self._guard.status, mpi)
            self._guard.reject(mpi, flat.message(mpi), detail - h0, binding.plan.steps[index],
                               signed, index, taken + step.sends, len(taken), (work, scratch),
                               partial(describe_step, binding.plan, op))
        receives = taken + step.receives
        statuses = self._guard.statuses
        statuses.extend(mpi.Status() for _ in range(len(receives) - len(statuses)))
        for row, status in zip(range(h0, h0 + len(receives)), statuses):
            flat.status_into(row, status, mpi)
        self._fail(binding, signed, op, index, receives + step.sends, (work, scratch),
                   None if code == TAG_MISMATCH else mpi.Exception(detail))

    def _fail(self, binding: Binding, signed: SignedPlan, op: str, index: int,
              requests: list[Any], buffers: tuple[np.ndarray, ...], error: Any = None) -> None:
        """Hand a failed step to :meth:`~.guard.Guard.fail`, which cleans up and raises."""
        self._guard.fail(self._mpi, requests, binding.plan.steps[index], signed, index, buffers,
                         partial(describe_step, binding.plan, op), error)

    def free(self) -> None:
        """Free every binding's requests."""
        while self._bindings:
            self._bindings.popitem()[1].free()
