"""Reduction operators and the dtypes they accept, for any NumPy-like array module.

:data:`ALL_DTYPES` are the NumPy dtypes MPI has a datatype for (also in either byte
order: the schedules move bytes and reduce with NumPy, which handles both), and
:data:`ALL_OPS` MPI's predefined reductions, each defined for the kinds of dtype MPI
defines it for (:data:`OP_KINDS`: no ``max`` of complex numbers, no bitwise ``band`` of
floats or booleans).  :data:`DTYPES` and :data:`OPS` are the smaller sets every transport's
own collective carries (NCCL's).  mpi4py's predefined ``MPI.Op`` objects are accepted
wherever an op name is (:func:`check_op`).  :data:`NCCL_ONLY_OPS` is NCCL's ``avg``, which
runs over an ``NcclComm`` only: the schedules reduce it with ``add`` and
:func:`average_input` / :func:`average_output` do NCCL's scaling around the reduction.
:data:`GPU_DTYPES` (bfloat16, ml_dtypes' type, which CuPy >= 14 computes on) are accepted
on CuPy buffers only: MPI has no datatype for them, so they run through the schedules, or
NCCL's own collective (``ncclBfloat16``).
"""

from __future__ import annotations

import sys
from reprlib import repr as brief
from typing import Any, Callable

import numpy as np

__all__ = ["OPS", "DTYPES", "ALL_OPS", "ALL_DTYPES", "OP_KINDS", "NCCL_ONLY_OPS", "check_op",
           "GPU_DTYPES", "check_dtype", "check_op_dtype", "dtype_kind", "Extremum", "reducer",
           "average_input", "average_output"]

#: reduction name -> ufunc name in NumPy and CuPy, for every MPI predefined reduction
ALL_OPS: dict[str, str] = {
    "sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
    "land": "logical_and", "lor": "logical_or", "lxor": "logical_xor",
    "band": "bitwise_and", "bor": "bitwise_or", "bxor": "bitwise_xor"}

#: reduction name -> dtype kinds it is defined for (MPI 4.1, section 6.9.2: arithmetic on
#: integers, floats and complex; max and min not on complex; logical ones on integers and
#: booleans; bitwise ones on integers)
OP_KINDS: dict[str, str] = {"sum": "iufc", "prod": "iufc", "max": "iuf", "min": "iuf",
                            "land": "iub", "lor": "iub", "lxor": "iub",
                            "band": "iu", "bor": "iu", "bxor": "iu"}

#: reductions every transport's own collective has (NCCL's, less avg)
OPS: dict[str, str] = {name: ALL_OPS[name] for name in ("sum", "prod", "max", "min")}

#: NCCL's reductions beyond MPI's, with the ufunc the schedules reduce them with: ``avg``
#: (ncclAvg, NCCL >= 2.10), on NCCL's integer and floating dtypes
NCCL_ONLY_OPS: dict[str, str] = {"avg": "add"}
_UFUNCS: dict[str, str] = {**ALL_OPS, **NCCL_ONLY_OPS}
_KINDS: dict[str, str] = {**OP_KINDS, "avg": "iuf"}

#: dtype names every transport supports (NCCL's set, less bfloat16 which NumPy lacks)
DTYPES: tuple[str, ...] = ("int8", "uint8", "int32", "uint32", "int64", "uint64",
                           "float16", "float32", "float64")

#: dtype names MPI has a datatype for (long double ones where the platform has them)
ALL_DTYPES: tuple[str, ...] = tuple(dict.fromkeys((
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", np.dtype(np.longdouble).name,
    "complex64", "complex128", np.dtype(np.clongdouble).name)))

#: dtype names accepted on CuPy buffers only (ml_dtypes' bfloat16, NCCL's ncclBfloat16),
#: with the kind their reductions treat them as (NumPy gives them kind "V")
GPU_DTYPES: dict[str, str] = {"bfloat16": "f"}

#: mpi4py's predefined ops, by name, under the name mpi4py gives them
_MPI_OP_NAMES = {name: name.upper() for name in ALL_OPS}


def _mpi_op_name(op: Any) -> str | None:
    """The name of an ``mpi4py.MPI.Op`` predefined reduction, or None."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not isinstance(op, mpi.Op):
        return None
    for name, attribute in _MPI_OP_NAMES.items():
        if op == getattr(mpi, attribute):
            return name
    return None


def check_op(op: Any) -> str:
    """Return the name of reduction ``op``.

    Parameters
    ----------
    op : str or mpi4py.MPI.Op
        A reduction name, one of :data:`ALL_OPS` or :data:`NCCL_ONLY_OPS`, or mpi4py's
        predefined op of that name (``MPI.SUM``, ``MPI.BXOR``, ...).

    Returns
    -------
    str
        The name, a key of :data:`ALL_OPS` or :data:`NCCL_ONLY_OPS`.

    Raises
    ------
    ValueError
        If ``op`` is neither, naming the choices.

    Examples
    --------
    >>> check_op("max")
    'max'
    """
    if isinstance(op, str) and op in _UFUNCS:
        return op
    name = _mpi_op_name(op)
    if name is None:
        shown = op if isinstance(op, str) else f"{type(op).__module__}.{type(op).__name__}"
        raise ValueError(f"op {shown!r} is not supported; choose one of {list(_UFUNCS)} or "
                         f"mpi4py's MPI.{', MPI.'.join(_MPI_OP_NAMES.values())}")
    return name


#: supported dtype (native byte order) -> its name (``dtype.name`` is slow to compute)
_SUPPORTED = {np.dtype(name): name for name in ALL_DTYPES}


def check_dtype(dtype: Any) -> str:
    """Return the name of ``dtype`` if the collectives support it (in either byte order).

    Parameters
    ----------
    dtype : numpy.dtype or str
        A dtype, or its name.

    Returns
    -------
    str
        The dtype's name, one of :data:`ALL_DTYPES`.

    Raises
    ------
    TypeError
        If the dtype is not in :data:`ALL_DTYPES`, naming the choices.
    """
    name = _SUPPORTED.get(dtype)  # the common case, without making a dtype
    if name is not None:
        return name
    try:
        native = np.dtype(dtype).newbyteorder("=")
    except TypeError:
        native = None
    if native not in _SUPPORTED:
        name = getattr(dtype, "str", str(dtype))
        raise TypeError(f"dtype {brief(name)} is not supported (MPI has no datatype for it); "
                        f"choose one of {list(ALL_DTYPES)}")
    return _SUPPORTED[native]


def check_op_dtype(op: str, dtype: Any) -> None:
    """Raise TypeError if reduction ``op`` is not defined for ``dtype``.

    Parameters
    ----------
    op : str
        A reduction name, a key of :data:`ALL_OPS`.
    dtype : numpy.dtype
        A supported dtype.

    Raises
    ------
    TypeError
        Naming the op, the dtype and the reductions defined for it.

    Examples
    --------
    >>> check_op_dtype("bxor", np.dtype("float32"))
    Traceback (most recent call last):
    ...
    TypeError: op 'bxor' is not defined for dtype float32; choose one of ['sum', 'prod', 'max', 'min']
    """
    kind = dtype_kind(dtype)
    if kind not in _KINDS[op]:
        allowed = [name for name, kinds in OP_KINDS.items() if kind in kinds]
        raise TypeError(f"op {op!r} is not defined for dtype {dtype.name}; choose one of "
                        f"{allowed}")


def dtype_kind(dtype: Any) -> str:
    """Return the kind reductions treat ``dtype`` as: ``dtype.kind``, or for one of
    :data:`GPU_DTYPES` the kind it stands for (``"f"`` for bfloat16).

    Examples
    --------
    >>> dtype_kind(np.dtype("int32"))
    'i'
    """
    return GPU_DTYPES.get(dtype.name, dtype.kind)


class Extremum:
    """``max`` or ``min`` as IEEE 754-2019's ``maximum`` and ``minimum`` on floats.

    The one semantics of every schedule and of ``native`` (:mod:`.executors.extrema`):
    a NaN in any rank's input gives NaN (as NumPy's ``maximum`` and ``minimum`` do; which
    NaN's payload is unspecified), ``-0.0`` is less than ``+0.0`` (NumPy's loops return
    either), infinities are ordinary values.  Other dtypes go straight to the ufunc.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    op : {"max", "min"}
        The reduction.

    Examples
    --------
    >>> Extremum(np, "max")(np.array([0.0, -0.0, np.nan]), np.array([-0.0, -0.0, 1.0]))
    array([ 0., -0., nan])
    """

    __slots__ = ("_xp", "_ufunc", "_ties")

    def __init__(self, xp: Any, op: str) -> None:
        self._xp = xp
        self._ufunc = getattr(xp, ALL_OPS[op])
        #: where two zeros tie, the bits of the result: -0.0 only if both are (max), or
        #: if either is (min)
        self._ties = xp.bitwise_and if op == "max" else xp.bitwise_or

    def __call__(self, a: Any, b: Any, out: Any = None) -> Any:
        """``op(a, b)`` into ``out`` (which may be ``a`` or ``b``), elementwise."""
        if dtype_kind(a.dtype) != "f":
            return self._ufunc(a, b, out=out)
        xp, width = self._xp, a.dtype.itemsize
        tie = (a == b).reshape(-1, 1)  # equal values: their bits differ only for zeros
        bits = self._ties(a.view(xp.uint8), b.view(xp.uint8)).reshape(-1, width)
        result = self._ufunc(a, b, out=out)
        xp.copyto(result.view(xp.uint8).reshape(-1, width), bits, where=tie)
        return result


def reducer(xp: Any, op: Any) -> Callable[..., Any]:
    """Return the ufunc of array module ``xp`` (numpy or cupy) that applies ``op``.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    op : str or mpi4py.MPI.Op
        A reduction, as for :func:`check_op`.

    Returns
    -------
    callable
        The ufunc, e.g. ``xp.add`` for ``"sum"``; for ``max`` and ``min`` an
        :class:`Extremum`, called as the ufunc is (``reduce(a, b, out=a)``).

    Raises
    ------
    ValueError
        If ``op`` is not a reduction (:func:`check_op`).
    """
    name = check_op(op)
    if name in ("max", "min"):
        return Extremum(xp, name)
    return getattr(xp, _UFUNCS[name])


def average_input(xp: Any, work: Any, nranks: int) -> None:
    """Scale a floating working buffer by ``1/nranks`` before an ``avg`` reduction.

    NCCL averages floating types as a sum of inputs each premultiplied by ``1/nranks`` in
    the dtype (``ncclDevPreMulSum``, ``hostToDevRedOp`` in NCCL's ``src/enqueue.cc``),
    which cannot overflow where the sum would; integers are divided afterwards
    (:func:`average_output`).  Nothing happens for other dtypes.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    work : array
        The working buffer holding this rank's input, scaled in place.
    nranks : int
        Ranks of the collective.

    Examples
    --------
    >>> work = np.array([3.0, 6.0])
    >>> average_input(np, work, 3); work
    array([1., 2.])
    """
    if dtype_kind(work.dtype) == "f":
        xp.multiply(work, work.dtype.type(1.0 / nranks), out=work)


def average_output(xp: Any, out: Any, nranks: int) -> None:
    """Divide an integer ``avg`` result by ``nranks``, truncating toward zero, in place.

    NCCL's ``ncclDevSumPostDiv`` (integer ``ncclAvg``, NCCL's ``src/enqueue.cc`` and
    ``src/device/reduce_kernel.h``) sums and then divides as C does, truncating toward
    zero for signed values.  Nothing happens for floating dtypes (:func:`average_input`).

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``.
    out : array
        The reduced elements of this rank's result.
    nranks : int
        Ranks of the collective.

    Examples
    --------
    >>> out = np.array([-7, 7, -6], np.int32)
    >>> average_output(np, out, 2); out
    array([-3,  3, -3], dtype=int32)
    """
    if out.dtype.kind not in "iu":
        return
    quotient = xp.floor_divide(out, nranks)
    if out.dtype.kind == "i":  # floor to truncation: add one where a negative was inexact
        quotient += (quotient < 0) & (quotient * nranks != out)
    out[...] = quotient
