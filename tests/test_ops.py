"""Every dtype MPI has a datatype for and every predefined reduction: the interpreter against
NumPy, bitwise, over rank counts and awkward counts; the checks that reject the rest."""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

from collectives import BLOCK_ALGORITHMS, build_schedule, interpret
from collectives.layout import block, input_range
from collectives.ops import (ALL_DTYPES, ALL_OPS, DTYPES, OP_KINDS, check_dtype, check_op,
                             check_op_dtype)

RANKS = (1, 2, 3, 5, 7)
#: byte-swapped dtypes: the schedules take them (MPI's own collective does not)
SWAPPED = (">f4", ">i8", ">c16", ">u2")
PAIRS = [(dtype, op) for dtype in (*ALL_DTYPES, *SWAPPED) for op in ALL_OPS
         if np.dtype(dtype).kind in OP_KINDS[op]]


def _counts(nranks: int) -> tuple[int, ...]:
    """0, fewer elements than ranks, and primes."""
    return tuple(dict.fromkeys((0, max(nranks - 1, 1), 13, 31)))


def _full(nranks: int, count: int, dtype: str, op: str) -> np.ndarray:
    """``nranks x count`` exact inputs: every reduction order gives the same bits."""
    rng = np.random.default_rng([nranks, count, zlib.crc32(f"{dtype}{op}".encode())])
    kind = np.dtype(dtype).kind
    if kind == "b":
        return rng.integers(0, 2, (nranks, count)).astype(dtype)
    if op == "prod":
        return rng.choice(np.array([1, 2, 1, 1]), (nranks, count)).astype(dtype)
    values = rng.integers(-3 if kind in "ifc" else 0, 6, (nranks, count)).astype(dtype)
    if kind == "c":
        values += 1j * rng.integers(-3, 6, (nranks, count))
    return values


@pytest.mark.parametrize("nranks", RANKS)
def test_interpret_matches_numpy_bitwise_for_every_dtype_and_op(nranks: int) -> None:
    for i, (dtype, op) in enumerate(PAIRS):
        algorithm = BLOCK_ALGORITHMS[(i + nranks) % len(BLOCK_ALGORITHMS)]
        collective = ("allreduce", "reduce_scatter")[i % 2]
        for count in _counts(nranks):
            full = _full(nranks, count, dtype, op)
            ufunc = getattr(np, ALL_OPS[op])
            want = functools.reduce(lambda a, b: ufunc(a, b).astype(full.dtype), full)
            schedule = build_schedule(collective, algorithm, nranks, count)
            inputs = [full[r, slice(*input_range(collective, count, nranks, r))].copy()
                      for r in range(nranks)]
            for rank, out in enumerate(interpret(schedule, inputs, op)):
                lo, hi = block(count, nranks, rank) if collective == "reduce_scatter" else (0, count)
                assert out.dtype == full.dtype, (dtype, op, algorithm, nranks, count)
                assert np.array_equal(out, want[lo:hi]), (dtype, op, algorithm, nranks, count)


@pytest.mark.parametrize("dtype", [*ALL_DTYPES, *SWAPPED])
def test_allgather_moves_every_dtype_bitwise(dtype: str) -> None:
    for nranks in RANKS:
        count = 5 * nranks
        full = _full(nranks, count, dtype, "sum")
        algorithm = BLOCK_ALGORITHMS[nranks % len(BLOCK_ALGORITHMS)]
        schedule = build_schedule("allgather", algorithm, nranks, count)
        inputs = [full[r, slice(*block(count, nranks, r))].copy() for r in range(nranks)]
        want = np.concatenate(inputs).astype(full.dtype)  # concatenate makes native order
        for out in interpret(schedule, inputs):
            assert out.dtype == full.dtype and out.tobytes() == want.tobytes(), (dtype, nranks)


def test_mpi4py_ops_are_accepted_by_name() -> None:
    from mpi4py import MPI
    assert [check_op(getattr(MPI, name.upper())) for name in ALL_OPS] == list(ALL_OPS)
    with pytest.raises(ValueError, match="MPI.SUM"):
        check_op(MPI.REPLACE)
    assert check_op("avg") == "avg"  # NCCL's; over MPI the transport refuses it
    with pytest.raises(ValueError, match=r"op 'mean' is not supported; choose one of \['sum'.*'avg'"):
        check_op("mean")


@pytest.mark.parametrize("nranks", RANKS)
def test_avg_scales_as_nccl_does_and_every_rank_gets_the_same_bits(nranks: int) -> None:
    """NCCL's ``avg``: floats summed premultiplied by 1/nranks, integers summed then divided
    truncating toward zero; every algorithm, AllReduce and ReduceScatter, NCCL's dtypes."""
    rng = np.random.default_rng(nranks)
    for i, dtype in enumerate(DTYPES):
        kind = np.dtype(dtype).kind
        for count in _counts(nranks):
            full = (rng.integers(-9 if kind != "u" else 0, 10, (nranks, count))
                    * (0.37 if kind == "f" else 1)).astype(dtype)
            if kind == "f":
                want = (full * full.dtype.type(1.0 / nranks)).astype(np.float64).sum(axis=0)
            else:
                sums = full.astype(object).sum(axis=0)
                want = np.array([int(total / nranks) if total < 0 else total // nranks
                                 for total in np.atleast_1d(sums)][:count], dtype)
            for j, algorithm in enumerate(BLOCK_ALGORITHMS):
                collective = ("allreduce", "reduce_scatter")[(i + j) % 2]
                schedule = build_schedule(collective, algorithm, nranks, count)
                inputs = [full[r, slice(*input_range(collective, count, nranks, r))].copy()
                          for r in range(nranks)]
                outs = interpret(schedule, inputs, "avg")
                whole = outs[0] if collective == "allreduce" else np.concatenate(outs)
                label = (dtype, algorithm, collective, nranks, count)
                if kind == "f":
                    assert np.allclose(whole, want, rtol=2e-3, atol=1e-2), label
                else:
                    assert whole.dtype == full.dtype and np.array_equal(whole, want), label
                if collective == "allreduce":
                    assert all(out.tobytes() == outs[0].tobytes() for out in outs), label


def test_ops_not_defined_for_a_dtype_are_refused() -> None:
    for op, dtype in (("bxor", "float32"), ("max", "complex64"), ("sum", "bool"),
                      ("band", "bool"), ("land", "float64")):
        with pytest.raises(TypeError, match=f"op '{op}' is not defined for dtype {dtype}"):
            check_op_dtype(op, np.dtype(dtype))
    schedule = build_schedule("allreduce", "ring", 2, 4)
    with pytest.raises(TypeError, match="not defined for dtype float32"):
        interpret(schedule, [np.ones(4, np.float32)] * 2, "bor")


@pytest.mark.parametrize("dtype", ["datetime64[s]", "U3", "object", "V8", "timedelta64"])
def test_dtypes_without_an_mpi_datatype_are_refused(dtype: str) -> None:
    with pytest.raises(TypeError, match="MPI has no datatype for it"):
        check_dtype(np.dtype(dtype))


def test_byte_order_variants_have_their_native_name() -> None:
    assert check_dtype(np.dtype(">f8")) == "float64"
    assert check_dtype(np.dtype("<i2")) == "int16"
