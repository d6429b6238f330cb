"""Inputs with exactly known results, NumPy references for checking collectives, and the
explicit machine :func:`topology.flat` stands for."""

from __future__ import annotations

import numpy as np

import topology
from collectives import ALGORITHMS, BLOCK_COLLECTIVES
from collectives.layout import block, input_range
from collectives.registry import names

#: every (flat algorithm, collective it runs) of the registry
SERVED: tuple[tuple[str, str], ...] = tuple((a, c) for a in ALGORITHMS for c in BLOCK_COLLECTIVES
                                            if a in names(collective=c))
#: the flat algorithms that run AllReduce
ALLREDUCE: tuple[str, ...] = names(composed=False, collective="allreduce")

DTYPES = ("float16", "float32", "float64", "int32", "int64")
OPS = ("sum", "prod", "max", "min")
_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def rank_inputs(collective: str, nranks: int, count: int, dtype: str, op: str,
                seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Return each rank's input and the stacked full vectors (``nranks x count``).

    Values keep every reduction in range: floats near 1 for products, small integers.
    """
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        low, high = (0.9, 1.1) if op == "prod" else (-1.0, 1.0)
        full = rng.uniform(low, high, (nranks, count)).astype(dtype)
    else:
        bound = 3 if op == "prod" else 1000
        full = rng.integers(-bound, bound + 1, (nranks, count)).astype(dtype)
    inputs = [full[r, slice(*input_range(collective, count, nranks, r))].copy()
              for r in range(nranks)]
    return inputs, full


def check_outputs(collective: str, outputs: list[np.ndarray], full: np.ndarray, op: str) -> None:
    """Assert ``outputs`` are the collective's result on ``full``.

    Integers and max/min must be exact; float sums and products must be within rounding of
    a float64 reference; AllReduce results must be bitwise identical on every rank.
    """
    nranks, count = full.shape
    dtype = full.dtype
    if collective == "allgather":
        expected = np.concatenate([full[r, slice(*block(count, nranks, r))] for r in range(nranks)])
        for rank, out in enumerate(outputs):
            assert out.dtype == dtype and out.tobytes() == expected.tobytes(), f"rank {rank}"
        return
    exact = dtype.kind != "f" or op in ("max", "min")
    reference = _UFUNC[op].reduce(full if exact else full.astype(np.float64), axis=0)
    tolerance = nranks * float(np.finfo(dtype).eps) if not exact else 0.0
    for rank, out in enumerate(outputs):
        lo, hi = block(count, nranks, rank) if collective == "reduce_scatter" else (0, count)
        assert out.dtype == dtype and out.shape == (hi - lo,), f"rank {rank}: {out.dtype} {out.shape}"
        want = reference[lo:hi]
        if exact:
            assert out.tobytes() == want.astype(dtype).tobytes(), f"rank {rank} differs"
        else:
            scale = np.abs(full[:, lo:hi].astype(np.float64)).sum(axis=0) if op == "sum" else np.abs(want)
            error = np.abs(out.astype(np.float64) - want)
            assert np.all(error <= tolerance * scale + 1e-30), f"rank {rank}: max error {error.max()}"
    if collective == "allreduce":
        first = outputs[0].tobytes()
        assert all(out.tobytes() == first for out in outputs), "ranks differ bitwise"


def explicit_mesh(nranks: int, alpha: float, beta: float) -> topology.Topology:
    """:func:`topology.mesh`'s machine built link by link: one :class:`topology.Link` per
    ordered pair of ranks, in the order of :class:`topology.FullMesh`."""
    ids = tuple(f"r{r}" for r in range(nranks))
    links = tuple(topology.Link(a, b, alpha, 1 / beta, "flat") for a in ids for b in ids
                  if a != b)
    return topology.Topology(f"mesh({nranks})", tuple(topology.Device(i, "rank") for i in ids),
                             links, ids)
