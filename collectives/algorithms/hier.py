"""Hierarchical (2-D) collectives, composed of the flat algorithms, not written anew.

The ``p = N * L`` ranks sit on ``N`` nodes of ``L = ranks_per_node`` consecutive ranks
(node ``k`` holds ranks ``k*L .. k*L + L - 1``; local rank ``l``).  The *intra* algorithm
runs among the ranks of one node, the *inner* one among the ranks of equal local rank
(one per node, each on its own rail on a rail-optimised machine):

* **AllReduce**: intra-node ReduceScatter of the vector (local rank ``l`` ends with block
  ``l`` of ``L``, reduced over its node); inter-node AllReduce of block ``l`` among the
  ranks of local rank ``l``; intra-node AllGather.  The network carries ``2(N-1)/N`` of
  ``n/L`` per rank in ``inner``'s few steps.
* **ReduceScatter**: intra-node ReduceScatter in which local rank ``l`` owns the blocks of
  every rank of local rank ``l``; then inter-node ReduceScatter of those blocks.
* **AllGather**: its transpose: inter-node AllGather, then intra-node AllGather.

Each phase is a :class:`~collectives.compose.Part` per group (and per channel); phases run
one after another.  Every element is reduced along one path and then copied, so all ranks
end bitwise identical.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

from ..compose import Part, channel_parts, identity_orders
from ..layout import block
from ..placement import Placement
from ..registry import Algorithm, Params, algorithms, register
from ..schedule import BLOCK_COLLECTIVES
from ..traffic import Phase

__all__ = ["ALGORITHM", "INNER_TRIED", "phases", "traffic", "candidates"]

#: inter-node algorithms selection tries (at more than one channel all but the tree)
INNER_TRIED: tuple[str, ...] = ("ring", "tree", "rhd")

Range = tuple[int, int]


def _algorithm(name: str, value: Any, *served: str) -> Algorithm:
    """The flat algorithm ``value`` that phase ``name`` runs, serving ``served``."""
    allowed = {a.name: a for a in algorithms(composed=False)
               if all(c in a.collectives for c in served)}
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; choose one of {sorted(allowed)}")
    return allowed[value]


def _ranks_per_node(value: Any, nranks: int) -> int:
    if value is None:
        raise ValueError("algorithm 'hier' needs ranks_per_node= (ranks per node, nodes of "
                         "consecutive ranks); topology.ranks_per_node(machine) reads it "
                         "from a topology")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"ranks_per_node={value!r} is not allowed; it must be an integer >= 1")
    if nranks % value:
        raise ValueError(f"ranks_per_node={value} does not divide nranks={nranks}: nodes of "
                         f"unequal size are not supported")
    return value


def _group(module: Algorithm, collective: str, ranks: Sequence[int], pieces: Sequence[Sequence[Range]],
           channels: int) -> list[Part]:
    """``collective`` among ``ranks``, rank ``ranks[v]`` owning the real ranges ``pieces[v]``."""
    placement = Placement.of([r for owned in pieces for r in owned])
    edges = [0]
    for owned in pieces:
        edges.append(edges[-1] + sum(hi - lo for lo, hi in owned))
    blocks = tuple(zip(edges[:-1], edges[1:]))
    return channel_parts(module, collective, ranks, placement, blocks,
                         identity_orders(len(ranks), channels), {})


def phases(collective: str, nranks: int, count: int, channels: int, ranks_per_node: Any,
           inner: Any, intra: Any) -> list[list[Part]]:
    """Return the phases of the hierarchical ``collective`` (see the module docstring).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    nranks, count : int
        Ranks and elements of the full vector.
    channels : int
        Channels of every phase.
    ranks_per_node : int
        Ranks per node; must divide ``nranks``.
    inner, intra : {"ring", "tree", "rhd", "pipeline"}
        The algorithm across nodes and the one inside a node.

    Returns
    -------
    list of list of Part
        Two phases (ReduceScatter, AllGather) or three (AllReduce).

    Raises
    ------
    ValueError
        If ``ranks_per_node`` is missing or does not divide ``nranks``, or an algorithm
        name is unknown.
    """
    size = _ranks_per_node(ranks_per_node, nranks)
    across = _algorithm("inner", inner, collective)
    within = _algorithm("intra", intra, "reduce_scatter", "allgather")
    nodes = nranks // size
    node = [list(range(k * size, (k + 1) * size)) for k in range(nodes)]
    rail = [list(range(local, nranks, size)) for local in range(size)]
    if collective == "allreduce":
        part = [[block(count, size, local)] for local in range(size)]
        # an AllReduce cuts its vector as it likes: the inter-node group's vector is the
        # local rank's block, owned here by the group's first rank
        return [[p for ranks in node
                 for p in _group(within, "reduce_scatter", ranks, part, channels)],
                [p for local, ranks in enumerate(rail)
                 for p in _group(across, "allreduce", ranks,
                                 [part[local]] + [[]] * (nodes - 1), channels)],
                [p for ranks in node
                 for p in _group(within, "allgather", ranks, part, channels)]]
    blocks = [block(count, nranks, r) for r in range(nranks)]
    by_local = [[blocks[r] for r in ranks] for ranks in rail]
    intra_phase = [p for ranks in node for p in _group(within, collective, ranks, by_local,
                                                       channels)]
    inter_phase = [p for ranks in rail for p in _group(across, collective, ranks,
                                                       [[blocks[r]] for r in ranks], channels)]
    return [intra_phase, inter_phase] if collective == "reduce_scatter" else \
        [inter_phase, intra_phase]


@lru_cache(maxsize=16)
def _groups(q: int, size: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """The ranks of every node and of every rail (each local rank's), as tuples: one
    object per rank count and node size, so that every description shares them."""
    return (tuple(tuple(range(k * size, (k + 1) * size)) for k in range(q // size)),
            tuple(tuple(range(local, q, size)) for local in range(size)))


def traffic(collective: str, q: int, ranks_per_node: Any = None, inner: Any = "ring",
            intra: Any = "ring") -> list[Phase]:
    """hier's communication (:mod:`collectives.traffic`): the phases of :func:`phases`,
    each a flat algorithm on every node (intra) or every rail (inner) side by side.

    Parameters
    ----------
    collective : str
        The collective.
    q : int
        Ranks.
    ranks_per_node, inner, intra
        As in :func:`phases`.

    Returns
    -------
    list of Phase
    """
    size = _ranks_per_node(ranks_per_node, q)
    _algorithm("inner", inner, collective), _algorithm("intra", intra, "reduce_scatter",
                                                       "allgather")
    node, rail = _groups(q, size)
    # a ReduceScatter's or AllGather's blocks in a node are those of the ranks of one
    # local rank: apart in the buffer (an AllReduce's, the node's blocks)
    apart = q if collective in ("reduce_scatter", "allgather") else size
    within = {c: Phase(c, intra, node, 1, apart) for c in ("reduce_scatter", "allgather")}
    # across the rails a ReduceScatter's or AllGather's blocks are its ranks': q apart
    across = Phase(collective, inner, rail, size,
                   q if collective in ("reduce_scatter", "allgather") else None)
    return {"allreduce": [within["reduce_scatter"], across, within["allgather"]],
            "reduce_scatter": [within["reduce_scatter"], across],
            "allgather": [across, within["allgather"]]}[collective]


def candidates(collective: str, channels: int, ranks_per_node: int | None) -> tuple[Params, ...]:
    """What selection tries on nodes of ``ranks_per_node`` ranks: an inner algorithm of
    :data:`INNER_TRIED` (the tree on one channel only) and a ring in each node.

    Its arguments are those :mod:`collectives.registry` describes.
    """
    if ranks_per_node is None:
        return ()
    return tuple((("channels", channels), ("inner", inner), ("ranks_per_node", ranks_per_node))
                 for inner in INNER_TRIED if channels == 1 or inner != "tree")


ALGORITHM = register(Algorithm(
    name="hier", collectives=frozenset(BLOCK_COLLECTIVES),
    params={"ranks_per_node": None, "inner": "ring", "intra": "ring"},
    traffic=traffic, phases=phases, candidates=candidates))
