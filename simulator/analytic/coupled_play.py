"""The compiled play of :mod:`.coupled` (:func:`_play`): a chain's crowded hops,
segment by segment, coupled through the chain.  Imported where a chain is played only:
Numba's import and its cached code's load take some 0.4 CPU s a process."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _fill(members: np.ndarray, capacity: float, rate: np.ndarray, out: np.ndarray,
          count: int) -> None:
    """Max-min rates of the ``count`` carrying ``members`` of one link of ``capacity``,
    each at most its own ``rate``, into ``out`` (by member)."""
    order = members[:count].copy()
    for a in range(1, count):  # an insertion sort by rate: a link has a few members
        b, key = a, order[a]
        while b > 0 and rate[order[b - 1]] > rate[key]:
            order[b] = order[b - 1]
            b -= 1
        order[b] = key
    left = capacity
    for a in range(count):
        share = min(rate[order[a]], left / (count - a))
        out[order[a]] = share
        left -= share


@njit(cache=True)
def _play(first: np.ndarray, delay: np.ndarray, serve: np.ndarray, hold: np.ndarray,
          rate: np.ndarray, link: np.ndarray, capacity: np.ndarray,
          size: float) -> tuple[np.ndarray, float]:
    """When the last member (in chain order) has carried and held each of the
    ``len(first)`` segments of ``size`` bytes, and when the first member has: member ``i`` takes segment ``j`` from the run before it
    (``delay`` and ``serve``: its sum less its slowest, its slowest; the first member's
    from ``first``, the run's times for every segment), carries its bytes at its max-min
    share (at most ``rate``) of ``link``'s ``capacity``, then holds it ``hold``.

    Each member and link has at most one event due (a member's start, a link's first
    carrier through, a member's hold over), kept in one row of times: the soonest is
    found by a scan (a few dozen members), an instant's in that order."""
    m, links, segments = len(rate), len(capacity), len(first)
    ends = np.empty(segments)
    first_done = np.inf
    arrive = np.full((m, segments), np.inf)
    arrive[0] = first
    passed = np.zeros(m)  # each run's last segment out (its server's)
    taken = np.zeros(m, dtype=np.int64)  # segments each member has begun
    busy = np.zeros(m, dtype=np.bool_)  # carrying or holding one
    left = np.zeros(m)
    share = np.zeros(m)
    carrying = np.zeros((links, m), dtype=np.int64)
    count = np.zeros(links, dtype=np.int64)
    since = np.zeros(links)  # when each link's rates were last set
    due = np.full(2 * m + links, np.inf)  # starts, links' first through, holds over
    due[0] = first[0]
    while True:
        at = int(np.argmin(due))
        now = due[at]
        if now == np.inf:
            return ends, first_done
        due[at] = np.inf
        if at < m:  # a member starts its next segment
            taken[at] += 1
            busy[at] = True
            left[at] = size
            g = link[at]
            _advance(g, carrying, count, share, left, since, now)
            carrying[g, count[g]] = at
            count[g] += 1
            due[m + g] = _refill(g, carrying, count, capacity, rate, share, left, now)
        elif at < m + links:  # a link's first carriers are through
            g = int(at) - m
            _advance(g, carrying, count, share, left, since, now)
            a = 0
            while a < count[g]:
                i = carrying[g, a]
                if left[i] <= 1e-9 * size:
                    due[m + links + i] = now + hold[i]
                    count[g] -= 1
                    carrying[g, a] = carrying[g, count[g]]
                else:
                    a += 1
            due[at] = _refill(g, carrying, count, capacity, rate, share, left, now)
        else:  # a member's hold is over: its segment goes on through the next run
            i = at - m - links
            j = taken[i] - 1
            if i + 1 < m:
                out = max(passed[i + 1], now + delay[i + 1]) + serve[i + 1]
                passed[i + 1] = out
                arrive[i + 1, j] = out
                if taken[i + 1] == j and not busy[i + 1]:
                    due[i + 1] = out
            else:
                ends[j] = now
            if i == 0 and j + 1 == segments:
                first_done = now
            busy[i] = False
            if taken[i] < segments:
                due[i] = max(now, arrive[i, taken[i]])


@njit(cache=True)
def _advance(g: int, carrying: np.ndarray, count: np.ndarray, share: np.ndarray,
             left: np.ndarray, since: np.ndarray, now: float) -> None:
    """Take from link ``g``'s carriers' bytes left what they carried since its rates
    were set."""
    for a in range(count[g]):
        left[carrying[g, a]] -= share[carrying[g, a]] * (now - since[g])
    since[g] = now


@njit(cache=True)
def _refill(g: int, carrying: np.ndarray, count: np.ndarray, capacity: np.ndarray,
            rate: np.ndarray, share: np.ndarray, left: np.ndarray, now: float) -> float:
    """Set link ``g``'s carriers' shares; when the first of them is through."""
    soonest = np.inf
    if count[g] == 0:
        return soonest
    _fill(carrying[g], capacity[g], rate, share, count[g])
    for a in range(count[g]):
        i = carrying[g, a]
        soonest = min(soonest, now + left[i] / share[i])
    return soonest
