"""A schedule and its machine as flat arrays: what the compiled engine reads.

:func:`flatten` reads every rank's operations once and keeps what a simulation needs: per
step, its message ends (sends and receives, in the step's order; local copies are free
and dropped); per message, its two ends matched as :mod:`collectives.progress` matches
them (the k-th send from ``a`` to ``b`` with the k-th receive at ``b`` from ``a``,
in compiled loops), its bytes, whether it reduces, and its route through the topology.
Steps and messages lie in the order the ranks read them, round by round rather than rank
by rank: a round's reads then touch a few pages, not one per rank and per route.
A schedule with lanes (:attr:`collectives.Schedule.lanes`) is read from its lanes, merged
into steps in a compiled loop, so the millions of operation objects of a large schedule
are never built; a rank whose lanes the schedule also gives as columns
(:attr:`collectives.Schedule.lane_columns`: a channel cut at its blocks, millions of
one-entry lanes) is read from those arrays, without a lane object.  Any other schedule is
read from its steps.  Every reading gives the same arrays.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np

from topology.model import Topology

from collectives.rounds import GAP, LaneColumns, Window, short_columns
from collectives.schedule import Recv, Schedule, Send, new_recv, new_send
from collectives.errors import ScheduleError
from collectives.verify import StepCheck

from .gpu import route_shares
from .jit import empty, larger, njit_once, smaller, zeros

__all__ = ["FlatSchedule", "flatten"]


@dataclass(frozen=True)
class FlatSchedule:
    """Every rank's steps and every message, as arrays.

    Attributes
    ----------
    rank_start : ndarray of int64, shape (nranks,)
        Where each rank's first step's head is in ``steps`` (the last entry for a rank
        without steps).
    steps : ndarray of int32 (int64 beyond 32767 ranks or 2**30 messages)
        Every rank's steps laid out round by round, what the ranks read at about the same
        time together: the k-th step of every rank in round k (for a schedule read from
        its lanes, the steps of the schedule's round k), :data:`_TOGETHER` rounds at a
        time rank by rank (by first round, then rank).  A step is its head, ``-d`` where
        the rank's next step's head lies ``d`` entries further on, then its message ends:
        ``2 * message + side``, 0 for a send and 1 for a receive (a step without a message
        end waits for nothing and is left out).  The last entry, -1, is the head that
        every rank's last step points to.
    message : ndarray of int64, shape (messages,)
        Per message, ``2 * bytes + reduce`` (whether the receive reduces), the messages
        numbered in the order ``steps`` meets them (the k-th send from ``a`` to ``b`` and
        the k-th receive at ``b`` from ``a`` are one message): what ranks read of them at
        about the same time lies together.
    message_route : ndarray of int32 (int64 beyond 2**31 routes or messages)
        Each message's route.
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

    rank_start: np.ndarray
    steps: np.ndarray
    message: np.ndarray
    message_route: np.ndarray
    route_ranks: np.ndarray
    route_ptr: np.ndarray
    route_links: np.ndarray
    route_latency: np.ndarray
    route_cap: np.ndarray
    route_shares: np.ndarray
    bandwidth: np.ndarray


_DTYPES = {"b": np.int8, "i": np.int32, "q": np.int64}  # by array typecode
_INT32 = np.iinfo(np.int32)
_INT32_LOW, _INT32_HIGH = int(_INT32.min), int(_INT32.max)  # as compiled code reads them

#: the rounds laid out together, rank by rank (:attr:`FlatSchedule.steps`): a rank's next
#: few steps lie in the line it reads, ranks that drift a few rounds apart (a pipeline's)
#: read as close together as ranks in step (a ring's)
_TOGETHER = 4


def _steps_dtype(p: int) -> type:
    """The integer type of the steps as read (:attr:`FlatSchedule.steps`, each end's code
    naming its ordered pair) on ``p`` ranks: int32 while a code of every ordered pair
    (``2 * p * p - 1`` at most) fits, else int64."""
    return np.int32 if 2 * p * p <= _INT32.max else np.int64


def _ends(schedule: Schedule, check: StepCheck | None = None) -> tuple[np.ndarray, ...]:
    """Each rank's first step, the schedule's steps laid out for the engine
    (:attr:`FlatSchedule.steps`, each end's code ``2 * key + side`` naming its ordered
    pair, ``key = src * p + dst``; a rank's k-th step in round k, :func:`_interleave`),
    and each end's kind and length, in the order of the steps' ends.

    Kinds: 0 send, 1 receive, 2 receive that reduces, as int8; lengths as int32 where
    they fit (:func:`_narrowed`; less memory to hold and touch).  Read rank by rank into
    :mod:`array` buffers; raises ValueError for a peer that is not one of the ranks.
    ``check``, if given, reads each rank's steps as they are read here, and finishes
    once every rank is read (:class:`collectives.verify.StepCheck`).
    """
    p = schedule.nranks
    steps_per_rank, heads = array("q"), array("q")
    steps = array("i" if _steps_dtype(p) is np.int32 else "q")
    kinds, lengths = array("b"), array("q")
    entry, kind, length = steps.append, kinds.append, lengths.append
    for rank in range(p):
        first = len(heads)
        rank_steps = schedule.steps(rank)
        if check is not None:
            check.read(rank, steps=rank_steps)
        for step in rank_steps:
            head = len(steps)
            entry(0)
            for op in step.ops:
                if type(op) is Send:
                    entry(2 * (rank * p + op.peer))
                    kind(0)
                elif type(op) is Recv:
                    entry(2 * (op.peer * p + rank) + 1)
                    kind(2 if op.reduce else 1)
                else:
                    continue
                if not 0 <= op.peer < p:
                    raise ValueError(f"peer {op.peer} is not one of the {p} ranks")
                length(op.stop - op.start)
            if len(steps) - head > 1:
                heads.append(head)
            else:  # no message end: nothing to wait for
                steps.pop()
        steps_per_rank.append(len(heads) - first)
    if check is not None:
        check.finish()
    counts, by_rank, kinds_read, lengths_read, at = (
        np.frombuffer(buffer, dtype=_DTYPES[buffer.typecode])
        for buffer in (steps_per_rank, steps, kinds, lengths, heads))
    return _interleave(counts, at, by_rank, kinds_read, _narrowed(lengths_read))


def _interleave(steps_per_rank: np.ndarray, heads: np.ndarray, by_rank: np.ndarray,
                kinds: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
    """Steps read rank by rank (``by_rank``, each step's head at ``heads``, in order,
    ``steps_per_rank`` of them per rank; the ends' ``kinds`` and ``lengths`` in that
    order) laid out round by round: the k-th step of every rank in round k,
    :data:`_TOGETHER` rounds at a time rank by rank, each step's head pointing to the
    rank's next (:attr:`FlatSchedule.steps`).
    Return what :func:`_ends` returns."""
    p, nsteps = len(steps_per_rank), len(heads)
    rank = np.repeat(np.arange(p), steps_per_rank)
    first = _offsets(steps_per_rank)
    place = np.arange(nsteps) - first[rank]
    order = np.argsort((place // _TOGETHER * p + rank) * _TOGETHER + place % _TOGETHER)
    size = np.diff(np.append(heads, len(by_rank)))  # a head and its ends
    new_head = np.empty(nsteps + 1, dtype=np.int64)  # and the last head, past every step
    new_head[order] = _offsets(size[order])[:-1]
    new_head[nsteps] = len(by_rank)
    # entry j of the layout is entry ``source[j]`` read rank by rank
    source = np.arange(len(by_rank)) + np.repeat(heads[order] - new_head[order], size[order])
    laid = np.empty(len(by_rank) + 1, dtype=by_rank.dtype)
    laid[:-1] = by_rank[source]
    after = np.arange(1, nsteps + 1)  # the rank's next step, or past every step
    after[first[1:][steps_per_rank > 0] - 1] = nsteps
    laid[new_head[:-1]] = new_head[:-1] - new_head[after]
    laid[-1] = -1
    is_end = np.ones(len(by_rank), dtype=bool)
    is_end[heads] = False
    end_of = np.cumsum(is_end) - 1  # an entry's place among the ends read
    ends = end_of[source[is_end[source]]]
    start = np.where(steps_per_rank > 0, new_head[np.minimum(first[:-1], nsteps)], len(by_rank))
    return start, laid, kinds[ends], lengths[ends]


@njit_once()
def _new_layout(p, entries, ends, steps_like, lengths_like):
    """What :func:`_open_step`, :func:`_put_end` and :func:`_closed` write: room for
    ``entries`` entries of steps and a last head (in the type of ``steps_like``) and
    ``ends`` ends' kinds and lengths (the type of ``lengths_like``), where the next entry
    and end go, each rank's last step so far and its first."""
    last, first = empty(p, np.int64), empty(p, np.int64)
    for rank in range(p):  # a loop: np.full compiles a function of its own
        last[rank] = first[rank] = -1
    return (empty(entries + 1, steps_like.dtype), empty(ends, np.int8),
            empty(ends, lengths_like.dtype), zeros(2, np.int64), last, first)


@njit_once()
def _open_step(out, rank):
    """Start a step of ``rank``: its previous step's head is pointed at this one."""
    steps, _, _, at, last, first = out
    if last[rank] >= 0:
        steps[last[rank]] = last[rank] - at[0]
    else:
        first[rank] = at[0]
    last[rank] = at[0]
    at[0] += 1


@njit_once()
def _put_end(out, code, kind, length):
    """Append an end to the step last opened."""
    steps, kinds, lengths, at, _, _ = out
    steps[at[0]] = code
    kinds[at[1]], lengths[at[1]] = kind, length
    at[0] += 1
    at[1] += 1


@njit_once()
def _closed(out):
    """The layout finished: the head after every rank's last step (and a rank without
    steps) is the last entry, ``-1``.  Return each rank's first step, the steps, the ends'
    kinds and lengths."""
    steps, kinds, lengths, at, last, first = out
    end = at[0]
    steps[end] = -1
    for rank in range(len(last)):
        if last[rank] >= 0:
            steps[last[rank]] = last[rank] - end
        else:
            first[rank] = end
    return first, steps[:end + 1], kinds[:at[1]], lengths[:at[1]]


_GAP = GAP  # a round without an operation, in a pool of lengths


def _length(start: int | None, stop: int | None) -> int:
    """An entry's length in a pool: :data:`_GAP` where the start is None (a round
    without an operation); a stop alone that is None counts as -1."""
    return _GAP if start is None else (-1 if stop is None else stop) - start


#: the pairs of sequences :class:`_Pool` recalls (kept alive so that their ids stay
#: theirs): a schedule's ranks share a few cached ones, or none
_RECALLED = 256


class _Pool:
    """The entry lengths (``stop - start``, :data:`_GAP` for a gap) of many lanes in one
    growing array; a pair of sequences met again (every rank of a schedule may read the
    same cached segment tuples) is stored once, while among the last :data:`_RECALLED`
    pairs met (pairs new for every rank, kept, would hold hundreds of MB)."""

    def __init__(self) -> None:
        # grown in place (realloc: a large one moves its pages, not its bytes; a NumPy
        # array doubled and copied took 0.2-0.8 s of 16 million lengths)
        self.buffer = array("q")
        self.seen: dict[tuple[int, int], tuple[Any, Any, int]] = {}  # ids -> (kept alive, offset)

    def offset(self, starts: Any, stops: Any, n: int) -> int:
        """Return where the first ``n`` lengths of ``starts`` and ``stops`` lie in the pool;
        for windows at one place of two bases (ring's), where the bases' lengths lie, stored
        once for all their windows, from that place on."""
        if starts.__class__ is Window is stops.__class__ and starts.start == stops.start:
            return self.offset(starts.base, stops.base,
                               min(len(starts.base), len(stops.base))) + starts.start
        offset = len(self.buffer)
        if n == 1:  # one entry (a placement cuts lanes into a million such): no NumPy call
            self.buffer.append(_length(starts[0], stops[0]))
            return offset
        key = (id(starts), id(stops))
        known = self.seen.get(key)
        if known is not None:
            return known[2]
        try:
            self.put(np.fromiter(stops, dtype=np.int64, count=n)
                     - np.fromiter(starts, dtype=np.int64, count=n))
        except TypeError:  # a None
            self.buffer.extend(map(_length, starts, stops))
        if len(self.seen) >= _RECALLED:
            self.seen.clear()
        self.seen[key] = (starts, stops, offset)
        return offset

    def put(self, lengths: np.ndarray) -> int:
        """Store ``lengths`` at the pool's end; return where they start."""
        offset = len(self.buffer)
        self.buffer.frombytes(np.ascontiguousarray(lengths, dtype=np.int64).data.cast("B"))
        return offset

    def array(self) -> np.ndarray:
        return np.frombuffer(self.buffer, dtype=np.int64)


def _lane_kind(lane: Any) -> int:
    """0 send, 1 receive, 2 receive that reduces, -1 a local copy (free, dropped)."""
    return _kind(lane.make, lane.flags)


def _kind(make: Any, flags: Any) -> int:
    """:func:`_lane_kind` of a lane's builder and flags."""
    if make is new_send or make is Send:
        return 0
    if make is new_recv or make is Recv:
        return 2 if flags and flags[0] else 1
    return -1


#: :func:`_kind` recalled (a schedule's lanes have a few builders and flags; flags must
#: then be a tuple)
_known_kind = lru_cache(maxsize=None)(_kind)


#: lanes of at most this many entries are read column by column (:func:`_short_rows`)
#: rather than lane by lane (:meth:`_Pool.offset`, which stores a pair of sequences met
#: again once)
_SHORT = 8


def _short_rows(lanes: Any, pool: _Pool) -> np.ndarray | None:
    """One rank's rows of :func:`_lane_ends`'s table (first round, kind, peer, lengths'
    offset, entries), their lengths put in ``pool``, read column by column for lanes of
    at most :data:`_SHORT` entries with as many starts as stops and no gap (a composed
    schedule's: 8-channel trees on 64 nodes are 16,000 one-entry lanes per rank); None,
    and nothing put, for any other lanes."""
    short = short_columns(lanes, _SHORT)
    if short is None:
        return None
    (firsts, makes, peers, starts, stops, flags), counts = short
    total = sum(counts)
    try:
        lengths = (np.fromiter(chain.from_iterable(stops), dtype=np.int64, count=total)
                   - np.fromiter(chain.from_iterable(starts), dtype=np.int64, count=total))
        kinds = list(map(_known_kind, makes, flags))
    except TypeError:  # a None (a gap), or flags that are not a tuple
        return None
    rows = np.empty((len(lanes), 5), dtype=np.int64)
    rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 4] = firsts, kinds, peers, counts
    rows[0, 3] = pool.put(lengths)
    np.cumsum(rows[:-1, 4], out=rows[1:, 3])
    rows[1:, 3] += rows[0, 3]
    return rows


def _column_rows(columns: LaneColumns, pool: _Pool) -> np.ndarray:
    """One rank's rows of :func:`_lane_ends`'s table read from its lanes as columns
    (:attr:`collectives.Schedule.lane_columns`), their lengths put in ``pool``."""
    rows = np.empty((len(columns.entries), 5), dtype=np.int64)
    if not len(rows):
        return rows
    rows[:, 0], rows[:, 2], rows[:, 4] = columns.first_rounds, columns.peers, columns.entries
    kinds = np.array([_known_kind(make, flags) for make, flags in columns.builders],
                     dtype=np.int64)
    rows[:, 1] = kinds[columns.builder]
    rows[0, 3] = pool.put(columns.lengths)
    np.cumsum(rows[:-1, 4], out=rows[1:, 3])
    rows[1:, 3] += rows[0, 3]
    return rows


def _extend_rows(table: array, lanes: Any, pool: _Pool) -> None:
    """Append one rank's rows of :func:`_lane_ends`'s table to ``table``, read lane by
    lane, their lengths put in ``pool`` (:meth:`_Pool.offset`)."""
    for lane in lanes:
        starts, stops = lane.starts, lane.stops
        n = min(len(starts), len(stops))
        table.extend((lane.first_round, _lane_kind(lane), lane.peer,
                      pool.offset(starts, stops, n), n))


def _lane_ends(schedule: Schedule, check: StepCheck | None = None) -> tuple[np.ndarray, ...]:
    """What :func:`_ends` returns, read from the schedule's lanes: the operations are
    never built (:func:`collectives.rounds.merge_lanes` is replayed in :func:`_merge`).
    ``check``, as :func:`_ends`'s, reads a rank's lanes (as columns where they are read
    so here) as they are read here, and finishes before the lanes are merged."""
    lanes_of, columns_of = schedule.lanes, schedule.lane_columns
    assert lanes_of is not None, "only a schedule with lanes is read as lanes"
    pool = _Pool()
    lanes_per_rank = array("q")
    # per lane: first round, kind, peer, lengths' offset, length (grown in place: a list of
    # each rank's rows joined at the end held them twice)
    table = array("q")
    for rank in range(schedule.nranks):
        columns = None if columns_of is None else columns_of(rank)
        rows: np.ndarray | None
        if columns is not None:
            if check is not None:
                check.read(rank, columns)
            lanes_per_rank.append(len(columns.entries))
            rows = _column_rows(columns, pool)
        else:
            lanes = lanes_of(rank)
            if check is not None:
                check.read(rank, lanes=lanes)
            lanes_per_rank.append(len(lanes))
            rows = _short_rows(lanes, pool)
            if rows is None:
                _extend_rows(table, lanes, pool)
                continue
        table.frombytes(rows.data.cast("B"))  # without a copy of its own
    if check is not None:
        check.finish()
    read = np.frombuffer(table, dtype=np.int64).reshape(-1, 5)
    p = schedule.nranks
    lengths = pool.array()
    peers_known, fits = _table_checks(read, lengths, _GAP, p)
    if not peers_known:
        raise ValueError(f"a peer is not one of the {p} ranks")
    # the heads' distances are below the entries, two per lane entry at most
    dtype = _steps_dtype(p) if 2 * int(read[:, 4].sum()) < _INT32.max else np.int64
    *columns, merged = _merge(_offsets(np.frombuffer(lanes_per_rank, dtype=np.int64)), read,
                              lengths, _GAP, np.empty(0, dtype=dtype),
                              np.empty(0, dtype=np.int32 if fits else np.int64))
    return (*columns, _narrowed(merged))


@njit_once(entry=True)
def _table_checks(table, pool, gap, p):
    """Whether every lane of ``table`` (:func:`_lane_ends`) that sends or receives names a
    peer among the ``p`` ranks, and whether every length of ``pool`` but gaps fits int32:
    one pass over each, where NumPy's masks took a copy of each column (16 million lanes
    of 8-channel rhd on 1,024 ranks: 0.6 s)."""
    for i in range(len(table)):
        if table[i, 1] >= 0 and not 0 <= table[i, 2] < p:
            return False, False
    for i in range(len(pool)):
        if pool[i] != gap and not _INT32_LOW <= pool[i] <= _INT32_HIGH:
            return True, False
    return True, True


@njit_once(entry=True)
def _merge(lane_ptr, table, pool, gap, steps_like, lengths_like):
    """Every rank's lanes merged round by round, as :func:`collectives.rounds.merge_lanes`
    merges them: a step per round with a message end, its ends in lane order, laid out
    as :func:`_ends` lays them out but by the schedule's rounds (what every rank does in
    a few rounds lies together, however late a rank starts), in the type of ``steps_like``;
    the lengths in the type of ``lengths_like`` (int32 where every length of ``pool``
    fits)."""
    nranks = len(lane_ptr) - 1
    most = 0
    for i in range(len(table)):
        most += table[i, 4]
    base, top = zeros(nranks, np.int64), zeros(nranks, np.int64)
    for r in range(nranks):  # each rank's rounds, base to top (none when equal)
        for i in range(lane_ptr[r], lane_ptr[r + 1]):
            if table[i, 4]:
                first, stop = table[i, 0], table[i, 0] + table[i, 4]
                if top[r] == base[r]:
                    base[r], top[r] = first, stop
                else:
                    base[r], top[r] = smaller(base[r], first), larger(top[r], stop)
    by_base = _by_first_round(base, top)
    # a head and an end per lane entry at most: pages never written are never taken
    out = _new_layout(nranks, 2 * most, most, steps_like, lengths_like)
    active = empty(nranks, np.int64)
    nactive = joined = 0
    now = base[by_base[0]] if len(by_base) else 0  # the first round of the block laid out
    while joined < len(by_base) or nactive:
        while joined < len(by_base) and base[by_base[joined]] < now + _TOGETHER:
            active[nactive] = by_base[joined]
            nactive += 1
            joined += 1
        kept = 0
        for j in range(nactive):
            r = active[j]
            if top[r] <= now:
                continue
            active[kept] = r
            kept += 1
            for when in range(larger(now, base[r]), smaller(now + _TOGETHER, top[r])):
                opened = False
                for i in range(lane_ptr[r], lane_ptr[r + 1]):
                    k = when - table[i, 0]
                    if 0 <= k < table[i, 4] and table[i, 1] >= 0 and \
                            pool[table[i, 3] + k] != gap:
                        if not opened:
                            _open_step(out, r)
                            opened = True
                        _put_end(out, 2 * (r * nranks + table[i, 2]) if table[i, 1] == 0
                                 else 2 * (table[i, 2] * nranks + r) + 1,
                                 table[i, 1], pool[table[i, 3] + k])
        nactive = kept
        now = now + _TOGETHER if nactive or joined == len(by_base) else base[by_base[joined]]
    return _closed(out)


@njit_once()
def _by_first_round(base, top):
    """The ranks with rounds (``base < top``) by their first round, ranks of one round in
    order (a counting sort: the rounds span the schedule's steps)."""
    ranks = empty(len(base), np.int64)
    n = 0
    for r in range(len(base)):
        if base[r] < top[r]:
            ranks[n] = r
            n += 1
    if n == 0:
        return ranks[:0]
    low, high = base[ranks[0]], base[ranks[0]]
    for j in range(n):
        low, high = smaller(low, base[ranks[j]]), larger(high, base[ranks[j]])
    at = zeros(high - low + 2, np.int64)
    for j in range(n):
        at[base[ranks[j]] - low + 1] += 1
    for i in range(1, len(at)):
        at[i] += at[i - 1]
    out = empty(n, np.int64)
    for j in range(n):
        out[at[base[ranks[j]] - low]] = ranks[j]
        at[base[ranks[j]] - low] += 1
    return out


def _narrowed(lengths: np.ndarray) -> np.ndarray:
    """``lengths`` as int32 when every one fits (half the memory to hold while messages
    are numbered), else as they are."""
    if lengths.dtype == np.int32 or (
            len(lengths) and not _INT32.min <= lengths.min() <= lengths.max() <= _INT32.max):
        return lengths
    return lengths.astype(np.int32)


def _small(most: int) -> type:
    """int32 if it holds ``most``, else int64."""
    return np.int32 if most <= _INT32.max else np.int64


def _offsets(counts: Any) -> np.ndarray:
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


#: up to this many ordered pairs of ranks, pairs are numbered through an array indexed by
#: pair (4 bytes each: 64 MiB at 4096 ranks, less than a twentieth of what their ring's
#: ends take); beyond, by sorting the ends' pairs (:func:`_sparse_pair_ids`)
_DENSE_PAIRS = 1 << 25


@njit_once(entry=True)
def _end_keys(steps):
    """Each end's ordered pair, ``src * p + dst``, in order."""
    keys = empty(len(steps), np.int64)
    n = 0
    for e in range(len(steps)):
        if steps[e] >= 0:
            keys[n] = steps[e] >> 1
            n += 1
    return keys[:n]


@njit_once(entry=True)
def _write_pairs(steps, end_pair):
    """Each end's code in ``steps`` written over with its pair's, ``end_pair`` in order."""
    n = 0
    for e in range(len(steps)):
        if steps[e] >= 0:
            steps[e] = 2 * end_pair[n] + (steps[e] & 1)
            n += 1


def _sparse_pair_ids(steps: np.ndarray) -> np.ndarray:
    """Number the ordered pairs that exchange messages in the order the steps meet them
    by sorting the ends' pairs (too many ranks for an array per ordered pair,
    :func:`_pair_messages`), each end's code in ``steps`` (``2 * key + side``,
    :func:`_ends`) written over with its pair's (``2 * pair + side``); return the pairs'
    keys (``src * p + dst``)."""
    keys = _end_keys(steps)
    found, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    del keys
    order = np.argsort(first, kind="stable")
    number = np.empty(len(order), dtype=np.int64)
    number[order] = np.arange(len(order), dtype=np.int64)
    _write_pairs(steps, number[inverse.ravel()])
    return found[order]


@njit_once(entry=True)
def _pair_messages(steps, kind, length, dense, npairs, dtype_size, message, route):
    """Number the ordered pairs that exchange messages (unless numbered already), match
    the ends pair by pair, the k-th send of a pair with its k-th receive (program order),
    and number the messages in the order the steps meet them (what ranks read at about
    the same time lies together): each end's code in ``steps`` is written over with its
    message's (``2 * message + side``), each message's ``2 * bytes + reduce`` written in
    ``message`` and its pair in ``route`` (:attr:`FlatSchedule.message`,
    :attr:`FlatSchedule.message_route`).

    The ends' codes name their ordered pair, ``2 * key + side`` (:func:`_ends`), and the
    pairs are numbered in the order the steps meet them through ``dense`` (-1 per ordered
    pair); or, where ``dense`` is empty, they name their pair's number among ``npairs``
    (:func:`_sparse_pair_ids`).  Numbering while matching reads the steps once, not
    twice.  Return whether every send and receive has a partner of its length, and the
    pairs' keys (``src * p + dst``) numbered here.

    ``message`` holds half the ends: ``n`` messages made of ``e`` ends leave ``2n - e``
    ends unmatched, so a message beyond half the ends is the first sign of one, and
    without one every end is matched.  One pass over the steps, rather than a count of
    each pair's ends first: the steps of a 4,096-rank ring are 400 MB."""
    numbering = len(dense) > 0
    # per pair, the messages met by one side only, oldest first (one side is ahead, or
    # none): a list through ``route``, which holds a waiting message's next until the
    # other side meets it; its first and last message (-1: none) and its side.  Room for
    # every ordered pair or end while numbering: a row is written when its pair is first
    # met, and pages never written are never taken
    rows = smaller(len(dense), len(kind)) if numbering else npairs
    waiting = empty((rows, 3), np.int64)
    for pair in range(npairs):
        waiting[pair, 0] = waiting[pair, 1] = waiting[pair, 2] = -1
    keys = empty(rows if numbering else 0, np.int64)
    n = end = 0
    for e in range(len(steps)):
        if steps[e] < 0:  # a step's head
            continue
        pair, side = np.int64(steps[e] >> 1), steps[e] & 1
        if numbering:
            key = pair
            pair = np.int64(dense[key])
            if pair < 0:  # a pair first met
                pair = npairs
                dense[key] = npairs
                waiting[pair, 0] = waiting[pair, 1] = waiting[pair, 2] = -1
                keys[pair] = key
                npairs += 1
        nbytes = np.int64(length[end]) * dtype_size
        reduce = kind[end] == 2
        end += 1
        t = waiting[pair, 0]
        if t >= 0 and waiting[pair, 2] != side:  # the other side met it first
            if message[t] >> 1 != nbytes:
                return False, keys[:0]
            message[t] += reduce
            waiting[pair, 0] = route[t]
            route[t] = pair
        else:  # the message's first end met: a new number, last of the waiting
            if n == len(message):  # more messages than half the ends: an end is unmatched
                return False, keys[:0]
            t = n
            n += 1
            message[t] = 2 * nbytes + reduce
            route[t] = -1
            if waiting[pair, 0] < 0:
                waiting[pair, 0], waiting[pair, 2] = t, side
            else:
                route[waiting[pair, 1]] = t
            waiting[pair, 1] = t
        steps[e] = 2 * t + side
    return True, keys[:npairs].copy()


def flatten(schedule: Schedule, topology: Topology, dtype_size: int, *,
            dense_pairs: int = _DENSE_PAIRS,
            check: StepCheck | None = None) -> FlatSchedule | None:
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
    check : collectives.verify.StepCheck, optional
        Checks each rank's steps on the same reading (a rank's lanes as columns, or its
        steps, read once for both) and raises what it finds; the matching here is then
        :func:`collectives.verify`'s (:func:`collectives.verify.verify_while_read`).

    Returns
    -------
    FlatSchedule or None
    """
    p = schedule.nranks
    read = _ends if schedule.lanes is None else _lane_ends
    try:
        rank_start, steps, kind, length = read(schedule, check)
    except ScheduleError:  # ``check``'s
        raise
    except ValueError:  # a peer that is not one of its ranks
        return None
    # pairs numbered while matching through an array per ordered pair, else beforehand
    dense = np.full(p * p if p * p <= dense_pairs else 0, -1, dtype=np.int32)
    pairs = np.empty(0, dtype=np.int64) if len(dense) else _sparse_pair_ids(steps)
    # as many messages as ends, halved, if they match
    messages = len(kind) // 2
    if steps.dtype == np.int32 and 2 * messages > _INT32.max:  # codes: 2 * message + side
        steps = steps.astype(np.int64)
    message = np.empty(messages, dtype=np.int64)
    # a pair, or a message's number while the message waits (:func:`_pair_messages`);
    # ``p * p`` bounds the pairs numbered while matching
    message_route: np.ndarray = np.empty(
        messages, dtype=_small(max(messages, len(pairs), len(dense))))
    matched, numbered = _pair_messages(steps, kind, length, dense, len(pairs), dtype_size,
                                       message, message_route)
    if not matched:
        return None
    pairs = numbered if len(dense) else pairs
    del kind, length  # before the routes: an end's kind and length are more than the rows
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
        rank_start=rank_start, steps=steps, message=message, message_route=message_route,
        route_ranks=np.stack((pairs // p, pairs % p), axis=1),
        route_ptr=_offsets([len(hops) for hops in links]),
        route_links=np.array([link for hops in links for link in hops], dtype=np.int64),
        route_latency=np.array(latency, dtype=np.float64),
        route_cap=np.array(cap, dtype=np.float64),
        route_shares=np.array(shares, dtype=np.float64),
        bandwidth=np.array(bandwidth, dtype=np.float64))
