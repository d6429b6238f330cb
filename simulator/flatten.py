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
    step_ptr : ndarray of int64, shape (nranks + 1,)
        Rank ``r``'s steps are the global steps ``step_ptr[r]:step_ptr[r + 1]``.
    ends : ndarray of int32 (int64 beyond int32's range), shape (steps + 1 + ends,)
        First the offsets of the steps' message ends (step ``g``'s are
        ``ends[steps + 1 + ends[g]:steps + 1 + ends[g + 1]]``), then each end's code:
        ``2 * message`` for the send, ``2 * message + 1`` for the receive.  Int32 halves
        the largest array (a 4096-rank ring has 67 million ends).
    message : ndarray of int64, shape (messages, 2)
        Per message, ``2 * route + reduce`` (its route, an index into the route arrays,
        and whether the receive reduces), then its bytes: the rows the compiled engine
        reads, one cache line per message.
    route_ranks : ndarray of int64, shape (routes, 2)
        Each route's sending and receiving rank.
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

    step_ptr: np.ndarray
    ends: np.ndarray
    message: np.ndarray
    route_ranks: np.ndarray
    route_ptr: np.ndarray
    route_links: np.ndarray
    route_latency: np.ndarray
    route_cap: np.ndarray
    route_shares: np.ndarray
    bandwidth: np.ndarray


_DTYPES = {"b": np.int8, "i": np.int32, "q": np.int64}  # by array typecode
_INT32 = np.iinfo(np.int32)


def _ends(schedule: Schedule) -> tuple[np.ndarray, ...]:
    """Steps per rank, ends per step, and each end's kind, peer and length, in order.

    Kinds: 0 send, 1 receive, 2 receive that reduces; ends per step and peers as int32,
    lengths as int32 where they fit (:func:`_narrowed`; less memory to hold and touch).
    Collected in :mod:`array` buffers, which NumPy then reads without copying.
    """
    steps_per_rank, ends_per_step = array("q"), array("i")
    kinds, peers, lengths = array("b"), array("i"), array("q")
    count_step, kind, peer, length = ends_per_step.append, kinds.append, peers.append, lengths.append
    for rank in range(schedule.nranks):
        steps = schedule.steps(rank)
        steps_per_rank.append(len(steps))
        for step in steps:
            n = 0
            for op in step.ops:
                if type(op) is Send:
                    kind(0)
                elif type(op) is Recv:
                    kind(2 if op.reduce else 1)
                else:
                    continue
                peer(op.peer)
                length(op.stop - op.start)
                n += 1
            count_step(n)
    *columns, lengths_read = (np.frombuffer(buffer, dtype=_DTYPES[buffer.typecode])
                              for buffer in (steps_per_rank, ends_per_step, kinds, peers, lengths))
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
    if len(rows) and not _INT32.min <= rows[:, 2].min() <= rows[:, 2].max() <= _INT32.max:
        raise OverflowError("a peer beyond int32")  # as array("i") raises in _ends
    lengths = pool.array()
    real = lengths[lengths != _GAP]
    fits = not len(real) or _INT32.min <= real.min() <= real.max() <= _INT32.max
    *columns, merged = _merge(_offsets(np.frombuffer(lanes_per_rank, dtype=np.int64)), rows,
                              lengths, _GAP, np.empty(0, dtype=np.int32 if fits else np.int64))
    return (*columns, _narrowed(merged))


@njit(cache=True)
def _merge(lane_ptr, table, pool, gap, like):
    """Every rank's lanes merged round by round, as :func:`collectives.rounds.merge_lanes`
    merges them: a step per round with an operation, its operations in lane order; the
    lengths in the type of ``like`` (int32 where every length of ``pool`` fits)."""
    nranks = len(lane_ptr) - 1
    most = 0
    for i in range(len(table)):
        most += table[i, 4]
    steps_per_rank = np.zeros(nranks, dtype=np.int64)
    ends_per_step = np.empty(most, dtype=np.int32)
    kinds = np.empty(most, dtype=np.int8)
    peers = np.empty(most, dtype=np.int32)
    lengths = np.empty(most, dtype=like.dtype)
    nsteps = nends = 0
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
        for now in range(base, top):
            n, step = 0, False
            for i in range(lo, hi):
                k = now - table[i, 0]
                if 0 <= k < table[i, 4] and pool[table[i, 3] + k] != gap:
                    step = True
                    if table[i, 1] >= 0:
                        kinds[nends] = table[i, 1]
                        peers[nends] = table[i, 2]
                        lengths[nends] = pool[table[i, 3] + k]
                        nends += 1
                        n += 1
            if step:
                ends_per_step[nsteps] = n
                nsteps += 1
                steps_per_rank[r] += 1
    return (steps_per_rank, ends_per_step[:nsteps], kinds[:nends], peers[:nends],
            lengths[:nends])


def _index_dtype(kind: np.ndarray) -> type:
    """The integer type of the ends' offsets and codes (:attr:`FlatSchedule.ends`): int32
    when every code (below ``2 * len(kind) + 2``, ``kind`` holding one item per end) fits,
    else int64."""
    return np.int32 if 2 * len(kind) + 1 <= _INT32.max else np.int64


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


def _end_keys(p: int, step_ptr: np.ndarray, end_ptr: np.ndarray, kind: np.ndarray,
              peer: np.ndarray) -> np.ndarray:
    """Each end's ordered pair, ``src * p + dst``."""
    per_rank = end_ptr[step_ptr[1:]] - end_ptr[step_ptr[:-1]]
    rank = np.repeat(np.arange(p, dtype=np.int64), per_rank)
    return np.where(kind == 0, rank * p + peer, peer.astype(np.int64) * p + rank)


@njit(cache=True)
def _dense_pair_ids(p, step_ptr, end_ptr, kind, peer, dense):
    """Number the ordered pairs that exchange messages as they are met, through ``dense``
    (-1 per ordered pair); write each end's pair over its peer (``peer`` becomes what
    :func:`_sparse_pair_ids` returns first: no second array of an int32 per end) and
    return the pairs (``src * p + dst``)."""
    keys = np.empty(max(16, 4 * p), dtype=np.int64)
    n = 0
    for r in range(p):
        for e in range(end_ptr[step_ptr[r]], end_ptr[step_ptr[r + 1]]):
            key = r * p + peer[e] if kind[e] == 0 else peer[e] * p + r
            i = np.int64(dense[key])
            if i < 0:
                i = n
                dense[key] = n
                if n == len(keys):
                    grown = np.empty(2 * n, dtype=np.int64)
                    for j in range(n):  # a loop: a slice assignment compiles for seconds
                        grown[j] = keys[j]
                    keys = grown
                keys[n] = key
                n += 1
            peer[e] = i
    return keys[:n].copy()


def _sparse_pair_ids(p: int, step_ptr: np.ndarray, end_ptr: np.ndarray, kind: np.ndarray,
                     peer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`_dense_pair_ids` returns, by sorting the ends' pairs (too many ranks
    for an array per ordered pair): pairs numbered in the order first met."""
    found, first, inverse = np.unique(_end_keys(p, step_ptr, end_ptr, kind, peer),
                                      return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    number = np.empty(len(order), dtype=np.int32)
    number[order] = np.arange(len(order), dtype=np.int32)
    return number[inverse.ravel()], found[order]


@njit(cache=True)
def _pair_messages(kind, length, end_pair, npairs):
    """Match the ends pair by pair: the k-th send of a pair with its k-th receive
    (program order), the pair's k-th message being *slot* ``base[pair] + k``.  Return
    ``base`` and per slot its row (:attr:`FlatSchedule.message`, with the length in
    elements rather than bytes, in the type of ``length``), or None when some send or
    receive has no partner of its length.  An end's place among its pair's is counted as
    the ends are read, in order, rather than held (an int32 per end)."""
    counts = np.zeros((npairs, 2), dtype=np.int64)
    for e in range(len(kind)):
        counts[end_pair[e], 0 if kind[e] == 0 else 1] += 1
    base = np.zeros(npairs + 1, dtype=np.int64)
    for i in range(npairs):  # loops rather than NumPy's functions: they compile for seconds
        if counts[i, 0] != counts[i, 1]:
            return None
        base[i + 1] = base[i] + counts[i, 0]
        counts[i, 0] = counts[i, 1] = base[i]  # from here on, the cursors of the pair's sides
    packed = np.empty((base[npairs], 2), dtype=length.dtype)
    for e in range(len(kind)):
        if kind[e] == 0:
            slot = counts[end_pair[e], 0]
            counts[end_pair[e], 0] += 1
            packed[slot, 0], packed[slot, 1] = 2 * end_pair[e], length[e]
    for e in range(len(kind)):
        if kind[e] != 0:
            slot = counts[end_pair[e], 1]
            counts[end_pair[e], 1] += 1
            if length[e] != packed[slot, 1]:
                return None
            packed[slot, 0] += kind[e] == 2
    return base, packed


@njit(cache=True)
def _number(p, step_ptr, end_ptr, kind, end_pair, base, codes):
    """Give every message an index, in the order its sender reaches it (how far through
    its steps, then the sender), so that messages in flight together lie together in the
    engine's arrays; write each end's code into ``codes`` and return each slot's message
    (:func:`_pair_messages`)."""
    steps = np.empty(p, dtype=np.int64)
    most = 1
    for r in range(p):
        steps[r] = step_ptr[r + 1] - step_ptr[r]
        most = max(most, steps[r])
    # counting sort by progress; within one, by sender, then in program order
    first = np.zeros(most + 2, dtype=np.int64)
    for r in range(p):
        for g in range(step_ptr[r], step_ptr[r + 1]):
            progress = (g - step_ptr[r]) * most // steps[r]
            for e in range(end_ptr[g], end_ptr[g + 1]):
                if kind[e] == 0:
                    first[progress + 1] += 1
    for i in range(1, len(first)):
        first[i] += first[i - 1]
    number = np.empty(base[len(base) - 1], dtype=codes.dtype)
    cursor = np.empty((len(base) - 1, 2), dtype=np.int64)
    for i in range(len(base) - 1):
        cursor[i, 0] = base[i]
    for r in range(p):
        for g in range(step_ptr[r], step_ptr[r + 1]):
            progress = (g - step_ptr[r]) * most // steps[r]
            for e in range(end_ptr[g], end_ptr[g + 1]):
                if kind[e] == 0:
                    number[cursor[end_pair[e], 0]] = first[progress]
                    cursor[end_pair[e], 0] += 1
                    first[progress] += 1
    for i in range(len(base) - 1):
        cursor[i, 0] = cursor[i, 1] = base[i]
    for e in range(len(kind)):
        side = 0 if kind[e] == 0 else 1
        codes[e] = 2 * number[cursor[end_pair[e], side]] + side
        cursor[end_pair[e], side] += 1
    return number


@njit(cache=True)
def _rows(packed, number, dtype_size):
    """The messages' rows (:attr:`FlatSchedule.message`) from each slot's
    (:func:`_pair_messages`), in the messages' order (:func:`_number`)."""
    rows = np.empty((len(number), 2), dtype=np.int64)
    for slot in range(len(number)):
        t = number[slot]
        rows[t, 0], rows[t, 1] = packed[slot, 0], np.int64(packed[slot, 1]) * dtype_size
    return rows


def _number_messages(p: int, step_ptr: np.ndarray, ends: np.ndarray, columns: list[np.ndarray],
                     dtype_size: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Match every send with its receive and number the messages (:func:`_pair_messages`,
    :func:`_number`): the ends' codes go after their offsets in ``ends``; return the
    messages' rows and the ordered pairs (``src * p + dst``, a route each), or None.
    ``columns``, the ends' kinds, peers and lengths, is emptied as they are read, so that
    each goes as soon as it is done with, before the rows are made (a 4096-rank ring has
    67 million ends: what they hold per end is more than the rows)."""
    kind = columns[0]
    end_ptr = ends[:len(ends) - len(kind)]
    if p * p <= _DENSE_PAIRS:
        end_pair = columns.pop(1)
        keys = _dense_pair_ids(p, step_ptr, end_ptr, kind, end_pair,
                               np.full(p * p, -1, dtype=np.int32))
    else:
        end_pair, keys = _sparse_pair_ids(p, step_ptr, end_ptr, kind, columns.pop(1))
    matched = _pair_messages(kind, columns.pop(1), end_pair, len(keys))
    if matched is None:
        return None
    base, packed = matched
    number = _number(p, step_ptr, end_ptr, kind, end_pair, base, ends[len(end_ptr):])
    columns.clear()
    del kind, end_pair
    return _rows(packed, number, dtype_size), keys


def flatten(schedule: Schedule, topology: Topology, dtype_size: int) -> FlatSchedule | None:
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

    Returns
    -------
    FlatSchedule or None
    """
    p = schedule.nranks
    read = _ends if schedule.lanes is None else _lane_ends
    try:
        steps_per_rank, ends_per_step, *columns = read(schedule)
    except OverflowError:  # a peer beyond int32 is not one of its ranks
        return None
    peer = columns[1]
    if len(peer) and not (0 <= peer.min() and peer.max() < p):
        return None  # a peer outside the schedule's ranks
    del peer
    step_ptr = _offsets(steps_per_rank)
    ends: np.ndarray = np.empty(len(ends_per_step) + 1 + len(columns[0]),
                                dtype=_index_dtype(columns[0]))
    ends[0] = 0
    np.cumsum(ends_per_step, out=ends[1:len(ends_per_step) + 1])
    del steps_per_rank, ends_per_step
    numbered = _number_messages(p, step_ptr, ends, columns, dtype_size)
    if numbered is None:
        return None
    rows, pairs = numbered
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
        step_ptr=step_ptr, ends=ends, message=rows,
        route_ranks=np.stack((pairs // p, pairs % p), axis=1),
        route_ptr=_offsets([len(hops) for hops in links]),
        route_links=np.array([link for hops in links for link in hops], dtype=np.int64),
        route_latency=np.array(latency, dtype=np.float64),
        route_cap=np.array(cap, dtype=np.float64),
        route_shares=np.array(shares, dtype=np.float64),
        bandwidth=np.array(bandwidth, dtype=np.float64))
