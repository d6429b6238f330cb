"""What selection tries beyond the flat algorithms: channel counts, orders and ``hier``.

* :func:`channel_counts`: 1, and on a machine of several nodes the NICs per node (a ring
  per rail, as NCCL runs one channel per NIC), bounded by ``COLLSIM_MIN_NCHANNELS`` and
  ``COLLSIM_MAX_NCHANNELS`` (:mod:`collectives.nchannels`).
* :func:`hier_ranks_per_node`: the ranks per node when ``hier`` is worth trying (several
  nodes of several equal ranks).
* :func:`schedule_params`: a candidate's parameters plus what the machine decides: the
  channels' rank orders (the algorithm's ``orders``, :mod:`collectives.registry`) and
  the parameters it adds with them (its ``node_params``: for the tree on several nodes,
  ``ranks_per_node``, NCCL's trees over nodes with a chain in each node).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

from collectives.nchannels import channel_bounds
from collectives.registry import algorithm as registered
from topology.channels import nics_per_node, ranks_per_node
from topology.model import Topology
from topology.order import node_groups

__all__ = ["channel_counts", "hier_ranks_per_node", "schedule_params"]


def channel_counts(topology: Topology, environ: Any = None) -> tuple[int, ...]:
    """Channel counts selection tries on ``topology``.

    Parameters
    ----------
    topology : Topology
        The machine.
    environ : mapping, optional
        The environment (``os.environ`` by default).

    Returns
    -------
    tuple of int
        Increasing; ``(1,)`` on one node unless the environment asks for more.

    Examples
    --------
    >>> import topology
    >>> channel_counts(topology.dgx_h100(2)), channel_counts(topology.dgx_h100(1))
    ((1, 8), (1,))
    >>> channel_counts(topology.dgx_h100(2), {"COLLSIM_MAX_NCHANNELS": "4"})
    (1, 4)
    """
    return _counts(topology, *channel_bounds(environ))


@lru_cache(maxsize=64)
def _counts(topology: Any, low: int, high: int | None) -> tuple[int, ...]:
    wanted = {1, max(1, nics_per_node(topology))}
    return tuple(sorted({max(low, c if high is None else min(c, high)) for c in wanted}))


def hier_ranks_per_node(topology: Topology, nranks: int) -> int | None:
    """Ranks per node if ``hier`` applies to the first ``nranks`` ranks, else None.

    Parameters
    ----------
    topology : Topology
        The machine.
    nranks : int
        Ranks used, from rank 0.

    Returns
    -------
    int or None
        None on one node, with one rank per node, or with unequal nodes.

    Examples
    --------
    >>> import topology
    >>> flat = topology.flat(4, 1e-6, 1e-9)
    >>> hier_ranks_per_node(topology.dgx_h100(2), 16), hier_ranks_per_node(flat, 4)
    (8, None)
    """
    if nranks != topology.nranks or len(node_groups(topology)) < 2:
        return None
    try:
        size = ranks_per_node(topology)
    except ValueError:
        return None
    return size if size > 1 else None


def schedule_params(algorithm: str, params: Sequence[tuple[str, Any]], topology: Topology,
                    nranks: int | None = None) -> dict[str, Any]:
    """Return ``params`` with the rank orders of the channels on ``topology`` added.

    Orders are added for all of the topology's ranks, with several channels or on several
    nodes (one node with one channel keeps the algorithm's own order, as before channels),
    for an algorithm that takes them (not a composed one); with them the parameters its
    ``node_params`` adds (the tree's ``ranks_per_node`` on several nodes).

    Parameters
    ----------
    algorithm : str
        The candidate's algorithm.
    params : sequence of (str, value)
        The candidate's parameters.
    topology : Topology
        The machine.
    nranks : int or None, optional
        Ranks the schedule runs on (default: all of the topology's).

    Returns
    -------
    dict
        Keyword arguments for :func:`collectives.build_schedule`.
    """
    out = dict(params)
    channels = out.get("channels", 1)
    everyone = nranks is None or nranks == topology.nranks
    entry = registered(algorithm)
    if everyone and entry.orders is not None \
            and (channels > 1 or len(node_groups(topology)) > 1):
        out["order"] = entry.orders(topology, channels)
        if entry.node_params is not None:
            out.update(entry.node_params(topology))
    return out
