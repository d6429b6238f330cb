"""Executor pieces that need no MPI: plan compilation, buffer checks, auto, agreement."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import collectives
from collectives import build_schedule
from collectives.executors.buffers import IN_PLACE, prepare, workspace
from collectives.executors.check import ArgumentMismatchError, agree, check_enabled, signature
from collectives.executors.plan import compile_steps, get_plan
from collectives.schedule import Copy, Recv, Send, Step

from .reference import SERVED


def test_importing_needs_neither_mpi4py_nor_cupy() -> None:
    code = ("import sys, collectives; collectives.allreduce; "
            "print('mpi4py.MPI' in sys.modules, 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=60)
    assert out.stdout.split() == ["False", "False"]


def test_compile_tags_count_messages_per_pair_and_drop_empty_transfers() -> None:
    steps = [Step((Send(1, 0, 2), Send(1, 2, 2), Recv(2, 0, 2, True), Recv(2, 4, 6, True, True))),
             Step((Send(1, 2, 4), Recv(2, 6, 7), Copy(0, 1, 7)))]
    compiled, scratch = compile_steps(steps, itemsize=4)
    first, second = compiled
    assert first.sends == ((slice(0, 8), 1, 0),)  # the empty send still took tag 1
    assert first.recvs == ((True, slice(0, 8), 2, 0), (True, slice(8, 16), 2, 1))
    assert first.reduces == ((slice(0, 2), slice(0, 2), False), (slice(4, 6), slice(2, 4), True))
    assert second.sends == ((slice(8, 16), 1, 2),)
    assert second.recvs == ((False, slice(24, 28), 2, 2),)
    assert second.copies == ((slice(0, 1), slice(7, 8)),)
    assert scratch == 4


def test_compile_drops_steps_with_nothing_to_do() -> None:
    compiled, scratch = compile_steps([Step((Send(1, 3, 3), Recv(1, 0, 0, True)))], itemsize=8)
    assert compiled == () and scratch == 0


@pytest.mark.parametrize("algorithm, collective", SERVED)
def test_plan_scratch_covers_every_reduce_and_sends_match_schedule(algorithm: str,
                                                                   collective: str) -> None:
    schedule = build_schedule(collective, algorithm, 5, 23)
    for rank in range(5):
        plan = get_plan(collective, algorithm, 5, rank, 23, np.dtype("float64"), {})
        sent = sum(span.stop - span.start for step in plan.steps for span, _, _ in step.sends)
        assert sent == 8 * schedule.sent_elements(rank)
        for step in plan.steps:
            assert all(0 <= s.start and s.stop <= plan.scratch_count for _, s, _ in step.reduces)


def test_plan_is_cached_and_keyed_by_dtype_and_params() -> None:
    f4, f8 = np.dtype("float32"), np.dtype("float64")
    plan = get_plan("allgather", "ring", 4, 1, 12, f4, {})
    assert get_plan("allgather", "ring", 4, 1, 12, f4, {}) is plan
    assert get_plan("allgather", "ring", 4, 1, 12, f8, {}) is not plan
    ordered = get_plan("allgather", "ring", 4, 1, 12, f4, {"order": [3, 2, 1, 0]})
    assert ordered is not plan and ordered.params == (("order", (3, 2, 1, 0)),)
    assert plan.input == slice(3, 6) and plan.output == slice(0, 12)


def test_prepare_lays_out_each_collective() -> None:
    call = prepare("reduce_scatter", np.zeros(12, "f4"), None, 4)
    assert (call.count, call.part, call.result.shape) == (12, 3, (3,))
    call = prepare("allgather", np.zeros((2, 3), "i8"), None, 4)
    assert (call.count, call.part, call.result.shape) == (24, 6, (8, 3))
    recv = np.zeros(12, "f4")
    call = prepare("reduce_scatter", IN_PLACE, recv, 4)
    assert call.send is None and call.result.base is recv and call.result.size == 3
    assert prepare("allreduce", recv, recv, 4).send is None  # same array: in place


@pytest.mark.parametrize("args, error, text", [
    (("allreduce", np.zeros(4, "M8[s]"), None), TypeError, "sendbuf has dtype 'datetime64[s]'"),
    (("allreduce", np.zeros(8)[::2], None), ValueError, "sendbuf is not contiguous"),
    (("allreduce", np.zeros(4), np.zeros(5)), ValueError, "recvbuf has 5 elements"),
    (("allreduce", np.zeros(4), np.zeros(4, "f4")), TypeError, "sendbuf has dtype float64"),
    (("allreduce", [1.0], None), TypeError, "sendbuf is a builtins.list"),
    (("allreduce", IN_PLACE, None), ValueError, "recvbuf=None with sendbuf=IN_PLACE"),
    (("reduce_scatter", np.zeros(10), None), ValueError, "a multiple of 4"),
    (("reduce_scatter", np.zeros(12), np.zeros(4)), ValueError, "4 x 4 = 16"),
    (("allgather", np.zeros(3), np.zeros(13)), ValueError, "4 x 3 = 12"),
    (("allgather", IN_PLACE, np.zeros(13)), ValueError, "an in-place allgather"),
])
def test_prepare_rejects_bad_buffers(args, error, text) -> None:
    with pytest.raises(error, match=text.replace("(", r"\(").replace("[", r"\[")):
        prepare(*args, 4)


def test_prepare_rejects_overlap_and_read_only() -> None:
    whole = np.zeros(16)
    with pytest.raises(ValueError, match="overlap"):
        prepare("allreduce", whole[:8], whole[4:12], 4)
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        prepare("allreduce", np.zeros(4), frozen, 4)


def test_workspace_is_reused_and_grown() -> None:
    small = workspace(np, np.dtype("f8"), 10, "test")
    again = workspace(np, np.dtype("f8"), 6, "test")
    assert again.base is small.base and again.size == 6
    assert workspace(np, np.dtype("f8"), 100, "test").size == 100


def test_in_place_is_a_picklable_singleton() -> None:
    assert pickle.loads(pickle.dumps(IN_PLACE)) is IN_PLACE is collectives.IN_PLACE
    assert repr(IN_PLACE) == "collectives.IN_PLACE"


def test_agree_passes_equal_signatures_and_names_what_differs() -> None:
    mine = signature("allreduce", 10, "float32", "sum", "ring", {})
    agree(mine, lambda sig: [sig, sig, sig])
    other = signature("allreduce", 11, "float32", "sum", "ring", {"segments": 2})
    with pytest.raises(ArgumentMismatchError, match=r"count differs \(rank 0: 10, rank 1: 11\)"):
        agree(mine, lambda sig: [sig, other])
    with pytest.raises(ArgumentMismatchError, match="params differs"):
        agree(mine, lambda sig: [sig, other])
    with pytest.raises(ArgumentMismatchError) as error:  # 1024 ranks, a few of them odd
        agree(mine, lambda sig: [sig] * 1000 + [other] * 24)
    assert str(error.value).startswith("ranks called the collective with different arguments: "
                                       "count differs (rank 0: 10, rank 1000: 11, rank 1001: 11")
    assert "... (24 ranks differ from rank 0)" in str(error.value)
    assert len(str(error.value)) < 400


def test_check_enabled_reads_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("COLLSIM_CHECK", "1")
    assert check_enabled(None) and not check_enabled(False)
    monkeypatch.setenv("COLLSIM_CHECK", "maybe")
    with pytest.raises(ValueError, match="COLLSIM_CHECK='maybe'"):
        check_enabled(None)


def test_call_key_changes_with_what_the_checks_depend_on() -> None:
    from collectives import calls
    send, recv = np.zeros(4, np.float32), np.zeros(4, np.float32)
    args = ("allreduce", send, recv, None, "sum", "ring", None, None, {})
    base = calls.key(*args)
    assert base is not None and calls.key(*args) == base
    recv.flags.writeable = False
    assert calls.key(*args) != base
    recv.flags.writeable = True
    assert calls.key("allreduce", send, recv.reshape(2, 2), *args[3:]) != base
    assert calls.key("allreduce", IN_PLACE, recv, *args[3:]) != base
    doubling = calls.key(*args[:-1], {"doubling": True})
    assert doubling not in (None, base) and calls.key(*args[:-1], {"doubling": True}) == doubling
    assert calls.key(*args[:-1], {"doubling": 1}) not in (None, doubling)  # checked apart
    assert calls.key(*args[:-1], {"channels": 2, "doubling": True}) not in (None, doubling)
    for uncovered in ({"recvbuf": None}, {"stream": object()}, {"params": {"order": [1, 0]}},
                      {"params": {"order": (1, 0)}}, {"sendbuf": [0.0] * 4}):
        named = dict(zip(("collective", "sendbuf", "recvbuf", "comm", "op", "algorithm",
                          "check", "stream", "params"), args)) | uncovered
        assert calls.key(**named) is None, uncovered


@pytest.mark.parametrize("change", ["release", "use_tuning", "use_predictor", "COLLSIM_ALGO"])
def test_what_a_decision_depends_on_forgets_the_bound_calls(monkeypatch, change) -> None:
    """A new ``auto`` table or predictor forgets the bound calls and ``auto``'s decisions,
    :func:`collectives.release` the bound calls; a variable set while the program runs
    forgets nothing (it counts from the next release on)."""
    from collectives.executors.runtime import RUNTIME
    RUNTIME.calls[("a call",)] = object()
    RUNTIME.decisions[("a decision",)] = ("ring", ())
    if change == "COLLSIM_ALGO":
        monkeypatch.setenv(change, "native")
    elif change == "release":
        collectives.release()
    else:
        getattr(collectives.auto, change)(None)
    assert bool(RUNTIME.calls) == (change == "COLLSIM_ALGO")
    assert bool(RUNTIME.decisions) == (change in ("release", "COLLSIM_ALGO"))
    RUNTIME.calls.clear()
    RUNTIME.decisions.clear()


def test_graph_copies_match_apply_copies_without_allocating() -> None:
    """The copies a captured walk stages through its own area do what ``apply_copies`` does,
    overlapping ranges and a swap included; the area is the busiest step's copies."""
    from collectives.executors.graphs import copies_through, copy_count
    from collectives.executors.plan import Plan, PlanStep, apply_copies
    copies = ((slice(0, 3), slice(2, 5)), (slice(5, 7), slice(0, 2)))
    plan = Plan("allgather", "x", 1, 0, 7, "float64", (),
                (PlanStep((), (), (), copies), PlanStep((), (), (), copies[:1])), 0,
                slice(0, 7), slice(0, 7))
    area = np.full(copy_count(plan), np.nan)
    assert area.size == 5
    want, got = np.arange(7.0), np.arange(7.0)
    apply_copies(want, copies)
    copies_through(area)(got, copies)
    assert got.tolist() == want.tolist() == [5.0, 6.0, 0.0, 1.0, 2.0, 5.0, 6.0]


def test_graphs_flag_and_environment(monkeypatch) -> None:
    from collectives.executors.graphs import GRAPHS_ENV, graphs_enabled
    monkeypatch.delenv(GRAPHS_ENV, raising=False)
    assert graphs_enabled(None) and not graphs_enabled(False)
    monkeypatch.setenv(GRAPHS_ENV, "0")
    assert not graphs_enabled(None) and graphs_enabled(True)
    monkeypatch.setenv(GRAPHS_ENV, "yes")
    with pytest.raises(ValueError, match="COLLSIM_CUDA_GRAPHS='yes' is not allowed"):
        graphs_enabled(None)


@pytest.mark.parametrize("enabled, version, per_gpu", [
    (None, 23004, 1), ("0", 23004, 1), ("1", 22809, 1), ("1", 22999, 1), ("1", 23000, 2),
    ("1", 23004, 2)])
def test_ranks_share_a_gpu_only_where_nccl_has_the_variable(enabled, version, per_gpu) -> None:
    """NCCL_MULTI_RANK_GPU_ENABLE exists from NCCL 2.30 (2.28 refuses a GPU used twice);
    two ranks per GPU at most."""
    from collectives.executors.nccl import MAX_RANKS_PER_GPU, ranks_per_gpu
    assert ranks_per_gpu(enabled, version) == per_gpu <= MAX_RANKS_PER_GPU


def test_bfloat16_reduces_as_a_float_and_nccl_carries_it() -> None:
    from collectives.executors.nccl import NCCL_DTYPES, NCCL_OPS
    from collectives.ops import GPU_DTYPES, check_op_dtype
    assert NCCL_DTYPES["bfloat16"] == "NCCL_BFLOAT16" and NCCL_OPS["avg"] == "NCCL_AVG"
    assert GPU_DTYPES["bfloat16"] == "f"

    class Bfloat16:  # what ml_dtypes' dtype shows the checks: a name and kind "V"
        name, kind = "bfloat16", "V"
    check_op_dtype("max", Bfloat16())
    with pytest.raises(TypeError, match="op 'bxor' is not defined for dtype bfloat16"):
        check_op_dtype("bxor", Bfloat16())
