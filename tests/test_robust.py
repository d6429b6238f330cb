"""The pieces of the default mismatch check, the workspace bound and the abort hooks,
without MPI (tests/test_robust_mpi.py runs them under mpirun)."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import collectives
from collectives.executors import abort
from collectives.executors.buffers import WORKSPACE_ENV, workspace, workspace_bytes
from collectives.executors.guard import SEQUENCE_BITS, Guard, TagCodec, signed_plan
from collectives.executors.plan import get_plan

TAG_UB = 2**31 - 1


def test_tags_name_the_fields_that_differ():
    codec = TagCodec(TAG_UB)
    mine = codec.base("allreduce", 100, "float32", "sum", "ring", ())
    theirs = codec.base("allreduce", 100, "int32", "max", "tree", ())
    assert codec.differences(mine, theirs) == [
        "op: sum here, max at the sender", "dtype: float32 here, int32 at the sender",
        "algorithm: ring here, tree at the sender"]
    assert codec.differences(mine, codec.base("allreduce", 101, "float32", "sum", "ring", ())) \
        == ["count or algorithm parameters"]
    assert codec.differences(mine, mine) == []


@pytest.mark.parametrize("tag_ub", [32767, 65535, 100000, TAG_UB])
def test_tags_stay_below_tag_ub_and_never_reach_the_poison_tag(tag_ub):
    codec = TagCodec(tag_ub)
    seq = (1 << SEQUENCE_BITS) - 1
    for count in range(300):
        base = codec.base("reduce_scatter", count, "float64", "min", "pipeline", (("s", 3),))
        assert base | seq <= tag_ub and base | seq != codec.poison
    assert codec.poison <= tag_ub


def test_tag_ub_below_the_mpi_minimum_is_refused():
    with pytest.raises(ValueError, match="tag_ub=1000 is not allowed; MPI guarantees >= 32767"):
        TagCodec(1000)


def test_first_receive_from_each_peer_is_probed_and_the_note_goes_to_every_rank():
    plan = get_plan("allreduce", "ring", 4, 1, 1000, np.dtype("float32"), {})
    signed = signed_plan(plan, "sum", TagCodec(TAG_UB))
    assert [s.first for s in signed.steps] == [1] + [0] * (len(plan.steps) - 1)
    comm = SimpleNamespace(Get_rank=lambda: 1, Get_size=lambda: 4)
    assert Guard(SimpleNamespace(Status=lambda: None), comm, TAG_UB).others == (0, 2, 3)
    rhd = signed_plan(get_plan("allreduce", "rhd", 4, 0, 1000, np.dtype("float32"), {}),
                      "sum", TagCodec(TAG_UB))
    assert sum(s.first for s in rhd.steps) == 2  # peers 1 and 2, each first met once


def test_each_step_receives_first_from_new_peers_keeping_each_peers_order():
    for algorithm, params in (("ring", {"channels": 3}), ("tree", {}), ("rhd", {}),
                              ("hier", {"ranks_per_node": 2})):
        for rank in range(6):
            plan = get_plan("allreduce", algorithm, 6, rank, 1000, np.dtype("float32"), params)
            heard: set[int] = set()
            for step in plan.steps:
                peers = [peer for _, _, peer, _ in step.recvs]
                new = [peer for peer in dict.fromkeys(peers) if peer not in heard]
                assert peers[:step.first] == new, (algorithm, rank, peers)
                for peer in set(peers):  # each peer's receives in tag order
                    tags = [tag for _, _, p, tag in step.recvs if p == peer]
                    assert tags == sorted(tags), (algorithm, rank, step)
                heard |= set(peers)


def test_workspace_is_bounded_and_released(monkeypatch):
    collectives.release()
    monkeypatch.setenv(WORKSPACE_ENV, "1000")
    workspace(np, np.dtype("float32"), 100, "a")        # 400 B: kept
    workspace(np, np.dtype("float32"), 100, "b")        # 800 B in all: kept
    assert workspace_bytes() == 800
    workspace(np, np.dtype("float32"), 200, "c")        # would make 1600 B: the others go
    assert workspace_bytes() == 800
    big = workspace(np, np.dtype("float32"), 300, "d")  # 1200 B alone: not kept
    assert big.size == 300 and workspace_bytes() == 800
    collectives.release()
    assert collectives.workspace_bytes() == 0


def test_a_bad_workspace_bound_names_the_variable(monkeypatch):
    monkeypatch.setenv(WORKSPACE_ENV, "64M")
    with pytest.raises(ValueError, match="COLLSIM_WORKSPACE_BYTES='64M' is not allowed"):
        workspace(np, np.dtype("float32"), 10**6, "e")


def test_abort_hooks_install_and_opt_out(monkeypatch):
    hook, exit_ = sys.excepthook, sys.exit
    try:
        abort.install()
        assert abort.installed() and sys.excepthook is not hook and sys.exit is not exit_
        collectives.abort_on_error(False)
        assert not abort.installed() and sys.excepthook is hook and sys.exit is exit_
        abort.install()
        assert not abort.installed()  # opted out stays out
    finally:
        abort.abort_on_error(True)
        abort.abort_on_error(False)
        abort._state["wanted"] = None
    monkeypatch.setenv(abort.ABORT_ENV, "0")
    abort.install()
    assert not abort.installed()
    monkeypatch.setenv(abort.ABORT_ENV, "maybe")
    with pytest.raises(ValueError, match="COLLSIM_ABORT_ON_ERROR='maybe' is not allowed"):
        abort.install()


@pytest.mark.parametrize("algorithm, params, named", [
    ("ring", {"channels": 10**9}, r"channels=1000000000 is not allowed; .*\[1, 256\]"),
    ("pipeline", {"segments": 10**9}, r"segments=1000000000 is not allowed; .*\[1, 1024\]"),
    ("tree", {"segments": 1025}, r"segments=1025 is not allowed"),
])
def test_size_parameters_beyond_their_bound_are_refused_up_front(algorithm, params, named):
    with pytest.raises(ValueError, match=named):
        collectives.build_schedule("allreduce", algorithm, 3, 100, **params)
    from collectives.build import MAX_SEGMENTS as big
    assert collectives.build_schedule("allreduce", "pipeline", 2, big, segments=big).params


def test_a_tuning_file_with_a_parameter_beyond_its_bound_is_refused(tmp_path):
    from collectives.tuning import FORMAT, load_tuning
    rule = {"collective": "allreduce", "nranks": 4, "min_bytes": 0, "max_bytes": 64,
            "algorithm": "ring", "params": {"channels": 10**9}}
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "rules": [rule]}))
    with pytest.raises(ValueError, match=r"params\.channels=1000000000 is not allowed"):
        load_tuning(path)


def test_simulate_and_select_refuse_what_they_cannot_finish():
    import topology
    from simulator import select, simulate
    from simulator.engine import MAX_SIMULATED_RANKS
    from simulator.selection import MAX_SELECTED_RANKS
    with pytest.raises(ValueError, match=f"at most {MAX_SELECTED_RANKS} ranks"):
        select("allreduce", 8, topology.flat(MAX_SELECTED_RANKS + 1, 1e-6, 1e-9))
    huge = collectives.build_schedule("allreduce", "ring", MAX_SIMULATED_RANKS + 1, 8)
    with pytest.raises(ValueError, match=r"schedule.nranks=4097 is not allowed"):
        simulate(huge, topology.flat(MAX_SIMULATED_RANKS + 1, 1e-6, 1e-9))
    small = collectives.build_schedule("allreduce", "ring", 3, 8)
    with pytest.raises(TypeError, match="topology=None is not allowed"):
        simulate(small, None)


def test_simulate_verifies_what_it_plays_unless_told_not_to():
    import topology
    from collectives.errors import ScheduleError
    from collectives.schedule import Recv, Schedule, Send, Step
    from simulator import simulate
    two_into_one = Schedule.from_steps("allreduce", "hand", 8, [
        [Step((Send(2, 0, 4),))], [Step((Send(2, 0, 4),))],
        [Step((Recv(0, 0, 4, True), Recv(1, 0, 4, True)))]])
    machine = topology.flat(3, 1e-6, 1e-9)
    with pytest.raises(ScheduleError, match="write overlapping ranges"):
        simulate(two_into_one, machine)
    assert simulate(two_into_one, machine, verify=False).time_s > 0


def test_a_cupy_like_buffer_without_cupy_is_a_clear_error():
    try:
        import cupy  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("CuPy is installed here")
    fake = type("ndarray", (), {"__module__": "cupy._core.core"})()
    with pytest.raises(TypeError, match=r"sendbuf is a cupy\._core\.core\.ndarray but CuPy "
                                        r"cannot be imported"):
        collectives.executors.buffers.array_module("sendbuf", fake)


def test_channel_bounds_from_the_environment_are_bounded_too():
    from collectives.nchannels import channel_bounds
    with pytest.raises(ValueError, match=r"COLLSIM_MIN_NCHANNELS='100000' is not allowed; "
                                         r"it must be an integer in \[1, 256\]"):
        channel_bounds({"COLLSIM_MIN_NCHANNELS": "100000"})
