"""Exchange rounds played rank by rank: every position ``v`` sends to ``v + s`` in round
``s`` (pairwise AllToAll: :func:`_exchange_rounds` reads it off the description), on a
machine of unlike links where its messages are too many to route at every rank as
lock-step rounds (:data:`simulator.analytic.budgets.WHOLE_TOTAL`) but within
:data:`simulator.analytic.budgets.EXCHANGE_TOTAL`.

As lock-step rounds (each as long as its slowest message, every message at the share
of the round's messages on its links) pairwise AllToAll on ``dgx_h100(32)`` was +5% to
+13% against the DES at 4 to 64 MiB: its ranks drift apart (LL: about 1.3 rounds), so
that a round's messages do not cross the spine links together.  Here (as the
simulator does) a rank starts round ``s`` once it and its partner of round ``s`` are
done with round ``s - 1`` (a max-plus recursion over the ranks' clocks), and each
message's bytes are carried on each link of its route at the share of the messages
whose bytes are in flight there with its own, on average over its own (from the
recursion's starts); the two are iterated to their fixed point, damped, from the
lock-step shares.

That fixed point costs a sort of the spine links' messages a pass, so it is found at a
few sizes, not at every one (:func:`_per_byte`).  Where the latency left
(:func:`simulator.gpu.hidden_latency`) is little of a message's time, every clock
scales with the bytes: the shares are the same at every size, and under every protocol
whose links' rates are the line rates scaled alike (LL, LL128 and Simple on
``dgx_h100``), so the bytes alone's fixed point is found once (:func:`_flight_times`,
:data:`EXCHANGE_PASSES` passes).  Where the latency and the bytes are both much of it,
the fixed point with the latency is found at anchors (:func:`_anchors`, 2 or 3 a
protocol), each from the one above in :data:`WARM_PASSES` passes, and every size's
seconds a byte interpolated between them; where the latency is most of it, the
shares hardly matter (the lowest anchor's).  Every size is then played once, the
protocols' sizes side by side.  On ``dgx_h100(30..64)``, every protocol at 4 KiB to
1 GiB, it is within 3.2% of the DES (the sample's rounds see about an eighth of the
spine links' load: -39% under LL at 64 MiB); the 66 sizes of a table under the three
protocols take about 0.4 CPU s at 32 nodes, 1.5 s at 64.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from collectives.traffic import Round

from ..gpu import hidden_latency
from .routing import _route_figures

#: passes of the bytes alone's fixed point between the ranks' clocks and the links'
#: shares (:func:`_flight_times`): it settles within about 2%, so that ``dgx_h100(32)``
#: under LL at 256 MiB is 1.5% under the DES at 12 passes, 0.4% over at 16 and 1.7% over
#: at 48; every protocol on 30 to 64 nodes at 4 KiB to 1 GiB is within 3.2% at 16 passes,
#: 4.3% at 12 (32 nodes, LL at 24 MiB)
EXCHANGE_PASSES = 16
#: passes of the fixed point at an anchor size, from the one above (:func:`_per_byte`):
#: 2, 3, 4 and 6 give 30 nodes, LL at 16 MiB, -3.1%, -4.2%, -3.9% and -3.3% (16 passes
#: from the lock-step shares -1.3%)
WARM_PASSES = 2
#: the slowest message's bytes' fractions of its time between which sizes are anchors
#: (:func:`_anchors`): below, the bytes' shares hardly matter; above, the latency's
MIXED = (0.05, 0.95)
#: anchors at most so many times apart (:func:`_anchors`): 16 and 4 give the same
#: within about 1% on ``dgx_h100(32)`` (against the fixed point at every size)
ANCHOR_RATIO = 16


class _Exchange:
    """Every message of the exchange rounds over one order and the links of its route:
    message ``(s - 1) q + v`` goes from position ``v`` to ``v + s``.

    Attributes
    ----------
    q : int
        The positions.
    message, links : numpy.ndarray
        Per route entry (a message on a link of its route, messages in order) its
        message and link.
    heads : numpy.ndarray
        Every message's first entry.
    together : numpy.ndarray
        Per entry, the messages of its round on its link (the lock-step shares).
    crossed : numpy.ndarray
        Per entry, whether its link carries several senders' and several receivers'
        messages (elsewhere a message's bytes are never in flight with another's).
    crossing, crossed_heads : numpy.ndarray
        The messages with a crossed entry and the first of each's crossed entries
        (among the crossed entries).
    by_link, link_message, link_rank : numpy.ndarray
        The crossed entries link by link (in round order on each), their messages and
        their links numbered from 0.
    """

    def __init__(self, topology: Any, order: tuple[int, ...]) -> None:
        q = self.q = len(order)
        ranks = np.asarray(order, dtype=np.int64)
        sender = np.tile(np.arange(q), q - 1)
        distance = np.repeat(np.arange(1, q), q)
        receiver = (sender + distance) % q
        lengths, self.links = topology.routes(ranks[sender], ranks[receiver])
        self.message = np.repeat(np.arange(len(sender)), lengths)
        self.heads = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        rounds = distance[self.message] * len(topology.links) + self.links
        self.together = np.bincount(rounds)[rounds].astype(float)
        self.crossed = _crossed(self.links, sender[self.message], receiver[self.message])
        crossing = self.message[self.crossed]  # in order
        self.crossed_heads = np.flatnonzero(np.r_[True, crossing[1:] != crossing[:-1]])
        self.crossing = crossing[self.crossed_heads]
        self.by_link = np.argsort(self.links[self.crossed], kind="stable")
        self.link_message = crossing[self.by_link]
        link = self.links[self.crossed][self.by_link]
        self.link_rank = np.cumsum(np.r_[0, link[1:] != link[:-1]]).astype(float)


@functools.lru_cache(maxsize=4)
def _exchange(topology: Any, order: tuple[int, ...]) -> _Exchange:
    """The exchange rounds over ``order`` on ``topology`` (cached)."""
    return _Exchange(topology, order)


def _exchange_rounds(rounds: Sequence[Any], q: int, counts: np.ndarray) -> bool:
    """Whether ``rounds`` (a description, :func:`collectives.traffic.describe`) are
    exchange rounds by distance over ``q`` positions: lock-step rounds of one class
    each, every position ``v`` sending ``v + s`` a message of the count (at every one of
    ``counts``), unreduced, for ``s`` from 1 to ``q - 1`` in order (a round repeated
    stands for as many distances on from its own)."""
    v, distance = np.arange(q), 1
    for r in rounds:
        if not isinstance(r, Round) or r.paced or r.chain or len(r.messages) != 1:
            return False
        m = r.messages[0]
        if m.reduce or not np.array_equal(m.src, v) \
                or not np.array_equal(m.dst, (v + distance) % q) \
                or not np.array_equal(m.elements(counts), counts):
            return False
        distance += r.repeat
    return distance == q


def _exchange_time(topology: Any, terms: Sequence[tuple[Any, ...]], order: Sequence[int],
                   nbytes: np.ndarray) -> np.ndarray:
    """Seconds of pairwise exchange rounds over ``order`` (positions' ranks), every
    message of ``nbytes`` (per size), under each of ``terms`` (a protocol's link
    latency, bandwidth, FIFO slot, shares and seconds per byte reduced, per link, as
    :func:`simulator.gpu.link_figures` gives them): protocols x sizes."""
    rounds = _exchange(topology, tuple(order))
    sizes = np.asarray(nbytes, dtype=float)
    out = np.empty((len(terms), len(sizes)))
    for k, (latency, bandwidth, slot, shares, _) in enumerate(terms):
        bandwidth = np.asarray(bandwidth, dtype=float)
        delay, rate, most = _route_figures(rounds.links, rounds.heads, np.asarray(latency),
                                           bandwidth, shares)

        def paid(block: Any, at: np.ndarray) -> np.ndarray:
            return hidden_latency(delay[block, None], at, rate[block, None], slot,
                                  most if np.isscalar(most) else most[block, None])
        rows, weights = _per_byte(topology, tuple(order), bandwidth, paid, sizes)
        out[k] = _played(range(1, rounds.q), rounds.q, lambda block: paid(block, sizes)
                         + rows[:, block].T @ weights)
    return out


def _per_byte(topology: Any, order: tuple[int, ...], bandwidth: np.ndarray, paid: Any,
              sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every message's seconds a byte at a few sizes (rows x messages) and the weights
    of those rows at every size (rows x sizes, the bytes included), so that their
    product is every message's bytes' time at every size: at the fixed point of the
    bytes alone (:func:`_flight_times`) above the largest anchor (:func:`_anchors`: the
    latency left, ``paid(block, sizes)``, little of the slowest message's time), else
    interpolated (in the log of the size) between the anchors, whose fixed point with
    the latency is found warm, from the one above, in :data:`WARM_PASSES` passes (below
    the smallest, its)."""
    rounds = _exchange(topology, order)
    alone = _flight_times(topology, order, _relative(bandwidth)) / bandwidth.max()
    slowest = slice(int(np.argmax(alone)), int(np.argmax(alone)) + 1)
    anchors = _anchors(sizes, paid(slowest, sizes)[0], alone[slowest] * sizes)
    per_entry = 1.0 / bandwidth[rounds.links]
    rows = [alone]
    for n in anchors[::-1]:
        carried = _fixed_point(rounds, per_entry * n, paid(slice(None), np.array([n]))[:, 0],
                               rows[-1] * n, WARM_PASSES)
        rows.append(carried / n)
    return np.array(rows), _anchor_fractions(sizes, anchors) * sizes


def _anchor_fractions(sizes: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """The weights of a message's seconds a byte found at the bytes alone and at each of
    ``anchors`` (ascending; rows: the bytes alone's, then the anchors' from the largest
    down) at every one of ``sizes`` (rows x sizes, each column summing to 1): the bytes
    alone's above the largest anchor, else interpolated in the log of the size between
    the anchors (below the smallest, its)."""
    fractions = np.zeros((len(anchors) + 1, len(sizes)))
    above = sizes > (anchors[-1] if len(anchors) else 0.0)
    fractions[0, above] = 1.0
    if len(anchors):
        at = np.interp(np.log(np.maximum(sizes, anchors[0])), np.log(anchors),
                       np.arange(len(anchors)))[~above]
        low = np.floor(at).astype(np.int64)
        high = np.minimum(low + 1, len(anchors) - 1)
        within = np.flatnonzero(~above)
        # anchor i (ascending) is row len(anchors) - i
        np.add.at(fractions, (len(anchors) - low, within), 1 + low - at)
        np.add.at(fractions, (len(anchors) - high, within), at - low)
    return fractions


def _anchors(sizes: np.ndarray, latency: np.ndarray, carried: np.ndarray,
             within: tuple[float, float] = MIXED, ratio: float = ANCHOR_RATIO) -> np.ndarray:
    """The sizes (ascending) whose fixed point is found with the latency
    (:func:`_per_byte`): of those where the slowest message's bytes (``carried``) are
    between the fractions ``within`` of its time (with its ``latency`` left), the
    largest and each at least ``ratio`` times smaller than the one before."""
    part = carried / (carried + latency)
    mixed = np.unique(sizes[(part > within[0]) & (part < within[1])])[::-1]
    kept: list[float] = []
    for n in mixed.tolist():
        if not kept or n * ratio <= kept[-1]:
            kept.append(n)
    return np.array(kept[::-1])


def _relative(bandwidth: np.ndarray) -> bytes:
    """The links' rates relative to the fastest (a key: the shares of rates scaled alike
    are alike)."""
    return np.round(bandwidth / bandwidth.max(), 12).tobytes()


@functools.lru_cache(maxsize=8)
def _flight_times(topology: Any, order: tuple[int, ...], relative: bytes) -> np.ndarray:
    """Per message, the seconds a byte of it takes at the fixed point of the ranks'
    clocks and the shares of the messages in flight together on its links, every message
    as long as its bytes at those shares, the links' rates ``relative`` (:func:`_relative`,
    the fastest 1 B/s): from the lock-step shares, :data:`EXCHANGE_PASSES` damped
    passes."""
    rounds = _exchange(topology, order)
    per_entry = 1.0 / np.frombuffer(relative)[rounds.links]
    return _fixed_point(rounds, per_entry, np.zeros(len(rounds.heads)),
                        np.maximum.reduceat(rounds.together * per_entry, rounds.heads),
                        EXCHANGE_PASSES)


def _fixed_point(rounds: _Exchange, per_entry: np.ndarray, paid: np.ndarray,
                 carried: np.ndarray, passes: int) -> np.ndarray:
    """Every message's time on its links (its bytes over each link's rate,
    ``per_entry``, at the share of the messages in flight there with it, the most over
    its route) at the fixed point with the ranks' clocks, every message paying ``paid``
    first: ``passes`` damped passes from ``carried``."""
    crossed, crossing = rounds.crossed, rounds.crossing
    alone = np.maximum.reduceat(per_entry, rounds.heads)
    per_crossed = per_entry[crossed]
    for _ in range(passes):
        start = _starts(paid + carried, rounds.q) + paid
        shared = _in_flight(rounds, start, start + carried)
        slowest = alone.copy()
        slowest[crossing] = np.maximum(alone[crossing], np.maximum.reduceat(
            shared * per_crossed, rounds.crossed_heads))
        carried = 0.5 * (carried + slowest)
    return carried


def _crossed(links: np.ndarray, sender: np.ndarray, receiver: np.ndarray) -> np.ndarray:
    """Per route entry, whether its link carries messages of several senders and of
    several receivers: elsewhere a message's bytes are never in flight with another's
    (a position's messages follow one another, sent and received)."""
    def several(ends: np.ndarray) -> np.ndarray:
        one = np.zeros(int(links.max()) + 1, dtype=ends.dtype)
        one[links] = ends  # one of each link's
        return np.bincount(links, weights=ends != one[links], minlength=len(one)) > 0
    return (several(sender) & several(receiver))[links]


def _starts(duration: np.ndarray, q: int) -> np.ndarray:
    """Every message's start, position ``v`` starting round ``s`` once it and ``v + s``
    are done with round ``s - 1`` (sent theirs and received theirs), each message taking
    its ``duration`` (message ``(s - 1) q + v``)."""
    start = np.empty_like(duration)
    _played(range(1, q), q, lambda block: duration[block], start)
    return start


def _played(shifts: Sequence[int], q: int, duration: Any,
            start: np.ndarray | None = None) -> np.ndarray:
    """The last position's end of rounds by shift over ``q`` positions, position ``v``
    sending ``v + s`` in the round of shift ``s`` (of ``shifts``, in order) once it and
    ``v + s`` are done with the round before (sent theirs and received theirs), each
    position's messages of round ``k`` taking ``duration(block)`` (``block`` their
    numbers, ``k q`` to ``(k + 1) q``; per size or not); the messages' starts written
    to ``start`` where given."""
    v = np.arange(q)
    ready: Any = 0.0
    for k, s in enumerate(shifts):
        block = slice(k * q, (k + 1) * q)
        took = duration(block)
        began = np.maximum(ready, ready[(v + s) % q]) if k else np.zeros_like(took)
        if start is not None:
            start[block] = began
        sent = began + took
        ready = np.maximum(sent, sent[(v - s) % q])
    return ready.max(axis=0)


def _in_flight(rounds: _Exchange, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Per crossed route entry (a message on a link), the messages whose bytes are in
    flight on the link with the message's own (``first`` to ``last``, per message), on
    average over its own (itself included; 1 where it carries nothing): each link's
    starts and ends sorted and the messages in flight integrated over time."""
    entries = len(rounds.by_link)
    begins, ends = first[rounds.link_message], last[rounds.link_message]
    apart = rounds.link_rank * (2.0 * float(ends.max()) + 1.0)  # no link's events cross
    times = np.concatenate([begins, ends])
    events = np.argsort(np.concatenate([apart + begins, apart + ends]))
    # begun less ended so far (each link's balance: none across links)
    flying = 2 * np.cumsum(events < entries) - np.arange(1, 2 * entries + 1)
    integral = np.empty(2 * entries)
    integral[0] = 0.0
    np.cumsum(flying[:-1] * np.diff(times[events]), out=integral[1:])
    at = np.empty(2 * entries)
    at[events] = integral
    own = ends - begins
    out = np.empty(entries)
    out[rounds.by_link] = np.where(own > 0, (at[entries:] - at[:entries])
                                   / np.where(own > 0, own, 1.0), 1.0)
    return out
