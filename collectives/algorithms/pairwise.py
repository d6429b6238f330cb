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
           "traffic", "own_copy", "largest_of"]

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


def largest_of(counts: tuple[tuple[int, ...], ...] | None, pairs: Any) -> Any:
    """Elements of a class's largest message: ``count`` a message without ``counts``,
    else the largest of ``counts`` over ``pairs`` (an array of ``(src, dst)`` rows)."""
    if counts is None:
        return np.asarray
    largest = max((counts[a][b] for a, b in pairs.tolist()), default=0)
    return lambda count: np.minimum(np.asarray(count), largest)


def traffic(collective: str, q: int,
            counts: tuple[tuple[int, ...], ...] | None = None) -> list[Round]:
    """One round per distance ``s``, every rank sending to ``r + s``
    (:mod:`collectives.traffic`).

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
    for s in range(1, q):
        dst = (v + s) % q
        rounds.append(Round(1, (Messages(v, dst, largest_of(counts, np.stack([v, dst], 1)),
                                         False, pieced=False),)))
    return rounds


ALGORITHM = register(Algorithm(
    name="pairwise", collectives=frozenset({"alltoall"}), params={"counts": None},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    working=working, candidates=one_candidate,
    # coll_tuned_alltoall_decision.c: 2 is "pairwise"
    ompi=ompi_ids({"alltoall": (2, "pairwise")})))
