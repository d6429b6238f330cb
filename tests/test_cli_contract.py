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
    (["bench", "-t", "2"], "argument -t/--nthreads: 2 is not allowed; it must be 1"),
    (["bench", "-g", "4"], "argument -g/--ngpus: 4 is not allowed"),
    (["bench", "--algorithms", "ring", "tree", "ring"], "'ring' is given twice"),
    (["bench", "-d", "bfloat16"], "-d bfloat16 is not allowed with --buffer numpy"),
    (["bench", "-f", "4", "-i", "1K"], "-f 4 and -i 1024 are both given"),
    (["bench", "-i", "0"], "argument -i/--stepbytes: 0 is not allowed"),
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
    (["calibrate", "--ranks", "1"], "argument --ranks: 1 is not allowed; it must be an integer "
                                   "from 2 to"),
    (["calibrate", "--output", "/no/such/folder/m.toml"], "--output"),
    (["schedule", "--ranks", "0"], "argument --ranks: 0 is not allowed"),
    (["schedule", "--count", "-1"], "argument --count: -1 is not allowed"),
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
    assert result.stderr == ("collsim bench: error: argument -t/--nthreads: 2 is not allowed; it "
                             "must be 1 (one thread drives each rank; launch more ranks with "
                             "--ranks)\n")


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
    assert read_nccl_csv(csv.read_text()) == []  # flat: no NCCL model, comments only


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


def _run_refused(argv: list[str], capsys, monkeypatch) -> str:
    """Run ``collsim argv`` where launching mpirun fails the test; return its stderr after
    checking it is refused: status 2, one line ``collsim CMD: error: ...``, nothing on
    stdout."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"mpirun was launched for {argv}")

    monkeypatch.setattr(launch, "run_mpi", refuse)
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    captured = capsys.readouterr()
    assert status == 2, (argv, captured.err[-500:])
    assert captured.err.startswith(f"collsim {argv[0]}: error: "), (argv, captured.err[-500:])
    assert captured.err.count("\n") == 1 and captured.out == "", (argv, captured.err[-500:])
    return captured.err


HUGE = [  # issue 30, finding 3: each refused at once, naming the flag and the bound
    (["bench", "--ranks", "100000"], "argument --ranks: 100000 is not allowed; it must be an "
                                     "integer from 1 to"),
    (["calibrate", "--ranks", "100000"], "argument --ranks: 100000 is not allowed"),
    (["predict", "--ranks", "100000"], "argument --ranks: 100000 is not allowed"),
    (["tune", "--ranks", "100000", "--output", "t.json"], "argument --ranks: 100000 is not"),
    (["simulate", "--topology", "flat", "--ranks", "100000"],
     "argument --ranks: 100000 is not allowed; it must be an integer from 1 to 4096"),
    (["select", "--topology", "flat", "--ranks", "100000"], "argument --ranks: 100000 is not"),
    (["select", "--topology", "dgx-h100", "--nodes", "4096"],
     "argument --nodes: 4096 is not allowed; it must be an integer from 1 to 2048"),
    (["schedule", "--ranks", "100000"], "argument --ranks: 100000 is not allowed"),
    (["simulate", "--topology", "dgx-h100", "--nodes", "100000"],
     "argument --nodes: 100000 is not allowed; it must be an integer from 1 to 512"),
    (["simulate", "-e", "9223372036854775807"], "argument -e/--maxbytes: 9223372036854775807 "
                                                "is not allowed; it must be a size in bytes"),
    (["bench", "-b", "9223372036854775807"], "argument -b/--minbytes: 9223372036854775807"),
    (["tune", "-e", "9223372036854775807", "--output", "t.json"], "argument -e/--maxbytes"),
    (["bench", "-e", "1T"], "-e 1099511627776 is not allowed with 4 ranks: they would hold"),
    (["bench", "-i", "1", "-e", "1G"], "-i 1 is not allowed with -b 8 -e 1073741824: it makes "
                                       "1073741817 sizes, and a sweep has at most 4096"),
    (["schedule", "--count", str(1 << 60)], "argument --count: 1152921504606846976 is not"),
    (["calibrate", "--sizes", "8", str(1 << 50)], "argument --sizes: 1125899906842624 is not"),
    (["bench", "-n", str(10**12)], "argument -n/--iters: 1000000000000 is not allowed"),
]


@pytest.mark.parametrize("argv, message", HUGE, ids=[" ".join(a) for a, _ in HUGE])
def test_huge_parameters_are_refused_before_any_work(argv: list[str], message: str, capsys,
                                                     monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert message in _run_refused(argv, capsys, monkeypatch)


def test_late_checks_and_tracebacks_of_issue_30_are_one_line_before_any_work(
        capsys, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nested.toml").write_text("placement = " + "[" * 5000 + "]" * 5000 + "\n")
    cases = [
        (["tune", "--output", str(tmp_path)], f"--output '{tmp_path}' is not allowed: it is a "
                                              "folder; name a file"),
        (["tune", "--output", "/nonexistent/d/x.json"], "folder '/nonexistent/d' does not exist"),
        (["select", "-e", "64K", "--nccl-csv", "/nonexistent/x.csv"], "--nccl-csv"),
        (["tune", "--output", "t.json", "-b", "1M", "-e", "1K"],
         "-b 1048576 is larger than -e 1024"),
        (["select", "--algorithms", "hier", "--topology", "flat", "--ranks", "3"],
         "--algorithms hier is not allowed here: "),
        (["simulate", "--topology", "nested.toml"], "nested too deeply"),
        (["calibrate", "--name", ""], "--name '' is not allowed: name = '' is not allowed"),
    ]
    if Path("/proc").is_dir():  # a folder even root cannot write in
        cases.append((["select", "--tuning-out", "/proc/collsim.json"],
                      "--tuning-out '/proc/collsim.json' is not allowed: it cannot be written"))
    for command in (["bench"], ["calibrate"], ["predict"], ["tune", "--output", "t.json"]):
        cases.append(([*command, "--timeout", "0"], "argument --timeout: 0 is not allowed; it "
                                                    "must be a number of seconds above 0"))
    for argv, message in cases:
        assert message in _run_refused(argv, capsys, monkeypatch), argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nested.toml"]  # no file left


#: what a command needs besides the flag being tried (which comes last, and so wins)
_NEEDS = {"tune": ["--output", "t.json"]}


def _bad_values(action: argparse.Action, folder: Path) -> list[list[str]]:
    """Values ``action`` must refuse, each as the tokens after the flag, chosen from how
    it is declared: its bounds, its choices, a file to write, a name."""
    kind = action.type
    if action.nargs == 0 or action.dest == "help":
        return []
    bad: list[list[str]] = [] if action.nargs not in ("+",) else [[]]
    if isinstance(kind, cli_args.Bounded):
        is_int = kind.parse is not float
        below = kind.minimum if kind.above else kind.minimum - (1 if is_int else 1e-9)
        above = kind.maximum + 1 if is_int else kind.maximum * 2
        bad += [[str(below)], [str(above)], ["x"], [""], ["1.5" if is_int else "nan"],
                [str(10**30)]] + ([] if is_int else [["inf"], ["-inf"]])
    elif action.choices is not None:
        bad += [["bogus"]]
    elif kind is Path:
        bad += [[str(folder)], ["/nonexistent/d/x"], [""]]
        if Path("/proc").is_dir():
            bad.append(["/proc/collsim-x"])
    elif kind is None:  # a name: a topology, a collective, a machine name
        bad += [[""], [str(folder)]] if action.dest == "topology" else [[""]]
    else:
        assert kind not in (int, float), \
            f"{action.option_strings} takes a number without stated bounds; declare them " \
            "with collsim.args.whole, size or seconds"
        bad += [["bogus"]]
    return bad


def _names(action: argparse.Action) -> list[str]:
    """How an error may name ``action``: its flags, or a positional's name."""
    return action.option_strings or [(action.metavar or action.dest).lower().rstrip("s")]


def test_every_flag_of_every_command_refuses_bad_values_in_one_line(capsys, monkeypatch,
                                                                    tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    tried = 0
    for command in COMMANDS:
        for action in _parser(command)._actions:  # argparse has no public list
            for value in _bad_values(action, tmp_path):
                if action.option_strings:
                    flag = action.option_strings[-1]
                    given = [f"{flag}={value[0]}"] if len(value) == 1 else [flag, *value]
                else:
                    given = value
                argv = [command, *given, *_NEEDS.get(command, [])] if not \
                    action.option_strings else [command, *_NEEDS.get(command, []), *given]
                err = _run_refused(argv, capsys, monkeypatch)
                assert any(name in err.lower() for name in _names(action)), (argv, err)
                tried += 1
    assert tried > 300, tried
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output file was left
