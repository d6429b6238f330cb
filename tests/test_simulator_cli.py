"""collsim simulate, busbw factors and the timeline picture."""

from __future__ import annotations

from pathlib import Path

import pytest

import topology
from collectives import build_schedule
from collsim.cli import main
from simulator import simulate
from simulator.busbw import bandwidths, bus_factor
from simulator.timeline import plot_timeline


def test_bus_factors_follow_nccl_tests() -> None:
    assert bus_factor("allreduce", 8) == 2 * 7 / 8
    assert bus_factor("reduce_scatter", 4) == bus_factor("allgather", 4) == 3 / 4
    assert bandwidths("allreduce", 2, 1000, 1e-6) == (1e9, 1e9)
    with pytest.raises(ValueError, match="collective 'bcast'"):
        bus_factor("bcast", 2)


def test_simulate_command_prints_every_size_and_algorithm(capsys, tmp_path: Path) -> None:
    png = tmp_path / "timeline.png"
    assert main(["simulate", "allgather", "--topology", "flat", "--ranks", "4", "-b", "1K",
                 "-e", "64K", "-f", "8", "--algorithms", "ring", "rhd", "--timeline",
                 str(png)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if " ring " in line or " rhd " in line]
    assert len(rows) == 2 * 3  # 1K, 8K, 64K
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("by", ["rank", "link"])
def test_timeline_png(tmp_path: Path, by: str) -> None:
    result = simulate(build_schedule("allreduce", "tree", 6, 6000), topology.dgx_h100(),
                      trace=True)
    path = plot_timeline(result, tmp_path / f"{by}.png", by=by)
    assert path.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="by='node'"):
        plot_timeline(result, tmp_path / "x.png", by="node")


@pytest.mark.parametrize("argv, message", [
    (["-f", "1"], "argument -f/--stepfactor: 1 is not allowed; it must be an integer from 2"),
    (["-b", "1M", "-e", "1K"], "-b 1048576 is larger than -e 1024"),
    (["--topology", "nowhere.toml"], "--topology 'nowhere.toml' is neither a preset"),
])
def test_simulate_command_names_bad_arguments(argv: list[str], message: str, capsys) -> None:
    """One line on stderr naming the flag, exit status 2 (was: SystemExit with the text)."""
    try:
        status = main(["simulate", "--topology", "flat", "--ranks", "2", *argv])
    except SystemExit as exit_:  # argparse's own errors: bounds are checked as it parses
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("collsim simulate: error: ") and message in err
    assert err.count("\n") == 1
