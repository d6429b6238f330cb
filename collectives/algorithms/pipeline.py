"""Chunked pipeline: segments stream through the chain ``0 - 1 - ... - p-1``.

Costs below are for the lock-step alpha-beta-gamma model (every round costs
``alpha + beta * segment + gamma * segment`` when it reduces), ``n`` elements, ``p >= 2``
ranks; one rank (``p = 1``) has no steps.

AllReduce (``S = segments`` segments of the whole vector, each ``n / S`` elements)
    Pipelined chain reduce towards rank ``p-1``, then pipelined chain broadcast back,
    overlapped: rank ``r`` sends segment ``k`` right at round ``k + r`` (reducing the
    segment from the left one round earlier); rank ``p-1`` starts sending segment ``k``
    back at round ``k + p - 1``, as soon as it is fully reduced, and rank ``r < p-1``
    receives it at round ``k + 2p - 3 - r`` and forwards it left the round after. Each
    element is reduced once along the chain and then copied, so every rank ends bitwise
    identical. ``S + 2p - 3`` rounds, the first ``S + p - 2`` of them reduce::

        T = (S + 2p - 3) * (alpha + n/S * beta) + (S + p - 2) * n/S * gamma

    Ranks ``0`` and ``p-1`` send ``n`` elements, the others ``2n``. With ``S >= p - 1``
    the rounds ``p-2 .. S-1`` are the steady state: every right-going link carries a
    different segment in the same round.

ReduceScatter (``m = segments`` segments per block, each ``n / (p m)`` elements)
    Bidirectional pipelined chain reduce of every block towards its owner: rank ``r``
    streams the partial sums of blocks ``r+1 .. p-1`` (ranks ``0..r`` reduced in) to
    ``r+1``, farthest block first, and those of blocks ``0 .. r-1`` (ranks ``r..p-1``)
    to ``r-1``, farthest first; each rank sends ``(p-1)`` blocks, as in the ring.
    This beats the textbook alternatives on a chain (chain reduce then scatter, which
    moves every block to one end and back) and matches the ring's bandwidth term: the
    blocks themselves fill the pipeline, so segments only split messages. When both
    partial sums of the same segment would reach the owner ``r`` in the same round (when
    ``(p-1-2r)(m-1) = 0``: every inner rank for ``m = 1``, the middle rank of an odd
    chain) the one from the right is sent and received one round later, which lengthens
    the schedule by a round only for ``m = 1`` or ``p = 3``::

        rounds = (p - 1) * m + d,  d = 1 if p >= 3 and (m == 1 or p == 3) else 0
        T = rounds * (alpha + n/(p m) * (beta + gamma))

AllGather (``m = segments`` segments per block)
    Every owner's block streamed along the chain in both directions, a pipelined chain
    broadcast per block: in round ``i`` rank ``r`` sends right segment ``i`` of the
    sequence "block ``r``, ``r-1``, ..., ``0``" and left segment ``i`` of "block ``r``,
    ``r+1``, ..., ``p-1``", forwarding what it received ``m`` rounds earlier. The busiest
    links (at the chain ends) carry ``p - 1`` blocks, so the bandwidth term is the ring's::

        T = (p - 1) * m * (alpha + n/(p m) * beta)

    Rank ``r`` sends ``r + 1`` blocks right (none from ``p-1``) and ``p - r`` blocks left
    (none from ``0``).

The default ``segments`` aims at segments of :data:`SEGMENT_ELEMENTS` elements; for
AllReduce it is at least ``p - 1`` (enough to fill the chain) and at most ``count``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..layout import split
from ..schedule import Op, Recv, Send, Step

__all__ = ["PARAMS", "SEGMENT_ELEMENTS", "resolve_params", "rank_steps"]

PARAMS: dict[str, Any] = {"segments": None}

#: target segment length: one 512 KiB slot of NCCL's Simple protocol buffer
#: (DEFAULT_BUFFSIZE 4 MiB in NCCL src/init.cc / NCCL_STEPS 8 in src/include/device.h)
#: of 4-byte elements
SEGMENT_ELEMENTS = 1 << 17

Blocks = Sequence[tuple[int, int]]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def resolve_params(collective: str, nranks: int, count: int,
                   segments: int | None = None) -> dict[str, Any]:
    """Fill in the default segment count and check the value.

    Parameters
    ----------
    collective : str
        The collective; AllReduce cuts the whole vector into ``segments`` segments,
        ReduceScatter and AllGather cut each rank's block.
    nranks, count : int
        Ranks and elements of the full vector.
    segments : int or None
        Segments, at least 1; None chooses segments of about :data:`SEGMENT_ELEMENTS`
        elements (for AllReduce at least ``nranks - 1`` and at most ``count``).

    Returns
    -------
    dict
        ``{"segments": int}``.

    Raises
    ------
    ValueError
        If ``segments`` is not None or an integer >= 1.

    Examples
    --------
    >>> resolve_params("allreduce", 8, 1000)
    {'segments': 7}
    >>> resolve_params("allgather", 4, 2**20)
    {'segments': 2}
    """
    if segments is None:
        if collective == "allreduce":
            wanted = max(nranks - 1, _ceil_div(count, SEGMENT_ELEMENTS))
            segments = max(1, min(count, wanted))
        else:
            segments = max(1, _ceil_div(_ceil_div(count, nranks), SEGMENT_ELEMENTS))
    elif isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"segments={segments!r} is not allowed; it must be an integer >= 1 "
                         f"or None (chosen from count and nranks)")
    return {"segments": segments}


class _Timeline:
    """One rank's operations keyed by round; empty rounds are dropped."""

    def __init__(self) -> None:
        self.rounds: dict[int, list[Op]] = {}

    def add(self, t: int, op: Op) -> None:
        self.rounds.setdefault(t, []).append(op)

    def steps(self) -> list[Step]:
        return [Step(tuple(self.rounds[t])) for t in sorted(self.rounds)]


def _allreduce(rank: int, nranks: int, count: int, segments: int) -> list[Step]:
    p, r = nranks, rank
    line = _Timeline()
    for k in range(segments):
        seg = split(0, count, segments, k)
        if r > 0:
            line.add(k + r - 1, Recv(r - 1, *seg, True))
        if r < p - 1:
            line.add(k + r, Send(r + 1, *seg))
            line.add(k + 2 * p - 3 - r, Recv(r + 1, *seg))
        if r > 0:
            line.add(k + 2 * p - 2 - r, Send(r - 1, *seg))
    return line.steps()


def _late(nranks: int, owner: int, m: int) -> int:
    """1 if both partial sums of a segment reach ``owner`` in the same round, else 0.

    The one from the right then travels a round later (sent and received), so that the
    two reductions into the same range fall in different steps.
    """
    return int(0 < owner < nranks - 1 and (nranks - 1 - 2 * owner) * (m - 1) == 0)


def _reduce_scatter(rank: int, nranks: int, blocks: Blocks, m: int) -> list[Step]:
    p, r = nranks, rank
    line = _Timeline()

    def right(k: int) -> tuple[int, int]:  # right-going unit k: farthest block first
        return split(*blocks[p - 1 - k // m], m, k % m)

    def left(k: int) -> tuple[int, int]:  # left-going unit k: block 0 first
        return split(*blocks[k // m], m, k % m)

    if r > 0:
        late = _late(p, r - 1, m)
        for k in range((p - r) * m):
            line.add(k + r - 1, Recv(r - 1, *right(k), True))
        for k in range(r * m):
            line.add(k + p - 1 - r + (late if k >= (r - 1) * m else 0), Send(r - 1, *left(k)))
    if r < p - 1:
        late = _late(p, r, m)
        for k in range((p - 1 - r) * m):
            line.add(k + r, Send(r + 1, *right(k)))
        for k in range((r + 1) * m):
            line.add(k + p - 2 - r + (late if k >= r * m else 0), Recv(r + 1, *left(k), True))
    return line.steps()


def _allgather(rank: int, nranks: int, blocks: Blocks, m: int) -> list[Step]:
    p, r = nranks, rank
    line = _Timeline()
    if r < p - 1:
        for i in range((r + 1) * m):
            line.add(i, Send(r + 1, *split(*blocks[r - i // m], m, i % m)))
        for i in range((p - 1 - r) * m):
            line.add(i, Recv(r + 1, *split(*blocks[r + 1 + i // m], m, i % m)))
    if r > 0:
        for i in range(r * m):
            line.add(i, Recv(r - 1, *split(*blocks[r - 1 - i // m], m, i % m)))
        for i in range((p - r) * m):
            line.add(i, Send(r - 1, *split(*blocks[r + i // m], m, i % m)))
    return line.steps()


def rank_steps(collective: str, rank: int, nranks: int, count: int, blocks: Blocks,
               segments: int) -> list[Step]:
    """Return the pipeline steps of ``rank`` (see the module docstring for the schedule).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    rank, nranks, count : int
        This rank's position on the chain, the chain length and the vector length.
    blocks : sequence of (int, int)
        ``blocks[r]`` is the element range rank ``r`` owns.
    segments : int
        Segments of the vector (AllReduce) or of each block (ReduceScatter, AllGather).

    Returns
    -------
    list of Step
        Only ``rank``'s steps, in order; rounds in which it does nothing are left out.
    """
    if collective == "allreduce":
        return _allreduce(rank, nranks, count, segments)
    if collective == "reduce_scatter":
        return _reduce_scatter(rank, nranks, blocks, segments)
    return _allgather(rank, nranks, blocks, segments)
