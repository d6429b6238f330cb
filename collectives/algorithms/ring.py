"""Ring: reduce-scatter then allgather around the ring ``0 -> 1 -> ... -> p-1 -> 0``.

Each of the ``p - 1`` reduce-scatter steps sends one block to the next rank and reduces
the block received from the previous rank; after them rank ``r`` holds the reduced
block ``r``. Each of the ``p - 1`` allgather steps forwards the block received last.
AllReduce is both phases (``2(p-1)`` steps, ``2(p-1)/p`` of the vector sent per rank);
ReduceScatter and AllGather are one phase each (``(p-1)/p`` of the vector).
"""

from __future__ import annotations

from typing import Any

from ..schedule import Recv, Send, Step

__all__ = ["PARAMS", "resolve_params", "rank_steps"]

PARAMS: dict[str, Any] = {}


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


def _reduce_scatter(rank: int, nranks: int, blocks) -> list[Step]:
    right, left = (rank + 1) % nranks, (rank - 1) % nranks
    steps = []
    for s in range(nranks - 1):
        out, into = blocks[(rank - s - 1) % nranks], blocks[(rank - s - 2) % nranks]
        steps.append(Step((Send(right, *out), Recv(left, *into, True))))
    return steps


def _allgather(rank: int, nranks: int, blocks) -> list[Step]:
    right, left = (rank + 1) % nranks, (rank - 1) % nranks
    steps = []
    for s in range(nranks - 1):
        out, into = blocks[(rank - s) % nranks], blocks[(rank - s - 1) % nranks]
        steps.append(Step((Send(right, *out), Recv(left, *into))))
    return steps


def rank_steps(collective: str, rank: int, nranks: int, count: int, blocks) -> list[Step]:
    """Return the ring steps of ``rank``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective; anything other than ReduceScatter or AllGather runs both phases.
    rank : int
        The rank whose steps to make.
    nranks : int
        Number of ranks.
    count : int
        Elements of the vector (unused: ``blocks`` carries the layout).
    blocks : sequence of (int, int)
        ``blocks[r]``: the element range ``[start, stop)`` rank ``r`` owns.

    Returns
    -------
    list of Step
        ``nranks - 1`` steps per phase.
    """
    if collective == "reduce_scatter":
        return _reduce_scatter(rank, nranks, blocks)
    if collective == "allgather":
        return _allgather(rank, nranks, blocks)
    return _reduce_scatter(rank, nranks, blocks) + _allgather(rank, nranks, blocks)
