"""A pipelined chain's crowded hops played segment by segment, coupled through the chain
(:func:`_coupled_end`), compiled with Numba.

Where a chain's hops crowd a link, the fluid of :func:`.crowded._paced` prices the link
as if it carried its hops' bytes at its full rate, but the simulator's link carries less:
its hops' bytes bunch (on ``dgx_h100(32)``, LL 16 MiB, 7 of a link's 8 hops start within
3.5 us of an 8.2 us pace), 2 to 8 of them carry at once, and one carrying alone is held
to its own rate, so a segment takes 8.2 us on each of them, not the 7.3 us of the
link's bytes.  The bunching is the chain's (a hop takes its segments as they arrive from
the hop before it, one that waits for its own last segment keeps the phase it had) and
neither periodic nor stationary: the pace wanders by some 10% over hundreds of segments.
What gives it is the chain's hops played: each hop on a crowded link (a *member*) starts
a segment once its own last one is through and the segment has crossed the hops before
it; it carries the segment's bytes at its max-min share of the link it crowds most (the
link whose hops are the most), then holds it for the rest of its time alone (latency,
reduction: the simulator's order).  The hops between two members (NVLink hops, network
hops on links no other hop takes) never share a link: a run of them is a tandem of
servers of fixed times, which passes segments on as one server of the run's slowest
time after a delay of the others' sum (deterministic servers in tandem commute).
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
from numba import njit

#: a member's states: waiting for a segment, carrying its bytes, holding it
_IDLE, _CARRYING, _HOLDING = 0, 1, 2


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
          rate: np.ndarray, link: np.ndarray, capacity: np.ndarray, size: float,
          segments: int) -> np.ndarray:
    """When each member (in chain order) has carried and held each of ``segments``
    segments of ``size`` bytes (members x segments): member ``i`` takes segment ``j``
    from the run before it (``delay`` and ``serve``: its sum less its slowest, its
    slowest; the first member's from ``first``, the run's times for every segment),
    carries its bytes at its max-min share (at most ``rate``) of ``link``'s
    ``capacity``, then holds it ``hold``."""
    m, links = len(rate), len(capacity)
    end = np.full((m, segments), np.inf)
    arrive = np.full((m, segments), np.inf)
    arrive[0] = first
    passed = np.zeros(m)  # each run's last segment out (its server's)
    taken = np.zeros(m, dtype=np.int64)  # segments each member has begun
    state = np.zeros(m, dtype=np.int64)
    left = np.zeros(m)
    share = np.zeros(m)
    carrying = np.zeros((links, m), dtype=np.int64)
    count = np.zeros(links, dtype=np.int64)
    since = np.zeros(links)  # when each link's rates were last set
    version = np.zeros(links, dtype=np.int64)
    now = 0.0
    # events: (time, kind, member or link, version); kind 0 a member may begin, 1 a
    # link's first carrier may be through, 2 a member's hold is over
    events = [(first[0], 0, 0, 0)]
    while events:
        now, kind, who, seen = heapq.heappop(events)
        if kind == 1:
            if seen != version[who]:
                continue
            g = who
            for a in range(count[g]):
                left[carrying[g, a]] -= share[carrying[g, a]] * (now - since[g])
            since[g] = now
            a = 0
            while a < count[g]:
                i = carrying[g, a]
                if left[i] <= 1e-9 * size:
                    state[i] = _HOLDING
                    heapq.heappush(events, (now + hold[i], 2, i, 0))
                    count[g] -= 1
                    carrying[g, a] = carrying[g, count[g]]
                else:
                    a += 1
            _refill(g, carrying, count, capacity, rate, share, left, version, now, events)
        elif kind == 2:
            j = taken[who] - 1
            end[who, j] = now
            state[who] = _IDLE
            if who + 1 < m:
                out = max(passed[who + 1], now + delay[who + 1]) + serve[who + 1]
                passed[who + 1] = out
                arrive[who + 1, j] = out
                if taken[who + 1] == j:
                    heapq.heappush(events, (out, 0, who + 1, 0))
            if taken[who] < segments:
                heapq.heappush(events, (max(now, arrive[who, taken[who]]), 0, who, 0))
        elif state[who] == _IDLE and taken[who] < segments \
                and arrive[who, taken[who]] <= now:
            taken[who] += 1
            state[who] = _CARRYING
            left[who] = size
            g = link[who]
            for a in range(count[g]):
                left[carrying[g, a]] -= share[carrying[g, a]] * (now - since[g])
            since[g] = now
            carrying[g, count[g]] = who
            count[g] += 1
            _refill(g, carrying, count, capacity, rate, share, left, version, now, events)
    return end


@njit(cache=True)
def _refill(g: int, carrying: np.ndarray, count: np.ndarray, capacity: np.ndarray,
            rate: np.ndarray, share: np.ndarray, left: np.ndarray, version: np.ndarray,
            now: float, events: list[Any]) -> None:
    """Set link ``g``'s carriers' shares and queue when the first of them is through."""
    version[g] += 1
    if count[g] == 0:
        return
    _fill(carrying[g], capacity[g], rate, share, count[g])
    soonest = np.inf
    for a in range(count[g]):
        i = carrying[g, a]
        soonest = min(soonest, now + left[i] / share[i])
    heapq.heappush(events, (soonest, 1, g, version[g]))


def _runs(alone: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run of hops before a member and the one after the last (``alone``: every
    hop's time alone, in chain order): its sum less its slowest, its slowest."""
    bounds = np.concatenate([[-1], members, [len(alone)]])
    delay, serve = np.zeros(len(bounds) - 1), np.zeros(len(bounds) - 1)
    for k, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        run = alone[a + 1:b]
        if len(run):
            serve[k] = run.max()
            delay[k] = run.sum() - serve[k]
    return delay, serve


def _coupled_end(alone: np.ndarray, rate: np.ndarray, size: float,
                 sharing: tuple[np.ndarray, np.ndarray], capacity: np.ndarray,
                 segments: int) -> float:
    """When the last of ``segments`` segments of ``size`` bytes is through a chain whose
    hops (in the order a segment crosses them) take ``alone`` seconds a segment alone,
    carrying its bytes at ``rate``; ``sharing``: the hops on each crowded link and the
    link (pairs of numbers), each link of ``capacity`` bytes a second.  Each member
    shares the link of its own that the most hops take (:func:`_play`)."""
    hops, link = sharing
    load = np.bincount(link, minlength=len(capacity))
    order = np.lexsort((-load[link], hops))
    members, first_of = np.unique(hops[order], return_index=True)
    most = link[order][first_of]
    delay, serve = _runs(alone, members)
    first = delay[0] + serve[0] * np.arange(1, segments + 1)
    hold = alone[members] - size / rate[members]
    end = _play(first, delay[:-1], serve[:-1], hold, rate[members].astype(float),
                most.astype(np.int64), capacity.astype(float), float(size), int(segments))
    passed = 0.0
    for last in end[-1].tolist():  # the run after the last member
        passed = max(passed, last + delay[-1]) + serve[-1]
    return passed
