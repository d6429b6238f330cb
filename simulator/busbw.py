"""Algorithm and bus bandwidth in the nccl-tests convention.

``algbw = nbytes / time``; ``busbw = algbw * factor`` with the factor that makes busbw
comparable to the hardware's link bandwidth (nccl-tests ``doc/PERFORMANCE.md``):
AllReduce ``2 (n-1) / n``, ReduceScatter and AllGather ``(n-1) / n``.
"""

from __future__ import annotations

from topology.checks import check_int
from reprlib import repr as brief

__all__ = ["BUS_FACTORS", "bus_factor", "bandwidths"]

#: collective -> multiplier in ``multiplier * (n - 1) / n``
BUS_FACTORS: dict[str, int] = {"allreduce": 2, "reduce_scatter": 1, "allgather": 1}


def bus_factor(collective: str, nranks: int) -> float:
    """Return busbw / algbw for ``collective`` on ``nranks`` ranks.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    nranks : int
        Number of ranks (>= 1).

    Returns
    -------
    float
        ``BUS_FACTORS[collective] * (nranks - 1) / nranks``.

    Raises
    ------
    ValueError
        If ``collective`` is not in :data:`BUS_FACTORS` or ``nranks`` is not an integer >= 1.

    Examples
    --------
    >>> bus_factor("allreduce", 8), bus_factor("allgather", 4)
    (1.75, 0.75)
    """
    if collective not in BUS_FACTORS:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(BUS_FACTORS)}")
    check_int(nranks, "nranks", 1)
    return BUS_FACTORS[collective] * (nranks - 1) / nranks


def bandwidths(collective: str, nranks: int, nbytes: int, time_s: float) -> tuple[float, float]:
    """Return ``(algbw, busbw)`` in bytes per second (0 for a zero time).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    nranks : int
        Number of ranks.
    nbytes : int
        Bytes of the working buffer (the AllReduce vector, the ReduceScatter input, the
        AllGather output), the size nccl-tests reports.
    time_s : float
        Seconds per call.

    Raises
    ------
    ValueError
        As :func:`bus_factor`.
    """
    algbw = nbytes / time_s if time_s > 0 else 0.0
    return algbw, algbw * bus_factor(collective, nranks)
