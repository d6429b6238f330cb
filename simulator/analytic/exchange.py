"""Pairwise exchange rounds played rank by rank: every position ``v`` sends to ``v + s``
in round ``s`` (pairwise AllToAll), on a machine of unlike links where its
messages are too many to route at every rank as lock-step rounds
(:data:`simulator.analytic.budgets.WHOLE_TOTAL`) but within
:data:`simulator.analytic.budgets.EXCHANGE_TOTAL`.

As lock-step rounds (each as long as its slowest message, every message at the share
of the round's messages on its links) pairwise AllToAll on ``dgx_h100(32)`` was +5% to
+13% against the DES at 4 to 64 MiB: its ranks drift apart (LL: about 1.3 rounds), so
that a round's messages do not cross the spine links together.  Here (as the
simulator does) a rank starts round ``s`` once it and its partner of round ``s`` are
done with round ``s - 1`` (a max-plus recursion over the ranks' clocks), and each
message's bytes are carried on each link of its route at the share of the messages
whose bytes are in flight there with its own, on average over its own (from the
recursion's starts); the two are iterated to their fixed point, damped
(:data:`EXCHANGE_PASSES` passes), from the lock-step shares.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..gpu import hidden_latency
from .routing import _entries

#: passes of the fixed point between the ranks' clocks and the links' shares
#: (:func:`_exchange_time`): on ``dgx_h100(32)``, LL at 64 MiB, it settles within about
#: 1% of the DES from 12 passes
EXCHANGE_PASSES = 16


def _exchange_time(topology: Any, terms: Sequence[tuple[Any, ...]], order: Sequence[int],
                   nbytes: np.ndarray) -> np.ndarray:
    """Seconds of pairwise exchange rounds over ``order`` (positions' ranks), every
    message of ``nbytes`` (per size), under each of ``terms`` (a protocol's link
    latency, bandwidth, FIFO slot, shares and seconds per byte reduced, per link, as
    :func:`simulator.gpu.link_figures` gives them): protocols x sizes."""
    q = len(order)
    ranks = np.asarray(order, dtype=np.int64)
    sender = np.tile(np.arange(q), q - 1)  # message (s - 1) * q + v: v -> v + s
    distance = np.repeat(np.arange(1, q), q)
    lengths, links = _entries(topology, ranks[sender] * topology.nranks
                              + ranks[(sender + distance) % q])
    message = np.repeat(np.arange(len(sender)), lengths)
    # the messages of each message's round on each link of its route (lock-step)
    _, inverse, counts = np.unique(distance[message] * len(topology.links) + links,
                                   return_inverse=True, return_counts=True)
    together = counts[inverse].astype(float)
    crossed = _crossed(links, sender[message], (sender + distance)[message] % q)
    sizes = np.asarray(nbytes, dtype=float)
    out = np.empty((len(terms), len(sizes)))
    for k, (latency, bandwidth, slot, shares, _) in enumerate(terms):
        per_byte = 1.0 / np.asarray(bandwidth, dtype=float)[links]
        paid = _paid_latency(message, links, (latency, bandwidth, slot, shares), sizes)
        carried = _most(message, len(sender), together[:, None] * per_byte[:, None]
                        * sizes[None, :])
        for _ in range(EXCHANGE_PASSES):
            start = _clocks(paid + carried, q)[0]
            shared = np.ones((len(message), len(sizes)))
            shared[crossed] = _in_flight(message[crossed], links[crossed], start + paid,
                                         start + paid + carried)
            carried = 0.5 * carried + 0.5 * _most(
                message, len(sender), shared * per_byte[:, None] * sizes[None, :])
        out[k] = _clocks(paid + carried, q)[1]
    return out


def _crossed(links: np.ndarray, sender: np.ndarray, receiver: np.ndarray) -> np.ndarray:
    """Per route entry, whether its link carries messages of several senders and of
    several receivers: elsewhere a message's bytes are never in flight with another's
    (a position's messages follow one another, sent and received)."""
    def several(ends: np.ndarray) -> np.ndarray:
        pairs = np.unique(links * (int(ends.max()) + 1) + ends) // (int(ends.max()) + 1)
        return np.bincount(pairs, minlength=int(links.max()) + 1) > 1
    return (several(sender) & several(receiver))[links]


def _paid_latency(message: np.ndarray, links: np.ndarray, figures: tuple[Any, ...],
                  sizes: np.ndarray) -> np.ndarray:
    """Every message's latency left once its FIFO slots hide the rest
    (:func:`simulator.gpu.hidden_latency`, at its route's nominal bottleneck rate and
    its links' most shares): messages x sizes."""
    latency, bandwidth, slot, shares = figures
    messages = int(message.max()) + 1
    route_latency = np.bincount(message, weights=np.asarray(latency)[links],
                                minlength=messages)
    rate = np.full(messages, np.inf)
    np.minimum.at(rate, message, np.asarray(bandwidth, dtype=float)[links])
    most = np.ones(messages)
    if shares is not None:
        np.maximum.at(most, message, np.asarray(shares, dtype=float)[links])
    return hidden_latency(route_latency[:, None], sizes[None, :], rate[:, None], slot,
                          most[:, None])


def _most(message: np.ndarray, messages: int, per_entry: np.ndarray) -> np.ndarray:
    """Per message the most of its route's entries' ``per_entry`` (entries x sizes)."""
    out = np.zeros((messages, per_entry.shape[1]))
    np.maximum.at(out, message, per_entry)
    return out


def _clocks(duration: np.ndarray, q: int) -> tuple[np.ndarray, np.ndarray]:
    """Every message's start and the last rank's end, position ``v`` starting round
    ``s`` once it and ``v + s`` are done with round ``s - 1`` (sent theirs and received
    theirs), each message taking its ``duration`` (messages x sizes, message
    ``(s - 1) q + v``)."""
    v = np.arange(q)
    ready = np.zeros((q, duration.shape[1]))
    start = np.empty_like(duration)
    for s in range(1, q):
        began = np.maximum(ready, ready[(v + s) % q])
        start[(s - 1) * q:s * q] = began
        sent = began + duration[(s - 1) * q:s * q]
        ready = np.maximum(sent, sent[(v - s) % q])
    return start, ready.max(axis=0)


def _in_flight(message: np.ndarray, links: np.ndarray, first: np.ndarray,
               last: np.ndarray) -> np.ndarray:
    """Per route entry (a message on a link) and size, the messages whose bytes are in
    flight on the link with the message's own (``first`` to ``last``, messages x
    sizes), on average over its own (itself included; 1 where it carries nothing)."""
    out = np.ones((len(message), first.shape[1]))
    entries = len(message)
    for j in range(first.shape[1]):
        times = np.concatenate([first[message, j], last[message, j]])
        link = np.concatenate([links, links])
        events = np.lexsort((times, link))
        step = np.where(events < entries, 1.0, -1.0)
        flying = np.cumsum(step)  # each link's events balance: none across links
        ordered = times[events]
        integral = np.concatenate([[0.0], np.cumsum(flying[:-1] * np.diff(ordered))])
        at = np.empty(2 * entries, dtype=np.int64)
        at[events] = np.arange(2 * entries)
        own = last[message, j] - first[message, j]
        overlap = integral[at[entries:]] - integral[at[:entries]]
        out[:, j] = np.where(own > 0, overlap / np.where(own > 0, own, 1.0), 1.0)
    return out
