"""A schedule and its machine as flat arrays: what the compiled engine reads.

:func:`flatten` reads every rank's operations once and keeps what a simulation needs: per
step, its message ends (sends and receives, in the step's order; local copies are free
and dropped); per message, its two ends matched as :mod:`collectives.progress` matches
them (the k-th send from ``a`` to ``b`` with the k-th receive at ``b`` from ``a``,
in compiled loops), its bytes, whether it reduces, and its route through the topology.
A schedule with lanes (:attr:`collectives.Schedule.lanes`) is read from its lanes, merged
into steps in a compiled loop, so the millions of operation objects of a large schedule
are never built; any other schedule is read from its steps.  Both readings give the same
arrays.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from topology.model import Topology

from collectives.rounds import Window
from collectives.schedule import Recv, Schedule, Send, new_recv, new_send

from .gpu import route_shares

__all__ = ["FlatSchedule", "flatten"]


@dataclass(frozen=True)
class FlatSchedule:
    """Every rank's steps and every message, as arrays.

    Attributes
    ----------
    rank_ptr : ndarray of int64, shape (nranks + 1,)
        Rank ``r``'s steps are ``steps[rank_ptr[r]:rank_ptr[r + 1]]``.
    steps : ndarray of int32 (int64 beyond 32767 ranks)
        Every rank's steps, one after another, each as the count of its message ends
        then each end's code: ``2 * route`` for a send, ``2 * route + 1`` for a receive
        (a step without a message end waits for nothing and is left out).  A rank's
        post reads one stretch of memory; the k-th send of a route is its message
        ``message_ptr[route] + k``, and so is its k-th receive.
    message : ndarray of int64, shape (messages,)
        Per message, ``2 * bytes + reduce`` (whether the receive reduces), the messages
        of a route together (in order): what the messages in flight of one route read
        next lies beside what they read last.
    message_ptr : ndarray of int64, shape (routes + 1,)
        Route ``i``'s messages are ``message_ptr[i]:message_ptr[i + 1]``.
    route_ranks : ndarray of int64, shape (routes, 2)
        Each route's sending and receiving rank (a route per ordered pair of ranks that
        exchange messages).
    route_ptr : ndarray of int64, shape (routes + 1,)
        Route ``i``'s links are ``route_links[route_ptr[i]:route_ptr[i + 1]]``.
    route_links : ndarray of int64
        Link indices, in order along each route.
    route_latency, route_cap, route_shares : ndarray of float64
        Each route's latency (the sum of its links'), bottleneck bandwidth and shares
        (:func:`simulator.gpu.route_shares`).
    bandwidth : ndarray of float64
        Each link's bandwidth in bytes per second.
    """

    rank_ptr: np.ndarray
    steps: np.ndarray
    message: np.ndarray
    message_ptr: np.ndarray
    route_ranks: np.ndarray
    route_ptr: np.ndarray
    route_links: np.ndarray
    route_latency: np.ndarray
    route_cap: np.ndarray
    route_shares: np.ndarray
    bandwidth: np.ndarray


_DTYPES = {"b": np.int8, "i": np.int32, "q": np.int64}  # by array typecode
_INT32 = np.iinfo(np.int32)


def _steps_dtype(p: int) -> type:
    """The integer type of the steps' counts and codes (:attr:`FlatSchedule.steps`) on
    ``p`` ranks: int32 while a code of every ordered pair (``2 * p * p - 1`` at most)
    fits, else int64."""
    return np.int32 if 2 * p * p <= _INT32.max else np.int64


def _ends(schedule: Schedule) -> tuple[np.ndarray, ...]:
    """Steps' entries per rank, the steps (:attr:`FlatSchedule.steps`, with each end's
    peer, ``2 * peer + side``, where the route goes), and each end's kind and length.

    Kinds: 0 send, 1 receive, 2 receive that reduces, as int8; lengths as int32 where
    they fit (:func:`_narrowed`; less memory to hold and touch).  Collected in
    :mod:`array` buffers, which NumPy then reads without copying.
    """
    entries_per_rank = array("q")
    steps = array("i" if _steps_dtype(schedule.nranks) is np.int32 else "q")
    kinds, lengths = array("b"), array("q")
    entry, kind, length = steps.append, kinds.append, lengths.append
    for rank in range(schedule.nranks):
        first = len(steps)
        for step in schedule.steps(rank):
            head = len(steps)
            entry(0)
            for op in step.ops:
                if type(op) is Send:
                    entry(2 * op.peer)
                    kind(0)
                elif type(op) is Recv:
                    entry(2 * op.peer + 1)
                    kind(2 if op.reduce else 1)
                else:
                    continue
                length(op.stop - op.start)
            if len(steps) - head > 1:
                steps[head] = len(steps) - head - 1
            else:  # no message end: nothing to wait for
                steps.pop()
        entries_per_rank.append(len(steps) - first)
    *columns, lengths_read = (np.frombuffer(buffer, dtype=_DTYPES[buffer.typecode])
                              for buffer in (entries_per_rank, steps, kinds, lengths))
    return (*columns, _narrowed(lengths_read))


_GAP = np.iinfo(np.int64).min  # a round without an operation, in a pool of lengths


#: the pairs of sequences :class:`_Pool` recalls (kept alive so that their ids stay
#: theirs): a schedule's ranks share a few cached ones, or none
_RECALLED = 256


class _Pool:
    """The entry lengths (``stop - start``, :data:`_GAP` for a gap) of many lanes in one
    growing array; a pair of sequences met again (every rank of a schedule may read the
    same cached segment tuples) is stored once, while among the last :data:`_RECALLED`
    pairs met (pairs new for every rank, kept, would hold hundreds of MB)."""

    def __init__(self) -> None:
        self.buffer = np.empty(1 << 16, dtype=np.int64)
        self.size = 0
        self.seen: dict[tuple[int, int], tuple[Any, Any, int]] = {}  # ids -> (kept alive, offset)

    def offset(self, starts: Any, stops: Any, n: int) -> int:
        """Return where the first ``n`` lengths of ``starts`` and ``stops`` lie in the pool;
        for windows at one place of two bases (ring's), where the bases' lengths lie, stored
        once for all their windows, from that place on."""
        if starts.__class__ is Window is stops.__class__ and starts.start == stops.start:
            return self.offset(starts.base, stops.base,
                               min(len(starts.base), len(stops.base))) + starts.start
        key = (id(starts), id(stops))
        known = self.seen.get(key)
        if known is not None:
            return known[2]
        offset, self.size = self.size, self.size + n
        if self.size > len(self.buffer):
            grown = np.empty(max(2 * len(self.buffer), self.size), dtype=np.int64)
            grown[:offset] = self.buffer[:offset]
            self.buffer = grown
        out = self.buffer[offset:self.size]
        try:
            np.subtract(np.fromiter(stops, dtype=np.int64, count=n),
                        np.fromiter(starts, dtype=np.int64, count=n), out=out)
        except TypeError:  # a None: a gap where the start is one (a stop alone counts as -1)
            out[:] = [_GAP if a is None else (-1 if b is None else b) - a
                      for a, b in zip(starts, stops)]
        if len(self.seen) >= _RECALLED:
            self.seen.clear()
        self.seen[key] = (starts, stops, offset)
        return offset

    def array(self) -> np.ndarray:
        return self.buffer[:self.size]


def _lane_kind(lane: Any) -> int:
    """0 send, 1 receive, 2 receive that reduces, -1 a local copy (free, dropped)."""
    make = lane.make
    if make is new_send or make is Send:
        return 0
    if make is new_recv or make is Recv:
        return 2 if lane.flags and lane.flags[0] else 1
    return -1


def _lane_ends(schedule: Schedule) -> tuple[np.ndarray, ...]:
    """What :func:`_ends` returns, read from the schedule's lanes: the operations are
    never built (:func:`collectives.rounds.merge_lanes` is replayed in :func:`_merge`)."""
    lanes_of = schedule.lanes
    assert lanes_of is not None, "only a schedule with lanes is read as lanes"
    pool = _Pool()
    lanes_per_rank = array("q")
    table = array("q")  # per lane: first round, kind, peer, lengths' offset, length
    for rank in range(schedule.nranks):
        lanes = lanes_of(rank)
        lanes_per_rank.append(len(lanes))
        for lane in lanes:
            starts, stops = lane.starts, lane.stops
            n = min(len(starts), len(stops))
            table.extend((lane.first_round, _lane_kind(lane), lane.peer,
                          pool.offset(starts, stops, n), n))
    rows = np.frombuffer(table, dtype=np.int64).reshape(-1, 5)
    dtype = _steps_dtype(schedule.nranks)
    peers = rows[rows[:, 1] >= 0, 2]
    if len(peers) and not np.iinfo(dtype).min <= 2 * peers.min() <= 2 * peers.max() < \
            np.iinfo(dtype).max:
        raise OverflowError("a peer beyond the steps' integers")  # as array raises in _ends
    lengths = pool.array()
    real = lengths[lengths != _GAP]
    fits = not len(real) or _INT32.min <= real.min() <= real.max() <= _INT32.max
    *columns, merged = _merge(_offsets(np.frombuffer(lanes_per_rank, dtype=np.int64)), rows,
                              lengths, _GAP, np.empty(0, dtype=dtype),
                              np.empty(0, dtype=np.int32 if fits else np.int64))
    return (*columns, _narrowed(merged))


@njit(cache=True)
def _merge(lane_ptr, table, pool, gap, steps_like, lengths_like):
    """Every rank's lanes merged round by round, as :func:`collectives.rounds.merge_lanes`
    merges them: a step per round with a message end (:func:`_ends`), its ends in lane
    order, in the type of ``steps_like``; the lengths in the type of ``lengths_like``
    (int32 where every length of ``pool`` fits)."""
    nranks = len(lane_ptr) - 1
    most = 0
    for i in range(len(table)):
        most += table[i, 4]
    entries_per_rank = np.zeros(nranks, dtype=np.int64)
    # a count and an end per entry at most: pages never written are never taken
    steps = np.empty(2 * most, dtype=steps_like.dtype)
    kinds = np.empty(most, dtype=np.int8)
    lengths = np.empty(most, dtype=lengths_like.dtype)
    nentries = nends = 0
    for r in range(nranks):
        lo, hi = lane_ptr[r], lane_ptr[r + 1]
        base, top = 0, 0
        for i in range(lo, hi):
            if table[i, 4]:
                first, stop = table[i, 0], table[i, 0] + table[i, 4]
                if top == base:
                    base, top = first, stop
                else:
                    base, top = min(base, first), max(top, stop)
        first_entry = nentries
        for now in range(base, top):
            head = nentries
            nentries += 1
            for i in range(lo, hi):
                k = now - table[i, 0]
                if 0 <= k < table[i, 4] and table[i, 1] >= 0 and pool[table[i, 3] + k] != gap:
                    steps[nentries] = 2 * table[i, 2] + (table[i, 1] != 0)
                    kinds[nends] = table[i, 1]
                    lengths[nends] = pool[table[i, 3] + k]
                    nends += 1
                    nentries += 1
            if nentries - head > 1:
                steps[head] = nentries - head - 1
            else:  # no message end: nothing to wait for
                nentries = head
        entries_per_rank[r] = nentries - first_entry
    return entries_per_rank, steps[:nentries], kinds[:nends], lengths[:nends]


def _narrowed(lengths: np.ndarray) -> np.ndarray:
    """``lengths`` as int32 when every one fits (half the memory to hold while messages
    are numbered), else as they are."""
    if lengths.dtype == np.int32 or (
            len(lengths) and not _INT32.min <= lengths.min() <= lengths.max() <= _INT32.max):
        return lengths
    return lengths.astype(np.int32)


def _offsets(counts: Any) -> np.ndarray:
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


#: up to this many ordered pairs of ranks, pairs are numbered through an array indexed by
#: pair (4 bytes each: 64 MiB at 4096 ranks, less than a twentieth of what their ring's
#: ends take); beyond, by sorting the ends' pairs (:func:`_sparse_pair_ids`)
_DENSE_PAIRS = 1 << 25


@njit(cache=True)
def _dense_pair_ids(p, rank_ptr, steps, dense):
    """Number the ordered pairs that exchange messages as they are met, through ``dense``
    (-1 per ordered pair), each end's peer in ``steps`` (:func:`_ends`) written over with
    its pair (``2 * pair + side``); return the pairs (``src * p + dst``), or None when a
    peer is not one of the ``p`` ranks."""
    keys = np.empty(max(16, 4 * p), dtype=np.int64)
    n = 0
    for r in range(p):
        i = rank_ptr[r]
        while i < rank_ptr[r + 1]:
            for e in range(i + 1, i + 1 + steps[i]):
                peer, side = steps[e] >> 1, steps[e] & 1
                if not 0 <= peer < p:
                    return None
                key = peer * p + r if side else r * p + peer
                pair = np.int64(dense[key])
                if pair < 0:
                    pair = n
                    dense[key] = n
                    if n == len(keys):
                        grown = np.empty(2 * n, dtype=np.int64)
                        for j in range(n):  # a loop: a slice assignment compiles for seconds
                            grown[j] = keys[j]
                        keys = grown
                    keys[n] = key
                    n += 1
                steps[e] = 2 * pair + side
            i += 1 + steps[i]
    return keys[:n].copy()


@njit(cache=True)
def _end_keys(p, rank_ptr, steps):
    """Each end's ordered pair, ``src * p + dst``, in order; None when a peer is not one
    of the ``p`` ranks."""
    keys = np.empty(len(steps), dtype=np.int64)
    n = 0
    for r in range(p):
        i = rank_ptr[r]
        while i < rank_ptr[r + 1]:
            for e in range(i + 1, i + 1 + steps[i]):
                peer, side = steps[e] >> 1, steps[e] & 1
                if not 0 <= peer < p:
                    return None
                keys[n] = peer * p + r if side else r * p + peer
                n += 1
            i += 1 + steps[i]
    return keys[:n]


@njit(cache=True)
def _write_pairs(steps, end_pair):
    """Each end's peer in ``steps`` written over with its pair, ``end_pair`` in order."""
    i = e = 0
    while i < len(steps):
        for j in range(i + 1, i + 1 + steps[i]):
            steps[j] = 2 * end_pair[e] + (steps[j] & 1)
            e += 1
        i += 1 + steps[i]


def _sparse_pair_ids(p: int, rank_ptr: np.ndarray, steps: np.ndarray) -> np.ndarray | None:
    """What :func:`_dense_pair_ids` does, by sorting the ends' pairs (too many ranks for
    an array per ordered pair): pairs numbered in the order first met."""
    keys = _end_keys(p, rank_ptr, steps)
    if keys is None:
        return None
    found, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    del keys
    order = np.argsort(first, kind="stable")
    number = np.empty(len(order), dtype=np.int64)
    number[order] = np.arange(len(order), dtype=np.int64)
    _write_pairs(steps, number[inverse.ravel()])
    return found[order]


@njit(cache=True)
def _pair_messages(steps, kind, length, npairs, dtype_size):
    """Match the ends pair by pair: the k-th send of a pair with its k-th receive
    (program order), the pair's k-th message being message ``base[pair] + k``.  Return
    ``base`` and the messages (:attr:`FlatSchedule.message`), or None when some send or
    receive has no partner of its length."""
    counts = np.zeros((npairs, 2), dtype=np.int64)
    i = 0
    while i < len(steps):
        for j in range(i + 1, i + 1 + steps[i]):
            counts[steps[j] >> 1, steps[j] & 1] += 1
        i += 1 + steps[i]
    base = np.zeros(npairs + 1, dtype=np.int64)
    for pair in range(npairs):  # loops rather than NumPy's functions: they compile for seconds
        if counts[pair, 0] != counts[pair, 1]:
            return None
        base[pair + 1] = base[pair] + counts[pair, 0]
        counts[pair, 0] = counts[pair, 1] = base[pair]  # the cursors of the pair's sides
    message = np.empty(base[npairs], dtype=np.int64)
    for side in range(2):  # every send written before any receive is read against it
        i = e = 0
        while i < len(steps):
            for j in range(i + 1, i + 1 + steps[i]):
                pair = steps[j] >> 1
                if steps[j] & 1 == side:
                    t = counts[pair, side]
                    counts[pair, side] += 1
                    nbytes = np.int64(length[e]) * dtype_size
                    if side == 0:
                        message[t] = 2 * nbytes
                    elif message[t] >> 1 != nbytes:
                        return None
                    elif kind[e] == 2:
                        message[t] += 1
                e += 1
            i += 1 + steps[i]
    return base, message


def flatten(schedule: Schedule, topology: Topology, dtype_size: int, *,
            dense_pairs: int = _DENSE_PAIRS) -> FlatSchedule | None:
    """Return ``schedule`` on ``topology`` as arrays, or None when its messages do not
    match (a send without its receive, two ends of different lengths, a peer that is not
    one of its ranks): the event engine then diagnoses it.

    Parameters
    ----------
    schedule : Schedule
        The schedule to simulate.
    topology : topology.Topology
        The machine (``route``, ``alpha`` and ``bandwidths_Bps`` are read).
    dtype_size : int
        Bytes per element.
    dense_pairs : int, optional
        The most ordered pairs (``p * p``) numbered through an array of one int32 each;
        beyond, the ends' pairs are sorted (default :data:`_DENSE_PAIRS`;
        :func:`simulator.jit.prepare` passes 0 so that both ways are compiled).

    Returns
    -------
    FlatSchedule or None
    """
    p = schedule.nranks
    read = _ends if schedule.lanes is None else _lane_ends
    try:
        entries_per_rank, steps, kind, length = read(schedule)
    except OverflowError:  # a peer beyond the steps' integers is not one of its ranks
        return None
    rank_ptr = _offsets(entries_per_rank)
    del entries_per_rank
    pairs = _dense_pair_ids(p, rank_ptr, steps, np.full(p * p, -1, dtype=np.int32)) \
        if p * p <= dense_pairs else _sparse_pair_ids(p, rank_ptr, steps)
    if pairs is None:
        return None
    matched = _pair_messages(steps, kind, length, len(pairs), dtype_size)
    if matched is None:
        return None
    del kind, length  # before the routes: an end's kind and length are more than the rows
    message_ptr, message = matched
    links, latency, cap, shares = [], [], [], []
    bandwidth = topology.bandwidths_Bps
    for key in pairs.tolist():  # one route per ordered pair that exchanges messages
        a, b = divmod(key, p)
        hops = topology.route(a, b)
        links.append(hops)
        latency.append(float(topology.alpha(a, b)))
        cap.append(min((bandwidth[link] for link in hops), default=float("inf")))
        shares.append(route_shares(topology, hops))
    return FlatSchedule(
        rank_ptr=rank_ptr, steps=steps, message=message, message_ptr=message_ptr,
        route_ranks=np.stack((pairs // p, pairs % p), axis=1),
        route_ptr=_offsets([len(hops) for hops in links]),
        route_links=np.array([link for hops in links for link in hops], dtype=np.int64),
        route_latency=np.array(latency, dtype=np.float64),
        route_cap=np.array(cap, dtype=np.float64),
        route_shares=np.array(shares, dtype=np.float64),
        bandwidth=np.array(bandwidth, dtype=np.float64))
