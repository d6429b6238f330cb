"""Never wrong, never stuck, nothing leaked, under the pip-installed mpirun (10 launches).

* ranks that disagree (op, dtype, count, collective, algorithm) raise on every rank, and
  the communicator then says it is broken while a new one works; so do ranks in MPI's own
  collective that disagree, or beside ranks in a schedule (``auto`` deciding differently);
* a rank that raises or calls ``sys.exit(3)`` in a plain ``mpirun -n 3 python app.py``
  makes the job exit non-zero within seconds;
* ranks that choose different algorithms or parameters raise on every rank, for every pair
  at 2, 3 and 4 ranks; a rank that catches an interrupt inside a call tells the others;
* ``native`` past 2**31 elements runs an AllReduce in parts and refuses larger blocks;
* ``max`` and ``min`` of floats answer alike on every algorithm and ``native`` (NaN, signed
  zeros, infinities);
* 100,000 Dup/collective/Free cycles pass on 2 ranks, ``close`` works, and ``release`` gives the
  workspace's memory back.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from collsim.launch import PLACEMENT, mpirun_env, mpirun_path, run_mpi
from collsim.mpi_runner import read_summary, run_worker

pytestmark = pytest.mark.mpi

WORKERS = Path(__file__).parent / "mpi_workers"

#: what the message of the rank that sees the other call's message names, per case
NAMED = {"op": "op: ", "dtype": "dtype: ", "count": "count or algorithm parameters",
         "collective": "collective: ", "long/count": "count or algorithm parameters",
         "long/dtype": "dtype: ", "long/collective": "collective: ",
         "algorithm": "algorithm: ", "native/op": "op: ", "native/dtype": "dtype: ",
         "native/count": "count", "native/collective": "collective: ",
         "native/schedule": "algorithm: ", "native/schedule/long": "algorithm: ",
         "schedule/native": "algorithm: ", "auto": "algorithm: ", "zero/count": "algorithm: ",
         "zero/native": "count or algorithm parameters"}


def test_mismatched_calls_raise_on_every_rank() -> None:
    result = run_mpi(3, [str(WORKERS / "mismatch.py")], timeout_s=120,
                     env={"COLLSIM_ABORT_ON_ERROR": "0"})
    report = read_summary(result)
    assert report["nranks"] == 3 and report["abort_hooks"] is False
    ranks = report["ranks"]
    for case, named in NAMED.items():
        outcomes = [row[case] for row in ranks]
        assert {o["outcome"] for o in outcomes} == {"ArgumentMismatchError"}, (case, outcomes)
        assert any(named in o["message"] for o in outcomes), (case, outcomes)
        again = {row[f"{case}/again"]["outcome"] for row in ranks}
        assert again == {"CommunicatorBrokenError"}, (case, again)
    checked = [row["checked"] for row in ranks]
    assert all(o["outcome"] == "ArgumentMismatchError" and "algorithm differs" in o["message"]
               for o in checked), checked
    for case in ("native/agreed", "zero/agreed"):
        assert all(row[case]["outcome"] == "returned" for row in ranks), (case, ranks)
    assert all(row["fresh"]["outcome"] == "returned" for row in ranks)


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_ranks_that_choose_different_schedules_raise_on_every_rank(nranks: int) -> None:
    """Every ordered pair of algorithms (and of parameters), every collective, ranks split
    one apart, in halves and alternating: one launch per rank count."""
    report = read_summary(run_mpi(nranks, [str(WORKERS / "divergent.py")], timeout_s=240,
                                  env={"COLLSIM_ABORT_ON_ERROR": "0"}))
    assert report["nranks"] == nranks
    ranks = report["ranks"]
    assert len(ranks[0]) >= 64
    for case in ranks[0]:
        outcomes = [row[case] for row in ranks]
        assert {o["outcome"] for o in outcomes} == {"ArgumentMismatchError"}, (case, outcomes)
        assert max(o["seconds"] for o in outcomes) < 10, (case, outcomes)
        if not case.startswith("params"):  # "<collective> <a>/<b> <pattern>"
            a, b = case.split(" ")[1].split("/")
            assert any(f"algorithm: {a} here, {b} at the sender" in o["message"]
                       or f"algorithm: {b} here, {a} at the sender" in o["message"]
                       for o in outcomes), (case, outcomes)
    named = [row[case]["message"] for row in ranks for case in row if "'channels'" in case]
    assert any("ring channels=2 (float32" in message for message in named), named


def test_an_interrupt_caught_on_one_rank_reaches_the_others() -> None:
    report = read_summary(run_mpi(3, [str(WORKERS / "interrupted.py")], timeout_s=120, env={
        "COLLSIM_ABORT_ON_ERROR": "0", "COLLSIM_MPI_COMPILED": "0"}))
    ranks = report["ranks"]
    assert ranks[1]["outcome"] == "KeyboardInterrupt", ranks
    for rank in (0, 2):
        assert ranks[rank]["outcome"] == "ArgumentMismatchError", ranks
        assert "failed in this or an earlier call" in ranks[rank]["message"], ranks
        assert ranks[rank]["seconds"] < 30, ranks


def test_max_and_min_give_one_answer_with_nan_signed_zeros_and_inf_on_every_algorithm() -> None:
    """Every algorithm, native and auto: a NaN on one rank gives NaN, -0.0 < +0.0."""
    report = run_worker(3, WORKERS / "extremes.py", timeout_s=180)
    for row in report["ranks"]:
        assert row["cases"] >= 60 and row["wrong"] == [], row


def test_native_past_two_to_the_31_elements_runs_in_parts_or_is_refused() -> None:
    report = run_worker(1, WORKERS / "large_count.py", timeout_s=180)
    assert report["allreduce"] == "returned" and report["intact"], report
    for collective in ("reduce_scatter", "allgather"):
        assert report[collective].startswith("ValueError: a block of 2147483656 elements"), report
    assert report["usable"] == "returned", report


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_a_failing_rank_aborts_a_plain_script(how: str, tmp_path: Path) -> None:
    command = [mpirun_path(), *PLACEMENT, "-n", "3", sys.executable,
               str(WORKERS / "rank_fails.py"), how, str(tmp_path)]
    start = time.monotonic()
    result = subprocess.run(command, env=mpirun_env(), capture_output=True, text=True,
                            timeout=90, check=False)
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    finished = sorted(path.name for path in tmp_path.glob("rank*.first"))
    assert finished == ["rank0.first", "rank1.first", "rank2.first"], (finished, result.stdout)
    assert "should never get here" not in result.stdout
    assert elapsed < 60
    if how == "raise":
        assert "rank 1 fails on purpose" in result.stderr


def test_communicators_and_memory_are_given_back() -> None:
    # a cycle is four handshakes (Dup, the private duplicate, the hellos, the call): 6.4
    # ms at a load of 5 on 2 cores (mpi4py's Dup + Allreduce + Free: 0.2 ms): a wide limit
    report = run_worker(2, WORKERS / "resources.py", ["100000"], timeout_s=900)
    assert report["cycles"] == 100000 and report["close_then_reuse"] is True
    memory = report["memory_mib"]
    assert memory["kept"] >= 96
    assert memory["after_call"] - memory["start"] >= 90
    assert abs(memory["after_release"] - memory["start"]) < 8
    assert memory["kept_by_default"] <= 64  # the default bound: the 96 MiB buffer goes
