"""The alpha-beta-gamma cost of every algorithm and collective on a uniform network.

Model: a message of ``m`` bytes between two ranks costs ``alpha + m * beta``; reducing
``m`` received bytes into the local buffer costs ``m * gamma`` at the receiver; a rank may
send to several peers at once, each at the full rate (every ordered pair its own link).
:func:`cost` is the analytic model (:mod:`simulator.analytic`) on that network: what the
algorithm describes (:mod:`collectives.traffic`), priced round by round.  The textbook
forms it gives when blocks and segments divide evenly (Thakur, Rabenseifner & Gropp
2005; ``n`` bytes, ``p`` ranks)::

    ring AllReduce       2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma
    rhd AllReduce        2 lg p alpha + 2 (p-1)/p n beta + (p-1)/p n gamma    (p = 2**k)
    pipeline AllReduce   (S + 2p - 3)(alpha + n/S beta) + (S + p - 2) n/S gamma
"""

from __future__ import annotations

import dataclasses
import functools
from reprlib import repr as brief
from typing import Any

from topology.checks import check_int, check_number

from collectives.build import ALGORITHMS
from collectives.schedule import COLLECTIVES

from .analytic import price_one

__all__ = ["cost"]


@functools.lru_cache(maxsize=64)
def _uniform(nranks: int, alpha: float, beta: float, gamma: float) -> Any:
    """The uniform network of ``nranks`` ranks (a link per ordered pair)."""
    import topology

    mesh = getattr(topology, "mesh", topology.flat)
    return dataclasses.replace(mesh(nranks, alpha, beta), gamma_s_per_byte=gamma)


def cost(collective: str, algorithm: str, nranks: int, nbytes: int, alpha: float,
         beta: float, gamma: float, dtype_size: int = 4, **params: Any) -> float:
    """Predict the time of ``algorithm`` for ``collective`` in the alpha-beta-gamma model.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    algorithm : str
        A flat algorithm of :data:`collectives.ALGORITHMS` that serves ``collective``; its
        schedule is the one :func:`collectives.build_schedule` makes.
    nranks : int
        Ranks, at least 1.
    nbytes : int
        Bytes of the full vector (AllReduce buffer, ReduceScatter input, AllGather
        output), a multiple of ``dtype_size``.
    alpha : float
        Seconds per message (latency), > 0.
    beta : float
        Seconds per byte sent (1 / bandwidth), > 0.
    gamma : float
        Seconds per byte reduced.
    dtype_size : int, optional
        Bytes per element (default 4).
    **params
        The algorithm's tuning parameters (e.g. ``segments``), defaults as in
        :func:`collectives.build_schedule`; ``order`` is accepted and does not change the
        cost on a uniform network; ``channels=C``: channels over one order share every
        link.  The tree takes ``ranks_per_node`` (trees over nodes of consecutive ranks,
        each node a chain).

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError
        For an unknown collective or algorithm, or a value out of range.
    TypeError
        For a parameter the algorithm does not take.

    Examples
    --------
    >>> round(cost("allreduce", "ring", 4, 4096, alpha=1e-6, beta=1e-9, gamma=0.0), 12)
    1.2144e-05
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm {brief(algorithm)} is not supported; choose one of "
                         f"{list(ALGORITHMS)}")
    check_int(nranks, "nranks", 1)
    check_int(nbytes, "nbytes", 0)
    check_int(dtype_size, "dtype_size", 1)
    if nbytes % dtype_size:
        raise ValueError(f"nbytes={nbytes} is not allowed; it must be a multiple of "
                         f"dtype_size={dtype_size}")
    a, b, g = (check_number(v, k) for k, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)))
    params.pop("order", None)
    return price_one(collective, algorithm, _uniform(nranks, a, b, g), nbytes,
                     dtype_size=dtype_size, **params)
