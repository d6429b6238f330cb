"""MPI's own ``max`` and ``min`` of floats, made to answer as the schedules do.

MPI leaves what ``MPI_MAX`` does with a NaN to the library: Open MPI 5's loop keeps
``a > b ? a : b``, so a NaN survives or not by where it sits, and of two zeros it keeps one
by position.  The schedules follow IEEE 754-2019's ``maximum`` and ``minimum``
(:class:`~collectives.ops.Extremum`: NaN propagates, ``-0.0 < +0.0``), so ``native``
would change the answer with the size or the tuning table under ``auto``.  So MPI's
collective reduces integer *keys* instead: each float's bits as a signed integer of its
width, the magnitude bits flipped for negative numbers, which orders the keys as the
floats (``-inf < ... < -0.0 < +0.0 < ... < +inf``), every NaN first made one quiet NaN
that sorts above ``+inf`` for ``max`` (below ``-inf`` for ``min``).  ``MPI_MAX`` of the
keys is then the key of the maximum, which is turned back into a float.  It costs a pass
over the input and one over the output, and a working array of the vector's size.

Floats without an integer of their width (``longdouble``) have no keys
(:func:`keyed_dtype`): ``algorithm="native"`` reduces them with MPI's own ``max`` and
``min`` (whose NaNs and signed zeros are the library's), and ``auto`` never chooses
``native`` for them.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["keyed", "keyed_dtype", "to_keys", "from_keys"]

#: float width in bytes -> the signed integer dtype of its keys
_KEYS: dict[int, np.dtype] = {2: np.dtype(np.int16), 4: np.dtype(np.int32),
                             8: np.dtype(np.int64)}


def keyed_dtype(op: str, dtype: np.dtype) -> bool | None:
    """Whether MPI's ``op`` on ``dtype`` runs on keys: True for ``max``/``min`` of floats
    of 2, 4 or 8 bytes, None for those of another width (no keys), else False."""
    if op not in ("max", "min") or dtype.kind != "f":
        return False
    return True if dtype.itemsize in _KEYS else None


def to_keys(values: np.ndarray, op: str) -> np.ndarray:
    """Return the keys of ``values`` (native-order floats) for reduction ``op``.

    Examples
    --------
    >>> keys = to_keys(np.array([-1.0, -0.0, 0.0, np.inf, np.nan], np.float32), "max")
    >>> bool((np.diff(keys) > 0).all())
    True
    """
    key = _KEYS[values.dtype.itemsize]
    keys = np.array(values, copy=True).view(key)
    nan = np.array(np.nan if op == "max" else -np.nan, values.dtype).view(key)
    keys[np.isnan(values)] = nan
    keys ^= (keys >> (8 * keys.itemsize - 1)) & np.iinfo(keys.dtype).max
    return keys


def from_keys(keys: np.ndarray, out: np.ndarray) -> None:
    """Write the floats of ``keys`` into ``out`` (``keys`` is overwritten).

    Examples
    --------
    >>> values = np.array([-2.5, -0.0, 0.0, np.inf], np.float64)
    >>> out = np.empty_like(values); from_keys(to_keys(values, "min"), out)
    >>> out.tobytes() == values.tobytes()
    True
    """
    keys ^= (keys >> (8 * keys.itemsize - 1)) & np.iinfo(keys.dtype).max
    out[...] = keys.view(out.dtype)


def keyed(method: Callable[..., None], collective: str, nranks: int, op: str,
          in_place: Any) -> Callable[..., None]:
    """Wrap MPI's ``Allreduce`` or ``Reduce_scatter_block`` to reduce keys.

    Parameters
    ----------
    method : callable
        mpi4py's method, called as ``method(send, recv, mpi_op)``.
    collective : {"allreduce", "reduce_scatter"}
        Which it is.
    nranks : int
        Ranks of the communicator (the blocks of a ReduceScatter).
    op : {"max", "min"}
        The reduction (the keys' NaN sorts first for it).
    in_place : mpi4py.MPI.IN_PLACE
        The marker ``send`` is for an in-place call (the input is then ``recv``).

    Returns
    -------
    callable
        ``run(send, recv, mpi_op)`` with ``mpi_op`` MPI's ``MAX`` or ``MIN``, which MPI
        applies to the keys.
    """
    def run(send: Any, recv: np.ndarray, mpi_op: Any) -> None:
        keys = to_keys(recv if send is in_place else send, op)
        if collective == "allreduce":
            method(in_place, keys, mpi_op)
            from_keys(keys, recv)
            return
        part = keys.size // nranks
        mine = np.empty(part, keys.dtype)
        method(keys, mine, mpi_op)
        from_keys(mine, recv[:part])
    return run
