"""``collsim select`` prints the table and its crossovers and writes both export files."""

from __future__ import annotations

from pathlib import Path


from collsim.cli import main
from simulator.export import read_nccl_csv, read_ompi_rules


def test_select_prints_crossovers_and_writes_exports(tmp_path: Path, capsys) -> None:
    csv, rules = tmp_path / "tuner.csv", tmp_path / "rules.txt"
    status = main(["select", "allreduce", "allgather", "--topology", "flat", "--ranks", "6",
                   "--method", "closed_form", "-b", "1K", "-e", "1M",
                   "--nccl-csv", str(csv), "--ompi-rules", str(rules)])
    out = capsys.readouterr().out
    assert status == 0
    assert "allreduce on flat(6): 6 ranks" in out and "allgather on flat(6)" in out
    assert "crossovers:" in out and "rhd(doubling=True) -> ring" in out  # the AllReduce's
    assert "1024" in out and "1048576" in out and "2097152" not in out
    assert read_nccl_csv(csv.read_text()) == []  # NCCL's own model is not known on flat
    assert set(read_ompi_rules(rules.read_text())) == {0, 2}


def test_select_writes_nccls_tuner_file_for_the_machine(tmp_path: Path) -> None:
    csv = tmp_path / "tuner.csv"
    assert main(["select", "allreduce", "allgather", "--topology", "dgx-h100", "--nodes", "2",
                 "-d", "double", "-b", "1K", "-e", "1M", "--nccl-csv", str(csv)]) == 0
    rows = read_nccl_csv(csv.read_text())
    assert {row["coll"] for row in rows} == {"allreduce", "allgather"}
    assert {(row["nNodes"], row["nRanks"]) for row in rows} == {(2, 16)}
    assert all(row["max_bytes"] >= 8 for row in rows)  # none below one double
    assert {row["algo"] for row in rows} <= {"ring", "tree", "nvls_tree"}


def test_select_refuses_an_unknown_collective(capsys) -> None:
    assert main(["select", "bcast", "--topology", "flat"]) == 2
    assert "collective 'bcast'" in capsys.readouterr().err


def test_select_writes_a_tuning_file_auto_reads(tmp_path: Path, capsys, monkeypatch) -> None:
    from collectives import auto
    from simulator.selection import select
    import topology

    path = tmp_path / "tuning.json"
    assert main(["select", "allreduce", "reduce_scatter", "--topology", "flat", "--ranks", "6",
                 "--method", "closed_form", "--tuning-out", str(path)]) == 0
    assert "tuning file for auto written" in capsys.readouterr().out
    monkeypatch.setenv(auto.TUNING_ENV, str(path))
    try:
        flat = topology.preset("flat", nranks=6)
        for nbytes in (8, 1 << 16, 1 << 30):
            choice = select("allreduce", nbytes, flat, method="closed_form")
            assert auto.choose("allreduce", nbytes, 6, 4) == (choice.algorithm, choice.param_dict)
        assert "predicted on flat(6) (closed_form)" in auto.source(6)
    finally:
        monkeypatch.delenv(auto.TUNING_ENV)
        auto.choose("allreduce", 8, 6)  # forget the file


def test_select_restricts_the_candidates_as_nccl_algo_does(capsys) -> None:
    assert main(["select", "allreduce", "--topology", "dgx-h100", "--algorithms", "ring",
                 "tree", "-b", "1K", "-e", "1M"]) == 0
    out = capsys.readouterr().out
    assert "ring (us)" in out and "tree (us)" in out
    assert "rhd" not in out and "pipeline" not in out and "nan" not in out
    assert main(["select", "--topology", "dgx-h100", "--algorithms", "ring", "ring"]) == 2
    assert "--algorithms" in capsys.readouterr().err
