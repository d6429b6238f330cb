"""``auto`` asks ``select``: on the default model, on a topology file named by
COLLSIM_TOPOLOGY or given to use_topology, and under mpirun the chosen algorithm runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topology
from collectives import auto
from collectives.launch import run_mpi
from simulator.selection import select

WORKER = Path(__file__).parent / "mpi_workers" / "select_auto.py"


@pytest.fixture(autouse=True)
def _reset(monkeypatch):
    monkeypatch.delenv(auto.TOPOLOGY_ENV, raising=False)
    auto.use_topology(None)
    yield
    auto.use_topology(None)


def test_default_model_is_the_documented_flat_one() -> None:
    machine = auto.machine(4)
    assert machine.nranks == 4 and machine.gamma_s_per_byte == auto.DEFAULT_GAMMA_S_PER_BYTE
    assert machine.alpha(0, 3) == auto.DEFAULT_ALPHA_S
    assert machine.beta(1, 2) == pytest.approx(auto.DEFAULT_BETA_S_PER_BYTE)
    for n in (8, 4096, 1 << 20, 1 << 28):
        choice = select("allreduce", n, machine)
        assert auto.choose("allreduce", n, 4) == (choice.algorithm, dict(choice.params))
    assert auto.choose("allreduce", 1 << 20, 1) == ("ring", {})


def test_topology_file_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    machine = topology.dgx_h100()
    path = tmp_path / "dgx.toml"
    topology.save(machine, path)
    monkeypatch.setenv(auto.TOPOLOGY_ENV, str(path))
    assert auto.machine(6).name == topology.load(path).name
    assert auto.choose("allreduce", 1 << 28, 6)[0] == "ring"  # one NVSwitch link per GPU
    assert auto.choose("allreduce", 1024, 6)[0] == select("allreduce", 1024, machine, 6).algorithm


def test_use_topology_wins_and_must_place_enough_ranks() -> None:
    auto.use_topology(topology.flat(2, 1e-6, 1e-9))
    assert auto.machine(2).name == "flat(2)"
    with pytest.raises(ValueError, match="places 2 ranks but the communicator has nranks=4"):
        auto.choose("allgather", 64, 4)
    with pytest.raises(TypeError, match="machine=3"):
        auto.use_topology(3)


@pytest.mark.mpi
def test_auto_runs_the_chosen_algorithm_under_mpirun() -> None:
    sizes = [1024, 16 << 20]
    expected = {n: auto.choose("allreduce", n, 4)[0] for n in sizes}
    assert len(set(expected.values())) == 2, expected  # the sizes must choose differently
    result = run_mpi(4, [str(WORKER), *map(str, sizes)], timeout_s=120)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RAN ")]
    assert result.returncode == 0 and len(lines) == 1, result.stdout[-2000:] + result.stderr[-2000:]
    ran = json.loads(lines[0][4:])
    for n in sizes:
        assert ran[str(n)] == {"algorithms": [expected[n]], "correct": True}, (n, ran)
