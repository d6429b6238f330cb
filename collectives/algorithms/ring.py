"""Ring: reduce-scatter then allgather around the ring ``0 -> 1 -> ... -> p-1 -> 0``.

Each of the ``p - 1`` reduce-scatter steps sends one block to the next rank and reduces
the block received from the previous rank; after them rank ``r`` holds the reduced
block ``r``. Each of the ``p - 1`` allgather steps forwards the block received last.
AllReduce is both phases (``2(p-1)`` steps, ``2(p-1)/p`` of the vector sent per rank);
ReduceScatter and AllGather are one phase each (``(p-1)/p`` of the vector).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from topology.channels import rail_rings

from ..gcpause import gc_paused
from ..registry import Algorithm, Params, ompi_ids, register, with_channels
from ..rounds import Lane, Window, lane, merge_lanes
from ..schedule import BLOCK_COLLECTIVES, Step, new_recv, new_send
from ..traffic import Messages, Round, largest_part

__all__ = ["ALGORITHM", "resolve_params", "rank_lanes", "rank_steps", "traffic", "candidates"]


def resolve_params(collective: str, nranks: int, count: int) -> dict[str, Any]:
    """Ring takes no tuning parameters.

    Parameters
    ----------
    collective : str
        The collective (unused).
    nranks : int
        Number of ranks (unused).
    count : int
        Elements of the vector (unused).

    Returns
    -------
    dict[str, Any]
        Always empty.
    """
    return {}


def rank_lanes(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]]) -> list[Lane]:
    """Return the ring operations of ``rank`` as lanes: its sends to the next rank, then
    its receives from the previous one (reducing, then copying).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective; anything other than ReduceScatter or AllGather runs both phases.
    rank : int
        The rank whose operations to make.
    nranks : int
        Number of ranks.
    count : int
        Elements of the vector (unused: ``blocks`` carries the layout).
    blocks : sequence of (int, int)
        ``blocks[r]``: the element range ``[start, stop)`` rank ``r`` owns.

    Returns
    -------
    list of Lane
        A send lane per phase, then a receive lane per phase; ``nranks - 1`` rounds per
        phase, each lane a :class:`~collectives.rounds.Window` of the blocks in turn.
    """
    if nranks == 1:
        return []
    # entry i of starts/stops is block rank - i (mod nranks), for i in 0..nranks
    first = nranks - rank
    starts, stops = (Window(entries, first, first + nranks + 1) for entries in _rotation(blocks))
    right, left = (rank + 1) % nranks, (rank - 1) % nranks
    lanes: list[Lane] = []
    recvs: list[Lane] = []
    if collective != "allgather":  # round s: send block rank-1-s, reduce block rank-2-s in
        lanes.append(lane(0, new_send, right, starts[1:-1], stops[1:-1]))
        recvs.append(lane(0, new_recv, left, starts[2:], stops[2:], True))
    if collective != "reduce_scatter":  # then: send block rank-s, receive block rank-1-s
        lanes.append(lane(nranks - 1 if lanes else 0, new_send, right, starts[:-2], stops[:-2]))
        recvs.append(lane(nranks - 1 if recvs else 0, new_recv, left, starts[1:-1], stops[1:-1],
                          False))
    return lanes + recvs


#: the tuples of blocks :func:`_rotation` read lately, by id, with its results: every
#: rank of a ring reads the same blocks (a rank of many channels, a few rings' in turn)
_ROTATIONS: dict[int, tuple[Any, Any]] = {}


def _rotation(blocks: Sequence[tuple[int, int]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The starts and the stops of blocks ``0, -1, -2, ...`` (mod ``len(blocks)``), ``2 *
    len(blocks) + 1`` of them: rank ``r``'s blocks ``r, r - 1, ...`` from entry
    ``len(blocks) - r`` on, for every rank a window of the same two tuples."""
    known = _ROTATIONS.get(id(blocks))
    if known is not None and known[0] is blocks:
        return known[1]
    p = len(blocks)
    starts, stops = zip(*(blocks[-j % p] for j in range(2 * p + 1)))
    if isinstance(blocks, tuple):  # a list may change
        if len(_ROTATIONS) >= 64:
            _ROTATIONS.clear()
        _ROTATIONS[id(blocks)] = blocks, (starts, stops)
    return starts, stops


@gc_paused()
def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]]) -> list[Step]:
    """Return the ring steps of ``rank``: :func:`rank_lanes` (same parameters) merged
    round by round by :func:`~collectives.rounds.merge_lanes`.

    Returns
    -------
    list of Step
        ``nranks - 1`` steps per phase, each a send and a receive.
    """
    return merge_lanes(rank_lanes(collective, rank, nranks, count, blocks))


def traffic(collective: str, q: int) -> list[Round]:
    """The ring's messages (:mod:`collectives.traffic`): ``q - 1`` rounds per phase, every
    position sending its largest block to the next (reduced there in the reduce-scatter).

    Parameters
    ----------
    collective : str
        The collective.
    q : int
        Positions.

    Returns
    -------
    list of Round
    """
    if q < 2:
        return []
    v = np.arange(q)
    hops = (v, (v + 1) % q, largest_part(q))
    phases = {"reduce_scatter": (True,), "allgather": (False,)}.get(collective, (True, False))
    return [Round(q - 1, (Messages(*hops, reduce, pieced=False),)) for reduce in phases]


def candidates(collective: str, channels: int, ranks_per_node: int | None) -> tuple[Params, ...]:
    """What selection tries: the ring, at any channel count (one ring per channel).

    Its arguments are those :mod:`collectives.registry` describes.
    """
    return (with_channels(channels),)


ALGORITHM = register(Algorithm(
    name="ring", collectives=frozenset(BLOCK_COLLECTIVES), params={}, resolve=resolve_params,
    traffic=traffic, steps=rank_steps, lanes=rank_lanes, within_blocks=frozenset(BLOCK_COLLECTIVES),
    candidates=candidates, orders=rail_rings,
    # coll_tuned_allreduce_decision.c, coll_tuned_allgather_decision.c: 4 is "ring"
    ompi=ompi_ids({"allreduce": (4, "ring"), "allgather": (4, "ring")}), nccl="ring"))
