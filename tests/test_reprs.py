"""Reprs, strs and error messages a person reads in one glance, however big the object."""

from __future__ import annotations

import pytest

import topology
from collectives import build_schedule, channel_orders
from simulator import cost, select, simulate, tuning_table

#: the most characters a one-line summary of a big object may take
SUMMARY_CHARS = 1000
#: the most characters an error message may take
MESSAGE_CHARS = 400


def test_topology_repr_is_a_summary() -> None:
    flat = topology.flat(64, 5e-6, 4e-11)
    text = repr(flat)
    assert len(text) < 300 and "\n" not in text
    assert "'flat(64)'" in text and "64 ranks" in text and "128 links" in text
    assert "2.5 us" in text and "25 GB/s" in text  # per port link: alpha in all
    assert "4032 links" in repr(topology.mesh(64, 5e-6, 4e-11))
    cluster = repr(topology.dgx_h100(nodes=128))
    assert len(cluster) < SUMMARY_CHARS
    assert "1024 ranks on 1024 gpu" in cluster and "2048 nvlink (0.25 us, 450 GB/s)" in cluster
    assert "ib (0.2 us, 50-200 GB/s)" in cluster  # NIC links and the faster leaf uplinks
    assert "gamma_s_per_byte=1e-10" in repr(topology.default_flat(4))


def test_simulation_result_repr_is_a_summary_even_with_a_trace() -> None:
    schedule = build_schedule("allreduce", "ring", 64, 1 << 20)
    result = simulate(schedule, topology.mesh(64, 5e-6, 4e-11), trace=True)
    assert len(result.transfers) == result.transfer_count == 64 * 2 * 63
    text = repr(result)
    assert len(text) < SUMMARY_CHARS and "\n" not in text
    assert f"time_s={result.time_s:.6g}" in text and "8064 transfers (traced)" in text
    assert "64 of 4032 links used" in text


def test_choice_and_table_reprs_name_the_choice() -> None:
    machine = topology.flat(64, 5e-6, 4e-11)
    choice = select("allreduce", 1 << 20, machine)
    text = repr(choice)
    assert len(text) < 200 and text.startswith(f"Choice({choice.label}: ")
    assert f"{len(choice.candidates)} candidates" in text
    table = repr(tuning_table("allreduce", machine))
    assert len(table) < 400 and "allreduce on 'flat(64)', 64 ranks" in table


def test_schedule_str_shows_the_first_ranks_and_to_text_every_step() -> None:
    schedule = build_schedule("allreduce", "ring", 64, 1 << 20)
    text = str(schedule)
    lines = text.splitlines()
    assert lines[0] == "ring allreduce: 64 ranks, 1048576 elements"
    assert lines[1] == ("126 steps at most per rank; 16128 operations: 8064 sends, "
                        "8064 receives (4032 reducing), 0 copies")
    assert lines[2] == "rank 0:" and "  ..." in lines and "rank 3:" not in lines
    assert lines[-1].startswith("... 61 more ranks")
    assert len(lines) < 40 and len(text) < 4000
    full = schedule.to_text()
    assert len(full.splitlines()) == 1 + 64 * (1 + 126)
    assert full.splitlines()[:1] == lines[:1] and "rank 63:" in full
    assert schedule.to_text(ranks=[5]).splitlines()[1:] == \
        ["rank 5:"] + [f"  step {i}: {step}" for i, step in enumerate(schedule.steps(5))]


def test_schedule_repr_abbreviates_long_parameters() -> None:
    order = tuple(reversed(range(100)))
    schedule = build_schedule("allgather", "ring", 100, 1000, order=order)
    assert repr(schedule) == ("Schedule('allgather', 'ring', nranks=100, count=1000, "
                              "order=(99, 98, 97, ..., 2, 1, 0))")
    assert str(schedule).splitlines()[0] == \
        "ring allgather: 100 ranks, 1000 elements (order=(99, 98, 97, ..., 2, 1, 0))"


@pytest.mark.parametrize("call, message", [
    (lambda: cost("allreduce", "ring", 64, 4096, alpha=topology.flat(64, 5e-6, 4e-11),
                  beta=1e-9, gamma=0.0), "alpha=Topology("),
    (lambda: cost("allreduce", "ring", 4, 4096, alpha=1e-6, beta=list(range(10**5)),
                  gamma=0.0), "beta=[0, 1, 2, 3, 4, 5, ...]"),
    (lambda: select("allreduce", 1024, list(range(10**5))), "topology=[0, 1, 2, 3, 4, 5, ...]"),
    (lambda: build_schedule("allreduce", "ring", 10**4, 10, order=[0] * 10**4),
     "order=(0, 0, 0, 0, 0, 0, ...)"),
    (lambda: topology.flat(10**5 * [1], 1e-6, 1e-9), "nranks="),
    (lambda: topology.loads('name = "x"\nplacement = ["a"]\ndevices = [{id = "a", kind = "gpu"}]'
                            f'\nlinks = {list(range(10**4))}'), "links[0] = 0"),
    (lambda: simulate(build_schedule("allreduce", "ring", 2, 8), topology.flat(2, 1e-6, 1e-9),
                      dtype_size="x" * 10**5), "dtype_size='xxxxxxxxxxxx"),
])
def test_errors_quote_values_briefly(call, message: str) -> None:
    with pytest.raises((TypeError, ValueError)) as error:
        call()
    assert len(str(error.value)) < MESSAGE_CHARS
    assert message in str(error.value)


def test_schedule_repr_shortens_one_order_per_channel() -> None:
    machine = topology.dgx_h100(nodes=16)
    orders = channel_orders(machine, 8, "ring")
    schedule = build_schedule("allreduce", "ring", 128, 1 << 20, channels=8, order=orders)
    text = repr(schedule)
    assert len(text) < 400 and text.count("...") >= 3 and "channels=8" in text, text
