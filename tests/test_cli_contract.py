"""The command line's contracts (issue 17): flag meanings, one-line errors before anything
launches, plain uncut output when piped, progress only on a terminal, honest reports."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import topology
from collsim import args as cli_args
from collsim import calibrate, launch, terminal
from collsim.bench import options, report
from collsim.bench.predict import Model, predict
from collsim.bench.runner import Case, Row, Timing
from collsim.cli import COMMANDS, main
from simulator.export import read_nccl_csv

ROOT = Path(__file__).resolve().parents[1]

#: nccl-tests' flags and the meaning (argparse dest) each has wherever a command takes it
NCCL_TESTS = {"-b": "minbytes", "-e": "maxbytes", "-f": "stepfactor", "-i": "stepbytes",
              "-n": "iters", "-w": "warmup_iters", "-c": "check", "-d": "datatype", "-o": "op",
              "-a": "average", "-z": "blocking", "-C": "report_cputime", "-t": "nthreads",
              "-g": "ngpus"}


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"collsim {command}")
    importlib.import_module(COMMANDS[command][0]).add_arguments(parser)
    return parser


def _flags() -> dict[str, dict[str, set[str]]]:
    """Flag -> {dest: commands that give the flag that meaning}."""
    found: dict[str, dict[str, set[str]]] = {}
    for command in COMMANDS:
        for action in _parser(command)._actions:  # argparse has no public list
            for flag in action.option_strings:
                found.setdefault(flag, {}).setdefault(action.dest, set()).add(command)
    return found


def test_every_flag_has_one_meaning_across_commands() -> None:
    for flag, meanings in _flags().items():
        assert len(meanings) == 1, f"{flag} means {meanings}"


def test_nccl_tests_flags_mean_what_they_mean_there() -> None:
    flags = _flags()
    for flag, dest in NCCL_TESTS.items():
        assert set(flags.get(flag, {dest: ()})) == {dest}, flag
    assert "-p" not in flags  # nccl-tests' parallel_init, not ranks
    for ours in ("--algorithms", "--collective", "--topology", "--ranks"):
        assert ours in flags
    args = _parser("bench").parse_args(["-t", "1", "-g", "1", "-a", "1", "-z", "1", "-C", "1",
                                        "-i", "1K", "-d", "all", "-o", "all"])
    assert (args.nthreads, args.ngpus, args.average, args.blocking, args.report_cputime,
            args.stepbytes, args.datatype, args.op) == (1, 1, 1, 1, 1, 1024, "all", "all")
    assert options.datatypes(args)[-1] == "float64" and options.ops(args) == sorted(
        ["sum", "prod", "max", "min"])


def test_readme_table_lists_every_flag_of_every_command() -> None:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| flag | "):]
    table = table[:table.index("\n\n")]
    listed = {flag for cell in re.findall(r"^\| `([^`]+)`", table, re.MULTILINE)
              for flag in cell.split("/")}
    missing = {flag for flag in _flags() if flag not in listed and flag not in ("-h", "--help")}
    assert not missing, f"the README's flag table lacks {sorted(missing)}"
    assert listed <= set(_flags()), f"no command takes {sorted(listed - set(_flags()))}"


BAD = [
    (["bench", "-t", "2"], "-t 2 is not allowed"),
    (["bench", "-g", "4"], "-g 4 is not allowed"),
    (["bench", "--algorithms", "ring", "tree", "ring"], "'ring' is given twice"),
    (["bench", "-d", "bfloat16"], "-d bfloat16 is not allowed with --buffer numpy"),
    (["bench", "-f", "4", "-i", "1K"], "-f 4 and -i 1024 are both given"),
    (["bench", "-i", "0"], "-i 0 is not allowed"),
    (["bench", "-o", "avg"], "argument -o/--op: invalid choice: 'avg'"),
    (["bench", "--topology", "flat", "--nodes", "2"], "--nodes 2 is not allowed with --topology flat"),
    (["bench", "--topology", "dgx-h100", "--ranks", "9"], "dgx_h100(1) places 8 ranks"),
    (["bench", "--json", "/no/such/folder/b.json"], "folder '/no/such/folder' does not exist"),
    (["bench", "-d", "all", "--plot", "b.png"], "a plot draws one datatype and op"),
    (["simulate", "-d", "all"], "-d all is not allowed here"),
    (["simulate", "--topology", "dgx-h100", "--alpha", "1e-6"], "--alpha 1e-06 is not allowed"),
    (["simulate", "--topology", "flat", "--nodes", "2"], "--nodes 2 is not allowed"),
    (["simulate", "--topology", "dgx-a100", "--ranks", "12"], "--ranks 12 is not allowed"),
    (["simulate", "-d", "float", "-b", "1", "-e", "3"], "no size holds one 4-byte element"),
    (["select", "--topology", "pcie", "--beta", "1e-9"], "only flat and mesh take it"),
    (["select", "--nccl-csv", "/no/such/folder/t.csv"], "--nccl-csv"),
    (["select", "allreduce", "allreduce"], "'allreduce' is given twice"),
    (["calibrate", "--ranks", "1"], "--ranks 1 is not allowed; it must be >= 2"),
    (["calibrate", "--output", "/no/such/folder/m.toml"], "--output"),
    (["schedule", "--ranks", "0"], "--ranks 0 is not allowed"),
    (["schedule", "--count", "-1"], "--count -1 is not allowed"),
    (["simulate", "-t", "flat"], "-t is not a flag of collsim simulate; did you mean --topology"),
    (["calibrate", "-n", "4", "-o", "m.toml"], "-o is not a flag of collsim calibrate"),
]


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_arguments_are_one_line_with_status_2_before_anything_runs(
        argv: list[str], message: str, capsys, monkeypatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("mpirun was launched")

    monkeypatch.setattr(launch, "run_mpi", refuse)
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.startswith(f"collsim {argv[0]}: error: ") and message in captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""


def test_bad_arguments_from_a_shell_exit_2_without_traceback() -> None:
    result = subprocess.run([sys.executable, "-m", "collsim", "bench", "--buffer", "cupy",
                             "--transport", "nccl", "-t", "2"], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("collsim bench: error: -t 2 is not allowed; it must be 1 (one "
                             "thread drives each rank); launch more ranks with --ranks\n")


def test_piped_tables_have_no_escape_codes_and_whole_numbers() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "40"}
    env.pop(terminal.TTY_ENV, None)
    result = subprocess.run([sys.executable, "-m", "collsim", "select", "--topology", "flat",
                             "--ranks", "6", "--method", "closed_form"], capture_output=True,
                            text=True, timeout=120, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "…" not in result.stdout
    assert result.stderr == ""  # no progress when stderr is not a terminal
    sizes = {int(line.split("│")[1]) for line in result.stdout.splitlines()
             if line.startswith("│")}
    assert {4, 100663296, 6442450944, 8589934592} <= sizes and min(sizes) == 4  # none below one float


def test_progress_shows_on_a_terminal_stderr_only() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), terminal.TTY_ENV: "stderr"}
    result = subprocess.run([sys.executable, "-m", "collsim", "simulate", "--topology", "flat",
                             "--ranks", "4", "-b", "1K", "-e", "1M"], capture_output=True,
                            text=True, timeout=120, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "simulate" in result.stderr and "\x1b" in result.stderr
    assert "\x1b" not in result.stdout


def test_terminal_detection(monkeypatch) -> None:
    monkeypatch.setenv(terminal.TTY_ENV, "stderr")
    assert terminal.is_terminal("stderr") and not terminal.is_terminal("stdout")
    monkeypatch.delenv(terminal.TTY_ENV)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")  # a rank: Open MPI's pty is no terminal
    assert not terminal.is_terminal("stdout")
    assert terminal.terminal_env() == {terminal.TTY_ENV: ""}
    assert not terminal.console().is_terminal


def test_sweep_by_factor_or_increment() -> None:
    args = _parser("bench").parse_args(["-b", "8", "-e", "40", "-i", "16"])
    assert cli_args.sweep(args) == [8, 24, 40]
    assert options.sizes(8, 40, 2, "allreduce", 4, "float32", stepbytes=16) == \
        [(8, 2), (24, 6), (40, 10)]
    assert cli_args.sweep(_parser("simulate").parse_args(["-b", "1K", "-e", "64K"])) == \
        [1024, 8192, 65536]


def test_simulate_and_select_take_the_same_machine_options() -> None:
    simulate_flags = {a.dest for a in _parser("simulate")._actions}
    select_flags = {a.dest for a in _parser("select")._actions}
    machine = {"topology", "ranks", "nodes", "alpha", "beta", "datatype", "minbytes",
               "maxbytes"}
    assert machine <= simulate_flags and machine <= select_flags
    args = _parser("simulate").parse_args(["--topology", "dgx-h100", "--nodes", "2",
                                           "--ranks", "12"])
    assert cli_args.machine(args).nranks == 16
    flat = cli_args.machine(_parser("select").parse_args(
        ["--topology", "flat", "--ranks", "3", "--alpha", "1e-6", "--beta", "1e-9"]))
    assert flat.nranks == 3 and flat.alpha(0, 1) == 1e-6


def test_select_keeps_crossovers_and_exports_within_what_was_asked(capsys,
                                                                   tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    # the mesh: a rank sends to many peers at once, so the tree overtakes the ring
    assert main(["select", "--topology", "mesh", "--ranks", "6", "--method", "closed_form",
                 "-b", "64K", "-e", "1M", "-d", "double", "--nccl-csv", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "ring -> tree" in out and "rhd -> ring" not in out  # that one is at 43642 B
    assert all(row["max_bytes"] >= 8 for row in read_nccl_csv(csv.read_text()))


def _doc() -> dict:
    case = Case("allreduce", "float32", "sum", 5, 1, True)
    rows = [Row(name, size, size // 4, Timing(t, 0), Timing(t, 0))
            for size in (64, 1 << 20) for name, t in (("ring", 3e-5), ("tree", 2e-5))]
    machine = Model(topology.flat(4, 1e-6, 1e-10))
    guesses = predict("allreduce", [(64, 16), (1 << 20, 1 << 18)], 4, "float32", machine,
                      ["ring", "tree", "native"])
    return report.document(case, 4, "mpi", "numpy", rows, {}, machine.name, guesses)


def test_bench_predicts_among_the_schedules_that_ran_and_labels_its_columns() -> None:
    doc = _doc()
    assert {entry["best"] for entry in doc["predicted"]} <= {"ring", "tree"}
    assert all(set(entry["time_us"]) == {"ring", "tree"} for entry in doc["predicted"])
    machine = Model(topology.flat(4, 1e-6, 1e-10))
    assert predict("allreduce", [(64, 16)], 4, "float32", machine, ["native", "auto"]) == []
    text = report.best_table(doc)
    assert "measured on this job; predicted on flat(4) among the schedules run (ring tree)" \
        in text
    assert "measured   predicted    measured   predicted" in text
    first = text.splitlines()[3].split()
    predicted = doc["predicted"][0]
    assert float(first[5]) == pytest.approx(predicted["time_us"][predicted["best"]], rel=1e-3)


def test_calibrate_warns_on_a_poor_fit_and_writes_every_figure_with_its_unit() -> None:
    sizes = [8, 4096, 65536]
    measured = {(0, 1): [1e-6, 20e-6, 30e-6]}  # not a line: the fit misses by far
    machine, text = calibrate._model("c", ["h", "h"], sizes, measured, "pair",
                                     [(3.123456e-11, 0.01), (3.2e-11, 0.02)], np)
    assert "warning: poor fit" in text and "pair 0-1" in text
    written = topology.dumps(machine)
    values = re.findall(r"\b(?:latency|bandwidth|gamma) = ([^,\n]+)", written)
    # two ports and the link between them, both ways, and gamma
    assert len(values) == 13 and all(v.startswith('"') for v in values), written
    good = {(0, 1): [1e-6 + n * 1e-10 for n in sizes]}
    assert "warning" not in calibrate._model("c", ["h", "h"], sizes, good, "pair",
                                             [(3e-11, 0.01)], np)[1]
