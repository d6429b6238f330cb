"""Reduce-scatter + gather Reduce (Rabenseifner; MPICH's and Open MPI's for long messages).

A ring ReduceScatter over the virtual ranks (:mod:`collectives.rooted`) leaves block
``v`` reduced at virtual rank ``v`` (``p - 1`` rounds of one block), then a binomial
tree gathers the blocks at the root (round ``t``: ``v`` with ``v mod 2m = m``,
``m = 2**t``, sends ``v - m`` the blocks ``v .. v + m - 1`` it holds).  On the
single-port alpha-beta-gamma model, with ``n`` dividing by ``p`` a power of two::

    T = (p - 1 + L) * alpha + 2 (p - 1) / p * n * beta + (p - 1) / p * n * gamma

against ``L * (alpha + n * (beta + gamma))`` for the binomial tree.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..registry import Algorithm, ompi_ids, one_candidate, register
from ..rooted import check_root, lowbit, real, virtual
from ..rounds import merge_lanes
from ..schedule import Op, Step, new_recv, new_send
from ..traffic import Round
from .binomial import children
from .scatter_allgather import ring_lanes, ring_rounds, subtree, tree_rounds

__all__ = ["ALGORITHM", "resolve_params", "rank_steps", "traffic"]

def resolve_params(collective: str, nranks: int, count: int, root: int = 0) -> dict[str, Any]:
    """Check the root (the only parameter): ``{"root": int}``; ValueError if not a rank."""
    return {"root": check_root(root, nranks)}


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]], root: int = 0) -> list[Step]:
    """Return ``rank``'s steps: the ring's, then its gather receives (smallest subtree
    first) and its send to its parent, one a step.

    Parameters
    ----------
    collective : {"reduce"}
        The collective.
    rank, nranks, count : int
        The rank, the number of ranks and elements of the vector.
    blocks : sequence of (int, int)
        Unused (blocks follow the virtual ranks).
    root : int
        The root.

    Returns
    -------
    list of Step
        None for an empty vector.
    """
    if count == 0:
        return []
    p, v = nranks, virtual(rank, root, nranks)
    ops: list[Op] = [new_recv(real(c, root, p), *subtree(c, p, count))
                     for c in reversed(children(v, p))]
    ops += [new_send(real(v - lowbit(v, p), root, p), *subtree(v, p, count))] if v else []
    return merge_lanes(ring_lanes("reduce_scatter", v, p, count, root)) + \
        [Step((op,)) for op in ops]


def traffic(collective: str, q: int, root: int = 0) -> list[Round]:
    """The ring's rounds (reduced), then the gather's (:mod:`collectives.traffic`).

    Parameters
    ----------
    collective : {"reduce"}
        The collective.
    q : int
        Positions.
    root : int
        The root.

    Returns
    -------
    list of Round
    """
    if q < 2:
        return []
    return ring_rounds(q, root, True) + tree_rounds(q, root, True)


ALGORITHM = register(Algorithm(
    name="rabenseifner", collectives=frozenset({"reduce"}), params={"root": 0},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    candidates=one_candidate, empty_sends=False,
    # coll_tuned_reduce_decision.c: 7 is "rabenseifner" (its reduce-scatter halves
    # recursively where ours is a ring; both then gather over a binomial tree)
    ompi=ompi_ids({"reduce": (7, "rabenseifner")})))
