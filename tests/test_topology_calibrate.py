"""Calibration: the least-squares fit, and one real run under mpirun that writes a file."""

import argparse

import numpy as np
import pytest

import topology
from collsim import cli
from collsim import calibrate


def test_fit_line_recovers_a_line():
    sizes = [8, 1024, 65536, 1 << 20]
    alpha, beta = calibrate.fit_line(sizes, [3e-6 + 2e-10 * n for n in sizes])
    assert alpha == pytest.approx(3e-6, rel=1e-9) and beta == pytest.approx(2e-10, rel=1e-9)
    assert max(map(abs, calibrate.fit_errors(alpha, beta, sizes,
                                             [3e-6 + 2e-10 * n for n in sizes]))) < 1e-9


def test_fit_line_keeps_the_model_valid():
    # times that fall with size would give a negative slope and a huge intercept
    alpha, beta = calibrate.fit_line([10, 20, 30], [3e-6, 2e-6, 1e-6])
    assert beta == calibrate.MIN_BETA_S_PER_BYTE and alpha > 0
    # a line through (or below) the origin would give alpha <= 0
    alpha, beta = calibrate.fit_line([100, 200, 300], [0.5e-6, 1.5e-6, 2.5e-6])
    assert alpha == calibrate.MIN_LATENCY_S and beta > 0


def test_fit_errors_are_relative():
    assert calibrate.fit_errors(1.0, 0.0, [1, 2], [2.0, 0.5]) == [-0.5, 1.0]


def test_measure_gamma_numpy():
    gamma, error = calibrate.measure_gamma(np, [1 << 16, 1 << 20, 1 << 22], iters=3)
    assert 0 < gamma < 1e-8  # between 0 and 100 MB/s: any working machine adds faster
    assert error >= 0


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "8"], "at least two different sizes"),
    (["--sizes", "0", "8"], "sizes must be >= 1"),
    (["-n", "0"], "-n 0"),
    (["--ranks", "1"], "--ranks 1"),
    (["-w", "-1"], "-w -1"),
    (["--output", "/no/such/folder/m.toml"], "--output '/no/such/folder/m.toml'"),
    (["--gamma-sizes", "64", "64"], "--gamma-sizes"),
])
def test_arguments_are_checked(argv, message):
    parser = argparse.ArgumentParser()
    calibrate.add_arguments(parser)
    with pytest.raises(ValueError, match=message):
        calibrate.main(parser.parse_args(argv))


def test_ported_machine_keeps_each_pair_and_shares_each_port() -> None:
    from collectives import Recv, Schedule, Send, Step
    from simulator import simulate

    pairs = {(0, 1): (2e-6, 10e9, "host"), (0, 2): (3e-6, 5e9, "host"),
             (1, 2): (1e-6, 8e9, "net")}
    t = calibrate.ported("measured", "cpu", 3, pairs, 1e-10)
    for (a, b), (alpha, bandwidth, _) in pairs.items():
        for src, dst in ((a, b), (b, a)):
            assert t.alpha(src, dst) == pytest.approx(alpha, rel=1e-12)
            assert t.beta(src, dst) == pytest.approx(1 / bandwidth, rel=1e-12)
            assert t.hops(src, dst) == 3
    assert t.gamma_s_per_byte == 1e-10
    n = 250_000  # 1 MB each: rank 0 sends to 1 and 2 at once, through its 10 GB/s port
    both = Schedule.from_steps("allgather", "hand", 2 * n, [
        [Step((Send(1, 0, n), Send(2, n, 2 * n)))], [Step((Recv(0, 0, n),))],
        [Step((Recv(0, 0, n),))]])
    alone = Schedule.from_steps("allgather", "hand", n, [
        [Step((Send(1, 0, n),))], [Step((Recv(0, 0, n),))], [Step(())]])
    # alone 0 -> 1 runs at 10 GB/s; with 0 -> 2 at once (5 GB/s) it gets the port's other half
    assert simulate(alone, t).time_s == pytest.approx(2e-6 + 4 * n / 10e9, rel=1e-9)
    ends = {(x.src, x.dst): x.end_s for x in simulate(both, t, trace=True).transfers}
    assert ends == pytest.approx({(0, 1): 2e-6 + 4 * n / 5e9, (0, 2): 3e-6 + 4 * n / 5e9},
                                 rel=1e-9)


@pytest.mark.mpi
def test_calibrate_command_under_mpirun(tmp_path, capfd):
    """``collsim calibrate -n 3`` relaunches itself under mpirun and writes a file that loads."""
    path = tmp_path / "machine.toml"
    status = cli.main(["calibrate", "--ranks", "3", "--output", str(path), "--sizes", "8",
                       "4096", "65536", "-n", "5", "--fit", "pair", "--timeout", "120"])
    out = capfd.readouterr().out
    assert status == 0, out
    assert "3 ranks on 1 host(s)" in out  # printed by rank 0 of the launched job
    assert "max |error|" in out and f"wrote {path}" in out
    t = topology.load(path)
    assert t.nranks == 3 and len(t.links) == 12  # a port per rank, a link per pair of ports
    assert sorted({link.kind for link in t.links}) == ["host", "port"]
    assert t.gamma_s_per_byte > 0
    assert all(t.alpha(a, b) > 0 and t.beta(a, b) > 0
               for a in range(3) for b in range(3) if a != b)
    order = topology.ring_order(t)  # one host: nearest measured neighbour first
    assert order[0] == 0 and order[1] == min((1, 2), key=lambda r: (t.alpha(0, r), r))
    assert path.read_text().startswith("# collsim calibrate: 3 ranks")
