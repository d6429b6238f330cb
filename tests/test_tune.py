"""``collsim tune``: the sweep, the candidates, the table from measured times, and one real
run launching itself on 2 ranks that writes a tuning file ``auto`` reads and the exports."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from collectives import ALGORITHMS, COMPOSED, auto
from collectives.tuning import load_tuning
from collsim import tune
from simulator.export import read_ompi_rules
from simulator.selection import MAX_BYTES, measured_table

ROOT = Path(__file__).resolve().parents[1]


def test_sweep_sizes_are_whole_elements_per_rank() -> None:
    assert tune.sweep_sizes("allreduce", 8, 64, 2, 3, 4) == [2, 4, 8, 16]
    assert tune.sweep_sizes("reduce_scatter", 8, 100, 4, 3, 4) == [3, 6, 24]
    assert tune.sweep_sizes("allreduce", 1, 1, 2, 2, 8) == [0]


def test_candidates_put_native_first_and_try_segments() -> None:
    tried = tune.candidates("allreduce", ["pipeline", "native"])
    assert tried[0] == ("native", ())
    assert {p for a, p in tried[1:]} == {(("segments", s),) for s in (1, 4, 16, 64)}


def test_measured_table_switches_where_the_lines_cross() -> None:
    tried = [("native", ()), ("ring", ())]
    table = measured_table("allreduce", "test", 4, 4, tried, [0, 100], [[1.0, 2.0], [3.0, 2.0]])
    assert [(r.min_bytes, r.max_bytes, tried[r.index][0]) for r in table.ranges] == [
        (0, 50, "native"), (51, MAX_BYTES, "ring")]  # a tie goes to the first
    with pytest.raises(ValueError, match="strictly increasing"):
        measured_table("allreduce", "test", 4, 4, tried, [8, 8], [[1.0, 2.0]] * 2)


def test_arguments_that_disagree_are_refused_before_launching(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    tune.add_arguments(parser)
    args = parser.parse_args(["--output", str(tmp_path / "t.json"), "-b", "1M", "-e", "1K"])
    with pytest.raises(ValueError, match="-b 1048576 is larger than -e 1024"):
        tune.check_args(args)
    args = parser.parse_args(["--output", str(tmp_path / "no" / "t.json")])
    with pytest.raises(ValueError, match="--output"):
        tune.check_args(args)
    with pytest.raises(SystemExit):
        parser.parse_args(["--output", "t.json", "--dtypes", "datetime64"])


@pytest.mark.mpi
def test_tune_launches_itself_and_writes_what_auto_reads(tmp_path: Path) -> None:
    out, rules = tmp_path / "t.json", tmp_path / "t.rules"
    command = [sys.executable, "-m", "collsim", "tune", "--ranks", "2", "-b", "8", "-e", "4K",
               "-f", "16", "-n", "2", "-w", "1", "--rounds", "1", "--per-call", "--algorithms", "ring",
               "tree", "native", "--output", str(out), "--ompi-rules",
               str(rules)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180,
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("# wrote") == 1  # rank 0 only, under mpirun
    table = load_tuning(out)
    assert table.source.startswith("measured: collsim tune")
    assert {(r.collective, r.nranks, r.dtype_size) for r in table.rules} == {
        (c, 2, 4) for c in ("allreduce", "reduce_scatter", "allgather")}
    assert {r.algorithm for r in table.rules} <= {"ring", "tree", "native"}
    for collective in ("allreduce", "reduce_scatter", "allgather"):
        mine = sorted((r for r in table.rules if r.collective == collective),
                      key=lambda r: r.min_bytes)
        assert mine[0].min_bytes == 0 and mine[-1].max_bytes == MAX_BYTES
        assert all(a.max_bytes + 1 == b.min_bytes for a, b in zip(mine, mine[1:]))
    auto.use_tuning(out)
    try:
        for nbytes in (0, 8, 4096, 1 << 30):
            assert auto.choose("allgather", nbytes, 2, 4) == table.lookup("allgather", 2, 4, nbytes)
    finally:
        auto.use_tuning(None)
    assert set(read_ompi_rules(rules.read_text())) == {0, 2, 13}


RULE = {"collective": "allreduce", "nranks": 4, "dtype_size": 4, "min_bytes": 0,
        "max_bytes": 1023, "algorithm": "tree", "params": {"segments": 2}}

TUNING_FAULTS = [  # (field, value, message after the file's name)
    ("min_bytes", 2048, "rules[0].min_bytes = 2048 is above rules[0].max_bytes = 1023"),
    ("algorithm", "butterfly", "rules[0].algorithm = 'butterfly' is not allowed; it must be one "
                               f"of {', '.join((*ALGORITHMS, *COMPOSED))}, native"),
    ("collective", "alltoall", "rules[0].collective = 'alltoall' is not allowed"),
    ("nranks", 0, "rules[0].nranks=0 is not allowed; it must be an integer >= 1"),
    ("params", {"segments": 0}, "rules[0].params.segments=0 is not allowed"),
    ("params", {"channels": "8"}, "rules[0].params.channels='8' is not allowed"),
    ("params", {"doubling": True}, "rules[0].params.doubling is not a parameter of tree"),
    ("priority", 1, "rules[0] has unknown field 'priority'"),
]


@pytest.mark.parametrize("field, value, message", TUNING_FAULTS,
                         ids=[f"{f}={v}" for f, v, _ in TUNING_FAULTS])
def test_tuning_files_are_checked_field_by_field(tmp_path: Path, field: str, value: object,
                                                 message: str) -> None:
    path = tmp_path / "t.json"
    rule = {**RULE, field: value}
    path.write_text(json.dumps({"format": "collsim-tuning", "version": 1, "rules": [rule]}))
    with pytest.raises(ValueError) as error:
        load_tuning(path)
    assert str(error.value).startswith(f"tuning file {str(path)!r}: {message}")


def test_tuning_files_not_utf8_or_nested_too_deeply_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"format": "collsim-tuning", "source": "caf\xe9", "rules": []}')
    where = re.escape(f"tuning file {str(path)!r}")
    with pytest.raises(ValueError, match=rf"^{where} is not UTF-8 text: byte 0xe9"):
        load_tuning(path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=rf"^{where} is not a tuning file: its JSON is nested "
                                         "too deeply$"):
        load_tuning(path)
