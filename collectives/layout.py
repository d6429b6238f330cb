"""Where each collective's input and output live in the working buffer.

Blocks that do not divide evenly are the normal case: the first ``count % parts``
parts get one element more, as in MPI's block distributions.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["split", "block", "blocks_of", "input_range", "output_range"]


def split(start: int, stop: int, parts: int, index: int) -> tuple[int, int]:
    """Return part ``index`` of ``parts`` near-equal parts of ``[start, stop)``.

    Examples
    --------
    >>> [split(0, 10, 3, i) for i in range(3)]
    [(0, 4), (4, 7), (7, 10)]
    """
    size, extra = divmod(stop - start, parts)
    lo = start + index * size + min(index, extra)
    return lo, lo + size + (index < extra)


def block(count: int, nranks: int, rank: int) -> tuple[int, int]:
    """Return the element range of ``rank``'s block of a ``count``-element vector."""
    return split(0, count, nranks, rank)


def input_range(collective: str, count: int, nranks: int, rank: int) -> tuple[int, int]:
    """Range of the working buffer that holds ``rank``'s input before the schedule runs."""
    return block(count, nranks, rank) if collective == "allgather" else (0, count)


def output_range(collective: str, count: int, nranks: int, rank: int) -> tuple[int, int]:
    """Range of the working buffer that holds ``rank``'s output after the schedule runs."""
    return block(count, nranks, rank) if collective == "reduce_scatter" else (0, count)


def blocks_of(blocks: Sequence[tuple[int, int]], ranks: Sequence[int]) -> list[tuple[int, int]]:
    """Return the ranges of the given ranks' blocks, merging neighbours that touch."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(blocks[r] for r in ranks):
        if merged and merged[-1][1] == lo:
            merged[-1] = (merged[-1][0], hi)
        elif hi > lo:
            merged.append((lo, hi))
    return merged
