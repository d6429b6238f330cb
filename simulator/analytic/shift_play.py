"""The compiled fluid play of :mod:`.shifts` (:func:`_play`): shift rounds' messages,
every rank's, as events.  Imported where shift rounds are played only: Numba's import
and its cached code's load take some 0.4 CPU s a process."""

from __future__ import annotations

import numpy as np
from numba import njit

from .compiling import announce_compiles
from .coupled_play import _due, _heap

announce_compiles()  # a compile after an install is said on stderr


@njit(cache=True, error_model="numpy")
def _play(paid: np.ndarray, own: np.ndarray, weight: np.ndarray, src: np.ndarray,
          dst: np.ndarray, rounds: np.ndarray, heads: np.ndarray, links: np.ndarray,
          bandwidth: np.ndarray, involved: np.ndarray, involving: np.ndarray,
          q: int) -> tuple[np.ndarray, np.ndarray]:
    """When each message's bytes start and when they are through.

    Message ``i`` (in round order) of round ``rounds[i]`` goes from position ``src[i]``
    to ``dst[i]`` over ``links[heads[i]:heads[i + 1]]`` as ``weight[i]`` transfers side
    by side of ``own[i]`` bytes each.  It is posted once both its ends are done with the
    round before (sent and received all their messages of it; the first round's at 0),
    and its bytes start ``paid[i]`` later.  A link's transfers in flight each take an
    equal share of its ``bandwidth``, a transfer the least share over its route, set
    again for the messages on a message's links whenever it starts or ends.
    ``involving[involved[k q + x]:involved[k q + x + 1]]``: the messages of round ``k``
    that position ``x`` sends or receives.

    Each message has at most one event due (its bytes' start, then its end), kept in
    the binary heap of :mod:`.coupled_play` (the soonest first, an instant's by
    number)."""
    count, nlinks = len(paid), len(bandwidth)
    start, end = np.full(count, np.inf), np.full(count, np.inf)
    flying = np.zeros(count, dtype=np.bool_)
    left, rate, since = own.astype(np.float64), np.zeros(count), np.zeros(count)
    # each link's messages in flight: at most those whose routes cross it
    slots = np.zeros(nlinks + 1, dtype=np.int64)
    for e in range(len(links)):
        slots[links[e] + 1] += 1
    slots = np.cumsum(slots)
    carrying = np.empty(len(links), dtype=np.int64)
    carried = np.zeros(nlinks, dtype=np.int64)
    load = np.zeros(nlinks)  # transfers in flight on each link
    outstanding = np.diff(involved)  # each position's messages of each round not through
    done = np.zeros(q, dtype=np.int64)  # rounds each position is done with
    due = np.full(count, np.inf)
    heap, where = _heap(count)
    for i in range(count):
        if rounds[i] == 0:
            _due(due, heap, where, i, paid[i])
    while True:
        i = heap[0]
        now = due[i]
        if now == np.inf:
            return start, end
        if not flying[i]:  # its bytes start
            flying[i] = True
            start[i] = now
            since[i] = now
            for e in range(heads[i], heads[i + 1]):
                g = links[e]
                carrying[slots[g] + carried[g]] = i
                carried[g] += 1
                load[g] += weight[i]
        else:  # its bytes are through
            end[i] = now
            _due(due, heap, where, i, np.inf)
            for e in range(heads[i], heads[i + 1]):
                g = links[e]
                for a in range(slots[g], slots[g] + carried[g]):
                    if carrying[a] == i:
                        carried[g] -= 1
                        carrying[a] = carrying[slots[g] + carried[g]]
                        break
                load[g] -= weight[i]
            k = rounds[i]
            for x in (src[i], dst[i]):
                outstanding[k * q + x] -= 1
                if outstanding[k * q + x] == 0:
                    done[x] = k + 1
                    if (k + 1) * q < len(involved) - 1:
                        _post(k + 1, x, now, paid, src, dst, involved, involving, done, q,
                              due, heap, where)
        for e in range(heads[i], heads[i + 1]):  # new shares on its links
            g = links[e]
            for a in range(slots[g], slots[g] + carried[g]):
                j = carrying[a]
                left[j] -= rate[j] * (now - since[j])
                since[j] = now
                least = np.inf
                for f in range(heads[j], heads[j + 1]):
                    least = min(least, bandwidth[links[f]] / load[links[f]])
                rate[j] = least
                _due(due, heap, where, j, now + max(left[j], 0.0) / least)


@njit(cache=True, error_model="numpy")
def _post(k: int, x: int, now: float, paid: np.ndarray, src: np.ndarray, dst: np.ndarray,
          involved: np.ndarray, involving: np.ndarray, done: np.ndarray, q: int,
          due: np.ndarray, heap: np.ndarray, where: np.ndarray) -> None:
    """Post position ``x``'s messages of round ``k`` whose other end is done with the
    round before too (``x`` is, ``now``: their bytes start ``paid`` later)."""
    for a in range(involved[k * q + x], involved[k * q + x + 1]):
        j = involving[a]
        other = dst[j] if src[j] == x else src[j]
        if done[other] >= k:
            _due(due, heap, where, j, now + paid[j])
