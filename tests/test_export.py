"""Exports parse back: the NCCL tuner CSV and the Open MPI dynamic rules say what the
tuning tables say, in the ids and units of each library."""

from __future__ import annotations

import pytest

import topology
from simulator.export import (NCCL_ALGO, OMPI_COLL_ID, ompi_algorithm, read_nccl_csv,
                              read_ompi_rules, to_nccl_csv, to_ompi_rules)
from simulator.selection import tuning_table

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")


@pytest.fixture(scope="module")
def tables():
    machine = topology.flat(6, 2e-6, 1e-10)
    return [tuning_table(c, machine, method="closed_form") for c in COLLECTIVES]


def _choice(table, nbytes: int) -> str:
    return table.choice(nbytes).algorithm


def test_nccl_csv_parses_back_to_the_tables_choices(tables) -> None:
    rows = read_nccl_csv(to_nccl_csv(tables, nnodes=1))
    names = {"allreduce": "allreduce", "reduce_scatter": "reducescatter",
             "allgather": "allgather"}
    for table in tables:
        mine = [r for r in rows if r["coll"] == names[table.collective]]
        assert mine, table.collective
        for row in mine:
            assert (row["proto"], row["channels"], row["nNodes"], row["nRanks"]) == \
                ("simple", -1, 1, 6)
            assert row["min_bytes"] <= row["max_bytes"]
            for n in (row["min_bytes"], row["max_bytes"], (row["min_bytes"] + row["max_bytes"]) // 2):
                assert NCCL_ALGO[(table.collective, _choice(table, n))] == row["algo"]
        for a, b in zip(mine, mine[1:]):
            assert a["max_bytes"] < b["min_bytes"]


def test_nccl_csv_covers_allreduce_and_leaves_out_what_nccl_lacks(tables) -> None:
    text = to_nccl_csv(tables)
    allreduce = [r for r in read_nccl_csv(text) if r["coll"] == "allreduce"]
    assert allreduce[0]["min_bytes"] == 0 and allreduce[-1]["max_bytes"] == (1 << 63) - 1
    assert all(b["min_bytes"] == a["max_bytes"] + 1 for a, b in zip(allreduce, allreduce[1:]))
    assert "# left out: allgather 0-" in text  # rhd wins small allgathers; NCCL has no rhd


def test_ompi_rules_parse_back_in_open_mpi_ids_and_sizes(tables) -> None:
    rules = read_ompi_rules(to_ompi_rules(tables))
    assert set(rules) == {2, 13, 0} == {OMPI_COLL_ID[c] for c in COLLECTIVES}
    for table in tables:
        (comm_size, entries), = rules[OMPI_COLL_ID[table.collective]].items()
        assert comm_size == 6 and entries[0][0] == 0
        per_rank = 6 if table.collective == "reduce_scatter" else 1
        starts = [e[0] for e in entries] + [1 << 62]
        for (start, algorithm, faninout, segsize), end in zip(entries, starts[1:]):
            assert (faninout, segsize) == (0, 0) and start < end
            for size in (start, end - 1):
                ours = table.choice(size * per_rank)  # a block of `size` bytes per rank
                assert ompi_algorithm(table.collective, ours.algorithm, ours.params) == \
                    algorithm, (table.collective, size)


def test_ompi_rules_name_the_algorithms_in_comments(tables) -> None:
    text = to_ompi_rules(tables[:1])
    assert "recursive_doubling" in text and text.splitlines()[1].startswith("1 ")


def test_ompi_rules_refuse_two_tables_of_one_collective(tables) -> None:
    with pytest.raises(ValueError, match="one table per collective"):
        to_ompi_rules([tables[0], tables[0]])


@pytest.mark.parametrize("text, match", [
    ("1\n2 1\n4 1\n8 4 0 0\n", "first message size is 8"),
    ("1\n2 1\n4 2\n0 4 0 0\n", "ends where message size"),
    ("1\n2 -1\n", "number of comm sizes=-1"),
])
def test_ompi_reader_checks_what_open_mpi_checks(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        read_ompi_rules(text)


def test_nccl_reader_refuses_short_lines_and_bad_numbers() -> None:
    with pytest.raises(ValueError, match="has 3 fields"):
        read_nccl_csv("allreduce,0,10\n")
    with pytest.raises(ValueError, match="min_bytes='x'"):
        read_nccl_csv("allreduce,x,10,ring,simple,-1,-1,4\n")


def test_bad_protocol_is_named(tables) -> None:
    with pytest.raises(ValueError, match="proto='fast'"):
        to_nccl_csv(tables, proto="fast")


def test_nccl_csv_channels_column_is_the_chosen_count() -> None:
    table = tuning_table("allreduce", topology.dgx_h100(2), method="simulate",
                         algorithms=("ring",))
    rows = read_nccl_csv(to_nccl_csv([table]))
    assert [row["channels"] for row in rows][-1] == 8
    for row in rows:
        choice = table.choice(row["max_bytes"])
        assert row["channels"] == choice.param_dict.get("channels", 1)
    assert {row["channels"] for row in read_nccl_csv(to_nccl_csv([table], channels=-1))} == {-1}


def test_nccl_csv_carries_the_protocol_the_model_chose() -> None:
    import topology
    from simulator import tuning_table

    table = tuning_table("allreduce", topology.dgx_h100())
    rows = read_nccl_csv(to_nccl_csv([table], proto="model"))
    assert rows[0]["min_bytes"] == 0 and rows[-1]["max_bytes"] == (1 << 63) - 1
    assert all(b["min_bytes"] == a["max_bytes"] + 1 for a, b in zip(rows, rows[1:]))
    assert (rows[0]["proto"], rows[-1]["proto"]) == ("ll", "simple")
    for row in rows:
        for size in (row["min_bytes"], min(row["max_bytes"], 1 << 33)):
            choice = table.choice(size)
            assert row["proto"] == choice.protocol.lower(), (size, row, choice.protocol)
