"""``build_schedule``: look up an algorithm, check its parameters, return a lazy schedule."""

from __future__ import annotations

from functools import lru_cache
from reprlib import repr as brief
from typing import Any, Callable

from topology.checks import check_int, is_int
from .compose import channel_parts, composed, identity_orders
from .layout import block
from .placement import Placement
from .registry import algorithm as registered
from .registry import names
from .rounds import Lane
from .schedule import BLOCK_COLLECTIVES, COLLECTIVES, RankSteps, Schedule
from .vcounts import check_counts

__all__ = ["ALGORITHMS", "BLOCK_ALGORITHMS", "COMPOSED", "MAX_CHANNELS", "MAX_SEGMENTS", "SEGMENTS_ANY_COUNT",
           "build_schedule", "algorithm_params", "check_sizes"]

#: the most channels a schedule is cut into (NCCL keeps at most 32, MAXCHANNELS in its
#: src/include/devcomm.h; more only multiplies the steps)
MAX_CHANNELS = 256
#: the most segments of any vector (tree and pipeline): each adds steps, whatever the count
MAX_SEGMENTS = 65536
#: segments any vector may be cut into; beyond them, at most one per element
SEGMENTS_ANY_COUNT = 1024

#: the flat algorithms of the registry (:mod:`collectives.registry`; ``native`` and
#: ``auto`` are executor choices)
ALGORITHMS: tuple[str, ...] = names(composed=False)
#: the algorithms composed of flat ones (they need ``ranks_per_node``)
COMPOSED: tuple[str, ...] = names(composed=True)
#: the flat algorithms that serve every one of AllReduce, ReduceScatter and AllGather
#: (those the public calls and the tools that run every choice of them take)
BLOCK_ALGORITHMS: tuple[str, ...] = tuple(
    a for a in ALGORITHMS if set(BLOCK_COLLECTIVES) <= registered(a).collectives)


def algorithm_params(algorithm: str) -> dict[str, Any]:
    """Return the tuning parameters ``algorithm`` accepts with their defaults.

    Every algorithm also accepts ``channels`` (default 1): the vector is cut into that
    many channels, each running the algorithm on its part, their operations sharing
    steps; every algorithm but ``hier`` accepts ``order``, a permutation of the ranks
    (or one per channel): the algorithm runs as if rank ``order[i]`` were rank ``i``
    (ring and chain neighbours follow it).

    Parameters
    ----------
    algorithm : str
        A registered algorithm (:data:`ALGORITHMS` or :data:`COMPOSED`).

    Returns
    -------
    dict[str, Any]
        Parameter name -> default (``None``: chosen from the rank count and size).

    Raises
    ------
    ValueError
        If ``algorithm`` is not registered.
    """
    return dict(registered(algorithm).defaults)


def check_sizes(params: dict[str, Any], count: int | None = None, where: str = "") -> None:
    """Raise if a size-like parameter is beyond its bound, before any work is done.

    ``channels`` is at most :data:`MAX_CHANNELS`; ``segments`` (None: chosen) at most
    ``max(count, SEGMENTS_ANY_COUNT)`` and never more than :data:`MAX_SEGMENTS`.
    :func:`build_schedule` checks every call's; a tuning file's rules, which hold no
    count, are checked against the absolute bounds (:mod:`collectives.tuning`).

    Parameters
    ----------
    params : dict
        Tuning parameters, as passed to :func:`build_schedule`.
    count : int, optional
        Elements of the vector; None where it is not known.
    where : str, optional
        Prefixed to the parameter's name in the message (e.g. ``"rules[3].params."``).

    Raises
    ------
    ValueError
        Naming the parameter, its value and the bound.

    Examples
    --------
    >>> check_sizes({"segments": 2000}, count=100)
    Traceback (most recent call last):
    ...
    ValueError: segments=2000 is not allowed; it must be an integer in [1, 1024] (at most one segment per element of the 100, or 1024 segments)
    """
    channels = params.get("channels")
    if is_int(channels) and channels > MAX_CHANNELS:  # the algorithms check the rest
        check_int(channels, f"{where}channels", 1, MAX_CHANNELS,
                  note=" (more channels only multiply the steps)")
    segments = params.get("segments")
    most = MAX_SEGMENTS if count is None else min(max(count, SEGMENTS_ANY_COUNT), MAX_SEGMENTS)
    if is_int(segments) and segments > most:
        why = (f" (at most {MAX_SEGMENTS})" if count is None else
               f" (at most one segment per element of the {count}, or "
               f"{SEGMENTS_ANY_COUNT} segments)" if most < MAX_SEGMENTS else
               f" (at most {MAX_SEGMENTS} segments of any vector)")
        check_int(segments, f"{where}segments", 1, most, note=why)


def _check_order(order: Any, nranks: int) -> tuple[int, ...] | None:
    if order is None:
        return None
    order = tuple(order)
    if sorted(order) != list(range(nranks)):
        raise ValueError(f"order={brief(order)} is not allowed; it must be a permutation of "
                         f"0..{nranks - 1}")
    return None if order == tuple(range(nranks)) else order


def _check_orders(order: Any, nranks: int, channels: int) -> tuple[tuple[int, ...], ...] | None:
    """One permutation for every channel, or one per channel; None when all are the identity."""
    if order is None:
        return None
    order = tuple(order)
    if order and not isinstance(order[0], int):
        if len(order) != channels:
            raise ValueError(f"order= holds {len(order)} rank orders; with channels={channels} "
                             f"it must hold one permutation or {channels} of them")
        orders = tuple(_check_order(each, nranks) or tuple(range(nranks)) for each in order)
    else:
        orders = ((_check_order(order, nranks) or tuple(range(nranks))),) * channels
    return None if all(each == tuple(range(nranks)) for each in orders) else orders


def _check_peer_counts(counts: Any, nranks: int, count: int) -> tuple[tuple[int, ...], ...]:
    """AllToAllv's matrix as tuples, checked, its largest entry ``count``."""
    matrix = check_counts(counts, nranks)
    largest = max(max(row) for row in matrix)
    if largest != count:
        raise ValueError(f"count={count} is not allowed with counts=: an AllToAllv's count is "
                         f"the largest of its counts, here {largest}")
    return matrix


@lru_cache(maxsize=512)
def _build(collective: str, algorithm: str, nranks: int, count: int,
           params: tuple[tuple[str, Any], ...], channels: int,
           orders: tuple[tuple[int, ...], ...] | None) -> Schedule:
    module = registered(algorithm)
    if module.phases is not None:
        phases = module.phases(collective, nranks, count, channels, **dict(params))
        recorded = {**dict(params), **({"channels": channels} if channels > 1 else {})}
        return composed(collective, algorithm, nranks, count, recorded, phases)
    if channels > 1 or orders is not None:
        whole = Placement.of([(0, count)])
        blocks = tuple(block(count, nranks, r) for r in range(nranks))
        parts = channel_parts(module, collective, tuple(range(nranks)), whole, blocks,
                              orders or identity_orders(nranks, channels), dict(params))
        recorded = {**parts[0].params, **({"channels": channels} if channels > 1 else {})}
        if orders is not None:
            recorded["order"] = orders[0] if len(set(orders)) == 1 else orders
        return composed(collective, algorithm, nranks, count, recorded, [parts])
    resolved = module.resolve_params(collective, nranks, count, **dict(params))
    blocks = tuple(block(count, nranks, r) for r in range(nranks))
    lanes: Callable[[int], list[Lane]] | None = None
    rank_lanes = module.lanes

    def generate(rank: int) -> RankSteps:
        return tuple(module.rank_steps(collective, rank, nranks, count, blocks, **resolved))

    if rank_lanes is not None:
        def lanes(rank: int) -> list[Lane]:
            return rank_lanes(collective, rank, nranks, count, blocks, **resolved)
    working = None if module.working is None else \
        module.working(collective, nranks, count, **resolved)
    return Schedule(collective, algorithm, nranks, count, tuple(sorted(resolved.items())),
                    generate, lanes, working)


def build_schedule(collective: str, algorithm: str, nranks: int, count: int,
                   **params: Any) -> Schedule:
    """Build the schedule of ``algorithm`` for ``collective`` on ``nranks`` ranks.

    Parameters
    ----------
    collective : str
        One of :data:`~collectives.schedule.COLLECTIVES`.
    algorithm : str
        A registered algorithm (:mod:`collectives.registry`) that serves ``collective``:
        for AllReduce, ReduceScatter and AllGather ``ring``, ``tree`` (double binary
        tree), ``rhd`` (recursive halving-doubling), ``pipeline`` (chunked chain),
        ``hier`` (the hierarchical composition of them,
        :mod:`collectives.algorithms.hier`); for Broadcast and Reduce ``chain``,
        ``binomial``, ``scatter_allgather`` (Broadcast) and ``rabenseifner`` (Reduce);
        for AllToAll ``pairwise``, ``bruck`` and ``linear``.
    nranks : int
        Number of ranks, at least 1.
    count : int
        Elements of the full vector (the AllReduce, Broadcast or Reduce buffer, the
        ReduceScatter input, the AllGather output), at least 0; it need not divide by
        ``nranks``.  For AllToAll, the elements every rank sends every rank; with
        per-peer ``counts`` (AllToAllv), the largest of them.
    **params
        The algorithm's tuning parameters (see :func:`algorithm_params`), e.g.
        ``segments`` for tree, pipeline and chain, ``root`` for Broadcast and Reduce,
        ``counts`` (``counts[i][j]`` elements from rank ``i`` to rank ``j``) for
        AllToAll, ``channels`` (parts of the vector run side by side, each over its own
        rank order) for ring, tree, rhd, pipeline and hier, and ``order`` (a
        permutation of the ranks, or one per channel) for the first four.

    Returns
    -------
    Schedule
        Immutable; each rank's steps are generated on first use. Equal arguments return
        the same object.

    Raises
    ------
    ValueError
        For an unknown collective or algorithm, an algorithm that does not serve the
        collective, or a parameter value out of range.
    TypeError
        For a parameter the algorithm does not take.

    Examples
    --------
    >>> s = build_schedule("allreduce", "ring", 3, 7)
    >>> s.num_steps()
    4
    >>> print(s.steps(0)[0])
    send [5:7) -> 1; reduce [3:5) <- 2
    >>> print(build_schedule("allreduce", "ring", 2, 8, channels=2).steps(0)[0])
    send [2:4) -> 1; reduce [0:2) <- 1; send [6:8) -> 1; reduce [4:6) <- 1
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    module = registered(algorithm)
    module.check_collective(collective)
    check_int(nranks, "nranks", 1)
    check_int(count, "count", 0)
    check_sizes(params, count)
    channels = params.pop("channels", 1)
    check_int(channels, "channels", 1)
    unknown = sorted(set(params) - set(algorithm_params(algorithm)))
    if unknown:
        raise TypeError(f"parameter {unknown[0]!r} is not taken by algorithm {brief(algorithm)}; "
                        f"it takes {sorted(algorithm_params(algorithm))}")
    if not module.channeled and channels > 1:
        raise ValueError(f"channels={channels} is not allowed; algorithm {algorithm!r} runs "
                         "on one channel")
    orders = _check_orders(params.pop("order", None), nranks, channels)
    if params.get("counts") is not None:
        params["counts"] = _check_peer_counts(params["counts"], nranks, count)
    merged = {**module.params, **params}
    return _build(collective, algorithm, nranks, count, tuple(sorted(merged.items())), channels,
                  orders)
