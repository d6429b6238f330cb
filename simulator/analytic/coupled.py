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

#: where a chain has more segments than it takes to fill, the segments played past its
#: fill, over which its pace is read
PACE_WINDOW = 32
#: members squared x segments played at most (else the fluid, :func:`.crowded._paced`),
#: set where each event scanned every member's next time; with them in a heap a
#: member's segment takes some 0.16 us (``dgx_h100(64)``, 61 members), so the square
#: now only keeps long plays off the largest chains (``(256)``: 16 segments; a budget
#: of members x segments played 64 there, 0.38 -> 0.45 CPU s a Reduce table, no price
#: of the grid moved)
COUPLED_PLAY = 1 << 20
#: a chain is played where its most crowded link's bytes of a segment take from so
#: many to so many of its slowest hop's time alone (:func:`.crowded._chain_ends`): below,
#: the play was within 2e-4 of the closed form in the tables of ``dgx_h100(32)``
#: (``(8, 2, 2)`` Simple 16 MiB at 64 segments, 0.34: -8.5% -> -3.0% played); above,
#: the link carries its hops' bytes back to back and the fluid was within 2%
PLAYED_LOAD = (0.3, 1.5)
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
                  segments: np.ndarray) -> np.ndarray:
    """When the last of each of ``segments`` segments of ``size`` bytes is through a
    chain whose hops (in the order a segment crosses them) take ``alone`` seconds a
    segment alone, carrying its bytes at ``rate``; ``sharing``: the hops on each crowded
    link and the link (pairs of numbers), each link of ``capacity`` bytes a second.
    Each member shares the link of its own that the most hops take
    (:func:`.coupled_play._play`).  Played up to :func:`_played` segments, the later
    ones added at the pace the chain keeps while every member carries, one play for
    every count of as many or more; NaN past :data:`COUPLED_PLAY`."""
    hops, link = sharing
    load = np.bincount(link, minlength=len(capacity))
    order = np.lexsort((-load[link], hops))
    members, first_of = np.unique(hops[order], return_index=True)
    most = link[order][first_of]
    played = np.minimum(segments, _played(alone, members,
                                          float((load * size / capacity).max())))
    out = np.full(len(segments), np.nan)
    chain = (_runs(alone, members), alone[members] - size / rate[members],
             rate[members].astype(float), most.astype(np.int64), capacity.astype(float))
    for count in np.unique(played).tolist():
        if len(members) ** 2 * count <= COUPLED_PLAY:
            at = played == count
            passed, pace = _played_end(chain, float(size), count)
            out[at] = passed + (segments[at] - count) * pace
    return out


def _played_end(chain: tuple[Any, ...], size: float, segments: int) -> tuple[float, float]:
    """When the last of ``segments`` segments of ``size`` bytes is through ``chain``
    (its runs, :func:`_runs`, and its members' holds, rates, links and the links'
    capacities, as :func:`.coupled_play._play` takes them), and the pace it keeps while
    every member carries; kept (:data:`_KEPT_PLAYS`)."""
    (delay, serve), hold, rate, link, capacity = chain
    key = b"".join(a.tobytes() for a in (np.array([size, segments, len(hold)]), delay,
                                         serve, hold, rate, link, capacity))
    if key not in _PLAYS:
        if len(_PLAYS) >= _KEPT_PLAYS:
            _PLAYS.clear()
        _PLAYS[key] = _play_end(chain, size, segments)
    return _PLAYS[key]


def _play_end(chain: tuple[Any, ...], size: float, segments: int) -> tuple[float, float]:
    """:func:`_played_end`, played."""
    from .coupled_play import _play  # Numba, imported where a chain is played only
    (delay, serve), hold, rate, link, capacity = chain
    first = delay[0] + serve[0] * np.arange(1, segments + 1)
    ends, first_done = _play(first, delay[:-1], serve[:-1], hold, rate, link, capacity, size)
    passed = 0.0
    for last in ends.tolist():  # the run after the last member
        passed = max(passed, last + delay[-1]) + serve[-1]
    # while every member carries segments (from the first's reaching the last member to
    # the first member's last), the chain moves at the pace it keeps (a longer chain's
    # is the same, its drain after the first member's last segment too)
    steady = ends[ends <= first_done]
    pace = (steady[-1] - steady[0]) / (len(steady) - 1) if len(steady) > 1 else 0.0
    return passed, max(pace, serve[-1])


def _played(alone: np.ndarray, members: np.ndarray, link_bytes: float) -> int:
    """The segments to play at most: as many as the first segment takes to reach the
    last member (``alone``: the hops' times alone) at the pace of the slowest hop alone
    or the most crowded link's bytes (``link_bytes``), and :data:`PACE_WINDOW` more, for
    the pace it keeps once filled."""
    pace = max(float(alone.max()), link_bytes)
    front = float(alone[:members[-1] + 1].sum())
    return int(np.ceil(front / pace)) + PACE_WINDOW
