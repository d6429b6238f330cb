"""The compiled play of :mod:`.coupled` (:func:`_play`): a chain's crowded hops,
segment by segment, coupled through the chain.  Imported where a chain is played only:
Numba's import and its cached code's load take some 0.4 CPU s a process."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def _play(first: np.ndarray, delay: np.ndarray, serve: np.ndarray, hold: np.ndarray,
          rate: np.ndarray, link: np.ndarray, capacity: np.ndarray,
          size: float) -> tuple[np.ndarray, float]:
    """When the last member (in chain order) has carried and held each of the
    ``len(first)`` segments of ``size`` bytes, and when the first member has: member
    ``i`` takes segment ``j`` from the run before it (``delay`` and ``serve``: its sum
    less its slowest, its slowest; the first member's from ``first``, the run's times
    for every segment), carries its bytes at its max-min share (at most ``rate``) of
    ``link``'s ``capacity``, then holds it ``hold``.

    Each member and link has at most one event due (a member's start, a link's first
    carriers through: each then holds its segment, known to end, so passes it on at
    once), kept in a binary heap (:func:`_due`): the soonest first, an instant's members
    before its links, each by number."""
    m, links, segments = len(rate), len(capacity), len(first)
    ends = np.empty(segments)
    first_done = np.inf
    arrive = np.full((m, segments), np.inf)
    arrive[0] = first
    passed = np.zeros(m)  # each run's last segment out (its server's)
    taken = np.zeros(m, dtype=np.int64)  # segments each member has begun
    carries = np.zeros(m, dtype=np.bool_)  # carrying one
    free = np.zeros(m)  # when each member's last segment is held
    left = np.zeros(m)
    share = np.zeros(m)
    carrying = np.zeros((links, m), dtype=np.int64)
    count = np.zeros(links, dtype=np.int64)
    since = np.zeros(links)  # when each link's rates were last set
    due = np.full(m + links, np.inf)  # members' starts, links' first through
    heap, where = _heap(m + links)
    _due(due, heap, where, 0, first[0])
    while True:
        at = heap[0]
        now = due[at]
        if now == np.inf:
            return ends, first_done
        g = link[at] if at < m else at - m
        for a in range(count[g]):  # what the link's carriers carried since its last
            left[carrying[g, a]] -= share[carrying[g, a]] * (now - since[g])
        since[g] = now
        if at < m:  # a member starts its next segment
            _due(due, heap, where, at, np.inf)
            taken[at] += 1
            carries[at] = True
            left[at] = size
            carrying[g, count[g]] = at
            count[g] += 1
        a = 0
        while a < count[g]:  # the link's carriers through hold their segments, then
            i = carrying[g, a]  # pass them on
            if left[i] > 1e-9 * size:
                a += 1
                continue
            count[g] -= 1
            carrying[g, a] = carrying[g, count[g]]
            carries[i] = False
            free[i] = now + hold[i]
            j = taken[i] - 1
            if i + 1 < m:  # through the next run to the next member, due where waiting
                out = max(passed[i + 1], free[i] + delay[i + 1]) + serve[i + 1]
                passed[i + 1] = out
                arrive[i + 1, j] = out
                if taken[i + 1] == j and not carries[i + 1]:
                    _due(due, heap, where, i + 1, max(free[i + 1], out))
            else:
                ends[j] = free[i]
            if i == 0 and j + 1 == segments:
                first_done = free[i]
            if taken[i] < segments:  # its next, where come
                _due(due, heap, where, i, max(free[i], arrive[i, taken[i]]))
        _due(due, heap, where, m + g,
             _refill(g, carrying, count, capacity, rate, share, left, now))


@njit(cache=True, error_model="numpy")
def _heap(size: int) -> tuple[np.ndarray, np.ndarray]:
    """A binary heap of ``size`` events (all due never): the events in heap order, and
    each event's place in it."""
    order = np.arange(size)
    return order, order.copy()


@njit(cache=True, error_model="numpy")
def _due(due: np.ndarray, heap: np.ndarray, where: np.ndarray, event: int,
         time: float) -> None:
    """Set ``event`` due at ``time`` and move it to its place in ``heap`` (``where``:
    each event's place), soonest first, an instant's events by number."""
    due[event] = time
    k = where[event]
    while k > 0:  # up, while sooner than its parent
        up = (k - 1) // 2
        other = heap[up]
        if _sooner(due, other, event):
            break
        heap[k], where[other] = other, k
        k = up
    n = len(heap)
    while True:  # down, while a child is sooner
        child = 2 * k + 1
        if child >= n:
            break
        if child + 1 < n and _sooner(due, heap[child + 1], heap[child]):
            child += 1
        other = heap[child]
        if not _sooner(due, other, event):
            break
        heap[k], where[other] = other, k
        k = child
    heap[k], where[event] = event, k


@njit(cache=True, error_model="numpy")
def _sooner(due: np.ndarray, a: int, b: int) -> bool:
    """Whether event ``a`` is due before ``b`` (at one instant, the lower number)."""
    return due[a] < due[b] or (due[a] == due[b] and a < b)


@njit(cache=True, error_model="numpy")
def _refill(g: int, carrying: np.ndarray, count: np.ndarray, capacity: np.ndarray,
            rate: np.ndarray, share: np.ndarray, left: np.ndarray, now: float) -> float:
    """Set link ``g``'s carriers' max-min shares of its ``capacity``, each at most its
    own ``rate`` (its carriers left sorted by rate); when the first of them is through.
    One function, calling none: Numba counts its arrays' references around a call."""
    n = count[g]
    for a in range(1, n):  # an insertion sort: a few members, most still in order
        b, key = a, carrying[g, a]
        while b > 0 and rate[carrying[g, b - 1]] > rate[key]:
            carrying[g, b] = carrying[g, b - 1]
            b -= 1
        carrying[g, b] = key
    spare, soonest = capacity[g], np.inf
    for a in range(n):
        i = carrying[g, a]
        share[i] = min(rate[i], spare / (n - a))
        spare -= share[i]
        soonest = min(soonest, now + left[i] / share[i])
    return soonest
