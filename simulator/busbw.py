"""Algorithm and bus bandwidth in the nccl-tests convention.

``algbw = nbytes / time``; ``busbw = algbw * factor`` with the factor that makes busbw
comparable to the hardware's link bandwidth (nccl-tests ``doc/PERFORMANCE.md``):
AllReduce ``2 (n-1) / n``, ReduceScatter, AllGather and AllToAll ``(n-1) / n``, Broadcast
and Reduce 1.
"""

from __future__ import annotations

from topology.checks import check_int
from reprlib import repr as brief

__all__ = ["BUS_FACTORS", "WHOLE", "bus_factor", "bandwidths"]

#: collective -> multiplier in ``multiplier * (n - 1) / n``
BUS_FACTORS: dict[str, int] = {"allreduce": 2, "reduce_scatter": 1, "allgather": 1,
                               "alltoall": 1}
#: collectives whose busbw is their algbw (nccl-tests: every byte crosses the busiest link
#: once, whatever the rank count)
WHOLE = ("broadcast", "reduce")


def bus_factor(collective: str, nranks: int) -> float:
    """Return busbw / algbw for ``collective`` on ``nranks`` ranks.

    Parameters
    ----------
    collective : str
        A collective of :data:`BUS_FACTORS` or :data:`WHOLE`.
    nranks : int
        Number of ranks (>= 1).

    Returns
    -------
    float
        ``BUS_FACTORS[collective] * (nranks - 1) / nranks``, or 1 for :data:`WHOLE`.

    Raises
    ------
    ValueError
        If ``collective`` is not in :data:`BUS_FACTORS` or ``nranks`` is not an integer >= 1.

    Examples
    --------
    >>> bus_factor("allreduce", 8), bus_factor("allgather", 4), bus_factor("broadcast", 4)
    (1.75, 0.75, 1.0)
    """
    if collective not in (*BUS_FACTORS, *WHOLE):
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{[*BUS_FACTORS, *WHOLE]}")
    check_int(nranks, "nranks", 1)
    if collective in WHOLE:
        return 1.0
    return BUS_FACTORS[collective] * (nranks - 1) / nranks


def bandwidths(collective: str, nranks: int, nbytes: int, time_s: float) -> tuple[float, float]:
    """Return ``(algbw, busbw)`` in bytes per second (0 for a zero time).

    Parameters
    ----------
    collective : str
        The collective.
    nranks : int
        Number of ranks.
    nbytes : int
        The size nccl-tests reports: bytes of the AllReduce, Broadcast or Reduce vector,
        the ReduceScatter input, the AllGather output, every rank's AllToAll send buffer.
    time_s : float
        Seconds per call.

    Raises
    ------
    ValueError
        As :func:`bus_factor`.
    """
    algbw = nbytes / time_s if time_s > 0 else 0.0
    return algbw, algbw * bus_factor(collective, nranks)
