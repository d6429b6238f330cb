"""A pipelined chain's hops crowding the links they share (:func:`_crowded`).

The chain's closed form (:class:`collectives.traffic.Round`: its hops once, its
slowest ``S - 1`` times) prices every hop alone, as a segment crosses them one after
another.  Behind the first segment every hop it has passed carries the later ones,
all of them at once: on a machine of unlike links hops that cross the network take
the links between a leaf and the spines, several hops to a link, and where more of
them are in flight than the link carries at their rates, the chain moves at the pace
that link gives each (``dgx_h100(32)``: 31 hops over 8 spines, up to 8 to an up link
of 4 NICs' rate).  The simulator's chain then ran up to 42% longer than the closed form
(255 segments of 1 GiB).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..gpu import hidden_latency
from .budgets import WHOLE_MESSAGES
from .coupled import PLAYED_LOAD, _coupled_ends
from .routing import _entries, _route_figures


def _chain_hops(rounds: tuple[Any, ...]) -> tuple[Any, list[Any]] | None:
    """The class of a chain's hops that its first segment crosses (a chain round that
    does not only wait) and the rounds of its later segments' waits, where
    ``rounds`` are one such chain of one class and its waits; else None."""
    crossing = [r for r in rounds if r.chain and not r.waits]
    waits = [r for r in rounds if r.waits]
    if len(crossing) != 1 or len(crossing[0].messages) != 1 or not waits \
            or len(waits) + 1 != len(rounds):
        return None
    return crossing[0].messages[0], waits


def _segments(waits: list[Any], counts: np.ndarray) -> np.ndarray:
    """The chain's segments at each of ``counts``: one, and every wait of ``waits``
    (a round waits ``chain`` times where its class carries something)."""
    total = np.ones(counts.shape, dtype=np.int64)
    for r in waits:
        messages = r.messages[0]
        carried = np.ones(counts.shape, dtype=bool) if messages.carries is None \
            else messages.carries(counts)[0]
        total += r.chain * carried
    return total


def _along(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The hops (``src -> dst`` positions) in the order a segment crosses them."""
    following = {s: k for k, s in enumerate(src.tolist())}
    first = (set(src.tolist()) - set(dst.tolist())).pop()
    order = [following[first]]
    while len(order) < len(src):
        order.append(following[int(dst[order[-1]])])
    return np.array(order, dtype=np.int64)


def _crowded(topology: Any, order: tuple[int, ...], rounds: tuple[Any, ...],
             terms: Sequence[tuple[Any, ...]], counts: np.ndarray,
             ds: int) -> np.ndarray | None:
    """Seconds of a pipelined chain (``rounds``: its first segment's crossing and its
    later segments' waits, :func:`_chain_hops`) on ``order`` at ``counts`` (elements,
    a row) under each of ``terms`` (as :meth:`_Described.time` takes them), where its
    hops crowd a link they share (:func:`_chain_ends`), -inf at a size where none paces
    the chain; None where no link is shared,
    where the rounds are not such a chain, or past :data:`WHOLE_MESSAGES` hops (each
    hop is routed)."""
    chain = _chain_hops(rounds)
    if chain is None:
        return None
    hops, waits = chain
    if len(hops.src) > WHOLE_MESSAGES:
        return None
    ranks = np.asarray(order, dtype=np.int64)
    along = _along(hops.src, hops.dst)
    lengths, links = _entries(topology, ranks[hops.src[along]] * topology.nranks
                              + ranks[hops.dst[along]])
    hop = np.repeat(np.arange(len(along)), lengths)
    taken, users = np.unique(links, return_counts=True)
    crowded = taken[users > 1]
    if not len(crowded):
        return None
    on = np.isin(links, crowded)
    sharing = (hop[on], np.searchsorted(crowded, links[on]))
    nbytes = hops.elements(counts) * ds
    segments = _segments(waits, counts)
    out = np.full((len(terms), counts.shape[-1]), -np.inf)
    for k, (latency, bandwidth, slot, shares, gamma) in enumerate(terms):
        delay, rate, share = _route_figures(links, np.cumsum(lengths) - lengths, latency,
                                            bandwidth, shares)
        for size in np.unique(nbytes[segments > 1]).tolist():
            at = (nbytes == size) & (segments > 1)
            carried = size / rate
            alone = hidden_latency(delay, size, rate, slot, share) + carried \
                + (gamma * size if hops.reduce and gamma else 0.0)
            out[k, at] = _chain_ends(alone, rate, size, sharing, bandwidth[crowded],
                                     segments[at])
    return out


def _chain_ends(alone: np.ndarray, rate: np.ndarray, size: float,
                sharing: tuple[np.ndarray, np.ndarray], capacity: np.ndarray,
                segments: np.ndarray) -> np.ndarray:
    """When the last of each of ``segments`` segments (``size`` bytes) is through a
    chain whose hops take ``alone`` seconds a segment alone, carrying at ``rate``,
    ``sharing``: the hops on each crowded link and the link, each of ``capacity``; -inf
    where no link carries fewer hops' bytes at once than its hops carry at their rates
    (none paces the chain: the closed form is the simulator's, it prices the later
    segments at their own sizes).  Where the most crowded link's bytes of a segment are
    near a hop's time alone (:data:`.coupled.PLAYED_LOAD`), the hops' bytes bunch:
    played (:func:`.coupled._coupled_ends`); past it the link carries its hops' bytes
    back to back once the chain is filled: the fluid (:func:`_paced`), but for chains
    that never fill (:data:`.coupled.UNFILLED`: played), and where the play is past
    its budgets."""
    hops, link = sharing
    if not (np.bincount(link, rate[hops], len(capacity)) > capacity).any():
        return np.full(len(segments), -np.inf)
    per_link = size / capacity
    load = float((np.bincount(link, minlength=len(capacity)) * per_link).max()
                 / alone.max())
    out = _coupled_ends(alone, rate, size, sharing, capacity, segments, load) \
        if load >= PLAYED_LOAD[0] else np.full(len(segments), np.nan)
    for j in np.flatnonzero(np.isnan(out)).tolist():
        out[j] = _paced(alone, sharing, per_link, int(segments[j])) if load > 1 else -np.inf
    return out


def _paced(alone: np.ndarray, sharing: tuple[np.ndarray, np.ndarray], per_link: np.ndarray,
           segments: int) -> float:
    """When the last segment of a chain is through: each hop (in the order the segment
    crosses them) takes ``alone`` seconds a segment by itself; ``sharing``: the hops on
    each crowded link and the link (pairs of numbers), each link taking ``per_link``
    seconds for a segment's bytes.

    The first segment crosses every hop alone; a hop on a crowded link carries a
    segment a pace from then on until it has carried them all, every such hop at one
    pace, the most of the slowest alone and, over the crowded links, the bytes' time
    of as many segments as the link has hops in flight (their latencies overlap the
    others' bytes: with them added, 2,048 segments of 1 GiB were +25%); once
    a link's last hop is through, the last segment crosses the hops after it alone.  A
    fluid of the simulator's chain, whose ranks wait on each other a segment a step so
    that every hop moves at the slowest one's pace (``dgx_h100(32)`` and ``(64)``, 32 to
    255 segments of 1 GiB: within 4% of the simulator, where the closed form was up
    to -42%)."""
    front = np.concatenate([[0.0], np.cumsum(alone)])
    hops, link = sharing
    member = np.unique(hops)
    slowest = float(alone[member].max())
    # Python's numbers: a few dozen links, a step at a time, numpy's calls cost more
    per = per_link.tolist()
    links_of = [list(dict.fromkeys(link[hops == h].tolist())) for h in member.tolist()]
    starts = front[member].tolist()
    flight, load = [0] * len(per), [0.0] * len(per)  # in flight, times their bytes' time
    last = np.full(len(per_link), -1)
    np.maximum.at(last, link, hops)
    ends = np.zeros(len(alone))
    now = paced = 0.0
    pace = slowest
    begun = [0.0] * len(member)
    nxt = done = 0
    while done < len(member):
        arrive = starts[nxt] if nxt < len(member) else np.inf
        finish = now + (begun[done] + segments - paced) * pace if done < nxt else np.inf
        if arrive <= finish:
            paced += (arrive - now) / pace if done < nxt else 0.0
            now, begun[nxt] = arrive, paced
            moved, step = nxt, 1
            nxt += 1
        else:
            now, paced = finish, begun[done] + segments
            ends[member[done]] = now
            moved, step = done, -1
            done += 1
        for g in links_of[moved]:
            flight[g] += step
            load[g] = flight[g] * per[g]
        pace = max(slowest, max(load))
    return float((ends[last] + front[-1] - front[last + 1]).max())
