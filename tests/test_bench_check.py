"""collsim.bench without MPI: exact expected results, #wrong counting, sizes, flags,
tables, CSV and the plot, on documents made by the real report code."""

from __future__ import annotations

import argparse
import csv
from functools import reduce
from pathlib import Path

import numpy as np
import pytest

from collsim.bench import check, options, report
from collsim.launch import forwarded_arguments
from collsim.bench.plot import crossovers, plot_busbw
from collsim.bench.runner import Case, Row, Timing
from collectives.ops import DTYPES, OPS

UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _reduce_inputs(collective: str, nranks: int, count: int, dtype: str, op: str) -> list:
    """Every rank's input reduced element by element in the dtype itself (wrapping)."""
    inputs = [check.rank_input(collective, r, nranks, count, dtype, op) for r in range(nranks)]
    return reduce(UFUNCS[op], inputs)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("nranks", [1, 2, 3, 5, 6, 13, 40])
def test_expected_allreduce_is_the_reduction_of_the_inputs(op: str, nranks: int) -> None:
    for dtype in DTYPES:
        got = _reduce_inputs("allreduce", nranks, 257, dtype, op)
        assert check.count_wrong(got, check.expected("allreduce", 0, nranks, 257, dtype, op)) == 0


@pytest.mark.parametrize("nranks", [1, 4, 7])
def test_expected_reduce_scatter_and_allgather_blocks(nranks: int) -> None:
    count = 33
    whole = _reduce_inputs("reduce_scatter", nranks, count, "int32", "max")
    gathered = np.concatenate([check.rank_input("allgather", r, nranks, count, "int8")
                               for r in range(nranks)])
    for rank in range(nranks):
        block = whole[rank * count:(rank + 1) * count]
        assert check.count_wrong(block, check.expected("reduce_scatter", rank, nranks, count,
                                                       "int32", "max")) == 0
        assert check.count_wrong(gathered, check.expected("allgather", rank, nranks, count,
                                                          "int8")) == 0


def test_inputs_differ_between_ranks_and_positions() -> None:
    a, b = (check.rank_input("allreduce", r, 4, 1000, "float32") for r in (0, 1))
    assert np.count_nonzero(a != b) == a.size  # a rank's data is never another's
    assert len(np.unique(a)) == check.MODULUS
    assert np.count_nonzero(a[:-1] != a[1:]) > a.size // 2  # shifted blocks are caught


def test_a_corrupted_result_is_counted_exactly() -> None:
    want = check.expected("allreduce", 0, 4, 1000, "float32", "sum")
    bad = want.copy()
    bad[[0, 17, 999]] += 1
    bad[500] = np.nan
    assert check.count_wrong(bad, want) == 4
    shifted = np.roll(want, 1)
    assert check.count_wrong(shifted, want) == np.count_nonzero(shifted != want) > 0
    with pytest.raises(ValueError, match="999 elements but 1000"):
        check.count_wrong(want[:999], want)


def test_sizes_follow_nccl_tests() -> None:
    rows = options.sizes(8, 1 << 20, 4, "reduce_scatter", 3, "float64")
    asked = [8 * 4**k for k in range(10)]  # 8 B .. 2 MiB by 4, cut at -e 1 MiB
    assert [size for size, _ in rows] == [s - s % 24 for s in asked if s <= 1 << 20]
    assert all(size == count * 3 * 8 for size, count in rows)
    assert options.parse_size("16M") == 16 << 20
    with pytest.raises(argparse.ArgumentTypeError, match="'12Q'"):
        options.parse_size("12Q")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    options.add_arguments(parser)
    return parser.parse_args(argv)


def test_flags_take_nccl_tests_names_and_round_trip_to_launched_ranks() -> None:
    args = _parse(["--collective", "all_gather", "-d", "half", "-b", "1K", "-e", "1M",
                   "--algorithms", "ring", "native", "-c", "0", "--ranks", "3"])
    assert (args.collective, args.datatype, args.minbytes, args.check) == \
        ("allgather", "float16", 1024, 0)
    again = _parse(forwarded_arguments(args, options.add_arguments))
    assert vars(again) == vars(args)


@pytest.mark.parametrize("argv, message", [
    (["-f", "1"], "-f/--stepfactor: 1 is not allowed"), (["-n", "0"], "-n/--iters: 0 is not"),
    (["-b", "2K", "-e", "1K"], "-b 2048"), (["--transport", "nccl"], "--buffer cupy"),
    (["--collective", "allgather", "-o", "max"], "-o max"),
    (["--topology", "no-such-machine"], "'no-such-machine'")])
def test_bad_flags_name_the_flag(argv: list[str], message: str, capsys) -> None:
    try:
        options.check_args(_parse(argv))
    except ValueError as error:
        text = str(error)
    except SystemExit:  # a number out of its bounds: refused as it is parsed
        text = capsys.readouterr().err
    else:
        raise AssertionError(f"{argv} was accepted")
    assert message in text


def _doc(predicted: bool) -> dict:
    case = Case("allreduce", "float32", "sum", 5, 1, True)
    rows = [Row(name, size, size // 4, Timing(time, 0), Timing(time * 1.1, 1 if bad else 0))
            for size, times in ((64, {"ring": 3e-5, "rhd": 1e-5}), (1 << 20, {"ring": 1e-3,
                                                                             "rhd": 2e-3}))
            for (name, time), bad in zip(times.items(), (False, size == 64))]
    guesses = [{"size_B": size, "best": best, "time_us": {"ring": 20.0, "rhd": 10.0}}
               for size, best in ((64, "rhd"), (1 << 20, "rhd"))] if predicted else None
    return report.document(case, 4, "mpi", "numpy", rows, {}, "flat" if predicted else None,
                           guesses)


def test_table_has_nccl_tests_columns_and_footer() -> None:
    doc = _doc(predicted=True)
    text = report.table(doc, "rhd")
    lines = text.splitlines()
    assert "time   algbw   busbw #wrong" in lines[3]
    data = [line.split() for line in lines if not line.startswith("#")]
    assert [row[:5] for row in data] == [["64", "16", "float", "sum", "-1"],
                                         ["1048576", "262144", "float", "sum", "-1"]]
    busbw = 1048576 / 2e-3 * 2 * 3 / 4 / 1e9  # nccl-tests: algbw * 2 (n-1) / n
    assert float(data[1][7]) == pytest.approx(busbw, abs=0.005)
    assert "# Out of bounds values : 1 FAILED" in text and doc["out_of_bounds"] == 1
    best = report.best_table(doc)
    assert "(native left out) at 1 of 2 sizes" in best
    assert "predicted" not in report.best_table(_doc(predicted=False))


def test_csv_json_and_plot(tmp_path: Path) -> None:
    doc = _doc(predicted=True)
    assert report.load_json(report.write_json(doc, tmp_path / "b.json")) == doc
    with report.write_csv(doc, tmp_path / "b.csv").open() as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == len(doc["rows"]) and lines[0]["predicted_best"] == "rhd"
    assert float(lines[0]["oop_time_us"]) == doc["rows"][0]["out_of_place"]["time_us"]
    png = plot_busbw(doc, tmp_path / "b.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_crossovers() -> None:
    assert crossovers([1, 2, 4, 8], ["a", "b", "b", "a"]) == [(2, "a", "b"), (8, "b", "a")]
    with pytest.raises(ValueError, match="sizes has 1"):
        crossovers([1], [])


@pytest.mark.parametrize("nranks", [1, 2, 3, 5])
@pytest.mark.parametrize("collective, algorithm", [("broadcast", "scatter_allgather"),
                                                   ("reduce", "rabenseifner"),
                                                   ("alltoall", "bruck_alltoall")])
def test_expected_broadcast_reduce_alltoall_is_what_the_schedule_computes(
        collective: str, algorithm: str, nranks: int) -> None:
    """The benchmark's inputs through the interpreter give exactly :func:`check.expected`
    (for every op of Reduce), from every root."""
    from collectives import build_schedule, interpret
    from collectives.layout import input_range

    count = 11
    for root in sorted({0, nranks - 1}):
        for op in sorted(OPS) if collective == "reduce" else ["sum"]:
            params = {} if collective == "alltoall" else {"root": root}
            schedule = build_schedule(collective, algorithm, nranks, count, **params)
            inputs = [check.rank_input(collective, r, nranks, count, "int32", op, root)
                      for r in range(nranks)]
            inputs = [x[slice(*input_range(collective, count, nranks, r, params))]
                      for r, x in enumerate(inputs)]
            for rank, out in enumerate(interpret(schedule, inputs, op)):
                want = check.expected(collective, rank, nranks, count, "int32", op, root)
                assert check.count_wrong(out, want) == 0 and out.size == want.size


def test_broadcast_reduce_alltoall_flags() -> None:
    args = _parse(["--collective", "broadcast", "-r", "2", "--ranks", "3"])
    options.check_args(args)
    assert args.algorithms == ["chain", "binomial", "scatter_allgather", "native", "auto"]
    assert options.ops(args) == ["sum"]
    assert options.sizes(8, 64, 2, "alltoall", 4, "float32") == \
        [(0, 0), (16, 1), (32, 2), (64, 4)]
    assert options.sizes(8, 16, 2, "reduce", 4, "float32") == [(8, 2), (16, 4)]


@pytest.mark.parametrize("argv, message", [
    (["--collective", "broadcast", "-r", "4"], "-r 4 is not allowed: the root must be one "
                                                "of the 4 ranks"),
    (["--collective", "reduce", "--algorithms", "ring"], "--algorithms ring is not allowed "
                                                         "with reduce: it does not run reduce"),
    (["--collective", "alltoall", "-o", "max"], "-o max is not allowed for alltoall"),
    (["--collective", "alltoall", "--transport", "nccl", "--buffer", "cupy"],
     "it runs over mpi on numpy buffers")])
def test_broadcast_reduce_alltoall_bad_flags(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        options.check_args(_parse(argv))


def test_busbw_factors_follow_nccl_tests() -> None:
    from simulator.busbw import bus_factor
    assert [bus_factor(c, 4) for c in ("broadcast", "reduce", "alltoall")] == [1.0, 1.0, 0.75]
