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

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np

from ..ops import reducer
from .compiled import (DTYPE_CODES, FIRST_MISMATCH, OP_CODES, RAISED, TAG_MISMATCH, Flat,
                       FlatStep, supports)
from .guard import CallContext, Guard, SignedPlan, SignedStep
from .plan import Plan, PlanStep
from .walk import walk

__all__ = ["BINDINGS_PER_COMM", "Binding", "BoundStep", "PersistentPlans", "HeldPlan", "Views",
           "bind"]

#: bindings kept per communicator (least recently used freed first)
BINDINGS_PER_COMM = 64

#: ``(source, destination)`` array views, copied in order
Views = tuple[tuple[np.ndarray, np.ndarray], ...]
#: per reduction ``(left, right, into)``: ``reduce(left, right, out=into)``
Reductions = tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]


@dataclass(frozen=True, slots=True)
class Binding:
    """A plan bound to buffers: per step, its persistent requests, reductions and copies.

    The posting of :func:`~.walk.walk` (:class:`~.walk.Posting`) for NumPy buffers.

    Attributes
    ----------
    plan : Plan
        The plan bound.
    signed : SignedPlan
        Its tags.
    op : str
        The reduction's name.
    reduce : numpy.ufunc
        The reduction.
    steps : tuple of BoundStep
        One per plan step.
    startall : callable
        ``MPI.Prequest.Startall``.
    flat : Flat or None
        The same steps as the compiled walk's table, when it runs them.
    """

    plan: Plan
    signed: SignedPlan
    op: str
    reduce: Any
    steps: tuple["BoundStep", ...]
    startall: Any
    flat: Flat | None = None

    def post(self, index: int, guard: Guard, call: CallContext) -> list[Any]:
        """Start step ``index``'s requests; at a step that first hears from some peers, its
        sends, then its first receives through the guard's probes, then the others."""
        step = self.steps[index]
        if not step.first:
            if step.requests:
                self.startall(step.requests)
            return step.requests
        if step.sends:
            self.startall(step.sends)
        taken = guard.take_first(list(step.first), step.sends, call, index)
        if step.receives:
            self.startall(step.receives)
        return taken + step.requests

    def apply(self, index: int) -> None:
        """Apply step ``index``'s reductions (in place, on the bound views) and copies."""
        step, reduce = self.steps[index], self.reduce
        for left, right, into in step.reduces:
            reduce(left, right, out=into)
        for source, destination in step.copies:
            np.copyto(destination, source)

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
    """A step's copies as ``(source_area, source, destination_area, destination,
    elements)`` rows, areas :data:`WORK` and :data:`STAGE`, applied in order: directly when
    no destination overlaps a source, else through a staging area (every source copied
    into it before any destination is written); and the staging elements that needs."""
    if not any(_overlaps(dst, src) for _, dst in copies for src, _ in copies):
        return [(WORK, source.start, WORK, destination.start, source.stop - source.start)
                for source, destination in copies], 0
    into, out_of, offset = [], [], 0
    for source, destination in copies:
        length = source.stop - source.start
        into.append((WORK, source.start, STAGE, offset, length))
        out_of.append((STAGE, offset, WORK, destination.start, length))
        offset += length
    return into + out_of, offset


#: the areas a binding's copies read and write, by index (the compiled walk's order)
WORK, STAGE, SEND, RECV = range(4)


@dataclass(frozen=True, slots=True)
class _Memory:
    """Where a binding's element ranges lie: the working buffer and the copies' staging
    area, and, for a plan bound directly (:func:`~.plan.binds_directly`), the caller's
    input and output at the plan's input and output ranges (the output alone where the two
    ranges are one).

    Attributes
    ----------
    areas : tuple of numpy.ndarray
        Element arrays, indexed by :data:`WORK`, :data:`STAGE`, :data:`SEND`, :data:`RECV`
        (the last two empty unless bound directly).
    direct : tuple of slice
        The ranges bound to :data:`SEND` and :data:`RECV` (the first empty where the
        output alone is), or empty where nothing is bound directly.
    """

    areas: tuple[np.ndarray, ...]
    direct: tuple[slice, ...]

    def place(self, start: int, stop: int) -> tuple[int, int]:
        """The area and the offset in it of the working buffer's elements ``start`` to
        ``stop`` (a range wholly inside the input or output, or outside both)."""
        for area, region in zip((SEND, RECV), self.direct):
            if region.start <= start and stop <= region.stop:
                return area, start - region.start
        return WORK, start

    def elements(self, span: slice) -> np.ndarray:
        """The working buffer's elements ``span``, where they lie."""
        area, offset = self.place(span.start, span.stop)
        return self.areas[area][offset:offset + span.stop - span.start]

    def bytes(self, span: slice) -> np.ndarray:
        """The working buffer's bytes ``span``, where they lie."""
        size = self.areas[WORK].itemsize
        return self.elements(slice(span.start // size, span.stop // size)).view(np.uint8)

    def rows(self, rows: list[tuple[int, int, int, int, int]]
             ) -> list[tuple[int, int, int, int, int]]:
        """Copy rows of :func:`_copy_rows` with their working-buffer ranges placed."""
        if not self.direct:
            return rows
        placed = []
        for a, s, b, d, n in rows:
            a, s = self.place(s, s + n) if a == WORK else (a, s)
            b, d = self.place(d, d + n) if b == WORK else (b, d)
            placed.append((a, s, b, d, n))
        return placed


def _operands(into: np.ndarray, source: np.ndarray,
              swap: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(left, right, into)`` of one reduction: the received ``source`` on the right, or
    on the left where the receive swaps."""
    return (source, into, into) if swap else (into, source, into)


def _send_buffers(plan: Plan, memory: _Memory, send: np.ndarray | None) -> list[list[Any]]:
    """Per step, the bytes each send reads, where they lie (:class:`_Memory`), except that,
    out of place and not bound directly, the first step reads the input's ranges from
    ``send``, which the caller copied into the working buffer just before: the same bytes,
    but a peer reading memory just written, still in this core's cache, took 1.5-4x as
    long (measured, 2 ranks on 2 cores, 1 MiB per rank: 158-432 us from the fresh copy,
    105 us from the send buffer).
    """
    out = [[memory.bytes(span) for span, _, _ in step.sends] for step in plan.steps]
    if send is not None and not memory.direct and plan.steps:
        low, high = plan.input.start * send.itemsize, plan.input.stop * send.itemsize
        given = send.view(np.uint8)
        out[0] = [given[span.start - low:span.stop - low]
                  if low <= span.start and span.stop <= high else memory.bytes(span)
                  for span, _, _ in plan.steps[0].sends]
    return out


def bind(mpi: Any, comm: Any, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
         scratch: np.ndarray, send: np.ndarray | None = None, kernel: Any = None,
         recv: np.ndarray | None = None) -> Binding:
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
        The input: bound directly with ``recv``, else the one the caller copies into
        ``plan.input`` of ``work`` before each run (out of place), which the first step's
        sends of the input read instead.
    kernel : ctypes function, optional
        The compiled walk, to lay the binding out for (:class:`~.compiled.Flat`).
    recv : numpy.ndarray, optional
        The output, for a plan that :func:`~.plan.binds_directly`: the plan's output
        range is then ``recv`` itself, and its input range ``send`` (``"both"``) or, with
        ``send`` None, ``recv`` too (``"output"``: the caller copies the input into it
        before each run); ``work`` holds only the rest.

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
    if recv is not None:
        output = _over(mpi, recv, plan.output.stop - plan.output.start)
        memory = _Memory((work, stage, work[:0] if send is None else send, output),
                         (slice(0, 0) if send is None else plan.input, plan.output))
    else:
        memory = _Memory((work, stage, work[:0], work[:0]), ())
    areas = (work.view(np.uint8), scratch.view(np.uint8))
    steps, flat_steps = [], []
    for step, signed_step, sources, (rows, _) in zip(plan.steps, signed.steps,
                                                     _send_buffers(plan, memory, send), copies):
        rows = memory.rows(rows)
        landing = [areas[1][span] if into_scratch else memory.bytes(span)
                   for into_scratch, span, _, _ in step.recvs]
        first = tuple(landing[:step.first])
        receives = [comm.Recv_init(view, peer, mpi.ANY_TAG)
                    for view, (_, _, peer, _) in zip(landing[step.first:],
                                                     step.recvs[step.first:])]
        sends = [comm.Send_init(source, peer, tag)
                 for source, (_, peer, tag) in zip(sources, signed_step.sends)]
        reduces = tuple(_operands(memory.elements(target), scratch[source], swap)
                        for target, source, swap in step.reduces)
        views = tuple((memory.areas[a][s:s + n], memory.areas[b][d:d + n])
                      for a, s, b, d, n in rows)
        steps.append(BoundStep(receives + sends, first, receives, sends, signed_step.tags,
                               reduces, views))
        if kernel is not None:
            flat_steps.append(_flat_step(mpi, step, signed_step, landing, receives + sends,
                                         rows, memory))
    flat = None
    if kernel is not None:
        codes = (DTYPE_CODES.get(plan.dtype, 0), OP_CODES.get(op, 0))
        flat = Flat(mpi, comm, flat_steps, (*areas, *(area.view(np.uint8)
                                                      for area in memory.areas[STAGE:])),
                    *codes)
    return Binding(plan, signed, op, reducer(np, op), tuple(steps), mpi.Prequest.Startall, flat)


def _flat_step(mpi: Any, step: PlanStep, signed: SignedStep, landing: list[np.ndarray],
               requests: list[Any], copies: list[tuple[int, int, int, int, int]],
               memory: _Memory) -> FlatStep:
    """A bound step as the compiled walk's table holds it (:mod:`.compiled`), its receives
    landing in the byte views ``landing``, its copies ``copies`` (placed, in elements)."""
    receives = [(peer, tag, length, view.ctypes.data)
                for (_, _, peer, _), tag, length, view
                in zip(step.recvs, signed.tags, signed.lengths, landing)]
    reduces = []
    for target, source, swap in step.reduces:
        area, at = memory.place(target.start, target.stop)
        reduces.append((at, source.start, target.stop - target.start, swap, area))
    itemsize = memory.areas[WORK].itemsize
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
        reductions it has (:func:`~.compiled.supports`); :func:`~.walk.walk` runs the others.
    agree : callable, optional
        ``agree(plan, signed, op)``, called before a plan is bound
        (:meth:`~.mpi.MpiTransport.agree`): every binding runs a call the ranks agreed on.
    """

    def __init__(self, mpi: Any, comm: Any, guard: Guard, kernel: Any = None,
                 agree: Any = None) -> None:
        self.mpi, self._comm, self._guard, self.kernel = mpi, comm, guard, kernel
        self._agree = agree
        self._address = mpi.Get_address
        self._bindings: OrderedDict[tuple, Binding] = OrderedDict()

    def __len__(self) -> int:
        return len(self._bindings)

    def walks(self) -> dict[str, int]:
        """How many of the cached bindings each walk runs: ``compiled`` and ``python``."""
        compiled = sum(binding.flat is not None for binding in self._bindings.values())
        return {"compiled": compiled, "python": len(self._bindings) - compiled}

    def run(self, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
            scratch: np.ndarray, send: np.ndarray | None = None,
            recv: np.ndarray | None = None) -> None:
        """Run ``plan`` on ``work`` (updated in place), binding it first on a cache miss.

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
            The input just copied into ``work`` (out of place), or, with ``recv``, bound
            directly (:func:`bind`).
        recv : numpy.ndarray, optional
            The output, for a plan bound directly to ``send`` and ``recv``.

        Raises
        ------
        ArgumentMismatchError, CommunicatorBrokenError
            From the guard, when a step fails (the communicator is then broken).
        """
        if not plan.steps:
            return
        address = self._address
        key = (plan, op, address(work), address(scratch),
               None if send is None else address(send), None if recv is None else address(recv))
        bindings = self._bindings
        binding = bindings.get(key)
        if binding is None:
            if self._agree is not None:
                self._agree(plan, signed, op)  # may free every binding
            binding = bindings[key] = self.bind(plan, signed, op, work, scratch, send, recv)
            if len(bindings) > BINDINGS_PER_COMM:
                bindings.popitem(last=False)[1].free()
        else:
            bindings.move_to_end(key)
        try:
            self.walk(binding, work, scratch)
        except BaseException:
            del bindings[key]  # its requests may still be active: never start them again
            raise

    def bind(self, plan: Plan, signed: SignedPlan, op: str, work: np.ndarray,
             scratch: np.ndarray, send: np.ndarray | None = None,
             recv: np.ndarray | None = None) -> Binding:
        """:func:`bind` on this communicator, laid out for the compiled walk where it runs
        the plan's reductions (every plan without any)."""
        kernel = self.kernel if self.kernel is not None and (
            supports(work.dtype, op) or not any(step.reduces for step in plan.steps)) else None
        return bind(self.mpi, self._comm, plan, signed, op, work, scratch, send, kernel, recv)

    def walk(self, binding: Binding, work: np.ndarray, scratch: np.ndarray) -> None:
        """Run a binding's steps, in one call of the compiled walk where it has a table,
        else through :func:`~.walk.walk`.

        Parameters
        ----------
        binding : Binding
            Created by :meth:`bind`.
        work, scratch : numpy.ndarray
            What it was bound to (kept alive on a failure that leaves requests pending).

        Raises
        ------
        ArgumentMismatchError, CommunicatorBrokenError
            From the guard, when a step fails.
        """
        if binding.flat is None:
            walk(self._guard, CallContext(binding.plan, binding.signed, binding.op,
                                          (work, scratch)), binding, None)
            return
        code = self.kernel(*binding.flat.args)
        if code:
            self.stopped(binding, code, work, scratch)

    def stopped(self, binding: Binding, code: int, work: np.ndarray,
                scratch: np.ndarray) -> None:
        """Raise as :func:`~.walk.walk` would where the compiled walk stopped with ``code``:
        the requests it left, wrapped back as mpi4py objects, and the statuses it filled
        go to the guard."""
        mpi, flat, guard = self.mpi, binding.flat, self._guard
        assert flat is not None, "only the compiled walk stops with a code"
        call = CallContext(binding.plan, binding.signed, binding.op, (work, scratch))
        index, detail = flat.stopped()
        if code == RAISED:
            raise mpi.Exception(detail)
        step, h0 = binding.steps[index], int(flat.rows[index])
        taken = [mpi.Request.fromhandle(handle) for handle in
                 flat.handles(h0, detail if code == FIRST_MISMATCH else h0 + len(step.first))]
        if code == FIRST_MISMATCH:
            flat.status_into(detail, guard.status, mpi)
            guard.reject(flat.message(mpi), detail - h0, taken + step.sends, len(taken), call,
                         index)
        receives = taken + step.receives
        statuses = guard.statuses
        statuses.extend(mpi.Status() for _ in range(len(receives) - len(statuses)))
        for row, status in zip(range(h0, h0 + len(receives)), statuses):
            flat.status_into(row, status, mpi)
        guard.fail(receives + step.sends, call, index,
                   None if code == TAG_MISMATCH else mpi.Exception(detail))

    def free(self) -> None:
        """Free every binding's requests."""
        while self._bindings:
            self._bindings.popitem()[1].free()


def _free(binding: list[Binding], mpi: Any) -> None:
    """Free a held plan's requests, unless a failed walk may have left them active."""
    if binding and not mpi.Is_finalized():
        binding.pop().free()


class HeldPlan:
    """A plan bound for good to a persistent handle's buffers (:meth:`~collectives.calls.
    BoundCall.hold`).

    It owns its scratch (and, for an out-of-place ReduceScatter, its working buffer) and
    its binding, made here once the ranks agreed on the call (collective, as a handle's
    creation is).  :meth:`run` copies the input into the working buffer, walks the binding
    (the compiled walk in one call where it has a table) and copies the output out.

    Parameters
    ----------
    transport : MpiTransport
        The transport (its agreement, bindings and failure path).
    plan : Plan
        The rank's plan.
    signed : SignedPlan
        Its tags.
    op : str
        The reduction.
    call : Call
        The handle's buffers, NumPy, laid out.
    exchange : tuple, optional
        A Broadcast's, Reduce's or AllToAll(v)'s own working buffer, the copies into and
        out of it, and the input and output it binds directly, if any
        (:func:`collectives.calls.held_exchange`); None for the other collectives.
    """

    __slots__ = ("_transport", "_plan", "_work", "_scratch", "_before", "_after", "_direct",
                 "_binding", "_kernel", "_args", "_free", "__weakref__")

    def __init__(self, transport: Any, plan: Plan, signed: SignedPlan, op: str,
                 call: Any, exchange: tuple[np.ndarray, Views, Views, tuple[np.ndarray, ...]]
                 | None = None) -> None:
        self._transport, self._plan = transport, plan
        work = self._work = call.recv
        self._before: Views = ()
        self._after: Views = ()
        send = call.send
        direct: tuple[np.ndarray, ...] = ()
        if exchange is not None:
            work, self._before, self._after, direct = exchange
            self._work, send = work, None
        elif call.collective == "reduce_scatter" and call.send is not None:
            work = self._work = np.empty(call.count, call.dtype)
            self._after = ((work[plan.output], call.recv),)
        elif call.collective == "reduce_scatter" and plan.output.start:
            self._after = ((work[plan.output], call.recv[:call.part]),)
        if send is not None:
            self._before = ((send, work[plan.input]),)
        #: the buffers bound directly, kept alive with the handle (the binding refers to
        #: them by address only)
        self._direct = direct
        self._scratch = np.empty(plan.scratch_count, call.dtype)
        if plan.count:
            transport.agree(plan, signed, op)
        #: the binding, while it can run (emptied when a failed walk may have left its
        #: requests active: they are then never started, nor freed)
        self._binding: list[Binding] = []
        self._free: Any = None
        #: the compiled walk and its arguments, where it runs the binding
        self._kernel: Any = None
        self._args: tuple = ()
        if plan.steps:
            binding = transport.persistent.bind(plan, signed, op, work, self._scratch,
                                                *(direct or (send,)))
            self._binding.append(binding)
            self._free = weakref.finalize(self, _free, self._binding, transport.persistent.mpi)
            if binding.flat is not None:
                self._kernel, self._args = transport.persistent.kernel, binding.flat.args

    def runner(self) -> Callable[[], Any]:
        """Return what runs the plan: :meth:`run`, or, for a plan with no step whose run is
        one copy (an out-of-place call on one rank), NumPy's copy bound to its buffers."""
        if not self._binding and len(self._before) + len(self._after) == 1:
            source, destination = (*self._before, *self._after)[0]
            return partial(np.copyto, destination, source)
        return self.run

    def run(self) -> None:
        """Run the plan on the buffers' current contents.

        Raises
        ------
        ArgumentMismatchError, CommunicatorBrokenError
            When a step fails (the communicator is then broken).
        """
        copyto = np.copyto
        for source, destination in self._before:
            copyto(destination, source)
        if self._binding:
            try:
                if self._kernel is None:
                    self._transport.persistent.walk(self._binding[0], self._work, self._scratch)
                else:
                    code = self._kernel(*self._args)
                    if code:
                        self._transport.persistent.stopped(self._binding[0], code, self._work,
                                                           self._scratch)
            except BaseException as error:
                self._binding.clear()  # its requests may still be active: never free them
                self._transport.interrupted(self._plan, error)
                raise
        for source, destination in self._after:
            copyto(destination, source)

    def free(self) -> None:
        """Free the persistent requests now (:meth:`run` must not be called afterwards)."""
        if self._free is not None:
            self._free()
