"""``collsim calibrate``: measure alpha, beta and gamma on the running MPI job.

Every pair of ranks ping-pongs messages of several sizes; a least-squares line
``t(n) = alpha + beta * n`` through the one-way times gives the pair's latency and inverse
bandwidth (per pair, or per class of pair: same host or across hosts). Every rank times the
local reduction ``a += b`` of its array module (NumPy, or CuPy for GPU buffers) and the median
slope is gamma. The result is a ported machine (:func:`ported`): every pair's measured
latency and bandwidth, through one port per rank that the rank's concurrent messages share,
as on :func:`topology.flat`; it is written as a topology file, and the fit's error on every
measured point is printed and written into the file's header.

Run it as ``collsim calibrate --ranks 4 --output machine.toml``: outside ``mpirun`` it
launches itself on ``--ranks`` ranks; under ``mpirun`` (``mpirun -n 4 python -m collsim
calibrate ...``) it runs on the job's ranks.  A fit whose error at some point exceeds
:data:`POOR_FIT` is reported with a warning, in the output and the file.  The file's
figures are rounded to :data:`DIGITS` significant digits, so every one is written with its
unit.
"""

from __future__ import annotations

import argparse
import importlib.util
import socket
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from topology.files import save
from topology.model import Device, Link, Topology

from .args import UsageError, check_at_least, check_output

__all__ = ["add_arguments", "main", "fit_line", "fit_errors", "measure_pair",
           "measure_gamma", "calibrate", "ported", "POOR_FIT", "DIGITS"]

#: the fit never returns a latency below 1 ns or a bandwidth above 1 PB/s, so the written
#: file stays valid (latency and bandwidth > 0) when noise drives the fit to 0 or below
MIN_LATENCY_S = 1e-9
MIN_BETA_S_PER_BYTE = 1e-15

DEFAULT_SIZES = tuple(8 * 8**k for k in range(7))  # 8 B .. 2 MiB
DEFAULT_GAMMA_SIZES = (1 << 16, 1 << 20, 1 << 22)  # large enough that the slope shows
_TAG = 17

#: a fit is reported as poor when its error at some point exceeds this fraction
POOR_FIT = 0.5
#: significant digits of the figures written to the file
DIGITS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this command's arguments to ``parser``."""
    parser.add_argument("--ranks", type=int, default=2, metavar="N",
                        help="ranks to launch when not already under mpirun (default 2)")
    parser.add_argument("--output", type=Path, default=Path("machine.toml"), metavar="FILE",
                        help="topology file to write (default machine.toml)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES),
                        metavar="BYTES", help="message sizes in bytes (default 8 .. 2 MiB)")
    parser.add_argument("--gamma-sizes", type=int, nargs="+",
                        default=list(DEFAULT_GAMMA_SIZES), metavar="BYTES",
                        help="operand sizes for timing the reduction (default 64 KiB .. 4 MiB)")
    parser.add_argument("-n", "--iters", type=int, default=20,
                        help="timed round trips per size and pair (default 20)")
    parser.add_argument("-w", "--warmup_iters", type=int, default=2,
                        help="untimed round trips first (default 2)")
    parser.add_argument("--fit", choices=("pair", "class"), default="pair",
                        help="one line per pair, or per class (same host / across hosts)")
    parser.add_argument("--buffer", choices=("numpy", "cupy"), default="numpy",
                        help="buffers for messages and the reduction (cupy: GPU buffers, "
                             "needs CUDA-aware MPI)")
    parser.add_argument("--name", default="calibrated", help="the topology's name")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds before a launched job is killed (default 600)")


def main(args: argparse.Namespace) -> int:
    """Calibrate on this MPI job, or launch one on ``args.ranks`` ranks that does."""
    _check_args(args)
    from collsim.launch import in_mpi_job, relaunch

    if not in_mpi_job():
        return relaunch("calibrate", args, add_arguments, args.ranks, args.timeout)
    from mpi4py import MPI

    check_at_least("the job's ranks (mpirun -n)", MPI.COMM_WORLD.Get_size(), 2)
    xp = _array_module(args.buffer)
    report = calibrate(MPI.COMM_WORLD, xp, args.sizes, args.iters, args.warmup_iters, args.fit,
                       args.name, args.gamma_sizes)
    if report is not None:
        topology, text = report
        save(topology, args.output, comment=text)
        print(text, f"\nwrote {args.output}", sep="\n")
    return 0


def _check_args(args: argparse.Namespace) -> None:
    for name in ("sizes", "gamma_sizes"):
        sizes = getattr(args, name)
        option = "--" + name.replace("_", "-")
        if any(size < 1 for size in sizes):
            raise UsageError(f"{option} {sizes} is not allowed; sizes must be >= 1 byte")
        if len(set(sizes)) < 2:
            raise UsageError(f"{option} {sizes} is not allowed; a line needs at least two "
                             "different sizes")
    check_at_least("-n", args.iters, 1)
    check_at_least("-w", args.warmup_iters, 0)
    check_at_least("--ranks", args.ranks, 2)
    check_at_least("--timeout", args.timeout, 0)
    if args.buffer == "cupy" and importlib.util.find_spec("cupy") is None:
        raise UsageError("--buffer cupy is not allowed here: CuPy is not installed "
                         "(pip install cupy-cuda12x)")
    check_output("--output", args.output)


def _array_module(name: str) -> Any:
    if name == "cupy":
        import cupy

        return cupy
    return np


def _synchronize(xp: Any) -> None:
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()


def fit_line(sizes: Sequence[float], times: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``t = alpha + beta * n`` through the points; return ``(alpha, beta)``.

    ``alpha`` is kept >= :data:`MIN_LATENCY_S` and ``beta`` >= :data:`MIN_BETA_S_PER_BYTE`
    (refitting the other through the points when one is clamped).

    Parameters
    ----------
    sizes : sequence of float
        Message sizes ``n`` in bytes; at least two different values.
    times : sequence of float
        Measured times in seconds, one per size.

    Returns
    -------
    tuple[float, float]
        ``(alpha, beta)``: latency in seconds and seconds per byte.

    Examples
    --------
    >>> alpha, beta = fit_line([0, 100, 200], [2e-6, 3e-6, 4e-6])
    >>> round(alpha * 1e6, 9), round(beta * 1e8, 9)
    (2.0, 1.0)
    """
    n = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    matrix = np.stack([np.ones_like(n), n], axis=1)
    alpha, beta = (float(x) for x in np.linalg.lstsq(matrix, t, rcond=None)[0])
    if alpha < MIN_LATENCY_S:
        alpha = MIN_LATENCY_S
        beta = float(np.dot(n, t - alpha) / np.dot(n, n))
    if beta < MIN_BETA_S_PER_BYTE:
        beta = MIN_BETA_S_PER_BYTE
        alpha = max(MIN_LATENCY_S, float(np.mean(t - beta * n)))
    return alpha, beta


def fit_errors(alpha: float, beta: float, sizes: Sequence[float],
               times: Sequence[float]) -> list[float]:
    """Relative error ``(model - measured) / measured`` at every point.

    Parameters
    ----------
    alpha : float
        Latency of the line, seconds.
    beta : float
        Slope of the line, seconds per byte.
    sizes : sequence of float
        Message sizes in bytes.
    times : sequence of float
        Measured times in seconds, one per size, all non-zero.

    Returns
    -------
    list of float
        One relative error per point.
    """
    return [(alpha + beta * n - t) / t for n, t in zip(sizes, times)]


def measure_pair(comm: Any, a: int, b: int, buffers: Sequence[Any], iters: int,
                 warmup: int, clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Ping-pong between ranks ``a`` and ``b``; return the one-way time per buffer on ``a``.

    The one-way time is half the median round trip. Ranks other than ``a`` and ``b`` return
    an empty list at once.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator holding both ranks.
    a : int
        The rank that sends first and whose times count.
    b : int
        The rank that echoes.
    buffers : sequence of array
        One message buffer per size (received into in place).
    iters : int
        Timed round trips per buffer.
    warmup : int
        Untimed round trips per buffer first.
    clock : callable, optional
        Returns the time in seconds; default :func:`time.perf_counter`.

    Returns
    -------
    list of float
        One-way seconds per buffer (on ``b`` too; empty on other ranks).
    """
    rank = comm.Get_rank()
    if rank not in (a, b):
        return []
    peer = b if rank == a else a
    one_way = []
    for buffer in buffers:
        trips = []
        for i in range(warmup + iters):
            start = clock()
            if rank == a:
                comm.Send(buffer, dest=peer, tag=_TAG)
                comm.Recv(buffer, source=peer, tag=_TAG)
            else:
                comm.Recv(buffer, source=peer, tag=_TAG)
                comm.Send(buffer, dest=peer, tag=_TAG)
            if i >= warmup:
                trips.append(clock() - start)
        one_way.append(statistics.median(trips) / 2)
    return one_way


def measure_gamma(xp: Any, sizes: Sequence[int], iters: int) -> tuple[float, float]:
    """Time ``a += b`` on float32 arrays of ``xp``; return ``(gamma_s_per_byte, max error)``.

    Gamma is the slope of the least-squares line (:func:`fit_line`) through the median
    times per size (bytes of one operand); the error is the largest relative error of
    that line at a point.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    sizes : sequence of int
        Operand sizes in bytes (rounded down to whole float32, at least one element).
    iters : int
        Timed reductions per size.

    Returns
    -------
    tuple[float, float]
        ``(gamma_s_per_byte, max relative error)``.
    """
    times = []
    for size in sizes:
        count = max(1, size // 4)
        a, b = xp.ones(count, dtype=xp.float32), xp.ones(count, dtype=xp.float32)
        xp.add(a, b, out=a)
        _synchronize(xp)
        samples = []
        for _ in range(iters):
            start = time.perf_counter()
            xp.add(a, b, out=a)
            _synchronize(xp)
            samples.append(time.perf_counter() - start)
        times.append(statistics.median(samples))
    nbytes = [4 * max(1, size // 4) for size in sizes]
    alpha, gamma = fit_line(nbytes, times)
    return gamma, max(abs(e) for e in fit_errors(alpha, gamma, nbytes, times))


def calibrate(comm: Any, xp: Any, sizes: Sequence[int], iters: int, warmup: int = 2,
              fit: str = "pair", name: str = "calibrated",
              gamma_sizes: Sequence[int] = DEFAULT_GAMMA_SIZES) -> tuple[Topology, str] | None:
    """Measure every pair and gamma on ``comm``; on rank 0 return the topology and a report.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The ranks to calibrate (at least 2).
    xp : module
        ``numpy`` or ``cupy``: the buffers' array module.
    sizes : sequence of int
        Message sizes in bytes.
    iters : int
        Timed round trips per size and pair (and timed reductions per gamma size).
    warmup : int, optional
        Untimed round trips per size and pair first; default 2.
    fit : {"pair", "class"}, optional
        One line per pair of ranks, or one per class (same host, across hosts).
    name : str, optional
        The topology's name.
    gamma_sizes : sequence of int, optional
        Operand sizes in bytes for timing the reduction.

    Returns
    -------
    (Topology, str) or None
        On rank 0 the model and the report text (fits and their errors); None elsewhere.

    Raises
    ------
    ValueError
        When ``comm`` has fewer than 2 ranks or ``fit`` is not ``"pair"`` or ``"class"``.
    """
    nranks = comm.Get_size()
    if nranks < 2:
        raise ValueError(f"calibrate needs at least 2 ranks to measure a pair; got {nranks}")
    if fit not in ("pair", "class"):
        raise ValueError(f"fit={fit!r} is not allowed; choose 'pair' or 'class'")
    buffers = [xp.zeros(size, dtype=xp.uint8) for size in sizes]
    _synchronize(xp)
    mine = {}
    for a in range(nranks):
        for b in range(a + 1, nranks):
            comm.Barrier()
            times = measure_pair(comm, a, b, buffers, iters, warmup)
            if comm.Get_rank() == a:
                mine[(a, b)] = times
    gamma = measure_gamma(xp, gamma_sizes, iters)
    gathered = comm.gather((socket.gethostname(), mine, gamma), root=0)
    if comm.Get_rank() != 0:
        return None
    hosts = [host for host, _, _ in gathered]
    measured = {pair: times for _, pairs, _ in gathered for pair, times in pairs.items()}
    gammas = [gamma for _, _, gamma in gathered]
    return _model(name, hosts, list(sizes), measured, fit, gammas, xp)


def _rounded(alpha: float, beta: float) -> tuple[float, float]:
    """``(alpha, beta)`` with alpha and the bandwidth ``1 / beta`` to :data:`DIGITS`
    significant digits, so that the file writes both with units."""
    return float(f"{alpha:.{DIGITS}g}"), 1 / float(f"{1 / beta:.{DIGITS}g}")


def _model(name: str, hosts: list[str], sizes: list[int],
           measured: dict[tuple[int, int], list[float]], fit: str,
           gammas: list[tuple[float, float]], xp: Any) -> tuple[Topology, str]:
    def group(pair: tuple[int, int]) -> Any:
        if fit == "pair":
            return pair
        return "same host" if hosts[pair[0]] == hosts[pair[1]] else "across hosts"

    points: dict[Any, tuple[list[int], list[float]]] = {}
    for pair, times in sorted(measured.items()):
        ns, ts = points.setdefault(group(pair), ([], []))
        ns += sizes
        ts += times
    fits = {key: _rounded(*fit_line(ns, ts)) for key, (ns, ts) in points.items()}
    lines = [f"collsim calibrate: {len(hosts)} ranks on {len(set(hosts))} host(s), "
             f"{xp.__name__} buffers, sizes {sizes[0]}..{sizes[-1]} B ({len(sizes)}), "
             f"fit per {fit}",
             f"{'pair' if fit == 'pair' else 'class':>14} {'alpha (us)':>11} "
             f"{'bandwidth (GB/s)':>17} {'max |error|':>12} {'rms error':>10}"]
    poor = []
    for key, (alpha, beta) in fits.items():
        errors = fit_errors(alpha, beta, *points[key])
        rms = float(np.sqrt(np.mean(np.square(errors))))
        label = f"{key[0]}-{key[1]}" if fit == "pair" else key
        worst = max(map(abs, errors))
        lines.append(f"{label:>14} {alpha * 1e6:11.3f} {1 / beta / 1e9:17.3f} "
                     f"{worst:11.1%} {rms:10.1%}")
        if worst > POOR_FIT:
            poor.append(f"{fit} {label} ({worst:.0%})")
    gamma = float(f"{statistics.median(g for g, _ in gammas):.{DIGITS}g}")
    gamma_error = max(error for _, error in gammas)
    lines.append(f"gamma: {gamma * 1e9:.4f} ns/B ({1 / gamma / 1e9 if gamma else float('inf'):.2f}"
                 f" GB/s reduction throughput), median of {len(gammas)} ranks, "
                 f"max |error| {gamma_error:.1%}")
    if gamma_error > POOR_FIT:
        poor.append(f"gamma ({gamma_error:.0%})")
    if poor:
        lines.append(f"warning: poor fit (error above {POOR_FIT:.0%} at some size): "
                     f"{', '.join(poor)}; the times are noisy (other load, more ranks than "
                     "cores) or not a line in the size; try more --iters or other --sizes")
    pairs = {}
    for a, b in sorted(measured):
        alpha, beta = fits[group((a, b))]
        pairs[a, b] = (alpha, float(f"{1 / beta:.{DIGITS}g}"),
                       "host" if hosts[a] == hosts[b] else "net")
    topology = ported(name, "gpu" if xp is not np else "cpu", len(hosts), pairs, gamma)
    return topology, "\n".join(lines)


def ported(name: str, kind: str, nranks: int,
           pairs: dict[tuple[int, int], tuple[float, float, str]],
           gamma: float = 0.0) -> Topology:
    """The measured machine: every pair's latency and bandwidth, through one port per rank.

    A rank sends one message and receives one at a time at full rate, and messages it
    sends (or receives) at once share its port, as on :func:`topology.flat` (the single-port
    model of Thakur, Rabenseifner and Gropp, 2005; a ping-pong measures one message at a
    time, so it cannot tell a port from a link per pair).  Rank ``r`` reaches rank ``s``
    through ``rank{r} -> rank{r}.port -> rank{s}.port -> rank{s}``: the ports' links carry
    a quarter of the least measured latency each and the rank's fastest pair's bandwidth,
    the link between the two ports the rest of the pair's latency and its bandwidth, so
    every route has its pair's measured latency (to rounding) and bandwidth.

    Parameters
    ----------
    name : str
        The topology's name.
    kind : str
        The ranks' device kind (``"cpu"``, ``"gpu"``).
    nranks : int
        Ranks (>= 2): devices ``rank0 ..``, and their ports ``rank0.port ..``.
    pairs : dict
        ``(a, b) -> (alpha_s, bandwidth_Bps, link_kind)`` with ``a < b``, for every pair: the
        fit of both directions.
    gamma : float, optional
        Seconds per byte reduced.

    Returns
    -------
    Topology
    """
    ids = [f"rank{r}" for r in range(nranks)]
    ports = [f"{i}.port" for i in ids]
    edge = min(alpha for alpha, _, _ in pairs.values()) / 4
    fastest = [0.0] * nranks
    links = []
    for (a, b), (alpha, bandwidth, link_kind) in pairs.items():
        fastest[a], fastest[b] = max(fastest[a], bandwidth), max(fastest[b], bandwidth)
        links += [Link(ports[a], ports[b], alpha - 2 * edge, bandwidth, link_kind),
                  Link(ports[b], ports[a], alpha - 2 * edge, bandwidth, link_kind)]
    for i, port, bandwidth in zip(ids, ports, fastest):
        links += [Link(i, port, edge, bandwidth, "port"), Link(port, i, edge, bandwidth, "port")]
    devices = tuple(Device(i, kind) for i in ids) + tuple(Device(p, "port") for p in ports)
    return Topology(name, devices, tuple(links), tuple(ids), gamma)

