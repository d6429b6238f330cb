"""A pipelined chain's crowded hops played segment by segment, coupled through the chain
(:func:`_coupled_ends`), compiled with Numba.

Where a chain's hops crowd a link, the fluid of :func:`.crowded._paced` prices the link
as if it carried its hops' bytes at its full rate, but the simulator's link carries less:
its hops' bytes bunch (on ``dgx_h100(32)``, LL 16 MiB, 7 of a link's 8 hops start within
3.5 us of an 8.2 us pace), 2 to 8 of them carry at once, and one carrying alone is held
to its own rate, so a segment takes 8.2 us on each of them, not the 7.3 us of the
link's bytes.  The bunching is the chain's (a hop takes its segments as they arrive from
the hop before it, one that waits for its own last segment keeps the phase it had) and
neither periodic nor stationary: the pace wanders by some 10% over hundreds of segments.
What gives it is the chain's hops played: each hop on a crowded link (a *member*) starts
a segment once its own last one is through and the segment has crossed the hops before
it; it carries the segment's bytes at its max-min share of the link it crowds most (the
link whose hops are the most), then holds it for the rest of its time alone (latency,
reduction: the simulator's order).  The hops between two members (NVLink hops, network
hops on links no other hop takes) never share a link: a run of them is a tandem of
servers of fixed times, which passes segments on as one server of the run's slowest
time after a delay of the others' sum (deterministic servers in tandem commute).
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: where a chain has more segments than the first one's reach (:func:`_reach`) and the
#: longer of :data:`PACE_WINDOWS`, the segments of its one play past the reach: the
#: later segments are added at its last member's pace while every member still carries,
#: where that lasts so many segments (:func:`_play_end`)
PACE_WINDOW = 32
#: else the segments of its two plays past the reach: its end lies on the line through
#: theirs (:func:`_line`); over the 381 crowded chains of ``dgx_h100(2..128)`` at
#: 0.3-2.05 loads (chaingrid and the DGX audit), the one play or the line within 0.7%
#: of the whole play above a load of 1 (the one play alone: -88%), -2.4% below
PACE_WINDOWS = (16, 64)
#: members squared x segments of a whole play at most (else the fluid,
#: :func:`.crowded._paced`): a member's segment takes some 0.2 us, the square keeps
#: long plays off the largest chains (``dgx_h100(256)``: 16 segments, ``(128)``: 64)
COUPLED_PLAY = 1 << 20
#: members x segments of a line's two plays at most (:func:`_line`), and of the one
#: play before it: every count of ``dgx_h100(128)``'s chains (125 members, reaches up
#: to 315: some 18 ms), none of ``(256)``'s (reaches of 450 and more)
LINED_PLAY = 1 << 17
#: a chain is played where its most crowded link's bytes of a segment take from so
#: many to so many of its slowest hop's time alone (:func:`.crowded._chain_ends`): below,
#: the play was within 2e-4 of the closed form in the tables of ``dgx_h100(32)``
#: (``(8, 2, 2)`` Simple 16 MiB at 64 segments, 0.34: -8.5% -> -3.0% played); above,
#: the link carries its hops' bytes back to back once the chain is filled, and the
#: fluid was within 2% (:data:`UNFILLED`)
PLAYED_LOAD = (0.3, 1.5)
#: past :data:`PLAYED_LOAD` a chain is played whole where its segments are so many or
#: more and short of its reach by so many: it never fills and the fluid's one pace
#: missed (``dgx_h100(128)``, Reduce chain(segments=64) 64 MiB, reach 109 and 141:
#: LL -5.0%, LL128 -6.0%; ``(96)`` LL -4.8%); at 4 and 16 segments the fluid was the
#: play's (1e-5), and at 64 segments near the reach (``(64)``: 56 to 66) within 1.9%
UNFILLED = (32, 16)
#: plays kept, by their inputs (:func:`_played_end`): the sizes of a table whose
#: segments are as large and more than the play's reach play alike (``dgx_h100(64)``,
#: 11 of a Broadcast table's 64 plays, a third of its members' segments)
_KEPT_PLAYS = 256
_PLAYS: dict[bytes, tuple[float, float]] = {}


def _runs(alone: np.ndarray, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run of hops before a member and the one after the last (``alone``: every
    hop's time alone, in chain order): its sum less its slowest, its slowest."""
    starts = np.concatenate([[0], members + 1])
    held = np.append(alone, 0.0)  # the last run may be empty: a start past the hops
    held[members] = 0.0  # each run's span reaches over the member after it
    total = np.add.reduceat(held, starts)
    held[members] = -np.inf
    serve = np.maximum(np.maximum.reduceat(held, starts), 0.0)
    return total - serve, serve


def _coupled_ends(alone: np.ndarray, rate: np.ndarray, size: float,
                  sharing: tuple[np.ndarray, np.ndarray], capacity: np.ndarray,
                  segments: np.ndarray, load: float) -> np.ndarray:
    """When the last of each of ``segments`` segments of ``size`` bytes is through a
    chain whose hops (in the order a segment crosses them) take ``alone`` seconds a
    segment alone, carrying its bytes at ``rate``; ``sharing``: the hops on each crowded
    link and the link (pairs of numbers), each link of ``capacity`` bytes a second;
    ``load``: the most crowded link's bytes of a segment over the slowest hop's time
    alone.  Each member shares the link of its own that the most hops take
    (:func:`.coupled_play._play`).  Counts played whole (:func:`_whole`, within
    :data:`COUPLED_PLAY`) are; below :data:`PLAYED_LOAD`'s top, larger ones share one
    play past the first segment's reach, or two and the line through their ends
    (:func:`_later`, within :data:`LINED_PLAY`); NaN elsewhere (the fluid's)."""
    hops, link = sharing
    on_link = np.bincount(link, minlength=len(capacity))
    members = len(np.unique(hops))
    reach = _reach(alone, int(hops.max()), float((on_link * size / capacity).max()))
    short, long = (reach + window for window in PACE_WINDOWS)
    whole = np.unique(segments[_whole(segments, load, reach, long)])
    whole = whole[members ** 2 * whole <= COUPLED_PLAY].tolist()
    lined = (segments > long) & (load < PLAYED_LOAD[1]) \
        & (members * (short + long) <= LINED_PLAY)
    out = np.full(len(segments), np.nan)
    if not whole and not lined.any():
        return out
    chain = _chain(alone, rate, size, sharing, capacity)
    for count in whole:
        out[segments == count] = _played_end(chain, float(size), count)[0]
    if lined.any():
        out[lined] = _later(chain, float(size), reach, segments[lined])
    return out


def _later(chain: tuple[Any, ...], size: float, reach: int,
           segments: np.ndarray) -> np.ndarray:
    """The ends of ``chain``'s counts of ``segments`` (past the ``reach`` and the longer
    of :data:`PACE_WINDOWS`): one play's and its pace (:data:`PACE_WINDOW`), or where the
    play has no such pace, the line through two plays' ends (:func:`_line`)."""
    played = reach + PACE_WINDOW
    end, pace = _played_end(chain, size, played)
    if not np.isnan(pace):
        return end + (segments - played) * pace
    counts = (reach + PACE_WINDOWS[0], reach + PACE_WINDOWS[1])
    return _line((_played_end(chain, size, counts[0])[0],
                  _played_end(chain, size, counts[1])[0]), counts, segments)


def _chain(alone: np.ndarray, rate: np.ndarray, size: float,
           sharing: tuple[np.ndarray, np.ndarray], capacity: np.ndarray) -> tuple[Any, ...]:
    """The chain as :func:`_played_end` takes it (:func:`_coupled_ends`' arguments): its
    runs (:func:`_runs`), its members' holds, rates and the link each shares (its own
    that the most hops take), and the links' capacities."""
    hops, link = sharing
    on_link = np.bincount(link, minlength=len(capacity))
    order = np.lexsort((-on_link[link], hops))
    members, first_of = np.unique(hops[order], return_index=True)
    most = link[order][first_of]
    return (_runs(alone, members), alone[members] - size / rate[members],
            rate[members].astype(float), most.astype(np.int64), capacity.astype(float))


def _whole(segments: np.ndarray, load: float, reach: int, long: int) -> np.ndarray:
    """Which of ``segments`` are played whole: below :data:`PLAYED_LOAD`'s top up to
    ``long`` (the reach and the longer of :data:`PACE_WINDOWS`), above it those that
    never fill (:data:`UNFILLED`, short of the ``reach``)."""
    if load < PLAYED_LOAD[1]:
        return segments <= long
    fewest, short_of = UNFILLED
    return (segments >= fewest) & (segments <= reach - short_of)


def _line(ends: tuple[float, float], counts: tuple[int, int],
          segments: np.ndarray) -> np.ndarray:
    """The ends of chains of ``segments`` segments on the line through two plays'
    ``ends``, of ``counts`` segments (both past the first segment's reach).

    Once a chain is filled its end grows by a pace a segment, its drain after the first
    member's last segment alike at every count.  One play's last member gives no pace
    where the members before the most crowded link run ahead of it: the first member is
    through its last segment before the first reaches the last member (``dgx_h100(64)``
    Reduce LL 1 GiB, 2,048 segments, at a load of 2.05: the pace of the last run alone,
    -88% against the whole play), and its done gives its links to the others at a time
    that grows with the count, which the line's slope takes in."""
    pace = (ends[1] - ends[0]) / (counts[1] - counts[0])
    return ends[1] + (segments - counts[1]) * pace


def _played_end(chain: tuple[Any, ...], size: float, segments: int) -> tuple[float, float]:
    """When the last of ``segments`` segments of ``size`` bytes is through ``chain``
    (its runs, :func:`_runs`, and its members' holds, rates, links and the links'
    capacities, as :func:`.coupled_play._play` takes them), and the pace it keeps while
    every member carries (:func:`_play_end`); kept (:data:`_KEPT_PLAYS`)."""
    (delay, serve), hold, rate, link, capacity = chain
    key = b"".join(a.tobytes() for a in (np.array([size, segments, len(hold)]), delay,
                                         serve, hold, rate, link, capacity))
    if key not in _PLAYS:
        if len(_PLAYS) >= _KEPT_PLAYS:
            _PLAYS.clear()
        _PLAYS[key] = _play_end(chain, size, segments)
    return _PLAYS[key]


def _play_end(chain: tuple[Any, ...], size: float, segments: int) -> tuple[float, float]:
    """:func:`_played_end`, played: the pace the last member keeps from the first
    segment's reaching it to the first member's last (a longer chain's is the same, its
    drain after the first member's last segment too), NaN where that is fewer than
    :data:`PACE_WINDOW` segments."""
    from .coupled_play import _play  # Numba, imported where a chain is played only
    (delay, serve), hold, rate, link, capacity = chain
    first = delay[0] + serve[0] * np.arange(1, segments + 1)
    ends, first_done = _play(first, delay[:-1], serve[:-1], hold, rate, link, capacity, size)
    passed = 0.0
    for last in ends.tolist():  # the run after the last member
        passed = max(passed, last + delay[-1]) + serve[-1]
    steady = ends[ends <= first_done]
    if len(steady) < PACE_WINDOW:
        return passed, np.nan
    return passed, max((steady[-1] - steady[0]) / (len(steady) - 1), serve[-1])


def _reach(alone: np.ndarray, last: int, link_bytes: float) -> int:
    """The segments the first one takes to reach the ``last`` member (``alone``: the
    hops' times alone) at the pace of the slowest hop alone or the most crowded link's
    bytes (``link_bytes``)."""
    pace = max(float(alone.max()), link_bytes)
    front = float(alone[:last + 1].sum())
    return int(np.ceil(front / pace))
