"""One rank's steps compiled once into a plan that an executor walks with no schedule work.

A :class:`Plan` holds, per step, the byte ranges of the working buffer (or of the scratch
buffer, for receives that reduce) to post, each with its peer and message tag, then the
reductions and local copies to apply once the step completes.  Plans are cached by
``(collective, algorithm, nranks, rank, count, dtype, params)`` in
:attr:`~.runtime.Runtime.plans`: a repeated call finds its
plan in the cache and builds nothing.

Zero-length transfers are left out on both sides (a matched pair always has equal
lengths), and so are steps left with nothing to do.  Tags number the messages between a
pair of ranks (the k-th message from ``a`` to ``b`` has tag ``k``).  A step's receives
start with the call's first message from each peer it hears from for the first time
(:attr:`PlanStep.first`), which the MPI transport takes through a matched probe; the
order of the receives from one peer is kept, so MPI matches them to that peer's messages
in order whatever is probed.
"""

from __future__ import annotations

from dataclasses import dataclass
from reprlib import repr as brief
from typing import Any

import numpy as np

from ..build import build_schedule
from ..layout import input_range, output_range
from ..schedule import BLOCK_COLLECTIVES, Copy, Recv, Send, Step
from .runtime import RUNTIME

__all__ = ["PlanStep", "Plan", "compile_steps", "get_plan", "apply_reduces", "apply_copies",
           "PLAN_CACHE_SIZE", "describe_step", "choice", "binds_directly"]

#: plans kept per process (least recently used dropped first)
PLAN_CACHE_SIZE = 256

#: every MPI library accepts tags up to at least 32767 (MPI 4.1, section 8.1.2)
_TAG_LIMIT = 32768


@dataclass(frozen=True, slots=True)
class PlanStep:
    """What one step posts and applies.

    Attributes
    ----------
    recvs : tuple of (bool, slice, int, int)
        ``(into_scratch, byte_range, peer, tag)`` per receive: into the scratch buffer
        when the receive reduces, else straight into the working buffer.  The first
        :attr:`first` of them are the call's first receive from their peer.
    sends : tuple of (slice, int, int)
        ``(byte_range, peer, tag)`` per send, from the working buffer.
    reduces : tuple of (slice, slice, bool)
        ``(work_elements, scratch_elements, swap)`` per reducing receive, in schedule
        order: ``work = op(work, scratch)``, or ``op(scratch, work)`` where ``swap``
        (:class:`~collectives.schedule.Recv`).
    copies : tuple of (slice, slice)
        ``(source_elements, destination_elements)`` per local copy.
    first : int
        How many of :attr:`recvs`, from the start, are the call's first receive from
        their peer (one per peer heard from for the first time at this step).
    """

    recvs: tuple[tuple[bool, slice, int, int], ...]
    sends: tuple[tuple[slice, int, int], ...]
    reduces: tuple[tuple[slice, slice, bool], ...]
    copies: tuple[tuple[slice, slice], ...]
    first: int = 0


@dataclass(frozen=True, eq=False)
class Plan:
    """One rank's compiled steps of one collective.

    Compared and hashed by identity (the caches of signed plans and bindings key on it).

    Attributes
    ----------
    collective, algorithm : str
        What the plan runs.
    nranks, rank, count : int
        Ranks, this rank, and elements of the working buffer.
    dtype : str
        Element type name; byte ranges use its size.
    params : tuple of (str, value)
        The schedule's resolved tuning parameters.
    steps : tuple of PlanStep
        The steps that do something, in order.
    scratch_count : int
        Elements of scratch the busiest step needs for its reducing receives.
    input, output : slice
        Element ranges of the working buffer holding this rank's input and output.
    """

    collective: str
    algorithm: str
    nranks: int
    rank: int
    count: int
    dtype: str
    params: tuple[tuple[str, Any], ...]
    steps: tuple[PlanStep, ...]
    scratch_count: int
    input: slice
    output: slice


def compile_steps(steps: tuple[Step, ...] | list[Step],
                  itemsize: int) -> tuple[tuple[PlanStep, ...], int]:
    """Compile one rank's schedule steps into plan steps.

    Parameters
    ----------
    steps : sequence of Step
        The rank's steps, as :meth:`Schedule.steps` returns them.
    itemsize : int
        Bytes per element.

    Returns
    -------
    steps : tuple of PlanStep
        Steps that transfer, reduce or copy something.
    scratch_count : int
        Scratch elements the busiest step needs.
    """
    sent: dict[int, int] = {}
    received: dict[int, int] = {}
    heard: set[int] = set()
    compiled = []
    scratch_count = 0
    for step in steps:
        recvs, sends, reduces, copies = [], [], [], []
        offset = 0
        for op in step.ops:
            if isinstance(op, Copy):
                if op.stop > op.start:
                    copies.append((slice(op.start, op.stop),
                                   slice(op.dst, op.dst + op.stop - op.start)))
                continue
            counter = sent if isinstance(op, Send) else received
            tag = counter.get(op.peer, 0)
            counter[op.peer] = tag + 1
            length = op.stop - op.start
            if length == 0:
                continue
            tag %= _TAG_LIMIT
            if isinstance(op, Send):
                sends.append((slice(op.start * itemsize, op.stop * itemsize), op.peer, tag))
            elif isinstance(op, Recv) and op.reduce:
                recvs.append((True, slice(offset * itemsize, (offset + length) * itemsize),
                              op.peer, tag))
                reduces.append((slice(op.start, op.stop), slice(offset, offset + length), op.swap))
                offset += length
            else:
                recvs.append((False, slice(op.start * itemsize, op.stop * itemsize), op.peer, tag))
        scratch_count = max(scratch_count, offset)
        if recvs or sends or copies:
            first = _firsts(recvs, heard)
            compiled.append(PlanStep(tuple(recvs), tuple(sends), tuple(reduces),
                                     tuple(copies), first))
    return tuple(compiled), scratch_count


def _firsts(recvs: list[tuple[bool, slice, int, int]], heard: set[int]) -> int:
    """Move the first receive from each peer not in ``heard`` to the front of ``recvs``
    (in place, keeping every peer's receives in order), add those peers to ``heard`` and
    return how many moved."""
    first, rest = [], []
    for recv in recvs:
        if recv[2] in heard:
            rest.append(recv)
        else:
            first.append(recv)
            heard.add(recv[2])
    recvs[:] = first + rest
    return len(first)


def get_plan(collective: str, algorithm: str, nranks: int, rank: int, count: int,
             dtype: Any, params: dict[str, Any]) -> Plan:
    """Return the cached plan of ``rank``, building the schedule and compiling on a miss.

    Parameters
    ----------
    collective, algorithm : str
        As for :func:`collectives.build_schedule`.
    nranks, rank, count : int
        Ranks, this rank and working-buffer elements.
    dtype : numpy.dtype or cupy dtype
        Element type (its ``itemsize`` scales byte ranges).
    params : dict
        Tuning parameters for :func:`collectives.build_schedule`.

    Returns
    -------
    Plan

    Raises
    ------
    ValueError, TypeError
        From :func:`collectives.build_schedule`, for an unknown algorithm or parameter.
    """
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                          for k, v in params.items())) if params else ()
    key = (collective, algorithm, nranks, rank, count, dtype, frozen)
    cache = RUNTIME.plans
    plan = cache.get(key)
    if plan is not None:
        cache.move_to_end(key)
        return plan
    schedule = build_schedule(collective, algorithm, nranks, count, **params)
    steps, scratch_count = compile_steps(schedule.steps(rank), dtype.itemsize)
    given = schedule.param_dict
    plan = Plan(collective, algorithm, nranks, rank, schedule.elements, dtype.name,
                schedule.params, steps, scratch_count,
                slice(*input_range(collective, count, nranks, rank, given)),
                slice(*output_range(collective, count, nranks, rank, given)))
    cache[key] = plan
    if len(cache) > PLAN_CACHE_SIZE:
        cache.popitem(last=False)
    return plan


def binds_directly(plan: Plan) -> str:
    """How ``plan`` can run on the caller's buffers themselves rather than on copies of
    them in a working buffer.

    ``"both"``: its input range bound to the send buffer and its output range to the
    receive buffer, for a plan that reduces nothing and writes nothing into its input range
    (so the send buffer is only read; an AllToAll's plans, a Reduce's on a rank that only
    sends).  ``"output"``: a plan whose input and output are one range (a Reduce's at its
    root) bound to the receive buffer, into which the caller copies the input first.
    Either way each of its ranges lies wholly inside those ranges or outside them.

    Returns
    -------
    str
        ``"both"``, ``"output"`` or ``""`` (neither).

    Examples
    --------
    >>> import numpy as np
    >>> float32 = np.dtype("float32")
    >>> binds_directly(get_plan("alltoall", "pairwise", 3, 0, 9, float32, {}))
    'both'
    >>> binds_directly(get_plan("reduce", "binomial", 3, 0, 9, float32, {}))
    'output'
    >>> binds_directly(get_plan("allgather", "ring", 3, 0, 9, float32, {}))
    ''
    """
    if plan.collective in BLOCK_COLLECTIVES:
        return ""
    disjoint = plan.input.stop <= plan.output.start or plan.output.stop <= plan.input.start
    if disjoint and _within(plan, (plan.input, plan.output), plan.input):
        return "both"
    if plan.input == plan.output and _within(plan, (plan.output,), None):
        return "output"
    return ""


def _within(plan: Plan, regions: tuple[slice, ...], read_only: slice | None) -> bool:
    """Whether each of ``plan``'s element ranges (sent, received, copied, reduced into) lies
    wholly inside one of ``regions`` or outside them all, and none that it writes meets
    ``read_only`` (where it is given, nothing is reduced)."""
    size = np.dtype(plan.dtype).itemsize

    def placed(start: int, stop: int) -> bool:
        return all(stop <= r.start or r.stop <= start or r.start <= start and stop <= r.stop
                   for r in regions)

    def meets(start: int, stop: int) -> bool:
        return read_only is not None and start < read_only.stop and read_only.start < stop

    for step in plan.steps:
        if step.reduces and read_only is not None:
            return False
        received = [(span.start // size, span.stop // size)
                    for into_scratch, span, _, _ in step.recvs if not into_scratch]
        written = received + [(d.start, d.stop) for _, d in step.copies] \
            + [(t.start, t.stop) for t, _, _ in step.reduces]
        read = [(span.start // size, span.stop // size) for span, _, _ in step.sends] \
            + [(c.start, c.stop) for c, _ in step.copies]
        if any(meets(*span) for span in written) \
                or not all(placed(*span) for span in written + read):
            return False
    return True


def apply_reduces(work: Any, scratch: Any, reduces: tuple[tuple[slice, slice, bool], ...],
                  reduce: Any) -> None:
    """Apply a step's reductions with the ufunc ``reduce`` (NumPy's or CuPy's), in order:
    ``work = reduce(work, scratch)``, operands swapped where the receive says so."""
    for target, source, swap in reduces:
        into = work[target]
        if swap:
            reduce(scratch[source], into, out=into)
        else:
            reduce(into, scratch[source], out=into)


def apply_copies(work: Any, copies: tuple[tuple[slice, slice], ...]) -> None:
    """Apply a step's local copies; every source is read before any destination is written."""
    sources = [work[source].copy() for source, _ in copies]
    for (_, destination), data in zip(copies, sources):
        work[destination] = data


def describe_step(plan: Plan, op: str, index: int) -> str:
    """Name a step of a call in a few words (for error messages).

    Examples
    --------
    >>> import numpy as np
    >>> describe_step(get_plan("allreduce", "ring", 2, 0, 4, np.dtype("float32"), {}), "sum", 1)
    'allreduce ring (float32, sum, count 4) step 1'
    """
    return (f"{plan.collective} {choice(plan.algorithm, plan.params)} ({plan.dtype}, {op}, "
            f"count {plan.count}) step {index}")


def choice(algorithm: str, params: tuple[tuple[str, Any], ...]) -> str:
    """An algorithm with its resolved parameters, in a few words (for error messages).

    Examples
    --------
    >>> choice("ring", (("channels", 2),))
    'ring channels=2'
    """
    return " ".join([algorithm, *(f"{name}={brief(value)}" for name, value in params)])
