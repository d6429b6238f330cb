"""``collsim predict``: calibrate, predict and measure every algorithm, side by side.

Run as ``collsim predict -n 4``: outside ``mpirun`` it launches itself on ``-n`` ranks
(:func:`collsim.launch.relaunch`); under ``mpirun`` it runs on the job's ranks:

1. **Time** (:mod:`.measurement`) the calibration runs (:func:`calibration_jobs`:
   AllGather and ReduceScatter, never the collective being predicted) and every
   candidate of the tuning table at every size (:func:`candidate_jobs`) through the real
   MPI executor (:func:`measure_all`): in rounds over all of them, one timed call per job
   per round, each round in a new shuffled order with the jobs of one size back to back,
   so that other load on the machine falls on calibration and measurement alike, and on
   the algorithms compared at a size alike; per call a barrier, then the call, timed on
   every rank; a call's time is the slowest rank's; the result is the median over calls.
2. **Calibrate** (:mod:`.fitting`: :func:`fit_calibration`, on the calibration runs only,
   a :class:`HostFit`): per-call overhead, alpha, beta per band of working-buffer sizes
   (:data:`BAND_BYTES`), gamma, the per-message CPU overhead ``o`` and the seconds per
   byte ``kappa`` of the local copies around the schedule (the input into the working
   buffer: some calibration runs are made in place, without it, so that it is told
   apart) of the executor as it runs, every rank busy.  The machine is one host whose
   cores all ranks share (:mod:`.model`: :func:`model_terms`): messages share its copy
   throughput (simulated on :func:`host_model`), reductions, per-message CPU time and
   local copies its cores.  :func:`calibrated_model` calibrates and builds a topology for
   :func:`simulator.select` in one call (``collsim bench --topology calibrate`` uses it;
   :func:`fitted_model` says what it leaves out).
3. **Predict** (:mod:`.predictor`: :class:`HostPredictor`): per size, every candidate of
   the tuning tables (:func:`simulator.selection.candidates`) on the calibrated host;
   each algorithm's best segment count and time, and the overall choice; the fitted
   per-call overhead of the executor is added to every predicted time; each is set beside
   the measured time of the same algorithm with the same parameters.
4. **Report** (:mod:`.report`, rank 0): a table of predicted and measured times with the
   relative error, whether the predicted best is the measured best and whether the
   chosen algorithm is within 10% of the measured best; the geometric-mean error over
   sizes >= 64 KiB; a PNG plot (``--plot``) and a JSON file (``--json``: the fit
   (:meth:`HostFit.to_dict`), the points, the summary and every timed run, so that a fit
   can be redone offline with :func:`fit_calibration`).

:mod:`.cli` holds the command line (``add_arguments``, ``main``).  Importing this package
imports neither mpi4py nor matplotlib.
"""

from .cli import add_arguments, main
from .fitting import BAND_BYTES, HostFit, band_weights, fit_calibration, fit_relative, \
    predicted_time
from .measurement import calibrate_loaded, calibration_jobs, candidate_jobs, job_cores, \
    measure, measure_all
from .model import IN_PLACE_PARAM, host_model, local_copy_bytes, model_terms, \
    shared_cores_time
from .predictor import HostPredictor, calibrated_model, fitted_model
from .report import compare, summarize

__all__ = ["BAND_BYTES", "HostFit", "HostPredictor", "IN_PLACE_PARAM", "add_arguments",
           "band_weights", "calibrate_loaded", "calibrated_model", "calibration_jobs",
           "candidate_jobs", "compare", "fit_calibration", "fit_relative", "fitted_model",
           "host_model", "job_cores", "local_copy_bytes", "main", "measure", "measure_all",
           "model_terms", "predicted_time", "shared_cores_time", "summarize"]
