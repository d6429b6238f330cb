"""The compiled max-min fill of :func:`.sharing._max_min`.  Imported where messages
share links only: Numba's import and its cached code's load take some 0.4 CPU s a
process."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def _fill(flying: np.ndarray, cap: np.ndarray, starts: np.ndarray, links: np.ndarray,
          capacity: np.ndarray, each: np.ndarray) -> np.ndarray:
    """The max-min fair rates of the ``flying`` messages (messages x sizes), a size at
    a time: message ``m`` is on ``links[starts[m]:starts[m + 1]]`` (rows of
    ``capacity``, links x sizes), carries ``each`` transfers side by side (messages x
    sizes) and goes at most at its ``cap``.  A pass fixes the free messages at the
    smallest fair share of a link (its room over its free transfers) or cap, as
    :func:`.sharing._max_min`'s passes over all sizes at once do, with the same
    operations in the same order (a link's sums over its messages in their order), so
    the rates are the same; a pass reads the free messages only."""
    count, sizes = flying.shape
    rate = np.zeros((count, sizes))
    sums = np.zeros(len(capacity))
    share = np.empty(len(capacity))
    free = np.empty(count, dtype=np.int64)  # the free messages, in order
    fixed = np.empty(count, dtype=np.int64)  # those a pass fixes, in order
    for size in range(sizes):
        room = capacity[:, size].astype(np.float64)
        left = 0
        for message in range(count):
            if flying[message, size]:
                free[left] = message
                left += 1
        while left > 0:
            _link_sums(free, left, starts, links, each[:, size], sums)
            fair = np.inf
            for link in range(len(room)):
                share[link] = room[link] / max(sums[link], 1.0) if sums[link] > 0 else np.inf
                fair = min(fair, share[link])
            for k in range(left):
                fair = min(fair, cap[free[k], size])
            kept, ended = 0, 0
            for k in range(left):
                message = free[k]
                tight = cap[message, size] <= fair
                for at in range(starts[message], starts[message + 1]):
                    tight |= share[links[at]] <= fair
                if tight:
                    rate[message, size] = fair
                    fixed[ended] = message
                    ended += 1
                else:
                    free[kept] = message
                    kept += 1
            _link_sums(fixed, ended, starts, links, each[:, size], sums)
            # (a size whose messages are all fixed has no fair share left: inf)
            level = 0.0 if np.isinf(fair) else fair
            for link in range(len(room)):
                room[link] = max(room[link] - sums[link] * level, 0.0)
            left = kept
    return rate


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
