"""Pairwise exchange AllToAll(v) (Open MPI's and MPICH's pairwise; NCCL's grouped
send/recv pairs).

Each rank copies its own block, then in round ``s = 1 .. p-1`` sends its block for
``r + s`` and receives its block from ``r - s`` (mod ``p``): every rank sends and receives
one block a round.  On the single-port alpha-beta model, ``n`` elements a block::

    T = (p - 1) * (alpha + n * beta)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..layout import alltoall_blocks, alltoall_elements, peer_counts
from ..registry import Algorithm, ompi_ids, one_candidate, register
from ..schedule import Copy, Op, Step, new_recv, new_send
from ..traffic import Messages, Round

__all__ = ["ALGORITHM", "resolve_params", "working", "rank_steps",
           "traffic", "own_copy", "largest_of", "distance_buckets", "NEAR_DISTANCES",
           "FAR_BUCKETS"]

#: past ``2 * NEAR_DISTANCES + FAR_BUCKETS`` distances, the descriptions of pairwise and
#: linear AllToAll without per-peer counts list the nearest so many distances each way
#: alone and the others in :data:`FAR_BUCKETS` near-equal buckets of consecutive
#: distances (:func:`distance_buckets`), so that their size stays bounded (every
#: distance listed is ``p(p - 1)`` messages: 268 M at 2,048 DGX nodes, 3.5 GB to price)
NEAR_DISTANCES = 64
#: buckets of the far distances (:data:`NEAR_DISTANCES`)
FAR_BUCKETS = 128

def resolve_params(collective: str, nranks: int, count: int,
                   counts: tuple[tuple[int, ...], ...] | None = None) -> dict[str, Any]:
    """The per-peer counts as given (checked by :func:`collectives.build_schedule`):
    ``{"counts": None}`` for ``count`` elements to every peer."""
    return {"counts": counts}


def working(collective: str, nranks: int, count: int,
            counts: tuple[tuple[int, ...], ...] | None = None) -> int:
    """Elements of the working buffer: the blocks sent and received
    (:func:`collectives.layout.alltoall_elements`)."""
    return alltoall_elements(peer_counts(count, nranks, counts))


def own_copy(counts: tuple[tuple[int, ...], ...], rank: int) -> Copy:
    """The copy of ``rank``'s block to itself, from its send blocks to its receive blocks."""
    sends, recvs = alltoall_blocks(counts, rank)
    return Copy(*sends[rank], recvs[rank][0])


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]],
               counts: tuple[tuple[int, ...], ...] | None = None) -> list[Step]:
    """Return ``rank``'s steps: the copy of its own block, then one exchange a round.

    Parameters
    ----------
    collective : {"alltoall"}
        The collective.
    rank, nranks, count : int
        The rank, the number of ranks and the elements of every message (without
        ``counts``).
    blocks : sequence of (int, int)
        Unused (:func:`collectives.layout.alltoall_blocks` lays the buffer out).
    counts : tuple of tuple of int or None
        ``counts[i][j]``: elements rank ``i`` sends rank ``j``.

    Returns
    -------
    list of Step
        ``nranks - 1`` exchanges (the first with the copy); zero-length messages stay,
        matched on both sides.
    """
    matrix = peer_counts(count, nranks, counts)
    sends, recvs = alltoall_blocks(matrix, rank)
    steps: list[list[Op]] = []
    for s in range(1, nranks):
        to, of = (rank + s) % nranks, (rank - s) % nranks
        steps.append([new_send(to, *sends[to]), new_recv(of, *recvs[of])])
    if steps:
        steps[0].append(own_copy(matrix, rank))
    else:
        steps.append([own_copy(matrix, rank)])
    return [Step(tuple(ops)) for ops in steps]


def largest_of(counts: tuple[tuple[int, ...], ...] | None, src: np.ndarray,
               dst: np.ndarray) -> Any:
    """Elements of a class's largest message: ``count`` a message without ``counts``,
    else the largest of ``counts`` over the pairs ``src[i] -> dst[i]``."""
    if counts is None:
        return np.asarray
    largest = max((counts[a][b] for a, b in zip(src.tolist(), dst.tolist())), default=0)
    return lambda count: np.minimum(np.asarray(count), largest)


def distance_buckets(q: int, listed: bool) -> tuple[np.ndarray, np.ndarray]:
    """The distances ``1 .. q - 1`` a description lists: each bucket's first distance
    and its width (the consecutive distances it stands for).

    Parameters
    ----------
    q : int
        Positions.
    listed : bool
        Whether every distance is listed alone (per-peer counts size each distance's
        messages on their own).

    Returns
    -------
    firsts, widths : numpy.ndarray
        Ints; ``widths`` sum to ``q - 1``.  Every distance alone where ``listed`` or
        ``q - 1 <= 2 * NEAR_DISTANCES + FAR_BUCKETS``; else the nearest
        :data:`NEAR_DISTANCES` each way alone (a machine's nodes and leaves: on a
        machine of alike nodes the far distances are alike in kind of route) and the
        far ones in :data:`FAR_BUCKETS` near-equal buckets.

    Examples
    --------
    >>> firsts, widths = distance_buckets(1000, False)
    >>> len(firsts), int(widths.sum()), int(firsts[64]), int(widths[64])
    (256, 999, 65, 6)
    """
    if listed or q - 1 <= 2 * NEAR_DISTANCES + FAR_BUCKETS:
        return np.arange(1, q), np.ones(max(q - 1, 0), dtype=np.int64)
    far = q - 1 - 2 * NEAR_DISTANCES
    edges = NEAR_DISTANCES + 1 + (np.arange(FAR_BUCKETS + 1) * far) // FAR_BUCKETS
    near = np.arange(1, NEAR_DISTANCES + 1)
    firsts = np.concatenate([near, edges[:-1], q - near[::-1]])
    widths = np.concatenate([np.ones(NEAR_DISTANCES, dtype=np.int64), np.diff(edges),
                             np.ones(NEAR_DISTANCES, dtype=np.int64)])
    return firsts, widths


def traffic(collective: str, q: int,
            counts: tuple[tuple[int, ...], ...] | None = None) -> list[Round]:
    """One round per distance ``s``, every rank sending to ``r + s``
    (:mod:`collectives.traffic`); past the near distances without ``counts``, a round of
    a bucket's first distance repeated its width (:func:`distance_buckets`: on a flat
    machine every round is alike).

    Parameters
    ----------
    collective : {"alltoall"}
        The collective.
    q : int
        Positions.
    counts : tuple of tuple of int or None
        Per-peer counts, which size each round's largest message.

    Returns
    -------
    list of Round
    """
    v = np.arange(q)
    rounds = []
    for s, width in zip(*(a.tolist() for a in distance_buckets(q, counts is not None))):
        dst = (v + s) % q
        rounds.append(Round(width, (Messages(v, dst, largest_of(counts, v, dst), False,
                                             pieced=False),)))
    return rounds


ALGORITHM = register(Algorithm(
    name="pairwise", collectives=frozenset({"alltoall"}), params={"counts": None},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    working=working, candidates=one_candidate,
    # coll_tuned_alltoall_decision.c: 2 is "pairwise"
    ompi=ompi_ids({"alltoall": (2, "pairwise")})))
