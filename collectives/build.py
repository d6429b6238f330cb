"""``build_schedule``: look up an algorithm, check its parameters, return a lazy schedule."""

from __future__ import annotations

import importlib
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate
from reprlib import repr as brief
from typing import Any, Callable

from topology.checks import check_int

from .layout import block
from .rounds import Lane
from .schedule import COLLECTIVES, Recv, RankSteps, Schedule, Send, Step

__all__ = ["ALGORITHMS", "build_schedule", "algorithm_params"]

#: algorithms that build schedules (``native`` and ``auto`` are executor choices)
ALGORITHMS: tuple[str, ...] = ("ring", "tree", "rhd", "pipeline")

Blocks = tuple[tuple[int, int], ...]


def _module(algorithm: str) -> Any:
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm {brief(algorithm)} is not supported; choose one of "
                         f"{list(ALGORITHMS)}")
    return importlib.import_module(f"{__package__}.algorithms.{algorithm}")


def algorithm_params(algorithm: str) -> dict[str, Any]:
    """Return the tuning parameters ``algorithm`` accepts with their defaults.

    Every algorithm also accepts ``order``, a permutation of the ranks: the algorithm
    runs as if rank ``order[i]`` were rank ``i`` (ring and chain neighbours follow it).

    Parameters
    ----------
    algorithm : str
        One of :data:`ALGORITHMS`.

    Returns
    -------
    dict[str, Any]
        Parameter name -> default (``None``: chosen from the rank count and size).

    Raises
    ------
    ValueError
        If ``algorithm`` is not in :data:`ALGORITHMS`.
    """
    return {**_module(algorithm).PARAMS, "order": None}


def _check_order(order: Any, nranks: int) -> tuple[int, ...] | None:
    if order is None:
        return None
    order = tuple(order)
    if sorted(order) != list(range(nranks)):
        raise ValueError(f"order={brief(order)} is not allowed; it must be a permutation of "
                         f"0..{nranks - 1}")
    return None if order == tuple(range(nranks)) else order


class _Relabel:
    """Map a schedule written for ranks ``0..p-1`` onto the ranks in ``order``.

    Virtual rank ``v`` is real rank ``order[v]`` and owns the block of the real rank, laid
    out in virtual order: virtual ranges are cut at block edges and mapped back.
    """

    def __init__(self, order: tuple[int, ...], count: int, remap_ranges: bool) -> None:
        p = len(order)
        self.order = order
        real = [block(count, p, r) for r in order]
        self.virtual_starts = [0, *accumulate(hi - lo for lo, hi in real)][:-1]
        self.real_starts = [lo for lo, _ in real]
        self.blocks: Blocks = tuple((v, v + hi - lo) for v, (lo, hi) in zip(self.virtual_starts, real))
        self.remap_ranges = remap_ranges

    def ranges(self, start: int, stop: int) -> list[tuple[int, int]]:
        if not self.remap_ranges or start == stop:
            return [(start, stop)]
        pieces = []
        index = bisect_right(self.virtual_starts, start) - 1
        while start < stop:
            lo, hi = self.blocks[index]
            end = min(stop, hi)
            if end > start:
                offset = self.real_starts[index] - lo
                pieces.append((start + offset, end + offset))
            start = max(start, end)
            index += 1
        return pieces

    def step(self, step: Step) -> Step:
        ops: list = []
        for op in step.ops:
            if isinstance(op, Send):
                ops.extend(Send(self.order[op.peer], a, b) for a, b in self.ranges(op.start, op.stop))
            elif isinstance(op, Recv):
                ops.extend(Recv(self.order[op.peer], a, b, op.reduce)
                           for a, b in self.ranges(op.start, op.stop))
            else:
                raise ValueError(f"{op}: local copies cannot be relabelled with order=")
        return Step(tuple(ops))


@lru_cache(maxsize=512)
def _build(collective: str, algorithm: str, nranks: int, count: int,
           params: tuple[tuple[str, Any], ...], order: tuple[int, ...] | None) -> Schedule:
    module = _module(algorithm)
    resolved = module.resolve_params(collective, nranks, count, **dict(params))
    generate: Callable[[int], RankSteps]
    lanes: Callable[[int], list[Lane]] | None = None
    if order is None:
        blocks: Blocks = tuple(block(count, nranks, r) for r in range(nranks))

        def generate(rank: int) -> RankSteps:
            return tuple(module.rank_steps(collective, rank, nranks, count, blocks, **resolved))

        if hasattr(module, "rank_lanes"):
            def lanes(rank: int) -> list[Lane]:
                return module.rank_lanes(collective, rank, nranks, count, blocks, **resolved)
    else:
        relabel = _Relabel(order, count, remap_ranges=collective != "allreduce")
        blocks = relabel.blocks if collective != "allreduce" else tuple(
            block(count, nranks, r) for r in range(nranks))
        position = {real: virtual for virtual, real in enumerate(order)}

        def generate(rank: int) -> RankSteps:
            steps = module.rank_steps(collective, position[rank], nranks, count, blocks, **resolved)
            return tuple(relabel.step(step) for step in steps)
    recorded = resolved if order is None else {**resolved, "order": order}
    return Schedule(collective, algorithm, nranks, count, tuple(sorted(recorded.items())), generate,
                    lanes)


def build_schedule(collective: str, algorithm: str, nranks: int, count: int,
                   **params: Any) -> Schedule:
    """Build the schedule of ``algorithm`` for ``collective`` on ``nranks`` ranks.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    algorithm : {"ring", "tree", "rhd", "pipeline"}
        Ring, double binary tree, recursive halving-doubling or chunked pipeline.
    nranks : int
        Number of ranks, at least 1.
    count : int
        Elements of the full vector (the AllReduce buffer, the ReduceScatter input, the
        AllGather output), at least 0; it need not divide by ``nranks``.
    **params
        The algorithm's tuning parameters (see :func:`algorithm_params`), e.g.
        ``segments`` for tree and pipeline, and ``order`` (a permutation of the ranks)
        for every algorithm.

    Returns
    -------
    Schedule
        Immutable; each rank's steps are generated on first use. Equal arguments return
        the same object.

    Raises
    ------
    ValueError
        For an unknown collective or algorithm, or a parameter value out of range.
    TypeError
        For a parameter the algorithm does not take.

    Examples
    --------
    >>> s = build_schedule("allreduce", "ring", 3, 7)
    >>> s.num_steps()
    4
    >>> print(s.steps(0)[0])
    send [5:7) -> 1; reduce [3:5) <- 2
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    module = _module(algorithm)
    check_int(nranks, "nranks", 1)
    check_int(count, "count", 0)
    order = _check_order(params.pop("order", None), nranks)
    unknown = sorted(set(params) - set(module.PARAMS))
    if unknown:
        raise TypeError(f"parameter {unknown[0]!r} is not taken by algorithm {brief(algorithm)}; "
                        f"it takes {sorted(algorithm_params(algorithm))}")
    merged = {**module.PARAMS, **params}
    return _build(collective, algorithm, nranks, count, tuple(sorted(merged.items())), order)

