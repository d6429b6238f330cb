"""Fitting the host model to measured times: the coefficients as a typed :class:`HostFit`.

:func:`fit_calibration` fits ``t = overhead + alpha S + beta(n) B + gamma R + o O + kappa L``
(the terms of :func:`.model.model_terms`) to the calibration runs' times by least relative
error (:func:`fit_relative`), with one ``beta`` per band of working-buffer sizes
(:data:`BAND_BYTES`, blended by :func:`band_weights`); :func:`predicted_time` is the time
the fit gives a run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from .model import Job, available_cores, model_terms

__all__ = ["BAND_BYTES", "CALIBRATION_SIZES", "HostFit", "band_weights", "fit_calibration",
           "fit_relative", "predicted_time"]

#: whole-vector sizes of the calibrating ring AllGather: 1 KiB .. 16 MiB
CALIBRATION_SIZES = tuple(1024 * 4**k for k in range(8))

def fit_relative(columns: list[list[float]], times: list[float],
                 rounds: int = 20) -> list[float]:
    """Non-negative least-relative-error coefficients of ``t = sum(c[k] * columns[k])``.

    Minimises the sum of the *relative* errors' magnitudes (small times weigh as much as
    large ones, and a few times inflated by other load on the machine pull less than in
    least squares) by iteratively reweighted least squares, ``rounds`` rounds; a
    coefficient the fit drives below zero is dropped and the rest refitted (then
    reported as 0).

    Parameters
    ----------
    columns : list of list of float
        One regressor per coefficient, each with one value per time.
    times : list of float
        Measured times, all positive.
    rounds : int, optional
        Reweighting rounds per fit; default 20.

    Returns
    -------
    list of float
        One coefficient per column, each >= 0.
    """
    t = np.asarray(times, dtype=np.float64)
    keep = list(range(len(columns)))
    while True:
        matrix = np.stack([np.asarray(columns[k], dtype=np.float64) / t for k in keep], axis=1)
        weights = np.ones_like(t)
        for _ in range(rounds):
            fitted = np.linalg.lstsq(matrix * weights[:, None], weights, rcond=None)[0]
            weights = 1 / np.sqrt(np.maximum(np.abs(matrix @ fitted - 1), 1e-3))
        if (fitted >= 0).all() or len(keep) == 1:
            coefficients = [0.0] * len(columns)
            for k, value in zip(keep, fitted):
                coefficients[k] = max(float(value), 0.0)
            return coefficients
        keep.pop(int(np.argmin(fitted)))


#: the calibration fits one seconds-per-byte per band of working-buffer sizes: these
#: sizes (every other calibration size, 4 KiB .. 16 MiB) are the bands' centres, and a
#: size between two centres is predicted by blending their models (:func:`band_weights`).
#: The host's copy throughput depends on the size: buffers that fit the caches move faster
#: than buffers that stream from memory
BAND_BYTES: tuple[int, ...] = CALIBRATION_SIZES[1::2]


def band_weights(nbytes: int) -> list[float]:
    """Weight of each band of :data:`BAND_BYTES` at a working buffer of ``nbytes``.

    Linear in ``log2(nbytes)`` between two neighbouring bands' sizes (a tent per band);
    below the first size all weight is on the first band, above the last on the last.

    Parameters
    ----------
    nbytes : int
        Bytes of the working buffer (the AllReduce vector, ReduceScatter input or
        AllGather output), >= 1.

    Returns
    -------
    list of float
        One weight per band, each in [0, 1], summing to 1.

    Raises
    ------
    ValueError
        If ``nbytes`` is below 1.

    Examples
    --------
    >>> band_weights(4096), band_weights(16384)
    ([1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0])
    """
    if nbytes < 1:
        raise ValueError(f"nbytes={nbytes!r} is not allowed; it must be >= 1")
    x = math.log2(min(max(nbytes, BAND_BYTES[0]), BAND_BYTES[-1]))
    knots = [math.log2(b) for b in BAND_BYTES]
    weights = [0.0] * len(knots)
    k = min(max(i for i, knot in enumerate(knots) if knot <= x), len(knots) - 2)
    upper = (x - knots[k]) / (knots[k + 1] - knots[k])
    weights[k], weights[k + 1] = 1.0 - upper, upper
    return weights


@dataclass(frozen=True)
class HostFit:
    """The calibrated host: the coefficients of the host model, fitted to measured times.

    Attributes
    ----------
    overhead_s : float
        Per-call overhead of the executor, seconds (argument checks, plan lookup, barrier
        exit skew), the same for every algorithm.
    alpha_s : float
        Latency per step on the critical path, seconds.
    beta_s_per_byte : tuple of float
        Seconds per byte the host copies, all messages together; one per band of
        ``band_bytes``.
    band_bytes : tuple of int
        The bands' centres, bytes of the working buffer (:data:`BAND_BYTES`).
    gamma_s_per_byte : float
        Seconds per byte reduced, all ranks together.
    overhead_s_per_message : float
        CPU time per message at each end (LogGP's ``o``), seconds, every rank busy.
    copy_s_per_byte : float
        Seconds per byte of the executor's local copies around the schedule, per core
        (kappa).
    cores : int
        Cores the ranks shared.
    fit_error : float
        The largest relative error of the fitted model, simulated, on the calibration runs.
    """

    overhead_s: float
    alpha_s: float
    beta_s_per_byte: tuple[float, ...]
    band_bytes: tuple[int, ...]
    gamma_s_per_byte: float
    overhead_s_per_message: float
    copy_s_per_byte: float
    cores: int
    fit_error: float

    def __post_init__(self) -> None:
        if len(self.beta_s_per_byte) != len(self.band_bytes):
            raise ValueError(f"beta_s_per_byte has {len(self.beta_s_per_byte)} values but "
                             f"band_bytes {len(self.band_bytes)}; they must match")

    def to_dict(self) -> dict[str, Any]:
        """Every figure of the fit, for JSON.

        Returns
        -------
        dict[str, Any]
            One key per attribute, in their order; the tuples as lists.

        Examples
        --------
        >>> fit = HostFit(8e-5, 2e-6, (1e-9,), (4096,), 1e-10, 5e-6, 2e-10, 2, 0.01)
        >>> fit.to_dict()["beta_s_per_byte"], list(fit.to_dict())[-2:]
        ([1e-09], ['cores', 'fit_error'])
        """
        return {key: list(value) if isinstance(value, tuple) else value
                for key, value in asdict(self).items()}


def predicted_time(fit: HostFit, terms: list[float], nbytes: int) -> float:
    """The time the calibrated host model gives a run of ``terms``, without the per-call
    overhead.

    Parameters
    ----------
    fit : HostFit
        A fit from :func:`fit_calibration`.
    terms : list of float
        ``[S, B, R, O, L]`` of the run (:func:`.model.model_terms`).
    nbytes : int
        Bytes of the working buffer (chooses the bands' betas, :func:`band_weights`).

    Returns
    -------
    float
        Seconds.
    """
    latency, moved, reduced, messages, copied = terms
    beta = sum(w * b for w, b in zip(band_weights(nbytes), fit.beta_s_per_byte))
    return (fit.alpha_s * latency + beta * moved + fit.gamma_s_per_byte * reduced
            + fit.overhead_s_per_message * messages + fit.copy_s_per_byte * copied)


def fit_calibration(nranks: int, runs: list[Job], times: list[float],
                    cores: int | None = None) -> HostFit:
    """Fit the host model to the measured ``times`` of ``runs``.

    Each run costs about ``alpha S + beta B + gamma R + o O + kappa L``
    (:func:`.model.model_terms`), so a fit of
    ``t = overhead + alpha S + beta(n) B + gamma R + o O + kappa L`` (:func:`fit_relative`,
    with ``beta(n)`` one coefficient per band of working-buffer sizes ``n``, blended by
    :func:`band_weights`) separates the per-call overhead (argument checks, plan lookup,
    barrier exit skew) from the per-step latency, the per-byte cost of moving (per band:
    cache-resident buffers move faster than memory-bound ones), of reducing (scratch
    receive and ``np.add``) and of the local copies around the schedule (told apart by
    the runs made in place) and the CPU time each message costs the rank that posts and
    completes it (request objects, matching, progress), with the Python executor's costs
    and the sharing of cores included.

    Parameters
    ----------
    nranks : int
        Number of ranks the runs used.
    runs : list of Job
        The runs, as from :func:`.measurement.calibration_jobs`.
    times : list of float
        Measured seconds per call, one per run.
    cores : int or None, optional
        Cores the ranks shared (:func:`.measurement.job_cores`); default None: those this
        process may run on.

    Returns
    -------
    HostFit
        The fitted coefficients and the largest relative error on ``runs``.
    """
    p, cores = nranks, available_cores() if cores is None else cores
    terms = [model_terms(c, a, p, n, params, cores) for c, n, a, params in runs]
    rows = [[1.0, latency, *(moved * w for w in band_weights(n)), reduced, messages, copied]
            for (latency, moved, reduced, messages, copied), (_, n, _, _) in zip(terms, runs)]
    overhead, alpha, *betas, gamma, o, kappa = fit_relative([list(c) for c in zip(*rows)],
                                                            times)
    fit = HostFit(overhead, alpha, tuple(betas), BAND_BYTES, gamma, o, kappa, cores, 0.0)
    return replace(fit, fit_error=max(
        abs((overhead + predicted_time(fit, run_terms, n)) / t - 1)
        for run_terms, (_, n, _, _), t in zip(terms, runs, times)))
