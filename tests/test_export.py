"""Open MPI's dynamic rules parse back and say what the tuning tables say, in Open MPI's
ids and units (the NCCL tuner file: tests/test_export_nccl.py)."""

from __future__ import annotations

import pytest

import topology
from simulator.export import OMPI_COLL_ID, ompi_algorithm, read_ompi_rules, to_ompi_rules
from simulator.selection import tuning_table

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")


@pytest.fixture(scope="module")
def tables():
    machine = topology.flat(6, 2e-6, 1e-10)
    return [tuning_table(c, machine, method="closed_form") for c in COLLECTIVES]


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
