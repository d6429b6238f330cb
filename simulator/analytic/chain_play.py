"""The compiled whole play of a chain's ReduceScatter on ports (:func:`_chain_time`):
every rank's messages, round by round, as :class:`~.flow._Flow` plays them where a port
carries at most two (:func:`~.sharing._paired_ends`); and of one over several channels
of one order (:func:`_channels_time`), its alike channels' messages a group, the ports
filled max-min event by event.  Imported where such a chain is priced only: Numba's
import and its cached code's load take some 0.4 CPU s a process."""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

from .compiling import announce_compiles
from .filling import _fill_size

announce_compiles()  # a compile after an install is said on stderr


@njit(cache=True)
def _busy(t: float, a1: float, b1: float, a2: float, b2: float) -> float:
    """How long of ``[start, t)`` either partner is in flight (from ``a1`` to ``b1``,
    from ``a2`` to ``b2``; their starts clipped to the message's own):
    :func:`~.sharing._busy` of one message."""
    both, either = max(a1, a2), min(b1, b2)
    return max(min(b1, t) - a1, 0.0) + max(min(b2, t) - a2, 0.0) \
        - max(min(either, t) - both, 0.0)


@njit(cache=True)
def _paired_end(start: float, target: float, a1: float, b1: float, a2: float,
                b2: float) -> float:
    """A message's end from ``start`` with its bytes through alone at ``target``, at
    half the speed while a partner is in flight (:func:`~.sharing._paired_pass` of one
    message)."""
    at = start
    for brk in (a1, b1, a2, b2):
        b = max(brk, start) if np.isfinite(brk) else start
        if b > at and b - _busy(b, a1, b1, a2, b2) / 2.0 <= target:
            at = b
    inside = (a1 <= at < b1) or (a2 <= at < b2)
    return at + (target - at + _busy(at, a1, b1, a2, b2) / 2.0) * (2.0 if inside else 1.0)


@njit(cache=True)
def _round(q: int, k: int, m: int, units: np.ndarray, late: np.ndarray, sender: np.ndarray,
           receiver: np.ndarray, elements: np.ndarray, right: np.ndarray,
           left: np.ndarray) -> int:
    """Round ``k``'s messages (their number; each one's ``sender``, ``receiver`` and
    ``elements``, and per rank its message ``right`` and ``left``, -1: none) of a chain
    of ``q`` ranks, blocks cut into ``m`` segments (``units``: blocks ``0 .. q-1``'s
    segments' elements): rank ``r`` sends right unit ``k - r`` of blocks ``q-1 .. r+1``
    and left unit ``k - (q-1-r)`` of blocks ``0 .. r-1``, its neighbour's own a round
    later where ``late`` (:func:`collectives.algorithms.pipeline._late`)."""
    count = 0
    right[:] = -1
    left[:] = -1
    # a rank's right unit ``k - r`` is within its blocks' up to the first rank past them:
    # block ``(k - r) // m``, segment ``(k - r) % m`` counted down from rank 0's
    block, segment = divmod(k, m)
    for r in range(min(k + 1, q - 1)):
        if k - r >= (q - 1 - r) * m:
            break
        sender[count], receiver[count] = r, r + 1
        elements[count] = units[(q - 1 - block) * m + segment]
        right[r] = count
        count += 1
        segment -= 1
        if segment < 0:
            block, segment = block - 1, m - 1
    # and its left unit ``k - (q-1-r)`` (less a round where late) is one from rank q-1-k
    for r in range(max(1, q - 1 - k), q):
        j = k - (q - 1 - r)
        if not 0 <= j < (r - 1) * m:
            j -= late[r - 1]
            if not (r - 1) * m <= j < r * m:
                continue
        sender[count], receiver[count] = r, r - 1
        elements[count] = units[j]
        left[r] = count
        count += 1
    return count


@njit(cache=True)
def _partners(i: int, q: int, sender: np.ndarray, receiver: np.ndarray, right: np.ndarray,
              left: np.ndarray) -> tuple[int, int]:
    """Message ``i``'s partners: its sender's other send and its receiver's other
    receive (-1: none)."""
    s, d = sender[i], receiver[i]
    if d == s + 1:
        return left[s], left[d + 1] if d + 1 < q else -1
    return right[s], right[d - 1] if d >= 1 else -1


@njit(cache=True)
def _settled(carried: np.ndarray, n: int, q: int, sender: np.ndarray, receiver: np.ndarray,
             right: np.ndarray, left: np.ndarray, start: np.ndarray, work: np.ndarray,
             end: np.ndarray, due: np.ndarray) -> None:
    """The ends (``end``, from an upper bound) of a round's first ``n`` messages of
    ``carried`` (those that carry something, in order) at the fixed point of
    :func:`_paired_end` (:func:`_partners`), each taken again while a partner's end
    moved (``due``).  An empty message ends at its start, its upper bound, whatever
    its partners: it is never taken."""
    for h in range(n):
        due[carried[h]] = True
    pending = n
    while pending:
        pending = 0
        for h in range(n):
            i = carried[h]
            if not due[i]:
                continue
            due[i] = False
            p1, p2 = _partners(i, q, sender, receiver, right, left)
            a1, b1, a2, b2 = np.inf, -np.inf, np.inf, -np.inf
            if p1 >= 0:
                a1, b1 = max(start[p1], start[i]), end[p1]
            if p2 >= 0:
                a2, b2 = max(start[p2], start[i]), end[p2]
            again = _paired_end(start[i], start[i] + work[i], a1, b1, a2, b2)
            if again != end[i] and abs(again - end[i]) > 4e-16 * abs(again):
                for partner in (p1, p2):
                    if partner >= 0 and not due[partner] and work[partner] > 0.0:
                        due[partner] = True
                        pending += 1
            end[i] = again


@njit(cache=True)
def _chain_time(q: int, m: int, units: np.ndarray, late: np.ndarray, latency: float,
                seconds_per_element: float, reduce_per_element: float) -> float:
    """Seconds of a chain's ReduceScatter over ``q`` ranks on ports (a rank's sends
    share one, its receives another, all alike), its blocks cut into ``m`` segments of
    ``units`` elements (blocks ``0 .. q-1``'s, in order), ``late`` as :func:`_round`:
    each message starts once both its ranks are through the round before, carries its
    elements at ``seconds_per_element`` alone and half that rate while a partner is in
    flight (:func:`_settled`: only those that carry something, most of a chain's
    messages empty where its blocks are of a few elements), its sender is through
    ``latency`` after it, its receiver ``reduce_per_element`` a element after that (an
    empty segment: a message of none)."""
    clock = np.zeros(q)
    sender, receiver = np.empty(2 * q, np.int64), np.empty(2 * q, np.int64)
    elements, carried = np.empty(2 * q, np.int64), np.empty(2 * q, np.int64)
    right, left = np.empty(q, np.int64), np.empty(q, np.int64)
    start, work, end = np.empty(2 * q), np.empty(2 * q), np.empty(2 * q)
    due = np.zeros(2 * q, np.bool_)
    for k in range((q - 1) * m + 1):
        count = _round(q, k, m, units, late, sender, receiver, elements, right, left)
        n = 0
        for i in range(count):
            start[i] = max(clock[sender[i]], clock[receiver[i]])
            work[i] = elements[i] * seconds_per_element
            end[i] = start[i] + 2.0 * work[i]
            if work[i] > 0.0:
                carried[n] = i
                n += 1
        _settled(carried, n, q, sender, receiver, right, left, start, work, end, due)
        # a rank's messages start at its clock at the least: the last one's end is its
        # clock's, a rank without any keeps its own
        for i in range(count):
            sent = start[i] + max(work[i], end[i] - start[i]) + latency
            _through(clock, sender[i], receiver[i], sent, reduce_per_element * elements[i])
    return clock.max()


@njit(cache=True)
def _through(clock: np.ndarray, sender: int, receiver: int, sent: float,
             reduced: float) -> None:
    """A message's ranks' ``clock`` moved to its sender's end ``sent`` and its
    receiver's, ``reduced`` after that (each the later of its own and that)."""
    clock[sender] = max(clock[sender], sent)
    clock[receiver] = max(clock[receiver], sent + reduced)


@njit(cache=True)
def _round_messages(q: int, m: int, units: np.ndarray, late: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Every round's messages (:func:`_round`) of each group of channels (``units``:
    a row a group, as :func:`_chain_time`'s): the elements rank ``r`` sends right and
    left in round ``k`` of group ``g`` (groups x rounds x ranks each, -1: none)."""
    groups, rounds = units.shape[0], (q - 1) * m + 1
    rightward = np.full((groups, rounds, q), -1, np.int64)
    leftward = np.full((groups, rounds, q), -1, np.int64)
    sender, receiver = np.empty(2 * q, np.int64), np.empty(2 * q, np.int64)
    elements = np.empty(2 * q, np.int64)
    right, left = np.empty(q, np.int64), np.empty(q, np.int64)
    for g in range(groups):
        for k in range(rounds):
            _round(q, k, m, units[g], late, sender, receiver, elements, right, left)
            for r in range(q):
                if right[r] >= 0:
                    rightward[g, k, r] = elements[right[r]]
                if left[r] >= 0:
                    leftward[g, k, r] = elements[left[r]]
    return rightward, leftward


@njit(cache=True)
def _elements(g: int, k: int, s: int, way: int, rightward: np.ndarray,
              leftward: np.ndarray) -> int:
    """Elements rank ``s`` sends in round ``k`` of group ``g``, right (``way`` 0) or
    left (1); -1: no such message."""
    if not 0 <= s < rightward.shape[2]:
        return -1
    return rightward[g, k, s] if way == 0 else leftward[g, k, s]


@njit(cache=True)
def _own(k: int, r: int, rightward: np.ndarray, leftward: np.ndarray) -> int:
    """Rank ``r``'s messages in round ``k``, sent and received, of every group."""
    n = 0
    for g in range(rightward.shape[0]):
        for s, way in ((r, 0), (r, 1), (r - 1, 0), (r + 1, 1)):
            n += _elements(g, k, s, way, rightward, leftward) >= 0
    return n


@njit(cache=True)
def _arrive(r: int, rightward: np.ndarray, leftward: np.ndarray, step: np.ndarray,
            ready: np.ndarray, clock: np.ndarray, pending: np.ndarray,
            starts: list[tuple[float, int, int, int, int]]) -> None:
    """Rank ``r`` through its round ``step[r]``: on to its next round with messages
    (``pending`` of them), ``ready`` at its ``clock``; each of them whose other rank is
    there too starts (``starts``: when, its group, sender, way and round) when both
    are ready."""
    rounds = rightward.shape[1]
    ready[r] = clock[r]
    k = step[r] + 1
    while k < rounds and _own(k, r, rightward, leftward) == 0:
        k += 1
    step[r] = k
    if k == rounds:
        return
    pending[r] = _own(k, r, rightward, leftward)
    for s, way, other in ((r, 0, r + 1), (r, 1, r - 1), (r - 1, 0, r - 1), (r + 1, 1, r + 1)):
        if not 0 <= other < len(step) or step[other] != k:
            continue
        for g in range(rightward.shape[0]):
            if _elements(g, k, s, way, rightward, leftward) >= 0:
                heapq.heappush(starts, (max(ready[r], ready[other]), g, s, way, k))


@njit(cache=True)
def _port_links(groups: int, q: int, weights: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ports of every message place ``(g, s, way)`` (in C order) as
    :func:`.filling._fill_size` reads links: its sender's port ``s`` and its receiver's
    ``q + d`` (``d = s + 1`` rightward, ``s - 1`` leftward; a place without a message
    gets a port too, never filled), and each place's ``weights[g]`` alike channels."""
    places = groups * q * 2
    starts = np.arange(0, 2 * places + 1, 2)
    links, each = np.empty(2 * places, np.int64), np.empty(places)
    for g in range(groups):
        for s in range(q):
            for way in range(2):
                i = (g * q + s) * 2 + way
                links[2 * i], links[2 * i + 1] = s, q + (s + 1 - 2 * way) % q
                each[i] = weights[g]
    return starts, links, each


@njit(cache=True)
def _channels_time(q: int, m: int, units: np.ndarray, weights: np.ndarray,
                   late: np.ndarray, latency: float, seconds_per_element: float,
                   reduce_per_element: float) -> float:
    """Seconds of a chain's ReduceScatter over ``q`` ranks on ports (as
    :func:`_chain_time`) cut into channels of one order whose operations share steps:
    ``units`` a row per group of alike channels (their blocks' segments' elements),
    ``weights`` the channels of each.  A rank's step of a round starts once it is
    through its last (every message of every channel ended: its sender ``latency``
    after, its receiver ``reduce_per_element`` a element after that); a message once
    both its ranks' are; messages in flight carry their elements at their ports'
    max-min fill (:func:`.filling._fill_size`, each port of one unit of speed), played
    event by event (a start or an end), so that a
    group's share changes as another's smaller messages end."""
    rightward, leftward = _round_messages(q, m, units, late)
    groups = units.shape[0]
    step, pending = np.full(q, -1, np.int64), np.zeros(q, np.int64)
    ready, clock = np.zeros(q), np.zeros(q)
    starts = [(0.0, 0, 0, 0, 0)]
    starts.pop()
    for r in range(q):
        _arrive(r, rightward, leftward, step, ready, clock, pending, starts)
    active = np.zeros((groups, q, 2), np.bool_)
    left, rate = np.zeros((groups, q, 2)), np.zeros((groups, q, 2))
    begun, round_of = np.zeros((groups, q, 2)), np.zeros((groups, q, 2), np.int64)
    now, flying = 0.0, 0
    ports, links, each = _port_links(groups, q, weights)
    capacity, cap = np.ones(2 * q), np.full(active.size, np.inf)
    while starts or flying:
        _fill_size(active.reshape(-1), cap, ports, links, capacity, each, rate.reshape(-1))
        first_end = np.inf
        for g, s, way in np.ndindex(active.shape):
            if active[g, s, way]:
                first_end = min(first_end, now + float(left[g, s, way] / rate[g, s, way]))
        if starts and starts[0][0] <= first_end:
            then = starts[0][0]
            for g, s, way in np.ndindex(active.shape):
                if active[g, s, way]:
                    left[g, s, way] -= rate[g, s, way] * (then - now)
            now = then
            while starts and starts[0][0] <= now:
                at, g, s, way, k = heapq.heappop(starts)
                elements = _elements(g, k, s, way, rightward, leftward)
                if elements == 0:
                    _ended(s, way, at, at, 0.0, 0, rightward, leftward, step, ready, clock,
                           pending, starts, latency, reduce_per_element)
                    continue
                active[g, s, way], flying = True, flying + 1
                left[g, s, way] = elements * seconds_per_element
                begun[g, s, way], round_of[g, s, way] = at, k
            continue
        span, now = first_end - now, first_end
        for g, s, way in np.ndindex(active.shape):
            if not active[g, s, way]:
                continue
            if left[g, s, way] / rate[g, s, way] - span > 1e-13 * now:
                left[g, s, way] -= rate[g, s, way] * span
                continue
            active[g, s, way], flying = False, flying - 1
            elements = _elements(g, int(round_of[g, s, way]), s, way, rightward, leftward)
            _ended(s, way, float(begun[g, s, way]), now, elements * seconds_per_element, elements,
                   rightward, leftward, step, ready, clock, pending, starts, latency,
                   reduce_per_element)
    return clock.max()


@njit(cache=True)
def _ended(s: int, way: int, start: float, end: float, work: float, elements: int,
           rightward: np.ndarray, leftward: np.ndarray, step: np.ndarray,
           ready: np.ndarray, clock: np.ndarray, pending: np.ndarray,
           starts: list[tuple[float, int, int, int, int]], latency: float,
           reduce_per_element: float) -> None:
    """A message from rank ``s`` (right: ``way`` 0) ended: its ranks' ``clock`` moved
    (:func:`_through`), each through its round when it was the last of its
    ``pending`` (:func:`_arrive`)."""
    d = s + 1 - 2 * way
    _through(clock, s, d, start + max(work, end - start) + latency,
             reduce_per_element * elements)
    for r in (s, d):
        pending[r] -= 1
        if pending[r] == 0:
            _arrive(r, rightward, leftward, step, ready, clock, pending, starts)
