"""A ring after a tree's rounds, its hops starting apart (:func:`_staggered`).

The lock-step rounds (:class:`collectives.traffic.Round`) start the ring of a scatter
and ring AllGather Broadcast (van de Geijn, :mod:`collectives.algorithms.scatter_allgather`)
when the scatter's last round ends, every hop at once, and price each of its ``q - 1``
steps at its slowest hop with every hop that shares a link with it in flight beside it.
In the simulator a hop starts once both its ends are done with the scatter: on a rank
count that is no power of two the ranks of the last, truncated subtrees are done rounds
before the root, and their hops run that many rounds' time apart from the others.  On a
machine of unlike links the ring's hops that cross the network share the leaf's up links
(``dgx_h100(28)``: 28 hops over 8 spines, 8 on one link of 196 GB/s for Simple), and the
hops of a link that started apart carry their bytes apart: only those that started
together crowd it in step (there 5 of the 8 at first: the simulator's step is 0.7% over
a hop alone, the lock-step's 15%, +8.7% on the whole at 64 MiB; now -3.3%).  The
latencies of hops out of step hide behind the others' bytes, so a step is no shorter
than the busiest link's bytes of every hop, however they start (LL128 there: the 8 hops'
bytes 13.3 us against 9.5 us a hop alone; the lock-step's step, the latency added, was
+5.6% on the whole, now -1.1%).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..gpu import hidden_latency
from .budgets import WHOLE_MESSAGES
from .routing import _entries, _route_figures


def _tree_then_ring(rounds: tuple[Any, ...]) -> tuple[list[Any], Any] | None:
    """The tree's classes and the ring's, where ``rounds`` are rounds of one class each,
    every one once, then a ring (one class, ``q - 1`` rounds, every position sending
    once, none reduced); else None."""
    if len(rounds) < 2 or any(len(r.messages) != 1 or r.chain or r.paced for r in rounds):
        return None
    *tree, ring = rounds
    hops = ring.messages[0]
    q = len(hops.src)
    if ring.repeat != q - 1 or hops.reduce or any(r.repeat != 1 for r in tree) \
            or len(np.unique(hops.src)) != q:
        return None
    return [r.messages[0] for r in tree], hops


def _routes(topology: Any, order: tuple[int, ...], classes: list[Any]) -> list[tuple[Any, ...]]:
    """Per class of ``classes`` (positions on ``order``) its messages' routes: the
    number of links of each, their links one after another, each link's message and
    where each message's links begin."""
    ranks = np.asarray(order, dtype=np.int64)
    out = []
    for m in classes:
        lengths, links = _entries(topology, ranks[m.src] * topology.nranks + ranks[m.dst])
        out.append((links, np.repeat(np.arange(len(m.src)), lengths),
                    np.cumsum(lengths) - lengths))
    return out


def _alone(route: tuple[Any, ...], size: Any, figures: tuple[Any, ...]
           ) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of each message of ``route`` (:func:`_routes`) of ``size`` bytes (each's) by
    itself, under ``figures`` (a protocol's terms, as :meth:`_Described.time` takes
    them), and the part of it that is not its bytes' time at its route's rate."""
    latency, bandwidth, slot, shares, _ = figures
    links, _, heads = route
    delay, rate, share = _route_figures(links, heads, latency, bandwidth, shares)
    paid = hidden_latency(delay, size, rate, slot, share)
    return paid + size / rate, paid


def _window_bytes(messages: Any, q: int, count: int, ds: int) -> np.ndarray:
    """Bytes of each message of ``messages`` at ``count`` elements of the vector: its
    window of the vector's ``q`` blocks (:attr:`collectives.traffic.Messages.windows`),
    or the class's largest where it says none."""
    if messages.windows is None:
        return np.full(len(messages.src), float(messages.elements(np.array([count]))[0]) * ds)
    size, extra = divmod(count, q)
    lo, hi = messages.windows[:, 0], messages.windows[:, 1]
    return ((hi - lo) * size + np.clip(extra - lo, 0, hi - lo)).astype(float) * ds


def _starts(classes: list[Any], routes: list[tuple[Any, ...]], sizes: list[np.ndarray],
            figures: tuple[Any, ...], hops: Any) -> np.ndarray:
    """When each hop of the ring ``hops`` starts: both its ends are done with the tree
    (``classes``, its rounds' messages, on ``routes`` (:func:`_routes`), of ``sizes``
    bytes, each's), each message starting once both its ends are done with their
    messages before, and lasting as long as it takes alone."""
    free = np.zeros(len(hops.src))
    for m, route, size in zip(classes, routes, sizes):
        end = np.maximum(free[m.src], free[m.dst]) + _alone(route, size, figures)[0]
        free[m.src] = end
        free[m.dst] = end
    return np.maximum(free[hops.src], free[hops.dst])


def _staggered(topology: Any, order: tuple[int, ...], rounds: tuple[Any, ...],
               terms: Sequence[tuple[Any, ...]], counts: np.ndarray,
               ds: int) -> np.ndarray | None:
    """What the ring of ``rounds`` (a tree's rounds, then a ring: :func:`_tree_then_ring`)
    on ``order`` at ``counts`` (elements, a row) saves under each of ``terms`` (as
    :meth:`_Described.time` takes them) against the lock-step rounds (seconds, at most
    0), its hops that start apart (:func:`_starts`) not crowding a link in step:
    ``q - 1`` times the slowest hop with every hop of its links beside it less the
    slowest with only those that start with it, or the busiest link's bytes of every
    hop where that is longer; None where the rounds are not such, no
    link is shared, or past :data:`WHOLE_MESSAGES` messages (each is routed)."""
    shape = _tree_then_ring(rounds)
    if shape is None:
        return None
    classes, hops = shape
    if 2 * len(hops.src) > WHOLE_MESSAGES:
        return None
    *tree, ring = _routes(topology, order, [*classes, hops])
    links, hop, heads = ring
    _, on_link, load = np.unique(links, return_inverse=True, return_counts=True)
    if load.max() < 2:
        return None
    on_link = on_link.reshape(-1)
    out = np.zeros((len(terms), counts.shape[-1]))
    for k, figures in enumerate(terms):
        bandwidth = figures[1]
        for j, count in enumerate(counts.tolist()):
            sizes = [_window_bytes(m, len(hops.src), count, ds) for m in classes]
            size = float(hops.elements(np.array([count]))[0]) * ds
            paid = _alone(ring, size, figures)[1]
            start = _starts(classes, tree, sizes, figures, hops)
            _, together, beside = np.unique(
                np.stack([links, np.round(start / max(start.max(), 1e-300), 9)[hop]]),
                axis=1, return_inverse=True, return_counts=True)
            per_link = size / bandwidth[links]
            crowded = np.maximum.reduceat(load[on_link] * per_link, heads)
            started = np.maximum.reduceat(beside[together.reshape(-1)] * per_link, heads)
            # those that start together in step, the others' bytes behind their latency:
            # a step no shorter than the busiest link's bytes of every hop
            paced = np.maximum(paid + started, crowded)
            out[k, j] = (len(hops.src) - 1) * float(paced.max() - (paid + crowded).max())
    return np.minimum(out, 0.0)
