"""Do all ranks reach each other? One pass over the graph, not one search per pair."""

from __future__ import annotations

import networkx as nx

__all__ = ["unreachable_pair"]


def unreachable_pair(out: list[dict[int, list[int]]], transit: list[bool],
                     hosts: list[int]) -> tuple[int, int] | None:
    """Return the first pair of host devices ``(s, d)`` where ``s`` cannot reach ``d``.

    Parameters
    ----------
    out : list of dict
        ``out[u]`` maps each device ``u`` links to onto those links.
    transit : list of bool
        Whether a device forwards traffic (routes pass through transit devices only).
    hosts : list of int
        Devices that host ranks, sorted.

    Returns
    -------
    tuple of int or None
        None when every host reaches every other one.

    Notes
    -----
    The transit devices are condensed into strongly connected components; a host ``s``
    reaches a host ``d`` when a link joins them directly or a component reachable from one of
    ``s``'s transit neighbours holds a transit device that links to ``d``.  Each component
    knows the hosts it enters; hosts with the same transit neighbours share the work, and a
    component that enters every host (a fat-tree's spines and leaves) settles a host at once,
    so a 16,384-GPU cluster costs a few thousand set operations.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(u for u, t in enumerate(transit) if t)
    graph.add_edges_from((u, v) for u in graph for v in out[u] if transit[v])
    condensed = nx.condensation(graph)
    component = condensed.graph["mapping"]
    host_set = set(hosts)
    entered: dict[int, set[int]] = {}  # component -> the hosts its devices link to
    for u in graph:
        for v in out[u]:
            if v in host_set:
                entered.setdefault(component[u], set()).add(v)
    below: dict[int, frozenset[int]] = {}  # component -> itself and its descendants
    reached: dict[frozenset[int], set[int] | None] = {}  # None: every host
    for s in hosts:
        starts = frozenset(component[v] for v in out[s] if transit[v])
        if starts not in reached:
            reached[starts] = _hosts_reached(condensed, starts, entered, below, len(host_set))
        found = reached[starts]
        if found is None:
            continue
        missing = host_set - found - set(out[s]) - {s}
        if missing:
            return s, min(missing)
    return None


def _hosts_reached(condensed: nx.DiGraph, starts: frozenset[int], entered: dict[int, set[int]],
                   below: dict[int, frozenset[int]], nhosts: int) -> set[int] | None:
    """The hosts the components ``starts`` reach (None: all ``nhosts`` of them)."""
    components: set[int] = set()
    for c in starts:
        if c not in below:
            below[c] = frozenset({c} | nx.descendants(condensed, c)) \
                if condensed.succ[c] else frozenset({c})
        components |= below[c]
    sets = sorted((entered.get(c, set()) for c in components), key=len, reverse=True)
    if sets and len(sets[0]) == nhosts:
        return None
    return set().union(*sets)
