"""Linear AllToAll(v): every send and receive posted at once (Open MPI's basic linear;
one grouped NCCL send/recv).

One step: the copy of the rank's own block, ``p - 1`` sends and ``p - 1`` receives,
which share the rank's port on the single-port alpha-beta model::

    T = alpha + (p - 1) * n * beta
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..layout import alltoall_blocks, peer_counts
from ..registry import Algorithm, ompi_ids, one_candidate, register
from ..schedule import Op, Step, new_recv, new_send
from ..traffic import Messages, Round
from .pairwise import distance_buckets, largest_of, own_copy, resolve_params, working

__all__ = ["ALGORITHM", "resolve_params", "working", "rank_steps",
           "traffic"]

def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]],
               counts: tuple[tuple[int, ...], ...] | None = None) -> list[Step]:
    """Return ``rank``'s one step: its copy, its sends to ``r + 1, r + 2, ...`` and its
    receives from ``r - 1, r - 2, ...`` (parameters as
    :func:`collectives.algorithms.pairwise.rank_steps`)."""
    matrix = peer_counts(count, nranks, counts)
    sends, recvs = alltoall_blocks(matrix, rank)
    peers = range(1, nranks)
    ops: list[Op] = [own_copy(matrix, rank)]
    ops += [new_send((rank + s) % nranks, *sends[(rank + s) % nranks]) for s in peers]
    ops += [new_recv((rank - s) % nranks, *recvs[(rank - s) % nranks]) for s in peers]
    return [Step(tuple(ops))]


def traffic(collective: str, q: int,
            counts: tuple[tuple[int, ...], ...] | None = None) -> list[Round]:
    """One round carrying every message, a class per distance (:mod:`collectives.traffic`);
    past the near distances without ``counts``, a class per bucket of far distances
    (:func:`~collectives.algorithms.pairwise.distance_buckets`), each rank sending
    ``r + s`` (the bucket's first) the blocks of the bucket's width as one message: each
    port carries the bytes it does (on a flat machine the time is the same).

    Parameters
    ----------
    collective : {"alltoall"}
        The collective.
    q : int
        Positions.
    counts : tuple of tuple of int or None
        Per-peer counts, which size each class's largest message.

    Returns
    -------
    list of Round
    """
    if q < 2:
        return []
    v = np.arange(q)
    firsts, widths = distance_buckets(q, counts is not None)
    classes = tuple(Messages(v, (v + s) % q, _blocks(largest_of(counts, v, (v + s) % q), width),
                             False, pieced=False)
                    for s, width in zip(firsts.tolist(), widths.tolist()))
    return [Round(1, classes)]


def _blocks(elements: Any, width: int) -> Any:
    """``elements`` of ``width`` blocks (one message for a bucket of distances)."""
    if width == 1:
        return elements
    return lambda count: width * np.asarray(elements(count))


ALGORITHM = register(Algorithm(
    name="linear", collectives=frozenset({"alltoall"}), params={"counts": None},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    working=working, candidates=one_candidate,
    # coll_tuned_alltoall_decision.c: 1 is "linear"
    ompi=ompi_ids({"alltoall": (1, "linear")})))
