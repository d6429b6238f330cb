"""Closed-form alpha-beta-gamma cost of every algorithm and collective.

Model: a message of ``m`` bytes between two ranks costs ``alpha + m * beta``; reducing
``m`` received bytes into the local buffer costs ``m * gamma`` at the receiver; a rank's
step ends when all its messages and reductions are done, and a message starts when both
ends have posted it (the semantics of :mod:`collectives.progress` and of
:func:`simulator.simulate`).  ``n`` is the vector's bytes, ``p`` the ranks, ``ds`` the
bytes per element; ``B = ceil(n / (p ds)) ds`` is the largest block.

Each form describes the schedule that :func:`collectives.build_schedule` generates, so
that :func:`simulator.simulate` on :func:`topology.flat` reproduces it.  rhd and the tree
read the network through ``hops`` (:class:`UniformHops` here: every pair costs ``a`` and
``b``), which :mod:`simulator.machine_forms` replaces with a machine's routes and shared
links.  On the uniform model:

* ring and pipeline: exact when the blocks and segments divide evenly; otherwise every
  block or segment is charged as the largest one (an upper bound that is tight to one
  element per message);
* rhd: exact for every ``p`` and every count (a vectorised walk over the power-of-two
  core, see :func:`_rhd`);
* tree (over all ranks or, with ``ranks_per_node``, over nodes): AllReduce and
  ReduceScatter (one schedule) exact for every ``p`` when the segments divide evenly,
  AllGather for every ``p`` and every count (a sum or a walk over the rounds, see
  :func:`_tree`).
"""

from __future__ import annotations

import functools
import importlib
from reprlib import repr as brief
from typing import Any, Callable

import numpy as np

from topology.checks import check_int, check_number

from collectives.build import ALGORITHMS
from collectives.schedule import COLLECTIVES

__all__ = ["cost"]

Form = Callable[..., float]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class UniformHops:
    """Every ordered pair of ranks costs ``a`` seconds plus ``b`` seconds per byte.

    The forms read a network through ``pairs``; :mod:`simulator.machine_forms` gives them
    one whose figures differ from pair to pair (a machine's routes and shared links).
    """

    uniform = True

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = a, b

    def pairs(self, src: np.ndarray, dst: np.ndarray,
              nbytes: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Latency (s) and seconds per byte of each message ``src[i] -> dst[i]`` (of
        ``nbytes``, which a uniform network, having no FIFO slots, does not read)."""
        return np.full(len(src), self.a), np.full(len(src), self.b)

    def during(self, src: np.ndarray, dst: np.ndarray) -> UniformHops:
        """The figures while only the messages ``src[i] -> dst[i]`` are in flight: these."""
        return self


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


def _pieced(size: Any, piece: int | None) -> Any:
    """``size`` bytes reduced as pieces of at most ``piece`` bytes side by side."""
    return size if piece is None else np.minimum(size, piece)


def _rhd(collective: str, p: int, count: int, ds: int, a: float, b: float, g: float,
         hops: Any = None, piece: int | None = None, doubling: bool = False) -> float:
    """Recursive halving-doubling (Rabenseifner; Thakur, Rabenseifner & Gropp 2005, 4.3),
    or with ``doubling`` recursive doubling (AllReduce only; 4.2).

    For ``p = p' = 2**k`` and ``n`` divisible by ``p ds``::

        ReduceScatter  lg p a + (p-1)/p n (b + g)
        AllGather      lg p a + (p-1)/p n b
        AllReduce      2 lg p a + 2 (p-1)/p n b + (p-1)/p n g
        doubling       lg p (a + n b + n g)        (any n)

    For ``p > p' = 2**floor(lg p)``, ``r = p - p'`` extra ranks fold into survivors first
    and are served last: AllReduce adds ``a + n (b + g)`` before and ``a + n b`` after
    the core (the whole vector each way), ReduceScatter ``a + n (b + g)`` and
    ``a + n/p b``, AllGather ``a + n/p b`` and ``a + (p-1)/p n b``; with pairs spread over
    the core, the core windows differ by a block between ranks.

    The value is the exact critical path of that schedule for any ``p`` and count: with
    ``T[i]`` the time core rank ``i`` is ready (after its fold-in, if paired), step ``m``
    of the core sets ``T[i] = max(T[i], T[i^m]) + max(a + give_i b, a + keep_i (b + g'))``
    (``g' = g`` in the halving phase, 0 in doubling), where ``give_i``/``keep_i`` are the
    bytes of the windows rank ``i`` sends and receives (the whole vector both ways, and
    ``g' = g``, at every step of recursive doubling); the result is the largest ``T[i]``
    plus the fold-out of paired ranks.  ``piece`` (bytes) bounds what one reduction
    handles: a message made of several pieces of the buffer is several receives, reduced
    side by side (channels of a ReduceScatter).  ``hops`` (default :class:`UniformHops` of ``a``
    and ``b``) may give every ordered pair its own latency and seconds per byte: the walk
    charges each message its own pair's (exact on any contention-free network).
    """
    core = 1 << (p.bit_length() - 1)
    if doubling and hops is None and piece is None and core == p:  # textbook, exact
        return (p.bit_length() - 1) * (a + count * ds * (b + g))
    if hops is None and piece is None and core == p and count % p == 0:  # textbook, exact
        lg, part = p.bit_length() - 1, (p - 1) * (count // p) * ds
        return {"reduce_scatter": lg * a + part * (b + g), "allgather": lg * a + part * b}.get(
            collective, 2 * lg * a + part * (2 * b + g))
    hops = UniformHops(a, b) if hops is None else hops
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
    survivor, lone = first[1:] - 1, first[:-1]  # the core rank's rank, its extra rank
    n = count * ds
    fold_in = {"allreduce": n, "reduce_scatter": n}.get(collective, own)
    fold_out = {"allreduce": n, "reduce_scatter": own}.get(collective, n - own)
    reduces = collective != "allgather"
    whole = np.broadcast_to(fold_in, (core,))
    lat, spb = hops.pairs(lone, survivor, whole)
    ready = np.where(paired, lat + whole * spb + _pieced(whole, piece) * (g * reduces), 0.0)
    ranks = i[:-1]

    def exchange(mask: int, sent: np.ndarray, received: np.ndarray, gamma: float) -> None:
        nonlocal ready
        peer = survivor[ranks ^ mask]
        lat_s, spb_s = hops.pairs(survivor, peer, sent)
        lat_r, spb_r = hops.pairs(peer, survivor, received)
        cost = np.maximum(lat_s + sent * spb_s,
                          lat_r + received * spb_r + _pieced(received, piece) * gamma)
        ready = np.maximum(ready, ready[ranks ^ mask]) + cost

    if doubling:
        for k in range(core.bit_length() - 1):
            exchange(1 << k, whole, whole, g)
    elif collective != "allgather":
        mask = core // 2
        while mask:
            lo = ranks & ~(2 * mask - 1)
            keep = lo + (ranks & mask)
            give = lo + (~ranks & mask)
            exchange(mask, edges[give + mask] - edges[give], edges[keep + mask] - edges[keep], g)
            mask //= 2
    if collective != "reduce_scatter" and not doubling:
        mask = 1
        while mask < core:
            mine = ranks & ~(mask - 1)
            theirs = mine ^ mask
            exchange(mask, edges[mine + mask] - edges[mine], edges[theirs + mask] - edges[theirs],
                     0.0)
            mask *= 2
    out = np.broadcast_to(fold_out, (core,))
    lat, spb = hops.pairs(survivor, lone, out)
    done = ready + np.where(paired, lat + out * spb, 0.0)
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
    the same segment arriving together (see :mod:`collectives.algorithms.pipeline`); it
    applies only when ``m = 1`` or ``p = 3``.
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


@functools.lru_cache(maxsize=64)
def _tree_streams(p: int) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The double binary tree's message streams on ``p`` ranks, as arrays.

    A stream is the ``S`` segments one ordered pair of ranks carries in one tree, in
    rounds ``offset .. offset + S - 1`` (:func:`_tree_edges`): up from a child at depth
    ``d``, child number ``c``, offset ``c - 2d`` (reduced at the parent); down to it,
    offset ``d - 1`` (copied).  Returns the streams as ``(offset, src, dst, reduced)``
    arrays, and the ordered pairs both trees use as
    ``(first offset, last offset, reduced by either, src, dst)`` arrays.
    """
    child, parent, depth, reduce = (c.tolist() for c in _tree_edges(p)[:4])
    streams: dict[tuple[int, int], list[tuple[int, bool]]] = {}
    for x, y, d, up in zip(child, parent, depth, reduce):
        streams.setdefault((x, y), []).append((up, True))
        streams.setdefault((y, x), []).append((d - 1, False))
    single = [(o, src, dst, red) for (src, dst), s in streams.items() for o, red in s]
    shared = [(min(o for o, _ in s), max(o for o, _ in s), any(r for _, r in s), src, dst)
              for (src, dst), s in streams.items() if len(s) == 2]

    def columns(rows: list[tuple], width: int) -> tuple[np.ndarray, ...]:
        return tuple(np.array(c, dtype=np.int64) for c in zip(*rows)) if rows \
            else tuple(np.zeros(0, dtype=np.int64) for _ in range(width))

    return columns(single, 4), columns(shared, 5)


def _tree_rounds(p: int, segments: int, s: int, g: float, hops: Any,
                 piece: int | None = None) -> float:
    """Sum over the rounds of the double binary tree of each round's slowest message.

    ``s`` bytes per segment; ``hops`` gives every pair's latency and seconds per byte
    with the messages of the round in flight (``hops.during``).
    """
    (offset, src, dst, red), (lo, hi, both_red, shared_src, shared_dst) = _tree_streams(p)
    last = segments - 1
    first, final = np.concatenate([offset, hi]), np.concatenate([offset, lo]) + last
    pair_src, pair_dst = np.concatenate([src, shared_src]), np.concatenate([dst, shared_dst])
    size = np.concatenate([np.full(len(src), s), np.full(len(shared_src), 2 * s)])
    reduced = np.concatenate([red, both_red]) * (_pieced(s, piece) * g)
    live = first <= final
    edges = np.unique(np.concatenate([first[live], final[live] + 1]))
    total = 0.0
    for start, stop in zip(edges[:-1].tolist(), edges[1:].tolist()):
        active = live & (first <= start) & (final >= stop - 1)
        if active.any():
            x, y = pair_src[active], pair_dst[active]
            lat, spb = hops.during(x, y).pairs(x, y, size[active])
            total += (stop - start) * float((lat + size[active] * spb + reduced[active]).max())
    return total


@functools.lru_cache(maxsize=64)
def _tree_edges(p: int, size: int | None = None) -> tuple[np.ndarray, ...]:
    """The edges of both trees on ``p`` ranks (over nodes of ``size`` ranks when not
    None), tree 0's first, as arrays over the edges.

    Returns the child, its parent, the child's depth, the rounds in which the child
    sends segment 0 up when the trees reduce and when they gather
    (:func:`collectives.algorithms.tree.tree_layout`), and the child's subtree as two
    inclusive rank runs ``[lo0, hi0]``, ``[lo1, hi1]`` (the second empty, ``lo1 > hi1``,
    unless tree 1 wraps around).
    """
    from collectives.algorithms.tree import subtree_ranks, tree_layout

    rows = []
    for tree in (0, 1):
        nodes, reduce = tree_layout(tree, p, size, True)
        gather = tree_layout(tree, p, size, False)[1]
        for rank, node in enumerate(nodes):
            if node.parent >= 0:
                runs = [*subtree_ranks(tree, p, rank, size), (1, 0)][:2]
                rows.append((rank, node.parent, node.depth, reduce[rank], gather[rank],
                             *runs[0], *runs[1]))
    return tuple(np.array(column, dtype=np.int64) for column in zip(*rows))


@functools.lru_cache(maxsize=16)
def _tree_messages(collective: str, p: int, count: int, segments: int,
                   size: int | None = None) -> tuple[tuple[np.ndarray, ...], ...]:
    """The tree's messages, round by round: ``(src, dst, elements, reduced)`` arrays.

    The child at depth ``d`` sends segment ``k`` up in round ``k`` after its round of
    segment 0 (:func:`collectives.algorithms.tree.tree_layout`; trees over nodes of
    ``size`` ranks when not None), reduced there by AllReduce and ReduceScatter, and
    receives it back in round ``k + d - 1``.  AllGather sends up only the part of the
    segment inside the child's subtree and down the rest.  Empty messages are not
    sent; an ordered pair that carries both trees' segments in one round appears once,
    with their sum (``reduced``: the larger reduced part, the two reduced side by side).
    """
    child, parent, depth, reduce, gather, lo0, hi0, lo1, hi1 = _tree_edges(p, size)
    tree = np.repeat([0, 1], len(child) // 2)
    half = count - count // 2  # collectives.layout.split(0, count, 2, 0)
    seg_lo = np.empty((2, segments), dtype=np.int64)
    seg_hi = np.empty((2, segments), dtype=np.int64)
    for t, (first, last) in enumerate(((0, half), (half, count))):
        nseg = max(1, min(segments, last - first))
        edges = first + _starts(last - first, nseg)
        seg_lo[t, :nseg], seg_hi[t, :nseg] = edges[:-1], edges[1:]
        seg_lo[t, nseg:] = seg_hi[t, nseg:] = last
    slo, shi = seg_lo[tree], seg_hi[tree]  # edge x segment
    whole = shi - slo
    if collective == "allgather":
        starts = _starts(count, p)
        inside = sum(np.maximum(0, np.minimum(shi, starts[hi + 1][:, None])
                                - np.maximum(slo, starts[lo][:, None]))
                     for lo, hi in ((lo0, hi0), (lo1, hi1)))
        up, down, climb, reduced = inside, whole - inside, gather, 0 * whole
    else:
        up, down, climb, reduced = whole, whole, reduce, whole
    k = np.arange(segments)
    rounds = np.concatenate([(k + climb[:, None]).ravel(), (k + depth[:, None] - 1).ravel()])
    src = np.concatenate([np.repeat(child, segments), np.repeat(parent, segments)])
    dst = np.concatenate([np.repeat(parent, segments), np.repeat(child, segments)])
    elements = np.concatenate([up.ravel(), down.ravel()])
    reduced = np.concatenate([reduced.ravel(), 0 * reduced.ravel()])
    sent = elements > 0
    rounds, src, dst = rounds[sent], src[sent], dst[sent]
    key, index = np.unique((rounds - rounds.min()) * p * p + src * p + dst, return_inverse=True)
    elements = np.bincount(index, weights=elements[sent])
    largest = np.zeros(len(key))
    np.maximum.at(largest, index, reduced[sent])
    rounds, pair = np.divmod(key, p * p)
    src, dst = np.divmod(pair, p)
    cuts = np.flatnonzero(np.diff(rounds)) + 1
    return tuple(zip(*(np.split(column, cuts) for column in (src, dst, elements, largest))))


def _tree_walk(collective: str, p: int, count: int, ds: int, g: float, hops: Any,
               segments: int, piece: int | None = None, size: int | None = None) -> float:
    """Critical path of the tree's rounds (:func:`_tree_messages`): a max-plus walk.

    ``T[x]`` is when rank ``x``'s latest step ended (0 at the start).  A message of
    round ``r`` from ``x`` to ``y`` starts when both have posted the round's step,
    ``max(T[x], T[y])``, and arrives ``a + m b`` later, ``m`` the bytes the ordered pair
    carries in that round; the receiver then reduces the reduced part (``g`` a byte, at
    most ``piece`` bytes in one reduction).  Each rank's step of round ``r`` ends with
    its last message::

        T[x] <- max(T[x], max_{y ~r x} (max(T[x], T[y]) + a + m_r(x, y) b [+ g ...]))

    and the time is ``max_x T[x]``.  Exact on a contention-free network for any ``p``
    and count: every message of a step starts when both ends have posted it, a rank's
    steps run one after another, and the only link two messages share is an ordered
    pair used by both trees in the same round (both ends then post the two in one
    step, so they start together and fair sharing ends the larger at
    ``a + (m_0 + m_1) b``).  The rounds depend only on ``p``, the count, ``S`` and
    the trees and are cached; the walk is one vectorised update per round.  The form
    is a recurrence rather than a sum of per-round maxima because a rank with nothing
    to do in a round skips it, so a round's slowest message need not lie on the
    critical path (in trees over nodes, a chain inside a node runs ahead of the
    slower links between nodes).
    """
    ready = np.zeros(p)
    for src, dst, elements, reduced in _tree_messages(collective, p, count, segments, size):
        lat, spb = hops.during(src, dst).pairs(src, dst, elements * ds)
        arrive = np.maximum(ready[src], ready[dst]) + (lat + elements * (ds * spb))
        np.maximum.at(ready, src, arrive)
        np.maximum.at(ready, dst, arrive + _pieced(reduced * ds, piece) * g)
    return float(ready.max())


def _tree(collective: str, p: int, count: int, ds: int, a: float, b: float, g: float,
          segments: int, hops: Any = None, piece: int | None = None,
          ranks_per_node: int | None = None) -> float:
    """Double binary tree, each tree carrying half the vector in ``S`` segments.

    ``D`` is the depth of both trees (``ceil(lg p)``; over nodes of ``m =
    ranks_per_node`` ranks ``m - 1 + ceil(lg (p/m))``), ``s`` the largest segment of a
    half in bytes (``n / (2S)``).  AllReduce and ReduceScatter run the same schedule
    (:mod:`collectives.algorithms.tree`): a child sends segment ``k`` up ``k`` rounds
    after its round of segment 0 (over all ranks ``k - 2d + c`` at depth ``d``, child
    number ``c``), where its parent reduces it, and receives it back in round
    ``k + d - 1``.  Every message has ``s`` bytes, except where NCCL's two trees share
    an ordered pair of ranks in one round (a leaf of one tree and its parent swap roles
    in the other; a chain inside a node is in both trees): the pair then carries a
    segment of each tree at half the bandwidth each.  On a uniform network with every
    round busy and no shared rounds the time is the textbook
    ``(3D + S - 1)(a + s b) + (2D + S - 1) s g`` (over all ranks).

    AllGather moves only the part of a segment inside (up) or outside (down) a subtree,
    so its messages differ in size from edge to edge and round to round, in at most
    ``2D + S - 1`` rounds (at most ``(2D + S - 1)(a + 2 s b)``).

    Over all ranks, AllReduce and ReduceScatter cost the sum over the rounds of each
    round's slowest message (:func:`_tree_rounds`): every message of a round is posted
    in the same round by both ends, so on a contention-free network where every round
    crosses equally slow links the rounds run in lock step.  Trees over nodes and
    AllGather cost the critical path of their rounds, the max-plus walk of
    :func:`_tree_walk`: a rank with nothing to do in a round skips it, so a chain inside
    a node runs ahead of the slower links between nodes, and an AllGather's round's
    largest message need not lie on the critical path.  Both are exact (1e-9 relative
    against :func:`simulator.simulate` on :func:`topology.flat`) for AllGather at every
    count and for AllReduce and ReduceScatter when the segments divide evenly, e.g.
    ``n`` a multiple of ``2 p S ds``; otherwise the sum charges every segment as the
    largest and the walk charges two unequal segments on a shared pair as ending
    together (about 1e-4 relative).
    """
    half = max(count - count // 2, 0)
    if p == 1 or half == 0:
        return 0.0
    hops = UniformHops(a, b) if hops is None else hops
    if collective == "allgather" or ranks_per_node:
        return _tree_walk(collective, p, count, ds, g, hops, segments, piece, ranks_per_node)
    return _tree_rounds(p, segments, _ceil_div(half, segments) * ds, g, hops, piece)


_FORMS: dict[str, Form] = {"ring": _ring, "tree": _tree, "rhd": _rhd, "pipeline": _pipeline}


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
        cost on a uniform model.  ``channels=C`` is accepted: channels over one order
        share every link, so on this model their time is one channel's over the whole
        vector with the segments a channel of ``count / C`` elements resolves (exact when
        the channels split evenly).  The tree takes ``ranks_per_node`` (trees over nodes
        of consecutive ranks, each node a chain).

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError
        For an unknown collective or algorithm, or a value out of range.
    TypeError
        For a parameter the algorithm does not take.

    Examples
    --------
    >>> round(cost("allreduce", "ring", 4, 4096, alpha=1e-6, beta=1e-9, gamma=0.0), 12)
    1.2144e-05
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    if algorithm not in _FORMS:
        raise ValueError(f"algorithm {brief(algorithm)} is not supported; choose one of "
                         f"{[a for a in ALGORITHMS if a in _FORMS]}")
    check_int(nranks, "nranks", 1)
    check_int(nbytes, "nbytes", 0)
    check_int(dtype_size, "dtype_size", 1)
    if nbytes % dtype_size:
        raise ValueError(f"nbytes={nbytes} is not allowed; it must be a multiple of "
                         f"dtype_size={dtype_size}")
    a, b, g = (check_number(v, k) for k, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)))
    module = importlib.import_module(f"collectives.algorithms.{algorithm}")
    params.pop("order", None)
    channels = params.pop("channels", 1)
    check_int(channels, "channels", 1)
    unknown = sorted(set(params) - set(module.PARAMS))
    if unknown:
        raise TypeError(f"parameter {unknown[0]!r} is not taken by algorithm {brief(algorithm)}; "
                        f"it takes {sorted(module.PARAMS)}")
    count = nbytes // dtype_size
    resolved = module.resolve_params(collective, nranks, -(-count // channels), **params)
    return _FORMS[algorithm](collective, nranks, count, dtype_size, a, b, g, **resolved)
