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

from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from topology.channels import rail_rings
from topology.checks import check_int

from ..gcpause import gc_paused
from ..layout import SEGMENT_ELEMENTS, splits
from ..registry import Algorithm, Params, ompi_ids, register, with_channels
from ..rounds import Lane, lane, merge_lanes
from ..schedule import BLOCK_COLLECTIVES, Op, Step, new_recv, new_send
from ..traffic import Messages, Round, largest_part, nested_part

__all__ = ["ALGORITHM", "SEGMENT_ELEMENTS", "SEGMENTS_TRIED", "resolve_params", "rank_lanes",
           "traffic", "rank_steps", "candidates", "pieces"]

#: segments selection tries, of the whole vector for AllReduce, of each rank's block for
#: ReduceScatter and AllGather (divided by the channels, rounded up)
SEGMENTS_TRIED: dict[str, tuple[int, ...]] = {
    "allreduce": (1, 4, 16, 64), "reduce_scatter": (1, 2, 4, 8), "allgather": (1, 2, 4, 8)}

Blocks = Sequence[tuple[int, int]]
#: a way's hops: senders, receivers, the rounds each is in flight in and the first unit
#: each carries (of every rank's block cut into segments, as :class:`Messages` counts them)
Way = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


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
    else:
        check_int(segments, "segments", 1, note=" or None (chosen from count and nranks)")
    return {"segments": segments}


def _allreduce(rank: int, nranks: int, count: int, segments: int) -> list[Lane]:
    p, r = nranks, rank
    starts, stops = splits(0, count, segments)
    lanes: list[Lane] = []
    if r > 0:
        lanes.append(lane(r - 1, new_recv, r - 1, starts, stops, True))
    if r < p - 1:
        lanes.append(lane(r, new_send, r + 1, starts, stops))
        lanes.append(lane(2 * p - 3 - r, new_recv, r + 1, starts, stops))
    if r > 0:
        lanes.append(lane(2 * p - 2 - r, new_send, r - 1, starts, stops))
    # a round holds its segments in increasing order, and the lane that starts later
    # carries the earlier segment; the sort is stable, so ties keep the order above
    lanes.sort(key=lambda entry: -entry.first_round)
    return lanes


@lru_cache(maxsize=8)
def _units(blocks: tuple[tuple[int, int], ...], m: int) -> tuple[tuple[int, ...], ...]:
    """Every block cut into ``m`` segments, in block order and in reverse block order.

    Returns the starts and stops of the segments of blocks ``0, 1, ..., p-1`` and those
    of blocks ``p-1, ..., 1, 0`` (each block's segments in increasing order); cached,
    since every rank of a schedule reads the same ones.
    """
    parts = [splits(lo, hi, m) for lo, hi in blocks]
    forward = [tuple(x for starts, _ in parts for x in starts),
               tuple(x for _, stops in parts for x in stops)]
    backward = [tuple(x for starts, _ in parts[::-1] for x in starts),
                tuple(x for _, stops in parts[::-1] for x in stops)]
    return (*forward, *backward)


def _late(nranks: int, owner: int, m: int) -> int:
    """1 if both partial sums of a segment reach ``owner`` in the same round, else 0.

    The one from the right then travels a round later (sent and received), so that the
    two reductions into the same range fall in different steps.
    """
    return int(0 < owner < nranks - 1 and (nranks - 1 - 2 * owner) * (m - 1) == 0)


def _delayed(first_round: int, make: Callable[..., Op], peer: int, starts: Sequence[int],
             stops: Sequence[int], split_at: int, late: int, *flags: bool) -> list[Lane]:
    """Two lanes: units before ``split_at`` one per round from ``first_round`` on, the
    rest likewise but ``late`` rounds later."""
    return [lane(first_round, make, peer, starts[:split_at], stops[:split_at], *flags),
            lane(first_round + split_at + late, make, peer, starts[split_at:],
                 stops[split_at:], *flags)]


def _reduce_scatter(rank: int, nranks: int, blocks: Blocks, m: int) -> list[Lane]:
    p, r = nranks, rank
    # right-going unit k: farthest block first; left-going unit k: block 0 first
    left_starts, left_stops, right_starts, right_stops = _units(tuple(blocks), m)
    lanes: list[Lane] = []
    if r > 0:
        n = (p - r) * m
        lanes.append(lane(r - 1, new_recv, r - 1, right_starts[:n], right_stops[:n], True))
        n = r * m
        lanes += _delayed(p - 1 - r, new_send, r - 1, left_starts[:n], left_stops[:n],
                          (r - 1) * m, _late(p, r - 1, m))
    if r < p - 1:
        n = (p - 1 - r) * m
        lanes.append(lane(r, new_send, r + 1, right_starts[:n], right_stops[:n]))
        n = (r + 1) * m
        lanes += _delayed(p - 2 - r, new_recv, r + 1, left_starts[:n], left_stops[:n],
                          r * m, _late(p, r, m), True)
    return lanes


def _allgather(rank: int, nranks: int, blocks: Blocks, m: int) -> list[Lane]:
    p, r = nranks, rank
    # blocks r, r-1, ..., 0 start at backward unit (p-1-r)*m; r+1, ..., p-1 at forward (r+1)*m
    forward_starts, forward_stops, backward_starts, backward_stops = _units(tuple(blocks), m)
    lanes: list[Lane] = []
    if r < p - 1:
        lanes.append(lane(0, new_send, r + 1, backward_starts[(p - 1 - r) * m:],
                          backward_stops[(p - 1 - r) * m:]))
        lanes.append(lane(0, new_recv, r + 1, forward_starts[(r + 1) * m:],
                          forward_stops[(r + 1) * m:]))
    if r > 0:
        lanes.append(lane(0, new_recv, r - 1, backward_starts[(p - r) * m:],
                          backward_stops[(p - r) * m:]))
        lanes.append(lane(0, new_send, r - 1, forward_starts[r * m:], forward_stops[r * m:]))
    return lanes


def rank_lanes(collective: str, rank: int, nranks: int, count: int, blocks: Blocks,
               segments: int) -> list[Lane]:
    """Return the pipeline operations of ``rank`` as lanes (see the module docstring).

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
    list of Lane
        A lane per neighbour and direction (split where a unit travels late), in the
        order :func:`rank_steps` merges them.
    """
    if collective == "allreduce":
        return _allreduce(rank, nranks, count, segments)
    if collective == "reduce_scatter":
        return _reduce_scatter(rank, nranks, blocks, segments)
    return _allgather(rank, nranks, blocks, segments)


@gc_paused()
def rank_steps(collective: str, rank: int, nranks: int, count: int, blocks: Blocks,
               segments: int) -> list[Step]:
    """Return the pipeline steps of ``rank``: :func:`rank_lanes` (same parameters)
    merged round by round by :func:`~collectives.rounds.merge_lanes`.

    Returns
    -------
    list of Step
        Only ``rank``'s steps, in order; rounds in which it does nothing are left out.
    """
    return merge_lanes(rank_lanes(collective, rank, nranks, count, blocks, segments))


def traffic(collective: str, q: int, segments: int = 1) -> list[Round]:
    """The chain's messages (:mod:`collectives.traffic`): AllReduce's ``S`` segments down
    the chain (reduced) and back; ReduceScatter's and AllGather's rounds of the module
    docstring, both directions in flight (ReduceScatter's at one segment then the inner
    hops' late units, in a round of their own).

    Parameters
    ----------
    collective : str
        The collective.
    q : int
        Positions.
    segments : int, optional
        Segments (of the vector for AllReduce, of each block otherwise).

    Returns
    -------
    list of Round
    """
    if q < 2:
        return []
    part = largest_part(segments) if collective == "allreduce" else nested_part(q, segments)
    right, left, last = _in_flight(collective, q, segments)
    ways = ((right, collective != "allgather"), (left, collective == "reduce_scatter"))
    # ReduceScatter's and AllGather's hops run from their first round to their last,
    # a rank's step on both of its hops each way: played rank by rank (the dataflow)
    # they take what the lock-step rounds give them (AllGather to 2e-14, ReduceScatter
    # within 1.0%, on dgx_h100 of 1-8 nodes under every protocol), for most of the
    # dataflow's cost (selection's three tables on 8 nodes: 0.62 s against 0.38 s;
    # on flat the model plays them: the chain's ends run ahead of the rounds there);
    # AllReduce's segments run ahead of the rounds behind a network crossing
    held = collective != "allreduce"
    # both ways in one round: a link carries a message each way of every channel whose
    # hops cross it (a rank's two sends, or two receives, share its ports; so do the
    # channels' hops at the ports and network links they share), in the rounds they overlap
    # a hop carries a unit a round: AllReduce's segment k in its k-th round (at uneven
    # segments the first count % S one element more than the rest); ReduceScatter's and
    # AllGather's segments of the blocks in the order it sends them (right-going from
    # the last block, left-going from the first), blocks and segments of uneven sizes
    blocks = 1 if collective == "allreduce" else q
    rounds = [Round(1, tuple(Messages(src, dst, part, reduce, pieced=False, rounds=own,
                                      cut=segments, blocks=blocks, backward=backward,
                                      units=units)
                             for ((src, dst, own, units), reduce), backward
                             in zip(ways, (blocks > 1, False))), paced=True, held=held)]
    if last is not None:
        src, dst = last
        # each carries its receiver's block (a unit of the blocks' one segments)
        rounds.append(Round(1, (Messages(src, dst, part, True, pieced=False, cut=segments,
                                         blocks=q, units=dst),)))
    return rounds


def _in_flight(collective: str, q: int, m: int) -> tuple[Way, Way, tuple[np.ndarray, ...] | None]:
    """Each way's hops, ``v -> v + 1`` (right) and ``v + 1 -> v`` (left), as senders,
    receivers, the rounds each carries its segments in (``(hops, 2)``: first round,
    round after the last) and its first unit (AllReduce's segment; else of the blocks'
    segments from the last block, right, or from the first, left), as
    :func:`rank_lanes` posts them, and the hops of a last
    round of their own (senders, receivers; None without): AllReduce's rank ``r`` sends
    right from round ``r`` and left from round ``2p - 2 - r``; ReduceScatter's right
    from round ``r`` and left from round ``p - 1 - r``.  A hop that travels late
    (:func:`_late`) carries nothing for a round: at one segment every inner hop, in
    round ``p - 2`` (which holds the network crossings alone), its last unit then in
    round ``p - 1``, after every other hop's (the last round; as two runs of the paced
    rounds it would be as many messages more, and the budgets of
    :mod:`simulator.analytic` count them); else (the middle hop of an odd chain) as two
    runs with the round between."""
    v = np.arange(q - 1)
    if collective == "allreduce":
        return ((v, v + 1, np.column_stack([v, v + m]), 0 * v),
                (v + 1, v, np.column_stack([2 * q - 3 - v, 2 * q - 3 - v + m]), 0 * v), None)
    if collective == "allgather":
        # rank r sends right blocks r, r-1, ..., 0 and left blocks r, r+1, ..., p-1
        return ((v, v + 1, np.column_stack([0 * v, (v + 1) * m]), (q - 1 - v) * m),
                (v + 1, v, np.column_stack([0 * v, (q - 1 - v) * m]), (v + 1) * m), None)
    late = np.flatnonzero((0 < v) & ((q - 1 - 2 * v) * (m - 1) == 0))  # _late
    start = q - 2 - v
    split = start + v * m  # where a late hop's units travel a round later
    end = start + (v + 1) * m
    end[late] = split[late]
    right = (v, v + 1, np.column_stack([v, v + (q - 1 - v) * m]), 0 * v)
    if m == 1 or not len(late):
        return right, (v + 1, v, np.column_stack([start, end]), 0 * v), \
            ((late + 1, late) if len(late) else None)
    again = np.column_stack([split[late] + 1, split[late] + 1 + m])
    return right, (np.r_[v + 1, late + 1], np.r_[v, late],
                   np.r_[np.column_stack([start, end]), again], np.r_[0 * v, late * m]), None


def candidates(collective: str, channels: int, ranks_per_node: int | None) -> tuple[Params, ...]:
    """What selection tries: ``SEGMENTS_TRIED[collective]`` segments, divided by the
    channels (rounded up), so that the vector is cut into as many pieces at any channel
    count.

    Its arguments are those :mod:`collectives.registry` describes.
    """
    return tuple(with_channels(channels, (("segments", s),))
                 for s in sorted({-(-s // channels) for s in SEGMENTS_TRIED[collective]}))


def pieces(collective: str, nranks: int, params: Any) -> int:
    """Messages' worth a channel cuts its vector into: ``segments`` of the vector
    (AllReduce) or of every rank's block.

    Its arguments are those :mod:`collectives.registry` describes.
    """
    return params.get("segments", 1) * (1 if collective == "allreduce" else nranks)


ALGORITHM = register(Algorithm(
    name="pipeline", collectives=frozenset(BLOCK_COLLECTIVES), params={"segments": None},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, lanes=rank_lanes,
    within_blocks=frozenset({"reduce_scatter", "allgather"}), candidates=candidates,
    orders=rail_rings, pieces=pieces,
    # coll_tuned_allreduce_decision.c: 2 is "nonoverlapping" (a reduce, then a broadcast)
    ompi=ompi_ids({"allreduce": (2, "nonoverlapping")})))
