"""Inputs whose reduction is known exactly, and an exact count of wrong elements.

As nccl-tests does, every element is a small integer stored in the benchmark's dtype, so
sums, products, maxima and minima are exact in every dtype (integers wrap the same way in
every order) and a result can be compared for equality.

Element ``i`` of rank ``r``'s input is ``f((h(i) + r) mod m)``: ``h`` is a multiplicative
hash of the global index (so a block written to the wrong place is caught), ``m`` a small
modulus and ``f`` the identity (values ``0 .. m-1``) or, for ``prod``, ``1 + [residue == 0]``
(values 1 and 2, so products stay small).  Over ``p`` ranks each residue ``j`` of
``h(i) + r`` occurs ``p // m + (j < p mod m)`` times, so the reduction of element ``i``
over all ranks is computed in ``O(m)`` vector operations on one rank, without the other
ranks' inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from collectives.ops import check_dtype, check_op

__all__ = ["MODULUS", "values", "rank_input", "expected", "count_wrong"]

#: the inputs take ``MODULUS`` distinct values per element position (0 .. 4 for sum, max,
#: min): sums over up to 512 ranks stay exact even in float16 (integers up to 2048)
MODULUS = 5

_HASH = np.uint64(2654435761)  # Knuth's multiplicative hash constant (TAOCP vol. 3, 6.4)


def _residue(start: int, stop: int, shift: int) -> np.ndarray:
    """``(h(i) + shift) mod MODULUS`` for global indices ``start <= i < stop``."""
    index = np.arange(start, stop, dtype=np.uint64)
    hashed = (index * _HASH) >> np.uint64(16)
    return ((hashed + np.uint64(shift)) % np.uint64(MODULUS)).astype(np.int64)


def _value(residue: np.ndarray, op: str) -> np.ndarray:
    return 1 + (residue == 0) if op == "prod" else residue


def values(rank: int, start: int, stop: int, op: str = "sum") -> np.ndarray:
    """Rank ``rank``'s input at global indices ``start .. stop - 1``, as int64.

    Parameters
    ----------
    rank : int
        The rank whose input to make.
    start : int
        First global index.
    stop : int
        One past the last global index.
    op : {"sum", "prod", "max", "min"}, optional
        The reduction; ``prod`` maps the values to 1 and 2 so products stay small.

    Returns
    -------
    numpy.ndarray
        ``stop - start`` int64 values.

    Raises
    ------
    ValueError
        If ``op`` is not supported (:func:`~collectives.ops.check_op`).

    Examples
    --------
    >>> values(0, 0, 6), values(1, 0, 6)
    (array([0, 3, 1, 0, 3, 2]), array([1, 4, 2, 1, 4, 3]))
    """
    check_op(op)
    return _value(_residue(start, stop, rank), op)


def rank_input(collective: str, rank: int, nranks: int, count: int, dtype: Any,
               op: str = "sum", root: int = 0) -> np.ndarray:
    """The input rank ``rank`` passes to ``collective``, as a NumPy array of ``dtype``.

    Parameters
    ----------
    collective : str
        The collective.
    rank, nranks : int
        This rank and the number of ranks.
    count : int
        Elements per rank in the nccl-tests sense: the AllReduce, Broadcast or Reduce
        vector, the ReduceScatter output block, the AllGather input block, the AllToAll
        block to each peer.
    dtype : numpy dtype or str
        The element type.
    op : {"sum", "prod", "max", "min"}
        The reduction (AllGather, Broadcast and AllToAll ignore it).
    root : int, optional
        Broadcast's root, whose vector every rank's buffer starts as at the root.

    Returns
    -------
    numpy.ndarray
        ``count`` elements (AllReduce, AllGather, Broadcast, Reduce) or ``nranks * count``
        (ReduceScatter, AllToAll).
    """
    dtype = np.dtype(check_dtype(np.dtype(dtype)))
    if collective == "allgather":
        return values(rank, rank * count, (rank + 1) * count).astype(dtype)
    if collective == "broadcast":
        return values(root, 0, count).astype(dtype)
    whole = count * nranks if collective in ("reduce_scatter", "alltoall") else count
    return values(rank, 0, whole, op).astype(dtype)


def _reduced(start: int, stop: int, nranks: int, op: str) -> np.ndarray:
    """The reduction over ``nranks`` ranks of :func:`values` at ``start .. stop - 1``."""
    full, extra = divmod(nranks, MODULUS)
    shifts = range(min(nranks, MODULUS))
    parts = [(_value(_residue(start, stop, j), op), full + (j < extra)) for j in shifts]
    if op == "sum":
        first, *rest = [value * times for value, times in parts]
        return sum(rest, first)
    if op == "prod":
        return np.prod([value ** times for value, times in parts], axis=0)
    reduce = np.maximum if op == "max" else np.minimum
    return reduce.reduce([value for value, _ in parts])


def expected(collective: str, rank: int, nranks: int, count: int, dtype: Any,
             op: str = "sum", root: int = 0) -> np.ndarray:
    """What rank ``rank`` must hold after ``collective`` on the :func:`rank_input` inputs.

    AllReduce: the reduction of all ``count`` elements; ReduceScatter: block ``rank``
    of the reduction (``count`` elements); AllGather: every rank's input in rank order
    (``nranks * count`` elements); Broadcast: the root's vector; Reduce: the reduction at
    the root, nothing elsewhere; AllToAll: block ``rank`` of every rank's input, in rank
    order.  Integers wrap as the dtype does.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    rank : int
        This rank.
    nranks : int
        Number of ranks.
    count : int
        Elements per rank, as for :func:`rank_input`.
    dtype : numpy dtype or str
        The element type.
    op : {"sum", "prod", "max", "min"}, optional
        The reduction (AllGather, Broadcast and AllToAll ignore it).
    root : int, optional
        The root of Broadcast and Reduce.

    Returns
    -------
    numpy.ndarray
        The expected result, of ``dtype``.

    Raises
    ------
    TypeError, ValueError
        If ``dtype`` or ``op`` is not supported (:mod:`collectives.ops`).

    Examples
    --------
    >>> expected("allreduce", 0, 2, 6, "float32")
    array([1., 7., 3., 1., 7., 5.], dtype=float32)
    """
    dtype = np.dtype(check_dtype(np.dtype(dtype)))
    check_op(op)
    if collective in ("allgather", "alltoall"):
        blocks = [values(r, (r if collective == "allgather" else rank) * count,
                         ((r if collective == "allgather" else rank) + 1) * count)
                  for r in range(nranks)]
        whole = np.concatenate(blocks) if blocks else np.zeros(0, np.int64)
        return whole.astype(dtype)
    if collective == "broadcast":
        return values(root, 0, count).astype(dtype)
    if collective == "reduce" and rank != root:
        return np.zeros(0, dtype)
    start = rank * count if collective == "reduce_scatter" else 0
    reduced = _reduced(start, start + count, nranks, op)
    if dtype.kind in "iu":
        return reduced.astype(np.int64).astype(dtype)  # wraps modulo 2**bits, as MPI does
    return reduced.astype(dtype)


def count_wrong(result: Any, want: np.ndarray) -> int:
    """Count the elements of ``result`` (NumPy or CuPy) that differ from ``want``.

    NaN equals NaN for floating-point results.

    Parameters
    ----------
    result : array
        The collective's output (NumPy, or CuPy, copied to the host); flattened.
    want : numpy.ndarray
        The expected values (:func:`expected`).

    Returns
    -------
    int
        Number of differing elements.

    Raises
    ------
    ValueError
        When the sizes differ.
    """
    got = result.get() if hasattr(result, "get") else np.asarray(result)
    got = got.reshape(-1)
    if got.size != want.size:
        raise ValueError(f"result has {got.size} elements but {want.size} were expected")
    same = (got == want) | (np.isnan(got) & np.isnan(want)) if got.dtype.kind == "f" else got == want
    return int(got.size - np.count_nonzero(same))
