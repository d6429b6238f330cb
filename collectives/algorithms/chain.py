"""Pipelined chain Broadcast and Reduce: segments stream along ``root, root+1, ...``.

NCCL's ring Broadcast and Reduce (a ring opened at the root).  The vector is cut into
``S = segments`` segments; virtual rank ``v`` (:mod:`collectives.rooted`) sends segment
``k`` on at round ``k + v`` (Broadcast, towards ``v + 1``) or ``k + p - 1 - v`` (Reduce,
towards ``v - 1``, reduced into each rank's own on the way), having received it the
round before.  ``S + p - 2`` rounds, each one segment per link, so on the single-port
alpha-beta(-gamma) model::

    T = (S + p - 2) * (alpha + n/S * beta)              Broadcast
    T = (S + p - 2) * (alpha + n/S * (beta + gamma))    Reduce

The default ``segments`` aims at segments of :data:`SEGMENT_ELEMENTS` elements, and at
least ``p - 1`` (enough to fill the chain) and at most ``count``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from topology.checks import check_int

from ..layout import SEGMENT_ELEMENTS, splits
from ..registry import Algorithm, Params, ompi_ids, register
from ..rooted import check_root, real, virtual
from ..rounds import lane, merge_lanes
from ..schedule import Step, new_recv, new_send
from ..traffic import Elements, Messages, Round, largest_part, last_parts

__all__ = ["ALGORITHM", "SEGMENTS_TRIED", "resolve_params", "rank_steps", "traffic",
           "candidates", "pieces"]

#: segments selection tries (the default, chosen from the size, among them)
SEGMENTS_TRIED: tuple[int | None, ...] = (None, 1, 4, 16, 64)

def resolve_params(collective: str, nranks: int, count: int, root: int = 0,
                   segments: int | None = None) -> dict[str, Any]:
    """Check the root and fill in the default segment count.

    Parameters
    ----------
    collective : {"broadcast", "reduce"}
        The collective.
    nranks, count : int
        Ranks and elements of the vector.
    root : int
        The rank that broadcasts or receives the reduction.
    segments : int or None
        Segments, at least 1; None chooses segments of about :data:`SEGMENT_ELEMENTS`
        elements, at least ``nranks - 1`` of them and at most ``count``.

    Returns
    -------
    dict
        ``{"root": int, "segments": int}``.

    Raises
    ------
    ValueError
        For a root that is not a rank, or segments not None nor an integer >= 1.

    Examples
    --------
    >>> resolve_params("broadcast", 4, 1000)
    {'root': 0, 'segments': 3}
    """
    check_root(root, nranks)
    if segments is None:
        segments = max(1, min(count, max(nranks - 1, -(-count // SEGMENT_ELEMENTS))))
    else:
        check_int(segments, "segments", 1, note=" or None (chosen from count and nranks)")
    return {"root": root, "segments": segments}


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]], root: int = 0,
               segments: int = 1) -> list[Step]:
    """Return the chain steps of ``rank``: a receive from the previous rank of the chain
    and a send to the next, one segment each, every round.

    Parameters
    ----------
    collective : {"broadcast", "reduce"}
        The collective.
    rank, nranks, count : int
        The rank, the number of ranks and elements of the vector.
    blocks : sequence of (int, int)
        Unused (the chain cuts the whole vector into segments).
    root, segments : int
        Resolved parameters (:func:`resolve_params`).

    Returns
    -------
    list of Step
        ``segments`` steps at the chain's ends, ``segments + 1`` inside it; none for an
        empty vector or one rank.
    """
    if nranks == 1 or count == 0:
        return []
    p, v = nranks, virtual(rank, root, nranks)
    starts, stops = splits(0, count, segments)
    if collective == "broadcast":
        lanes = ([lane(v, new_send, real(v + 1, root, p), starts, stops)] if v < p - 1 else []) \
            + ([lane(v - 1, new_recv, real(v - 1, root, p), starts, stops)] if v else [])
    else:
        first = p - 1 - v
        lanes = ([lane(first, new_send, real(v - 1, root, p), starts, stops)] if v else []) \
            + ([lane(first - 1, new_recv, real(v + 1, root, p), starts, stops, True)]
               if v < p - 1 else [])
    return merge_lanes(lanes)


def traffic(collective: str, q: int, root: int = 0, segments: int = 1) -> list[Round]:
    """The chain's messages (:mod:`collectives.traffic`): ``segments`` segments over its
    ``q - 1`` hops, one after another.

    The first segment (the largest) crosses every hop; each later one follows it a hop
    behind, at the pace of the slowest hop, at its own size: of ``count = b S + e``
    elements (``S = segments``), the segments are ``e`` of ``b + 1`` elements then
    ``S - e`` of ``b``, each sent though empty (it costs its latency).  So the later
    segments are ``S - 1`` waits at the slowest hop, so many of the largest and the
    rest of ``b`` elements, each number told by its bits: chain rounds that wait
    ``2**j`` times (``Round.waits``) and carry something where bit ``j`` of it is set
    (:attr:`collectives.traffic.Messages.kinds`)::

        T = (q - 1) t(b + [e > 0]) + sum over k = 2..S of t(size of segment k)

    Parameters
    ----------
    collective : {"broadcast", "reduce"}
        The collective.
    q : int
        Positions.
    root, segments : int
        Resolved parameters.

    Returns
    -------
    list of Round
    """
    if q < 2:
        return []
    v = np.arange(q - 1)
    near, far = (v + root) % q, (v + 1 + root) % q
    reduce = collective == "reduce"
    src, dst = (far, near) if reduce else (near, far)
    largest = largest_part(segments)
    first = Round(1, (Messages(src, dst, largest, reduce, pieced=False, skip_empty=True),),
                  chain=1)
    return [first, *_later_rounds(src, dst, reduce, segments, largest, _later_largest),
            *_later_rounds(src, dst, reduce, segments, last_parts(segments, 1),
                           _later_smaller)]


def _later_rounds(src: np.ndarray, dst: np.ndarray, reduce: bool, segments: int,
                  elements: Elements, number: Callable[[int], Elements]) -> list[Round]:
    """Waits at the slowest hop (``src -> dst``) of segments of ``elements``, so many at
    each count as ``number(segments)`` says: a chain round that waits ``2**j`` times per
    bit ``j`` of the most, carrying something where that bit is set (sent though
    empty)."""
    kinds = np.zeros(len(src), dtype=np.int64)
    return [Round(1, (Messages(src, dst, elements, reduce, pieced=False, kinds=kinds,
                               carries=_has_bit(number(segments), bit)),),
                  chain=1 << bit, waits=True)
            for bit in range((segments - 1).bit_length())]


def _later_largest(segments: int) -> Elements:
    """How many of the segments after the first are of the largest part's size: all
    where the parts are equal, else those one element larger but the first."""
    def number(count: np.ndarray) -> np.ndarray:
        extra = count % segments
        return np.where(extra > 0, extra - 1, segments - 1)
    return number


def _later_smaller(segments: int) -> Elements:
    """How many of the segments after the first are one element smaller than the
    largest (:func:`_later_largest`: the others)."""
    def number(count: np.ndarray) -> np.ndarray:
        return segments - 1 - _later_largest(segments)(count)
    return number


def _has_bit(number: Elements, bit: int) -> Elements:
    """Whether bit ``bit`` of ``number`` is set at each count (one kind x counts)."""
    def carries(count: np.ndarray) -> np.ndarray:
        return ((number(count) >> bit) & 1).astype(bool)[None, :]
    return carries


def candidates(collective: str, channels: int, ranks_per_node: int | None) -> tuple[Params, ...]:
    """What selection tries: :data:`SEGMENTS_TRIED` segments, on one channel.

    Parameters
    ----------
    collective : str
        The collective (unused).
    channels : int
        Channels: none at more than one.
    ranks_per_node : int or None
        Unused.

    Returns
    -------
    tuple of Params
    """
    if channels > 1:
        return ()
    return tuple((("segments", s),) if s else () for s in SEGMENTS_TRIED)


def pieces(collective: str, nranks: int, params: Any) -> int:
    """Messages' worth the chain cuts its vector into: its ``segments`` (default 1).

    Parameters
    ----------
    collective : str
        The collective (unused).
    nranks : int
        Ranks (unused).
    params : mapping
        The candidate's parameters.

    Returns
    -------
    int
    """
    return params.get("segments") or 1


ALGORITHM = register(Algorithm(
    name="chain", collectives=frozenset({"broadcast", "reduce"}), params={"root": 0, "segments": None},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    candidates=candidates, pieces=pieces, empty_sends=False, nccl="ring",
    # coll_tuned_{bcast,reduce}_decision.c: 3 is "pipeline" (a chain of fanout 1, segmented)
    ompi=ompi_ids({"broadcast": (3, "pipeline"), "reduce": (3, "pipeline")})))
