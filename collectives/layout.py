"""Where each collective's input and output live in the working buffer.

Blocks that do not divide evenly are the normal case: the first ``count % parts``
parts get one element more, as in MPI's block distributions.

Broadcast's input is the root's whole vector (the other ranks give none) and its output
every rank's; Reduce's input is every rank's vector and its output the root's (the other
ranks get none).  An AllToAll's working buffer holds what the rank sends, block ``j`` for
rank ``j`` in rank order, then what it receives, block ``i`` from rank ``i`` in rank
order, then whatever scratch the algorithm needs: ``counts[i][j]`` elements go from rank
``i`` to rank ``j`` (:func:`peer_counts`; ``count`` each without per-peer ``counts``).
"""

from __future__ import annotations

from functools import lru_cache
from itertools import accumulate
from typing import Any, Mapping, Sequence

__all__ = ["SEGMENT_ELEMENTS", "split", "splits", "block", "blocks_of", "input_range",
           "output_range", "peer_counts", "alltoall_blocks", "alltoall_elements", "count_of"]

Counts = tuple[tuple[int, ...], ...]
_NONE: Mapping[str, Any] = {}

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


def input_range(collective: str, count: int, nranks: int, rank: int,
                params: Mapping[str, Any] = _NONE) -> tuple[int, int]:
    """Range of the working buffer that holds ``rank``'s input before the schedule runs.

    Parameters
    ----------
    collective : str
        The collective (:data:`collectives.COLLECTIVES`).
    count, nranks, rank : int
        Elements of the full vector (for AllToAll, of each message), the number of ranks
        and the rank.
    params : mapping, optional
        The schedule's parameters: ``root`` (Broadcast; default 0) and ``counts``
        (AllToAll's per-peer counts, :func:`peer_counts`).

    Returns
    -------
    tuple of int
        ``(lo, hi)``: the rank's block for AllGather, the whole vector at Broadcast's
        root and nothing elsewhere, what the rank sends for AllToAll, the whole vector
        otherwise.

    Examples
    --------
    >>> input_range("broadcast", 6, 3, 1, {"root": 2}), input_range("alltoall", 2, 3, 1)
    ((0, 0), (0, 6))
    """
    if collective == "allgather":
        return block(count, nranks, rank)
    if collective == "broadcast":
        return (0, count) if rank == params.get("root", 0) else (0, 0)
    if collective == "alltoall":
        sends, _ = alltoall_blocks(peer_counts(count, nranks, params.get("counts")), rank)
        return sends[0][0], sends[-1][1]
    return 0, count


def output_range(collective: str, count: int, nranks: int, rank: int,
                 params: Mapping[str, Any] = _NONE) -> tuple[int, int]:
    """Range of the working buffer that holds ``rank``'s output after the schedule runs.

    Parameters
    ----------
    collective : str
        The collective (:data:`collectives.COLLECTIVES`).
    count, nranks, rank : int
        Elements of the full vector (for AllToAll, of each message), the number of ranks
        and the rank.
    params : mapping, optional
        The schedule's parameters: ``root`` (Reduce; default 0) and ``counts``
        (AllToAll's per-peer counts, :func:`peer_counts`).

    Returns
    -------
    tuple of int
        ``(lo, hi)``: the rank's block for ReduceScatter, the whole vector at Reduce's
        root and nothing elsewhere, what the rank receives for AllToAll, the whole
        vector otherwise.

    Examples
    --------
    >>> output_range("reduce", 6, 3, 0, {"root": 2}), output_range("alltoall", 2, 3, 1)
    ((0, 0), (6, 12))
    """
    if collective == "reduce_scatter":
        return block(count, nranks, rank)
    if collective == "reduce":
        return (0, count) if rank == params.get("root", 0) else (0, 0)
    if collective == "alltoall":
        _, recvs = alltoall_blocks(peer_counts(count, nranks, params.get("counts")), rank)
        return recvs[0][0], recvs[-1][1]
    return 0, count


def count_of(collective: str, nbytes: Any, itemsize: int, nranks: int) -> Any:
    """The ``count`` of a call of ``nbytes`` as nccl-tests sizes it: the full vector's bytes
    (the AllReduce, Broadcast or Reduce buffer, the ReduceScatter input, the AllGather
    output), for AllToAll every rank's whole send buffer, ``nranks`` blocks.

    Parameters
    ----------
    collective : str
        The collective.
    nbytes : int or numpy.ndarray
        Bytes (one size or an array of them), rounded down to whole elements (blocks).
    itemsize : int
        Bytes per element.
    nranks : int
        Ranks.

    Returns
    -------
    int or numpy.ndarray
        Elements of the vector; for AllToAll of each block.

    Examples
    --------
    >>> count_of("allreduce", 4096, 4, 8), count_of("alltoall", 4096, 4, 8)
    (1024, 128)
    """
    return nbytes // itemsize // (nranks if collective == "alltoall" else 1)


def peer_counts(count: int, nranks: int, counts: Counts | None = None) -> Counts:
    """The elements every rank sends every rank in an AllToAll.

    Parameters
    ----------
    count : int
        Elements of every message when ``counts`` is None.
    nranks : int
        Number of ranks.
    counts : tuple of tuple of int, optional
        ``counts[i][j]``: elements rank ``i`` sends rank ``j`` (AllToAllv); returned as
        it is (:func:`collectives.vcounts.check_counts` checks it).

    Returns
    -------
    tuple of tuple of int
        An ``nranks`` by ``nranks`` matrix.

    Examples
    --------
    >>> peer_counts(2, 2)
    ((2, 2), (2, 2))
    """
    return ((count,) * nranks,) * nranks if counts is None else counts


@lru_cache(maxsize=64)
def _offsets(counts: Counts, rank: int) -> tuple[tuple[tuple[int, int], ...],
                                                  tuple[tuple[int, int], ...]]:
    sends = tuple(accumulate(counts[rank], initial=0))
    recvs = tuple(accumulate((row[rank] for row in counts), initial=sends[-1]))
    return tuple(zip(sends, sends[1:])), tuple(zip(recvs, recvs[1:]))


def alltoall_blocks(counts: Counts, rank: int) -> tuple[tuple[tuple[int, int], ...],
                                                        tuple[tuple[int, int], ...]]:
    """Where ``rank``'s AllToAll blocks lie in its working buffer.

    Parameters
    ----------
    counts : tuple of tuple of int
        The per-peer counts (:func:`peer_counts`).
    rank : int
        The rank.

    Returns
    -------
    sends, recvs : tuple of (int, int)
        ``sends[j]``: the range it sends rank ``j``; ``recvs[i]``: the range it receives
        from rank ``i``, right after the sends.

    Examples
    --------
    >>> alltoall_blocks(((1, 2), (3, 4)), 1)
    (((0, 3), (3, 7)), ((7, 9), (9, 13)))
    """
    return _offsets(counts, rank)


def alltoall_elements(counts: Counts) -> int:
    """Elements of an AllToAll's working buffer without scratch: the most any rank
    sends and receives together.

    Examples
    --------
    >>> alltoall_elements(((1, 2), (3, 4)))
    13
    """
    return max((sum(row) + sum(other[rank] for other in counts)
                for rank, row in enumerate(counts)), default=0)


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
