"""Reduction operators and the dtypes they accept, for any NumPy-like array module."""

from __future__ import annotations

from reprlib import repr as brief
from typing import Any, Callable

__all__ = ["OPS", "DTYPES", "check_op", "check_dtype", "reducer"]

#: reduction name -> ufunc name in NumPy and CuPy
OPS: dict[str, str] = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}

#: dtype names every transport supports (NCCL's set, less bfloat16 which NumPy lacks)
DTYPES: tuple[str, ...] = ("int8", "uint8", "int32", "uint32", "int64", "uint64",
                           "float16", "float32", "float64")


def check_op(op: str) -> str:
    """Return ``op`` if it names a reduction.

    Parameters
    ----------
    op : str
        A reduction name, one of :data:`OPS`.

    Returns
    -------
    str
        ``op``.

    Raises
    ------
    ValueError
        If ``op`` is not in :data:`OPS`, naming the choices.
    """
    if op not in OPS:
        raise ValueError(f"op {brief(op)} is not supported; choose one of {sorted(OPS)}")
    return op


def check_dtype(dtype: Any) -> str:
    """Return the name of ``dtype`` if the collectives support it.

    Parameters
    ----------
    dtype : numpy.dtype or str
        A dtype, or its name.

    Returns
    -------
    str
        The dtype's name, one of :data:`DTYPES`.

    Raises
    ------
    TypeError
        If the dtype is not in :data:`DTYPES`, naming the choices.
    """
    name = getattr(dtype, "name", str(dtype))
    if name not in DTYPES:
        raise TypeError(f"dtype {brief(name)} is not supported; choose one of {list(DTYPES)}")
    return name


def reducer(xp: Any, op: str) -> Callable[..., Any]:
    """Return the ufunc of array module ``xp`` (numpy or cupy) that applies ``op``.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    op : str
        A reduction name, one of :data:`OPS`.

    Returns
    -------
    callable
        The ufunc, e.g. ``xp.add`` for ``"sum"``.

    Raises
    ------
    ValueError
        If ``op`` is not in :data:`OPS` (:func:`check_op`).
    """
    return getattr(xp, OPS[check_op(op)])
