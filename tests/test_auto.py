"""``auto``: tuning tables first, then an installed predictor (the simulator's), then the
static rule; under mpirun the chosen algorithm runs, with collectives never importing the
simulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import simulator
import topology
from collectives import auto
from collectives.tuning import Rule, Tuning, load_tuning
from collsim.launch import run_mpi
from simulator.for_auto import machine, tuning_rules
from simulator.selection import select, tuning_table
from collectives import channel_orders

WORKER = Path(__file__).parent / "mpi_workers" / "select_auto.py"


@pytest.fixture(autouse=True)
def _reset(monkeypatch):
    monkeypatch.delenv(auto.TOPOLOGY_ENV, raising=False)
    monkeypatch.delenv(auto.TUNING_ENV, raising=False)
    auto.use_tuning(None)
    auto.use_predictor(None)
    yield
    auto.use_tuning(None)
    auto.use_predictor(None)


@pytest.mark.parametrize("nranks", [4, 6, 8, 12, 16, 64])
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_static_rule_is_near_the_simulators_best_on_the_host_model(collective, nranks) -> None:
    host = topology.default_flat(nranks)
    for nbytes in (64 * nranks, 4096 * nranks, 1 << 20, 1 << 24, 1 << 28):
        algorithm, params = auto.choose(collective, nbytes, nranks)
        choice = select(collective, nbytes, host)
        static = [c for c in choice.candidates
                  if c.algorithm == algorithm and dict(c.params) == params]
        assert len(static) == 1 and static[0].predicted_s <= 1.10 * choice.predicted_s, \
            (nbytes, algorithm, params, choice.label)


def test_static_rule_runs_the_ring_on_few_ranks() -> None:
    assert auto.choose("allreduce", 1 << 20, 1) == ("ring", {})
    assert auto.choose("allgather", 64, 3) == ("ring", {})
    assert auto.choose("allreduce", 64, 3) == ("ring", {})
    assert auto.choose("allreduce", 64, 2) == ("rhd", {"doubling": True})  # one exchange
    assert "static rule" in auto.source(4)


def test_predictor_selects_on_the_topology_file_from_the_environment(tmp_path, monkeypatch):
    dgx = topology.dgx_h100()
    path = tmp_path / "dgx.toml"
    topology.save(dgx, path)
    monkeypatch.setenv(auto.TOPOLOGY_ENV, str(path))
    with pytest.raises(RuntimeError, match="needs the simulator.*use_for_auto.*COLLSIM_TUNING"):
        auto.choose("allreduce", 1024, 6)
    simulator.use_for_auto()
    assert machine(6).name == topology.load(path).name
    assert auto.choose("allreduce", 1 << 28, 6)[0] == "ring"  # one NVSwitch link per GPU
    assert auto.choose("allreduce", 1024, 6)[0] == select("allreduce", 1024, dgx, 6).algorithm
    assert "predictor" in auto.source(6)


def test_predictor_runs_the_schedule_it_simulated_with_the_machines_orders() -> None:
    """On two DGX-H100 nodes ``auto`` runs each channel over the order ``select`` simulated
    (the chosen algorithm's channel orders), not over the ranks in turn; on a
    sub-communicator no orders."""
    dgx = topology.dgx_h100(nodes=2)
    simulator.use_for_auto(dgx)
    algorithm, params = auto.choose("allreduce", 1 << 30, 16)
    choice = select("allreduce", 1 << 30, dgx, 16)
    assert algorithm == choice.algorithm and params["channels"] == 8
    assert params["order"] == channel_orders(dgx, 8, algorithm)
    assert "order" not in auto.choose("allreduce", 1 << 30, 8)[1]


def test_given_topology_wins_and_must_place_enough_ranks() -> None:
    simulator.use_for_auto(topology.flat(2, 1e-6, 1e-9))
    assert machine(2).name == "flat(2)"
    with pytest.raises(ValueError, match="places 2 ranks but the communicator has nranks=4"):
        auto.choose("allgather", 64, 4)
    with pytest.raises(TypeError, match="topology_=int"):
        simulator.use_for_auto(3)


def test_tuning_file_wins_over_the_predictor_and_may_name_native(tmp_path, monkeypatch):
    rules = [Rule("allreduce", 4, 4, 0, 4095, "native"),
             Rule("allreduce", 4, 0, 0, 1 << 20, "pipeline", (("segments", 2),)),
             Rule("allgather", 4, 0, 0, 100, "ring")]
    path = tmp_path / "tuned.json"
    Tuning.from_rules(rules, "measured: test").save(path)
    simulator.use_for_auto()
    monkeypatch.setenv(auto.TUNING_ENV, str(path))
    assert auto.choose("allreduce", 1024, 4, 4) == ("native", {})
    assert auto.choose("allreduce", 1024, 4, 8) == ("pipeline", {"segments": 2})  # any size
    assert auto.choose("allreduce", 8192, 4, 4) == ("pipeline", {"segments": 2})
    uncovered = select("allreduce", 1 << 21, topology.default_flat(4))
    assert auto.choose("allreduce", 1 << 21, 4) == (uncovered.algorithm, uncovered.param_dict)
    assert "measured: test" in auto.source(4) and load_tuning(path).rules == tuple(rules)
    monkeypatch.delenv(auto.TUNING_ENV)
    assert auto.choose("allreduce", 1024, 4, 4)[0] != "native"  # the file is forgotten


def test_tuning_errors_name_what_is_wrong(tmp_path) -> None:
    with pytest.raises(ValueError, match="overlap"):
        Tuning.from_rules([Rule("allreduce", 2, 0, 0, 10, "ring"),
                           Rule("allreduce", 2, 0, 10, 20, "rhd")])
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "collsim-tuning", "rules": [{"collective": "allreduce"}]}')
    with pytest.raises(ValueError, match=r"rules\[0\] lacks \['algorithm', 'max_bytes'"):
        load_tuning(bad)
    bad.write_text("[]")
    with pytest.raises(ValueError, match="lacks \"format\""):
        load_tuning(bad)
    with pytest.raises(TypeError, match="table=int"):
        auto.use_tuning(3)
    assert len(repr(Tuning.from_rules([Rule("allgather", p, 0, 0, 9, "ring")
                                       for p in range(2, 200)]))) < 200


def test_simulators_tables_become_a_tuning_file() -> None:
    table = tuning_table("allreduce", topology.default_flat(4))
    tuning = Tuning.from_rules(tuning_rules([table]), "predicted")
    for nbytes in (8, 1 << 16, 1 << 26):
        choice = table.choice(nbytes)
        assert tuning.lookup("allreduce", 4, 4, nbytes) == (choice.algorithm, choice.param_dict)


@pytest.mark.mpi
def test_auto_runs_the_chosen_algorithm_under_mpirun(tmp_path) -> None:
    sizes = [1024, 16 << 20, 3 << 20]
    path = tmp_path / "tuned.json"
    Tuning.from_rules([Rule("allreduce", 2, 4, 2 << 20, 4 << 20, "pipeline")]).save(path)
    expected = {n: auto.choose("allreduce", n, 2)[0] for n in sizes[:2]}
    expected[sizes[2]] = "pipeline"
    assert len(set(expected.values())) == 3, expected  # the sizes must choose differently
    result = run_mpi(2, [str(WORKER), *map(str, sizes)], timeout_s=120,
                     env={auto.TUNING_ENV: str(path)})
    lines = [line for line in result.stdout.splitlines() if line.startswith("RAN ")]
    assert result.returncode == 0 and len(lines) == 1, result.stdout[-2000:] + result.stderr[-2000:]
    ran = json.loads(lines[0][4:])
    assert ran.pop("simulator_imported") is False
    for n in sizes:
        assert ran[str(n)] == {"algorithms": [expected[n]], "correct": True}, (n, ran)
