"""Messages sharing links: max-min fair fills and each link's queue on its own,
as the simulator's flows share them."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from .budgets import PAIRED_PASSES
from .units import RUN_KINDS


def _filled_ends(start: np.ndarray, nbytes: np.ndarray, cap: np.ndarray, on: np.ndarray,
                 capacity: np.ndarray, transfers: np.ndarray | None = None) -> np.ndarray:
    """When each of a round's messages that share links is through, as the simulator's
    links carry them together: each from its own ``start`` with ``nbytes`` to carry
    (messages x sizes; never started at infinity: -inf; with ``transfers``, as many
    transfers of ``nbytes`` each, side by side), at max-min fair rates over the links
    it is ``on`` (messages x links; ``capacity``: links x sizes) and its own ``cap``
    (its route's bottleneck), set again whenever one starts or ends.  A pass per start
    and end; each a progressive filling (:func:`_max_min`).  Compiled
    (:func:`.filling._ends`), a size at a time: NumPy's passes over all sizes at once
    took 1.3 of the 3.4 CPU s of the AllGather table on ``default_flat(128)`` with its
    4- and 16-segment trees played finely (:data:`.budgets.FINE_MESSAGES`)."""
    from .filling import _ends  # Numba, imported where messages share links only
    if not len(start):
        return np.full(start.shape, -np.inf)
    incidence = _incidence(on)
    return _ends(_dense(start, len(start), start.shape[1]),
                 _dense(nbytes, len(start), start.shape[1]),
                 _dense(cap, len(start), start.shape[1]), incidence.starts, incidence.links,
                 _dense(capacity, len(capacity), start.shape[1]),
                 _dense(1.0 if transfers is None else transfers, len(start), start.shape[1]))


def _grouped_ends(start: np.ndarray, nbytes: np.ndarray, cap: np.ndarray, on: np.ndarray,
                  capacity: np.ndarray,
                  groups: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """:func:`_filled_ends` of messages in ``groups`` (:func:`_partners`: each message's
    group, each group's first message, each group's partners) of one size, all links and
    caps alike.  A group's messages share their links and cap, so they go at the same
    rate: where a group's messages start together and carry alike, a group of ``k``
    carries as one message of ``k`` times the bytes, at half the speed while a partner
    group is in flight (a link's two groups' ``2 k`` messages each at ``1 / (2 k)``),
    else at full speed (each at ``1 / k``): :func:`_paired_ends`.  Where they carry
    unlike (one element apart over channels at an uneven count, or some not sent), a
    group goes so as its messages' bytes together, its smaller ones through first, up
    to the first time the progressive filling gives a group more or less than half a
    link (:func:`_unlike_ends`, :func:`_anchored`), and the fill's events from then
    (:func:`_resumed_ends`; on ``default_flat(40)`` over 3 channels at 2 segments,
    ReduceScatter at 4,099 elements, 18 of the 78 rounds, near their ends: 125 events
    of the fill's 3,614 from the rounds' starts); the fill's events throughout where the
    ends did not settle."""
    group, first, partners = groups
    never = np.isinf(start)
    work = np.where(never, 0.0, nbytes / cap)  # (an empty message is not sent)
    lead_start, lead_work = start[first], work[first]
    # (never started: infinity in both, alike)
    alike = ((start == lead_start[group]) & (work == lead_work[group])).all(axis=0)
    members = np.argsort(group, kind="stable").reshape(len(first), -1)
    # a group's sent messages start together (both ends' clocks are theirs)
    began = np.where(never, np.inf, start)[members].min(axis=1)
    unlike = ~alike & (never | (start == began[group])).all(axis=0)
    end = np.empty(start.shape)
    settled = np.zeros(start.shape[1], dtype=bool)
    if alike.any():
        ends, settled[alike] = _paired_ends(lead_start[:, alike],
                                            members.shape[1] * lead_work[:, alike], partners)
        end[:, alike] = ends[group]
    if unlike.any():
        columns = np.flatnonzero(unlike)
        taken = members[:, :, None], columns  # groups x messages x sizes
        ends, settled[unlike], since, left = _unlike_ends(began[:, unlike], work[taken],
                                                          partners)
        end[taken] = np.where(never[taken], -np.inf, ends)
        resumed = settled[unlike] & np.isfinite(since)
        if resumed.any():
            rest = np.empty((len(start), int(resumed.sum())))
            rest[members] = left[:, :, resumed]
            columns = columns[resumed]
            cap_at = cap[:, columns]
            end[:, columns] = _resumed_ends(end[:, columns], since[resumed], rest * cap_at,
                                            start[:, columns], nbytes[:, columns], cap_at,
                                            on, capacity[:, columns])
    if not settled.all():
        apart = ~settled
        end[:, apart] = _filled_ends(start[:, apart], nbytes[:, apart], cap[:, apart], on,
                                     capacity[:, apart])
    return end


def _resumed_ends(end: np.ndarray, since: np.ndarray, left: np.ndarray, start: np.ndarray,
                  nbytes: np.ndarray, cap: np.ndarray, on: np.ndarray,
                  capacity: np.ndarray) -> np.ndarray:
    """The ``end`` of messages (messages x sizes; as :func:`_filled_ends`' others) that
    are exact up to ``since`` (per size), carried on from then by the fill: those in
    flight then with the bytes they have ``left`` (none: through by then, their ends
    kept), those that start later (``start``) with their ``nbytes`` (most of a round's
    messages are through by the first time a group of :func:`_grouped_ends` takes
    more or less than half a link, so the fill takes a few of its events)."""
    late = start > since
    going = ~late & (left > 0)
    filled = _filled_ends(np.where(going, since, np.where(late, start, np.inf)),
                          np.where(going, left, nbytes), cap, on, capacity)
    return np.where(going | late, filled, end)


def _unlike_ends(start: np.ndarray, work: np.ndarray,
                 partners: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`_grouped_ends` of groups whose messages carry unlike (``work``: each
    message's bytes' time alone, groups x messages x sizes, nothing where not sent),
    each group from its ``start`` (groups x sizes; never: infinity): each group at
    half a link while a partner is in flight, else all of it, so that its messages,
    going at the same rate, are through one after another as the group has carried
    the smaller ones whole and as much of each of the others (:func:`_paired_ends`,
    :func:`_paired_pass`).  Each message's end (as ``work``); per size whether those
    ends settled and the first time the progressive filling gives some group more or
    less (:func:`_anchored`; infinity: never, the ends are the fill's), and each
    message's bytes' time left then (as ``work``; where its group has started)."""
    count, many, sizes = work.shape
    order = np.argsort(work, axis=1, kind="stable")
    ranked = np.take_along_axis(work, order, axis=1)
    # the group's carried bytes' time as its j-th smallest is through
    carried = np.cumsum(ranked, axis=1) + (many - 1 - np.arange(many))[:, None] * ranked
    ends, settled = _paired_ends(start, carried[:, -1], partners)
    began, ended = _partner_spans(start, ends, partners)
    each = np.repeat(np.arange(count), many)
    with np.errstate(invalid="ignore"):  # a group never started: inf - inf, left out
        through = _paired_pass(start[each], (start[:, None] + carried).reshape(-1, sizes),
                               began[each], ended[each]).reshape(count, many, sizes)
    through = np.where(np.isinf(start)[:, None, :], -np.inf, through)
    since = _anchored(start, np.where(ranked > 0, through, -np.inf), partners)
    # what each message has left at that time: the group's carried bytes' time then
    # is its smaller ones' whole and as much of each of the others
    at = np.where(np.isfinite(since), since, 0.0)[None, :]
    with np.errstate(invalid="ignore"):
        done = np.maximum(at - start - _busy(at, began, ended) / 2.0, 0.0)[:, None]
    whole = carried <= done
    level = (done[:, 0] - np.where(whole, ranked, 0.0).sum(axis=1)) \
        / np.maximum((~whole).sum(axis=1), 1)
    left = np.where(whole, 0.0, ranked - level[:, None])
    out, rest = np.empty(work.shape), np.empty(work.shape)
    np.put_along_axis(out, order, through, axis=1)
    np.put_along_axis(rest, order, left, axis=1)
    return out, settled, since, rest


def _anchored(start: np.ndarray, through: np.ndarray, partners: np.ndarray) -> np.ndarray:
    """Per size the first time the progressive filling gives some group of a round
    other than half of a link while a partner is in flight, else all of it (infinity:
    never), where each group's messages are through at ``through`` (groups x messages
    x sizes; -inf where one carries nothing) from its ``start``: it gives those rates
    while every group in flight with a partner in flight (``partners``, groups x 2,
    the pad the number of groups) has one with at least as many messages in flight,
    so that their link fills at their messages' smallest fair share (each group at
    half; the progressive filling's end is the one allocation where every message has
    such a link or its cap).  Checked at every start and end of a group's and its
    partners' messages, between which their messages in flight stay the same (up to
    the first time, the ends are the fill's)."""
    count, many, sizes = through.shape
    starts = np.vstack([start, np.full((1, sizes), np.inf)])
    ends = np.concatenate([through, np.full((1, many, sizes), -np.inf)])
    trio = np.column_stack([np.arange(count), partners])  # a group, then its partners
    at = np.concatenate([starts[trio], ends[trio].reshape(count, -1, sizes)], axis=1)
    flying = ((starts[trio][:, :, None, None, :] <= at[:, None, :, None, :])
              & (ends[trio][:, :, None, :, :] > at[:, None, :, None, :])).sum(axis=3)
    own, theirs = flying[:, 0], flying[:, 1:]
    held = ((theirs > 0) & (theirs >= own[:, None])).any(axis=1)
    alone = (theirs == 0).all(axis=1)
    return np.where((own > 0) & ~alone & ~held, at, np.inf).min(axis=(0, 1))


def _paired_ends(start: np.ndarray, work: np.ndarray,
                 partners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_filled_ends` where every link is shared by at most two messages and all
    links and caps are alike (:func:`_partners`, on flat): the progressive filling
    fixes every message with a partner in flight at half the rate (those links fill
    first, all at once) and the others at the full rate (their cap), so a message
    carries its bytes' time alone, ``work`` (messages x sizes), at half the speed while
    one of its ``partners`` (messages x 2) is in flight, else at full speed, from its own
    ``start`` (never: infinity; its end -inf).  Its end is so a function of its
    partners' (:func:`_paired_pass`), and the ends are that function's one fixed point
    (at the first time two sets of ends differ, the messages in flight and so every
    message's progress up to it are the same in both); iterated from every message at
    half the speed throughout, an upper bound, they fall to it (the function rises
    with the partners' ends) in a few passes (a chain on ``default_flat(64)``: 2 to 3 a
    round, at most 10), each of a few numbers per message whose partner's end moved in
    the pass before, where the fill's event loop takes a pass per start and end (on
    ``default_flat(64)`` a chain's ReduceScatter took 24.5 CPU s a table so).  The ends
    and, per size, whether they settled within :data:`PAIRED_PASSES` passes."""
    count, sizes = start.shape
    never = np.isinf(start)
    began = _partner_spans(start, None, partners)[0]
    target = start + work
    end = np.where(never, -np.inf, start + 2.0 * work)
    ends = np.full((count + 1, sizes), -np.inf)  # the pad's last: never in flight
    rows = np.arange(count)  # those a partner's end moved, again
    pending = np.zeros((0, sizes), dtype=bool)
    for _ in range(PAIRED_PASSES):
        ends[:count] = end
        again = np.where(never[rows], -np.inf,
                         _paired_pass(start[rows], target[rows], began[rows],
                                      ends[partners[rows]]))
        # settled where a pass moves no end by more than a few roundings
        was = end[rows]
        with np.errstate(invalid="ignore"):  # never started: -inf both times, not moved
            moved = (again != was) & (np.abs(again - was) > 4e-16 * np.abs(again))
        end[rows] = again
        # those whose partner's end moved (partners are each other's; the pad's left out:
        # an end that moved with none but the pad as partner moves nothing)
        pending = moved & (partners[rows] < count).any(axis=1)[:, None]
        due = np.zeros(count + 1, dtype=bool)
        due[partners[rows[pending.any(axis=1)]]] = True
        rows = np.flatnonzero(due[:count])
        if not len(rows):
            break
    return end, np.asarray(~pending.any(axis=0))


def _partner_spans(start: np.ndarray, end: np.ndarray | None,
                   partners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each message's ``partners``' (messages x 2, the pad the number of messages) starts,
    clipped to its own ``start`` (the pad never starts), and their ``end`` (messages x
    sizes; the pad's -inf: never in flight; None: left empty), messages x 2 x sizes."""
    sizes = start.shape[1]
    began = np.maximum(np.vstack([start, np.full((1, sizes), np.inf)])[partners],
                       start[:, None, :])
    if end is None:
        return began, np.empty((0, 2, sizes))
    return began, np.vstack([end, np.full((1, sizes), -np.inf)])[partners]


def _paired_pass(start: np.ndarray, target: np.ndarray, began: np.ndarray,
                 ended: np.ndarray) -> np.ndarray:
    """Each message's end (:func:`_paired_ends`) where its partners are in flight from
    ``began`` (clipped to its own ``start``) to ``ended`` (messages x 2 x sizes): its
    progress from its start, ``g(t) = t - |B ∩ [start, t)| / 2`` (``B``: the union of
    its partners' spans), rises at half the speed inside ``B``, so it is through where
    ``g`` reaches ``target`` (its start plus its bytes' time alone), from the last of
    ``g``'s breaks (its start, its partners' starts and ends) that ``g`` has not passed
    it by, at the speed after that break."""
    a1, a2, b1, b2 = began[:, 0], began[:, 1], ended[:, 0], ended[:, 1]
    with np.errstate(invalid="ignore"):  # a message never started: inf - inf, left out
        breaks = np.stack([a1, b1, a2, b2])
        breaks = np.where(np.isfinite(breaks), np.maximum(breaks, start), start)
        at = np.where(breaks - _busy(breaks, began, ended) / 2.0 <= target, breaks,
                      start).max(axis=0)
        inside = ((a1 <= at) & (at < b1)) | ((a2 <= at) & (at < b2))
        return at + (target - at + _busy(at, began, ended) / 2.0) \
            * np.where(inside, 2.0, 1.0)


def _busy(t: np.ndarray, began: np.ndarray, ended: np.ndarray) -> np.ndarray:
    """``|B ∩ [start, t)|`` (:func:`_paired_pass`: ``B`` the union of a message's
    partners' spans, from ``began``, clipped to its start, to ``ended``; messages x 2 x
    sizes) at each message's ``t`` (messages x sizes, or breaks x messages x sizes)."""
    a1, a2, b1, b2 = began[:, 0], began[:, 1], ended[:, 0], ended[:, 1]
    both, either = np.maximum(a1, a2), np.minimum(b1, b2)  # where the spans overlap
    return np.maximum(np.minimum(b1, t) - a1, 0.0) + np.maximum(np.minimum(b2, t) - a2, 0.0) \
        - np.maximum(np.minimum(either, t) - both, 0.0)


def _filled_runs(start: np.ndarray, weights: np.ndarray, nbytes: np.ndarray, cap: np.ndarray,
                 on: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """:func:`_filled_ends` of messages that each go as transfers of several kinds
    (``weights`` of each of ``nbytes``, kinds x messages x sizes; :func:`_unit_runs`):
    a message's transfers share its links and cap, so they carry alike until the
    shortest is through, and a message is one entry of as many transfers as are not yet
    through (an entry per kind made the play of 32 flat ranks' trees several times
    slower); it is through with its longest.  The events over the messages that start
    at some size only (a tree AllGather's pieces: on ``default_flat(31)`` over 2
    channels at 16 segments, a third of a round's)."""
    kinds = (weights > 0).any(axis=(1, 2))  # those some message has
    weights, nbytes = weights[kinds], nbytes[kinds]
    rows = np.flatnonzero(np.isfinite(start).any(axis=1))
    end = np.full(start.shape, -np.inf)
    end[rows] = _run_events(start[rows], weights[:, rows], nbytes[:, rows], cap[rows],
                            on[rows], capacity, (RUN_KINDS + 1) * 2 * len(start))
    return end


def _run_events(start: np.ndarray, weights: np.ndarray, nbytes: np.ndarray, cap: np.ndarray,
                on: np.ndarray, capacity: np.ndarray, events: int) -> np.ndarray:
    """:func:`_filled_runs`' events (at most so many): each message's end."""
    real = weights > 0
    longest = np.where(real, nbytes, 0.0).max(axis=0)
    end = np.full(start.shape, -np.inf)
    carried = np.zeros(start.shape)  # by each of a message's transfers
    waiting = start.copy()
    flying = np.zeros(start.shape, dtype=bool)
    now = start.min(axis=0, initial=np.inf)
    now[np.isinf(now)] = 0.0
    incidence = _incidence(on)
    for _ in range(events):
        came = waiting <= now
        flying |= came
        waiting = np.where(came, np.inf, waiting)
        going = real & (nbytes > carried)
        rate = _max_min(flying, cap, incidence, capacity,
                        np.where(going, weights, 0.0).sum(axis=0))
        # to its next transfer's end (none left: now)
        gap = np.where(going, nbytes - carried, np.inf).min(axis=0)
        gap[np.isinf(gap)] = 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            taken = np.where(flying, np.where(gap > 0, gap / np.where(flying, rate, 1.0), 0.0),
                             np.inf)
        step = np.minimum(taken.min(axis=0, initial=np.inf),
                          waiting.min(axis=0, initial=np.inf) - now)
        if np.isinf(step).all():
            break
        step[np.isinf(step)] = 0.0
        reached = flying & (taken <= step)
        carried = np.where(reached, carried + gap,
                           np.where(flying, carried + rate * step, carried))
        ended = reached & (carried >= longest)
        end = np.where(ended, now + taken, end)
        flying &= ~ended
        now = now + step
    return end


class _Incidence(NamedTuple):
    """Which links each message is on (:func:`_incidence`), for :func:`_max_min`:
    message ``m`` on ``links[starts[m]:starts[m + 1]]``, in order."""

    starts: np.ndarray
    links: np.ndarray


def _incidence(on: np.ndarray) -> _Incidence:
    """The incidence of links and messages (``on``: messages x links), for
    :func:`_max_min`.  Built once a fill, not once an event (a chain's ReduceScatter on
    ``default_flat(47)`` over 3 channels at 4 segments, 4,097 elements: the fill's 7,415
    events built it 14,830 times, 70% of its time)."""
    message, link = np.nonzero(on)
    starts = np.zeros(len(on) + 1, dtype=np.int64)
    np.cumsum(np.bincount(message, minlength=len(on)), out=starts[1:])
    return _Incidence(starts, link.astype(np.int64))


COMPILED_PLACES = 8
"""The fewest places of a shared link's queues whose play is compiled
(:func:`_shared_ends`)."""


def _max_min(flying: np.ndarray, cap: np.ndarray, incidence: _Incidence,
             capacity: np.ndarray, transfers: np.ndarray | None = None) -> np.ndarray:
    """The max-min fair rates of the ``flying`` messages (messages x sizes; with
    ``transfers``, a rate of each of so many transfers side by side) over the links they
    are on (:func:`_incidence`; ``capacity``: links x sizes), each at most its ``cap``,
    by progressive filling as the simulator sets them: the smallest fair share of a link
    (its room over its transfers not fixed) or cap fixes those messages, and so on.
    Compiled (:func:`.filling._fill`), a size at a time over its free messages only:
    passes of NumPy over all sizes at once, a sparse product per link sum, took 10 of
    the 14 CPU s of a price of tree AllGather on ``default_flat(64)`` over 8 channels at
    16 segments (14 sizes; rounds of about 1,000 messages on 2 links each)."""
    from .filling import _fill  # Numba, imported where messages share links only
    rows, sizes = flying.shape
    return _fill(np.require(flying, bool, ["C", "W"]), _dense(cap, rows, sizes),
                 incidence.starts, incidence.links, _dense(capacity, len(capacity), sizes),
                 _dense(1.0 if transfers is None else transfers, rows, sizes))


def _dense(values: Any, rows: int, sizes: int) -> np.ndarray:
    """``values`` as rows x sizes of floats, contiguous and writeable (as the compiled
    fills take them: one signature each)."""
    return np.require(np.broadcast_to(values, (rows, sizes)), float, ["C", "W"])


def _queue_ends(start: np.ndarray, real: np.ndarray, spots: np.ndarray,
                work: Callable[[np.ndarray, np.ndarray], np.ndarray], spread: np.ndarray,
                smaller: tuple[np.ndarray, Callable[..., np.ndarray]] | None,
                weight: Callable[[np.ndarray, np.ndarray], np.ndarray] | None,
                scale: np.ndarray | None = None) -> np.ndarray:
    """:func:`_shared_ends` of a round's queues (``start``: places x links x sizes, an
    empty place, not ``real``, as the queue's first; its entries ``spots``, their bytes'
    time at the link's full rate ``work(entries, sizes)`` and of ``spread``, the time
    each takes where all start together, its shared time):
    where a queue's messages start together (on most links and sizes) each is through
    its ``spread`` after (an empty place's is never read), as :func:`_shared_ends` has
    them; the others are played by it, and so is every queue where some entries carry
    a smaller part (``smaller``: whether each does, as ``start``, and their bytes' time
    then; the spread is of whole parts); an entry of ``weight(entries, sizes)``
    transfers (None: one) is that many, of its bytes each; where its transfers are
    ``scale`` times its row's bytes a transfer (as ``start``; a unit over runs of the
    buffer goes as transfers of its longest, :meth:`_Described._run_play`), as many
    fewer, and its queue is played."""
    now = start.min(axis=0)
    end = now + spread[spots]
    apart = (start.max(axis=0) > now) | np.isinf(now)  # (a queue of messages left out)
    if smaller is not None:
        apart |= smaller[0].any(axis=0)
    if scale is not None:
        apart |= (scale != 1.0).any(axis=0)
    if apart.any():
        # taken column by column (np.take: contiguous, a row per place; indexed as
        # [:, link, size], each column's few places lie together, and every reduction
        # over the places runs along short rows, many times slower)
        cells = np.flatnonzero(apart)
        link, size = np.divmod(cells, apart.shape[1])
        places = len(start)
        entries = np.take(spots, link, axis=1)
        work_at = work(entries, size)
        if smaller is not None:
            small, work_s = smaller
            work_at = np.where(np.take(small.reshape(places, -1), cells, axis=1),
                               work_s(entries, size), work_at)
        many = None if weight is None else weight(entries, size)
        if scale is not None:
            scaled = np.take(scale.reshape(places, -1), cells, axis=1)
            work_at = work_at * scaled
            many = (1.0 if many is None else many) / scaled
        end.reshape(places, -1)[:, cells] = _shared_ends(
            np.where(np.take(real[:, :, 0], link, axis=1),
                     np.take(start.reshape(places, -1), cells, axis=1), np.inf), work_at,
            many)
    return end


def _shared_ends(start: np.ndarray, work: np.ndarray,
                 weight: np.ndarray | None = None) -> np.ndarray:
    """When each message in a shared link's queue is through, as the simulator's link
    carries them on its own: each message (``start``, ``work``: places x links x sizes,
    its bytes' time at the link's full rate; an empty place starts at infinity; as
    ``weight`` transfers of that many bytes each, side by side, where given) from its
    own start, the link's rate shared equally among the transfers started and not
    through, re-shared whenever one starts or ends; -inf at an empty place.

    From one start to the next the messages in flight share the link as if none came:
    one with ``left_i`` to carry is through ``sum_j w_j min(left_j, left_i)`` later, if
    that is before the next start; the others each carry the same share of what is
    left of the time until then.  A pass per distinct start (one where all start
    together, as on most links).

    Compiled (:func:`.filling._queue_play`), a queue at a time, where the queues have
    at least :data:`COMPILED_PLACES` places: NumPy passes over all the queues
    (:func:`_vector_ends`, a product of places x places a pass) took 4.2 of the 15 CPU s
    of the three closed-form tables on ``dgx_h100(96)`` (hier's inner rhd, played
    queued: queues of 24 to 64 places, most holding 2 messages); on fewer places they
    are as fast, without Numba's import (``dgx_h100(256)``: 4 places)."""
    places, queues = len(start), start[0].size
    if places < COMPILED_PLACES:
        return _vector_ends(start, work, weight)
    from .filling import _queue_play  # Numba, imported where messages share links only
    return _queue_play(*(_dense(np.broadcast_to(values, start.shape).reshape(places, -1),
                                places, queues)
                         for values in (start, work, 1.0 if weight is None else weight))
                       ).reshape(start.shape)


def _vector_ends(start: np.ndarray, work: np.ndarray,
                 weight: np.ndarray | None = None) -> np.ndarray:
    """:func:`_shared_ends` by NumPy passes over all the queues at once (a pass per
    distinct start, each over places x places x queues)."""
    end = np.full(start.shape, -np.inf)
    now = start.min(axis=0)
    now[np.isinf(now)] = 0.0  # a queue of messages left out: none ever comes
    waiting = start  # each message's start until it comes, then infinity
    flying = np.zeros(start.shape, dtype=bool)
    left = work
    for _ in range(len(start)):
        came = waiting == now
        flying |= came
        waiting = np.where(came, np.inf, waiting)
        coming = waiting.min(axis=0)
        upto = coming - now
        share = np.where(flying, left, 0.0)
        spans = np.minimum(share[:, None], share[None, :])
        through = (spans if weight is None else spans * weight[None, :]).sum(axis=1)
        ended = flying & (through <= upto)
        end = np.where(ended, now + through, end)
        if np.isinf(coming).all():
            break
        flying &= ~ended
        # the others' level: the time left once the ended are through, shared equally
        many = flying if weight is None else np.where(flying, weight, 0.0)
        done = share if weight is None else share * weight
        # (a transfer each at least: a weight is at least 1)
        level = (upto - np.where(ended, done, 0.0).sum(axis=0)) \
            / np.maximum(many.sum(axis=0), 1)
        left = np.where(flying, share - level, left)
        now = np.where(np.isinf(coming), now, coming)  # a queue all come stays put
    return end
