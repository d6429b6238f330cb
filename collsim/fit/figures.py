"""Fit the GPU model of a preset to a cluster's own nccl-tests curves.

The figures fitted (:data:`FIGURES`), each bounded around the preset's sourced value
(:mod:`topology.gpu_presets`):

* ``launch``: the host's cost per call (``GpuModel.launch_s``), added to every protocol's
  setup;
* ``latency <kind> <protocol>``: a factor on the preset's latency per link crossed, per
  protocol, for ``nvlink`` and for ``network`` (the ``ib`` links and the ``pcie`` post
  overhead together: every network hop crosses both, so no log tells them apart), the
  tree's own latencies on those kinds scaled alike;
* ``efficiency <kind>``: the achievable fraction of the ``nvlink`` and ``ib`` line rates;
* ``flow ib``: a factor on the preset's rate of one network flow at a NIC
  (:attr:`topology.LinkFigures.flow_Bps`; held where the preset has none).

These are figures of the machine, held across NCCL's settings: a curve run with
``NCCL_MIN_CTAS`` or ``NCCL_IB_QPS_PER_CONNECTION`` (:attr:`simulator.fidelity.Curve.settings`)
is predicted with those settings applied to the figures (:func:`simulator.gpu.with_settings`:
more channels and queue pairs are more flows per NIC), so a fit to a run with NCCL's
defaults predicts a tuned run, and the other way round.

The protocols' bandwidth fractions (LL's, LL128's) are left at the preset's: fitted too,
on one curve they moved to their bounds to meet sizes of one node count and made the
others worse (``benchmarks/bench_fit.py``, every figure free: fitted on the 2-node Ring
curve, the 8-node tuned one was predicted 12.3% off with them, 10.3% without; the preset
7.6%).

Each curve is predicted as :func:`simulator.fidelity.predict` predicts the published ones
(what NCCL ran, a channel per NIC), and the fit minimises the squared log errors of the
compared sizes (``log(predicted / measured)``) plus a weak pull of every figure towards
the preset's (:data:`PRIOR_WEIGHT`), by :func:`scipy.optimize.least_squares` within the
bounds.  The candidate each size runs (algorithm, segments, protocol) is held while the
figures move and chosen again after each fit, up to :data:`ROUNDS` times.  A figure the
curves do not constrain stays at the preset's: :attr:`Fit.determined` says how much of
each the data decided (the diagonal of the fit's resolution matrix,
``(J'J + P)^-1 J'J``); a figure below one half is reported as not determined, held at the
preset's and the others fitted again (free, such a figure drifted along a ridge it shares
with others, e.g. the NVLink efficiency of an 8-node curve, 0.87 to 0.74).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import topology
from simulator.gpu import with_settings
from simulator.fidelity import Curve, Rule, Score, machine, predict, score

from .logs import Log, LogError

__all__ = ["ENGINE", "FIGURES", "PRIOR_WEIGHT", "ROUNDS", "Figure", "Fit", "curve_of",
           "preset_of", "apply", "fit", "check"]

#: weight of a figure's pull towards the preset's, per its :attr:`Figure.width`
PRIOR_WEIGHT = 0.05
#: times the candidates are chosen again and the figures refitted
ROUNDS = 3
#: the simulator's engine: the compiled one gives the event engine's times, some ten times
#: faster on 64 ranks of 8 channels (0.03 s against 0.4 s a 1 GiB ring, once compiled)
ENGINE = "compiled"
#: the fitted figures' finite-difference step (in their own scale: log factor, seconds)
_STEP = {"log": 0.1, "seconds": 1e-6}

_PROTOCOLS = ("LL", "LL128", "Simple")


@dataclass(frozen=True)
class Figure:
    """One fitted figure.

    Attributes
    ----------
    name : str
        ``"launch"``, ``"latency nvlink LL"``, ``"efficiency ib"``.
    scale : {"log", "seconds"}
        The fit's coordinate: the log of a factor or efficiency, or seconds.
    width : float
        The prior's width in that coordinate (a change of one width costs
        :data:`PRIOR_WEIGHT`).
    protocol : str or None
        The protocol whose sizes alone it moves (None: every size).
    """

    name: str
    scale: str
    width: float
    protocol: str | None = None


#: the figures :func:`fit` fits, in order
FIGURES: tuple[Figure, ...] = (
    Figure("launch", "seconds", 5e-6),
    *(Figure(f"latency {kind} {p}", "log", math.log(2), p)
      for kind in ("nvlink", "network") for p in _PROTOCOLS),
    Figure("efficiency nvlink", "log", math.log(1.25)),
    Figure("efficiency ib", "log", math.log(1.25)),
    Figure("flow ib", "log", math.log(2)),
)

_LATENCY_BOUND = math.log(4.0)  # latencies, flows: a quarter to four times the preset's
_EFFICIENCY_LOW = 0.5  # efficiencies: half the preset's to 1


def preset_of(gpu: str) -> topology.GpuModel:
    """The preset GPU model of ``gpu`` (``"A100"`` or ``"H100"``).

    Parameters
    ----------
    gpu : str
        As :attr:`simulator.fidelity.Curve.gpu`.

    Returns
    -------
    topology.GpuModel
    """
    return topology.DGX_A100_GPU if gpu == "A100" else topology.DGX_H100_GPU


#: NCCL_ALGO values the model runs (lower case -> ours)
NCCL_ALGOS = {"ring": "ring", "tree": "tree"}
#: NCCL_PROTO values the model runs (lower case -> NCCL's spelling)
NCCL_PROTOS = {p.lower(): p for p in _PROTOCOLS}


def _one(value: str | None, allowed: dict[str, str], flag: str, path: str) -> str | None:
    """The one value of ``allowed`` that ``value`` names; None for none or all of them."""
    if value is None or set(value.lower().split(",")) == set(allowed):
        return None
    if value.lower() not in allowed:
        raise LogError(f"{path}: {flag}={value!r} is not one the model runs; it must be one "
                       f"of {', '.join(sorted(set(allowed.values())))} (or unset: NCCL's "
                       "default)")
    return allowed[value.lower()]


def curve_of(log: Log) -> Curve:
    """The curve :mod:`simulator.fidelity` predicts and scores for ``log``.

    Parameters
    ----------
    log : Log
        An ``all_reduce_perf`` log of A100 or H100 GPUs, 8 per node on several nodes.

    Returns
    -------
    simulator.fidelity.Curve
        Named by the file's stem; ``gpus_per_process`` is nGpus (``-g``); the log's NCCL
        settings (:attr:`Log.settings`), which the prediction applies.

    Raises
    ------
    LogError
        Naming the file and what the model does not cover, or a priced setting
        (:data:`simulator.gpu.SETTINGS`) out of NCCL's range.
    """
    if log.collective != "allreduce":
        raise LogError(f"{log.path}: {log.program} is not fitted; the model's choice of what "
                       "NCCL runs (simulator.nccl_tuner) ranks AllReduce only: give "
                       "all_reduce_perf logs")
    gpu = next((g for g in ("A100", "H100") if g in log.gpu), None)
    if gpu is None:
        raise LogError(f"{log.path}: GPU {log.gpu!r} has no preset; the presets are A100 "
                       "and H100 (topology.dgx_a100, dgx_h100)")
    if log.nodes > 1 and log.ranks_per_node != 8:
        raise LogError(f"{log.path}: {log.ranks_per_node} ranks per node on {log.nodes} "
                       "nodes; the presets have 8 GPUs per node")
    algorithm = _one(log.algo, NCCL_ALGOS, "NCCL_ALGO", log.path)
    protocol = _one(log.proto, NCCL_PROTOS, "NCCL_PROTO", log.path)
    curve = Curve(Path(log.path).stem, {"source": log.path, "hardware": log.gpu}, gpu,
                  log.nodes, log.ranks, log.gpus_per_thread, algorithm, protocol,
                  tuple(r.nbytes for r in log.rows), tuple(r.time_s for r in log.rows), Rule(),
                  log.settings)
    try:
        with_settings(preset_of(gpu), dict(log.settings))
    except ValueError as error:
        raise LogError(f"{log.path}: {error}") from None
    return curve


def _factors(theta: np.ndarray) -> dict[str, float]:
    """Each figure's value: launch in seconds, the others as factors or fractions."""
    return {f.name: float(v) if f.scale == "seconds" else math.exp(v)
            for f, v in zip(FIGURES, theta)}


def _start(preset: topology.GpuModel) -> np.ndarray:
    """The preset's coordinates: its launch, factors of 1, its efficiencies."""
    values = {"launch": preset.launch_s,
              **{f"efficiency {k}": math.log(preset.figures(k).efficiency)
                 for k in ("nvlink", "ib")}}
    return np.array([values.get(f.name, 0.0) for f in FIGURES])


def _bounds(preset: topology.GpuModel) -> tuple[np.ndarray, np.ndarray]:
    """Each figure's bounds around the preset's (see :data:`FIGURES`)."""
    low, high = [], []
    for f, start in zip(FIGURES, _start(preset)):
        kind = f.name.split()[0]
        if kind == "launch":
            bounds = (0.0, max(4 * preset.launch_s, 20e-6))
        elif kind in ("latency", "flow"):
            bounds = (-_LATENCY_BOUND, _LATENCY_BOUND)
        else:
            bounds = (start + math.log(_EFFICIENCY_LOW), 0.0)
        low.append(bounds[0])
        high.append(bounds[1])
    return np.array(low), np.array(high)


def _group(kind: str) -> str:
    return "nvlink" if kind == "nvlink" else "network"


def apply(preset: topology.GpuModel, values: dict[str, float]) -> topology.GpuModel:
    """``preset`` with the fitted figures ``values`` (:attr:`Fit.values`).

    Parameters
    ----------
    preset : topology.GpuModel
        The preset's figures.
    values : dict[str, float]
        Per name of :data:`FIGURES`: launch in seconds, efficiencies as fractions, the
        latencies and the flow rate as factors on the preset's.

    Returns
    -------
    topology.GpuModel
    """
    def latency(kind: str, pairs: Any) -> tuple[tuple[str, float], ...]:
        return tuple((p, s * values[f"latency {_group(kind)} {p}"]) for p, s in pairs)

    def flow(figures: topology.LinkFigures) -> float | None:
        factor = values.get(f"flow {figures.kind}", 1.0)
        return None if figures.flow_Bps is None else figures.flow_Bps * factor

    links = tuple(dataclasses.replace(
        f, latency_s=latency(f.kind, f.latency_s), flow_Bps=flow(f),
        efficiency=values.get(f"efficiency {f.kind}", f.efficiency)) for f in preset.links)
    algorithms = tuple(dataclasses.replace(
        a, latency_s=tuple((kind, latency(kind, per)) for kind, per in a.latency_s))
        for a in preset.algorithms)
    return dataclasses.replace(preset, links=links, algorithms=algorithms,
                               launch_s=values["launch"])


@dataclass(frozen=True)
class Fit:
    """A GPU model fitted to curves.

    Attributes
    ----------
    model : topology.GpuModel
        The fitted figures (``gpus_per_process`` the preset's).
    preset : topology.GpuModel
        The figures it started from.
    values : dict[str, float]
        Per name of :data:`FIGURES`: the fitted value (see :func:`apply`).
    determined : dict[str, float]
        Per name: how much of it the curves decided, 0 (the preset's) to 1.
    curves : tuple of Curve
        What it was fitted to.
    predicted : tuple of list
        Per curve, :func:`simulator.fidelity.predict` on the fitted model.
    preset_predicted : tuple of list
        The same on the preset.
    """

    model: topology.GpuModel
    preset: topology.GpuModel
    values: dict[str, float]
    determined: dict[str, float]
    curves: tuple[Curve, ...]
    predicted: tuple[list[tuple[str, str | None, float]], ...]
    preset_predicted: tuple[list[tuple[str, str | None, float]], ...]

    @property
    def undetermined(self) -> tuple[str, ...]:
        """The figures the curves decided less than half of (left near the preset's)."""
        return tuple(n for n, d in self.determined.items() if d < 0.5)

    def scores(self) -> tuple[tuple[Score, Score], ...]:
        """Per curve, the fitted and the preset's :class:`~simulator.fidelity.Score`."""
        return tuple((score(c, [t for *_, t in p]), score(c, [t for *_, t in q]))
                     for c, p, q in zip(self.curves, self.predicted, self.preset_predicted))

    def __repr__(self) -> str:
        return (f"Fit({len(self.curves)} curves, {len(self.values)} figures, "
                f"undetermined {list(self.undetermined)})")


class _Problem:
    """The fit's residuals and Jacobian over the compared sizes, candidates held."""

    def __init__(self, curves: Sequence[Curve], preset: topology.GpuModel) -> None:
        self.preset = preset
        self.parts = [dataclasses.replace(c, nbytes=tuple(n for n, k in zip(c.nbytes, c.compared) if k),
                                          time_s=tuple(t for t, k in zip(c.time_s, c.compared) if k))
                      for c in curves]
        self.start = _start(preset)
        self.only: list[list[str]] = []
        self._cache: dict[tuple[float, ...], np.ndarray] = {}

    def choose(self, theta: np.ndarray) -> list[list[tuple[str, str | None, float]]]:
        """Predict every size with every candidate at ``theta``; hold what wins."""
        model = apply(self.preset, _factors(theta))
        full = [predict(c, machine(c, model), engine=ENGINE) for c in self.parts]
        self.only = [[f"{label} {k}" for label, k, _ in p] for p in full]
        self._cache.clear()
        return full

    def times(self, theta: np.ndarray, which: Sequence[set[int] | None] | None = None) -> list[np.ndarray]:
        """Per curve, seconds at ``theta`` (only the sizes ``which`` names; NaN elsewhere)."""
        model = apply(self.preset, _factors(theta))
        out = []
        for c, only, keep in zip(self.parts, self.only, which or [None] * len(self.parts)):
            picked = range(len(c.nbytes)) if keep is None else sorted(keep)
            t = np.full(len(c.nbytes), np.nan)
            if picked:
                part = dataclasses.replace(c, nbytes=tuple(c.nbytes[i] for i in picked),
                                           time_s=tuple(c.time_s[i] for i in picked))
                t[list(picked)] = [s for *_, s in predict(part, machine(part, model),
                                                          [only[i] for i in picked], ENGINE)]
            out.append(t)
        return out

    def prior(self, theta: np.ndarray) -> np.ndarray:
        widths = np.array([f.width for f in FIGURES])
        return PRIOR_WEIGHT * (theta - self.start) / widths

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        key = tuple(theta)
        if key not in self._cache:
            logs = [np.log(t / np.array(c.time_s)) for c, t in zip(self.parts, self.times(theta))]
            self._cache[key] = np.concatenate([*logs, self.prior(theta)])
        return self._cache[key]

    def _moved(self, figure: Figure) -> list[set[int]]:
        """Per curve, the sizes ``figure`` moves (those under its protocol)."""
        return [{i for i, label in enumerate(only)
                 if figure.protocol is None or label.rsplit(" ", 1)[1] == figure.protocol}
                for only in self.only]

    def jacobian(self, theta: np.ndarray, high: np.ndarray, free: np.ndarray) -> np.ndarray:
        """d residuals / d figure, the ``free`` figures' columns (forward differences)."""
        base = self.residuals(theta)
        sizes = sum(len(c.nbytes) for c in self.parts)
        columns = []
        for j, figure in enumerate(FIGURES):
            column = np.zeros(len(base))
            if not free[j]:
                columns.append(column)
                continue
            if figure.name == "launch":  # added to every size: d log t = dt / t
                column[:sizes] = 1 / np.exp(base[:sizes]) / np.concatenate(
                    [np.array(c.time_s) for c in self.parts])
            else:
                step = _STEP[figure.scale] * (1 if theta[j] + _STEP[figure.scale] <= high[j] else -1)
                moved = theta.copy()
                moved[j] += step
                times = self.times(moved, self._moved(figure))
                logs = np.concatenate([np.log(t / np.array(c.time_s))
                                       for c, t in zip(self.parts, times)])
                have = ~np.isnan(logs)
                column[:sizes][have] = (logs[have] - base[:sizes][have]) / step
            column[sizes + j] = PRIOR_WEIGHT / figure.width
            columns.append(column)
        return np.stack(columns, axis=1)


def _resolution(jacobian: np.ndarray, sizes: int) -> np.ndarray:
    """The diagonal of ``(J'J + P)^-1 J'J``: how much of each figure the data decided."""
    data = jacobian[:sizes]
    prior = np.diag(np.diag(jacobian[sizes:]) ** 2)
    gram = data.T @ data
    return np.clip(np.diag(np.linalg.solve(gram + prior, gram)), 0.0, 1.0)


def _rounds(problem: _Problem, start: np.ndarray, low: np.ndarray, high: np.ndarray,
            free: np.ndarray, max_evaluations: int) -> np.ndarray:
    """Fit the ``free`` figures from ``start`` (the others held), choosing the candidates
    again after each fit, up to :data:`ROUNDS` times; return every figure's coordinate."""
    from scipy.optimize import least_squares

    def full(x: np.ndarray) -> np.ndarray:
        theta = start.copy()
        theta[free] = x
        return theta

    theta = start
    for _ in range(ROUNDS):
        held = list(problem.only)
        result = least_squares(lambda x: problem.residuals(full(x)), theta[free],
                               bounds=(low[free], high[free]), method="trf",
                               jac=lambda x: problem.jacobian(full(x), high, free)[:, free],
                               x_scale=np.array([f.width for f in FIGURES])[free],
                               max_nfev=max_evaluations)
        theta = full(result.x)
        problem.choose(theta)
        if problem.only == held:
            break
    return theta


def fit(curves: Sequence[Curve], max_evaluations: int = 12) -> Fit:
    """Fit the preset of the curves' GPU to ``curves`` (see the module docstring).

    Parameters
    ----------
    curves : sequence of Curve
        One or more curves of one GPU kind (:func:`curve_of`).
    max_evaluations : int, optional
        Evaluations of the residuals per round (default 12).

    Returns
    -------
    Fit

    Raises
    ------
    ValueError
        If ``curves`` is empty, mixes GPU kinds, or compares no size.
    """
    if not curves:
        raise ValueError("curves is empty; give one or more curves to fit")
    kinds = sorted({c.gpu for c in curves})
    if len(kinds) > 1:
        raise ValueError(f"curves of {kinds} are not fitted together; give curves of one GPU")
    preset = preset_of(kinds[0])
    problem = _Problem(curves, preset)
    sizes = sum(len(c.nbytes) for c in problem.parts)
    if not sizes:
        raise ValueError("the curves compare no size")
    low, high = _bounds(preset)
    start = np.clip(problem.start, low, high)
    preset_predicted = tuple(predict(c, machine(c, preset), engine=ENGINE) for c in curves)
    every = np.array([f.name != "flow ib" or preset.figures("ib").flow_Bps is not None
                      for f in FIGURES])
    problem.choose(start)
    theta = _rounds(problem, start, low, high, every, max_evaluations)
    determined = np.zeros(len(FIGURES))
    determined[every] = _resolution(problem.jacobian(theta, high, every)[:, every], sizes)
    decided = (determined >= 0.5) & every
    if not decided.all():  # refit what the curves decide, the rest at the preset's
        problem.choose(start)
        theta = _rounds(problem, start, low, high, decided, max_evaluations)
    model = apply(preset, _factors(theta))
    return Fit(model, preset, _factors(theta),
               {f.name: float(d) for f, d in zip(FIGURES, determined)}, tuple(curves),
               tuple(predict(c, machine(c, model), engine=ENGINE) for c in curves),
               preset_predicted)


def check(curve: Curve, model: topology.GpuModel) -> tuple[list[tuple[str, str | None, float]], Score]:
    """Predict ``curve`` on ``model`` and score it.

    Parameters
    ----------
    curve : Curve
        The measured curve.
    model : topology.GpuModel
        The figures (fitted or a preset's).

    Returns
    -------
    tuple of (list, Score)
        :func:`simulator.fidelity.predict` per size, and its score.
    """
    predicted = predict(curve, machine(curve, model), engine=ENGINE)
    return predicted, score(curve, [t for *_, t in predicted])
