"""The model side of the benchmark: a topology for this run and its predictions per size.

``--topology`` names a preset, a topology file, ``calibrate`` (fit alpha, beta and gamma
on this very job with :func:`topology.calibrate.calibrate`, then predict) or ``none``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

import topology
from collectives.build import ALGORITHMS, build_schedule
from simulator import simulate

__all__ = ["FLAT_ALPHA_S", "FLAT_BETA_S_PER_BYTE", "CALIBRATION_SIZES", "machine", "predict"]

#: the ``flat`` preset's latency and inverse bandwidth: 2 us and 10 GB/s, a typical
#: host-memory MPI path (the defaults of ``collsim simulate``)
FLAT_ALPHA_S = 2e-6
FLAT_BETA_S_PER_BYTE = 1e-10

#: message sizes of the quick calibration ``--topology calibrate`` runs first: 8 B .. 2 MiB
CALIBRATION_SIZES = tuple(8 * 8**k for k in range(7))


def machine(name: str, nranks: int, nodes: int, mpi_comm: Any, xp: Any) -> topology.Topology | None:
    """The topology ``--topology name`` means, on every rank (``calibrate`` is collective:
    every rank measures; the model is returned on rank 0 only, None elsewhere).

    Returns None for ``none`` and for ``calibrate`` on a single rank (nothing to measure).
    """
    if name == "none" or (name == "calibrate" and nranks < 2):
        return None
    if name == "calibrate":
        from topology.calibrate import calibrate

        measured = calibrate(mpi_comm, xp, CALIBRATION_SIZES, iters=10, warmup=2,
                             name=f"calibrated ({nranks} ranks, {xp.__name__})")
        return None if measured is None else measured[0]
    presets = {"flat": lambda: topology.flat(nranks, FLAT_ALPHA_S, FLAT_BETA_S_PER_BYTE),
               "dgx-h100": lambda: topology.dgx_h100(nodes=nodes),
               "dgx-a100": lambda: topology.dgx_a100(nodes=nodes),
               "pcie": lambda: topology.pcie_node()}
    model = presets[name]() if name in presets else topology.load(Path(name))
    if model.nranks < nranks:
        raise ValueError(f"--topology {name!r} places {model.nranks} ranks but the job has "
                         f"{nranks}; choose a larger model (e.g. --nodes)")
    return model


def predict(collective: str, rows: Sequence[tuple[int, int]], nranks: int, dtype: str,
            model: topology.Topology) -> list[dict[str, Any]]:
    """Per benchmark row: every algorithm's simulated time on ``model`` and the fastest.

    The schedules are those the benchmark ran (default parameters), played on ``model``
    by :func:`simulator.simulate`, so the predicted best is comparable with the
    measured best of the same table.

    Returns
    -------
    list of dict
        ``{"size_B", "best", "time_us": {algorithm: microseconds}}`` per row.
    """
    itemsize = np.dtype(dtype).itemsize
    predicted = []
    for nbytes, count in rows:
        whole = count if collective == "allreduce" else count * nranks
        times = {name: simulate(build_schedule(collective, name, nranks, whole), model,
                                itemsize, trace=False).time_s * 1e6 for name in ALGORITHMS}
        predicted.append({"size_B": nbytes, "best": min(times, key=times.__getitem__),
                          "time_us": times})
    return predicted
