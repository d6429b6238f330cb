"""Predicting with a fit: every candidate's time on the calibrated host, and a topology of it.

:class:`HostPredictor` predicts every candidate of the tuning tables with the whole
:class:`.fitting.HostFit`; :func:`fitted_model` turns a fit into one
:class:`topology.Topology` for :func:`simulator.select` (leaving out what one topology
cannot hold); :func:`calibrated_model` calibrates and builds it in one call
(``collsim bench --topology calibrate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topology.checks import check_int

from .fitting import HostFit, predicted_time
from .measurement import calibrate_loaded
from .model import TINY, host_model, model_terms

__all__ = ["HostPredictor", "calibrated_model", "fitted_model"]

@dataclass(frozen=True)
class HostPredictor:
    """Every candidate's time on the calibrated host, as :func:`.fitting.predicted_time`
    gives it.

    Attributes
    ----------
    collective : str
        The collective.
    nranks : int
        Ranks on the host.
    fit : HostFit
        A fit from :func:`.fitting.fit_calibration`.
    """

    collective: str
    nranks: int
    fit: HostFit

    def choice(self, nbytes: int) -> Any:
        """Every candidate's time at ``nbytes`` and the least, as :class:`simulator.Choice`.

        The candidates are those of the tuning tables (:func:`simulator.selection.candidates`);
        the earliest wins a tie.  The per-call overhead is not included.

        Parameters
        ----------
        nbytes : int
            Bytes of the working buffer, >= 1 (float32 elements: ``nbytes // 4``).

        Returns
        -------
        simulator.Choice
            The predicted best candidate, its time and every candidate's time.
        """
        from simulator.selection import Candidate, Choice, candidates

        tried = candidates(self.collective)
        times = [predicted_time(self.fit, model_terms(self.collective, a, self.nranks, nbytes,
                                                      dict(params), self.fit.cores), nbytes)
                 for a, params in tried]
        best = min(range(len(times)), key=times.__getitem__)
        return Choice(*tried[best], times[best],
                      tuple(Candidate(a, params, t) for (a, params), t in zip(tried, times)))


def fitted_model(nranks: int, fit: HostFit, band: int = -1) -> Any:
    """A :func:`.model.host_model` for :func:`simulator.select` from a calibration ``fit``.

    One topology cannot hold the whole fit: it leaves out the executor's local copies
    (``copy_s_per_byte``, the same for every algorithm); its seconds per byte are those of
    one band, and reductions and per-message CPU time are charged per rank as when every
    rank is busy (a ring step): ``gamma`` times the ranks, ``o`` times the ranks per core
    (at least 1).  :class:`HostPredictor` predicts with the whole fit.

    Parameters
    ----------
    nranks : int
        Ranks on the host.
    fit : HostFit
        A fit from :func:`.fitting.fit_calibration` or
        :func:`.measurement.calibrate_loaded`.
    band : int, optional
        Index into ``fit.band_bytes``: whose seconds per byte the model copies at;
        default -1, the largest.

    Returns
    -------
    topology.Topology
        The host model.

    Raises
    ------
    ValueError
        If ``band`` is not an index of ``fit.beta_s_per_byte``.
    """
    betas = fit.beta_s_per_byte
    check_int(band, "band", -len(betas), len(betas) - 1)
    busy = max(1.0, nranks / fit.cores)
    return host_model(nranks, max(fit.alpha_s, TINY), max(betas[band], TINY),
                      fit.gamma_s_per_byte * nranks, fit.overhead_s_per_message * busy,
                      fit.cores)


def calibrated_model(comm: Any, iters: int, warmup: int) -> tuple[Any, HostFit]:
    """Calibrate on ``comm`` and return the fitted :func:`.model.host_model` and the fit.

    The topology is :func:`fitted_model` of the largest band of :data:`.fitting.BAND_BYTES`
    (memory-bound copies); :class:`HostPredictor` predicts with the whole fit.

    Collective: call on every rank of ``comm`` (:func:`.measurement.calibrate_loaded`).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator to calibrate on.
    iters : int
        Timed calls per calibration run.
    warmup : int
        Untimed calls before the timed ones, per round.

    Returns
    -------
    tuple
        ``(topology, fit)``: the :class:`topology.Topology` and the
        :class:`.fitting.HostFit` of :func:`.measurement.calibrate_loaded`.
    """
    fit = calibrate_loaded(comm, iters, warmup)
    return fitted_model(comm.Get_size(), fit), fit
