"""Double binary tree: two complementary binary trees, each carrying half of the vector.

The trees are NCCL's (``ncclGetBtree`` / ``ncclGetDtree`` in NCCL's
``src/graph/trees.cc``). Tree 0 is an in-order binary tree over the ranks: rank 0 is
the root and has one child, the largest power of two below ``p``; a rank ``r > 0``
whose lowest set bit is ``b`` has the children ``r - b/2`` and ``r + b/2`` (the latter,
when it is ``>= p``, replaced by ``r + b/4``, ``r + b/8``, ...), so odd ranks are the
leaves and the subtree of ``r`` is the contiguous rank range
``[r - b + 1, min(r + b - 1, p - 1)]``. Tree 1 is tree 0 mirrored (``r -> p-1-r``)
when ``p`` is even and shifted by one (``r -> r+1 mod p``) when ``p`` is odd. Either
way the odd/even roles swap, so every rank has children in exactly one tree, except
rank 0 for odd ``p``, which roots tree 0 with a single child. Both trees have depth
``D = ceil(log2 p)``.

The vector is cut into two halves, tree ``t`` carrying half ``t``, and each half into
``S`` segments (the ``segments`` parameter; by default one per
:data:`SEGMENT_ELEMENTS` elements of a half, as NCCL cuts messages into fixed-size
chunks). All ranks run on one global clock of *rounds*; in every round each tree edge
carries at most one segment each way, and a rank posts, in one step, everything it
does in that round in both trees (rounds in which it does nothing are skipped).
Upward, a node at depth ``d`` that is child number ``c`` (0 or 1) of its parent sends
segment ``k`` in round ``k - L*d + c*(L-1)``; downward, it receives segment ``k`` in
round ``k + d - 1`` and forwards it to its children in round ``k + d``. ``L = 2``
when the upward pass reduces: the two children's copies of one segment are then
reduced in consecutive rounds, never in the same step (a step must not write one range
twice); ``L = 1`` when it only gathers. Every message of a round therefore touches a
segment no other operation of the rank's step touches.

Collectives (``n`` elements, ``p`` ranks, ``D = ceil(log2 p)``, ``S`` segments, each
round costing ``alpha + beta * n / (2S)`` on its largest message, plus ``gamma`` per
element reduced):

* **AllReduce**: reduce each half up its tree to the root, segment by segment, then
  broadcast it down by copy. Every element is reduced once, on one path, so all ranks
  end bitwise identical. ``3D + S - 1`` rounds on the critical path (fewer when
  ``S = 1``, where no stagger is needed: a rank goes ahead as soon as its peers
  are ready); a rank sends
  ``sum_t (up_t + children_t) * n_t`` elements (``up_t`` is 0 at the root, 1 elsewhere,
  ``n_t`` the half's size), at most about ``2n``, and receives as much.
* **ReduceScatter**: the AllReduce schedule itself (every rank then keeps its block).
  Whole segments move both ways, so every message of a round has the same size and
  the schedule's time on a contention-free network is the closed form of
  :func:`simulator.cost` (see below). A reduce-scatter by subtree complements (a child
  sends up only the partial sums outside its subtree, the parent sends down the sums
  for the elements inside it) moves half as much per edge, but its messages differ in
  size from subtree to subtree and two of them can share a link, so its time has no
  closed form; trees are chosen for their ``log p`` latency on small messages, where
  the volume matters least. ``3D + S - 1`` rounds, as AllReduce.
* **AllGather**: its transpose, by copy only (bitwise exact): upward, a child sends
  the segment's elements inside its subtree (a gather); downward, the parent sends
  those outside it. Each tree edge carries ``n/2`` elements, at most ``2D + S - 1``
  rounds (exactly that for powers of two); a rank sends at most about ``2n``. Its
  messages differ in size from subtree to subtree, so its time is not a sum of
  per-round maxima; :func:`simulator.cost` computes it exactly as the critical path
  of these rounds (a max-plus walk over the trees, cached per ``p``, count and
  ``S``). A regular form (fixed-size pieces, one per link per round) would cost
  a sum over rounds too, but a piece is at most a block and the link into a leaf
  carries about half the vector, so it would take at least about ``p`` rounds and
  lose the tree's ``log p`` latency; this form keeps it.

Messages with no elements are not sent; one rank (``p = 1``) has no steps.

Trees over nodes
----------------
With ``ranks_per_node=m`` (``m > 1``, dividing ``p``) the ranks sit on ``N = p / m`` nodes,
node ``k`` holding ranks ``km .. km + m - 1``, and the trees are NCCL's for several nodes
(``connectTrees`` in NCCL's ``src/graph/connect.cc``, pattern ``NCCL_TOPO_PATTERN_TREE``,
in which the node's first GPU carries all of its network traffic): the two trees above are
built over the *nodes*, and inside node ``k`` a chain runs from its head ``km`` through
``km + 1, ..., km + m - 1``. Tree ``t``'s parent of the head ``km`` is the head of node
``k``'s parent in tree ``t`` over ``N``; the head's children are the chain's next rank,
then the heads of node ``k``'s children (NCCL's ``down[0..2]``: a rank has up to three
children). Rank ``km + i`` has the depth of its node plus ``i``, so both trees have depth
``m - 1 + ceil(log2 N)`` (NCCL's estimate ``nRanks/nNodes - 1 + log2i(nNodes)``). Every
node-crossing edge joins two heads, so a rank order that puts each channel's own rail GPU
first in each node (:func:`topology.channels.node_major`) has the channel cross
between nodes on its own NIC only. ``ranks_per_node`` of None or 1 is the trees above
over all ranks; ``m = p`` (one node) is a chain.

The round offsets generalise: a rank sends segment ``k`` up in round ``k + B + c``
(``c`` its child number when the upward pass reduces, else 0), where the root's ``B`` is 0
and a child's ``B`` is its parent's less the parent's *spacing*: ``L`` in the trees over
all ranks (as above); in trees over nodes the parent's number of children when reducing
(1 along a chain) and 1 when gathering. Children of one parent thus reduce in different
rounds, and a rank sends a segment up only after the rounds in which its children's
copies of it arrived. The downward rounds depend on the depth only, as above.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from reprlib import repr as brief
from typing import Any, Callable, Sequence

import numpy as np

from topology.channels import equal_node_size, node_major
from topology.checks import check_int

from ..gcpause import gc_paused
from ..layout import SEGMENT_ELEMENTS, split, splits
from ..registry import Algorithm, Params, ompi_ids, register, with_channels
from ..rounds import Lane, lane, merge_lanes
from ..schedule import BLOCK_COLLECTIVES, Op, Step, new_recv, new_send
from ..traffic import Messages, Round, largest_part, nested_part
from ._tree_cuts import (CUT_MESSAGES, EXACT_MESSAGES, MASK_MESSAGES, PIECE_MESSAGES, Blocks,
                         Carried, Pieced, by_share, carried_each, each_carrying, each_message,
                         each_piece, most_cut, played_exactly, spilled_far)

__all__ = ["ALGORITHM", "SEGMENT_ELEMENTS", "SEGMENTS_TRIED", "TreeNode", "resolve_params",
           "rank_lanes", "rank_steps", "tree_node", "tree_depth", "tree_layout", "subtree_ranks",
           "tree_edges", "traffic", "candidates", "node_params", "pieces"]

#: segments per half-vector selection tries (divided by the channels, rounded up)
SEGMENTS_TRIED: tuple[int, ...] = (1, 4, 16)

Range = tuple[int, int]


@dataclass(frozen=True, slots=True)
class TreeNode:
    """A rank's place in one tree: ``parent`` (-1 at the root), ``children``, ``depth``."""

    parent: int
    children: tuple[int, ...]
    depth: int


def _node_size(ranks_per_node: Any, nranks: int) -> int | None:
    """Check ``ranks_per_node``; return it when the trees are over nodes, else None."""
    if ranks_per_node is None:
        return None
    check_int(ranks_per_node, "ranks_per_node", 1, note=" or None")
    if nranks % ranks_per_node:
        raise ValueError(f"ranks_per_node={ranks_per_node} does not divide nranks={nranks}; "
                         f"trees over nodes need nodes of equal size")
    return ranks_per_node if ranks_per_node > 1 else None


def resolve_params(collective: str, nranks: int, count: int, segments: int | None = None,
                   ranks_per_node: int | None = None) -> dict[str, Any]:
    """Fill in and check the tree's parameters.

    Parameters
    ----------
    collective : str
        The collective (all three take the same parameters).
    nranks : int
        Number of ranks.
    count : int
        Elements of the full vector.
    segments : int or None
        Segments per half. ``None`` picks one per :data:`SEGMENT_ELEMENTS` elements of a
        half. A value above ``count // 2`` is lowered to it (at least one element per
        segment), and at least 1.
    ranks_per_node : int or None
        Ranks per node (nodes of consecutive ranks) for trees over nodes with a chain in
        each node (see the module docstring); None or 1: trees over all ranks.

    Returns
    -------
    dict
        ``{"segments": S}``, with ``"ranks_per_node": L`` added for trees over nodes.

    Raises
    ------
    ValueError
        If ``segments`` is neither None nor an integer >= 1, or ``ranks_per_node`` is
        neither None nor an integer >= 1 that divides ``nranks``.
    """
    half = max(1, count // 2)
    if segments is None:
        segments = -(-half // SEGMENT_ELEMENTS)
    else:
        check_int(segments, "segments", 1, note=" or None")
    size = _node_size(ranks_per_node, nranks)
    return {"segments": min(segments, half), **({"ranks_per_node": size} if size else {})}


def _btree(nranks: int, rank: int) -> tuple[int, tuple[int, ...]]:
    """Parent and children of ``rank`` in tree 0 (in-order, rooted at rank 0)."""
    if rank == 0:
        return -1, ((1 << ((nranks - 1).bit_length() - 1),) if nranks > 1 else ())
    low = rank & -rank
    parent = rank - low if rank & (low << 1) or rank + low >= nranks else rank + low
    half = low >> 1
    if not half:
        return parent, ()
    right = half
    while right and rank + right >= nranks:
        right >>= 1
    return parent, ((rank - half, rank + right) if right else (rank - half,))


def _to_virtual(tree: int, nranks: int, rank: int) -> int:
    if tree == 0:
        return rank
    return nranks - 1 - rank if nranks % 2 == 0 else (rank - 1) % nranks


def _to_real(tree: int, nranks: int, virtual: int) -> int:
    if tree == 0 or virtual < 0:
        return virtual
    return nranks - 1 - virtual if nranks % 2 == 0 else (virtual + 1) % nranks


def _check_tree(tree: int, nranks: int, rank: int) -> None:
    if tree not in (0, 1):
        raise ValueError(f"tree={brief(tree)} is not allowed; it must be 0 or 1")
    if not 0 <= rank < nranks:
        raise ValueError(f"rank={brief(rank)} is not allowed; it must be in 0..{nranks - 1}")


@lru_cache(maxsize=1 << 17)
def _flat_node(tree: int, nranks: int, rank: int) -> TreeNode:
    """``rank``'s place in tree ``tree`` over all ``nranks`` ranks (cached: a node's depth
    is its parent's plus one, and every rank of a node over nodes asks for the node's)."""
    parent, children = _btree(nranks, _to_virtual(tree, nranks, rank))
    above = _to_real(tree, nranks, parent)
    depth = _flat_node(tree, nranks, above).depth + 1 if above >= 0 else 0
    return TreeNode(above, tuple(_to_real(tree, nranks, c) for c in children), depth)


@lru_cache(maxsize=64)
def _flat_tree(tree: int, nranks: int) -> tuple[np.ndarray, ...]:
    """:func:`_flat_node` of every rank as arrays: its parent (-1 at the root), depth,
    number of children, place among its parent's children, and the children that its
    ancestors have, summed (a rank's round in the trees' layouts, :func:`tree_layout`)."""
    rank = np.arange(nranks)
    virtual = _virtual(tree, nranks, rank)
    low = virtual & -virtual
    up = ((virtual & (low << 1)) != 0) | (virtual + low >= nranks)
    above = np.where(virtual == 0, -1, np.where(up, virtual - low, virtual + low))
    parent = np.where(above < 0, -1, _virtual(tree, nranks, above, real=True))
    children = np.where(virtual == 0, int(nranks > 1),
                        np.where(low > 1, 1 + (virtual + 1 < nranks), 0))
    place = ((virtual > above) & (above > 0)).astype(np.int64)  # a right child: second
    depth, below = np.zeros(nranks, dtype=np.int64), np.zeros(nranks, dtype=np.int64)
    ancestor = parent
    while (ancestor >= 0).any():  # one level of ancestors a pass
        depth += ancestor >= 0
        below += np.where(ancestor >= 0, children[ancestor], 0)
        ancestor = np.where(ancestor >= 0, parent[ancestor], -1)
    return parent, depth, children, place, below


def _virtual(tree: int, nranks: int, rank: np.ndarray, real: bool = False) -> np.ndarray:
    """:func:`_to_virtual` (or, ``real``, :func:`_to_real`) over an array of ranks."""
    if tree == 0:
        return rank
    if nranks % 2 == 0:
        return nranks - 1 - rank
    return (rank + 1) % nranks if real else (rank - 1) % nranks


def _chained_node(tree: int, nranks: int, rank: int, size: int) -> TreeNode:
    """``rank``'s place in tree ``tree`` over nodes of ``size`` ranks, chained inside."""
    node, position = divmod(rank, size)
    above = _flat_node(tree, nranks // size, node)
    if position:
        chain = (rank + 1,) if position < size - 1 else ()
        return TreeNode(rank - 1, chain, above.depth + position)
    parent = above.parent * size if above.parent >= 0 else -1
    return TreeNode(parent, (rank + 1, *(c * size for c in above.children)), above.depth)


def tree_node(tree: int, nranks: int, rank: int, ranks_per_node: int | None = None) -> TreeNode:
    """Return ``rank``'s parent, children and depth in tree ``tree`` (0 or 1).

    Children are listed in NCCL's order (``down0``, ``down1``; over nodes the chain's
    next rank first); a child's position in its parent's list is the ``c`` of the round
    formula in the module docstring.

    Parameters
    ----------
    tree : {0, 1}
        Which of the two trees.
    nranks : int
        Number of ranks.
    rank : int
        A rank in ``[0, nranks)``.
    ranks_per_node : int or None, optional
        Trees over nodes of this many ranks, chained inside (None or 1: over all ranks).

    Returns
    -------
    TreeNode
        ``parent`` (-1 at the root), ``children`` and ``depth`` (0 at the root).

    Raises
    ------
    ValueError
        If ``tree`` is not 0 or 1, ``rank`` is not in ``[0, nranks)``, or
        ``ranks_per_node`` is not None or an integer >= 1 that divides ``nranks``.

    Examples
    --------
    >>> tree_node(0, 6, 4)
    TreeNode(parent=0, children=(2, 5), depth=1)
    >>> tree_node(1, 6, 1)
    TreeNode(parent=5, children=(3, 0), depth=1)
    >>> tree_node(0, 12, 8, ranks_per_node=4)   # node 2's head, below node 0's head
    TreeNode(parent=0, children=(9, 4), depth=1)
    """
    _check_tree(tree, nranks, rank)
    size = _node_size(ranks_per_node, nranks)
    return _chained_node(tree, nranks, rank, size) if size else _flat_node(tree, nranks, rank)


def tree_depth(nranks: int, ranks_per_node: int | None = None) -> int:
    """Depth of both trees on ``nranks`` ranks: ``ceil(log2 nranks)`` (0 for one rank);
    over nodes of ``m = ranks_per_node`` ranks ``m - 1 + ceil(log2 (nranks / m))``.

    Parameters
    ----------
    nranks : int
        Number of ranks (>= 1).
    ranks_per_node : int or None, optional
        As in :func:`tree_node`.

    Returns
    -------
    int
        The depth.

    Examples
    --------
    >>> tree_depth(64), tree_depth(64, ranks_per_node=8)
    (6, 10)
    """
    size = _node_size(ranks_per_node, nranks) or 1
    return size - 1 + (nranks // size - 1).bit_length()


def _flat_subtree(tree: int, nranks: int, rank: int) -> list[Range]:
    virtual = _to_virtual(tree, nranks, rank)
    low = virtual & -virtual
    lo, hi = (0, nranks - 1) if virtual == 0 else (virtual - low + 1, min(virtual + low - 1, nranks - 1))
    if tree == 0:
        return [(lo, hi)]
    if nranks % 2 == 0:
        return [(nranks - 1 - hi, nranks - 1 - lo)]
    runs = [(0, 0)] if hi == nranks - 1 else []
    if lo + 1 <= min(hi + 1, nranks - 1):
        runs.append((lo + 1, min(hi + 1, nranks - 1)))
    return runs


def _flat_subtrees(tree: np.ndarray, nranks: int, rank: np.ndarray) -> np.ndarray:
    """:func:`_flat_subtree` over arrays of trees and ranks: ``[i, j]`` is run ``j`` of
    ``rank[i]``'s subtree (its first and last rank), in the same order, padded to two
    runs with ``(0, -1)`` (two only where the shifted tree 1 wraps to rank 0)."""
    shifted = tree == 1
    virtual = np.where(shifted, _virtual(1, nranks, rank), rank)
    low = virtual & -virtual
    lo = np.where(virtual == 0, 0, virtual - low + 1)
    hi = np.where(virtual == 0, nranks - 1, np.minimum(virtual + low - 1, nranks - 1))
    if nranks % 2 == 0:  # tree 1 mirrors tree 0
        lo, hi = np.where(shifted, nranks - 1 - hi, lo), np.where(shifted, nranks - 1 - lo, hi)
        wrapped = np.zeros(len(rank), dtype=bool)
    else:  # tree 1 shifts tree 0 by one rank, the last wrapping to rank 0
        wrapped = shifted & (hi == nranks - 1)
        lo = np.where(shifted, lo + 1, lo)
        hi = np.where(shifted, np.minimum(hi + 1, nranks - 1), hi)
    empty = hi < lo
    run = np.stack([np.where(empty, 0, lo), np.where(empty, -1, hi)], axis=-1)
    wrap = np.where(wrapped[:, None], [0, 0], [0, -1])
    return np.where(wrapped[:, None, None], np.stack([wrap, run], axis=1),
                    np.stack([run, wrap], axis=1))


def subtree_ranks(tree: int, nranks: int, rank: int,
                  ranks_per_node: int | None = None) -> list[Range]:
    """Ranks of ``rank``'s subtree in tree ``tree`` as sorted inclusive ``(first, last)`` runs.

    One run, except in the shifted tree 1 (odd ``nranks``, or odd node count over
    nodes), where a subtree holding the last rank (node) wraps around to rank (node) 0.
    Over nodes, a head's subtree is every rank of its node's subtree, a chain rank's the
    rest of its chain.

    Parameters
    ----------
    tree : {0, 1}
        Which of the two trees.
    nranks : int
        Number of ranks.
    rank : int
        The subtree's root, in ``[0, nranks)``.
    ranks_per_node : int or None, optional
        As in :func:`tree_node`.

    Returns
    -------
    list of (int, int)
        Inclusive rank runs, sorted.

    Raises
    ------
    ValueError
        As :func:`tree_node`.

    Examples
    --------
    >>> subtree_ranks(0, 7, 4)
    [(1, 6)]
    >>> subtree_ranks(1, 7, 5)
    [(0, 0), (2, 6)]
    >>> subtree_ranks(1, 21, 15, ranks_per_node=3), subtree_ranks(1, 21, 16, ranks_per_node=3)
    ([(0, 2), (6, 20)], [(16, 17)])
    """
    _check_tree(tree, nranks, rank)
    size = _node_size(ranks_per_node, nranks)
    if not size:
        return _flat_subtree(tree, nranks, rank)
    node, position = divmod(rank, size)
    if position:
        return [(rank, node * size + size - 1)]
    return [(a * size, b * size + size - 1) for a, b in _flat_subtree(tree, nranks // size, node)]


@dataclass(frozen=True)
class _Plan:
    """How one collective uses the trees: what moves each way and whether it reduces."""

    # None: whole segments (AllReduce); else whether a segment's pieces are its parts
    # outside the ranges given (a rank's own blocks), or inside them (:func:`_cut_segments`)
    up: bool | None
    down: bool | None
    up_reduce: bool


_PLANS: dict[str, _Plan] = {
    "allreduce": _Plan(None, None, True),
    "reduce_scatter": _Plan(None, None, True),
    "allgather": _Plan(False, True, False),
}


@lru_cache(maxsize=64)
def tree_layout(tree: int, nranks: int, ranks_per_node: int | None,
                reduce: bool) -> tuple[tuple[TreeNode, ...], tuple[int, ...]]:
    """Every rank's node in tree ``tree`` and the round in which it sends segment 0 up.

    From the root down (module docstring): a child's ``B`` is its parent's less the
    parent's spacing, and child number ``c`` sends in round ``B + c`` when reducing.
    Segment ``k`` goes up ``k`` rounds later; it comes down to a rank at depth ``d`` in
    round ``k + d - 1``.

    Parameters
    ----------
    tree, nranks, ranks_per_node
        As in :func:`tree_node` (``ranks_per_node`` given, None included).
    reduce : bool
        Whether the upward pass reduces (AllReduce, ReduceScatter) or gathers (AllGather).

    Returns
    -------
    tuple
        ``tree_node(tree, nranks, r, ranks_per_node)`` for every rank ``r``, and every
        rank's upward round of segment 0 (0 at the root, which sends nothing up).

    Raises
    ------
    ValueError
        As :func:`tree_node`.

    Examples
    --------
    >>> tree_layout(0, 4, None, True)[1], tree_layout(0, 4, 2, True)[1]
    ((0, -4, -2, -3), (0, -2, -1, -3))
    """
    _check_tree(tree, nranks, 0)
    size = _node_size(ranks_per_node, nranks)
    nodes = _tree_nodes(tree, nranks, size)
    base, up = [0] * nranks, [0] * nranks
    todo = [next(r for r, node in enumerate(nodes) if node.parent < 0)]
    while todo:
        rank = todo.pop()
        children = nodes[rank].children
        spacing = (max(1, len(children)) if size else 2) if reduce else 1
        for index, child in enumerate(children):
            base[child] = base[rank] - spacing
            up[child] = base[child] + (index if reduce else 0)
        todo.extend(children)
    return nodes, tuple(up)


@lru_cache(maxsize=64)
def _tree_nodes(tree: int, nranks: int, size: int | None) -> tuple[TreeNode, ...]:
    """Every rank's node in tree ``tree`` (over nodes of ``size`` ranks, or all ranks)."""
    return tuple(_chained_node(tree, nranks, r, size) if size else _flat_node(tree, nranks, r)
                 for r in range(nranks))


def _element_ranges(runs: Sequence[Range], blocks: Sequence[Range]) -> list[Range]:
    return [(blocks[first][0], blocks[last][1]) for first, last in runs]


def _edge_lanes(first_round: int, make: Callable[..., Op], peer: int,
                segs: tuple[Sequence[int], Sequence[int]], outside: bool | None,
                mine: Sequence[Range], *flags: bool) -> list[Lane]:
    """Operations with ``peer`` over one tree edge in one direction, one round per segment.

    ``make(peer, start, stop, *flags)`` makes each operation: one per segment when
    ``outside`` is None (whole segments), else one per piece of the segment outside
    (or inside) the ranges ``mine`` (:func:`_cut_segments`); piece ``j`` of every
    segment goes in lane ``j``, so that a round lists a segment's pieces in order.
    ``segs`` holds the segments' starts and stops.
    """
    if outside is None:
        return [lane(first_round, make, peer, *segs, *flags)]
    starts, stops = _cut_segments(np.array(segs[0], dtype=np.int64),
                                  np.array(segs[1], dtype=np.int64), mine, outside)
    # lane j holds the j-th piece of each segment (None where a segment has fewer)
    there = stops > starts
    place = np.where(there, np.cumsum(there, axis=1) - 1, -1)
    rows = np.arange(len(place))
    lanes = []
    for j in range(int(there.sum(axis=1).max())):
        at = place == j
        has, column = at.any(axis=1), at.argmax(axis=1)
        lanes.append(Lane(first_round, make, peer, _or_none(has, starts[rows, column]),
                          _or_none(has, stops[rows, column]), flags))
    return lanes


def _or_none(has: np.ndarray, values: np.ndarray) -> tuple[int | None, ...]:
    """``values`` as Python ints, None where not ``has``."""
    held = values.astype(object)
    held[~has] = None
    return tuple(held.tolist())


def _cut_segments(lo: np.ndarray, hi: np.ndarray, ranges: Sequence[Range],
                  outside: bool) -> tuple[np.ndarray, np.ndarray]:
    """The parts of every segment ``[lo[k], hi[k])`` inside the sorted disjoint
    ``ranges`` (or, where ``outside``, outside them) at once: row ``k`` holds segment
    ``k``'s candidate pieces in order, those with ``stop <= start`` not pieces (inside,
    one per range; outside, the gap before each range's part and the rest after the
    last)."""
    a = np.array([r[0] for r in ranges], dtype=np.int64)
    b = np.array([r[1] for r in ranges], dtype=np.int64)
    starts = np.maximum(lo[:, None], a[None, :])
    stops = np.minimum(hi[:, None], b[None, :])
    if not outside:
        return starts, stops
    met = stops > starts
    # where each gap starts: the end of the part before it met, or the segment's start
    ends = np.maximum.accumulate(np.where(met, stops, lo[:, None]), axis=1)
    before = np.concatenate([lo[:, None], ends], axis=1)
    after = np.concatenate([np.where(met, starts, before[:, :-1]), hi[:, None]], axis=1)
    return before, after


def _tree_lanes(plan: _Plan, tree: int, rank: int, nranks: int, count: int,
                blocks: Sequence[Range], segments: int, size: int | None) -> list[Lane]:
    """``rank``'s operations in tree ``tree``: a lane per tree edge and direction."""
    lo, hi = split(0, count, 2, tree)
    if lo == hi:
        return []
    segs = splits(lo, hi, min(segments, hi - lo))
    nodes, up = tree_layout(tree, nranks, size, plan.up_reduce)
    node = nodes[rank]

    def owned(member: int) -> list[Range]:
        if plan.up is None:
            return []
        return _element_ranges(subtree_ranks(tree, nranks, member, size), blocks)

    d = node.depth
    lanes: list[Lane] = []
    for child in node.children:
        theirs = owned(child)
        lanes += _edge_lanes(up[child], new_recv, child, segs, plan.up, theirs, plan.up_reduce)
        lanes += _edge_lanes(d, new_send, child, segs, plan.down, theirs)
    if node.parent >= 0:
        mine = owned(rank)
        lanes += _edge_lanes(up[rank], new_send, node.parent, segs, plan.up, mine)
        lanes += _edge_lanes(d - 1, new_recv, node.parent, segs, plan.down, mine, False)
    return lanes


def rank_lanes(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[Range], segments: int,
               ranks_per_node: int | None = None) -> list[Lane]:
    """Return the double-binary-tree operations of ``rank`` as lanes.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    rank, nranks, count : int
        The rank, the number of ranks and the elements of the full vector.
    blocks : sequence of (int, int)
        ``blocks[r]`` is rank ``r``'s element range; consecutive in rank order.
    segments : int
        Segments per half, as returned by :func:`resolve_params`.
    ranks_per_node : int or None, optional
        Trees over nodes of this many ranks (see the module docstring).

    Returns
    -------
    list of Lane
        A lane per tree edge and direction (and, for AllGather, per piece of a
        segment), tree 0's before tree 1's; :func:`rank_steps` merges them.
    """
    if nranks == 1:
        return []
    plan, size = _PLANS[collective], _node_size(ranks_per_node, nranks)
    return [lane for tree in (0, 1)
            for lane in _tree_lanes(plan, tree, rank, nranks, count, blocks, segments, size)]


@gc_paused()
def rank_steps(collective: str, rank: int, nranks: int, count: int, blocks: Sequence[Range],
               segments: int, ranks_per_node: int | None = None) -> list[Step]:
    """Return the double-binary-tree steps of ``rank``: :func:`rank_lanes` (same parameters)
    merged round by round by :func:`~collectives.rounds.merge_lanes`.

    Returns
    -------
    list of Step
        One step per round in which ``rank`` does something, in round order; within a
        step, tree 0's operations come before tree 1's, so two ranks joined in both trees
        match their messages in the same order.
    """
    return merge_lanes(rank_lanes(collective, rank, nranks, count, blocks, segments,
                                  ranks_per_node))


@lru_cache(maxsize=64)
def tree_edges(nranks: int, ranks_per_node: int | None = None) -> tuple[np.ndarray, ...]:
    """The edges of both trees, tree 0's first, as arrays over the edges.

    Parameters
    ----------
    nranks : int
        Number of ranks.
    ranks_per_node : int or None, optional
        As in :func:`tree_node`.

    Returns
    -------
    tuple of numpy.ndarray
        The child, its parent, the child's depth, the rounds in which the child sends
        segment 0 up when the trees reduce and when they gather (:func:`tree_layout`), and
        twice the number of ranks of the child's subtree that lie in its tree's half of
        the vector (tree 0's ranks ``[0, p/2)``, tree 1's ``[p/2, p)``).
    """
    size = _node_size(ranks_per_node, nranks)
    if size:
        return tuple(np.concatenate(both) for both in zip(
            *(_edges_over_nodes(which, nranks, size) for which in (0, 1))))
    return tuple(np.concatenate(both) for both in zip(
        *(_flat_edges(which, nranks) for which in (0, 1))))


def _flat_edges(which: int, nranks: int) -> tuple[np.ndarray, ...]:
    """:func:`tree_edges` of tree ``which`` over all ranks."""
    parent, depth, _, place, _ = _flat_tree(which, nranks)
    child = np.flatnonzero(parent >= 0)
    held_from, held_to = _doubled(_flat_subtrees(np.full(len(child), which), nranks, child), 1,
                                  which * nranks, (which + 1) * nranks)  # the tree's half
    depth = depth[child]  # tree_layout's rounds: reducing, every edge two apart, then place
    return (child, parent[child], depth, place[child] - 2 * depth, -depth,
            np.maximum(0, held_to - held_from).sum(axis=1))


def _edges_over_nodes(which: int, nranks: int, size: int) -> tuple[np.ndarray, ...]:
    """:func:`tree_edges` of tree ``which`` over nodes of ``size`` ranks: the tree over
    the nodes node by node, its chains as arrays (:func:`tree_layout`'s rounds: reducing,
    a head spaces its children by their number, the chain's next rank first, a chain by
    one; gathering, every edge by one)."""
    nodes = nranks // size
    above, depth, children, place, below = _flat_tree(which, nodes)
    spacing = 1 + children  # a head spaces its children by their number and its chain
    base = -(depth + below)  # less every ancestor's spacing
    order = np.where(above >= 0, 1 + place, 0)
    node, position = np.divmod(np.arange(nranks), size)
    head = position == 0
    parent = np.where(head, np.where(above[node] >= 0, above[node] * size, -1),
                      np.arange(nranks) - 1)
    chained = base[node] - spacing[node] - (position - 1)  # below the head: a chain
    reduce = np.where(head, base[node] + order[node], chained)
    halves = (0, nranks) if which == 0 else (nranks, 2 * nranks)  # doubled ranks
    last = np.where(head, 0, node * size + size - 1)
    inside = np.maximum(0, np.minimum(2 * last + 2, halves[1])
                        - np.maximum(2 * np.arange(nranks), halves[0]))
    held_from, held_to = _doubled(_flat_subtrees(np.full(nodes, which), nodes, np.arange(nodes)),
                                  size, *halves)
    inside[::size] = np.maximum(0, held_to - held_from).sum(axis=1)
    kept, depth = parent >= 0, depth[node] + position
    return (np.arange(nranks)[kept], parent[kept], depth[kept], reduce[kept],
            -depth[kept], inside[kept])  # gathering, every edge one round apart


def traffic(collective: str, q: int, segments: int = 1, ranks_per_node: int | None = None,
            holders: tuple[int, ...] | None = None, played: int = 0,
            unlike: bool = False) -> list[Round]:
    """The double binary tree's messages (:mod:`collectives.traffic`), round by round.

    Every edge carries two streams of ``segments`` consecutive rounds: up from the child
    from its round of segment 0 (reduced at the parent by AllReduce and ReduceScatter),
    and down to it from round ``depth - 1``.  The streams are paced rounds, each in
    flight in its own rounds, as the ranks' steps hold them (over all ranks a tree's
    streams carry its own half, segment by segment: :func:`_halved`; the lock-step sum
    of their rounds was over by up to 5.3% on ``default_flat(10)`` at 3 segments and
    ``1 << 20`` elements, where a rank whose peers are ready goes on).  AllGather's
    streams are paced rounds too, each in flight in the rounds of the segments it
    carries something of (:func:`_gathered`).

    Parameters
    ----------
    collective : str
        The collective.
    q : int
        Positions.
    segments : int, optional
        Segments per half of the vector.
    ranks_per_node : int or None, optional
        Trees over nodes of so many positions, a chain in each.
    holders : tuple of int or None, optional
        AllGather's: per position the rank whose block it holds, a channel's order
        (:func:`collectives.compose.channel_parts`), where the blocks are unequal the
        first ``count % q`` ranks' one larger; None: position ``v`` holds rank ``v``'s.
    played : int, optional
        AllGather's: the channels where every rank's messages are played (each message
        exactly within :func:`~collectives.algorithms._tree_cuts.played_exactly` on a
        machine of alike links, in its own round within
        :func:`~collectives.algorithms._tree_cuts.carried_each` on one of unlike links);
        0: not played.
    unlike : bool, optional
        AllGather's: played on a machine of unlike links (DGX).

    Returns
    -------
    list of Round
    """
    if q < 2:
        return []
    segment = nested_part(2, segments)
    if collective == "allgather":
        return _gathered(q, segment, segments, ranks_per_node, holders, played, unlike)
    if ranks_per_node:  # every stream in flight in its own rounds, carrying its tree's half
        return [Round(1, tuple(
            Messages(src, dst, _segment_of(which, segments), k >= 0, skip_empty=True,
                     rounds=np.column_stack([start, start + segments]))
            for which, k, start, src, dst in _by_class(q, ranks_per_node)), paced=True)]
    return [Round(1, _halved(q, segments), paced=True)]


def _halved(q: int, segments: int) -> tuple[Messages, ...]:
    """AllReduce's and ReduceScatter's streams over all ranks, by tree and class: each in
    flight in its own rounds (a rank goes on as soon as its peers of the next round are
    ready, not in lock-step), carrying its tree's half segment by segment, the first
    ``half % segments`` one element larger (cut: the ranks' steps send the segments of
    :func:`collectives.layout.split`)."""
    start, src, dst, kind = _streams(False, q, None)
    tree = np.arange(len(start)) % (len(start) // 2) >= len(start) // 4  # tree 0's edges first
    return tuple(
        Messages(src[streams], dst[streams], _segment_of(which, segments), k >= 0,
                 skip_empty=True, rounds=np.column_stack([start[streams],
                                                          start[streams] + segments]),
                 cut=segments, cut_of=_half(which), cut_at=_half_start(which))
        for which in (0, 1) for k in (-1, 0)
        for streams in [np.flatnonzero((tree == which) & (kind == k))] if len(streams))


def _half(which: int) -> Callable[[np.ndarray], np.ndarray]:
    """Element counts of the vector -> elements of half ``which`` (the first the larger)."""
    def elements(count: np.ndarray) -> np.ndarray:
        return count // 2 if which else count - count // 2
    return elements


def _half_start(which: int) -> Callable[[np.ndarray], np.ndarray]:
    """Element counts of the vector -> the element at which half ``which`` starts."""
    def start(count: np.ndarray) -> np.ndarray:
        return count - count // 2 if which else np.zeros_like(count)
    return start


def _segment_of(which: int, segments: int) -> Callable[[np.ndarray], np.ndarray]:
    """Element counts of the vector -> elements of the largest segment of half ``which``."""
    half, part = _half(which), largest_part(segments)
    return lambda count: part(half(count))


def _gathered(q: int, segment: Callable[[np.ndarray], np.ndarray], segments: int,
              ranks_per_node: int | None, holders: tuple[int, ...] | None,
              played: int = 0, unlike: bool = False) -> list[Round]:
    """AllGather's streams as paced rounds: segment ``k`` of a stream goes in its round
    ``k`` (:func:`_streams`), up with the part of the segment that the child's subtree
    holds, down with the rest, and nothing where that is empty (the ranks' steps skip
    it), so each stream is in flight in the runs of :func:`_gathered_runs`; in classes
    of their own, the segments at the edges of a subtree's part, which carry elements
    only where the vector's blocks, halves and segments are not all multiples of
    ``1 / (2 q S)`` of it (rounding), in flight with the runs' messages and sharing
    their links (in a round of their own they shared none: on ``default_flat(12)`` at
    3 elements under by 3.3e-5).  At counts that are such multiples a message
    carries its share of the vector and the spill nothing; at the others what the
    ranks' steps cut (:mod:`collectives.algorithms._tree_cuts`): by
    :func:`~collectives.algorithms._tree_cuts.each_message` up to
    :data:`~collectives.algorithms._tree_cuts.EXACT_MESSAGES` messages, or, ``played``
    over so many channels on a machine of alike links (not ``unlike``), within
    :func:`~collectives.algorithms._tree_cuts.played_exactly` (and every message
    further from a part's edge that carries something,
    :func:`~collectives.algorithms._tree_cuts.spilled_far`), else, played on a machine
    of unlike links, by :func:`~collectives.algorithms._tree_cuts.each_carrying` within
    :func:`~collectives.algorithms._tree_cuts.carried_each`, played on a machine of alike
    links (flat), each piece a row of its own size and start within
    :data:`~collectives.algorithms._tree_cuts.PIECE_MESSAGES` messages times channels
    (:func:`~collectives.algorithms._tree_cuts.each_piece`, :func:`_pieces_sent`), else by
    :func:`~collectives.algorithms._tree_cuts.most_cut` up to
    :data:`~collectives.algorithms._tree_cuts.CUT_MESSAGES` at the edges, else by
    :func:`~collectives.algorithms._tree_cuts.by_share`.  Where ``holders`` are given the
    blocks' edges are those of the larger blocks at the holders' positions (a channel of
    several over a rotated order: ``dgx_h100(2)``'s channel 1 holds ranks 0 and 1's
    at positions 7 and 0, not 0 and 1)."""
    start, senders, receivers, _ = _streams(True, q, ranks_per_node)
    runs, spill = _gathered_runs(q, segments, ranks_per_node)
    lengths, share = runs[1] - runs[0], runs[3]

    def blocks() -> Blocks:
        # built only where the cut reads them: past MASK_MESSAGES (16,384 DGX ranks)
        # the subtrees' runs alone cost 0.3 CPU s
        return (*_subtree_blocks(q, ranks_per_node),
                None if holders is None else np.array(holders, dtype=np.int64))

    many = int(lengths.sum()) + len(spill[0])
    if many <= EXACT_MESSAGES or played_exactly(q, segments, many, played, unlike):
        # counted without the messages further out, as before them: the few they add
        # (19 ranks at 8 segments: 382 -> 390) move no description off this path
        cut = blocks()
        rounds = each_message(q, segment, segments, cut, runs,
                              spilled_far(q, segments, cut, runs, spill))
    elif unlike and played and carried_each(q, segments, many):
        cut = blocks()
        rounds = each_carrying(q, segment, segments, cut, runs,
                               spilled_far(q, segments, cut, runs, spill))
    elif played and not unlike and many * played <= PIECE_MESSAGES:
        cut = blocks()
        return [Round(1, (_pieces_sent(start, senders, receivers, each_piece(
            q, segments, cut, runs, spilled_far(q, segments, cut, runs, spill))),), paced=True)]
    elif np.count_nonzero(share < q) + len(spill[0]) <= CUT_MESSAGES:
        rounds = most_cut(q, segment, segments, blocks(), start, runs, spill)
    else:
        rounds = by_share(q, segment, segments, blocks()
                          if np.count_nonzero(share < q) + len(spill[0]) <= MASK_MESSAGES
                          else None, runs, spill)

    def messages(streams: np.ndarray, first: np.ndarray, end: np.ndarray,
                 elements: Callable[[np.ndarray], np.ndarray],
                 at: Callable[[np.ndarray], np.ndarray] | None,
                 carried: Carried | None) -> Messages:
        begins = start[streams]
        # a message that says where it starts is one unit of its own elements
        return Messages(senders[streams], receivers[streams], elements, False, skip_empty=True,
                        rounds=np.column_stack([begins + first, begins + end]),
                        cut=int(at is not None), cut_of=None if at is None else elements,
                        cut_at=at, kinds=None if carried is None else carried[0],
                        carries=None if carried is None else carried[1])

    merged = tuple(messages(*group) for classes in rounds for group in classes)
    return [Round(1, merged, paced=True)] if merged else []


def _pieces_sent(start: np.ndarray, senders: np.ndarray, receivers: np.ndarray,
                 pieces: tuple[np.ndarray, np.ndarray, Pieced]) -> Messages:
    """The pieces of :func:`~collectives.algorithms._tree_cuts.each_piece` (their
    streams, segments and rows) as one class, each piece in the round of its segment
    and a kind of its own, of its own elements from its own start (a cut class of one
    unit: over the runs of the buffer it meets), the class's the most of theirs (at
    most a segment)."""
    streams, at, (rows, pieced) = pieces

    def elements(count: np.ndarray) -> np.ndarray:
        sizes = pieced(count)[0]
        return sizes.max(axis=0) if len(sizes) else np.zeros_like(count)
    begins = start[streams] + at
    return Messages(senders[streams], receivers[streams], elements, False, skip_empty=True,
                    rounds=np.column_stack([begins, begins + 1]), cut=1, cut_of=elements,
                    cut_at=lambda count: pieced(count)[1].min(axis=0, initial=0),
                    kinds=rows, sizes=pieced)


@lru_cache(maxsize=64)
def _subtree_blocks(q: int, ranks_per_node: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per edge of :func:`tree_edges` (in its order), the first and last ranks of each
    run of the child's subtree (:func:`subtree_ranks`), padded with empty runs (what
    :mod:`collectives.algorithms._tree_cuts` knows of the trees)."""
    child = tree_edges(q, ranks_per_node)[0]
    half = len(child) // 2
    runs = [subtree_ranks(int(e >= half), q, c, ranks_per_node)
            for e, c in enumerate(child.tolist())]
    width = max(map(len, runs), default=1)
    padded = [r + [(0, -1)] * (width - len(r)) for r in runs]
    table = np.array(padded, dtype=np.int64).reshape(len(runs), width, 2)
    return table[:, :, 0], table[:, :, 1]


def _gathered_runs(q: int, segments: int, ranks_per_node: int | None
                   ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, np.ndarray]]:
    """The runs of segments in which AllGather's streams carry the same part of each
    segment: per run its first and end segment, its stream (of :func:`_streams`) and
    what its messages carry, in ``1 / (2 q segments)`` of the vector; and the segments
    at the edges of a subtree's part, with their streams.  A stream up carries what of
    each segment the subtree's part of the half (a hull, in doubled ranks) meets: its
    first and last segment in part, those between whole; down, the rest (all but the
    segments it holds whole, the edge ones in part).  At the edge, the segment on either
    side of the part (the half's first or last where it is empty: a block it holds may
    cross into the half), and down the first and last held whole."""
    first, end = _subtree_spans(q, ranks_per_node)
    edges, s = len(first), segments
    up_from, up_to = first * s // q, -(-end * s // q)
    whole_from, whole_to = -(-first * s // q), end * s // q  # segments held whole
    held = np.flatnonzero(end > first)
    empty = np.flatnonzero(end <= first)
    gap = held[whole_to[held] > whole_from[held]]
    last = gap[whole_to[gap] - 1 > whole_from[gap]]
    runs = [*_up_runs(first[held] * s, end[held] * s, up_from[held], up_to[held], q, held),
            *_down_runs(first * s, end * s, up_from, up_to, q, s, edges + np.arange(edges))]
    # each piece's runs that carry something, then joined: joining all first costs more
    kept = tuple(np.concatenate(column) for column in zip(
        *(_kept(lo, hi, stream, share, s) for lo, hi, stream, share in runs)))
    edge = np.concatenate([up_from[held] - 1, up_to[held], np.where(first[empty] > 0, s - 1, 0),
                           whole_from[gap], whole_to[last] - 1])
    spilled = np.concatenate([held, held, empty, edges + gap, edges + last])
    inner = np.flatnonzero((edge >= 0) & (edge < s))
    return kept, (edge.take(inner), spilled.take(inner))


def _kept(lo: np.ndarray, hi: np.ndarray, stream: np.ndarray, share: np.ndarray,
          segments: int) -> tuple[np.ndarray, ...]:
    """The runs ``lo .. hi`` of :func:`_gathered_runs` that carry something."""
    hi = np.minimum(hi, segments)  # an empty part at the half's end: its segment is past the last
    # indices, not a mask: taking by a mask costs several times more
    kept = np.flatnonzero((hi > lo) & (share > 0))
    return lo.take(kept), hi.take(kept), stream.take(kept), share.take(kept)


def _up_runs(first: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray, q: int,
             stream: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Runs up of a part ``first .. end`` (in ``1 / (2 q S)`` of the vector; a segment
    is ``q`` of them) over its segments ``lo .. hi``: the first segment's share, those
    between whole, the last's (one segment: the part)."""
    head = np.minimum(end, (lo + 1) * q) - first
    tail = np.where(hi - lo > 1, end - (hi - 1) * q, 0)
    return [(lo, lo + 1, stream, head), (lo + 1, hi - 1, stream, np.full(len(lo), q)),
            (hi - 1, hi, stream, tail)]


def _down_runs(first: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray, q: int,
               s: int, stream: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Runs down of the rest of the half, beside a part ``first .. end`` over segments
    ``lo .. hi`` (as :func:`_up_runs`): whole segments before and after the part's, the
    rest of its first and of its last."""
    inside = np.where(end > first, 1, 0)
    head = q - (np.minimum(end, (lo + 1) * q) - first) * inside
    tail = np.where(hi - lo > 1, q - (end - (hi - 1) * q), 0)
    whole = np.full(len(lo), q)
    return [(np.zeros_like(lo), lo, stream, whole), (lo, lo + 1, stream, head),
            (hi - 1, hi, stream, tail), (np.maximum(hi, lo + 1), np.full(len(lo), s), stream,
                                         whole)]


@lru_cache(maxsize=64)
def _subtree_spans(nranks: int, ranks_per_node: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per edge of :func:`tree_edges` (in its order), the hull of the doubled ranks of
    its tree's half that the child's subtree holds, from the half's start (first = end
    where it holds none): over nodes a chain rank's subtree is the rest of its chain."""
    child = tree_edges(nranks, ranks_per_node)[0]
    which = np.repeat([0, 1], len(child) // 2)
    size = _node_size(ranks_per_node, nranks) or 1
    low = which * nranks  # the half's first doubled rank
    first, end = 2 * child, 2 * (child // size * size + size)
    heads = np.flatnonzero(child % size == 0)
    runs = _flat_subtrees(which[heads], nranks // size, child[heads] // size)
    held_from, held_to = _doubled(runs, size, low[heads, None], low[heads, None] + nranks)
    held = held_to > held_from
    some = held.any(axis=1)
    first[heads] = np.where(some, np.where(held, held_from, low[heads, None] + nranks).min(axis=1),
                            low[heads])
    end[heads] = np.where(some, np.where(held, held_to, 0).max(axis=1), low[heads])
    first = np.clip(first, low, low + nranks) - low
    return first, np.maximum(first, np.clip(end, low, low + nranks) - low)


def _doubled(runs: np.ndarray, size: int, low: Any, high: Any) -> tuple[np.ndarray, np.ndarray]:
    """Runs of nodes of ``size`` ranks (:func:`_flat_subtrees`) in doubled ranks, cut to
    ``low .. high``: their starts and ends (an end at or before its start: nothing)."""
    return (np.maximum(2 * runs[..., 0] * size, low),
            np.minimum(2 * (runs[..., 1] + 1) * size, high))


@lru_cache(maxsize=64)
def _by_class(q: int, ranks_per_node: int | None
              ) -> tuple[tuple[int, int, np.ndarray, np.ndarray, np.ndarray], ...]:
    """The streams of AllReduce and ReduceScatter (:func:`_streams`) by tree and class (in
    increasing order): the tree, the class, and its streams' rounds of segment 0, senders
    and receivers (in the streams' order)."""
    start, src, dst, kind = _streams(False, q, ranks_per_node)
    tree = np.arange(len(start)) % (len(start) // 2) >= len(start) // 4  # tree 0's edges first
    return tuple((which, k, start[streams], src[streams], dst[streams])
                 for which in (0, 1) for k in np.unique(kind).tolist()
                 for streams in [np.flatnonzero((tree == which) & (kind == k))] if len(streams))


@lru_cache(maxsize=64)
def _streams(gathers: bool, q: int,
             ranks_per_node: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every stream of the trees (up then down, per edge) when they gather (AllGather)
    or reduce (AllReduce and ReduceScatter, which share them): the round it starts in
    (of segment 0), its sender, its receiver and its class (:func:`traffic`)."""
    child, parent, depth, reduce, gather, _ = tree_edges(q, ranks_per_node)
    start = np.concatenate([gather if gathers else reduce, depth - 1])
    src, dst = np.concatenate([child, parent]), np.concatenate([parent, child])
    kind = np.repeat(np.array([0, -1], dtype=np.int64), len(child))  # classes: 0 up, -1 down
    return start, src, dst, kind


def candidates(collective: str, channels: int, ranks_per_node: int | None) -> tuple[Params, ...]:
    """What selection tries: :data:`SEGMENTS_TRIED` segments per half, divided by the
    channels (rounded up), so that the vector is cut into as many pieces at any channel
    count.

    Its arguments are those :mod:`collectives.registry` describes.
    """
    return tuple(with_channels(channels, (("segments", s),))
                 for s in sorted({-(-s // channels) for s in SEGMENTS_TRIED}))


def node_params(topology: Any) -> dict[str, Any]:
    """With :func:`topology.channels.node_major`'s orders on several nodes: the trees over
    nodes (``ranks_per_node``), NCCL's trees with a chain in each node.

    Parameters
    ----------
    topology : Topology
        The machine.

    Returns
    -------
    dict
    """
    size = equal_node_size(topology)
    return {} if size is None else {"ranks_per_node": size}


def pieces(collective: str, nranks: int, params: Any) -> int:
    """Messages' worth a channel cuts its vector into: ``segments`` per half.

    Its arguments are those :mod:`collectives.registry` describes.
    """
    return 2 * params.get("segments", 1)


ALGORITHM = register(Algorithm(
    name="tree", collectives=frozenset(BLOCK_COLLECTIVES),
    params={"segments": None, "ranks_per_node": None}, resolve=resolve_params, traffic=traffic,
    steps=rank_steps, lanes=rank_lanes, candidates=candidates, orders=node_major,
    node_params=node_params, pieces=pieces, empty_sends=False,
    held_by=frozenset({"allgather"}), played_by=frozenset({"allgather"}),
    # coll_tuned_allreduce_decision.c: 2 is "nonoverlapping" (a reduce, then a broadcast)
    ompi=ompi_ids({"allreduce": (2, "nonoverlapping")})))
