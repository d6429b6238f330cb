"""The compiled max-min fills of :mod:`.sharing` (:func:`_fill`, :func:`_ends`) and its
compiled play of a shared link's queues (:func:`_queue_play`).
Imported where messages share links only: Numba's import and its cached code's load
take some 0.4 CPU s a process."""

from __future__ import annotations

import numpy as np
from numba import njit

from .compiling import announce_compiles

announce_compiles()  # a compile after an install is said on stderr


@njit(cache=True, error_model="numpy")
def _fill(flying: np.ndarray, cap: np.ndarray, starts: np.ndarray, links: np.ndarray,
          capacity: np.ndarray, each: np.ndarray) -> np.ndarray:
    """The max-min fair rates of the ``flying`` messages (messages x sizes), a size at
    a time (:func:`_fill_size`): message ``m`` is on ``links[starts[m]:starts[m + 1]]``
    (rows of ``capacity``, links x sizes), carries ``each`` transfers side by side
    (messages x sizes) and goes at most at its ``cap``."""
    rate = np.zeros(flying.shape)
    for size in range(flying.shape[1]):
        _fill_size(flying[:, size], cap[:, size], starts, links, capacity[:, size],
                   each[:, size], rate[:, size])
    return rate


@njit(cache=True, error_model="numpy")
def _ends(start: np.ndarray, nbytes: np.ndarray, cap: np.ndarray, starts: np.ndarray,
          links: np.ndarray, capacity: np.ndarray, each: np.ndarray) -> np.ndarray:
    """:func:`.sharing._filled_ends`, a size at a time: when each message is through
    (-inf: never started), from its ``start`` with ``nbytes`` to carry (messages x
    sizes) at the max-min fair rates of :func:`_fill`, set again whenever one starts or
    ends, with the same operations in the same order, so the same ends."""
    count, sizes = start.shape
    end = np.full(start.shape, -np.inf)
    rate = np.zeros(count)
    for size in range(sizes):
        left = nbytes[:, size].astype(np.float64)
        waiting = start[:, size].copy()
        flying = np.zeros(count, dtype=np.bool_)
        now = waiting.min()
        if np.isinf(now):
            now = 0.0
        for _ in range(2 * count):
            for message in range(count):
                if waiting[message] <= now:
                    flying[message] = True
                    waiting[message] = np.inf
            rate[:] = 0.0
            _fill_size(flying, cap[:, size], starts, links, capacity[:, size],
                       each[:, size], rate)
            step = waiting.min() - now
            for message in range(count):
                if flying[message]:
                    step = min(step, left[message] / rate[message])
            if np.isinf(step):
                break
            for message in range(count):
                if flying[message]:
                    taken = left[message] / rate[message]
                    if taken <= step:
                        end[message, size] = now + taken
                        flying[message] = False
                    left[message] = left[message] - rate[message] * step
            now = now + step
    return end


@njit(cache=True, error_model="numpy")
def _fill_size(flying: np.ndarray, cap: np.ndarray, starts: np.ndarray, links: np.ndarray,
               capacity: np.ndarray, each: np.ndarray, rate: np.ndarray) -> None:
    """Into ``rate``, :func:`_fill` at one size (each argument that size's column).  A
    pass fixes the free messages at the smallest fair share of a link (its room over
    its free transfers) or cap, as :func:`.sharing`'s passes over all sizes at once
    did, with the same operations in the same order (a link's sums over its messages
    in their order), so the rates are the same; a pass reads the free messages only."""
    count = len(flying)
    sums = np.zeros(len(capacity))
    share = np.empty(len(capacity))
    free = np.empty(count, dtype=np.int64)  # the free messages, in order
    fixed = np.empty(count, dtype=np.int64)  # those a pass fixes, in order
    room = capacity.astype(np.float64)
    left = 0
    for message in range(count):
        if flying[message]:
            free[left] = message
            left += 1
    while left > 0:
        _link_sums(free, left, starts, links, each, sums)
        fair = np.inf
        for link in range(len(room)):
            share[link] = room[link] / max(sums[link], 1.0) if sums[link] > 0 else np.inf
            fair = min(fair, share[link])
        for k in range(left):
            fair = min(fair, cap[free[k]])
        kept, ended = 0, 0
        for k in range(left):
            message = free[k]
            tight = cap[message] <= fair
            for at in range(starts[message], starts[message + 1]):
                tight |= share[links[at]] <= fair
            if tight:
                rate[message] = fair
                fixed[ended] = message
                ended += 1
            else:
                free[kept] = message
                kept += 1
        _link_sums(fixed, ended, starts, links, each, sums)
        # (a size whose messages are all fixed has no fair share left: inf)
        level = 0.0 if np.isinf(fair) else fair
        for link in range(len(room)):
            room[link] = max(room[link] - sums[link] * level, 0.0)
        left = kept


@njit(cache=True, error_model="numpy")
def _link_sums(messages: np.ndarray, count: int, starts: np.ndarray, links: np.ndarray,
               each: np.ndarray, sums: np.ndarray) -> None:
    """Into ``sums``, per link the sum of ``each`` of the first ``count`` of
    ``messages`` (in order) on it, from zero."""
    sums[:] = 0.0
    for k in range(count):
        message = messages[k]
        for at in range(starts[message], starts[message + 1]):
            sums[links[at]] += each[message]


@njit(cache=True, error_model="numpy")
def _queue_play(start: np.ndarray, work: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """:func:`.sharing._shared_ends`, a queue (column of ``start``, ``work`` and
    ``weight``: places x queues) at a time over its messages only (the places starting
    before infinity, in order: most queues hold 2 of 4 to 64 places), with the same
    operations in the same order: a pass per distinct start, the messages in flight
    sharing the link as if none came until the next; -inf at an empty place."""
    places, queues = start.shape
    end = np.full(start.shape, -np.inf)
    spot = np.empty(places, dtype=np.int64)
    waiting, left, each = np.empty(places), np.empty(places), np.empty(places)
    share, through = np.empty(places), np.empty(places)
    flying = np.zeros(places, dtype=np.bool_)
    for queue in range(queues):
        count = 0
        for place in range(places):
            if start[place, queue] != np.inf:
                spot[count] = place
                waiting[count] = start[place, queue]
                left[count] = work[place, queue]
                each[count] = weight[place, queue]
                flying[count] = False
                count += 1
        now = np.inf
        for message in range(count):
            now = min(now, waiting[message])
        for _ in range(count):
            coming = np.inf  # the next start, once those at ``now`` have come
            for message in range(count):
                if waiting[message] == now:
                    flying[message] = True
                    waiting[message] = np.inf
                else:
                    coming = min(coming, waiting[message])
            upto = coming - now
            for message in range(count):
                share[message] = left[message] if flying[message] else 0.0
            last = -1  # the last message in flight: the sum depends on a message
            for message in range(count):  # by its share only (runs of them alike)
                if flying[message]:
                    if last >= 0 and share[last] == share[message]:
                        through[message] = through[last]
                    else:
                        through[message] = _through(share[message], count, share, each,
                                                    spot, weight, queue)
                    last = message
            many = 0.0
            done = 0.0
            for message in range(count):
                if flying[message] and through[message] <= upto:
                    end[spot[message], queue] = now + through[message]
                    flying[message] = False
                    done += share[message] * each[message]
                elif flying[message]:
                    many += each[message]
            if coming == np.inf:
                break
            level = (upto - done) / max(many, 1.0)
            for message in range(count):
                if flying[message]:
                    left[message] = share[message] - level
            now = coming
    return end


@njit(cache=True, error_model="numpy")
def _through(own: float, count: int, share: np.ndarray, each: np.ndarray,
             spot: np.ndarray, weight: np.ndarray, queue: int) -> float:
    """How long a message in flight with ``own`` work left takes to be through as its
    queue's ``count`` messages (``share``: their work left, 0 where not in flight, of
    ``each`` transfers, at places ``spot``) share the link now: ``sum_j each_j
    min(share_j, own)`` over the places in order (an empty place, of column ``queue`` of
    ``weight``, adds
    ``weight min(0, own)``: 0, but where a share is below 0, by rounding)."""
    total = 0.0
    if own >= 0.0:
        for other in range(count):
            total += min(own, share[other]) * each[other]
        return total
    other = 0
    for place in range(len(weight)):
        if other < count and spot[other] == place:
            total += min(own, share[other]) * each[other]
            other += 1
        else:
            total += min(own, 0.0) * weight[place, queue]
    return total
