"""Where each collective's input and output live in the working buffer.

Blocks that do not divide evenly are the normal case: the first ``count % parts``
parts get one element more, as in MPI's block distributions.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate
from typing import Sequence

__all__ = ["SEGMENT_ELEMENTS", "split", "splits", "block", "blocks_of", "input_range",
           "output_range"]

#: Default elements per segment of the pipelined algorithms (tree, pipeline): 512 KiB of
#: 4-byte elements, the slice NCCL's Simple protocol moves per step (source: NCCL
#: src/init.cc DEFAULT_BUFFSIZE = 4 MiB, split into NCCL_STEPS = 8 slots,
#: src/include/device.h).
SEGMENT_ELEMENTS = 1 << 17


def split(start: int, stop: int, parts: int, index: int) -> tuple[int, int]:
    """Return part ``index`` of ``parts`` near-equal parts of ``[start, stop)``.

    Parameters
    ----------
    start, stop : int
        The range, ``start <= stop``.
    parts : int
        Number of parts (>= 1); more parts than elements leaves some empty.
    index : int
        Which part, ``0 <= index < parts``.

    Returns
    -------
    tuple of int
        ``(lo, hi)``; the first ``(stop - start) % parts`` parts hold one element more.

    Examples
    --------
    >>> [split(0, 10, 3, i) for i in range(3)]
    [(0, 4), (4, 7), (7, 10)]
    """
    size, extra = divmod(stop - start, parts)
    lo = start + index * size + min(index, extra)
    return lo, lo + size + (index < extra)


@lru_cache(maxsize=8)
def splits(start: int, stop: int, parts: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Return the starts and the stops of all ``parts`` parts of ``[start, stop)``.

    The same parts as :func:`split` (part ``i`` is ``(starts[i], stops[i])``), computed
    in one pass, for callers that need every part.  Cached: every rank of a schedule
    asks for the same parts, and gets the same tuples.

    Parameters
    ----------
    start, stop : int
        The range, ``start <= stop``.
    parts : int
        Number of parts (>= 1).

    Returns
    -------
    tuple of (tuple of int, tuple of int)
        ``(starts, stops)``, each of length ``parts``.

    Examples
    --------
    >>> splits(0, 10, 3)
    ((0, 4, 7), (4, 7, 10))
    """
    size, extra = divmod(stop - start, parts)
    edges = tuple(accumulate([size + 1] * extra + [size] * (parts - extra), initial=start))
    return edges[:-1], edges[1:]


def block(count: int, nranks: int, rank: int) -> tuple[int, int]:
    """Return the element range of ``rank``'s block of a ``count``-element vector.

    The vector is cut into ``nranks`` near-equal blocks (:func:`split`).

    Parameters
    ----------
    count : int
        Elements of the vector.
    nranks : int
        Number of blocks.
    rank : int
        The block's index.

    Returns
    -------
    tuple[int, int]
        ``(lo, hi)``, half open.
    """
    return split(0, count, nranks, rank)


def input_range(collective: str, count: int, nranks: int, rank: int) -> tuple[int, int]:
    """Range of the working buffer that holds ``rank``'s input before the schedule runs.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    count, nranks, rank : int
        Elements of the full vector, the number of ranks and the rank.

    Returns
    -------
    tuple of int
        ``(lo, hi)``: the rank's block for AllGather, the whole vector otherwise.
    """
    return block(count, nranks, rank) if collective == "allgather" else (0, count)


def output_range(collective: str, count: int, nranks: int, rank: int) -> tuple[int, int]:
    """Range of the working buffer that holds ``rank``'s output after the schedule runs.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    count, nranks, rank : int
        Elements of the full vector, the number of ranks and the rank.

    Returns
    -------
    tuple of int
        ``(lo, hi)``: the rank's block for ReduceScatter, the whole vector otherwise.
    """
    return block(count, nranks, rank) if collective == "reduce_scatter" else (0, count)


def blocks_of(blocks: Sequence[tuple[int, int]], ranks: Sequence[int]) -> list[tuple[int, int]]:
    """Return the ranges of the given ranks' blocks, merging neighbours that touch.

    Parameters
    ----------
    blocks : sequence of (int, int)
        ``blocks[r]`` is rank ``r``'s element range.
    ranks : sequence of int
        The ranks whose blocks to take, in any order.

    Returns
    -------
    list of (int, int)
        Sorted, disjoint, non-empty ranges covering exactly those blocks.

    Examples
    --------
    >>> blocks_of([(0, 3), (3, 6), (6, 8)], [2, 0, 1])
    [(0, 8)]
    """
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(blocks[r] for r in ranks):
        if merged and merged[-1][1] == lo:
            merged[-1] = (merged[-1][0], hi)
        elif hi > lo:
            merged.append((lo, hi))
    return merged
