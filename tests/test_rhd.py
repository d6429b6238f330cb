"""Properties of recursive halving-doubling read from the schedule itself.

Correctness over the full rank x count x dtype x op matrix lives in test_algorithms.py;
here: step counts, bytes sent, the ``rank ^ mask`` partner pattern, the fold of
non-powers of two, and ``order=``; and the same of recursive doubling (``doubling=True``),
with the operand order that keeps its results bitwise identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from collectives import Recv, Schedule, Send, Step, build_schedule, interpret, verify
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


@pytest.mark.parametrize("p", RANKS)
def test_doubling_exchanges_the_whole_vector_with_rank_xor_mask(p: int) -> None:
    n, size = 5 * p + 3, 1 << _lg(p)
    s = build_schedule("allreduce", "rhd", p, n, doubling=True)
    assert s.param_dict == {"doubling": True}
    assert s.num_steps() == _lg(p) + (0 if p == size else 2)
    core, survivor = _core(build_schedule("allreduce", "rhd", p, 1))
    for i, rank in enumerate(core):
        steps = s.steps(rank)
        if rank - 1 in survivor:
            assert [str(step) for step in (steps[0], steps[-1])] == [
                f"reduce [0:{n}) <- {rank - 1}", f"send [0:{n}) -> {rank - 1}"]
            steps = steps[1:-1]
        masks = [1 << k for k in range(_lg(size))]
        assert [str(step) for step in steps] == [
            f"send [0:{n}) -> {core[i ^ m]}; reduce [0:{n}) <- {core[i ^ m]}"
            + (" (received first)" if i & m else "") for m in masks], rank
    for extra, surv in survivor.items():
        assert [str(step) for step in s.steps(extra)] == [f"send [0:{n}) -> {surv}",
                                                          f"recv [0:{n}) <- {surv}"]


@pytest.mark.parametrize("p", [1, 2, 4, 8, 16, 32, 64])
def test_doubling_sends_lg_p_vectors(p: int) -> None:
    for n in (0, 1, 7, 1009):
        s = build_schedule("allreduce", "rhd", p, n, doubling=True)
        assert all(s.sent_elements(r) == _lg(p) * n for r in range(p))


def test_doubling_false_is_halving_doubling_and_records_nothing() -> None:
    for p, n in ((2, 5), (5, 17), (8, 64)):
        plain = build_schedule("allreduce", "rhd", p, n)
        assert build_schedule("allreduce", "rhd", p, n, doubling=False) == plain
        assert plain.params == ()
        assert build_schedule("allreduce", "rhd", p, n, doubling=True) != plain


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_doubling_is_only_an_allreduce(collective: str) -> None:
    with pytest.raises(ValueError, match=f"doubling=True is not allowed for {collective}; "
                                         "recursive doubling is an allreduce: use doubling=False"):
        build_schedule(collective, "rhd", 4, 8, doubling=True)
    assert build_schedule(collective, "rhd", 4, 8, doubling=False).params == ()


@pytest.mark.parametrize("value", [1, "yes", None])
def test_doubling_must_be_a_bool(value: object) -> None:
    with pytest.raises(ValueError, match=r"doubling=.* is not allowed; it must be True or False"):
        build_schedule("allreduce", "rhd", 4, 8, doubling=value)


@pytest.mark.parametrize("p", [3, 6, 7, 13, 16])
def test_doubling_with_order_and_channels(p: int) -> None:
    order = [int(x) for x in np.random.default_rng(p).permutation(p)]
    for n in (0, p - 1, p + 1, 1009):
        _run("allreduce", p, n, "float32", doubling=True, order=order)
        _run("allreduce", p, n, "float64", doubling=True, channels=3)


def _unswapped(schedule: Schedule) -> Schedule:
    """``schedule`` with every receive's ``swap`` cleared."""
    def plain(op):  # type: ignore[no-untyped-def]
        return Recv(op.peer, op.start, op.stop, op.reduce) if isinstance(op, Recv) else op
    ranks = [[Step(tuple(map(plain, step.ops))) for step in steps] for steps in schedule]
    return Schedule.from_steps(schedule.collective, schedule.algorithm, schedule.count, ranks)


def _awkward(p: int, n: int, dtype: str) -> list[np.ndarray]:
    """Per rank: signed zeros, NaNs with a payload of the rank's own, and ordinary values;
    whether ``max(a, b)`` or ``a + b`` keeps ``a``'s or ``b``'s bits depends on the order."""
    info = np.finfo(dtype)
    bits = np.dtype(f"uint{info.bits}")
    rng = np.random.default_rng([p, n])
    inputs = []
    for rank in range(p):
        x = rng.choice(np.array([0.0, -0.0, 1.5, -2.0], dtype), n)
        nan = (np.array(np.nan, dtype).view(bits) | bits.type(rank + 1)).view(dtype)
        x[rng.random(n) < 0.3] = nan
        inputs.append(x)
    return inputs


@pytest.mark.parametrize("p", [2, 3, 4, 5, 8, 12])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_doubling_is_bitwise_identical_where_the_op_is_not_commutative(p: int, dtype: str) -> None:
    """Signed zeros (max, min) and NaN payloads (every op): both partners reduce the same
    operands in the same order; with the swap cleared the ranks disagree."""
    n = 64
    s = build_schedule("allreduce", "rhd", p, n, doubling=True)
    inputs = _awkward(p, n, dtype)
    for op in ("sum", "prod", "max", "min"):
        outputs = interpret(s, inputs, op)
        assert all(out.tobytes() == outputs[0].tobytes() for out in outputs), op
        unswapped = interpret(_unswapped(s), inputs, op)
        assert any(out.tobytes() != unswapped[0].tobytes() for out in unswapped), op
