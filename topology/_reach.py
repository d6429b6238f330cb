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
    ``s``'s transit neighbours holds a transit device that links to ``d``. Hosts with the same
    components share the work, so a 1024-GPU cluster costs a few hundred set operations.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(u for u, t in enumerate(transit) if t)
    graph.add_edges_from((u, v) for u in graph for v in out[u] if transit[v])
    condensed = nx.condensation(graph)
    component = condensed.graph["mapping"]
    host_set = set(hosts)
    into: dict[int, set[int]] = {d: set() for d in hosts}
    for u in graph:
        for v in out[u]:
            if v in host_set:
                into[v].add(component[u])
    by_entry: dict[frozenset[int], set[int]] = {}
    for d in hosts:
        by_entry.setdefault(frozenset(into[d]), set()).add(d)
    reach_cache: dict[frozenset[int], set[int]] = {}
    for s in hosts:
        starts = frozenset(component[v] for v in out[s] if transit[v])
        if starts not in reach_cache:
            reach_cache[starts] = _hosts_reached(condensed, starts, by_entry)
        missing = host_set - reach_cache[starts] - set(out[s]) - {s}
        if missing:
            return s, min(missing)
    return None


def _hosts_reached(condensed: nx.DiGraph, starts: frozenset[int],
                   by_entry: dict[frozenset[int], set[int]]) -> set[int]:
    components = set(starts)
    for c in starts:
        components |= nx.descendants(condensed, c)
    reached: set[int] = set()
    for entry, targets in by_entry.items():
        if not entry.isdisjoint(components):
            reached |= targets
    return reached
