"""The in-process reference interpreter: every rank of a schedule in one process.

It is the oracle that every executor, algorithm and simulator is checked against.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from .layout import input_range, output_range
from .ops import (NCCL_ONLY_OPS, average_input, average_output, check_dtype, check_op,
                  check_op_dtype, reducer)
from .progress import completion_order, match
from .schedule import Copy, Recv, Schedule, Send

__all__ = ["interpret", "compile_program"]


def _working_buffers(schedule: Schedule, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Check ``inputs`` against the collective's input layout and lay them out."""
    p, count, params = schedule.nranks, schedule.count, schedule.param_dict
    if len(inputs) != p:
        raise ValueError(f"inputs holds {len(inputs)} arrays; the schedule has {p} ranks")
    dtype = np.asarray(inputs[0]).dtype if p else np.dtype("float64")
    check_dtype(dtype)
    buffers = []
    for rank, data in enumerate(inputs):
        data = np.asarray(data)
        start, stop = input_range(schedule.collective, count, p, rank, params)
        if data.dtype != dtype:
            raise TypeError(f"inputs[{rank}] has dtype {data.dtype}; inputs[0] has {dtype}")
        if data.shape != (stop - start,):
            raise ValueError(f"inputs[{rank}] has shape {data.shape}; a {schedule.collective} "
                             f"of {count} elements on {p} ranks needs ({stop - start},)")
        buffer = np.zeros(schedule.elements, dtype)
        buffer[start:stop] = data
        buffers.append(buffer)
    return buffers


#: the collectives that reduce (the others move data and ignore ``op``)
_REDUCING = frozenset({"allreduce", "reduce_scatter", "reduce"})

_POST, _RECV, _REDUCE, _COPY, _REDUCE_SWAPPED = range(5)
Program = tuple[tuple[int, int, int, int, int], ...]


@lru_cache(maxsize=64)
def compile_program(schedule: Schedule) -> Program:
    """Flatten ``schedule`` into the order the interpreter runs it.

    Each entry is ``(code, rank, start, stop, arg)``: post a send of ``[start, stop)`` as
    message ``arg``; receive (or reduce, the message on the right or, swapped, on the
    left) message ``arg`` into ``[start, stop)``; or copy ``[start, stop)`` to offset
    ``arg``.  Matching and ordering are done once per schedule,
    so running it on many dtypes and ops costs only the data movement.

    Parameters
    ----------
    schedule : Schedule
        The schedule (cached: the last 64 are kept).

    Returns
    -------
    Program
        The flattened entries.

    Raises
    ------
    ScheduleError
        If the sends and receives do not match (:func:`~collectives.progress.match`).
    DeadlockError
        If the schedule cannot complete (:func:`~collectives.progress.completion_order`).
    """
    matching = match(schedule)
    order = completion_order(schedule, matching)
    ids: dict[tuple[int, int, int], int] = {}
    program: list[tuple[int, int, int, int, int]] = []

    def post(rank: int, index: int) -> None:
        for item, key in zip(schedule.steps(rank)[index].ops, matching.keys[rank][index]):
            if isinstance(item, Send):
                program.append((_POST, rank, item.start, item.stop, ids.setdefault(key, len(ids))))

    def complete(rank: int, index: int) -> None:
        for item, key in zip(schedule.steps(rank)[index].ops, matching.keys[rank][index]):
            if isinstance(item, Recv):
                code = (_REDUCE_SWAPPED if item.swap else _REDUCE) if item.reduce else _RECV
                program.append((code, rank, item.start, item.stop, ids.setdefault(key, len(ids))))
            elif isinstance(item, Copy):
                program.append((_COPY, rank, item.start, item.stop, item.dst))

    for rank in range(schedule.nranks):
        if schedule.steps(rank):
            post(rank, 0)
    for rank, index in order:
        complete(rank, index)
        if index + 1 < len(schedule.steps(rank)):
            post(rank, index + 1)
    return tuple(program)


def interpret(schedule: Schedule, inputs: Sequence[np.ndarray], op: str = "sum") -> list[np.ndarray]:
    """Run every rank of ``schedule`` in this process and return each rank's output.

    Parameters
    ----------
    schedule : Schedule
        A schedule; it is matched and ordered as :func:`~collectives.verify` does.
    inputs : sequence of numpy.ndarray
        One 1-D array per rank, in the layout of the collective's input
        (:func:`collectives.layout.input_range`): ``count`` elements for AllReduce,
        ReduceScatter and Reduce, the rank's block (:func:`collectives.layout.block`) for
        AllGather, ``count`` at Broadcast's root and none elsewhere, the blocks the rank
        sends in rank order for AllToAll.
    op : str or mpi4py.MPI.Op
        Reduction operator, one of :data:`collectives.ops.ALL_OPS` defined for the
        inputs' dtype (:data:`collectives.ops.OP_KINDS`), or NCCL's ``avg`` (scaled as
        NCCL does: :func:`collectives.ops.average_input`); AllGather, Broadcast and
        AllToAll ignore it.

    Returns
    -------
    list of numpy.ndarray
        Each rank's output (:func:`collectives.layout.output_range`): ``count``
        elements for AllReduce, AllGather and Broadcast, the rank's block for
        ReduceScatter, ``count`` at Reduce's root and none elsewhere, the blocks it
        receives in rank order for AllToAll.

    Raises
    ------
    ValueError, TypeError
        For inputs of the wrong number, shape or dtype, or an unknown op or one not
        defined for the dtype.
    ScheduleError
        For a malformed schedule.

    Examples
    --------
    >>> import numpy as np
    >>> from collectives import build_schedule, interpret
    >>> s = build_schedule("allreduce", "ring", 3, 4)
    >>> [out.tolist() for out in interpret(s, [np.arange(4.0)] * 3)]
    [[0.0, 3.0, 6.0, 9.0], [0.0, 3.0, 6.0, 9.0], [0.0, 3.0, 6.0, 9.0]]
    """
    op = check_op(op)
    buffers = _working_buffers(schedule, inputs)
    reduces = schedule.collective in _REDUCING
    average = op in NCCL_ONLY_OPS and reduces
    if buffers and reduces:
        check_op_dtype(op, buffers[0].dtype)
    for buffer in buffers if average else ():
        average_input(np, buffer, schedule.nranks)
    reduce = reducer(np, op)
    in_flight: dict[int, np.ndarray] = {}
    for code, rank, start, stop, arg in compile_program(schedule):
        buffer = buffers[rank]
        if code == _POST:
            in_flight[arg] = buffer[start:stop].copy()
        elif code == _REDUCE:
            target = buffer[start:stop]
            reduce(target, in_flight.pop(arg), out=target)
        elif code == _REDUCE_SWAPPED:
            target = buffer[start:stop]
            reduce(in_flight.pop(arg), target, out=target)
        elif code == _RECV:
            buffer[start:stop] = in_flight.pop(arg)
        else:
            buffer[arg:arg + stop - start] = buffer[start:stop]
    outputs = []
    for rank, buffer in enumerate(buffers):
        start, stop = output_range(schedule.collective, schedule.count, schedule.nranks, rank,
                                   schedule.param_dict)
        outputs.append(buffer[start:stop].copy())
        if average:
            average_output(np, outputs[-1], schedule.nranks)
    return outputs
