"""The NCCL tuner file: only NCCL's algorithms, never slower than NCCL's own choice in the
model, channels as NCCL's, and lines the example plugin (NCCL 2.27.5-2.30) reads as
written."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import topology
from simulator import nccl_algorithms
from simulator.export import (NCCL_COLL, NCCL_FIELDS, NCCL_LINE_MAX, nccl_ranges,
                              read_nccl_csv, ring_of, to_nccl_csv)
from simulator.analytic import price
from simulator.nccl_tuner import nccl_channels, nccl_choice, tuner_kind
from simulator.selection import MAX_BYTES
from topology.channels import nics_per_node

#: every preset with a GPU model, built at a node count
GPU_PRESETS = [name for name in topology.PRESET_NAMES if topology.preset(name).gpu is not None]
NODES = (1, 2, 8, 128)
#: our names of NCCL's algorithms, by NCCL's
OURS = {nccl: ours for ours, nccl in nccl_algorithms.NCCL_NAMES.items()}


@functools.lru_cache(maxsize=None)
def _machine(name: str, nodes: int):
    return topology.preset(name, nodes=nodes)


def _priced(collective, machine, pair, sizes) -> np.ndarray:
    """Our model's seconds of NCCL's (algorithm, protocol) ``pair`` at ``sizes``."""
    algorithm, protocol = OURS[pair[0]], pair[1]
    if algorithm == "ring":  # our chain for Broadcast and Reduce, on one channel
        ours = ring_of(collective)
        channels = {"channels": max(1, nics_per_node(machine))} if ours == "ring" else {}
        return np.asarray(price(collective, ours, machine, sizes, machine.nranks, 4,
                                protocol, **channels))
    return nccl_algorithms.nccl_costs(collective, algorithm, machine, sizes, protocol)


def _samples(low: int, high: int) -> list[int]:
    """Both ends of a range, and sizes between (geometric), at most 2**41."""
    high = min(high, 1 << 41)
    inner = np.geomspace(max(low, 1), high, 7)[1:-1] if high > low + 1 else []
    return sorted({low, high, *(int(n) for n in inner)})


@pytest.mark.parametrize("name", GPU_PRESETS)
@pytest.mark.parametrize("nodes", NODES)
def test_no_exported_choice_is_slower_in_the_model_than_nccls_own(name: str, nodes: int) -> None:
    machine = _machine(name, nodes)
    kind = tuner_kind(machine)
    for collective in NCCL_COLL:
        ranges = nccl_ranges(collective, machine)
        assert ranges[0].min_bytes == 0 and ranges[-1].max_bytes == MAX_BYTES
        assert all(a.max_bytes + 1 == b.min_bytes for a, b in zip(ranges, ranges[1:]))
        checks: dict[tuple[tuple[str, str], tuple[str, str]], list[int]] = {}
        for r in ranges:
            assert r.algorithm in nccl_algorithms.NCCL_NAMES.values(), r
            pair = (r.algorithm, {"ll": "LL", "ll128": "LL128", "simple": "Simple"}[r.protocol])
            for n in _samples(r.min_bytes, r.max_bytes):
                theirs = nccl_choice(kind, n, machine.nranks, nodes, collective=collective)
                assert r.channels == nccl_channels(kind, *pair, n, machine.nranks, nodes), (r, n)
                if not r.ours:
                    assert pair == theirs, (r, n)  # kept: NCCL's own choice, as NCCL makes it
                checks.setdefault((pair, theirs), []).append(n)
        assert any(r.ours for r in ranges) or collective == "allreduce"
        for (pair, theirs), sizes in checks.items():
            mine, best = _priced(collective, machine, pair, sizes), \
                _priced(collective, machine, theirs, sizes)
            slower = [(n, m, t) for n, m, t in zip(sizes, mine, best) if m > t * (1 + 1e-9)]
            assert not slower, (collective, pair, theirs, slower[:3])


def test_the_one_node_h100_file_leaves_nvls_to_nccl_and_never_writes_our_tree() -> None:
    ranges = nccl_ranges("allreduce", _machine("dgx-h100", 1))
    large = [r for r in ranges if r.max_bytes >= 1 << 27]
    assert {(r.algorithm, r.protocol, r.ours) for r in large} == {("nvls", "simple", False)}
    assert ranges[0].algorithm == "ring" and ranges[0].protocol == "ll"
    assert not any(r.algorithm == "tree" for r in ranges)  # NCCL's tree is a chain here


def test_leaving_nccls_own_out_writes_only_ours() -> None:
    machine = _machine("dgx-a100", 2)
    both = nccl_ranges("allgather", machine)
    ours = nccl_ranges("allgather", machine, keep_nccl=False)
    assert ours and all(r.ours for r in ours)
    assert sum(r.max_bytes - r.min_bytes + 1 for r in ours) == \
        sum(r.max_bytes - r.min_bytes + 1 for r in both if r.ours)
    for r in ours:  # the same pairs over the same sizes
        assert all((s.algorithm, s.protocol, s.channels) == (r.algorithm, r.protocol, r.channels)
                   for s in both if s.ours and r.min_bytes <= s.min_bytes <= r.max_bytes)


def test_the_file_round_trips_through_the_plugins_reading_rules() -> None:
    machine = _machine("dgx-h100", 2)
    text = to_nccl_csv(machine)
    for line in text.splitlines():
        assert len(line) <= NCCL_LINE_MAX and line  # no line the plugin reads in two
        assert line.startswith("#") or len(line.split(",")) == len(NCCL_FIELDS)
    rows = read_nccl_csv(text)
    expected = [(NCCL_COLL[r.collective], r.min_bytes, r.max_bytes, r.algorithm, r.protocol,
                 r.channels, 2, 16, -1, -1) for c in NCCL_COLL for r in nccl_ranges(c, machine)]
    assert [tuple(row[k] for k in NCCL_FIELDS) for row in rows] == expected
    for collective in NCCL_COLL.values():  # first match wins: no size matches two lines
        mine = [r for r in rows if r["coll"] == collective]
        assert all(a["max_bytes"] < b["min_bytes"] for a, b in zip(mine, mine[1:]))


def test_a_machine_without_nccls_model_gets_comments_only() -> None:
    text = to_nccl_csv(topology.flat(4, 1e-6, 1e-9))
    assert read_nccl_csv(text) == [] and "nothing written" in text
    with pytest.raises(ValueError, match="GPU model of a DGX preset"):
        nccl_ranges("allreduce", topology.flat(4, 1e-6, 1e-9))


@pytest.mark.parametrize("text, match", [
    ("allreduce,0,10\n", "has 3 fields"),
    ("allreduce,0,10,ring,simple,-1,1,8,-1,-1,7\n", "has 11 fields"),
    ("allreduce,x,10,ring,simple,-1,-1,4\n", "min_bytes='x'"),
    ("allreduce,0,10,rhd,simple,-1,-1,4\n", "algo='rhd'"),
    ("allreduce,0,10,ring,fast,-1,-1,4\n", "proto='fast'"),
    ("reduce_scatter,0,10,ring,simple,-1,-1,4\n", "coll='reduce_scatter'"),
    ("# " + "x" * 300 + "\n", "at most 255"),
])
def test_the_reader_refuses_what_the_plugin_would_misread(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        read_nccl_csv(text)


def test_the_reader_reads_what_the_plugin_reads() -> None:
    rows = read_nccl_csv("# comment\n\nallreduce, 0,,10 ,ring,\tsimple,4,1,8\n"
                         "allgather,0,10,pat,simple,-1,-1,-1,2\n")
    assert [(r["min_bytes"], r["max_bytes"], r["channels"], r["numPipeOps"], r["regBuff"])
            for r in rows] == [(0, 10, 4, -1, -1), (0, 10, -1, 2, -1)]


def test_a_fitted_machine_saved_and_loaded_keeps_nccl_s_model(tmp_path) -> None:
    """Figures fitted to a cluster (or a run's settings) leave it an H100 to NCCL: the
    file says so, NCCL's algorithms stay available and the tuner file is written."""
    import dataclasses

    machine = _machine("dgx-h100", 2)
    fitted = dataclasses.replace(machine, gpu=dataclasses.replace(
        machine.gpu, launch_s=3e-6, channels=24, qps_per_connection=2))
    path = tmp_path / "cluster.toml"
    topology.save(fitted, path)
    loaded = topology.load(path)
    assert 'nccl_kind = "H100"' in path.read_text()
    assert tuner_kind(loaded) == "H100"
    assert nccl_algorithms.available("allreduce", "nccl-nvlstree", loaded)
    assert sum(not line.startswith("#") for line in to_nccl_csv(loaded).splitlines()) > 0
    unknown = dataclasses.replace(machine, gpu=dataclasses.replace(machine.gpu, nccl_kind=""))
    assert tuner_kind(unknown) is None
    assert "nothing written" in to_nccl_csv(unknown)
