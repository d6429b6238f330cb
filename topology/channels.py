"""Rank orders per channel that use every NIC of a node, as NCCL's channels do.

The shapes an algorithm picks its channels' orders from (its ``orders``, see
:mod:`collectives.registry`; :func:`collectives.channel_orders` gives them for an
algorithm); pass them as ``order=`` with ``channels=len(orders)`` to
:func:`collectives.build_schedule`.  On a machine of ``N > 1`` nodes of ``L`` ranks,
where local rank ``l`` of every node uses NIC (rail) ``l`` (as in
:func:`topology.rail_fat_tree` and the DGX presets):

* :func:`rail_rings`: the ring keeps each node's ranks together and crosses every node
  boundary once, from the exit rank of one node to the entry rank of the next *on the
  same rail*, so the crossing turns at that rail's leaf switch.  Channel ``c`` enters node
  0 on rail ``c`` and leaves on rail ``c + 1`` (the next node enters on it and leaves on
  rail ``c``, and so on; with an odd number of nodes one node leaves on rail ``c + 2`` to
  close the ring).  For ``C = L`` channels every NIC of every node then sends for exactly
  one channel and receives for exactly one.
* :func:`node_major`: each node's ranks stay together, rotated by ``c`` in channel ``c``:
  node ``k`` fills positions ``kL .. kL + L - 1`` from local rank ``c``.  Trees built over
  nodes of ``L`` (:func:`equal_node_size`) join the nodes' first positions, so channel
  ``c`` crosses between nodes only on rail ``c``, from and to GPU ``c`` (NCCL's tree
  pattern ``NCCL_TOPO_PATTERN_TREE``, all of a node's network traffic on one GPU).
* :func:`node_minor`: position ``l * N + k`` is local rank ``l + c`` (mod ``L``) of node
  ``k``, so partners at distances below ``N`` cross the network between equal local
  ranks, on one rail, and those at larger distances stay on NVLink.

A single node, or a machine without nodes (:func:`topology.flat`), gets one order in every
channel: :func:`topology.ring_order` from :func:`rail_rings`, the identity otherwise.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import chain
from typing import Sequence

from .model import Topology
from .order import node_groups, ring_order

__all__ = ["rail_rings", "node_major", "node_minor", "ranks_per_node", "nics_per_node",
           "equal_node_size"]


def ranks_per_node(topology: Topology) -> int:
    """Return the ranks per node of a machine whose nodes hold consecutive ranks.

    Parameters
    ----------
    topology : Topology
        The machine (nodes: see :func:`topology.order.node_groups`).

    Returns
    -------
    int
        Ranks per node.

    Raises
    ------
    ValueError
        If the nodes differ in size or a node's ranks are not consecutive.

    Examples
    --------
    >>> import topology
    >>> ranks_per_node(topology.dgx_h100(2))
    8
    """
    groups = node_groups(topology)
    size = len(groups[0])
    for k, group in enumerate(groups):
        if group != tuple(range(k * size, (k + 1) * size)):
            raise ValueError(f"topology {topology.name!r} has nodes of unequal size or of "
                             f"ranks that are not consecutive (node {k}: ranks {group[:4]}...); "
                             f"hierarchical algorithms need equal nodes of consecutive ranks")
    return size


def nics_per_node(topology: Topology) -> int:
    """Return the NICs (devices of kind ``"nic"``) of the node of rank 0 (0 on one node).

    Parameters
    ----------
    topology : Topology
        The machine.

    Returns
    -------
    int

    Examples
    --------
    >>> import topology
    >>> nics_per_node(topology.dgx_h100(2)), nics_per_node(topology.dgx_h100(1))
    (8, 0)
    """
    if len(node_groups(topology)) < 2:
        return 0
    prefix = topology.placement[0].split(".")[0] + "."
    return sum(1 for d in topology.devices if d.kind == "nic" and d.id.startswith(prefix))


def _node_size(groups: Sequence[Sequence[int]]) -> int | None:
    """Ranks per node when there are several nodes of one size above 1, else None."""
    sizes = {len(group) for group in groups}
    return None if len(groups) < 2 or len(sizes) > 1 or sizes == {1} else sizes.pop()


def equal_node_size(topology: Topology) -> int | None:
    """Return the ranks per node where :func:`node_major` groups each node's ranks.

    Parameters
    ----------
    topology : Topology
        The machine.

    Returns
    -------
    int or None
        The ranks per node when the machine has several nodes of one size above 1 (the
        orders then group each node's ranks); None otherwise.

    Examples
    --------
    >>> import topology
    >>> equal_node_size(topology.dgx_h100(2)), equal_node_size(topology.dgx_h100(1))
    (8, None)
    """
    return _node_size(node_groups(topology))


def _ring(groups: Sequence[tuple[int, ...]], c: int) -> list[int]:
    nodes, size = len(groups), len(groups[0])
    first = c % size
    order: list[int] = []
    entry = first
    for k, group in enumerate(groups):
        if k == nodes - 1:
            leave = first if first != entry else (entry + 1) % size
        elif k == nodes - 2 and nodes % 2 and size >= 3:
            leave = (first + 2) % size
        else:
            leave = (first + 1) % size if entry == first else first
        after = group[entry + 1:] + group[:entry]  # from the entry on, round the node
        order += [group[entry], *(r for r in after if r != group[leave]), group[leave]]
        entry = leave
    return order


def _check(topology: Topology, channels: int) -> tuple[tuple[int, ...], ...] | None:
    """The nodes when they are several of one size above 1, else None (after checking the
    arguments)."""
    if not isinstance(topology, Topology):
        raise TypeError(f"topology={topology!r} is not allowed; it must be a Topology")
    if isinstance(channels, bool) or not isinstance(channels, int) or channels < 1:
        raise ValueError(f"channels={channels!r} is not allowed; it must be an integer >= 1")
    groups = node_groups(topology)
    return None if _node_size(groups) is None else groups


def rail_rings(topology: Topology, channels: int) -> tuple[tuple[int, ...], ...]:
    """One ring per channel, crossing every node boundary once on one rail (see the module
    docstring).

    Parameters
    ----------
    topology : Topology
        The machine.
    channels : int
        Number of channels, at least 1.

    Returns
    -------
    tuple of tuple of int
        ``channels`` permutations of the ranks.

    Raises
    ------
    TypeError
        If ``topology`` is not a Topology.
    ValueError
        If ``channels`` is not an integer >= 1.

    Examples
    --------
    >>> import topology
    >>> orders = rail_rings(topology.dgx_h100(2), 8)
    >>> orders[0]
    (0, 2, 3, 4, 5, 6, 7, 1, 9, 10, 11, 12, 13, 14, 15, 8)
    >>> sorted(o[7] % 8 for o in orders) == sorted(o[8] % 8 for o in orders) == list(range(8))
    True
    """
    if _check(topology, channels) is None:
        return (ring_order(topology),) * channels
    return tuple(_rail_ring(topology, c) for c in range(channels))


@lru_cache(maxsize=64)
def _rail_ring(topology: Topology, c: int) -> tuple[int, ...]:
    """Channel ``c``'s ring of :func:`rail_rings` (cached: every algorithm on rings and
    every channel count asks for it)."""
    return tuple(_ring(node_groups(topology), c))


def node_major(topology: Topology, channels: int) -> tuple[tuple[int, ...], ...]:
    """Each node's ranks together, rotated by the channel (see the module docstring);
    parameters, results and errors as :func:`rail_rings`.

    Examples
    --------
    >>> import topology
    >>> node_major(topology.dgx_h100(2), 2)[1][:9]
    (1, 2, 3, 4, 5, 6, 7, 0, 9)
    """
    groups = _check(topology, channels)
    if groups is None:
        return (tuple(range(topology.nranks)),) * channels
    size = len(groups[0])
    return tuple(tuple(chain.from_iterable(group[c % size:] + group[:c % size]
                                           for group in groups))
                 for c in range(channels))


def node_minor(topology: Topology, channels: int) -> tuple[tuple[int, ...], ...]:
    """Equal local ranks of every node together, rotated by the channel (see the module
    docstring); parameters, results and errors as :func:`rail_rings`.

    Examples
    --------
    >>> import topology
    >>> node_minor(topology.dgx_h100(2), 1)[0][:4]
    (0, 8, 1, 9)
    """
    groups = _check(topology, channels)
    if groups is None:
        return (tuple(range(topology.nranks)),) * channels
    size, columns = len(groups[0]), list(zip(*groups))  # columns: equal local ranks
    return tuple(tuple(chain.from_iterable(columns[(i + c) % size] for i in range(size)))
                 for c in range(channels))
