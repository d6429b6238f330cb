"""Properties of recursive halving-doubling read from the schedule itself.

Correctness over the full rank x count x dtype x op matrix lives in test_algorithms.py;
here: step counts, bytes sent, the ``rank ^ mask`` partner pattern, the fold of
non-powers of two, and ``order=``.
"""

from __future__ import annotations

import numpy as np
import pytest

from collectives import Recv, Schedule, Send, build_schedule, interpret, verify
from collectives.layout import block

RANKS = [*range(1, 18), 31, 32, 33, 64]
COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")


def _lg(p: int) -> int:
    return p.bit_length() - 1


def _peers(schedule: Schedule, rank: int) -> list[set[int]]:
    """The peers of each step of ``rank``."""
    return [{op.peer for op in step.ops if isinstance(op, (Send, Recv))}
            for step in schedule.steps(rank)]


def _extras(schedule: Schedule) -> list[int]:
    """Ranks folded out of the core: their first step only sends."""
    return [r for r in range(schedule.nranks) if schedule.steps(r)
            and not any(isinstance(op, Recv) for op in schedule.steps(r)[0].ops)]


@pytest.mark.parametrize("p", RANKS)
def test_step_counts(p: int) -> None:
    power = p & (p - 1) == 0
    expected = {"allreduce": 2 * _lg(p) + (0 if power else 2),
                "reduce_scatter": _lg(p) + (0 if power else 2),
                "allgather": _lg(p) + (0 if power else 2)}
    for collective, steps in expected.items():
        assert build_schedule(collective, "rhd", p, 3 * p + 1).num_steps() == steps, collective


@pytest.mark.parametrize("p", [1, 2, 4, 8, 16, 32, 64])
@pytest.mark.parametrize("n", [0, 1, 7, 100003])
def test_bytes_sent_powers_of_two(p: int, n: int) -> None:
    for k in (1, 5):  # p divides k * p * n exactly
        s = build_schedule("allreduce", "rhd", p, k * p * n)
        assert all(s.sent_elements(r) == 2 * (p - 1) * k * n for r in range(p))
    s = build_schedule("allreduce", "rhd", p, n)
    low, high = 2 * (p - 1) * (n // p), 2 * (p - 1) * -(-n // p)
    assert all(low <= s.sent_elements(r) <= high for r in range(p))
    rs = build_schedule("reduce_scatter", "rhd", p, n)
    assert [rs.sent_elements(r) for r in range(p)] == [
        n - (hi - lo) for lo, hi in (block(n, p, r) for r in range(p))]
    ag = build_schedule("allgather", "rhd", p, n)
    assert all((p - 1) * (n // p) <= ag.sent_elements(r) <= (p - 1) * -(-n // p)
               for r in range(p))
    ag = build_schedule("allgather", "rhd", p, 3 * p * n)
    assert all(ag.sent_elements(r) == (p - 1) * 3 * n for r in range(p))


@pytest.mark.parametrize("p", [3, 5, 6, 7, 12, 17, 31, 33])
def test_allreduce_fold_costs_one_vector_each_way(p: int) -> None:
    n, core = 12 * 64 * p, 1 << _lg(p)
    s = build_schedule("allreduce", "rhd", p, n)
    extras = _extras(s)
    assert len(extras) == p - core
    for r in range(p):
        expected = n if r in extras else 2 * (core - 1) * n // core + n * (r - 1 in extras)
        assert s.sent_elements(r) == expected, r


@pytest.mark.parametrize("p", [3, 5, 6, 7, 12, 17, 31, 33])
@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_fold_moves_only_what_the_extra_rank_needs(collective: str, p: int) -> None:
    n = 5 * p + 2
    s = build_schedule(collective, "rhd", p, n)
    for extra in _extras(build_schedule("allreduce", "rhd", p, 1)):
        fold_in, fold_out = s.steps(extra)
        own = block(n, p, extra)
        sent = sum(op.stop - op.start for op in fold_in.ops if isinstance(op, Send))
        received = {(op.start, op.stop) for op in fold_out.ops if isinstance(op, Recv)}
        if collective == "reduce_scatter":
            assert (sent, received) == (n, {own})
        else:
            assert (sent, received) == (own[1] - own[0], {(0, own[0]), (own[1], n)} - {(0, 0), (n, n)})


def _core(schedule: Schedule) -> tuple[list[int], dict[int, int]]:
    """The core ranks in core order and each extra rank's survivor."""
    extras = _extras(schedule)
    survivor = {e: _peers(schedule, e)[0].pop() for e in extras}
    return [r for r in range(schedule.nranks) if r not in extras], survivor


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_partner_pattern(collective: str, p: int) -> None:
    s = build_schedule(collective, "rhd", p, 5 * p + 3)
    allreduce = build_schedule("allreduce", "rhd", p, 1)
    core, survivor = _core(allreduce)
    size = len(core)
    assert size == 1 << _lg(p)
    # pairs are neighbours, the higher rank survives, and no survivor takes two ranks
    assert all(s_ == e + 1 for e, s_ in survivor.items())
    assert len(set(survivor.values())) == len(survivor)
    assert p & (p - 1) == 0 or 0 in survivor  # as in MPICH, rank 0 folds into rank 1
    halving = [size >> k for k in range(1, _lg(size) + 1)]
    masks = {"allreduce": halving + halving[::-1], "reduce_scatter": halving,
             "allgather": halving[::-1]}[collective]
    for i, rank in enumerate(core):
        peers = _peers(s, rank)
        if rank - 1 in survivor:
            assert peers[0] == peers[-1] == {rank - 1}
            peers = peers[1:-1]
        assert peers == [{core[i ^ mask]} for mask in masks], rank
    for extra, surv in survivor.items():
        assert _peers(s, extra) == [{surv}, {surv}]


@pytest.mark.parametrize("p", [5, 6, 12, 17, 33])
def test_reduce_scatter_core_steps_are_balanced(p: int) -> None:
    """With equal blocks, core step ``mask=m`` moves at most ``(m + ceil(m r / p')) n / p``."""
    n, core = 7 * p, 1 << _lg(p)
    r = p - core
    s = build_schedule("reduce_scatter", "rhd", p, n)
    ranks, survivor = _core(build_schedule("allreduce", "rhd", p, 1))
    for rank in ranks:
        steps = s.steps(rank)[1:-1] if rank - 1 in survivor else s.steps(rank)
        for step, mask in zip(steps, [core >> k for k in range(1, _lg(core) + 1)]):
            sent = sum(op.stop - op.start for op in step.ops if isinstance(op, Send))
            assert sent <= (mask - (-mask * r // core)) * 7, (rank, mask)


def _run(collective: str, p: int, n: int, dtype: str, **params) -> None:
    """Run through verify and interpret and compare to NumPy."""
    s = build_schedule(collective, "rhd", p, n, **params)
    verify(s)
    rng = np.random.default_rng([p, n])
    full = [rng.uniform(-1, 1, n).astype(dtype) for _ in range(p)]
    if collective == "allgather":
        parts = [full[r][slice(*block(n, p, r))] for r in range(p)]
        for out in interpret(s, parts):
            assert np.array_equal(out, np.concatenate(parts))
        return
    outputs = interpret(s, full)
    reference = np.sum(np.stack(full).astype(np.float64), axis=0)
    for rank, out in enumerate(outputs):
        want = reference if collective == "allreduce" else reference[slice(*block(n, p, rank))]
        np.testing.assert_allclose(out, want, rtol=1e-5 * p, atol=1e-6 * p)
    if collective == "allreduce":
        assert all(out.tobytes() == outputs[0].tobytes() for out in outputs)


@pytest.mark.parametrize("p", [3, 6, 7, 13, 16])
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_order_permutation(collective: str, p: int) -> None:
    order = [int(x) for x in np.random.default_rng(p).permutation(p)]
    for n in (0, p - 1, p + 1, 1009):
        _run(collective, p, n, "float32", order=order)
    plain, permuted = (build_schedule(collective, "rhd", p, 4 * p, **extra)
                       for extra in ({}, {"order": order}))
    for v in range(p):  # virtual rank v runs on real rank order[v] with relabelled peers
        assert _peers(permuted, order[v]) == [{order[q] for q in peers}
                                              for peers in _peers(plain, v)]


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8, 11, 12, 33])
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_fold_with_fewer_elements_than_ranks(collective: str, p: int) -> None:
    for n in (0, 1, p // 2, p - 1):
        _run(collective, p, n, "float64")


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_benchmark_one_rank_of_1024(benchmark, collective: str) -> None:
    """Generating one rank's steps of a 1024-rank, 2**28-element schedule."""
    from collectives.algorithms import rhd

    blocks = [block(2**28, 1024, r) for r in range(1024)]
    steps = benchmark(rhd.rank_steps, collective, 5, 1024, 2**28, blocks)
    assert len(steps) == {"allreduce": 20}.get(collective, 10)
