"""hier: the hierarchical collectives, composed of the flat ones, against NumPy; only ranks of
equal local rank talk across nodes; bad input is refused."""

from __future__ import annotations

import pytest

from collectives import BLOCK_COLLECTIVES, build_schedule, interpret, verify

from .reference import DTYPES, OPS, check_outputs, rank_inputs

# (nodes, ranks per node): one node, one rank per node, primes, non-powers of two
SHAPES = ((1, 3), (3, 1), (2, 2), (3, 2), (2, 3), (5, 2), (3, 4))


@pytest.mark.parametrize("inner", ["ring", "tree", "rhd", "pipeline"])
@pytest.mark.parametrize("collective", BLOCK_COLLECTIVES)
def test_hier_matches_numpy(collective: str, inner: str) -> None:
    for nodes, size in SHAPES:
        p = nodes * size
        for count in sorted({0, 1, p - 1, p + 1, 97}):
            for channels, intra in ((1, "ring"), (3, "rhd")):
                schedule = build_schedule(collective, "hier", p, count, ranks_per_node=size,
                                          inner=inner, intra=intra, channels=channels)
                verify(schedule)
                dtype, op = DTYPES[(count + p) % len(DTYPES)], OPS[count % len(OPS)]
                inputs, full = rank_inputs(collective, p, count, dtype, op, seed=count)
                check_outputs(collective, interpret(schedule, inputs, op), full, op)


@pytest.mark.parametrize("collective", BLOCK_COLLECTIVES)
def test_only_equal_local_ranks_cross_nodes(collective: str) -> None:
    size = 4
    schedule = build_schedule(collective, "hier", 12, 1000, ranks_per_node=size, inner="tree")
    for rank in range(12):
        for step in schedule.steps(rank):
            for op in step.ops:
                assert op.peer // size == rank // size or op.peer % size == rank % size


def test_allreduce_network_volume() -> None:
    def across(schedule, size: int) -> int:
        return sum(op.stop - op.start for r in range(schedule.nranks)
                   for step in schedule.steps(r) for op in step.ops
                   if op.peer // size != r // size and type(op).__name__ == "Send")

    hier = build_schedule("allreduce", "hier", 16, 1600, ranks_per_node=8)
    ring = build_schedule("allreduce", "ring", 16, 1600)
    # hier: every rank sends 2(N-1)/N of its n/L block across (N = 2 nodes, L = 8);
    # ring: two crossings, each carrying 2(p-1)/p of the vector
    assert across(hier, 8) == 16 * 200
    assert across(ring, 8) == 2 * (2 * 15 * 1600 // 16)


@pytest.mark.parametrize("params, error, match", [
    ({}, ValueError, "needs ranks_per_node"),
    ({"ranks_per_node": 4}, ValueError, "unequal size"),
    ({"ranks_per_node": 0}, ValueError, "ranks_per_node=0"),
    ({"ranks_per_node": 2, "inner": "bus"}, ValueError, "inner='bus'"),
    ({"ranks_per_node": 2, "intra": None}, ValueError, "intra=None"),
    ({"ranks_per_node": 2, "order": (0, 1, 2, 3, 4, 5)}, TypeError, "'order'"),
])
def test_bad_hier_input_is_refused(params: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        build_schedule("allreduce", "hier", 6, 10, **params)
