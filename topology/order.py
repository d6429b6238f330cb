"""Rank order for rings and chains that follows the topology.

Pass the result as ``order=`` to :func:`collectives.build_schedule`: the ring then visits
the ranks of one node (NVLink or PCIe neighbours first) before it crosses the network once to
the next node, and it crosses on one rail: it leaves a node from the GPU whose NIC shares a
leaf with the NIC of the GPU it enters the next node by, as NCCL's rings do.
"""

from __future__ import annotations

from functools import lru_cache
from reprlib import repr as brief
from typing import Callable, Sequence

from .model import Topology

__all__ = ["ring_order", "node_groups", "NETWORK_LINK_KINDS"]

#: link kinds between nodes; every other link joins devices of one node
NETWORK_LINK_KINDS: frozenset[str] = frozenset({"ib", "ethernet", "roce", "net"})


def node_groups(topology: Topology) -> tuple[tuple[int, ...], ...]:
    """Return the ranks of each node, nodes ordered by their lowest rank.

    A node is a set of devices joined by links that are not network links
    (:data:`NETWORK_LINK_KINDS`).

    Parameters
    ----------
    topology : Topology
        The model to group.

    Returns
    -------
    tuple of tuple of int
        Per node, its ranks in increasing order (cached per topology).
    """
    return _node_groups(topology)


@lru_cache(maxsize=16)
def _node_groups(topology: Topology) -> tuple[tuple[int, ...], ...]:
    node = _nodes(topology)
    groups: dict[str, list[int]] = {}  # by the node's first device
    for rank, device in enumerate(topology.placement):
        groups.setdefault(node[device][0] if device in node else device, []).append(rank)
    return tuple(tuple(ranks) for ranks in groups.values())


def _nodes(topology: Topology) -> dict[str, list[str]]:
    """Every device that a link other than a network link joins to another, with its
    node's devices (one list per node, shared by its devices): merging the smaller
    list into the larger moves a device at most log2(devices) times, and a link costs
    two look-ups (a union-find's two root walks per link cost twice the time)."""
    node: dict[str, list[str]] = {}
    for link in topology.links:
        if link.kind in NETWORK_LINK_KINDS:
            continue
        a, b = node.get(link.src), node.get(link.dst)
        if a is None:
            if b is None:
                b = node[link.dst] = [link.dst]
            b.append(link.src)
            node[link.src] = b
        elif b is None:
            a.append(link.dst)
            node[link.dst] = a
        elif a is not b:
            small, large = (a, b) if len(a) < len(b) else (b, a)
            large.extend(small)
            for device in small:
                node[device] = large
    return node


def ring_order(topology: Topology) -> tuple[int, ...]:
    """Return a permutation of the ranks for ring and chain algorithms.

    Within a node the ring walks to the nearest unvisited rank (fewest hops, then lowest
    latency, then lowest rank). Between nodes it crosses the network once per node boundary:
    it enters each node at the rank nearest the previous node's exit, and each node's exit
    is chosen so that the last node can close the ring near the first rank.

    Parameters
    ----------
    topology : Topology
        Any topology; on a flat one or a single DGX node the order is the identity.

    Returns
    -------
    tuple of int
        ``order[i]`` is the rank at position ``i`` of the ring.

    Examples
    --------
    >>> import topology
    >>> ring_order(topology.dgx_h100(2))
    (0, 1, 2, 3, 4, 5, 6, 7, 15, 9, 10, 11, 12, 13, 14, 8)
    """
    if not isinstance(topology, Topology):
        raise TypeError(f"topology={brief(topology)} is not allowed; it must be a Topology")

    groups = node_groups(topology)
    start = groups[0][0]
    to_start = topology.costs(start, reverse=True)
    order: list[int] = []
    for i, group in enumerate(groups):
        if order:
            from_last = topology.costs(order[-1])
            entry = min(group, key=lambda r: (from_last[r], r))
        else:
            entry = start
        rest = [r for r in group if r != entry]
        if not rest or len(groups) == 1:
            order += [entry, *_nearest_first(entry, rest, topology.costs)]
            continue
        if i == len(groups) - 1:  # close the ring: leave from the rank nearest the start
            exit_rank = min(rest, key=lambda r: (to_start[r], -r))
        else:  # keep the start's neighbours free for the last node
            exit_rank = max(rest, key=lambda r: (to_start[r], r))
        middle = [r for r in rest if r != exit_rank]
        order += [entry, *_nearest_first(entry, middle, topology.costs), exit_rank]
    return tuple(order)


def _nearest_first(first: int, ranks: Sequence[int],
                   costs: Callable[[int], Sequence[tuple[int, float]]]) -> list[int]:
    """Visit ``ranks`` from ``first``, each time the nearest one not yet visited.

    ``costs(a)`` is ``(hops, alpha)`` from rank ``a`` to every rank
    (:meth:`Topology.costs`): one search a step, not a route per pair, which on a flat
    machine of thousands of ranks would route (and cache) millions of pairs."""
    left = list(ranks)
    path: list[int] = []
    current = first
    while left:
        row = costs(current)
        current = min(left, key=lambda r: (row[r], r))
        left.remove(current)
        path.append(current)
    return path
