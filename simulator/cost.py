"""Closed-form alpha-beta-gamma cost of every algorithm and collective.

Model: a message of ``m`` bytes between two ranks costs ``alpha + m * beta``; reducing
``m`` received bytes into the local buffer costs ``m * gamma`` at the receiver; a rank's
step ends when all its messages and reductions are done, and a message starts when both
ends have posted it (the semantics of :mod:`collectives.progress` and of
:func:`simulator.simulate`).  ``n`` is the vector's bytes, ``p`` the ranks, ``ds`` the
bytes per element; ``B = ceil(n / (p ds)) ds`` is the largest block.

Each form describes the schedule that :func:`collectives.build_schedule` generates, so
that :func:`simulator.simulate` on :func:`topology.flat` reproduces it:

* ring and pipeline: exact when the blocks and segments divide evenly; otherwise every
  block or segment is charged as the largest one (an upper bound that is tight to one
  element per message);
* rhd: exact for every ``p`` and every count (a vectorised walk over the power-of-two
  core, see :func:`_rhd`);
* tree: AllReduce exact for one segment on every ``p``, any segments on powers of two,
  a few segments elsewhere; ReduceScatter and AllGather are lock-step estimates (see
  :func:`_tree`).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import numpy as np

from collectives.build import ALGORITHMS
from collectives.schedule import COLLECTIVES

__all__ = ["cost"]

Form = Callable[..., float]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _ring(collective: str, p: int, count: int, ds: int, a: float, b: float, g: float) -> float:
    """Ring (Thakur, Rabenseifner & Gropp 2005, section 4.1; Patarasuk & Yuan 2009).

    ``p - 1`` reduce-scatter steps, each sending one block and reducing one, then ``p - 1``
    allgather steps, each forwarding one block::

        ReduceScatter  (p-1) (a + B b + B g)       = (p-1) a + (p-1)/p n (b + g)
        AllGather      (p-1) (a + B b)             = (p-1) a + (p-1)/p n b
        AllReduce      both: 2 (p-1) a + 2 (p-1)/p n b + (p-1)/p n g

    (right-hand sides for ``n`` divisible by ``p ds``).
    """
    big = _ceil_div(count, p) * ds
    scatter = (p - 1) * (a + big * (b + g))
    gather = (p - 1) * (a + big * b)
    return {"reduce_scatter": scatter, "allgather": gather}.get(collective, scatter + gather)


def _starts(count: int, parts: int) -> np.ndarray:
    """First element of each of ``parts`` near-equal parts, and ``count``
    (:func:`collectives.layout.split`)."""
    size, extra = divmod(count, parts)
    index = np.arange(parts + 1)
    return index * size + np.minimum(index, extra)


def _rhd(collective: str, p: int, count: int, ds: int, a: float, b: float, g: float) -> float:
    """Recursive halving-doubling (Rabenseifner; Thakur, Rabenseifner & Gropp 2005, 4.3).

    For ``p = p' = 2**k`` and ``n`` divisible by ``p ds``::

        ReduceScatter  lg p a + (p-1)/p n (b + g)
        AllGather      lg p a + (p-1)/p n b
        AllReduce      2 lg p a + 2 (p-1)/p n b + (p-1)/p n g

    For ``p > p' = 2**floor(lg p)``, ``r = p - p'`` extra ranks fold into survivors first
    and are served last: AllReduce adds ``a + n (b + g)`` before and ``a + n b`` after
    the core (the whole vector each way), ReduceScatter ``a + n (b + g)`` and
    ``a + n/p b``, AllGather ``a + n/p b`` and ``a + (p-1)/p n b``; with pairs spread over
    the core, the core windows differ by a block between ranks.

    The value is the exact critical path of that schedule for any ``p`` and count: with
    ``T[i]`` the time core rank ``i`` is ready (after its fold-in, if paired), step ``m``
    of the core sets ``T[i] = max(T[i], T[i^m]) + a + max(give_i b, keep_i (b + g'))``
    (``g' = g`` in the halving phase, 0 in doubling), where ``give_i``/``keep_i`` are the
    bytes of the windows rank ``i`` sends and receives; the result is the largest ``T[i]``
    plus the fold-out of paired ranks.
    """
    core = 1 << (p.bit_length() - 1)
    if core == p and count % p == 0:  # the textbook form, exact here
        lg, part = p.bit_length() - 1, (p - 1) * (count // p) * ds
        return {"reduce_scatter": lg * a + part * (b + g), "allgather": lg * a + part * b}.get(
            collective, 2 * lg * a + part * (2 * b + g))
    extra = p - core
    i = np.arange(core + 1)
    first = i + (i * extra + core - 1) // core  # collectives.algorithms.rhd._Fold.first
    starts = _starts(count, p) * ds
    if collective == "allreduce":
        edges = _starts(count, core) * ds
    else:
        edges = starts[first]
    own = starts[first[:-1] + 1] - starts[first[:-1]]  # block of the first (extra) rank
    paired = first[1:] - first[:-1] == 2
    n = count * ds
    fold_in = {"allreduce": n, "reduce_scatter": n}.get(collective, own)
    fold_out = {"allreduce": n, "reduce_scatter": own}.get(collective, n - own)
    reduces = collective != "allgather"
    ready = np.where(paired, a + np.broadcast_to(fold_in, (core,)) * (b + g * reduces), 0.0)
    ranks = i[:-1]
    if collective != "allgather":
        mask = core // 2
        while mask:
            lo = ranks & ~(2 * mask - 1)
            keep = lo + (ranks & mask)
            give = lo + (~ranks & mask)
            cost = a + np.maximum((edges[give + mask] - edges[give]) * b,
                                  (edges[keep + mask] - edges[keep]) * (b + g))
            ready = np.maximum(ready, ready[ranks ^ mask]) + cost
            mask //= 2
    if collective != "reduce_scatter":
        mask = 1
        while mask < core:
            mine = ranks & ~(mask - 1)
            theirs = mine ^ mask
            cost = a + np.maximum(edges[mine + mask] - edges[mine],
                                  edges[theirs + mask] - edges[theirs]) * b
            ready = np.maximum(ready, ready[ranks ^ mask]) + cost
            mask *= 2
    done = ready + np.where(paired, a + np.broadcast_to(fold_out, (core,)) * b, 0.0)
    return float(done.max()) if p > 1 else 0.0


def _pipeline(collective: str, p: int, count: int, ds: int, a: float, b: float, g: float,
              segments: int) -> float:
    """Chunked pipeline along the chain ``0 - 1 - ... - p-1`` (lock-step rounds).

    ``S`` segments of the vector (AllReduce) or ``m`` segments per block (ReduceScatter,
    AllGather); ``s`` is the largest segment in bytes (``n / S`` or ``n / (p m)``)::

        AllReduce      (S + 2p - 3) (a + s b) + (S + p - 2) s g
        ReduceScatter  ((p-1) m + d) (a + s (b + g)),  d = 1 if p = 3, or p > 3 and m = 1, else 0
        AllGather      (p-1) m (a + s b)

    ``d`` is the round by which the owner of a block delays one of two partial sums of
    the same segment arriving together (see :mod:`collectives.algorithms.pipeline`).  The
    module's lock-step count also charges it for odd ``p > 3`` with ``m >= 2``; there the
    delayed receive is off the critical path once ranks move on as soon as their own
    step is done (as executors and the simulator do), so it costs nothing.
    """
    if p == 1:
        return 0.0
    if collective == "allreduce":
        s = _ceil_div(count, segments) * ds
        return (segments + 2 * p - 3) * (a + s * b) + (segments + p - 2) * s * g
    s = _ceil_div(_ceil_div(count, p), segments) * ds
    if collective == "allgather":
        return (p - 1) * segments * (a + s * b)
    late = int(p == 3 or (p > 3 and segments == 1))
    return ((p - 1) * segments + late) * (a + s * (b + g))


def _tree(collective: str, p: int, count: int, ds: int, a: float, b: float, g: float,
          segments: int) -> float:
    """Double binary tree, each tree carrying half the vector in ``S`` segments.

    ``D = ceil(lg p)`` is the depth of both trees, ``s`` the largest segment of a half in
    bytes (``n / (2S)``); rounds as in :mod:`collectives.algorithms.tree`::

        AllReduce, S = 1   (3D - 1 - e) (a + s b) + (2D - 1 - e) s g
        AllReduce, S >= 2  (3D + S - 1) a + max(3D + S - 1, 2S) s b + (2D + S - 2) s g
        ReduceScatter      (3D + S - 1) (a + s (b + g))
        AllGather          (2D + S - 1) (a + s b)

    AllReduce critical path (measured against :func:`simulator.simulate` on
    :func:`topology.flat`): ``S - 1`` rounds to fill the pipe, ``2D`` up (the two
    children of a node are reduced in consecutive rounds) and ``D`` down, the reduction
    on ``2D + S - 2`` of them.  With one segment nothing is staggered and a rank goes
    ahead as soon as its peers are ready: the path climbs past the second child of
    every level but one, ``e = 1`` when ``p = 2**(D-1) + 1`` (the root's child then has a
    single child), else 0.  The two trees share a link (the same ordered pair of ranks,
    one tree going up where the other goes down): in steady state it carries a segment of
    each tree per round, so the path pays ``2S`` segments of bandwidth once
    ``2S > 3D + S - 1``.  Exact (1e-9 relative, segments that divide evenly, e.g.
    ``n`` a multiple of ``2 p S ds``) for ``S = 1`` on every ``p``, for every ``S`` on
    ``p = 2`` and powers of two, and for ``2 <= S <= 3D - 2`` on the other ``p >= 4``.
    Where the shared link dominates on other ``p`` the simulation pays one to three
    rounds more of ``s b`` (``2S + 1`` on most ``p``, ``2S + 3`` on ``p = 12``), and
    ``p = 3`` (where both trees use both edges) is off by up to 30%.

    ReduceScatter and AllGather are the module's lock-step round counts with every
    message charged as a whole segment, within -20% .. +200% of the simulated critical
    path: they move only the part of a segment outside (inside) a subtree, so the
    messages differ in size by subtree, and pieces sharing a link cost a few percent
    more.
    """
    if p == 1:
        return 0.0
    depth = (p - 1).bit_length()
    s = _ceil_div(max(count - count // 2, 0), segments) * ds
    if collective == "allreduce":
        if segments == 1:
            e = int(p > 2 and p == (1 << (depth - 1)) + 1)
            return (3 * depth - 1 - e) * (a + s * b) + (2 * depth - 1 - e) * s * g
        rounds = 3 * depth + segments - 1
        return (rounds * a + max(rounds, 2 * segments) * s * b
                + (2 * depth + segments - 2) * s * g)
    if collective == "reduce_scatter":
        return (3 * depth + segments - 1) * (a + s * (b + g))
    return (2 * depth + segments - 1) * (a + s * b)


_FORMS: dict[str, Form] = {"ring": _ring, "tree": _tree, "rhd": _rhd, "pipeline": _pipeline}


def _check_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{name}={value!r} is not allowed; it must be a number >= 0")
    return float(value)


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}={value!r} is not allowed; it must be an integer >= {minimum}")
    return value


def cost(collective: str, algorithm: str, nranks: int, nbytes: int, alpha: float,
         beta: float, gamma: float, dtype_size: int = 4, **params: Any) -> float:
    """Predict the time of ``algorithm`` for ``collective`` in the alpha-beta-gamma model.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    algorithm : {"ring", "tree", "rhd", "pipeline"}
        The algorithm; its schedule is the one :func:`collectives.build_schedule` makes.
    nranks : int
        Ranks, at least 1.
    nbytes : int
        Bytes of the full vector (AllReduce buffer, ReduceScatter input, AllGather
        output), a multiple of ``dtype_size``.
    alpha : float
        Seconds per message (latency).
    beta : float
        Seconds per byte sent (1 / bandwidth).
    gamma : float
        Seconds per byte reduced.
    dtype_size : int, optional
        Bytes per element (default 4).
    **params
        The algorithm's tuning parameters (e.g. ``segments``), defaults as in
        :func:`collectives.build_schedule`; ``order`` is accepted and does not change the
        cost on a uniform model.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError
        For an unknown collective or algorithm or a value out of range.
    TypeError
        For a parameter the algorithm does not take.

    Examples
    --------
    >>> round(cost("allreduce", "ring", 4, 4096, alpha=1e-6, beta=1e-9, gamma=0.0), 12)
    1.2144e-05
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {collective!r} is not supported; choose one of "
                         f"{list(COLLECTIVES)}") from None
    if algorithm not in _FORMS:
        raise ValueError(f"algorithm {algorithm!r} is not supported; choose one of "
                         f"{[a for a in ALGORITHMS if a in _FORMS]}") from None
    _check_int("nranks", nranks, 1)
    _check_int("nbytes", nbytes, 0)
    _check_int("dtype_size", dtype_size, 1)
    if nbytes % dtype_size:
        raise ValueError(f"nbytes={nbytes} is not allowed; it must be a multiple of "
                         f"dtype_size={dtype_size}")
    a, b, g = (_check_number(k, v) for k, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)))
    module = importlib.import_module(f"collectives.algorithms.{algorithm}")
    params.pop("order", None)
    unknown = sorted(set(params) - set(module.PARAMS))
    if unknown:
        raise TypeError(f"parameter {unknown[0]!r} is not taken by algorithm {algorithm!r}; "
                        f"it takes {sorted(module.PARAMS)}")
    count = nbytes // dtype_size
    resolved = module.resolve_params(collective, nranks, count, **params)
    return _FORMS[algorithm](collective, nranks, count, dtype_size, a, b, g, **resolved)
