"""Properties of the double binary tree read from the trees and the schedule itself.

Correctness over the full rank x count x dtype x op matrix (default segments) lives in
test_algorithms.py; here: NCCL's tree shapes and their complementarity, rounds as a
function of depth and segments, elements sent per rank and per edge, the pipelining,
pipelined correctness with several segments, and ``segments`` validation.
"""

from __future__ import annotations

import numpy as np
import pytest

from collectives import Recv, Schedule, Send, build_schedule, interpret, verify
from collectives.algorithms import tree
from collectives.algorithms.tree import SEGMENT_ELEMENTS, subtree_ranks, tree_depth, tree_node
from collectives.layout import block, split
from collectives.progress import completion_order, match

from .reference import DTYPES, OPS, check_outputs, rank_inputs

RANKS = [*range(1, 18), 31, 32, 33, 64]
COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")


def _rounds(schedule: Schedule) -> int:
    """Critical path in steps: a step completes one round after the last of its peers posts it."""
    matching = match(schedule)
    finish: list[list[int]] = [[] for _ in range(schedule.nranks)]
    for rank, index in completion_order(schedule, matching):
        ops = schedule.steps(rank)[index].ops
        posted = [finish[op.peer][partner - 1] if partner else 0
                  for op, partner in zip(ops, matching.partners[rank][index]) if partner >= 0]
        own = finish[rank][-1] if finish[rank] else 0
        finish[rank].append(max([own, *posted]) + 1)
    return max((f[-1] for f in finish if f), default=0)


def _brute_subtree(t: int, p: int, rank: int) -> set[int]:
    members, todo = set(), [rank]
    while todo:
        node = todo.pop()
        members.add(node)
        todo.extend(tree_node(t, p, node).children)
    return members


def _elements(runs: list[tuple[int, int]], p: int, n: int) -> set[int]:
    return {e for first, last in runs for r in range(first, last + 1) for e in range(*block(n, p, r))}


def _tree_of(n: int, start: int) -> int:
    """Which tree carries element ``start``: tree 0 the first half, tree 1 the second."""
    return 0 if start < split(0, n, 2, 0)[1] else 1


# --- the trees --------------------------------------------------------------------------


def test_trees_match_nccls_drawings() -> None:
    # the illustrations in NCCL's src/graph/trees.cc: tree 0 on 14 ranks, shifted tree 1 on 13
    assert [tree_node(0, 14, r).parent for r in range(14)] == [
        -1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12]
    assert [tree_node(1, 13, r).parent for r in range(13)] == [
        9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11]
    assert [tree_node(1, 12, r).parent for r in range(12)] == [
        1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1]


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("t", [0, 1])
def test_each_tree_is_an_in_order_binary_tree(t: int, p: int) -> None:
    nodes = [tree_node(t, p, r) for r in range(p)]
    roots = [r for r, node in enumerate(nodes) if node.parent < 0]
    assert roots == [0 if t == 0 or p == 1 else (1 if p % 2 else p - 1)]
    for r, node in enumerate(nodes):
        assert len(node.children) <= 2
        assert all(nodes[c].parent == r and nodes[c].depth == node.depth + 1 for c in node.children)
        members = _brute_subtree(t, p, r)
        assert members == {m for a, b in subtree_ranks(t, p, r) for m in range(a, b + 1)}
    assert len(_brute_subtree(t, p, roots[0])) == p
    assert max(node.depth for node in nodes) == tree_depth(p)


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("t", [0, 1])
def test_trees_as_arrays_match_the_nodes(t: int, p: int) -> None:
    """The array forms the model's descriptions use agree with the nodes, rank by rank."""
    parent, depth, children, place, below = tree._flat_tree(t, p)
    runs = tree._flat_subtrees(np.full(p, t), p, np.arange(p))
    for r in range(p):
        node = tree_node(t, p, r)
        assert (parent[r], depth[r], children[r]) == (node.parent, node.depth, len(node.children))
        ancestors = [a for a in range(p) if r in _brute_subtree(t, p, a) and a != r]
        assert below[r] == sum(len(tree_node(t, p, a).children) for a in ancestors)
        if node.parent >= 0:
            assert tree_node(t, p, node.parent).children[place[r]] == r
        assert [(a, b) for a, b in runs[r].tolist() if b >= a] == subtree_ranks(t, p, r)


@pytest.mark.parametrize("p", [p for p in RANKS if p > 1])
def test_trees_are_complementary(p: int) -> None:
    """Each rank has children in exactly one tree; for odd p rank 0 also roots tree 0."""
    for r in range(p):
        inner = [bool(tree_node(t, p, r).children) for t in (0, 1)]
        if p % 2 and r == 0:
            assert inner == [True, True] and len(tree_node(0, p, 0).children) == 1
        else:
            assert sum(inner) == 1, (r, inner)


# --- rounds, steps and pipelining ---------------------------------------------------------


@pytest.mark.parametrize("p", [2, 3, 5, 8, 12, 16, 17])
@pytest.mark.parametrize("segments", [1, 2, 5])
def test_rounds_follow_depth_and_segments(p: int, segments: int) -> None:
    """AllReduce: 2 rounds a level up, 1 down, 1 per extra segment (3D + S - 1)."""
    d, n = tree_depth(p), 2 * segments * p * 3
    allreduce = build_schedule("allreduce", "tree", p, n, segments=segments)
    bound = 3 * d + segments - 1
    assert (_rounds(allreduce) == bound) if segments > 1 else (_rounds(allreduce) <= bound)
    assert allreduce.num_steps() <= bound
    reduce_scatter = build_schedule("reduce_scatter", "tree", p, n, segments=segments)
    assert _rounds(reduce_scatter) <= bound
    allgather = _rounds(build_schedule("allgather", "tree", p, n, segments=segments))
    power = p > 2 and p & (p - 1) == 0  # on 2 ranks the root owns its tree's half
    assert (allgather == 2 * d + segments - 1) if power else (allgather <= 2 * d + segments - 1)


@pytest.mark.parametrize("segments", [1, 2, 4, 9])
def test_two_ranks_take_segments_plus_two_steps(segments: int) -> None:
    """Up (rounds -2..S-3) and down (rounds 0..S-1); one segment leaves round -1 empty."""
    s = build_schedule("allreduce", "tree", 2, 100, segments=segments)
    assert [s.num_steps(r) for r in range(2)] == [segments + 2 if segments > 1 else 2] * 2


def test_one_rank_has_no_steps() -> None:
    for collective in COLLECTIVES:
        assert build_schedule(collective, "tree", 1, 10).steps(0) == ()


@pytest.mark.parametrize("p", [6, 7, 16])
def test_inner_nodes_overlap_segments(p: int) -> None:
    """In some step a node sends a segment up while reducing the next one from a child."""
    s = build_schedule("allreduce", "tree", p, 1000, segments=6)
    for r in range(p):
        for t in (0, 1):
            node = tree_node(t, p, r)
            if node.parent < 0 or not node.children:
                continue
            assert any(
                any(isinstance(op, Send) and op.peer == node.parent for op in step.ops)
                and any(isinstance(op, Recv) and op.reduce and op.peer in node.children
                        for op in step.ops)
                for step in s.steps(r)), (r, t)


@pytest.mark.parametrize("p", [5, 8, 13])
def test_messages_follow_tree_edges(p: int) -> None:
    """AllReduce reduces only what children send and copies only what the parent sends."""
    n = 200
    s = build_schedule("allreduce", "tree", p, n, segments=4)
    for r in range(p):
        for step in s.steps(r):
            for op in step.ops:
                node = tree_node(_tree_of(n, op.start), p, r)
                if isinstance(op, Recv):
                    assert (op.peer in node.children) == op.reduce
                    assert op.reduce or op.peer == node.parent
                else:
                    assert op.peer in (node.parent, *node.children)


# --- elements sent ------------------------------------------------------------------------


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("n", [0, 1, 97, 4099])
def test_allreduce_sends_each_half_once_up_and_once_per_child(p: int, n: int) -> None:
    s = build_schedule("allreduce", "tree", p, n, segments=3)
    halves = [split(0, n, 2, t) for t in (0, 1)]
    for r in range(p):
        nodes = [tree_node(t, p, r) for t in (0, 1)]
        expected = sum(((node.parent >= 0) + len(node.children)) * (hi - lo)
                       for node, (lo, hi) in zip(nodes, halves))
        assert s.sent_elements(r) == expected
        assert s.sent_elements(r) <= 2 * n + 1
    assert sum(s.sent_elements(r) for r in range(p)) == 2 * (p - 1) * n


@pytest.mark.parametrize("p", RANKS)
def test_allgather_edge_carries_half_the_vector_once(p: int) -> None:
    """Up and down together, every tree edge moves its tree's half exactly once."""
    n = 7 * p + 3
    s = build_schedule("allgather", "tree", p, n, segments=2)
    assert sum(s.sent_elements(r) for r in range(p)) == (p - 1) * n
    for r in range(p):
        node = tree_node(0, p, r)
        if node.parent < 0:
            continue
        lo, hi = split(0, n, 2, 0)
        carried = sum(op.stop - op.start for a, b in ((r, node.parent), (node.parent, r))
                      for step in s.steps(a) for op in step.ops
                      if isinstance(op, Send) and op.peer == b and op.start < hi)
        assert carried == hi - lo
        assert s.sent_elements(r) <= 2 * n + 2


@pytest.mark.parametrize("p", [2, 3, 7, 12, 16])
@pytest.mark.parametrize("segments", [1, 3])
def test_reduce_scatter_runs_the_allreduce_schedule(p: int, segments: int) -> None:
    """Whole segments both ways, so every message of a round has the same size."""
    n = 10 * p + 1
    steps = [build_schedule(c, "tree", p, n, segments=segments).steps(r)
             for c in ("reduce_scatter", "allreduce") for r in range(p)]
    assert steps[:p] == steps[p:]
    assert any(step.ops for rank in steps[:p] for step in rank)


# --- pipelined correctness and parameters ---------------------------------------------------


@pytest.mark.parametrize("p", [2, 3, 6, 7, 16, 17, 33])
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_several_segments_match_numpy(collective: str, p: int) -> None:
    for count in (0, 1, p + 1, 97, 1009):
        for segments in (2, 3, 8):
            s = build_schedule(collective, "tree", p, count, segments=segments)
            verify(s)
            for seed, (dtype, op) in enumerate([("float32", "sum"), ("int64", "prod"),
                                                ("float16", "max")]):
                inputs, full = rank_inputs(collective, p, count, dtype, op, seed)
                check_outputs(collective, interpret(s, inputs, op), full, op)


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_relabelled_ranks(collective: str) -> None:
    p, count = 9, 101
    order = [(4 * v + 3) % p for v in range(p)]
    s = build_schedule(collective, "tree", p, count, segments=3, order=order)
    verify(s)
    inputs, full = rank_inputs(collective, p, count, "int32", "sum")
    check_outputs(collective, interpret(s, inputs, "sum"), full, "sum")


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_segments_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match=r"segments=.*integer >= 1"):
        build_schedule("allreduce", "tree", 4, 100, segments=bad)


def test_default_segments_follow_the_segment_size() -> None:
    def segments(count: int) -> int:
        return build_schedule("allreduce", "tree", 8, count).param_dict["segments"]

    assert segments(0) == segments(1) == segments(2 * SEGMENT_ELEMENTS) == 1
    assert segments(2 * SEGMENT_ELEMENTS + 2) == 2
    assert segments(1 << 28) == (1 << 27) // SEGMENT_ELEMENTS
    assert build_schedule("allgather", "tree", 8, 9, segments=100).param_dict["segments"] == 4
    assert tree.resolve_params("allreduce", 8, 1000, segments=7) == {"segments": 7}


# --- trees over nodes ------------------------------------------------------------------------

SHAPES = [(nodes, size) for nodes in range(2, 9) for size in range(1, 9)]


@pytest.mark.parametrize("t", [0, 1])
@pytest.mark.parametrize("nodes,size", [(2, 8), (3, 4), (5, 3), (7, 2), (1, 5), (8, 8)])
def test_trees_over_nodes_chain_each_node_from_its_head(t: int, nodes: int, size: int) -> None:
    """NCCL's trees over nodes: heads joined as the trees over the node indices, a chain
    from the head through its node, at most three children, depth L - 1 + lg N."""
    p = nodes * size
    got = [tree_node(t, p, r, ranks_per_node=size) for r in range(p)]
    over_nodes = [tree_node(t, nodes, k) for k in range(nodes)]
    for r, node in enumerate(got):
        k, position = divmod(r, size)
        if position:
            assert node.parent == r - 1
        else:
            assert node.parent == max(-1, over_nodes[k].parent * size)
            assert node.children[1:] == tuple(c * size for c in over_nodes[k].children)
        assert len(node.children) <= 3
        assert all(got[c].parent == r and got[c].depth == node.depth + 1 for c in node.children)
        members = _brute_subtree_over(t, p, r, size)
        assert members == {m for a, b in subtree_ranks(t, p, r, size) for m in range(a, b + 1)}
    assert max(node.depth for node in got) == tree_depth(p, size)
    assert sorted(r for r, node in enumerate(got) if node.parent < 0) == \
        [size * next(k for k, node in enumerate(over_nodes) if node.parent < 0)]


def _brute_subtree_over(t: int, p: int, rank: int, size: int) -> set[int]:
    members, todo = set(), [rank]
    while todo:
        members.add(todo[-1])
        todo.extend(tree_node(t, p, todo.pop(), size).children)
    return members


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_one_rank_per_node_is_the_tree_over_all_ranks(collective: str) -> None:
    for p, count in ((6, 1000), (13, 97)):
        flat = build_schedule(collective, "tree", p, count, segments=3)
        for size in (None, 1):
            s = build_schedule(collective, "tree", p, count, segments=3, ranks_per_node=size)
            assert [s.steps(r) for r in range(p)] == [flat.steps(r) for r in range(p)]
            assert s.params == flat.params


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_trees_over_nodes_match_numpy(collective: str) -> None:
    """Every shape of 2..8 nodes x 1..8 ranks, with counts, channels, segments, dtypes and
    ops rotating over the shapes."""
    for i, (nodes, size) in enumerate(SHAPES):
        p = nodes * size
        count = (0, p - 1, 97, 211)[i % 4]
        channels, segments = 1 + i % 3, (None, 3)[i % 2]
        s = build_schedule(collective, "tree", p, count, ranks_per_node=size, channels=channels,
                           segments=segments)
        verify(s)
        dtype, op = DTYPES[i % len(DTYPES)], OPS[(i // 2) % len(OPS)]
        inputs, full = rank_inputs(collective, p, count, dtype, op, seed=i)
        check_outputs(collective, interpret(s, inputs, op), full, op)


@pytest.mark.parametrize("nodes,size", [(2, 8), (4, 8), (3, 4), (5, 2)])
@pytest.mark.parametrize("segments", [2, 5])
def test_trees_over_nodes_pipeline_by_spacing(nodes: int, size: int, segments: int) -> None:
    """AllReduce takes ``S - 1`` rounds, plus the depth down, plus the spacing up: a child
    sends a segment up ``n - c`` rounds (``n`` its parent's children, ``c`` its number)
    before its parent's own send of it, so a chain costs one round a hop."""
    p = nodes * size
    s = build_schedule("allreduce", "tree", p, 6 * segments * p, segments=segments,
                       ranks_per_node=size)
    deepest = 0
    for t in (0, 1):
        got = [tree_node(t, p, r, size) for r in range(p)]
        base, todo = {next(r for r, node in enumerate(got) if node.parent < 0): 0}, []
        todo.extend(base)
        while todo:
            r = todo.pop()
            for c, child in enumerate(got[r].children):
                base[child] = base[r] - len(got[r].children)
                deepest = max(deepest, -base[child] - c)
                todo.append(child)
    assert _rounds(s) == deepest + tree_depth(p, size) + segments - 1


@pytest.mark.parametrize("bad,match", [(0, r"ranks_per_node=0 .*integer >= 1"),
                                       (2.0, r"ranks_per_node=2.0 .*integer >= 1"),
                                       (4, r"ranks_per_node=4 does not divide nranks=6")])
def test_ranks_per_node_is_checked(bad: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_schedule("allreduce", "tree", 6, 100, ranks_per_node=bad)
