"""Which ranks' messages are priced (:data:`SAMPLE_ALL_RANKS`), the orders as
arrays, and the machine's classes of alike links."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from topology.model import FullMesh
from topology.order import node_groups

from ..gpu import flow_caps, line_figures, link_kinds
from .cache import _cached


#: up to so many ranks every rank's messages are priced; above, those of a few nodes
SAMPLE_ALL_RANKS = 64

Orders = tuple[tuple[int, ...], ...]
#: each order's group (from 0; the orders of a group carry parts of one size), or None:
#: one group
Groups = tuple[int, ...] | None


@functools.lru_cache(maxsize=16)
def _sample(topology: Any) -> np.ndarray:
    """Whether each rank of ``topology`` is sampled (see the module docstring)."""
    sampled = np.zeros(topology.nranks, dtype=bool)
    if topology.nranks <= SAMPLE_ALL_RANKS:
        sampled[:] = True
        return sampled
    groups = node_groups(topology)
    n = len(groups)
    for g in {0, 1, n // 2, n - 1} & set(range(n)):
        sampled[list(groups[g])] = True
    return sampled


@functools.lru_cache(maxsize=16)
def _link_classes(topology: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every link's class and one link of each class: links of one kind, latency, line
    rate and flow cap are alike under every protocol (:func:`simulator.gpu.link_figures`
    scales a link's figures by its kind, and caps a link at a NIC by its flows: a leaf's
    up link of the NIC's line rate, as on ``dgx_h100(16, nodes_per_leaf=4, spines=4)``,
    is not capped)."""
    if isinstance(topology.links, FullMesh):
        return np.zeros(len(topology.links), dtype=np.int64), np.zeros(1, dtype=np.int64)
    key = link_kinds(topology)[1]
    for figure in (*line_figures(topology), flow_caps(topology)):
        values, at = np.unique(figure, return_inverse=True)
        key = key * len(values) + at.reshape(-1)
    _, first, classes = np.unique(key, return_index=True, return_inverse=True)
    met = np.argsort(first)  # classes numbered as their first links come
    number = np.empty_like(met)
    number[met] = np.arange(len(met))
    return number[classes.reshape(-1)], first[met]


_RANKS: dict[Any, tuple[tuple[Any, ...], np.ndarray]] = {}


def _ranks(orders: Orders) -> np.ndarray:
    """``orders`` as an array (cached by the orders' identity)."""
    return _cached(_RANKS, id(orders), (orders,), lambda: np.fromiter(
        itertools.chain.from_iterable(orders), dtype=np.int64,
        count=len(orders) * len(orders[0])).reshape(len(orders), -1))


_SAMPLED: dict[Any, tuple[tuple[Any, ...], np.ndarray]] = {}


def _sampled(topology: Any, orders: Orders) -> np.ndarray:
    """Whether each position of each of ``orders`` holds a sampled rank (cached)."""
    return _cached(_SAMPLED, (topology, id(orders)), (orders,),
                   lambda: _sample(topology)[_ranks(orders)])
