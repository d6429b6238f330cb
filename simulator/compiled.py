"""The event engine of :mod:`simulator.engine`, compiled with Numba for large schedules.

The same simulation, event for event: :mod:`simulator.engine` documents the model
(rendezvous start, bytes over max-min fair shared links, latency less what FIFO slots
hide, reduction at the receiver, LogGP overhead) and is the reference; this module plays
the flat arrays of :func:`simulator.flatten.flatten` through the same steps, with the
same event order (an instant's events run in the order they were scheduled), the same
progressive filling and the same floating-point operations, so both give the same result.  It exists because a
Python event costs microseconds: a 1024-rank AllReduce of 1 GiB is millions of
transfers.

Its one departure: a transfer whose route has no link and no latency (two ranks placed
on one device) arrives through an event at the same instant rather than inside the
call that started it; times are the same.  Its one shortcut: twins, messages started one
after another on one route with the same bytes and reduction (a tree's or rhd's pieces of
a segment, one per rank's block), share one flow slot, one end and one arrival event
(:func:`_twin`), which the event engine runs as the same events one after another: the
sharing then gathers and fixes a slot rather than each message (8-channel tree
ReduceScatter on 1,024 ranks: 4.5 messages a slot, its engine 3 times faster).

State lives in a few arrays of rows, one row per link, rank, route hop or *flow slot*:
two-dimensional arrays (the columns are named below) or, where a row holds integers and
floats, NumPy records, so that what one event reads of a link or a slot is one row, one
or two cache lines, rather than a row of integers and another of floats (the sharing's
own fields are in rows of their own).  The rows an event reads of a link, a rank and a
route start on a cache line; what an event will read, written or read long before (the
instant's next event, the bytes an arrival reduces, a rank's next step), is asked for
ahead (:func:`_prefetch`).
Pending events wait in a queue per instant, the instants in a heap and a hash table by
time: a symmetric schedule has hundreds of events per instant, so most events cost a
look-up, not a heap's dozen levels.  A rank's steps and a message's bytes and whether it
reduces are read from the :class:`~simulator.flatten.FlatSchedule` without a copy, laid
out round by round and messages in the order the rounds meet them, so that what the
ranks read at about the same time lies together, on a few pages (a page per rank and
per route was a miss of the TLB, the cache of the page table, per read); a step names
its messages.  What changes while a message moves (bytes
left, rate, its place on its links' lists) lives in a slot taken when it starts and given
back when its last byte leaves, so that the memory touched grows with the flows in flight
(thousands), not with the messages (millions): touching fresh memory costs about as much
as the arithmetic.  The functions on the path of every event, the event loop
:func:`_run` among them, are compiled without Numba's reference counting (``_nrt=False``:
they allocate nothing): a function with it counts a reference to every array it passes
in a call, and these calls pass a dozen, which took a third of the time, in the
functions themselves first and then in the loop that called them.
Only :func:`_share` (its sorts) and :func:`_simulate` allocate; :func:`_run` returns to
:func:`_simulate` when the arrays need room or the sharing is due.  The sharing first
gathers the component it recomputes into dense rows of its own (:func:`_component`),
each flow's route read as the flow is found, and keeps the links by fair share as a
sorted run and a small heap of the links whose share changed before their turn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .flatten import FlatSchedule
from .jit import empty, larger, smaller, zeros
from .jit import njit_once as _njit

__all__ = ["run_compiled"]


# event kinds
_FLOW_END, _ARRIVE, _OP_DONE, _START, _RECEIVE_DONE, _SHARE = range(6)
# counters
_TRANSFERS, _SHARE_PENDING, _STAMP, _DIRTY, _ARRIVED, _EVENTS, _ON_LINKS, _FREE, \
    _HOPS_PER_SLOT, _FREE_EVENT, _FREE_INSTANT, _INSTANTS, _TABLE_SIZE, _SEEDS, _MARKS, \
    _TWINS, _LAST_STARTED, _UNEVEN = range(18)
# why :func:`_run` returns
_DONE, _ROOM, _SHARE_DUE = range(3)
# an arrival's ``b`` is ``count * _ONE + 2 * route + reduce``: the twins' messages arriving
# together (:func:`_twin`), the first the event's ``a``
_ONE = 1 << 32
# The pending events: a queue per instant (in the order they were scheduled), the instants
# in a binary heap by time and in a hash table by time (open addressing, linear probing).
# Two flat arrays, each cut in parts of its own (capacity ``c``, a power of two: ``len(HT)
# == 2 * c``), so that what one push or pop reads of each part is packed with its
# neighbours': the heap and the table, read a dozen times an instant, stay in the nearest
# cache (a 4096-rank ring makes an instant every other event).
# HT, float64: each instant's time (c), then each heap entry's time (c).
# HE, int64: per event (4 c), its kind, two arguments and the next event of its instant
# (or of the free events); per instant (2 c), its first and last event (the first: the
# next free instant, while free); per heap entry (c), its instant (entries below
# counters[_INSTANTS]); the hash table (2 c, places below counters[_TABLE_SIZE], a power
# of two at least twice the instants): instant + 1, 0 for an empty place
_EVENT_KIND, _EVENT_A, _EVENT_B, _EVENT_NEXT = range(4)
_FIRST_EVENT, _LAST_EVENT = range(2)
# S, the steps (read only, :attr:`FlatSchedule.steps`): per step, a head (negative: the
# distance back to the rank's next step's head), then each end's ``2 * message + side``
# (0 send, 1 receive); the last entry, -1, is the head after every rank's last step.
# M, int64 per message (read only, :attr:`FlatSchedule.message`): ``2 * bytes + reduce``;
# MR, per message (read only, :attr:`FlatSchedule.message_route`): its route; P, int8 per
# message: whether one of its ends is posted (the second end posted starts it)
# PC, int64 per route (a row of 16 bytes): its ranks (:attr:`FlatSchedule.route_ranks`)
_SRC, _DST = range(2)
# MF, float64 per message, only with an overhead or a trace (else no rows): when the send
# may go (overhead), start, arrival
_READY, _BEGIN, _ARRIVAL = range(3)
# F, a record per flow slot (what starting and ending a flow read and write, in one row):
# message (``2 * message + reduce``: the arrival's ``b`` without a look at M), route,
# rate version (never reset: a stale end of the slot's earlier flows never matches), place
# in the dirty list (-1: not dirty), the twins it holds (messages ``message >> 1`` on,
# :func:`_twin`), each message's bytes, bytes left, rate, when the rate was set
_SLOT = np.dtype([("message", np.int64), ("route", np.int64), ("version", np.int64),
                  ("dirty_at", np.int32), ("count", np.int32), ("bytes", np.int64),
                  ("left", np.float64), ("rate", np.float64), ("last", np.float64)])
# FS, a record per flow slot, read by the sharing only: in the component (stamp), its
# index there
_SLOT_SHARING = np.dtype([("in_component", np.int64), ("index", np.int64)])
# W, a record per flow of the component (the sharing's scratch, indexed by the flow's
# place in the component, so that the filling reads dense rows, not slots, 40 bytes): the
# rate being computed (-1 until fixed), flow slot, route, its binding links
# (``E[first:end, _FLOW_LINKS]``); two lists of places in the component (the search's
# stack, the fixing order); the slot's flows (twins) and how many of them are fixed
_COMPONENT_FLOW = np.dtype([("new_rate", np.float64), ("slot", np.int32), ("route", np.int32),
                            ("first", np.int32), ("end", np.int32), ("stack", np.int32),
                            ("order", np.int32), ("count", np.int32), ("fixed", np.int32)])
# E, int32 per flow on a binding link: the binding links' flows (places in the component,
# each link's in the order of its list) and each flow's binding links (places in LQ, in
# route order)
_LINK_FLOWS, _FLOW_LINKS = range(2)
# RT, float64 per route: latency, bottleneck bandwidth, shares (simulator.gpu.route_shares)
_LATENCY, _CAP, _SHARES = range(3)
# L, a record per link (what starting and ending a flow read and write, in one row): flows
# on it, first and last flow node, the sharing's round (counters[_MARKS]) in which every
# flow on it was marked dirty (none since: an end of one of them marks nothing new; a flow
# that joins it clears it), bytes, summed caps of its flows, busy since, busy time,
# bandwidth
_LINK = np.dtype([("nflows", np.int64), ("head", np.int32), ("tail", np.int32),
                  ("marked", np.int64), ("bytes", np.int64), ("load", np.float64),
                  ("since", np.float64), ("busy", np.float64), ("bandwidth", np.float64)])
# LS, a record per link, read by the sharing only: seen (stamp), its place among the
# binding links (-1: not binding)
_LINK_SHARING = np.dtype([("seen", np.int64), ("binding", np.int64)])
# RS, a record per route, read by the sharing only: seen (stamp), the binding links of
# the component's first flow on it (``E[first:end, _FLOW_LINKS]``), which every later flow
# on it shares: flows of a route are many (a message over several runs of the buffer is a
# transfer per run, and a pipeline keeps several segments in flight on each route)
_ROUTE_SHARING = np.dtype([("seen", np.int64), ("first", np.int64), ("end", np.int64)])
# B, a record per binding link of the component (the sharing's scratch, by the link's
# place): the link, its flows (``E[first:end, _LINK_FLOWS]``), those not yet fixed, the
# capacity left, its first fair share
_BINDING = np.dtype([("link", np.int64), ("first", np.int64), ("end", np.int64),
                     ("unfixed", np.int64), ("capacity", np.float64), ("key", np.float64)])
# LQ, int64 per link: the heap's links (by place in the heap: the links whose fair share
# changed before their turn)
_HEAP_LINK = 0
# N, int32 per hop node (a flow on one link of its route; the slot's nodes are
# ``slot * counters[_HOPS_PER_SLOT] + hop``): next, previous, flow slot
_NEXT, _PREV, _FLOW = range(3)
# R, a record per rank: its next step (where its head is in S; the last entry once done),
# operations pending, finish time, when its CPU is free of overheads (half a cache line,
# so two ranks share a line and none straddles two: see _CACHE_LINE)
_RANK = np.dtype([("current", np.int64), ("pending", np.int64), ("finish", np.float64),
                  ("cpu_free", np.float64)])
# the bytes of a cache line: the records an event reads (L, R, PC) start at a multiple of it,
# so that each is one line, not two (NumPy aligns an array to 16 bytes only)
_CACHE_LINE = 64


@intrinsic
def _bits(typingctx, x):
    """The bits of float64 ``x`` as an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the CPU to bring the cache line of ``array[index]`` in, for a read soon: a hint
    (``llvm.prefetch``), which never faults, even past the array's end, and changes no
    result."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        address = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        int32 = ir.IntType(32)
        hint = ir.Function(builder.module, ir.FunctionType(
            ir.VoidType(), (address.type, int32, int32, int32)), "llvm.prefetch") \
            if "llvm.prefetch" not in builder.module.globals \
            else builder.module.globals["llvm.prefetch"]
        builder.call(hint, (address, int32(0), int32(3), int32(1)))  # read, keep, data
        return context.get_dummy_value()
    return types.none(array, types.int64), codegen


@_njit(_nrt=False)
def _slot(when, size):
    """The first place to look for the instant at ``when`` in a hash table of ``size``."""
    bits = _bits(when) * -7046029254386353131  # Fibonacci hashing: the high bits mix all
    return (bits >> 32) & (size - 1)


@_njit(_nrt=False)
def _event(e):
    """Where event ``e``'s row starts in ``HE``."""
    return 4 * e


@_njit(_nrt=False)
def _instant(HT, i):
    """Where instant ``i``'s first and last event are in ``HE``."""
    return 2 * len(HT) + 2 * i


@_njit(_nrt=False)
def _heap(HT, j):
    """Where heap entry ``j``'s instant is in ``HE`` (its time: ``HT[_heap_time(HT, j)]``)."""
    return 3 * len(HT) + j


@_njit(_nrt=False)
def _heap_time(HT, j):
    """Where heap entry ``j``'s time is in ``HT``."""
    return (len(HT) >> 1) + j


@_njit(_nrt=False)
def _table(HT, place):
    """Where the hash table's ``place`` is in ``HE``."""
    return 3 * len(HT) + (len(HT) >> 1) + place


@_njit(_nrt=False)
def _rehash(HT, HE, counters, size):
    """Make the hash table ``size`` places (``len(HT)`` at most) and put every instant in."""
    counters[_TABLE_SIZE] = size
    for place in range(size):
        HE[_table(HT, place)] = 0
    for j in range(counters[_INSTANTS]):
        place = _slot(HT[_heap_time(HT, j)], size)
        while HE[_table(HT, place)]:
            place = (place + 1) & (size - 1)
        HE[_table(HT, place)] = HE[_heap(HT, j)] + 1


@_njit(_nrt=False)
def _sift_up(HT, HE, j, when, instant):
    """Put ``instant`` at ``when`` in the heap's hole ``j``, or above it."""
    while j:
        parent = (j - 1) >> 1
        if HT[_heap_time(HT, parent)] <= when:
            break
        HT[_heap_time(HT, j)] = HT[_heap_time(HT, parent)]
        HE[_heap(HT, j)] = HE[_heap(HT, parent)]
        j = parent
    HT[_heap_time(HT, j)] = when
    HE[_heap(HT, j)] = instant


@_njit(_nrt=False)
def _push(HT, HE, counters, when, kind, a, b):
    """Schedule an event: last of its instant's, the instant made if new
    (:func:`_simulate` keeps room)."""
    counters[_LAST_STARTED] = -1  # a message started after this event is no twin
    e = counters[_FREE_EVENT]
    row = _event(e)
    counters[_FREE_EVENT] = HE[row + _EVENT_NEXT]
    counters[_EVENTS] += 1
    HE[row + _EVENT_KIND], HE[row + _EVENT_A], HE[row + _EVENT_B] = kind, a, b
    HE[row + _EVENT_NEXT] = -1
    mask = counters[_TABLE_SIZE] - 1
    place = _slot(when, mask + 1)
    while HE[_table(HT, place)]:
        instant = HE[_table(HT, place)] - 1
        if HT[instant] == when:
            at = _instant(HT, instant)
            HE[_event(HE[at + _LAST_EVENT]) + _EVENT_NEXT] = e
            HE[at + _LAST_EVENT] = e
            return
        place = (place + 1) & mask
    instant = counters[_FREE_INSTANT]
    at = _instant(HT, instant)
    counters[_FREE_INSTANT] = HE[at + _FIRST_EVENT]
    HT[instant] = when
    HE[at + _FIRST_EVENT] = HE[at + _LAST_EVENT] = e
    HE[_table(HT, place)] = instant + 1
    counters[_INSTANTS] += 1
    _sift_up(HT, HE, counters[_INSTANTS] - 1, when, instant)
    if 2 * counters[_INSTANTS] > counters[_TABLE_SIZE]:
        _rehash(HT, HE, counters, 2 * counters[_TABLE_SIZE])


@_njit(_nrt=False)
def _forget(HT, HE, counters, instant):
    """Take ``instant`` out of the hash table (moving back the entries probed past it)."""
    mask = counters[_TABLE_SIZE] - 1
    hole = _slot(HT[instant], mask + 1)
    while HE[_table(HT, hole)] != instant + 1:
        hole = (hole + 1) & mask
    place = hole
    while True:
        place = (place + 1) & mask
        if not HE[_table(HT, place)]:
            break
        home = _slot(HT[HE[_table(HT, place)] - 1], mask + 1)
        if (place > hole and (home <= hole or home > place)) or \
                (place < hole and home <= hole and home > place):
            HE[_table(HT, hole)] = HE[_table(HT, place)]
            hole = place
    HE[_table(HT, hole)] = 0


@_njit(_nrt=False)
def _pop(HT, HE, counters):
    """Take the first pending event; return its time, kind and arguments."""
    counters[_LAST_STARTED] = -1
    now, instant = HT[_heap_time(HT, 0)], HE[_heap(HT, 0)]
    at = _instant(HT, instant)
    e = HE[at + _FIRST_EVENT]
    row = _event(e)
    kind, a, b = HE[row + _EVENT_KIND], HE[row + _EVENT_A], HE[row + _EVENT_B]
    if HE[row + _EVENT_NEXT] >= 0:
        HE[at + _FIRST_EVENT] = HE[row + _EVENT_NEXT]
        _prefetch(HE, _event(HE[row + _EVENT_NEXT]))  # scheduled long ago: out of cache
    else:  # the instant's last event: the instant goes
        _forget(HT, HE, counters, instant)
        HE[at + _FIRST_EVENT] = counters[_FREE_INSTANT]
        counters[_FREE_INSTANT] = instant
        n = counters[_INSTANTS] - 1
        counters[_INSTANTS] = n
        j = 0
        while True:  # Floyd's way: the hole down to a leaf along the earlier children
            child = 2 * j + 1
            if child >= n:
                break
            if child + 1 < n and HT[_heap_time(HT, child + 1)] < HT[_heap_time(HT, child)]:
                child += 1
            HT[_heap_time(HT, j)] = HT[_heap_time(HT, child)]
            HE[_heap(HT, j)] = HE[_heap(HT, child)]
            j = child
        if n:  # and the heap's last instant up from there (the latest, mostly: not far)
            _sift_up(HT, HE, j, HT[_heap_time(HT, n)], HE[_heap(HT, n)])
    HE[row + _EVENT_NEXT] = counters[_FREE_EVENT]
    counters[_FREE_EVENT] = e
    counters[_EVENTS] -= 1
    return now, kind, a, b


@_njit()
def _agenda(capacity, HT, HE, counters):
    """The pending events' arrays with room for ``capacity`` events (a power of two), the
    events of ``HT`` and ``HE`` (empty at first) kept."""
    old = len(HT) >> 1
    grown_T = empty(2 * capacity, np.float64)
    grown_E = zeros(9 * capacity, np.int64)
    for i in range(old):  # loops: numba compiles a slice assignment's shape error (seconds)
        grown_T[i] = HT[i]
        grown_T[_heap_time(grown_T, i)] = HT[_heap_time(HT, i)]
        grown_E[_heap(grown_T, i)] = HE[_heap(HT, i)]
        for column in range(4):
            grown_E[_event(i) + column] = HE[_event(i) + column]
        for column in range(2):
            grown_E[_instant(grown_T, i) + column] = HE[_instant(HT, i) + column]
    for i in range(old, capacity):  # the new rows: free events and free instants
        grown_E[_event(i) + _EVENT_NEXT] = i + 1
        grown_E[_instant(grown_T, i) + _FIRST_EVENT] = i + 1
    grown_E[_event(capacity - 1) + _EVENT_NEXT] = counters[_FREE_EVENT] if old else -1
    grown_E[_instant(grown_T, capacity - 1) + _FIRST_EVENT] = \
        counters[_FREE_INSTANT] if old else -1
    counters[_FREE_EVENT] = counters[_FREE_INSTANT] = old
    _rehash(grown_T, grown_E, counters, larger(16, counters[_TABLE_SIZE]))
    return grown_T, grown_E


@_njit(_nrt=False)
def _request_share(now, HT, HE, counters):
    if counters[_SHARE_PENDING] == 0:
        counters[_SHARE_PENDING] = 1
        _push(HT, HE, counters, now + 0.0, _SHARE, 0, 0)


@_njit(_nrt=False)
def _mark_dirty(f, counters, F, D):
    if F[f].dirty_at < 0:
        F[f].dirty_at = counters[_DIRTY]
        D[counters[_DIRTY]] = f
        counters[_DIRTY] += 1


@_njit(_nrt=False)
def _start_transfer(t, route, now, HT, HE, counters, M, MF, F, D, free_slots, RT, hops, L,
                    N):
    """Start message ``t`` of ``route``: put it on its links, at its cap if none of them
    binds (in a flow slot from ``free_slots``, which :func:`_simulate` keeps stocked), or
    in the slot of the message started just before as its twin (:func:`_twin`)."""
    code = M[t]
    nbytes = code >> 1
    counters[_TRANSFERS] += 1
    if len(MF):
        MF[t, _BEGIN] = now
    first, last = hops[route], hops[route + 1]
    if nbytes == 0 or first == last:
        _push(HT, HE, counters, now + RT[route, _LATENCY], _ARRIVE, t,
              _ONE + 2 * route + (code & 1))
        return
    free = True
    cap = RT[route, _CAP]
    for h in range(last - first):
        link = hops[len(RT) + 1 + first + h]
        if L[link].nflows == 0:
            L[link].since = now
            L[link].load = cap
        else:
            L[link].load += cap
            if L[link].load > L[link].bandwidth:
                free = False
        L[link].marked = 0  # the flow joins it unmarked
        L[link].nflows += 1
        L[link].bytes += nbytes
    f = counters[_LAST_STARTED]
    if f >= 0 and _twin(f, t, route, code, free, F):
        F[f].count += 1
        return
    counters[_FREE] -= 1
    f = free_slots[counters[_FREE]]
    F[f].message, F[f].route, F[f].bytes = 2 * t + (code & 1), route, nbytes
    F[f].count = 1
    F[f].left = float(nbytes)
    F[f].rate = 0.0
    F[f].last = now
    counters[_ON_LINKS] += 1
    for h in range(last - first):
        link = hops[len(RT) + 1 + first + h]
        node = f * counters[_HOPS_PER_SLOT] + h  # appended to the link's flows, in order
        N[node, _FLOW] = f
        N[node, _NEXT] = -1
        tail = L[link].tail
        N[node, _PREV] = tail
        if tail >= 0:
            N[tail, _NEXT] = node
        else:
            L[link].head = node
        L[link].tail = node
    if free:
        F[f].rate = cap
        F[f].version += 1
        _push(HT, HE, counters, now + F[f].left / cap, _FLOW_END, f, F[f].version)
    else:
        _mark_dirty(f, counters, F, D)
        _request_share(now, HT, HE, counters)
    if counters[_TWINS]:
        counters[_LAST_STARTED] = f  # after its pushes: the next start may be its twin


@_njit(_nrt=False)
def _twin(f, t, route, code, free, F):
    """Whether message ``t`` (``M[t] == code``), started just after the messages of slot
    ``f`` with nothing scheduled or done in between, is their twin: the next message, on
    the same route, of the same bytes and reduction, and as free of binding links.  From
    then on the twins are on the same links, one after the other in each link's flows,
    always at the same rate, and end together: a slot holds them all (``F[f].count``),
    its one end standing for their ends, which the event engine runs one after another."""
    return F[f].route == route and F[f].bytes == code >> 1 \
        and F[f].message & 1 == code & 1 and (F[f].message >> 1) + F[f].count == t \
        and (F[f].rate > 0) == free


@_njit(_nrt=False)
def _spend(rank, now, overhead, R):
    """Charge ``rank`` one message's overhead; return when its CPU is done."""
    done = larger(R[rank].cpu_free, now) + overhead
    R[rank].cpu_free = done
    return done


@_njit(_nrt=False)
def _start_at(when, t, route, now, HT, HE, counters, M, MF, F, D, free_slots, RT, hops, L,
              N):
    delay = when - now
    if delay > 0:
        _push(HT, HE, counters, now + delay, _START, t, route)
    else:
        _start_transfer(t, route, now, HT, HE, counters, M, MF, F, D, free_slots, RT, hops,
                        L, N)


@_njit(_nrt=False)
def _post(rank, now, overhead, HT, HE, counters, S, M, MR, P, MF, PC, F, D, free_slots, RT,
          hops, L, N, R):
    """Post ``rank``'s next step: start each message whose other end is posted."""
    index = R[rank].current
    if index == len(S) - 1:
        R[rank].finish = now
        return
    e = index + 1
    while S[e] >= 0:
        t, side = np.int64(S[e] >> 1), S[e] & 1  # one type: _start_transfer compiles once
        route = np.int64(MR[t])
        e += 1
        if side == 0:  # the send
            ready = _spend(rank, now, overhead, R) if overhead else 0.0
            if not P[t]:
                P[t] = 1
                if overhead:
                    MF[t, _READY] = ready
            elif overhead:
                _start_at(ready, t, route, now, HT, HE, counters, M, MF, F, D, free_slots, RT,
                          hops, L, N)
            else:
                _start_transfer(t, route, now, HT, HE, counters, M, MF, F, D, free_slots, RT,
                                hops, L, N)
        elif not P[t]:
            P[t] = 1
        elif overhead:
            _start_at(MF[t, _READY], t, route, now, HT, HE, counters, M, MF, F, D, free_slots,
                      RT, hops, L, N)
        else:
            _start_transfer(t, route, now, HT, HE, counters, M, MF, F, D, free_slots, RT, hops,
                            L, N)
    R[rank].pending = e - index - 1
    R[rank].current = index - S[index]
    _prefetch(S, R[rank].current)


@_njit(_nrt=False)
def _op_done(rank, now, overhead, HT, HE, counters, S, M, MR, P, MF, PC, F, D, free_slots,
             RT, hops, L, N, R):
    """One operation of ``rank``'s current step is done; post the next step when all are."""
    R[rank].pending -= 1
    if R[rank].pending == 0:
        _post(rank, now, overhead, HT, HE, counters, S, M, MR, P, MF, PC, F, D, free_slots,
              RT, hops, L, N, R)


@_njit(_nrt=False)
def _set_rate(f, rate, now, HT, HE, counters, F):
    if F[f].rate:
        F[f].left = larger(F[f].left - F[f].rate * (now - F[f].last), 0.0)
    F[f].last = now
    F[f].rate = rate
    F[f].version += 1
    if rate > 0:  # a zero share (rounding) waits for the next recomputation
        _push(HT, HE, counters, now + F[f].left / rate, _FLOW_END, f, F[f].version)


@_njit(_nrt=False)
def _link_before(LK, LQ, i, j):
    """Whether heap entry ``i`` comes before ``j``: smaller fair share, then link index."""
    return LK[i] < LK[j] or (LK[i] == LK[j] and LQ[i, _HEAP_LINK] < LQ[j, _HEAP_LINK])


@_njit(_nrt=False)
def _earlier_child(LK, LQ, i, n):
    """The earlier child of heap entry ``i`` in a heap of ``n`` entries; ``n`` if none."""
    child = 2 * i + 1
    if child >= n:
        return n
    if child + 1 < n and _link_before(LK, LQ, child + 1, child):
        return child + 1
    return child


@_njit(_nrt=False)
def _sift_down(LK, LQ, i, n):
    while True:
        child = _earlier_child(LK, LQ, i, n)
        if child == n or not _link_before(LK, LQ, child, i):
            return
        LK[i], LK[child] = LK[child], LK[i]
        LQ[i, _HEAP_LINK], LQ[child, _HEAP_LINK] = LQ[child, _HEAP_LINK], LQ[i, _HEAP_LINK]
        i = child


@_njit(_nrt=False)
def _pop_link(LK, LQ, n):
    """Drop the first entry of the link heap of ``n`` entries; return the new size.

    Floyd's way: the hole goes down to a leaf along the earlier children (one comparison
    a level, where sifting the last entry down from the top takes two), and the last
    entry goes up from there (rarely far).  The heap's layout may differ from a sift
    down's, but not what it yields: its first entry is always the earliest (fair share,
    then link index, and no two entries share a link)."""
    n -= 1
    hole = 0
    while True:
        child = _earlier_child(LK, LQ, hole, n)
        if child == n:
            break
        LK[hole], LQ[hole, _HEAP_LINK] = LK[child], LQ[child, _HEAP_LINK]
        hole = child
    LK[hole], LQ[hole, _HEAP_LINK] = LK[n], LQ[n, _HEAP_LINK]
    _sift_link_up(LK, LQ, hole)
    return n


@_njit(_nrt=False)
def _sift_link_up(LK, LQ, hole):
    """Move the link heap's entry at ``hole`` up past the entries it comes before."""
    while hole and _link_before(LK, LQ, hole, (hole - 1) >> 1):
        parent = (hole - 1) >> 1
        LK[hole], LK[parent] = LK[parent], LK[hole]
        LQ[hole, _HEAP_LINK], LQ[parent, _HEAP_LINK] = LQ[parent, _HEAP_LINK], \
            LQ[hole, _HEAP_LINK]
        hole = parent


@_njit(_nrt=False)
def _run_first(B, b, LK, LQ):
    """Whether binding link ``b`` at its first fair share comes before the heap's first."""
    return B[b].key < LK[0] or (B[b].key == LK[0] and B[b].link < LQ[0, _HEAP_LINK])


@_njit(_nrt=False)
def _push_link(LK, LQ, n, key, link):
    """Add ``link`` at ``key`` to the link heap of ``n`` entries; return the new size."""
    hole = n
    LK[hole], LQ[hole, _HEAP_LINK] = key, link
    _sift_link_up(LK, LQ, hole)
    return n + 1


@_njit(_nrt=False)
def _radix_pass(order, spare, digits, counts):
    """Order ``order``'s entries into ``spare`` by ``digits[entry]`` (below
    ``len(counts)``), stably; return False, leaving ``spare`` as it was, when every entry
    has the same digit."""
    n = len(order)
    for d in range(len(counts)):
        counts[d] = 0
    for i in range(n):
        counts[digits[order[i]]] += 1
    if counts[digits[order[0]]] == n:
        return False
    total = 0
    for d in range(len(counts)):
        counts[d], total = total, total + counts[d]
    for i in range(n):
        entry = order[i]
        spare[counts[digits[entry]]] = entry
        counts[digits[entry]] += 1
    return True


@_njit()
def _key_ranks(B, n):
    """Each of the places ``0..n-1`` of ``B``'s first fair share ranked among the distinct
    ones (0 the smallest), and the count of distinct shares: they are found through a
    hash table of their bits, so that sorting costs as many shares as there are
    distinct, few where links of one bandwidth carry like counts of flows."""
    size = 1 << int(np.ceil(np.log2(2 * n)))
    table = empty(size, np.int64)  # a distinct share's place + 1; 0: an empty place
    for h in range(size):
        table[h] = 0
    distinct, ranks = empty(n, np.float64), empty(n, np.int64)
    ndistinct = 0
    for b in range(n):
        bits = _bits(B[b].key)
        h = ((bits ^ (bits >> 31)) * -7046029254386353131 >> 20) & (size - 1)
        while table[h] and _bits(distinct[table[h] - 1]) != bits:  # linear probing
            h = (h + 1) & (size - 1)
        if not table[h]:
            distinct[ndistinct] = B[b].key
            ndistinct += 1
            table[h] = ndistinct
        ranks[b] = table[h] - 1  # for now the share's place in distinct
    place_rank = empty(ndistinct, np.int64)
    by_share = _stable_order(distinct[:ndistinct])
    for rank in range(ndistinct):
        place_rank[by_share[rank]] = rank
    for b in range(n):
        ranks[b] = place_rank[ranks[b]]
    return ranks, ndistinct


@_njit()
def _by_key(B, n):
    """The places ``0..n-1`` of ``B`` by first fair share, then link index: the order of
    the link heap's entries, found by a least significant digit radix sort: the link
    index a byte a pass (passes whose byte is the same for every link skipped), then the
    share's rank among the distinct shares (:func:`_key_ranks`) in one pass."""
    order, spare = empty(n, np.int64), empty(n, np.int64)
    digits, counts = empty(n, np.int64), empty(256, np.int64)
    most = 0
    for b in range(n):
        order[b] = b
        most = larger(most, B[b].link)
    shift = 0
    while most >> shift:
        for b in range(n):
            digits[b] = (B[b].link >> shift) & 255
        if _radix_pass(order, spare, digits, counts):
            order, spare = spare, order
        shift += 8
    ranks, ndistinct = _key_ranks(B, n)
    if _radix_pass(order, spare, ranks, empty(ndistinct, np.int64)):
        order = spare
    return order


@_njit()
def _stable_order(values):
    """The places ``0..len(values)-1`` by value, equal values in place order.

    A merge sort of its own, bottom up: numba's ``np.argsort(kind="mergesort")`` took
    seconds to compile, and a stable sort has one result."""
    n = len(values)
    order, keys = empty(n, np.int64), empty(n, np.float64)
    for i in range(n):
        order[i] = i
        keys[i] = values[i]
    merged, merged_keys = empty(n, np.int64), empty(n, np.float64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = smaller(lo + width, n), smaller(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j == hi or (i < mid and keys[i] <= keys[j]):  # the left run first on ties
                    merged[k], merged_keys[k] = order[i], keys[i]
                    i += 1
                else:
                    merged[k], merged_keys[k] = order[j], keys[j]
                    j += 1
        order, merged = merged, order
        keys, merged_keys = merged_keys, keys
        width *= 2
    return order


@_njit()
def _by_cap(routes, RT):
    """The places ``0..len(routes)-1`` by their route's bottleneck bandwidth (stable)."""
    caps = empty(len(routes), np.float64)
    for i in range(len(routes)):
        caps[i] = RT[routes[i], _CAP]
    return _stable_order(caps)


@_njit(_nrt=False)
def _component(nseeds, counters, F, FS, W, E, RT, hops, L, LS, RS, N, B):
    """Gather the flows joined to the seeds (``W[:nseeds].stack``, flow slots) through
    binding links into ``W`` and the binding links into ``B`` (capacity, flows and first
    fair share; their flows and each route's binding links into ``E``, which the route's
    flows share), in the order of a depth-first search; return the counts of flows and of
    binding links and the least cap of a flow."""
    nroutes = len(RT)
    counters[_STAMP] += 1
    stamp = counters[_STAMP]
    for i in range(nseeds):
        s = W[i].stack
        FS[s].in_component = stamp
        FS[s].index = i
        W[i].slot = s
        W[i].route = F[s].route
        W[i].count = F[s].count
        W[i].fixed = 0
        W[i].new_rate = -1.0
        W[i].stack = i
    ncomp = depth = nseeds
    nbinding = nlisted = nrouted = 0
    least_cap = np.inf
    while depth:
        depth -= 1
        c = W[depth].stack
        r = W[c].route
        if RS[r].seen == stamp:  # its links are seen: its flows they join are found
            W[c].first, W[c].end = RS[r].first, RS[r].end
            continue
        RS[r].seen = stamp
        least_cap = smaller(least_cap, RT[r, _CAP])
        W[c].first = nrouted
        for i in range(hops[r], hops[r + 1]):  # the route's links, asked for together
            _prefetch(LS, hops[nroutes + 1 + i])
            _prefetch(L, hops[nroutes + 1 + i])
        for i in range(hops[r], hops[r + 1]):
            link = hops[nroutes + 1 + i]
            if LS[link].seen != stamp:
                LS[link].seen = stamp
                LS[link].binding = -1
                if L[link].nflows > 1 and L[link].load > L[link].bandwidth:
                    LS[link].binding = nbinding
                    B[nbinding].link = link
                    B[nbinding].capacity = L[link].bandwidth
                    B[nbinding].unfixed = L[link].nflows
                    B[nbinding].key = B[nbinding].capacity / B[nbinding].unfixed
                    B[nbinding].first = nlisted
                    node = L[link].head
                    while node >= 0:
                        other = N[node, _FLOW]
                        if FS[other].in_component != stamp:
                            FS[other].in_component = stamp
                            FS[other].index = ncomp
                            W[ncomp].slot = other
                            W[ncomp].route = F[other].route  # loaded while the list is
                            W[ncomp].count = F[other].count
                            W[ncomp].fixed = 0
                            W[ncomp].new_rate = -1.0
                            W[depth].stack = ncomp
                            ncomp += 1
                            depth += 1
                        E[nlisted, _LINK_FLOWS] = FS[other].index
                        nlisted += 1
                        node = N[node, _NEXT]
                    B[nbinding].end = nlisted
                    nbinding += 1
            if LS[link].binding >= 0:
                E[nrouted, _FLOW_LINKS] = LS[link].binding
                nrouted += 1
        W[c].end = nrouted
        RS[r].first, RS[r].end = W[c].first, nrouted
    return ncomp, nbinding, least_cap


@_njit(_nrt=False)
def _fix(c, count, fair, W, E, B):
    """Fix ``count`` flows of place ``c`` of the component (twins) at ``fair``: each takes
    its share of its binding links, one after another."""
    W[c].new_rate = fair
    W[c].fixed += count
    for e in range(W[c].first, W[c].end):
        b = E[e, _FLOW_LINKS]
        for _ in range(count):
            B[b].capacity = larger(B[b].capacity - fair, 0.0)
        B[b].unfixed -= count


@_njit()
def _share(nseeds, now, HT, HE, counters, F, FS, W, E, RT, hops, L, LS, RS, N, B, LK, LQ):
    """Max-min fair rates of the flows joined to the seeds (``W[:nseeds].stack``)
    through binding links: progressive filling, as :meth:`simulator.engine._Engine.share`,
    with the links' fair shares in an array heap (``LK`` keys, ``LQ[:, _HEAP_LINK]``).

    The component is gathered first (:func:`_component`), so that the filling reads its
    flows and links from dense rows rather than from the slots and the links' lists."""
    ncomp, nbinding, least_cap = _component(nseeds, counters, F, FS, W, E, RT, hops, L, LS,
                                            RS, N, B)
    # the links in order of their first fair share (a run), and a heap of those whose
    # share changed before their turn: together, the order of one heap of every link
    run = _by_key(B, nbinding) if nbinding else empty(0, np.int64)
    at = heap = 0
    by_cap = empty(0, np.int64)  # sorted when first read: most sharings never are
    nfixed = 0
    next_cap = 0
    partial = -1  # a slot of twins fixed in part, at their cap (:func:`_twin`)
    while True:
        fair, b, in_run = np.inf, -1, False
        while at < nbinding or heap:  # the earliest link: dropped if done, re-keyed if stale
            if at < nbinding and (not heap or _run_first(B, run[at], LK, LQ)):
                b, in_run = run[at], True
                fair = B[b].key
            else:
                b, in_run = LS[LQ[0, _HEAP_LINK]].binding, False
                fair = LK[0]
            left = B[b].unfixed
            if left and B[b].capacity / left == fair:
                break
            if in_run:
                at += 1
                if left:
                    heap = _push_link(LK, LQ, heap, B[b].capacity / left, B[b].link)
            elif left:
                LK[0] = B[b].capacity / left
                _sift_down(LK, LQ, 0, heap)
            else:
                heap = _pop_link(LK, LQ, heap)
            b = -1
        # whether a flow's cap may come before the fair share (else by_cap is not read)
        by_caps = b < 0 or least_cap < fair
        if by_caps:
            if b < 0 and nfixed == ncomp and partial < 0:  # every flow fixed
                break
            if len(by_cap) < ncomp:
                by_cap = _by_cap(W[:ncomp].route, RT)
            while next_cap < ncomp and W[by_cap[next_cap]].fixed == W[by_cap[next_cap]].count:
                next_cap += 1
        if by_caps and next_cap < ncomp and (
                b < 0 or RT[W[by_cap[next_cap]].route, _CAP] < fair):
            # one flow at its cap (the next of its twins, if any, comes next)
            c = by_cap[next_cap]
            fair = RT[W[c].route, _CAP]
            if W[c].fixed == 0:
                W[nfixed].order = c
                nfixed += 1
            _fix(c, np.int64(1), fair, W, E, B)
            partial = c if W[c].fixed < W[c].count else -1
        elif b >= 0:
            if partial >= 0:  # twins at two rates: the run is played again without twins
                counters[_UNEVEN] = 1
                return
            if in_run:
                at += 1
            else:
                heap = _pop_link(LK, LQ, heap)
            first = nfixed
            for e in range(B[b].first, B[b].end):
                c = E[e, _LINK_FLOWS]
                if W[c].new_rate < 0:
                    W[nfixed].order = c
                    nfixed += 1
            for j in range(first, nfixed):
                c = np.int64(W[j].order)  # one type: _fix compiles once
                _fix(c, np.int64(W[c].count), fair, W, E, B)
        else:
            break
    for j in range(nfixed):
        c = W[j].order
        f = np.int64(W[c].slot)  # one type: _set_rate and _push compile once
        if W[c].new_rate != F[f].rate:
            _set_rate(f, W[c].new_rate, now, HT, HE, counters, F)


@_njit(_nrt=False)
def _flow_end(f, version, now, fifo_slot, HT, HE, counters, M, F, D, free_slots, RT,
              hops, L, N):
    """The last byte of the flows in slot ``f`` left, unless their rate changed since this
    end was scheduled; the slot is free again.  The messages arrive after the route's
    latency less what FIFO slots of ``fifo_slot`` bytes hide, the route's shares of a slot
    (:func:`simulator.gpu.hidden_latency`, the same operations; ``fifo_slot`` inf: none).

    Twins (``F[f].count`` flows) leave each link one after another, as their ends one
    after another would, except that none of them is marked dirty as it waits for its
    own end: such a mark was undone by that end before the sharing read it."""
    if version != F[f].version:
        return
    counters[_ON_LINKS] -= 1
    shared = False
    route, message, count = F[f].route, F[f].message, F[f].count
    cap = RT[route, _CAP]
    first = hops[route]
    for h in range(hops[route + 1] - first):
        link = hops[len(RT) + 1 + first + h]
        node = f * counters[_HOPS_PER_SLOT] + h
        before, after = N[node, _PREV], N[node, _NEXT]
        if before >= 0:
            N[before, _NEXT] = after
        else:
            L[link].head = after
        if after >= 0:
            N[after, _PREV] = before
        else:
            L[link].tail = before
        for _ in range(count):
            L[link].nflows -= 1
            if L[link].nflows == 0:
                L[link].busy += now - L[link].since
                L[link].load = 0.0
            else:
                if L[link].load > L[link].bandwidth:  # the flows left may speed up
                    if L[link].marked != counters[_MARKS]:  # else all are marked: n ends, not n**2
                        other = L[link].head
                        while other >= 0:
                            _mark_dirty(np.int64(N[other, _FLOW]), counters, F, D)  # one type
                            other = N[other, _NEXT]
                        L[link].marked = counters[_MARKS]
                    shared = True
                L[link].load -= cap
    if F[f].dirty_at >= 0:  # no longer a seed of the sharing
        D[F[f].dirty_at] = -1
        F[f].dirty_at = -1
    free_slots[counters[_FREE]] = f
    counters[_FREE] += 1
    if shared:
        _request_share(now, HT, HE, counters)
    nbytes = F[f].bytes
    if message & 1:  # the arrival reads the bytes it reduces
        _prefetch(M, message >> 1)
    unit = nbytes if fifo_slot == np.inf else smaller(nbytes, fifo_slot) / RT[route, _SHARES]
    latency = larger(0.0, RT[route, _LATENCY] - larger(0.0, nbytes - unit) / cap)
    _push(HT, HE, counters, now + latency, _ARRIVE, message >> 1,
          count * _ONE + 2 * route + (message & 1))


@_njit()
def _slots(n, hops_per_slot, F, FS, N, free_slots, nfree):
    """The flow slots' arrays grown to ``n`` slots (new slots free, taken first); a first
    call is given empty arrays.  Return them and the new count of free slots."""
    old = len(F)
    grown_F = zeros(n, _SLOT)
    grown_FS = zeros(n, _SLOT_SHARING)
    grown_N = empty((n * hops_per_slot, 3), np.int32)
    grown_free = empty(n, np.int64)
    for slot in range(old):  # loops: numba compiles a slice assignment's shape error (seconds)
        grown_F[slot] = F[slot]
        grown_FS[slot] = FS[slot]
    for slot in range(old, n):
        grown_F[slot].dirty_at = -1
    for node in range(len(N)):
        for column in range(3):
            grown_N[node, column] = N[node, column]
    for i in range(nfree):
        grown_free[i] = free_slots[i]
    for i in range(n - old):
        grown_free[nfree + i] = n - 1 - i
    return grown_F, grown_FS, grown_N, grown_free, nfree + n - old


@_njit(_nrt=False)
def _arrive(a, b, now, gamma, overhead, HT, HE, counters, S, M, MR, P, MF, PC, F, D, free_slots,
            RT, hops, L, N, R, trace_order):
    """Message ``a`` of route ``b >> 1`` arrived (reducing if ``b & 1``): complete the send;
    complete the receive, or spend the overhead or reduce first."""
    if len(MF):
        MF[a, _ARRIVAL] = now
    if len(trace_order):
        trace_order[counters[_ARRIVED]] = a
    counters[_ARRIVED] += 1
    _op_done(PC[b >> 1, _SRC], now, overhead, HT, HE, counters, S, M, MR, P, MF, PC, F,
             D, free_slots, RT, hops, L, N, R)
    if overhead:
        delay = _spend(PC[b >> 1, _DST], now, overhead, R) - now
        _push(HT, HE, counters, now + delay, _RECEIVE_DONE, a, b)
        return
    cost = gamma * (M[a] >> 1) if b & 1 else 0.0
    if not cost:
        _op_done(PC[b >> 1, _DST], now, overhead, HT, HE, counters, S, M, MR, P, MF, PC,
                 F, D, free_slots, RT, hops, L, N, R)
    else:
        _push(HT, HE, counters, now + cost, _OP_DONE, PC[b >> 1, _DST], 1)


@_njit(_nrt=False)
def _arrived(a, count, b, now, PC, MF, R, trace_order, counters):
    """Messages ``a`` to ``a + count - 1`` of route ``b >> 1`` arrived, twins that are not
    their step's last at the sender (:func:`_twin`: their last one is still to arrive):
    each completes a send, which completes no step, as :func:`_arrive` would."""
    for t in range(a, a + count):
        if len(MF):
            MF[t, _ARRIVAL] = now
        if len(trace_order):
            trace_order[counters[_ARRIVED]] = t
        counters[_ARRIVED] += 1
    R[PC[b >> 1, _SRC]].pending -= count


@_njit(_nrt=False)
def _run(gamma, overhead, fifo_slot, S, M, MR, P, MF, PC, RT, hops, L, R, HT, HE, counters, F,
         W, D, N, free_slots, trace_order, most_ends):
    """Run events until none is left (return :data:`_DONE`), until one might not find room
    in the arrays (:data:`_ROOM`: :func:`_simulate` grows them), or until the sharing is
    due (:data:`_SHARE_DUE`: its ``counters[_SEEDS]`` seeds in ``W[:].stack``); return
    that and the time."""
    while counters[_EVENTS]:
        # room for what one event may schedule: an end per flow whose rate changes, and
        # the starts of two ranks' next steps (each in a slot, each maybe dirty)
        if counters[_EVENTS] + counters[_ON_LINKS] + 4 * most_ends + 16 > len(HT) >> 1 \
                or counters[_FREE] < 2 * most_ends + 2 \
                or counters[_DIRTY] + counters[_ON_LINKS] + 2 * most_ends + 16 > len(D):
            return _ROOM, 0.0
        now, kind, a, b = _pop(HT, HE, counters)
        if kind == _FLOW_END:
            _flow_end(a, b, now, fifo_slot, HT, HE, counters, M, F, D, free_slots, RT,
                      hops, L, N)
        elif kind == _ARRIVE:  # b // _ONE messages from a on, of route b % _ONE >> 1
            count, b = b // _ONE, b % _ONE
            if count > 1 and not overhead and b & 1 and gamma * (M[a] >> 1):
                # twins that reduce: each arrival but the last completes a send of the
                # sender's step and schedules the reduction, as one event for them all
                _arrived(a, count - 1, b, now, PC, MF, R, trace_order, counters)
                _push(HT, HE, counters, now + gamma * (M[a] >> 1), _OP_DONE, PC[b >> 1, _DST],
                      count - 1)
                a, count = a + count - 1, 1
            for i in range(count):  # as the event engine's arrivals, one after another
                counters[_LAST_STARTED] = -1
                _arrive(a + i, b, now, gamma, overhead, HT, HE, counters, S, M, MR, P,
                        MF, PC, F, D, free_slots, RT, hops, L, N, R, trace_order)
        elif kind == _OP_DONE:  # b operations of rank a
            for _ in range(b):
                _op_done(a, now, overhead, HT, HE, counters, S, M, MR, P, MF, PC, F, D,
                         free_slots, RT, hops, L, N, R)
        elif kind == _START:
            _start_transfer(a, b, now, HT, HE, counters, M, MF, F, D, free_slots, RT, hops,
                            L, N)
        elif kind == _RECEIVE_DONE:
            cost = gamma * (M[a] >> 1) if b & 1 else 0.0
            if cost:
                _push(HT, HE, counters, now + cost, _OP_DONE, PC[b >> 1, _DST], 1)
            else:
                _op_done(PC[b >> 1, _DST], now, overhead, HT, HE, counters, S, M, MR, P, MF, PC,
                         F, D, free_slots, RT, hops, L, N, R)
        else:  # _SHARE: the dirty flows (all on links: an ended flow leaves the list) seed it
            counters[_SHARE_PENDING] = 0
            nseeds = 0
            for i in range(counters[_DIRTY]):
                f = D[i]
                if f >= 0:
                    F[f].dirty_at = -1
                    W[nseeds].stack = f
                    nseeds += 1
            counters[_DIRTY] = 0
            counters[_MARKS] += 1  # no flow is marked now
            if nseeds:
                counters[_SEEDS] = nseeds
                return _SHARE_DUE, now
    return _DONE, 0.0


@_njit(entry=True)
def _simulate(gamma, overhead, fifo_slot, S, M, MR, P, MF, PC, RT, hops, L, LS, RS, R, LK, LQ,
              B, trace_order, hops_per_slot, twins):
    """Run every event (:func:`_run`, which this gives room and the sharing); return the
    counters (``counters[_UNEVEN]``: stopped, twins would have taken two rates; twins are
    kept in one slot only if ``twins``)."""
    counters = zeros(18, np.int64)
    counters[_HOPS_PER_SLOT] = hops_per_slot
    counters[_MARKS] = 1  # a link marked 0: not all its flows are marked
    counters[_TWINS] = twins
    counters[_LAST_STARTED] = -1
    most_ends = 0  # a loop: numba compiles np.diff and np.max for a second
    run = 0
    for i in range(len(S)):
        run = run + 1 if S[i] >= 0 else 0
        most_ends = larger(most_ends, run)
    HT, HE = _agenda(1 << int(np.ceil(np.log2(1024 + len(R) * (2 * most_ends + 2)))),
                     empty(0, np.float64), empty(0, np.int64), counters)  # every first step
    # slots for every rank's first step; the dirty list and the sharing's scratch lists
    # have room for every slot's flow and what one event adds
    F, FS, N, free_slots, counters[_FREE] = _slots(
        1024 + len(R) * most_ends, hops_per_slot, empty(0, _SLOT),
        empty(0, _SLOT_SHARING), empty((0, 3), np.int32),
        empty(0, np.int64), 0)
    W = empty(len(F), _COMPONENT_FLOW)
    E = empty((len(F) * hops_per_slot, 2), np.int32)
    D = empty(2 * len(F) + 4 * most_ends + 16, np.int64)
    now = 0.0
    for rank in range(len(R)):
        _post(rank, now, overhead, HT, HE, counters, S, M, MR, P, MF, PC, F, D, free_slots,
              RT, hops, L, N, R)
    while True:
        done, now = _run(gamma, overhead, fifo_slot, S, M, MR, P, MF, PC, RT, hops, L, R, HT, HE,
                         counters, F, W, D, N, free_slots, trace_order, most_ends)
        if done == _DONE:
            return counters
        if done == _SHARE_DUE:
            _share(counters[_SEEDS], now, HT, HE, counters, F, FS, W, E, RT, hops, L, LS, RS, N,
                   B, LK, LQ)
            if counters[_UNEVEN]:
                return counters
            continue
        while counters[_EVENTS] + counters[_ON_LINKS] + 4 * most_ends + 16 > len(HT) >> 1:
            HT, HE = _agenda(len(HT), HT, HE, counters)
        if counters[_FREE] < 2 * most_ends + 2:
            F, FS, N, free_slots, counters[_FREE] = _slots(
                2 * len(F), hops_per_slot, F, FS, N, free_slots, counters[_FREE])
            W = empty(len(F), _COMPONENT_FLOW)
            E = empty((len(F) * hops_per_slot, 2), np.int32)
        if counters[_DIRTY] + counters[_ON_LINKS] + 2 * most_ends + 16 > len(D):
            grown_D = empty(2 * len(D) + 2 * len(F), np.int64)
            for i in range(len(D)):  # a loop: np.concatenate compiles a function of its own
                grown_D[i] = D[i]
            D = grown_D


def _aligned_zeros(n: int, dtype: np.dtype) -> np.ndarray:
    """``np.zeros(n, dtype)`` starting at a multiple of :data:`_CACHE_LINE` bytes."""
    buffer = np.zeros(n * dtype.itemsize + _CACHE_LINE, dtype=np.uint8)
    start = -buffer.ctypes.data % _CACHE_LINE
    return buffer[start:start + n * dtype.itemsize].view(dtype)


def run_compiled(flat: FlatSchedule, gamma: float, overhead: float,
                 trace: bool, slot: float = float("inf"),
                 twins: bool = True) -> tuple[Any, ...] | None:
    """Simulate ``flat``.

    Messages started one after another on a route, of the same bytes and reduction
    (twins, e.g. a ring's pieces of one block), are played as one flow of many
    (:func:`_twin`), which changes no event's time or order.  In the sharing they take the
    same rate, unless rounding makes a share fall to a flow's cap between two of them
    (never seen): the run then stops and is played again, each message a flow.

    Parameters
    ----------
    flat : FlatSchedule
        From :func:`simulator.flatten.flatten`.
    gamma : float
        Seconds per byte reduced.
    overhead : float
        LogGP per-message CPU overhead in seconds.
    trace : bool
        Whether to return every transfer's times.
    slot : float, optional
        Bytes of a FIFO slot (:func:`simulator.gpu.hidden_latency`; default inf: every
        message pays its route's full latency).
    twins : bool, optional
        Whether twins share a flow (default True; False plays each message as a flow of
        its own, the same result).

    Returns
    -------
    tuple or None
        None when some rank did not finish (a deadlock, which the event engine then
        diagnoses); else ``(transfer_count, rank_finish, link_bytes, link_busy,
        transfers)``, ``transfers`` being ``(order, start, arrival)`` (message indices in
        order of arrival, each message's start and arrival times) or None unless
        ``trace``.
    """
    messages = len(flat.message)
    PC = _aligned_zeros(2 * len(flat.route_ranks), np.dtype(np.int64)).reshape(-1, 2)
    PC[:, _SRC], PC[:, _DST] = flat.route_ranks[:, 0], flat.route_ranks[:, 1]
    RT = np.stack((flat.route_latency, flat.route_cap, flat.route_shares), axis=1)
    hops = np.concatenate((flat.route_ptr, flat.route_links))
    LK = np.empty(len(flat.bandwidth))  # the link heap of the sharing: written before read
    LQ = np.empty((len(flat.bandwidth), 1), dtype=np.int64)
    B = np.empty(len(flat.bandwidth), dtype=_BINDING)
    hops_per_slot = int(np.diff(flat.route_ptr).max(initial=0))
    while True:
        MF = np.empty((messages if trace or overhead else 0, 3))
        P = np.zeros(messages, dtype=np.int8)
        L = _aligned_zeros(len(flat.bandwidth), _LINK)
        L["bandwidth"] = flat.bandwidth
        L["head"] = L["tail"] = -1
        LS = np.zeros(len(flat.bandwidth), dtype=_LINK_SHARING)
        RS = np.zeros(len(flat.route_cap), dtype=_ROUTE_SHARING)
        R = _aligned_zeros(len(flat.rank_start), _RANK)
        R["current"] = flat.rank_start
        order = np.empty(messages if trace else 0, dtype=np.int64)  # written before read
        counters = _simulate(float(gamma), float(overhead), float(slot), flat.steps,
                             flat.message, flat.message_route, P, MF, PC, RT, hops, L, LS, RS,
                             R, LK, LQ, B, order, hops_per_slot, int(twins))
        if not counters[_UNEVEN]:
            break
        twins = False
    if (R["current"] != len(flat.steps) - 1).any() or R["pending"].any():
        return None
    transfers = (order[:counters[_ARRIVED]], MF[:, _BEGIN], MF[:, _ARRIVAL]) if trace else None
    return (int(counters[_TRANSFERS]), R["finish"], L["bytes"], L["busy"],
            transfers)
