"""Chunked pipeline: properties read from the schedule itself.

Rounds are counted in the lock-step model the verifier uses: a step completes one round
after its own previous step and every peer's step before the matching one.
"""

from __future__ import annotations

import numpy as np
import pytest

from collectives import Recv, Send, build_schedule, interpret, verify
from collectives.algorithms import pipeline
from collectives.layout import block
from collectives.progress import completion_order, match

RANKS = (2, 3, 4, 5, 7, 8, 13)
SEGMENTS = (1, 2, 3, 7, 16)


def rounds_of(schedule) -> dict[tuple[int, int], int]:
    """Return the round, counted from 1, in which each (rank, step) completes."""
    matching = match(schedule)
    done: dict[tuple[int, int], int] = {}
    for rank, index in completion_order(schedule, matching):
        before = [done[(rank, index - 1)] if index else 0]
        for op, partner in zip(schedule.steps(rank)[index].ops, matching.partners[rank][index]):
            if partner >= 0:
                before.append(done[(op.peer, partner - 1)] if partner else 0)
        done[(rank, index)] = 1 + max(before)
    return done


def expected_rounds(collective: str, p: int, segments: int) -> int:
    if collective == "allreduce":
        return segments + 2 * p - 3
    extra = collective == "reduce_scatter" and p >= 3 and (segments == 1 or p == 3)
    return (p - 1) * segments + extra


def block_sizes(count: int, p: int, ranks) -> int:
    return sum(block(count, p, r)[1] - block(count, p, r)[0] for r in ranks)


@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("segments", SEGMENTS)
def test_rounds(collective, p, segments):
    schedule = build_schedule(collective, "pipeline", p, 1000, segments=segments)
    verify(schedule)
    assert max(rounds_of(schedule).values()) == expected_rounds(collective, p, segments)


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("segments", SEGMENTS)
def test_allreduce_steps_per_rank(p, segments):
    schedule = build_schedule("allreduce", "pipeline", p, 1000, segments=segments)
    s = segments
    expected = [min(2 * s, s + 2 * p - 3)]
    expected += [min(2 * s + 2, 2 * p - 2 * r + s - 1) for r in range(1, p - 1)]
    expected += [s + 1]
    assert [schedule.num_steps(r) for r in range(p)] == expected


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("segments", (1, 3))
def test_allgather_steps_per_rank(p, segments):
    schedule = build_schedule("allgather", "pipeline", p, 1000, segments=segments)
    expected = [segments * max(min(r + 1, p - 1), min(p - r, p - 1)) for r in range(p)]
    assert [schedule.num_steps(r) for r in range(p)] == expected


@pytest.mark.parametrize("p, segments", [(2, 1), (4, 3), (5, 9), (8, 7), (8, 20), (13, 40)])
def test_steady_state_links_carry_different_segments(p, segments):
    """Each right-going link carries a segment in every steady round, all different."""
    schedule = build_schedule("allreduce", "pipeline", p, 10_000, segments=segments)
    rounds = rounds_of(schedule)
    by_round: dict[int, dict[int, tuple[int, int]]] = {}
    for (rank, index), when in rounds.items():
        for op in schedule.steps(rank)[index].ops:
            if isinstance(op, Send) and op.peer == rank + 1:
                by_round.setdefault(when, {})[rank] = (op.start, op.stop)
    full = [links for links in by_round.values() if len(links) == p - 1]
    assert len(full) == segments - p + 2
    for links in by_round.values():
        assert len(set(links.values())) == len(links)


@pytest.mark.parametrize("p", (2, 3, 6, 11))
@pytest.mark.parametrize("count", (0, 5, 1001))
def test_bytes_sent_per_rank(p, count):
    allreduce = build_schedule("allreduce", "pipeline", p, count, segments=4)
    assert [allreduce.sent_elements(r) for r in range(p)] == [count] + [2 * count] * (p - 2) + [count]
    reduce_scatter = build_schedule("reduce_scatter", "pipeline", p, count, segments=2)
    assert [reduce_scatter.sent_elements(r) for r in range(p)] == [
        count - block_sizes(count, p, [r]) for r in range(p)]
    allgather = build_schedule("allgather", "pipeline", p, count, segments=2)
    assert [allgather.sent_elements(r) for r in range(p)] == [
        (block_sizes(count, p, range(r + 1)) if r < p - 1 else 0)
        + (block_sizes(count, p, range(r, p)) if r > 0 else 0) for r in range(p)]


@pytest.mark.parametrize("segments", [0, -3, 2.0, True, "4"])
def test_bad_segments(segments):
    with pytest.raises(ValueError, match=rf"segments={segments!r} .*integer >= 1"):
        build_schedule("allreduce", "pipeline", 4, 100, segments=segments)


@pytest.mark.parametrize("collective, p, count, segments", [
    ("allreduce", 1024, 2**28, 2048), ("allreduce", 64, 10, 10), ("allreduce", 64, 0, 1),
    ("allreduce", 8, 2**20, 8), ("allreduce", 2, 100, 1),
    ("reduce_scatter", 4, 2**20, 2), ("allgather", 4, 100, 1), ("allgather", 3, 0, 1),
])
def test_default_segments(collective, p, count, segments):
    resolved = pipeline.resolve_params(collective, p, count)
    assert resolved == {"segments": segments}
    assert pipeline.SEGMENT_ELEMENTS == 2**17


def test_only_the_asked_rank_is_generated():
    schedule = build_schedule("allreduce", "pipeline", 4096, 4096 * 3)
    steps = schedule.steps(17)
    assert len(schedule._cache) == 1 and len(steps) == schedule.num_steps(17)


def test_allreduce_reduces_each_element_once():
    """Every element is reduced p-1 times in all, then only copied: ranks agree bitwise."""
    p, count = 9, 257
    schedule = build_schedule("allreduce", "pipeline", p, count, segments=5)
    reduced = np.zeros(count, int)
    for rank in range(p):
        for step in schedule.steps(rank):
            for op in step.ops:
                if isinstance(op, Recv) and op.reduce:
                    reduced[op.start:op.stop] += 1
    assert (reduced == p - 1).all()
    inputs = [np.random.default_rng(r).standard_normal(count).astype(np.float32) for r in range(p)]
    outputs = interpret(schedule, inputs)
    assert all(out.tobytes() == outputs[0].tobytes() for out in outputs)
    np.testing.assert_allclose(outputs[0], np.sum(inputs, axis=0, dtype=np.float64), rtol=1e-5)


def _inputs(collective: str, p: int, count: int, rng) -> tuple[list[np.ndarray], np.ndarray]:
    full = [rng.integers(-9, 9, count).astype(np.int64) for _ in range(p)]
    if collective == "allgather":
        parts = [full[r][slice(*block(count, p, r))] for r in range(p)]
        return parts, np.concatenate(parts)
    return full, np.sum(full, axis=0)


@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("p, count, segments", [(5, 23, 3), (8, 7, 2), (7, 1000, 1), (12, 13, None)])
def test_order_permutation(collective, p, count, segments):
    rng = np.random.default_rng(p * count)
    order = [int(r) for r in rng.permutation(p)]
    params = {} if segments is None else {"segments": segments}
    schedule = build_schedule(collective, "pipeline", p, count, order=order, **params)
    verify(schedule)
    first_peers = {op.peer for op in schedule.steps(order[0])[0].ops}
    assert first_peers == {order[1]}
    inputs, reference = _inputs(collective, p, count, rng)
    for rank, out in enumerate(interpret(schedule, inputs)):
        expected = reference[slice(*block(count, p, rank))] if collective == "reduce_scatter" else reference
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("p", (1, 2, 3, 17, 33))
@pytest.mark.parametrize("segments", (None, 1, 4))
def test_small_and_uneven_counts(collective, p, segments):
    rng = np.random.default_rng(p)
    params = {} if segments is None else {"segments": segments}
    for count in sorted({0, 1, p - 1, p + 1, 31}):
        schedule = build_schedule(collective, "pipeline", p, count, **params)
        verify(schedule)
        inputs, reference = _inputs(collective, p, count, rng)
        for rank, out in enumerate(interpret(schedule, inputs)):
            expected = (reference[slice(*block(count, p, rank))]
                        if collective == "reduce_scatter" else reference)
            np.testing.assert_array_equal(out, expected)
