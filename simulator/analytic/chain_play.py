"""The compiled whole play of a chain's ReduceScatter on ports (:func:`_chain_time`):
every rank's messages, round by round, as :class:`~.flow._Flow` plays them where a port
carries at most two (:func:`~.sharing._paired_ends`).  Imported where such a chain is
priced only: Numba's import and its cached code's load take some 0.4 CPU s a process."""

from __future__ import annotations

import numpy as np
from numba import njit

from .compiling import announce_compiles

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
