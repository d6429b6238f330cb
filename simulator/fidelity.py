"""The model against published nccl-tests curves: read them, predict them, score them.

A curve is one ``all_reduce_perf`` table (``simulator/data/nccl-tests/*.csv``) with its
source, hardware, launch and the algorithm NCCL ran in ``#`` header lines.  Each is
simulated on the DGX preset of its GPU and node count (one set of figures per machine
kind, :mod:`topology.gpu_presets`) with the algorithm and protocol NCCL ran: what the
curve forced (``NCCL_ALGO=Ring``, ``NCCL_PROTO``), the ring on one node (see
:attr:`Curve.nccl_algorithms`), otherwise the faster of ring and double binary tree, each
under the protocol NCCL's own cost model ranks first for it
(:func:`simulator.nccl_tuner.nccl_choice`: NCCL runs what tuning.cc ranks first, not
what is fastest on the machine; see :func:`predict`).  A curve launched with one
process driving 8 GPUs (``-g 8``) is predicted with ``gpus_per_process=8``, and one run
with NCCL settings the GPU model prices (``NCCL_MIN_CTAS``, ``NCCL_IB_QPS_PER_CONNECTION``,
...: :data:`simulator.gpu.SETTINGS`, named in the header's algorithm line) with those
settings (:attr:`Curve.settings`, :func:`machine`).  On several
nodes every candidate runs one channel per NIC of a node over
:func:`topology.channel_orders`, as NCCL's rings and trees use every NIC
(:func:`channel_count`).

Sizes are compared only where NCCL ran what the model has (:data:`RULES` says which
and why, per curve; none today): not rows the source marks as outliers, and from 64 KiB
on for ``-g 8`` curves.  Where NCCL
reduced in the switch (NVLS on one node, NVLSTree on several) the model's NVLS and
NVLSTree (:mod:`simulator.nccl_algorithms`) predict it.

The error of a size is ``|log(predicted / measured)|``; a curve's geomean error is
``exp(mean of those) - 1`` (symmetric: 2x too fast and 2x too slow both count 100%).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import topology

from collectives.build import build_schedule
from topology.channels import nics_per_node

from . import nccl_algorithms
from .channel_choice import schedule_params
from .engine import simulate
from .gpu import SETTINGS, with_settings
from .gpu import protocols as gpu_protocols
from .nccl_tuner import nccl_choice
from .selection import candidates

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["DATA_DIR", "RULES", "Curve", "Rule", "Score", "read_curve", "read_curves",
           "settings_of",
           "machine", "predict", "score", "channel_count", "NCCL_ALGORITHMS", "Disagreement",
           "disagreements"]

#: the published curves, shipped inside the package (``simulator/data/nccl-tests/``)
DATA_DIR: Traversable = resources.files(__package__) / "data" / "nccl-tests"

#: the algorithms NCCL has among the candidates of :func:`simulator.select`
NCCL_ALGORITHMS = ("ring", "tree")

MiB = 1 << 20


@dataclass(frozen=True)
class Rule:
    """Which sizes of a curve are compared, and why others are not.

    Attributes
    ----------
    max_bytes : int
        The largest size compared.
    why : str
        The reason, printed beside the curve ("" when every size is compared).
    """

    max_bytes: int = 1 << 62
    why: str = ""


#: per curve (file stem): what is compared, as the curve's own header states.  None
#: today: the cut-off at 512 MiB of ``a100_2node_roce_default`` (where NCCL's Tree on
#: exactly two nodes exceeds the ring's network limit, from 1 GiB) went once the simulated
#: tree became NCCL's (a chain in each node, a tree across them), which predicts those
#: sizes within 5-13% (issue 29: compare every size NCCL ran what the model has)
RULES: dict[str, Rule] = {}

#: a size that takes this many times as long as the next larger size is an outlier
OUTLIER_RATIO = 2.0
_NAMED_OUTLIER = re.compile(r"the (\d+) MiB row is an outlier")

#: from this size on, a ``-g 8`` curve is compared (the issue's rule: the launch of 8 GPUs
#: from one thread dominates below it)
GROUP_LAUNCH_FROM_BYTES = 64 << 10


@dataclass(frozen=True)
class Curve:
    """One published curve.

    Attributes
    ----------
    name : str
        The file's stem.
    header : dict[str, str]
        The ``# key: value`` lines (``hardware``, ``nccl``, ``algorithm``, ``source``, ...).
    gpu : str
        ``"A100"`` or ``"H100"``.
    nodes, ranks, gpus_per_process : int
        From the header (``ranks: 16, nodes: 2``; ``launch: one process, -g 8``).
    algorithm, protocol : str or None
        What the curve forced (``NCCL_ALGO=Ring`` -> ``"ring"``; ``NCCL_PROTO=LL128``), or
        None for NCCL's default.
    nbytes : tuple of int
        Sizes.
    time_s : tuple of float
        Measured time per size (out of place).
    rule : Rule
        What is compared.
    settings : tuple of (str, str), optional
        The NCCL environment the run was given besides ``NCCL_ALGO`` / ``NCCL_PROTO``
        (``("NCCL_MIN_CTAS", "24")``, ...), sorted; default none (NCCL's defaults).
    """

    name: str
    header: dict[str, str]
    gpu: str
    nodes: int
    ranks: int
    gpus_per_process: int
    algorithm: str | None
    protocol: str | None
    nbytes: tuple[int, ...]
    time_s: tuple[float, ...]
    rule: Rule
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def priced_settings(self) -> tuple[tuple[str, str], ...]:
        """The :attr:`settings` the GPU model prices (:data:`simulator.gpu.SETTINGS`)."""
        return tuple((k, v) for k, v in self.settings if k in SETTINGS)

    @property
    def nccl_algorithms(self) -> tuple[str, ...]:
        """The algorithms the prediction may use: the one the curve forced; on one node
        the ring (NCCL's tree inside a node is a chain, no faster than the ring in
        NCCL's own model, not the double binary tree of :mod:`collectives`); otherwise
        :data:`NCCL_ALGORITHMS`; and NCCL's in-switch ones, ``nccl-nvls`` on one node
        and ``nccl-nvlstree`` on several (:mod:`simulator.nccl_algorithms`), where the
        header's algorithm line says NCCL ran NVLS (``h100_1node_dgx_default_nvls``,
        ``h100_2node_default_nccl2.26.2``).  Unstated, they are not assumed: on the
        8-node H100 curves NCCL's model ranks NVLSTree first from 64 MiB, but which
        algorithm ran there is not published, and the model's NVLSTree, without the
        fill of NCCL's tree of chunks across 8 nodes, is 19-43% below them at 64-512
        MiB, where the simulated tree meets them."""
        if self.algorithm is not None:
            return (self.algorithm,)
        switch = ("nccl-nvls",) if self.nodes == 1 else ("nccl-nvlstree",)
        named = switch if "nvls" in self.header.get("algorithm", "").lower() else ()
        return ("ring", *named) if self.nodes == 1 else (*NCCL_ALGORITHMS, *named)

    @property
    def outliers(self) -> tuple[int, ...]:
        """Sizes the header calls outliers (``the 8 MiB row is an outlier``), and sizes
        that took more than :data:`OUTLIER_RATIO` times as long as the next larger size
        (hiccups of the run, not properties of the machine)."""
        t = self.time_s
        named = {int(m) << 20 for m in _NAMED_OUTLIER.findall(self.header.get("source", ""))}
        return tuple(n for i, n in enumerate(self.nbytes)
                     if n in named or (i + 1 < len(t) and t[i] > OUTLIER_RATIO * t[i + 1]))

    @property
    def compared(self) -> tuple[bool, ...]:
        """Whether each size is compared (see :data:`RULES` and :attr:`outliers`)."""
        low = GROUP_LAUNCH_FROM_BYTES if self.gpus_per_process > 1 else 0
        skip = set(self.outliers)
        return tuple(low <= n <= self.rule.max_bytes and n not in skip for n in self.nbytes)

    @property
    def why(self) -> str:
        """Why some sizes are not compared ("" when all are)."""
        notes = [self.rule.why] if self.rule.why else []
        if self.outliers:
            notes.append(f"outliers (named by the source, or {OUTLIER_RATIO:g}x the next "
                         "size's time): "
                         + ", ".join(f"{n} B" for n in self.outliers))
        if self.gpus_per_process > 1:
            notes.append(f"-g {self.gpus_per_process}: compared from 64 KiB")
        return "; ".join(notes)


def _header(lines: list[str]) -> dict[str, str]:
    header = {}
    for line in lines:
        key, _, value = line.lstrip("# ").partition(":")
        if value:
            header[key.strip()] = value.strip()
    return header


_SETTING = re.compile(r"\b(NCCL_[A-Z0-9_]+)=([^\s,;]+)")


def settings_of(text: str) -> tuple[tuple[str, str], ...]:
    """The ``NCCL_X=value`` settings ``text`` names, besides ``NCCL_ALGO`` and
    ``NCCL_PROTO``, sorted (the last value of a name repeated).

    Parameters
    ----------
    text : str
        E.g. a curve's algorithm line or a command line.

    Returns
    -------
    tuple of (str, str)

    Examples
    --------
    >>> settings_of("NCCL_ALGO=Ring, NCCL_MIN_CTAS=24, NCCL_IB_QPS_PER_CONNECTION=2")
    (('NCCL_IB_QPS_PER_CONNECTION', '2'), ('NCCL_MIN_CTAS', '24'))
    """
    found = {k: v for k, v in _SETTING.findall(text) if k not in ("NCCL_ALGO", "NCCL_PROTO")}
    return tuple(sorted(found.items()))


def _forced(algorithm: str, key: str) -> str | None:
    """The value of ``key=`` in an algorithm line that starts with the settings."""
    if algorithm.startswith("NCCL default"):
        return None
    for part in algorithm.replace(",", " ").split():
        if part.startswith(f"{key}="):
            return part.split("=", 1)[1]
    return None


def read_curve(path: str | Path | Traversable) -> Curve:
    """Read one curve file.

    Parameters
    ----------
    path : str, Path or Traversable
        A CSV with ``#`` header lines and columns ``bytes,time_us,...`` (a file of
        :data:`DATA_DIR` is a resource of the installed package).

    Returns
    -------
    Curve

    Raises
    ------
    ValueError
        If the header names no A100 or H100, or lacks ``ranks`` and ``nodes``.
    """
    path = Path(path) if isinstance(path, str) else path
    text = path.read_text(encoding="utf-8").splitlines()
    header = _header([line for line in text if line.startswith("#")])
    gpu = next((g for g in ("A100", "H100") if g in header.get("hardware", "")), None)
    if gpu is None:
        raise ValueError(f"{path}: hardware = {header.get('hardware')!r} names no A100 or H100")
    try:
        ranks = int(header["ranks"].split(",")[0])
        nodes = int(header["ranks"].split("nodes:")[1])
    except (KeyError, IndexError, ValueError):
        raise ValueError(f"{path}: the header must have 'ranks: R, nodes: N'") from None
    launch = header.get("launch", "")
    per_process = int(launch.split("-g", 1)[1].split()[0]) if "-g" in launch else 1
    algorithm = _forced(header.get("algorithm", ""), "NCCL_ALGO")
    rows = list(csv.DictReader(line for line in text if not line.startswith("#")))
    stem = path.name.removesuffix(".csv")
    return Curve(stem, header, gpu, nodes, ranks, per_process,
                 algorithm.lower() if algorithm else None,
                 _forced(header.get("algorithm", ""), "NCCL_PROTO"),
                 tuple(int(r["bytes"]) for r in rows),
                 tuple(float(r["time_us"]) * 1e-6 for r in rows),
                 RULES.get(stem, Rule()), settings_of(header.get("algorithm", "")))


def read_curves(directory: str | Path | Traversable = DATA_DIR) -> list[Curve]:
    """Every curve in ``directory`` (``*.csv``), by name.

    Parameters
    ----------
    directory : str, Path or Traversable, optional
        Default :data:`DATA_DIR`, the curves installed with the package.

    Returns
    -------
    list of Curve
    """
    folder = Path(directory) if isinstance(directory, str) else directory
    return [read_curve(path) for path in sorted(folder.iterdir(), key=lambda p: p.name)
            if path.name.endswith(".csv")]


def machine(curve: Curve, model: Any = None) -> topology.Topology:
    """The preset of ``curve``'s GPU and node count, launched and set as the curve was.

    Parameters
    ----------
    curve : Curve
        The curve.
    model : topology.GpuModel, optional
        GPU figures in place of the preset's (e.g. fitted to the cluster's own logs,
        :mod:`collsim.fit`), with NCCL's default settings; default the preset's.

    Returns
    -------
    topology.Topology
        :func:`topology.dgx_a100` or :func:`topology.dgx_h100` of ``curve.nodes`` nodes,
        its GPU model with ``gpus_per_process`` of the curve and the curve's settings
        (:func:`simulator.gpu.with_settings`).

    Raises
    ------
    ValueError
        As :func:`simulator.gpu.with_settings`, for a setting out of NCCL's range.
    """
    build, preset = ((topology.dgx_a100, topology.DGX_A100_GPU) if curve.gpu == "A100"
                     else (topology.dgx_h100, topology.DGX_H100_GPU))
    chosen = with_settings(preset if model is None else model, dict(curve.settings))
    return build(curve.nodes, gpu_model=dataclasses.replace(
        chosen, gpus_per_process=curve.gpus_per_process))


def predict(curve: Curve, target: Any = None, only: Sequence[str] | None = None,
            engine: str = "auto") -> list[tuple[str, str | None, float]]:
    """Predict the sizes of ``curve`` with what NCCL ran, channels as NCCL's.

    Parameters
    ----------
    curve : Curve
        The curve.
    target : topology.Topology, optional
        The machine (default :func:`machine` of ``curve``: the preset).
    only : sequence of str, optional
        Per size, the label of the one candidate to simulate (as this function returned
        it, with its protocol: ``"ring x8 LL128"``), in place of trying each: what a fit
        that holds the choice steady needs (default: try each).
    engine : str, optional
        :func:`simulator.simulate`'s engine (default ``"auto"``; ``"compiled"`` gives
        the same times, faster on many ranks once compiled).

    Returns
    -------
    list of (str, str or None, float)
        Per size: the candidate's label (with ``xC`` for ``C`` channels), its protocol
        and the predicted seconds.

    Notes
    -----
    Each algorithm runs under the protocol NCCL's own model ranks first for it,
    :func:`simulator.nccl_tuner.nccl_choice` (tuning.cc), among what the curve left (its
    forced protocol): NCCL runs what its model ranks first, not what is fastest on the
    machine (on 8x A100 it runs LL128 from 4 to 16 MiB, slower there than Simple).  The
    algorithm is the one the curve forced, the ring on one node, and otherwise the
    least simulated time of ring and tree, :func:`simulator.select`'s rule: NCCL's
    ranking of its own tree does not carry over (when the simulator's tree was a double
    binary tree over all ranks, taking NCCL's algorithm too made the 8-node H100 curves
    fall from 12% to 22%; measured again with NCCL's tree over nodes, a chain in each,
    which ``schedule_params`` gives it on several nodes: from 128 MiB to 1 GiB NCCL's
    model ranks the tree first and the simulated tree is 20-50% slower than measured,
    the ring within 8%).  The rule errs where NCCL ran the slower one: on
    ``a100_2node_roce_default`` at 512 MiB the simulated tree (Simple) is 25% fast, where
    the measured busbw stays at 256 MiB's (166 GB/s in place) and NCCL 2.19.3's model
    ranks Tree Simple first only from 1 GiB (:mod:`simulator.nccl_tuner`: the release's
    constants), where the busbw jumps to 219 GB/s.  Each
    size is simulated, unverified (:func:`collectives.build_schedule` made the schedule
    and the tests verify what it makes; verifying the 1,024-rank ring of 8 channels takes
    about three times as long as simulating it); on several nodes every candidate runs
    :func:`channel_count` channels over :func:`topology.channel_orders`
    (:func:`simulator.channel_choice.schedule_params`), as NCCL runs a channel per NIC.
    NCCL's in-switch algorithms (NVLS, NVLSTree; Simple), which no schedule runs,
    predict the sizes where NCCL's own model ranks them first (NCCL runs them there),
    priced in closed form (:mod:`simulator.nccl_algorithms`).
    """
    target = machine(curve) if target is None else target
    channels = channel_count(target)
    tried = [(a, schedule_params(a, (*p, ("channels", channels)), target), _label(a, p))
             for a, p in candidates("allreduce") if a in curve.nccl_algorithms]
    protocols = tuple(k for k in gpu_protocols(target)
                      if k is not None and curve.protocol in (None, k))
    switch = _switch_predictions(curve, target, protocols)
    ranked = tuple(nccl_algorithms.NCCL_NAMES.get(a, a) for a in curve.nccl_algorithms)

    def named(label: str) -> str:
        return f"{label} x{channels}" if channels > 1 else label

    out: list[tuple[str, str | None, float]] = []
    for i, n in enumerate(curve.nbytes):
        first = nccl_choice(curve.gpu, n, curve.ranks, curve.nodes, ranked, protocols)[0]
        runs = [a for a in switch if nccl_algorithms.NCCL_NAMES[a] == first]
        if runs and (only is None or only[i] == f"{runs[0]} Simple"):
            out.append((runs[0], "Simple", float(switch[runs[0]][i])))
            continue
        chosen = {a: nccl_choice(curve.gpu, n, curve.ranks, curve.nodes, (a,), protocols)[1]
                  for a in curve.nccl_algorithms if a in NCCL_ALGORITHMS}
        run = [(a, params, label) for a, params, label in tried
               if only is None or only[i] == f"{named(label)} {chosen[a]}"]
        if not run:
            assert only is not None  # every candidate runs when only is None
            raise ValueError(f"only[{i}] = {only[i]!r} is not allowed at {n} B; it must be "
                             f"one of {[f'{named(l)} {chosen[a]}' for a, _, l in tried][:4]}")
        seconds, label, k = min(
            (simulate(build_schedule("allreduce", a, curve.ranks, n // 4, **params), target,
                      trace=False, protocol=chosen[a], engine=engine, verify=False).time_s,
             named(label), chosen[a])
            for a, params, label in run)
        out.append((label, k, seconds))
    return out


def _switch_predictions(curve: Curve, target: Any,
                        protocols: tuple[str | None, ...]) -> dict[str, Any]:
    """The seconds per size of NCCL's in-switch algorithms the curve may use
    (:attr:`Curve.nccl_algorithms`) where NCCL runs them on ``target`` (Simple only)."""
    if "Simple" not in protocols:
        return {}
    return {a: nccl_algorithms.nccl_costs("allreduce", a, target, curve.nbytes)
            for a in curve.nccl_algorithms if a in nccl_algorithms.ALGORITHMS
            and nccl_algorithms.available("allreduce", a, target)}


def channel_count(target: Any) -> int:
    """The channels NCCL runs on ``target``: one per NIC of a node (1 on one node).

    Parameters
    ----------
    target : Topology
        The machine.

    Returns
    -------
    int

    Examples
    --------
    >>> import topology
    >>> channel_count(topology.dgx_h100(2)), channel_count(topology.dgx_h100(1))
    (8, 1)
    """
    return max(1, nics_per_node(target))


def _label(algorithm: str, params: tuple[tuple[str, Any], ...]) -> str:
    inner = ",".join(f"{k}={v}" for k, v in params)
    return f"{algorithm}({inner})" if inner else algorithm


@dataclass(frozen=True)
class Score:
    """How well a curve is predicted over its compared sizes.

    Attributes
    ----------
    geomean : float
        Geomean error (see the module docstring), over every compared size.
    geomean_small : float or None
        The same below 1 MiB, where latencies and the cost per call dominate (None when
        no compared size is that small).
    geomean_large : float or None
        The same from 64 MiB on (None when no compared size is that large).
    worst_bytes : int
        The compared size with the largest error.
    worst : float
        Its error, ``predicted / measured - 1``.
    compared : int
        Sizes compared.
    """

    geomean: float
    geomean_small: float | None
    geomean_large: float | None
    worst_bytes: int
    worst: float
    compared: int


def score(curve: Curve, predicted_s: list[float]) -> Score:
    """Score ``predicted_s`` (one per size) against ``curve``.

    Parameters
    ----------
    curve : Curve
        The measured curve.
    predicted_s : list of float
        Predicted seconds per size of the curve.

    Returns
    -------
    Score

    Raises
    ------
    ValueError
        If the lengths differ or no size is compared.
    """
    if len(predicted_s) != len(curve.nbytes):
        raise ValueError(f"predicted_s has {len(predicted_s)} values; it must have one per "
                         f"size of {curve.name} ({len(curve.nbytes)})")
    logs = [(n, math.log(p / m)) for n, p, m, keep
            in zip(curve.nbytes, predicted_s, curve.time_s, curve.compared) if keep]
    if not logs:
        raise ValueError(f"curve {curve.name} compares no size")
    worst_bytes, worst = max(logs, key=lambda item: abs(item[1]))
    overall = _geomean([e for _, e in logs])
    assert overall is not None, "logs is not empty"
    return Score(overall, _geomean([e for n, e in logs if n < MiB]),
                 _geomean([e for n, e in logs if n >= 64 * MiB]), worst_bytes,
                 math.expm1(worst), len(logs))


def _geomean(logs: list[float]) -> float | None:
    """``exp(mean |log|) - 1`` of log ratios; None for none."""
    return math.exp(sum(abs(e) for e in logs) / len(logs)) - 1 if logs else None


@dataclass(frozen=True)
class Disagreement:
    """Two curves of one machine kind (GPU, node count, what NCCL was told to run) at the
    sizes both compare.

    Attributes
    ----------
    first, second : str
        The curves' names.
    nbytes : tuple of int
        The sizes both compare.
    ratios : tuple of float
        ``second``'s time over ``first``'s at each of them.
    """

    first: str
    second: str
    nbytes: tuple[int, ...]
    ratios: tuple[float, ...]

    @property
    def spread(self) -> float:
        """The largest ``|log ratio|`` as a fraction: 0.3 when one is 1.3x the other."""
        return math.expm1(max(abs(math.log(r)) for r in self.ratios))


def disagreements(curves: list[Curve]) -> list[Disagreement]:
    """Every pair of curves on the same GPU and node count that forced the same algorithm
    and protocol (or neither), at the sizes both compare.

    A model with one set of figures per machine kind cannot be nearer to both curves of
    a pair than half their spread; the benchmark prints these beside its scores.

    Parameters
    ----------
    curves : list of Curve
        The curves.

    Returns
    -------
    list of Disagreement
        One per pair with a size in common, in the order of ``curves``.
    """
    out = []
    for i, a in enumerate(curves):
        for b in curves[i + 1:]:
            if (a.gpu, a.nodes, a.algorithm, a.protocol) != (b.gpu, b.nodes, b.algorithm,
                                                              b.protocol):
                continue
            times_a = {n: t for n, t, k in zip(a.nbytes, a.time_s, a.compared) if k}
            common = [(n, t / times_a[n]) for n, t, k in zip(b.nbytes, b.time_s, b.compared)
                      if k and n in times_a]
            if common:
                out.append(Disagreement(a.name, b.name, tuple(n for n, _ in common),
                                        tuple(r for _, r in common)))
    return out
