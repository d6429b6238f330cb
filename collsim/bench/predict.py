"""The model side of the benchmark: a machine model for this run and its predictions per size.

``--topology`` names a preset, a topology file, ``calibrate`` or ``none``.  ``calibrate``
is the model of ``collsim predict``: :func:`collsim.predict.calibrated_model` fits the
per-call overhead, alpha, beta, gamma and the per-message CPU overhead to runs of the MPI
executor on NumPy float32 buffers on this very job, all ranks busy, and builds the host
model of ranks sharing the machine's cores.  The predictions come from
:func:`simulator.tuning_table` on the model, as ``select`` and ``auto`` choose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import topology
from collectives.build import ALGORITHMS
from simulator import tuning_table

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


def machine(name: str, nranks: int, nodes: int, mpi_comm: Any) -> Model | None:
    """The model ``--topology name`` means, on every rank (``calibrate`` is collective:
    every rank measures).

    Parameters
    ----------
    name : str
        A preset (:data:`topology.PRESET_NAMES`), a topology file, ``calibrate`` or ``none``.
    nranks : int
        Ranks of the job (the ``flat`` preset's size; a model must place at least as many).
    nodes : int
        Nodes of a DGX preset.
    mpi_comm : mpi4py.MPI.Comm
        The job's communicator, which ``calibrate`` measures (the MPI executor on NumPy
        float32 buffers, whatever the benchmark's buffers are).

    Returns
    -------
    Model or None
        None for ``none`` and for ``calibrate`` on a single rank (nothing to measure).

    Raises
    ------
    ValueError
        If the model places fewer than ``nranks`` ranks.
    """
    if name == "none" or (name == "calibrate" and nranks < 2):
        return None
    if name == "calibrate":
        from collsim.predict import calibrated_model

        model, fit = calibrated_model(mpi_comm, CALIBRATION_ITERS, CALIBRATION_WARMUP)
        return Model(model, fit.overhead_s)
    if name in topology.PRESET_NAMES:
        model = topology.preset(name, nranks=nranks, nodes=nodes)
    else:
        model = topology.load(Path(name))
    if model.nranks < nranks:
        raise ValueError(f"--topology {name!r} places {model.nranks} ranks but the job has "
                         f"{nranks}; choose a larger model (e.g. --nodes)")
    return Model(model)


def predict(collective: str, rows: Sequence[tuple[int, int]], nranks: int, dtype: str,
            model: Model) -> list[dict[str, Any]]:
    """Per benchmark row: the choice of :func:`simulator.tuning_table` on ``model`` and
    every algorithm's predicted time with its best parameters.

    The parameters are the table's (e.g. the segment count that predicts fastest), which
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

    Returns
    -------
    list of dict
        ``{"size_B", "best", "choice", "time_us": {algorithm: microseconds},
        "params": {algorithm: label}}`` per row; ``best`` is the chosen algorithm,
        ``choice`` it with its parameters (``"tree(segments=4)"``).
    """
    itemsize = np.dtype(dtype).itemsize
    table = tuning_table(collective, model.topology, nranks, itemsize)
    predicted = []
    for nbytes, count in rows:
        whole = count if collective == "allreduce" else count * nranks
        choice = table.choice(whole * itemsize)
        best = {name: min((c for c in choice.candidates if c.algorithm == name),
                          key=lambda c: c.predicted_s) for name in ALGORITHMS}
        predicted.append({"size_B": nbytes, "best": choice.algorithm, "choice": choice.label,
                          "time_us": {name: (model.per_call_s + c.predicted_s) * 1e6
                                      for name, c in best.items()},
                          "params": {name: c.label for name, c in best.items()}})
    return predicted
