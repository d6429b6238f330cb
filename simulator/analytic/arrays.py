"""Small numpy passes the model's other modules share."""

from __future__ import annotations

from typing import Any

import numpy as np


def _ceil_div(a: Any, b: Any) -> Any:
    return -(-a // b)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by a sort (numpy's unique hashes first: 15 times slower on
    the half million cuts of 128 nodes' 8-channel chain)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _within(lengths: np.ndarray) -> np.ndarray:
    """``0 .. n - 1`` for each ``n`` of ``lengths``, one after another."""
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _unique_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of a matrix of integers >= 0 (sorted), each row's among them and
    their counts: one number per row where they fit in 63 bits, else
    :func:`_distinct_rows`."""
    bases = matrix.max(axis=0, initial=0) + 1
    if np.sum(np.log2(bases.astype(float))) < 62:
        weights = np.concatenate([np.cumprod(bases[::-1])[::-1][1:], [1]])
        _, first, inverse, counts = np.unique(matrix @ weights, return_index=True,
                                              return_inverse=True, return_counts=True)
        return matrix[first], inverse.reshape(-1), counts
    hashed = _hashed_rows(matrix)
    return _distinct_rows(matrix) if hashed is None else hashed


#: odd weights of a row's hash (:func:`_hashed_rows`), as many as the widest row needs
_HASH_WEIGHTS = np.random.default_rng(23).integers(1, 2**62, size=4096) * 2 + 1


def _hashed_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_distinct_rows` of a matrix of integers, found by a hash per row (a product
    with odd weights, wrapping) and only the distinct rows sorted; None where two
    distinct rows share a hash, or rows are wider than the weights.  A profile of links
    by ~190 classes over 73,000 pieces (dgx_h100(72)) is a few hundred distinct rows: a
    ``lexsort`` by every column took 1.5 of the three tables' 12 CPU s."""
    if matrix.shape[1] > len(_HASH_WEIGHTS) or not len(matrix):
        return None
    _, first, inverse = np.unique(matrix @ _HASH_WEIGHTS[:matrix.shape[1]],
                                  return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    kept = matrix[first]
    # checked a few thousand numbers at a time (a copy of the whole, each row's kept
    # row, is fresh memory as large as the matrix: several times slower)
    step = max(1, 2**16 // matrix.shape[1])
    if not all(np.array_equal(matrix[lo:lo + step], kept[inverse[lo:lo + step]])
               for lo in range(0, len(matrix), step)):
        return None
    distinct, rank, _ = _distinct_rows(kept)
    return distinct, rank[inverse], np.bincount(inverse, minlength=len(first))[
        np.argsort(rank)]


def _distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of any matrix (floats too; sorted), each row's among them and
    their counts, by ``lexsort`` (``np.unique(axis=0)``'s order, without its slow sort)."""
    order = np.lexsort(matrix.T[::-1])
    ranked = matrix[order]
    new = np.ones(len(matrix), dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    inverse = np.empty(len(matrix), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ranked[new], inverse, np.diff(np.append(np.flatnonzero(new), len(matrix)))


def _list_labels(head: np.ndarray, owner: np.ndarray, item: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Equal lists found: list ``i`` is ``head[i]`` then the ``item`` whose ``owner``
    is ``i``, in order (``owner`` sorted; all integers >= 0).  Each list's label
    (numbered from 0) and each label's first list.  A pass per place in the lists, each
    over the lists that long: at each, a list's label so far and its item there are
    labelled anew, past every label so far (a shorter list's stays)."""
    label = np.unique(head, return_inverse=True)[1].reshape(-1)
    fresh = int(label.max(initial=-1)) + 1
    tokens = int(item.max(initial=-1)) + 1
    place = _within(np.bincount(owner, minlength=len(head)))
    order = np.argsort(place, kind="stable")
    bounds = np.searchsorted(place[order], np.arange(int(place.max(initial=-1)) + 2))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        at = order[lo:hi]
        lists = owner[at]
        labelled, inverse = np.unique(label[lists] * tokens + item[at], return_inverse=True)
        label[lists] = fresh + inverse.reshape(-1)
        fresh += len(labelled)
    _, first, label = np.unique(label, return_index=True, return_inverse=True)
    return label.reshape(-1), first


def _dense_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers >= 0, by a table of them
    where they are few enough to (no sort: a round's kinds are rows by shared links,
    a few thousand at most, over a play's hundreds of thousands of messages)."""
    top = int(values.max(initial=0)) + 1
    if top > 4 * len(values) + 4096:
        return np.unique(values, return_inverse=True)
    present = np.zeros(top, dtype=bool)
    present[values] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]
