"""Binomial tree Broadcast and Reduce (MPICH's and Open MPI's for small messages).

Broadcast: in round ``t`` of ``L = ceil(log2 p)`` every virtual rank ``v`` that holds the
vector and is a multiple of ``2m`` (``m = 2**(L-1-t)``) sends all of it to ``v + m``
(:mod:`collectives.rooted`); a rank receives once, from ``v - lowbit(v)``, and sends in
every later round it has a child.  Reduce runs the rounds backwards: in round ``t``
(``m = 2**t``) ``v`` with ``v mod 2m = m`` sends its partial reduction to ``v - m``,
which reduces it into its own.  ``L`` rounds of the whole vector::

    T = L * (alpha + n * beta)                Broadcast
    T = L * (alpha + n * (beta + gamma))      Reduce
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..registry import Algorithm, ompi_ids, one_candidate, register
from ..rooted import check_root, levels, lowbit, real, virtual
from ..schedule import Step, new_recv, new_send
from ..traffic import Messages, Round

__all__ = ["ALGORITHM", "resolve_params", "rank_steps", "traffic",
           "children"]

def resolve_params(collective: str, nranks: int, count: int, root: int = 0) -> dict[str, Any]:
    """Check the root.

    Parameters
    ----------
    collective : {"broadcast", "reduce"}
        The collective (unused).
    nranks, count : int
        Ranks and elements of the vector.
    root : int
        The rank that broadcasts or receives the reduction.

    Returns
    -------
    dict
        ``{"root": int}``.

    Raises
    ------
    ValueError
        For a root that is not a rank.
    """
    return {"root": check_root(root, nranks)}


def children(v: int, nranks: int) -> list[int]:
    """The virtual ranks ``v`` sends to in a binomial Broadcast, in round order (largest
    subtree first); a Reduce hears from them in the reverse order.

    Examples
    --------
    >>> children(0, 6), children(4, 6), children(1, 6)
    ([4, 2, 1], [5], [])
    """
    mask = lowbit(v, nranks) >> 1
    found = []
    while mask:
        if v + mask < nranks:
            found.append(v + mask)
        mask >>= 1
    return found


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]], root: int = 0) -> list[Step]:
    """Return the binomial tree steps of ``rank``, one operation each.

    Parameters
    ----------
    collective : {"broadcast", "reduce"}
        The collective.
    rank, nranks, count : int
        The rank, the number of ranks and elements of the vector.
    blocks : sequence of (int, int)
        Unused (every message is the whole vector).
    root : int
        The root.

    Returns
    -------
    list of Step
        Broadcast: the receive from the parent, then a send per child; Reduce: a
        reducing receive per child, then the send to the parent. None for an empty
        vector.
    """
    if count == 0:
        return []
    p, v = nranks, virtual(rank, root, nranks)
    kids = [real(c, root, p) for c in children(v, p)]
    parent = [real(v - lowbit(v, p), root, p)] if v else []
    if collective == "broadcast":
        ops = [new_recv(u, 0, count) for u in parent] + [new_send(c, 0, count) for c in kids]
    else:
        ops = [new_recv(c, 0, count, True) for c in reversed(kids)] + \
            [new_send(u, 0, count) for u in parent]
    return [Step((op,)) for op in ops]


def traffic(collective: str, q: int, root: int = 0) -> list[Round]:
    """The tree's messages (:mod:`collectives.traffic`): one round per level, every
    message the whole vector.

    Parameters
    ----------
    collective : {"broadcast", "reduce"}
        The collective.
    q : int
        Positions.
    root : int
        The root.

    Returns
    -------
    list of Round
    """
    rounds = []
    for t in range(levels(q)):
        mask = 1 << (levels(q) - 1 - t)
        v = np.arange(0, q - mask, 2 * mask)
        near, far = (v + root) % q, (v + mask + root) % q
        src, dst = (near, far) if collective == "broadcast" else (far, near)
        rounds.append(Round(1, (Messages(src, dst, _whole, collective == "reduce",
                                         pieced=False, skip_empty=True),)))
    return rounds if collective == "broadcast" else rounds[::-1]


def _whole(count: np.ndarray) -> np.ndarray:
    """Every message of the tree: the whole vector."""
    return np.asarray(count)


ALGORITHM = register(Algorithm(
    name="binomial", collectives=frozenset({"broadcast", "reduce"}), params={"root": 0},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    candidates=one_candidate, empty_sends=False,
    # coll_tuned_bcast_decision.c: 6 is "binomial"; coll_tuned_reduce_decision.c: 5
    ompi=ompi_ids({"broadcast": (6, "binomial"), "reduce": (5, "binomial")})))
