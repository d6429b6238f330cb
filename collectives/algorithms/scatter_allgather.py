"""Scatter + ring AllGather Broadcast (van de Geijn; MPICH's for long messages).

The vector is cut into ``p`` blocks, block ``v`` for virtual rank ``v``
(:mod:`collectives.rooted`).  A binomial tree scatters them (round ``t`` of
``L = ceil(log2 p)``: ``v`` sends ``v + m`` the blocks of its subtree,
``v + m .. v + 2m - 1``, ``m = 2**(L-1-t)``), then a ring over the virtual ranks
gathers them (``p - 1`` rounds of one block).  On the single-port alpha-beta model,
with ``n`` dividing by ``p`` a power of two::

    T = (L + p - 1) * alpha + 2 (p - 1) / p * n * beta

against ``L * (alpha + n * beta)`` for the binomial tree.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..layout import splits
from ..registry import Algorithm, ompi_ids, one_candidate, register
from ..rooted import check_root, levels, lowbit, real, virtual
from ..rounds import merge_lanes
from ..schedule import Op, Step, new_recv, new_send
from ..traffic import Messages, Round, largest_part, window_part
from . import ring
from .binomial import children

__all__ = ["ALGORITHM", "resolve_params", "rank_steps", "traffic",
           "subtree", "ring_lanes"]

def resolve_params(collective: str, nranks: int, count: int, root: int = 0) -> dict[str, Any]:
    """Check the root (the only parameter): ``{"root": int}``; ValueError if not a rank."""
    return {"root": check_root(root, nranks)}


def subtree(v: int, nranks: int, count: int) -> tuple[int, int]:
    """The element range of the blocks of virtual rank ``v``'s binomial subtree.

    Examples
    --------
    >>> subtree(4, 6, 12), subtree(0, 6, 12)
    ((8, 12), (0, 12))
    """
    starts, stops = splits(0, count, nranks)
    return starts[v], stops[min(v + lowbit(v, nranks), nranks) - 1]


def ring_lanes(collective: str, v: int, nranks: int, count: int, root: int) -> list[Any]:
    """Ring's lanes for ``collective`` over the virtual ranks (block ``u`` owned by
    virtual rank ``u``), their peers made real."""
    blocks = tuple(zip(*splits(0, count, nranks)))
    return [each._replace(peer=real(each.peer, root, nranks))
            for each in ring.rank_lanes(collective, v, nranks, count, blocks)]


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]], root: int = 0) -> list[Step]:
    """Return ``rank``'s steps: its scatter receive and sends, one a step, then the ring.

    Parameters
    ----------
    collective : {"broadcast"}
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
    ops: list[Op] = [new_recv(real(v - lowbit(v, p), root, p), *subtree(v, p, count))] \
        if v else []
    ops += [new_send(real(c, root, p), *subtree(c, p, count)) for c in children(v, p)]
    return [Step((op,)) for op in ops] + merge_lanes(ring_lanes("allgather", v, p, count, root))


def tree_rounds(q: int, root: int, reduce: bool) -> list[Round]:
    """The binomial scatter's rounds (or, ``reduce``, the gather's, backwards): round
    ``t`` carries ``m`` blocks from ``v`` to ``v + m`` (fewer where they pass the last),
    each message sent though empty (it costs its latency), and its window of blocks.

    Every class is priced at the root's message, blocks ``m .. min(2m, q) - 1``: the
    largest of its round, as the vector's first blocks are the larger ones.  The root
    takes part in every round, one after another, so the scatter ends no sooner than
    the sum of its messages (and its rounds' slowest are no longer), and the ring then
    carries block 0, the largest, from the root on (Reduce: the ring's block 0 ends at
    the root, reduced over every hop, before the root's gather): the lock-step sum is
    the simulator's on a contention-free machine at every rank count, where blocks of
    ``m`` at the largest part (``largest_part(q, m)``) were up to +45% at ``q = 33``
    (round 0's message is one block, not 32)."""
    rounds = []
    for t in range(levels(q)):
        mask = 1 << (levels(q) - 1 - t)
        v = np.arange(0, q - mask, 2 * mask)
        near, far = (v + root) % q, (v + mask + root) % q
        windows = np.stack([v + mask, np.minimum(v + 2 * mask, q)], axis=1)
        rounds.append(Round(1, (Messages(far if reduce else near, near if reduce else far,
                                         window_part(q, mask, min(2 * mask, q)), False,
                                         pieced=False, windows=windows),)))
    return rounds[::-1] if reduce else rounds


def ring_rounds(q: int, root: int, reduce: bool) -> list[Round]:
    """The ring's ``q - 1`` rounds of one block, over the virtual ranks (none for an
    empty vector, which sends nothing)."""
    v = np.arange(q)
    hops = Messages((v + root) % q, (v + 1 + root) % q, largest_part(q), reduce, pieced=False,
                    skip_empty=True)
    return [Round(q - 1, (hops,))]


def traffic(collective: str, q: int, root: int = 0) -> list[Round]:
    """The scatter's rounds, then the ring's (:mod:`collectives.traffic`).

    Parameters
    ----------
    collective : {"broadcast"}
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
    return tree_rounds(q, root, False) + ring_rounds(q, root, False)


ALGORITHM = register(Algorithm(
    name="scatter_allgather", collectives=frozenset({"broadcast"}), params={"root": 0},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    candidates=one_candidate, empty_sends=False,
    # coll_tuned_bcast_decision.c: 9 is "scatter_allgather_ring" (binomial scatter, ring)
    ompi=ompi_ids({"broadcast": (9, "scatter_allgather_ring")})))
