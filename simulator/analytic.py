"""The analytic model: what an algorithm describes, priced on a machine.

Every algorithm describes its communication (:mod:`collectives.traffic`) as lock-step
rounds of message classes on the positions of its rank order, or, composed, as phases of
flat algorithms on groups of ranks.  :func:`price` turns that into time on a machine:

* **Orders.**  ``C`` channels each carry ``ceil(count / C)`` elements over their own order
  (:func:`simulator.channel_choice.schedule_params`, as the simulated tables run them); a
  phase runs every group of ranks ``C`` times side by side.
* **Messages on links.**  A round's classes of every channel and group are in flight
  together: each message takes its route (:meth:`topology.Topology.route`), a link
  carrying ``k`` of them gives each ``1/k`` of its bandwidth, and a message pays per byte
  the most any link of its route charges it.  Its latency is its route's (the sum of its
  links', by link kind under a GPU model), less what the protocol's FIFO slots hide of it
  (:func:`simulator.gpu.hidden_latency`, at the route's nominal bottleneck rate).
* **Rounds.**  A round lasts as long as its slowest message plus the receiver's reduction
  of it (``gamma`` a byte, at most ``piece`` bytes at once where a ReduceScatter's vector
  lies in the buffer in pieces); a chain of ``S`` segments takes the sum over its hops
  plus ``S - 1`` times its slowest hop (the critical path of a pipeline); the time is the
  sum over the rounds, plus the GPU model's cost per call (:func:`simulator.gpu.gpu_terms`).

**Sample.**  The messages priced are those with an end on a sampled rank: every rank up
to :data:`SAMPLE_ALL_RANKS` ranks, else every rank of a few nodes (the first two, the
middle one, the last), which on a machine whose nodes are alike meet every kind of
route and link load a round has.  The model's cost therefore grows with the number of
classes (and by a numpy pass over each class's positions), not with rank pairs: a table
on 16,384 GPUs takes well under a second (``benchmarks/bench_select.py``).

The lock-step sum is exact on a contention-free machine whenever each round's slowest
message lies on the critical path (ring at every count; rhd on powers of two with even
windows; pipeline and trees over all ranks with even segments); otherwise it is an upper
bound (a rank with nothing to do in a round does not wait for it).  On a machine the
max-min sharing of the simulator gives a message more than its equal share when another
is held back elsewhere, and channels drift apart; ``benchmarks/bench_select.py`` prints
the worst error against :func:`simulator.simulate` per algorithm.
"""

from __future__ import annotations

import functools
from reprlib import repr as brief
from typing import Any, Sequence

import numpy as np

from topology.checks import check_int
from topology.order import node_groups

from collectives.layout import count_of
from collectives.registry import Algorithm
from collectives.registry import algorithm as registered
from collectives.schedule import COLLECTIVES
from collectives.traffic import Phase, describe

from .channel_choice import schedule_params
from .gpu import hidden_latency, link_figures

__all__ = ["price", "price_one", "SAMPLE_ALL_RANKS"]

#: up to so many ranks every rank's messages are priced; above, those of a few nodes
SAMPLE_ALL_RANKS = 64

Orders = tuple[tuple[int, ...], ...]


def _ceil_div(a: Any, b: Any) -> Any:
    return -(-a // b)


@functools.lru_cache(maxsize=16)
def _sample(topology: Any) -> np.ndarray:
    """Whether each rank of ``topology`` is sampled (see the module docstring)."""
    sampled = np.zeros(topology.nranks, dtype=bool)
    if topology.nranks <= SAMPLE_ALL_RANKS:
        sampled[:] = True
        return sampled
    groups = node_groups(topology)
    n = len(groups)
    for g in {0, 1, n // 2, n - 1} & set(range(n)):
        sampled[groups[g]] = True
    return sampled


class _Priced:
    """One class's sampled messages as distinct rows of latency, seconds per byte and
    nominal rate."""

    __slots__ = ("latency", "per_byte", "rate", "weight", "elements", "reduce", "pieced",
                 "skip_empty")

    def __init__(self, rows: np.ndarray, counts: np.ndarray, hops: int, messages: Any) -> None:
        self.latency, self.per_byte, self.rate = (rows[:, k:k + 1] for k in range(3))
        # a chain's hops: each row stands for this many of one order's messages
        self.weight = (counts * hops / counts.sum())[:, None]
        self.elements, self.reduce = messages.elements, messages.reduce
        self.pieced, self.skip_empty = messages.pieced, messages.skip_empty


_ROUNDS: dict[tuple[Any, ...], tuple[Any, list]] = {}


def _priced_rounds(topology: Any, links: tuple[np.ndarray, np.ndarray], orders: Orders,
                   rounds: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Every round of ``rounds`` as its classes' figures on the routes of ``topology``
    whose links have the latencies and bandwidths ``links``, its messages of every order
    in flight together (cached)."""
    key = (topology, id(links[0]), id(links[1]), orders, id(rounds))
    found = _ROUNDS.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], (rounds, *links))):
        return found[1]
    latency, bandwidth = links
    out: list[tuple[Any, ...]] = []
    for round_, (owners, lengths, crossed, together) in zip(rounds,
                                                            _routed(topology, orders, rounds)):
        alone = _classes(round_, owners, lengths, crossed, together, latency, bandwidth)
        shared = _classes(round_, owners, lengths, crossed, 0 * together, latency, bandwidth) \
            if round_.overlap else alone
        out.append((round_.repeat, round_.chain, round_.overlap, round_.path, alone, shared))
    if len(_ROUNDS) > 4096:
        _ROUNDS.clear()
    _ROUNDS[key] = ((rounds, *links), out)
    return out


_ROUTED: dict[tuple[Any, ...], tuple[Any, list]] = {}


def _routed(topology: Any, orders: Orders, rounds: tuple[Any, ...]) -> list[tuple[np.ndarray, ...]]:
    """Every round's sampled messages: their classes, the links of their routes (CSR:
    every message's first entry and its entries' links) and the keys of the messages
    in flight together (the same under every protocol; cached)."""
    key = (topology, orders, id(rounds))
    found = _ROUTED.get(key)
    if found is not None and found[0] is rounds:
        return found[1]
    sampled = _sample(topology)
    ranks = np.asarray(orders)
    out: list[tuple[np.ndarray, ...]] = []
    for round_ in rounds:
        owner, pair, together = [], [], []
        for c, messages in enumerate(round_.messages):
            src, dst = ranks[:, messages.src], ranks[:, messages.dst]
            keep = sampled[src] | sampled[dst]
            if len(messages.src) and not keep.any():  # a class far from the sample: one
                keep[0, 0] = True
            owner.append(np.full(int(keep.sum()), c))
            pair.append(src[keep] * topology.nranks + dst[keep])
            # a chain's hops are in flight one index at a time, in every order at once
            index = np.broadcast_to(np.arange(len(messages.src)), keep.shape)[keep]
            together.append(index + c * (1 + len(messages.src)) if round_.chain
                            else np.zeros(len(index), dtype=np.int64))
        pairs = np.concatenate(pair)
        out.append((np.concatenate(owner), *_entries(topology, pairs),
                    np.concatenate(together)))
    if len(_ROUTED) > 4096:
        _ROUTED.clear()
    _ROUTED[key] = (rounds, out)
    return out


_ROUTES: dict[Any, dict[int, tuple[int, ...]]] = {}


def _entries(topology: Any, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The routes of ``pairs`` (``src * nranks + dst``) as every pair's number of links
    and their links, one after another."""
    known = _ROUTES.setdefault(topology, {})
    if len(_ROUTES) > 16:
        _ROUTES.clear()
        known = _ROUTES.setdefault(topology, {})
    unique, inverse = np.unique(pairs, return_inverse=True)
    routes = []
    for key in unique.tolist():
        route = known.get(key)
        if route is None:
            route = known[key] = topology.route(*divmod(key, topology.nranks))
        routes.append(route)
    lengths = np.array([len(r) for r in routes], dtype=np.int64)
    flat = np.fromiter((i for r in routes for i in r), dtype=np.int64, count=int(lengths.sum()))
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    length = lengths[inverse]
    message = np.repeat(np.arange(len(pairs)), length)
    offset = np.arange(len(message)) - np.repeat(np.cumsum(length) - length, length)
    return length, flat[first[inverse][message] + offset]


def _classes(round_: Any, owners: np.ndarray, lengths: np.ndarray, links: np.ndarray,
             together: np.ndarray, latency: np.ndarray, bandwidth: np.ndarray) -> list[_Priced]:
    """The figures of one round's messages (of classes ``owners``, routes of ``lengths``
    links ``links``): links shared equally by the messages crossing them that are in
    flight ``together`` (equal keys)."""
    routed = lengths > 0
    group = np.repeat(together, lengths)
    _, inverse, counts = np.unique(group * len(bandwidth) + links, return_inverse=True,
                                   return_counts=True)
    load = counts[inverse]  # messages in flight together on each entry's link
    starts = (np.cumsum(lengths) - lengths)[routed]
    figures = np.zeros((len(lengths), 3))
    figures[:, 2] = np.inf
    if len(links):
        figures[routed, 0] = np.add.reduceat(latency[links], starts)
        figures[routed, 1] = np.maximum.reduceat(load / bandwidth[links], starts)
        figures[routed, 2] = np.minimum.reduceat(bandwidth[links], starts)
    return [_Priced(*np.unique(figures[owners == c], axis=0, return_counts=True),
                    len(messages.src), messages)
            for c, messages in enumerate(round_.messages) if (owners == c).any()]


def _rounds_time(priced: list[tuple[Any, ...]], counts: np.ndarray, ds: int,
                 gamma: float, slot: float | None, piece: np.ndarray | None) -> np.ndarray:
    """Sum over the rounds of each round's slowest message at every count (elements)."""
    total = np.zeros(len(counts))
    for repeat, chain, overlap, path, alone, shared in priced:
        slowest, crossing = _slowest(alone, counts, ds, gamma, slot, piece, bool(chain), path)
        if not chain:
            total += repeat * slowest
            continue
        total += crossing + (chain - 1 - overlap) * slowest
        if overlap:
            total += overlap * _slowest(shared, counts, ds, gamma, slot, piece, False, False)[0]
    return total


def _slowest(classes: list[_Priced], counts: np.ndarray, ds: int, gamma: float,
             slot: float | None, piece: np.ndarray | None,
             crossed: bool, path: bool) -> tuple[np.ndarray, np.ndarray]:
    """The slowest message of ``classes`` at every count and, if ``crossed``, the sum
    over a chain's hops (with ``path``, each class's slowest message one hop)."""
    slowest, crossing = np.zeros(len(counts)), np.zeros(len(counts))
    for c in classes:
        nbytes = (c.elements(counts) * ds).astype(float)[None, :]
        time = hidden_latency(c.latency, nbytes, c.rate, slot) + nbytes * c.per_byte
        if c.reduce and gamma:
            reduced = np.minimum(nbytes, piece) if piece is not None and c.pieced else nbytes
            time = time + gamma * reduced
        if c.skip_empty:
            time = np.where(nbytes > 0, time, 0.0)
        slowest = np.maximum(slowest, time.max(axis=0))
        if crossed:
            crossing += time.max(axis=0) if path else (c.weight * time).sum(axis=0)
    return slowest, crossing


def _resolved(entry: Algorithm, collective: str, q: int, count: int,
              params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(entry.resolve_params(collective, q, count, **params).items()))


def _flat_time(collective: str, algorithm: str, topology: Any, terms: tuple, orders: Orders,
               counts: np.ndarray, ds: int, params: dict[str, Any],
               piece: np.ndarray | None) -> np.ndarray:
    """One flat algorithm over ``orders`` (its channels and groups), each order carrying
    ``counts`` elements (one per size)."""
    q = len(orders[0])
    if q < 2:
        return np.zeros(len(counts))
    entry = registered(algorithm)
    resolved = [_resolved(entry, collective, q, int(n), params) for n in counts.tolist()]
    out = np.zeros(len(counts))
    latency, bandwidth, slot, gamma = terms
    for key in dict.fromkeys(resolved):
        at = np.array([r == key for r in resolved])
        rounds = describe(collective, algorithm, q, key)
        priced = _priced_rounds(topology, (latency, bandwidth), orders, rounds)
        out[at] = _rounds_time(priced, counts[at], ds, gamma, slot,
                               None if piece is None else piece[at])
    if not entry.empty_sends:  # an empty vector sends nothing
        out[counts == 0] = 0.0
    return out


@functools.lru_cache(maxsize=256)
def _placed(algorithm: str, channels: int, topology: Any,
            nranks: int) -> tuple[Orders, tuple[tuple[str, Any], ...]]:
    """Every channel's order and the parameters the machine adds (the tree's
    ``ranks_per_node``), as :func:`schedule_params` gives the simulated tables."""
    added = schedule_params(algorithm, (("channels", channels),), topology, nranks)
    order = added.pop("order", None)
    added.pop("channels")
    orders = (tuple(range(nranks)),) * channels if order is None else tuple(order)
    return orders, tuple(added.items())


def _piece(parts: int, counts: np.ndarray, channels: int, ds: int) -> np.ndarray:
    """Bytes of the runs a ReduceScatter channel's vector lies in (blocks of ``parts``
    cut into channels)."""
    return _ceil_div(_ceil_div(counts, parts), channels) * ds


def _time(collective: str, algorithm: str, topology: Any, terms: tuple, nranks: int,
          counts: np.ndarray, ds: int, params: dict[str, Any]) -> np.ndarray:
    """Seconds of ``algorithm`` at every count, without the cost per call."""
    channels = params.pop("channels", 1)
    params.pop("order", None)
    if registered(algorithm).composed:
        phases = describe(collective, algorithm, nranks, tuple(sorted(params.items())))
        total = np.zeros(len(counts))
        for phase in phases:
            total += _phase_time(collective, phase, topology, terms, counts, ds, channels)
        return total
    orders, added = _placed(algorithm, channels, topology, nranks)
    piece = _piece(nranks, counts, channels, ds) \
        if collective == "reduce_scatter" and channels > 1 else None
    return _flat_time(collective, algorithm, topology, terms, orders,
                      _ceil_div(counts, channels), ds, {**params, **dict(added)}, piece)


def _phase_time(collective: str, phase: Phase, topology: Any, terms: tuple,
                counts: np.ndarray, ds: int, channels: int) -> np.ndarray:
    """One phase of a composed algorithm: every group ``channels`` times side by side."""
    orders = tuple(group for group in phase.groups for _ in range(channels))
    cut = channels > 1 or collective == "reduce_scatter"
    piece = _piece(phase.piece, counts, channels, ds) \
        if phase.piece is not None and cut else None
    elements = _ceil_div(_ceil_div(counts, phase.fraction), channels)
    return _flat_time(phase.collective, phase.algorithm, topology, terms, orders, elements,
                      ds, {}, piece)


def _check(collective: str, algorithm: str, params: dict[str, Any]) -> None:
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    entry = registered(algorithm)
    entry.check_collective(collective)
    taken = entry.defaults
    unknown = sorted(set(params) - set(taken))
    if unknown:
        raise TypeError(f"parameter {unknown[0]!r} is not taken by algorithm {brief(algorithm)}; "
                        f"it takes {sorted(taken)}")
    check_int(params.get("channels", 1), "channels", 1)


def price(collective: str, algorithm: str, topology: Any, sizes: Sequence[int],
          nranks: int | None = None, dtype_size: int = 4, protocol: str | None = None,
          **params: Any) -> np.ndarray:
    """The analytic time of ``algorithm`` on ``topology`` at each of ``sizes``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    algorithm : str
        A registered algorithm that serves ``collective`` (``hier`` needs
        ``ranks_per_node``).
    topology : topology.Topology
        The machine.
    sizes : sequence of int
        Bytes of the vector, for AllToAll of every rank's send buffer
        (:func:`collectives.layout.count_of`); each is rounded down to whole elements.
    nranks : int, optional
        Ranks, from rank 0 (default all of the topology's).
    dtype_size : int, optional
        Bytes per element (default 4).
    protocol : str, optional
        A protocol of ``topology.gpu`` (its default when None); None without one.  The
        machine is taken under ``algorithm``'s figures of ``topology.gpu`` where it has
        some (:func:`simulator.gpu.gpu_terms`).
    **params
        The algorithm's parameters, ``channels`` included (``order`` is taken from the
        machine, the algorithm's ``orders``).

    Returns
    -------
    numpy.ndarray
        Seconds, one per size, the call's fixed cost of the GPU model included.

    Raises
    ------
    ValueError, TypeError
        For an unknown collective, algorithm or parameter, and as
        :func:`simulator.gpu.resolve_protocol` and the algorithm's ``resolve_params``.

    Examples
    --------
    >>> import topology
    >>> two = topology.dgx_h100(2, gpu_model=None)
    >>> one, eight = (price("allreduce", "ring", two, [1 << 30], channels=c)[0] for c in (1, 8))
    >>> round(one / eight)  # eight rings, each on its own NIC
    8
    """
    _check(collective, algorithm, params)
    check_int(dtype_size, "dtype_size", 1)
    *terms, call_s = link_figures(topology, protocol, algorithm, params.get("channels", 1))
    nranks = topology.nranks if nranks is None else nranks
    check_int(nranks, "nranks", 1, topology.nranks,
              note=f" (the ranks topology {topology.name!r} places)")
    counts = count_of(collective, np.asarray(sizes, dtype=np.int64), dtype_size, nranks)
    return call_s + _time(collective, algorithm, topology, tuple(terms), nranks, counts, dtype_size,
                          dict(params))


def price_one(collective: str, algorithm: str, topology: Any, nbytes: int,
              nranks: int | None = None, dtype_size: int = 4, protocol: str | None = None,
              **params: Any) -> float:
    """:func:`price` at one size (see there for the parameters).

    Examples
    --------
    >>> import topology
    >>> flat = topology.flat(4, alpha=1e-6, beta=1e-9)
    >>> round(price_one("allreduce", "ring", flat, 4096) * 1e6, 4)
    12.144
    """
    check_int(nbytes, "nbytes", 0)
    return float(price(collective, algorithm, topology, [nbytes], nranks, dtype_size, protocol,
                       **params)[0])
