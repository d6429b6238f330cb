"""Bruck's AllGather: its rounds and messages, its price against the simulator, and what
selection and the exports make of it.

Correctness against NumPy (every p and count, dtype and op, channels and orders) is in
test_algorithms.py, test_channels.py and test_schedule.py, over MPI bitwise against the
native collective in tests/mpi_workers/executor_matrix.py, both engines alike in
test_simulator_compiled.py: they enumerate the registry, Bruck among its algorithms.
"""

from __future__ import annotations

import pytest

import topology
from collectives import Recv, Send, build_schedule
from collectives.registry import algorithm
from simulator import cost, simulate
from simulator.analytic import price_one
from simulator.export import ompi_algorithm, read_ompi_rules, to_ompi_rules
from simulator.selection import candidates, select, tuning_table

RANKS = (2, 3, 5, 7, 8, 12, 17, 24, 33)
ALPHA, BETA = 2e-6, 1e-10


def test_it_runs_allgather_only() -> None:
    assert algorithm("bruck").collectives == {"allgather"}
    with pytest.raises(ValueError, match="algorithm 'bruck' does not run allreduce"):
        build_schedule("allreduce", "bruck", 4, 8)


@pytest.mark.parametrize("p", RANKS)
def test_ceil_lg_p_rounds_each_one_peer_each_way(p: int) -> None:
    schedule = build_schedule("allgather", "bruck", p, 10 * p)
    rounds = (p - 1).bit_length()
    for rank in range(p):
        steps = schedule.steps(rank)
        assert len(steps) == rounds
        for k, step in enumerate(steps):
            sends = {op.peer for op in step.ops if isinstance(op, Send)}
            recvs = {op.peer for op in step.ops if isinstance(op, Recv)}
            assert sends == {(rank - (1 << k)) % p} and recvs == {(rank + (1 << k)) % p}
        # every other rank's block once, straight into its place: (p - 1) / p of the vector
        assert schedule.sent_elements(rank) == 10 * (p - 1)


def test_a_wrapping_run_is_sent_as_two_ranges() -> None:
    steps = build_schedule("allgather", "bruck", 5, 10).steps(4)  # blocks of 2 elements
    assert [str(step) for step in steps] == [
        "send [8:10) -> 3; recv [0:2) <- 0",
        "send [8:10) -> 2; send [0:2) -> 2; recv [2:6) <- 1",
        "send [8:10) -> 0; recv [6:8) <- 3"]


@pytest.mark.parametrize("p", RANKS)
def test_analytic_price_is_the_simulated_time_on_flat(p: int) -> None:
    """Exact at every count, blocks even or not, on the one-port flat machine and the mesh."""
    for machine in (topology.flat(p, ALPHA, BETA), topology.mesh(p, ALPHA, BETA)):
        for count in sorted({0, 1, p - 1, p + 1, 97, 64 * p, 64 * p + 5}):
            schedule = build_schedule("allgather", "bruck", p, count)
            simulated = simulate(schedule, machine, trace=False).time_s
            assert price_one("allgather", "bruck", machine, 4 * count) == \
                pytest.approx(simulated, rel=1e-12, abs=0), (machine.name, count)


@pytest.mark.parametrize("p", [4, 6, 13, 32])
def test_cost_is_the_textbook_form(p: int) -> None:
    n = 4 * p * 1000  # bytes, blocks even
    expected = (p - 1).bit_length() * ALPHA + (p - 1) / p * n * BETA
    assert cost("allgather", "bruck", p, n, ALPHA, BETA, 0.0) == pytest.approx(expected,
                                                                               rel=1e-12)


def test_selection_offers_it_once_and_picks_it_for_small_vectors_off_powers_of_two() -> None:
    assert [p for a, p in candidates("allgather", (1, 8), 8) if a == "bruck"] == [()]
    assert all(a != "bruck" for c in ("allreduce", "reduce_scatter") for a, _ in candidates(c))
    flat = topology.flat(24, ALPHA, BETA)  # 5 rounds; rhd 6 (a core of 16 and its folds)
    assert select("allgather", 24 * 64, flat).algorithm == "bruck"


def test_open_mpi_rules_name_it_bruck() -> None:
    assert ompi_algorithm("allgather", "bruck") == 2  # coll_tuned allgather algorithm 2
    table = tuning_table("allgather", topology.flat(24, ALPHA, BETA))
    text = to_ompi_rules([table])
    ((comm_size, entries),) = read_ompi_rules(text)[0].items()
    assert comm_size == 24 and 2 in [algorithm_id for _, algorithm_id, _, _ in entries]
    assert "bruck" in text


def test_channel_orders_keep_the_large_rounds_inside_the_nodes() -> None:
    machine = topology.dgx_h100(4)  # 32 ranks: rounds at distances 1, 2, 4, 8, 16
    schedule = build_schedule("allgather", "bruck", 32, 32 * 64,
                              order=algorithm("bruck").orders(machine, 1)[0])
    for rank in range(32):
        for k, step in enumerate(schedule.steps(rank)):
            crossing = {op.peer // 8 != rank // 8 for op in step.ops}
            assert crossing == {k < 2}, (rank, k)  # distances 1, 2 < 4 nodes: the network
