"""The checks of :func:`collectives.verify` on arrays: one rank's operations at a time,
then every message end, in compiled loops.

A rank's operations are read into columns (kind, flags, peer or copy destination, start,
stop), from its lanes as columns when the schedule has them
(:attr:`collectives.Schedule.lane_columns` and :attr:`~collectives.Schedule.lane_starts`:
a composed schedule's channels cut at their blocks, millions of lanes), else from its
lanes when it has them (:attr:`collectives.Schedule.lanes`), merged into steps as
:func:`collectives.rounds.merge_lanes` merges them, without building an operation;
otherwise from its steps.  The step checks run on each rank's columns as they are
read; what matching and the progress check need (each send's and receive's side, peer
and length, 9 bytes per message end where the buffer's elements fit in int32, and each
step's end offset) is kept, and matching adds about 10 more (each end's partner's step
and a place per send).
These functions only find *whether* and *where* a check fails:
:func:`collectives.verify` words the error from the operations at fault.  Importing this module imports Numba; the kernels compile
once and are cached on disk.
"""

from __future__ import annotations

from array import array
from functools import lru_cache
from itertools import chain
from typing import Any, NamedTuple, Sequence

import numpy as np
from numba import njit

from .rounds import GAP, LaneColumns, Window, short_columns
from .schedule import Recv, Schedule, Send, Step, new_recv, new_send

__all__ = ["RankOps", "Values", "Matched", "rank_ops", "first_faulty_step", "ends_of",
           "peers_known", "bad_peer", "match", "progress"]

SEND, RECV, COPY = 0, 1, 2  # kinds
REDUCE, SWAP = 1, 2  # flag bits of a receive
_GAP = GAP  # a round without an operation, in a lane's starts (as in lane columns)
#: sequences converted to arrays that are recalled by identity (ranks share cached ones)
_RECALLED = 256
#: sequences of at most this many entries are converted again rather than recalled (a
#: composed schedule's lanes are hundreds per rank, of an entry or two, each new)
_SHORT = 8
#: up to this many ordered pairs of ranks, pairs are numbered through an array indexed by
#: pair (as :mod:`simulator.flatten`); beyond, by sorting
_DENSE_PAIRS = 1 << 25
#: a step's writes up to this many are sorted by insertion (a step of a ring or a tree
#: holds one or two), more by a mergesort
_INSERTED = 16


class RankOps(NamedTuple):
    """One rank's operations as columns, step by step, in each step's order.

    Attributes
    ----------
    step_ptr : ndarray of int64, shape (steps + 1,)
        Step ``s`` holds the operations ``step_ptr[s]:step_ptr[s + 1]``.
    kind : ndarray of int8
        :data:`SEND`, :data:`RECV` or :data:`COPY`.
    flags : ndarray of int8
        A receive's :data:`REDUCE` and :data:`SWAP` bits.
    peer : ndarray of int64
        The peer of a send or receive; a copy's destination.
    start, stop : ndarray of int64
        The element range (a copy's source).
    """

    step_ptr: np.ndarray
    kind: np.ndarray
    flags: np.ndarray
    peer: np.ndarray
    start: np.ndarray
    stop: np.ndarray


class Values:
    """Sequences of ints (``None`` for a gap) as int64 arrays, those longer than
    :data:`_SHORT` recalled by identity among the last :data:`_RECALLED` met; a
    :class:`~collectives.rounds.Window` is a view of its base's array."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[Any, np.ndarray]] = {}

    def __call__(self, values: Any) -> np.ndarray:
        if values.__class__ is Window:
            return self(values.base)[values.start:values.stop]
        recalled = len(values) > _SHORT
        if recalled:
            known = self.seen.get(id(values))
            if known is not None:
                return known[1]
        try:
            converted = np.fromiter(values, dtype=np.int64, count=len(values))
        except TypeError:  # a None: a gap
            converted = np.array([_GAP if v is None else v for v in values], dtype=np.int64)
        if recalled:
            if len(self.seen) >= _RECALLED:
                self.seen.clear()
            self.seen[id(values)] = (values, converted)
        return converted


@lru_cache(maxsize=None)
def _flag_bits(flags: tuple[bool, ...]) -> int:
    """A lane's ``reduce`` and ``swap`` flags as :data:`REDUCE` and :data:`SWAP` bits."""
    return sum(bit for bit, flag in zip((REDUCE, SWAP), flags) if flag)


def _lane_kind(make: Any) -> int | None:
    """:data:`SEND` or :data:`RECV` for the builders of sends and receives; None for any
    other (the rank is then read from its steps)."""
    if make is new_send or make is Send:
        return SEND
    if make is new_recv or make is Recv:
        return RECV
    return None


def _from_lanes(lanes: Any, values: Values) -> RankOps | None:
    """A rank's columns from its lanes, merged round by round in lane order; None if a
    lane makes something other than sends and receives."""
    columns = _short_columns(lanes) or _lane_columns(lanes, values)
    return None if columns is None else _merged(*columns)


def _from_columns(columns: LaneColumns, starts: np.ndarray) -> RankOps | None:
    """A rank's columns from its lanes as columns (:attr:`collectives.Schedule.lane_columns`)
    and their entries' starts (:attr:`collectives.Schedule.lane_starts`), merged as
    :func:`_from_lanes` merges lanes; None if a lane makes something other than sends
    and receives."""
    kinds = [_lane_kind(make) for make, _ in columns.builders]
    if None in kinds:
        return None
    rows = np.empty((len(columns.entries), 5), dtype=np.int64)
    rows[:, 0], rows[:, 3], rows[:, 4] = columns.first_rounds, columns.peers, columns.entries
    rows[:, 1] = np.array(kinds, dtype=np.int64)[columns.builder]
    rows[:, 2] = np.array([_flag_bits(flags) for _, flags in columns.builders],
                          dtype=np.int64)[columns.builder]
    stops = starts + columns.lengths
    stops[starts == _GAP] = _GAP
    return _merged(rows, starts, stops)


def _merged(rows: np.ndarray, start: np.ndarray, stop: np.ndarray) -> RankOps:
    """A rank's columns from its lanes' rows (first round, kind, flags, peer, entries)
    and their entries' starts and stops, lane by lane (:func:`_merge`)."""
    first = np.zeros(len(rows) + 1, dtype=np.int64)  # each lane's first entry
    np.cumsum(rows[:, 4], out=first[1:])
    held = rows[rows[:, 4] > 0]
    if not len(held):
        return RankOps(np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int8),
                       np.empty(0, dtype=np.int8), *(np.empty(0, dtype=np.int64),) * 3)
    rounds = (held[:, 0].min(), (held[:, 0] + held[:, 4]).max())
    return RankOps(*_merge(rows, first, start, stop, *rounds, _GAP))


def _lane_columns(lanes: Any, values: Values) -> tuple[np.ndarray, ...] | None:
    """Per lane its first round, kind, flags, peer and entries (a row each), and every
    lane's entries' starts and stops in lane order, lane by lane; None if a lane makes
    something other than sends and receives."""
    table, starts, stops = [], [], []
    for each in lanes:
        kind = _lane_kind(each.make)
        if kind is None:
            return None
        n = min(len(each.starts), len(each.stops))
        starts.append(values(each.starts)[:n])
        stops.append(values(each.stops)[:n])
        table.append((each.first_round, kind, _flag_bits(each.flags), each.peer, n))
    rows = np.array(table, dtype=np.int64).reshape(-1, 5)
    if not starts:
        return rows, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return rows, np.concatenate(starts), np.concatenate(stops)


def _short_columns(lanes: Any) -> tuple[np.ndarray, ...] | None:
    """What :func:`_lane_columns` returns, column by column rather than lane by lane,
    for lanes of at most :data:`_SHORT` entries with as many starts as stops and no gap
    (a composed schedule's: 8-channel trees on 64 nodes are 16,000 one-entry lanes per
    rank); None for any other lanes (none, longer ones, a gap, not sends and receives)."""
    short = short_columns(lanes, _SHORT)
    if short is None:
        return None
    (firsts, makes, peers, starts, stops, flags), counts = short
    kinds = list(map(_lane_kind, makes))
    if None in kinds:
        return None
    total = sum(counts)
    try:
        start = np.fromiter(chain.from_iterable(starts), dtype=np.int64, count=total)
        stop = np.fromiter(chain.from_iterable(stops), dtype=np.int64, count=total)
    except TypeError:  # a None: a gap
        return None
    rows = np.empty((len(lanes), 5), dtype=np.int64)
    for column, values in enumerate((firsts, kinds, list(map(_flag_bits, flags)), peers,
                                     counts)):
        rows[:, column] = values
    return rows, start, stop


@njit(cache=True)
def _merge(table, first, start, stop, base, top, gap):
    """A rank's lanes merged round by round, as :func:`collectives.rounds.merge_lanes`
    merges them: a step per round with an operation, its operations in lane order.
    ``table`` holds per lane its first round, kind, flags, peer and entries; ``start``
    and ``stop`` its entries' ranges, lane ``i``'s from ``first[i]`` (``gap`` starts a
    round without), in the rounds ``base..top-1``."""
    total = len(start)
    step_ptr = np.zeros(total + 1, dtype=np.int64)
    kind = np.empty(total, dtype=np.int8)
    flags = np.empty(total, dtype=np.int8)
    peer = np.empty(total, dtype=np.int64)
    starts = np.empty(total, dtype=np.int64)
    stops = np.empty(total, dtype=np.int64)
    nops = nsteps = 0
    for now in range(base, top):
        for i in range(len(table)):
            k = now - table[i, 0]
            if 0 <= k < table[i, 4] and start[first[i] + k] != gap:
                kind[nops], flags[nops], peer[nops] = table[i, 1], table[i, 2], table[i, 3]
                starts[nops], stops[nops] = start[first[i] + k], stop[first[i] + k]
                nops += 1
        if nops > step_ptr[nsteps]:
            nsteps += 1
            step_ptr[nsteps] = nops
    return (step_ptr[:nsteps + 1], kind[:nops], flags[:nops], peer[:nops], starts[:nops],
            stops[:nops])


def _from_steps(steps: Sequence[Step]) -> RankOps:
    """A rank's columns from its steps."""
    ops_per_step = array("q", [0])
    kinds, flags = array("b"), array("b")
    peers, starts, stops = array("q"), array("q"), array("q")
    for step in steps:
        for op in step.ops:
            if isinstance(op, Recv):
                kinds.append(RECV)
                flags.append(op.reduce * REDUCE + op.swap * SWAP)
                peers.append(op.peer)
            elif isinstance(op, Send):
                kinds.append(SEND)
                flags.append(0)
                peers.append(op.peer)
            else:
                kinds.append(COPY)
                flags.append(0)
                peers.append(op.dst)
            starts.append(op.start)
            stops.append(op.stop)
        ops_per_step.append(ops_per_step[-1] + len(step.ops))
    return RankOps(*(np.array(column, dtype=dtype) for column, dtype in (
        (ops_per_step, np.int64), (kinds, np.int8), (flags, np.int8), (peers, np.int64),
        (starts, np.int64), (stops, np.int64))))


def rank_ops(schedule: Schedule, rank: int, values: Values,
             columns: LaneColumns | None = None, lanes: Sequence[Any] | None = None,
             steps: Sequence[Step] | None = None) -> RankOps:
    """Return the operations of ``rank`` as columns.

    Parameters
    ----------
    schedule : Schedule
        The schedule.
    rank : int
        A rank in ``0..nranks-1``.
    values : Values
        The converter of lanes' starts and stops, shared by every rank of the schedule.
    columns, lanes, steps : optional
        What the caller read of the rank already, not read again:
        ``schedule.lane_columns(rank)``; or, where that is None, ``schedule.lanes(rank)``
        or ``schedule.steps(rank)``.

    Returns
    -------
    RankOps
        Read from the rank's lanes when the schedule has lanes of sends and receives,
        otherwise from its steps.
    """
    if schedule.lane_columns is not None and schedule.lane_starts is not None \
            and lanes is None and steps is None:
        if columns is None:
            columns = schedule.lane_columns(rank)
        starts = None if columns is None else schedule.lane_starts(rank)
        read = None if starts is None else _from_columns(columns, starts)
        if read is not None:
            return read
    if schedule.lanes is not None and steps is None:
        read = _from_lanes(schedule.lanes(rank) if lanes is None else lanes, values)
        if read is not None:
            return read
    return _from_steps(schedule.steps(rank) if steps is None else steps)


@njit(cache=True)
def first_faulty_step(step_ptr, kind, flags, peer, start, stop, count):
    """Return the first step of one rank's columns that breaks a step check of
    :func:`collectives.verify` (an operation out of bounds, two writes that overlap, a
    read of a range another operation writes but for a send of what a reducing receive
    reduces into), or -1."""
    n = len(kind)
    wlo = np.empty(n, dtype=np.int64)
    whi = np.empty(n, dtype=np.int64)
    wop = np.empty(n, dtype=np.int64)
    slo = np.empty(n, dtype=np.int64)
    shi = np.empty(n, dtype=np.int64)
    sop = np.empty(n, dtype=np.int64)
    for s in range(len(step_ptr) - 1):
        lo, hi = step_ptr[s], step_ptr[s + 1]
        nw = 0
        for i in range(lo, hi):
            a, b = start[i], stop[i]
            if not (0 <= a and a <= b and b <= count):
                return s
            if kind[i] == 2:
                d = peer[i]
                if not (0 <= d and d <= count - (b - a)):
                    return s
                a, b = d, d + b - a
            elif kind[i] == 0:
                continue
            if a < b:
                wlo[nw], whi[nw], wop[nw] = a, b, i
                nw += 1
        if nw <= _INSERTED:
            _insert_sorted(wlo, whi, wop, nw, slo, shi, sop)
        else:
            order = np.argsort(wlo[:nw], kind="mergesort")
            for j in range(nw):
                slo[j], shi[j], sop[j] = wlo[order[j]], whi[order[j]], wop[order[j]]
        for j in range(1, nw):
            if slo[j] < shi[j - 1]:
                return s
        for i in range(lo, hi):
            if kind[i] == 1:
                continue
            j = np.searchsorted(shi[:nw], start[i], side="right")  # the first that ends after
            while j < nw and slo[j] < stop[i]:
                w = sop[j]
                if w != i and not (kind[i] == 0 and flags[w] & 1):
                    return s
                j += 1
    return -1


@njit(cache=True)
def _insert_sorted(lo, hi, op, n, slo, shi, sop):
    """The first ``n`` of ``lo``, ``hi`` and ``op`` into ``slo``, ``shi`` and ``sop``,
    sorted by ``lo``, ties in their order (a stable sort: what a mergesort gives, without
    its allocation, for the step's few writes)."""
    for i in range(n):
        j = i
        while j and slo[j - 1] > lo[i]:
            slo[j], shi[j], sop[j] = slo[j - 1], shi[j - 1], sop[j - 1]
            j -= 1
        slo[j], shi[j], sop[j] = lo[i], hi[i], op[i]


def ends_of(ops: RankOps, nranks: int, elements: int) -> tuple[np.ndarray, ...]:
    """Return one rank's ends per step, and its ends' sides, peers and lengths.

    Parameters
    ----------
    ops : RankOps
        The rank's columns, within bounds (:func:`first_faulty_step` finds no fault).
    nranks : int
        The ranks of the schedule.
    elements : int
        The working buffer's elements (no length exceeds them).

    Returns
    -------
    tuple of ndarray
        Ends per step (int32), whether each is a send (bool), peers (int32, -1 for one
        outside ``0..nranks-1``) and lengths (int32 where ``elements`` fit, else int64).
    """
    n = int(np.count_nonzero(ops.kind != COPY))
    ends: tuple[np.ndarray, ...] = (
        np.zeros(len(ops.step_ptr) - 1, dtype=np.int32), np.empty(n, dtype=np.bool_),
        np.empty(n, dtype=np.int32), np.empty(n, dtype=_index_dtype(elements)))
    _ends(ops.step_ptr, ops.kind, ops.peer, ops.start, ops.stop, nranks, *ends)
    return ends


def peers_known(ops: RankOps, rank: int, nranks: int) -> bool:
    """Return whether every send and receive of ``rank``'s columns names another rank of
    the ``nranks`` (what :func:`bad_peer` finds over every rank's ends).

    Parameters
    ----------
    ops : RankOps
        The rank's columns.
    rank : int
        The rank.
    nranks : int
        The ranks of the schedule.

    Returns
    -------
    bool
    """
    peers = ops.peer[ops.kind != COPY]
    return not np.any((peers < 0) | (peers >= nranks) | (peers == rank))


def _index_dtype(most: int) -> type:
    """int32 for values up to ``most`` where it fits, else int64 (half the memory for the
    tens of millions of message ends of 4,096 ranks)."""
    return np.int32 if most <= np.iinfo(np.int32).max else np.int64


@njit(cache=True)
def _ends(step_ptr, kind, peer, start, stop, nranks, per_step, is_send, peers, length):
    """Fill ``per_step``, ``is_send``, ``peers`` and ``length`` (:func:`ends_of`)."""
    e = 0
    for s in range(len(step_ptr) - 1):
        for i in range(step_ptr[s], step_ptr[s + 1]):
            if kind[i] != 2:
                per_step[s] += 1
                is_send[e] = kind[i] == 0
                peers[e] = peer[i] if 0 <= peer[i] < nranks else -1
                length[e] = stop[i] - start[i]
                e += 1


class Matched(NamedTuple):
    """Every send paired with its receive, and the first of each kind of fault.

    Attributes
    ----------
    partner_step : ndarray of int32
        The step of each end's partner at the partner's rank (-1 for none).
    bad_send, bad_send_k, bad_send_partner : int
        The first send without a receive of its length, in program order (rank by rank,
        step by step), its place among its pair's sends, and the receive it is paired
        with (-1 for none); -1 for no such send.
    bad_recv, bad_recv_k : int
        The first receive without a send, and its place among its pair's receives; -1
        for none.
    """

    partner_step: np.ndarray
    bad_send: int
    bad_send_k: int
    bad_send_partner: int
    bad_recv: int
    bad_recv_k: int


def bad_peer(step_ptr: np.ndarray, end_ptr: np.ndarray, peer: np.ndarray) -> int:
    """Return the first end whose peer is not another rank of the schedule, or -1.

    Parameters
    ----------
    step_ptr, end_ptr : ndarray of int64
        Each rank's global steps and each global step's ends.
    peer : ndarray of int32
        Each end's peer (-1 for one outside the ranks).

    Returns
    -------
    int
    """
    return int(_bad_peer(step_ptr, end_ptr, peer))


def match(step_ptr: np.ndarray, end_ptr: np.ndarray, is_send: np.ndarray, peer: np.ndarray,
          length: np.ndarray) -> Matched:
    """Pair the k-th send from ``a`` to ``b`` with the k-th receive at ``b`` from ``a``.

    Parameters
    ----------
    step_ptr, end_ptr : ndarray of int64
        Each rank's global steps and each global step's ends.
    is_send : ndarray of bool
        Whether each end sends (else it receives).
    peer : ndarray of int32
        Each end's peer, another rank (:func:`bad_peer` finds none).
    length : ndarray of int32 or int64
        Each end's elements.

    Returns
    -------
    Matched
    """
    p = len(step_ptr) - 1
    none = np.empty(0, dtype=np.int32)
    if p * p <= _DENSE_PAIRS:  # each end's pair looked up by its ranks as it is met
        dense = np.full(p * p, -1, dtype=np.int32)
        pair, npairs = none, _number_pairs(step_ptr, end_ptr, is_send, peer, dense)
    else:
        found, inverse = np.unique(_pair_keys(step_ptr, end_ptr, is_send, peer),
                                   return_inverse=True)
        dense, pair, npairs = none, inverse.ravel().astype(np.int32), len(found)
    partner_step = np.empty(len(peer), dtype=np.int32)
    faults = _match(step_ptr, end_ptr, is_send, peer, length, pair, dense, npairs,
                    partner_step,
                    np.empty(int(np.count_nonzero(is_send)), dtype=_index_dtype(len(peer))))
    return Matched(partner_step, *faults.tolist())


@njit(cache=True)
def _bad_peer(step_ptr, end_ptr, peer):
    p = len(step_ptr) - 1
    for r in range(p):
        for e in range(end_ptr[step_ptr[r]], end_ptr[step_ptr[r + 1]]):
            if peer[e] < 0 or peer[e] >= p or peer[e] == r:
                return e
    return -1


@njit(cache=True)
def _pair_keys(step_ptr, end_ptr, is_send, peer):
    """Each end's ordered pair of ranks, ``src * p + dst``."""
    p = len(step_ptr) - 1
    keys = np.empty(len(peer), dtype=np.int64)
    for r in range(p):
        for e in range(end_ptr[step_ptr[r]], end_ptr[step_ptr[r + 1]]):
            keys[e] = r * p + peer[e] if is_send[e] else peer[e] * p + r
    return keys


@njit(cache=True)
def _number_pairs(step_ptr, end_ptr, is_send, peer, dense):
    """Number the ends' ordered pairs of ranks in the order first met, in ``dense`` (-1
    per ordered pair on entry); return how many there are."""
    p = len(step_ptr) - 1
    n = 0
    for r in range(p):
        for e in range(end_ptr[step_ptr[r]], end_ptr[step_ptr[r + 1]]):
            key = r * p + peer[e] if is_send[e] else peer[e] * p + r
            if dense[key] < 0:
                dense[key] = n
                n += 1
    return n


@njit(cache=True, inline="always")
def _pair_of(r, e, is_send, peer, p, pair, dense):
    """The number of the ordered pair of end ``e`` of rank ``r`` of ``p``: ``pair[e]``, or
    where ``pair`` is empty, looked up in ``dense`` (:func:`_number_pairs`)."""
    if len(pair):
        return pair[e]
    return dense[r * p + peer[e] if is_send[e] else peer[e] * p + r]


@njit(cache=True)
def _match(step_ptr, end_ptr, is_send, peer, length, pair, dense, npairs, partner_step,
           send_at):
    """Pair the ``k``-th send of each ordered pair of ranks with its ``k``-th receive, in
    program order: fill ``partner_step`` (:class:`Matched`; ``send_at`` holds the sends,
    pair by pair) and return the first bad send, its ``k`` and partner, and the first
    bad receive and its ``k`` (-1 for none); pairs numbered as :func:`_pair_of` finds."""
    p = len(step_ptr) - 1
    sends = np.zeros(npairs + 1, dtype=np.int64)  # where each pair's sends start in send_at
    for r in range(p):
        for e in range(end_ptr[step_ptr[r]], end_ptr[step_ptr[r + 1]]):
            if is_send[e]:
                sends[_pair_of(r, e, is_send, peer, p, pair, dense) + 1] += 1
    for i in range(npairs):
        sends[i + 1] += sends[i]
    taken = np.zeros(npairs, dtype=np.int64)  # per pair, the sends placed, then matched
    for r in range(len(step_ptr) - 1):
        for g in range(step_ptr[r], step_ptr[r + 1]):
            for e in range(end_ptr[g], end_ptr[g + 1]):
                if is_send[e]:
                    q = _pair_of(r, e, is_send, peer, p, pair, dense)
                    send_at[sends[q] + taken[q]] = e
                    taken[q] += 1
                    partner_step[e] = g - step_ptr[r]  # its own step until it is matched
    taken[:] = 0
    faults = np.full(5, -1, dtype=np.int64)
    for r in range(len(step_ptr) - 1):
        for g in range(step_ptr[r], step_ptr[r + 1]):
            for e in range(end_ptr[g], end_ptr[g + 1]):
                if is_send[e]:
                    continue
                q = _pair_of(r, e, is_send, peer, p, pair, dense)
                if sends[q] + taken[q] == sends[q + 1]:  # no send left for it
                    partner_step[e] = -1
                    if faults[3] < 0:
                        faults[3], faults[4] = e, taken[q]
                    continue
                s = send_at[sends[q] + taken[q]]
                if length[s] != length[e] and (faults[0] < 0 or s < faults[0]):
                    faults[0], faults[1], faults[2] = s, taken[q], e
                partner_step[e], partner_step[s] = partner_step[s], g - step_ptr[r]
                taken[q] += 1
    for q in range(npairs):  # the sends left without a receive
        for i in range(sends[q] + taken[q], sends[q + 1]):
            partner_step[send_at[i]] = -1
            if faults[0] < 0 or send_at[i] < faults[0]:
                faults[0], faults[1], faults[2] = send_at[i], i - sends[q], -1
    return faults


@njit(cache=True)
def progress(step_ptr, end_ptr, peer, partner_step):
    """Complete steps as :func:`collectives.progress.completion_order` does (a step
    completes once every peer it exchanges with has reached the partner's step); return
    how many steps each rank completed."""
    p = len(step_ptr) - 1
    current = np.zeros(p, dtype=np.int64)
    queue = np.arange(p)
    queued = np.ones(p, dtype=np.bool_)
    head, size = 0, p
    while size:
        r = queue[head]
        head = (head + 1) % p
        size -= 1
        queued[r] = False
        if current[r] == step_ptr[r + 1] - step_ptr[r]:
            continue
        g = step_ptr[r] + current[r]
        blocked = False
        for e in range(end_ptr[g], end_ptr[g + 1]):
            if current[peer[e]] < partner_step[e]:
                blocked = True
                break
        if blocked:
            continue
        current[r] += 1
        if not queued[r]:
            queued[r] = True
            queue[(head + size) % p] = r
            size += 1
        if current[r] < step_ptr[r + 1] - step_ptr[r]:
            for e in range(end_ptr[g + 1], end_ptr[g + 2]):
                o = peer[e]
                if not queued[o]:
                    queued[o] = True
                    queue[(head + size) % p] = o
                    size += 1
    return current
