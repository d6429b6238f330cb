"""The model side of the benchmark: a machine model for this run and its predictions per size.

``--topology`` names a preset, a topology file (:func:`collsim.args.machine`),
``calibrate`` or ``none``.  ``calibrate``
is the model of ``collsim predict``: :func:`collsim.predict.calibrated_model` fits the
per-call overhead, alpha, beta, gamma and the per-message CPU overhead to runs of the MPI
executor on NumPy float32 buffers on this very job, all ranks busy, and builds the host
model of ranks sharing the machine's cores.  The predictions come from
:func:`simulator.tuning_table` on the model, as ``select`` and ``auto`` choose, restricted
to the algorithms the benchmark ran.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

import topology
from collectives.build import ALGORITHMS
from simulator import tuning_table

from ..args import machine as named_machine

__all__ = ["CALIBRATION_ITERS", "Model", "machine", "predict"]

#: timed and untimed calls per calibration point of ``--topology calibrate``
CALIBRATION_ITERS, CALIBRATION_WARMUP = 9, 1


@dataclass(frozen=True)
class Model:
    """The machine the predictions are made on.

    Attributes
    ----------
    topology : topology.Topology
        The machine.
    per_call_s : float
        Cost of every call besides its schedule (the executor's, as calibrated; 0 for
        presets and files), added to every prediction.
    """

    topology: topology.Topology
    per_call_s: float = 0.0

    @property
    def name(self) -> str:
        """The topology's name."""
        return self.topology.name


def machine(args: argparse.Namespace, nranks: int, mpi_comm: Any) -> Model | None:
    """The model ``--topology`` means, on every rank (``calibrate`` is collective:
    every rank measures).

    Parameters
    ----------
    args : argparse.Namespace
        The benchmark's arguments: ``--topology`` (a preset, a topology file,
        ``calibrate`` or ``none``) and the machine options (:func:`collsim.args.machine`).
    nranks : int
        Ranks of the job (the ``flat`` preset's size; a model must place at least as many).
    mpi_comm : mpi4py.MPI.Comm
        The job's communicator, which ``calibrate`` measures (the MPI executor on NumPy
        float32 buffers, whatever the benchmark's buffers are).

    Returns
    -------
    Model or None
        None for ``none`` and for ``calibrate`` on a single rank (nothing to measure).

    Raises
    ------
    collsim.args.UsageError
        If the model places fewer than ``nranks`` ranks.
    """
    if args.topology == "none" or (args.topology == "calibrate" and nranks < 2):
        return None
    if args.topology == "calibrate":
        from collsim.predict import calibrated_model

        model, fit = calibrated_model(mpi_comm, CALIBRATION_ITERS, CALIBRATION_WARMUP)
        return Model(model, fit.overhead_s)
    return Model(named_machine(args, nranks))


def predict(collective: str, rows: Sequence[tuple[int, int]], nranks: int, dtype: str,
            model: Model, algorithms: Sequence[str] = ALGORITHMS) -> list[dict[str, Any]]:
    """Per benchmark row: the best of ``algorithms`` in :func:`simulator.tuning_table` on
    ``model``, and each of their predicted times with its best parameters.

    The choice is the table's among the candidates of ``algorithms`` only (the schedules
    the benchmark ran), so the predicted best is always one that was measured.  The
    parameters are the table's (e.g. the segment count that predicts fastest), which
    may differ from the defaults the benchmark ran; ``params`` says which each time
    assumes.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective benchmarked.
    rows : sequence of (int, int)
        The benchmark's rows, ``(size in bytes, count per rank)``.
    nranks : int
        Ranks of the job.
    dtype : str
        NumPy dtype name of the elements.
    model : Model
        The machine to predict on (:func:`machine`).
    algorithms : sequence of str, optional
        The schedules to choose among (default all); others (``native``, ``auto``) are
        left out.

    Returns
    -------
    list of dict
        ``{"size_B", "best", "choice", "time_us": {algorithm: microseconds},
        "params": {algorithm: label}}`` per row; ``best`` is the chosen algorithm,
        ``choice`` it with its parameters (``"tree(segments=4)"``); empty when
        ``algorithms`` holds no schedule.
    """
    names = [name for name in ALGORITHMS if name in algorithms]
    if not names:
        return []
    itemsize = np.dtype(dtype).itemsize
    table = tuning_table(collective, model.topology, nranks, itemsize)
    predicted = []
    for nbytes, count in rows:
        whole = count if collective in ("allreduce", "broadcast", "reduce") else count * nranks
        choice = table.choice(whole * itemsize)
        best = {name: min((c for c in choice.candidates if c.algorithm == name),
                          key=lambda c: c.predicted_s) for name in names}
        chosen = _chosen(choice, best)
        predicted.append({"size_B": nbytes, "best": chosen.algorithm, "choice": chosen.label,
                          "time_us": {name: (model.per_call_s + c.predicted_s) * 1e6
                                      for name, c in best.items()},
                          "params": {name: c.label for name, c in best.items()}})
    return predicted


def _chosen(choice: Any, best: dict[str, Any]) -> Any:
    """The table's choice when it is among ``best``'s algorithms, else the least
    predicted of ``best`` (the earliest candidate on a tie)."""
    if choice.algorithm in best:
        return choice
    return min(best.values(), key=lambda c: c.predicted_s)
