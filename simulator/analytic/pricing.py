"""The model's entry points: an algorithm's orders and channel parts on a
machine, its phases, priced at every size (:func:`price`)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from reprlib import repr as brief
from typing import Any, Callable, Sequence

import numpy as np

from topology.checks import check_int
from collectives.layout import count_of
from collectives.registry import Algorithm, algorithm as registered
from collectives.schedule import BLOCK_COLLECTIVES, COLLECTIVES
from collectives.traffic import (Phase, Round, channel_counts, channel_runs, describe,
                                 phase_counts)

from ..channel_choice import schedule_params
from ..gpu import link_figures
from .arrays import _ceil_div
from .cache import _cached
from .sample import SAMPLE_ALL_RANKS, Groups, Orders, _link_classes
from .budgets import (CHAIN_EDGE, CHAIN_RATIO, EXCHANGE_TOTAL, FAR_GROUP_RANKS,
                      FULL_CHAIN_RANKS, NEAR_PARTS, WHOLE_CHAIN_RANKS, WHOLE_TOTAL, _extended,
                      _fine)
from .exchange import _exchange_rounds, _exchange_time
from .shifts import _shift_time, _shifts
from .flow import _Flow
from .described import _described, _window_parts
from .crowded import _crowded
from .staggered import _staggered


@functools.lru_cache(maxsize=1 << 16)
def _resolved(entry: Algorithm, collective: str, q: int, count: int,
              params: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
    """``entry``'s parameters resolved at ``count`` elements (cached: every protocol
    resolves the same)."""
    return tuple(sorted(entry.resolve_params(collective, q, count, **dict(params)).items()))


def _channel_groups(counts: np.ndarray) -> list[tuple[Groups, np.ndarray]]:
    """Per size (a column of ``counts``, orders x sizes) the orders' groups (orders of
    equal elements, the largest first; None where every order's are alike) and each
    group's elements (a column)."""
    if len(counts) == 1:  # every order alike
        return [(None, column[:, None]) for column in counts.T]
    out: list[tuple[Groups, np.ndarray]] = []
    for column in counts.T.tolist():
        values = sorted(set(column), reverse=True)
        groups = None if len(values) == 1 else tuple(values.index(v) for v in column)
        out.append((groups, np.array(values, dtype=np.int64)[:, None]))
    return out


def _flat_time(collective: str, algorithm: str, topology: Any, terms: Sequence[tuple[Any, ...]],
               orders: Orders, counts: np.ndarray, ds: int, params: dict[str, Any],
               piece: np.ndarray | None, apart: int = 0, held: bool = False) -> np.ndarray:
    """One flat algorithm over ``orders`` (its channels and groups), each order carrying
    ``counts`` elements (orders x sizes, or a row: every order alike), under each of
    ``terms`` (protocols x sizes), its messages in runs of ``piece`` bytes (as
    ``counts``) where they are pieced, every one where ``apart`` (an order's vector
    in so many runs)
    (:meth:`_Described.time`): the orders of equal elements at a size are a group, each
    priced at its own (:func:`_channel_groups`); the paced rounds that a description's
    :class:`_Flow` plays (it is shared by the descriptions of the same positions, at
    every count where they resolve alike) are played once for every protocol and
    description.  ``held``: ``orders`` are the channels' orders of the ranks' own
    blocks, each position holding its rank's part (:func:`_holders`; a chain past the
    play's budgets is priced from shorter ones, :func:`_shortened`, over several
    channels where held, their vector the sum of their parts, :func:`_vectors`)."""
    q, sizes = len(orders[0]), counts.shape[1]
    if q < 2:
        return np.zeros((len(terms), sizes))
    entry = registered(algorithm)
    given = tuple(sorted(params.items()))
    grouped = _channel_groups(counts)
    alike = len(_link_classes(topology)[1]) == 1
    # the channels whose every rank's messages are played (:func:`_played`), where a
    # finer description pays (past the sample on alike links: below, :func:`_fine`)
    channels_played = len(orders) if topology.nranks <= SAMPLE_ALL_RANKS \
        and collective in entry.played_by else 0
    holders = _holders(orders, counts) if held and collective in entry.held_by \
        else [None] * sizes
    # the parameters each group's count resolves (the largest's first)
    resolved = [(tuple(dict.fromkeys(_resolved(entry, collective, q, n, given)
                                     for n in elements[:, 0].tolist())), groups, holder)
                for (groups, elements), holder in zip(grouped, holders)]
    out = np.zeros((len(terms), sizes))
    plays: dict[int, tuple[_Flow, list[tuple[int, np.ndarray, tuple[Any, ...]]]]] = {}
    crowded: list[tuple[np.ndarray, np.ndarray]] = []
    staggered: list[tuple[np.ndarray, np.ndarray]] = []
    for keys, groups, holder in dict.fromkeys(resolved):
        at = np.array([r == (keys, groups, holder) for r in resolved])
        taken = np.flatnonzero(at)
        elements = np.hstack([grouped[j][1] for j in taken.tolist()])
        # each group's runs: those of one of its orders (alike in a group)
        pieces = None if piece is None else \
            piece[np.unique(groups, return_index=True)[1] if groups else [0]][:, at]
        rounds = _merged(collective, algorithm, q, given, keys, holder, channels_played,
                         not alike)
        if not channels_played and alike and collective in entry.played_by \
                and _fine(topology, orders, list(rounds)):
            # past the sample, played as finely where that stays cheap (:func:`_fine`)
            finer = _merged(collective, algorithm, q, given, keys, holder, len(orders), False)
            if _fine(topology, orders, list(finer)):
                rounds = finer
        if not apart and (piece is None or held) and len(keys) == 1 \
                and _extended(topology, orders, list(rounds)):
            shorter = _shortened(collective, algorithm, topology, terms, orders,
                                 _vectors(orders, counts)[at], ds, keys[0])
            if shorter is not None:
                out[:, at] = shorter
                continue
        # each message priced at its own window where they differ in more than their
        # size (a ReduceScatter's channel vector, :func:`_window_parts`)
        windows = _window_parts(rounds, q, elements, pieces // ds) \
            if pieces is not None and not apart and alike \
            else [(rounds, np.ones(len(taken), dtype=bool))]
        for part_rounds, columns in windows:
            part = np.zeros(sizes, dtype=bool)
            part[taken[columns]] = True
            described = _described(topology, orders, part_rounds, groups)
            out[:, part], inputs = described.time(
                topology, terms, elements[:, columns], ds,
                None if pieces is None else pieces[:, columns], apart, not entry.empty_sends)
            flow = described.layout.flow
            if inputs is not None and flow is not None:
                plays.setdefault(id(flow), (flow, []))[1].extend(
                    (k, part, play) for k, play in enumerate(inputs))
            if not alike and len(orders) == 1:
                paced = _crowded(topology, orders[0], part_rounds, terms,
                                 elements[0, columns], ds)
                if paced is not None:
                    crowded.append((part, paced))
                saved = _staggered(topology, orders[0], part_rounds, terms,
                                   elements[0, columns], ds)
                if saved is not None:
                    staggered.append((part, saved))
    for flow, parts in plays.values():
        for (k, at, _), played in zip(parts, flow.played([play for _, _, play in parts])):
            out[k, at] += played
    for part, saved in staggered:  # a ring's hops that start apart
        out[:, part] += saved
    for part, paced in crowded:  # a chain's hops crowding the links they share
        out[:, part] = np.maximum(out[:, part], paced)
    if not entry.empty_sends:  # an empty vector sends nothing
        out[:, (counts == 0).all(axis=0)] = 0.0
    return out


def _vectors(orders: Orders, counts: np.ndarray) -> np.ndarray:
    """The elements of the vector whose channels' parts (over ``orders``) are ``counts``
    (orders x sizes, or a row: every order alike): their sum."""
    return counts.sum(axis=0) if len(counts) == len(orders) else counts[0] * len(orders)


def _shortened(collective: str, algorithm: str, topology: Any,
               terms: Sequence[tuple[Any, ...]], orders: Orders, counts: np.ndarray,
               ds: int, params: tuple[tuple[str, Any], ...]) -> np.ndarray | None:
    """A chain's held paced rounds on ``orders`` (channels of one order) past the play's
    budgets (:func:`_extended`) at ``counts`` elements of the vector under each of
    ``terms`` (protocols x counts), its parameters resolved (``params``), from chains
    of fewer ranks of the same blocks over as many channels, each channel its part of
    them (:func:`_channel_parts`), each played as :func:`_unheld` plays it; None
    where they are past the budgets too (the chain's front then, :func:`_front`).
    Over channels a block's parts differ between its two sizes for one channel at
    most, at the same first ranks (8 channels on ``default_flat(200)``, one segment,
    held to the lock-step stretch: ReduceScatter at ``1 << 20`` elements +2.2e-3,
    AllGather at 1 +1.3e-4; now within 1e-14).

    A chain of ``q`` ranks holds ``e = count % q`` blocks of ``s + 1`` elements, then
    ``f = q - e`` of ``s``.  Its time, played, is affine in the shorter side
    ``min(e, f)`` and in the difference ``|e - f|`` (where the middle of the chain,
    at which a ReduceScatter's ways balance, lies) once each is past
    :data:`CHAIN_EDGE`: the chain's ends run ahead of the rounds, the ranks between
    settle to a pattern, and ranks more lengthen it by their rounds' worth.  Each
    past it is taken from a chain of at least ``3 CHAIN_EDGE`` ranks (:func:`_based`)
    and one a step longer in it, the line through them extended: a step of ``d``
    ranks, the segments a block is cut into (twice that where odd; half of it for the
    shorter side, which grows both sides), so that a rank's two ways pair the same
    segments (a ReduceScatter's right-going unit ``k - r`` and left-going
    ``k - q + 1 + r`` in round ``k``) and the parity of the chain (its late middle
    hop) stays; ``d`` = 2 where such chains are past the budgets.  A ReduceScatter's
    time is affine so only within a range of the two's ratio (the least of a plane
    per range: on 512 ranks at 2 segments, blocks of one element, one plane up to a
    difference of about twice the shorter side, another past it), so its first chain
    holds them in the chain's ratio up to :data:`CHAIN_RATIO` (:func:`_along_ray`;
    without it where that is past the budgets).  Against the DES on
    ``default_flat(256)`` at 1 to 16 segments, ``(512)`` at 1 to 16, ``(1024)`` at 2
    and 4 and ``(301)`` at 3 and 8, counts from 7 to 131,840 (144 ReduceScatter
    cases): within 1e-9 at 109, 95 of them within 1e-13 (blocks of one element at 97
    to 5,000 elements on 512 and 1,024 ranks were up to +5.3e-5); the others where
    blocks are cut into uneven segments, the played time not affine in the chain's
    length (the slowest path meets the larger segments as they fall: with every block
    of 515 elements at 8 segments a chain 8 ranks longer moves by its slope +-5e-10, no
    pattern to 256 ranks), within 4.3e-6, but for two: on 301 ranks at 3 segments,
    131,840 elements (two blocks of 147/146/146 among 146s) -2.1e-5, where the slope in
    the difference rises by 7.2e-9 a 12 ranks past about 200 ranks (another path
    overtakes, which no chain within the budgets shows); and on 512 ranks at 2
    segments, 1,030 elements, -1.5e-5, where the DES itself moves by 1.6e-5 with the
    machine's figures scaled (past about 160 ranks its chain doubles a difference a
    rank: its rounding decides).  Each of the deterministic ones is exact played whole
    (budgets raised: 0.3-2.3 CPU s a price on 256-512 ranks, growing with their
    square), so one channel's chain on ports of at most
    :data:`~.budgets.WHOLE_CHAIN_RANKS` ranks is played whole at the counts whose
    blocks are cut into uneven segments (:func:`_played_whole`, compiled: 20 ms a count
    at 256 ranks and 8 segments), up to :data:`~.budgets.FULL_CHAIN_RANKS` at those
    whose every segment holds an element (the 301 ranks' now exact; the 512 ranks'
    +1.5e-5); over several channels of one order up to ``WHOLE_CHAIN_RANKS`` at every
    count (:func:`.chain_play._channels_time`: 8 channels on 96 ranks at 8 segments,
    97 elements, were +9.8e-6; on 256 at 4, 65,537 elements, -3.27e-4; now exact).  AllGather within 1.1e-13 at 180 cases (the front was up to +3.8e-4)."""
    q = len(orders[0])
    whole, larger = np.divmod(counts, q)
    played = _played_whole(collective, algorithm, topology, terms, orders, counts, ds,
                           params)
    if played is not None and played[1].all():
        return played[0]
    lengths = np.stack([np.minimum(larger, q - larger), np.abs(q - 2 * larger)])
    cut = max(m.cut for r in _merged(collective, algorithm, q, params, (params,))
              for m in r.messages)
    rays = (True, False) if collective == "reduce_scatter" else (False,)
    for period, ray in itertools.product(dict.fromkeys((cut * (1 + cut % 2), 2)), rays):
        # the shorter side grows both sides, the chain by twice its step: half the
        # period where that is even (an odd one, at 1 and 3 segments: off by up to 2e-5)
        half = period // 2
        steps = np.array([[half if half % 2 == 0 else period], [period]])
        base = _based(q, lengths, steps, ray)
        out = _extended_line(collective, algorithm, topology, terms, orders, whole,
                             larger <= q - larger, lengths, base, steps, ds, params)
        if out is not None:
            if played is not None:
                out[:, played[1]] = played[0][:, played[1]]
            return out
    return None


def _played_whole(collective: str, algorithm: str, topology: Any,
                  terms: Sequence[tuple[Any, ...]], orders: Orders, counts: np.ndarray,
                  ds: int, params: tuple[tuple[str, Any], ...]
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """A chain's ReduceScatter over ports (:func:`_ports`) played whole under each of
    ``terms``: on one channel (:func:`.chain_play._chain_time`) of at most
    :data:`WHOLE_CHAIN_RANKS` ranks at the ``counts`` (elements of the vector) whose
    blocks are cut into uneven segments (:func:`_cut_unevenly`), of at most
    :data:`FULL_CHAIN_RANKS` at those whose every segment holds an element too; on
    several channels of one order (:func:`.chain_play._channels_time`) of at most
    :data:`WHOLE_CHAIN_RANKS` at every count.  The times (terms x counts, NaN at the
    others) and where they are; None where it is not such a chain."""
    q, channels = len(orders[0]), len(orders)
    if collective != "reduce_scatter" or algorithm != "pipeline" or q > FULL_CHAIN_RANKS \
            or channels > 1 and (q > WHOLE_CHAIN_RANKS
                                 or any(tuple(o) != tuple(orders[0]) for o in orders)):
        return None
    ports = _ports(topology, tuple(orders[0]))
    figures = None if ports is None else _port_figures(terms, ports)
    if figures is None:
        return None
    segments = int(dict(params)["segments"])
    if channels > 1:  # the extension from shorter chains is off at most counts
        played = np.ones(len(counts), dtype=bool)
    else:
        played = _cut_unevenly(q, counts, segments)
        if q > WHOLE_CHAIN_RANKS:  # few such counts a table: blocks of an element a segment
            played &= counts // q >= segments
    if not played.any():
        return None
    from .chain_play import _chain_time, _channels_time  # Numba, imported where played
    late = np.array([int(0 < r < q - 1 and (q - 1 - 2 * r) * (segments - 1) == 0)
                     for r in range(q)], dtype=np.int64)
    out = np.full((len(terms), len(counts)), np.nan)
    for k in np.flatnonzero(played).tolist():
        units, weights = _channel_units(q, int(counts[k]), segments, channels)
        for t, (latency, bandwidth, reduce) in enumerate(figures):
            out[t, k] = _chain_time(q, segments, units[0], late, latency, ds / bandwidth,
                                    ds * reduce) if channels == 1 else \
                _channels_time(q, segments, units, weights, late, latency, ds / bandwidth,
                               ds * reduce)
    return out, played


def _cut_unevenly(q: int, counts: np.ndarray, segments: int) -> np.ndarray:
    """Per count (elements of the vector) whether a chain of ``q`` ranks cuts some
    block (``count // q`` elements, the first ``count % q`` one more) into unequal
    ``segments``."""
    whole, larger = np.divmod(counts, q)
    return (whole % segments != 0) | ((larger > 0) & ((whole + 1) % segments != 0))


def _channel_units(q: int, count: int, segments: int, channels: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The elements of every block's segments (blocks ``0 .. q-1`` in order, the first
    ``count % q`` one element larger) in each group of alike channels (a row a group):
    channel ``c`` takes part ``c`` of every block, each cut as
    :func:`collectives.layout.splits` cuts it (the larger parts and segments first);
    and the channels of each group."""
    sizes = count // q + (np.arange(q) < count % q)
    parts = sizes[None, :] // channels + (np.arange(channels)[:, None] < sizes % channels)
    groups, weights = np.unique(parts, axis=0, return_counts=True)
    whole, larger = np.divmod(groups, segments)
    units = whole[:, :, None] + (np.arange(segments) < larger[:, :, None])
    return units.reshape(len(groups), -1).astype(np.int64), weights.astype(float)


@functools.lru_cache(maxsize=64)
def _ports(topology: Any, order: tuple[int, ...]) -> tuple[int, ...] | None:
    """The links of a chain over ``order`` of ``topology`` where each rank's messages to
    its neighbours take two links, its sends one of its own first (its port) and its
    receives another last: those links; else None (:func:`_played_whole`)."""
    pairs = [(order[r], order[r + d]) for r in range(len(order)) for d in (-1, 1)
             if 0 <= r + d < len(order)]
    routes = [topology.route(*pair) for pair in pairs]
    if any(len(route) != 2 for route in routes):
        return None
    ports: dict[tuple[int, int], set[int]] = {}  # (rank, 0: sends, 1: receives)
    for (sender, receiver), route in zip(pairs, routes):
        ports.setdefault((sender, 0), set()).add(route[0])
        ports.setdefault((receiver, 1), set()).add(route[1])
    links = [link for own in ports.values() for link in own]
    if any(len(own) != 1 for own in ports.values()) or len(set(links)) != len(links):
        return None
    return tuple(sorted(links))


def _port_figures(terms: Sequence[tuple[Any, ...]], ports: tuple[int, ...]
                  ) -> list[tuple[float, float, float]] | None:
    """Per term a message's latency (its two ports'), bandwidth and seconds per byte
    reduced over ``ports`` (:func:`_ports`), where they are all of one latency and
    bandwidth and no term has a slot or shares; else None."""
    used = np.array(ports)
    out = []
    for latency, bandwidth, slot, shares, reduce in terms:
        if slot is not None or shares is not None or np.ptp(latency[used]) \
                or np.ptp(bandwidth[used]):
            return None
        out.append((2.0 * float(latency[used[0]]), float(bandwidth[used[0]]), float(reduce)))
    return out


def _based(q: int, lengths: np.ndarray, steps: np.ndarray, ray: bool) -> np.ndarray:
    """The shorter side and the difference (``lengths``, 2 x counts) of the chain
    :func:`_shortened` plays first for a chain of ``q`` ranks at ``steps`` (2 x 1):
    each as it is up to :data:`CHAIN_EDGE`, else past it by its remainder of its step;
    the difference, where the chain is long enough, so that the chain is of one length
    (the least past ``3 CHAIN_EDGE`` and two steps of the shorter side of ``q``'s
    remainder of the difference's step) at every count: few chains are played for many
    counts; where ``ray`` (a ReduceScatter, whose ways balance in the middle), at
    least the shorter side's times the ratio of the two (at most :data:`CHAIN_RATIO`),
    by its remainder of its step (:func:`_along_ray`)."""
    folded = np.where(lengths > CHAIN_EDGE, CHAIN_EDGE + (lengths - CHAIN_EDGE) % steps,
                      lengths)
    shorter, period = steps[:, 0].tolist()
    least = 3 * CHAIN_EDGE + 2 * shorter
    far = least + (q - least) % period - 2 * folded[0]
    apart = lengths[1]
    based = np.where((apart > CHAIN_EDGE) & (far <= apart), far, folded[1])
    if ray:
        based = np.maximum(based, _along_ray(lengths, folded[0], period))
    return np.stack([folded[0], based])


def _along_ray(lengths: np.ndarray, shorter: np.ndarray, period: int) -> np.ndarray:
    """The least difference, by the difference's remainder of ``period``, of at least
    ``shorter`` (the base's shorter side) times the ratio of the difference to the
    shorter side of ``lengths`` (2 x counts), the ratio at most :data:`CHAIN_RATIO`:
    the base chain's blocks in the same proportions as the chain's, where its time
    takes the same slopes (0 where the shorter side is empty)."""
    side, apart = lengths
    ratio = np.minimum(apart / np.maximum(side, 1), CHAIN_RATIO)
    wanted = np.ceil(shorter * ratio).astype(np.int64)
    return np.where(side > 0, apart - (apart - wanted) // period * period, 0)


def _extended_line(collective: str, algorithm: str, topology: Any,
                   terms: Sequence[tuple[Any, ...]], orders: Orders,
                   whole: np.ndarray, first_shorter: np.ndarray, lengths: np.ndarray,
                   base: np.ndarray, steps: np.ndarray, ds: int,
                   params: tuple[tuple[str, Any], ...]) -> np.ndarray | None:
    """:func:`_shortened` at ``steps``: the chain of the shorter side and the difference
    ``base`` (2 x counts; the larger blocks' side the shorter where ``first_shorter``)
    played, and each of ``lengths`` past its base extended along the line through a
    chain longer by its step in it; None where one is past the budgets."""
    def played(shape: np.ndarray, at: np.ndarray) -> np.ndarray | None:
        shorter, apart = shape
        sides = np.where(first_shorter[at], [shorter, shorter + apart],
                         [shorter + apart, shorter])
        return _chain_times(collective, algorithm, topology, terms, orders, whole[at], sides,
                            ds, params)
    # the longest chain first: none is played where one is past the budgets
    longest = _longest_chain(lengths, base, steps)
    if _extended(topology, _interned(tuple(order[:longest] for order in orders)),
                 list(_merged(collective, algorithm, longest, params, (params,)))):
        return None
    first = played(base, np.ones(len(whole), dtype=bool))
    if first is None:
        return None
    out = first.copy()
    for k, (length, start, step) in enumerate(zip(lengths, base, steps[:, 0].tolist())):
        at = length > start
        if not at.any():
            continue
        longer = base[:, at].copy()
        longer[k] += step
        times = played(longer, at)
        if times is None:
            return None
        out[:, at] += (length[at] - start[at]) // step * (times - first[:, at])
    return out


def _longest_chain(lengths: np.ndarray, base: np.ndarray, steps: np.ndarray) -> int:
    """The ranks of the longest chain :func:`_extended_line` plays: the base chain
    (``base``, 2 x counts: its shorter side, which counts twice, and the difference) or
    one a step longer in a length of ``lengths`` past its base."""
    ranks = 2 * base[0] + base[1]
    longer = [int(ranks[length > start].max()) + (2 - k) * step
              for k, (length, start, step) in enumerate(zip(lengths, base,
                                                            steps[:, 0].tolist()))
              if (length > start).any()]
    return max([int(ranks.max()), *longer])


def _chain_times(collective: str, algorithm: str, topology: Any,
                 terms: Sequence[tuple[Any, ...]], orders: Orders, whole: np.ndarray,
                 sides: np.ndarray, ds: int,
                 params: tuple[tuple[str, Any], ...]) -> np.ndarray | None:
    """Chains of the first ranks of ``orders`` holding ``sides`` (2 x counts) blocks of
    ``whole + 1`` and of ``whole`` elements, each channel its part of them
    (:func:`_channel_parts`), each played (:func:`_flat_time`), at each
    count under each of ``terms`` (protocols x counts); None where one is past the
    play's budgets."""
    lengths = sides.sum(axis=0)
    out = np.empty((len(terms), len(lengths)))
    for length in np.unique(lengths).tolist():
        # a description is cached by its orders
        short = _interned(tuple(order[:length] for order in orders))
        if _extended(topology, short, list(_merged(collective, algorithm, length, params,
                                                   (params,)))):
            return None
        at = lengths == length
        parts, piece = _channel_parts(collective, topology, short,
                                      whole[at] * length + sides[0, at], ds)
        out[:, at] = _flat_time(collective, algorithm, topology, terms, short, parts, ds,
                                dict(params), piece, held=True)
    return out


def _holders(orders: Orders, counts: np.ndarray) -> list[tuple[int, ...] | None]:
    """Per size (a column of ``counts``, orders x sizes) the order of the channel whose
    blocks are unequal, where it is not the ranks' own (else None): the one whose
    elements are not a multiple of its ranks (:func:`collectives.traffic.channel_counts`:
    a channel's part of the first ``count % q`` ranks' blocks is one larger than of the
    others' on one channel only), which holds the larger at its order's positions of
    those ranks, not at its first ones (``dgx_h100(2)``'s tree AllGather over 4
    channels at 2 segments, 18 elements: channel 1's of ranks 0 and 1 at positions 7
    and 0; charged at positions 0 and 1, -19.5%); the other channels' are equal."""
    own = tuple(range(len(orders[0])))
    if len(counts) != len(orders):  # every order alike
        return [None] * counts.shape[1]
    uneven = counts % len(own) != 0
    return [orders[int(np.argmax(column))] if column.any() and
            orders[int(np.argmax(column))] != own else None for column in uneven.T]


@functools.lru_cache(maxsize=256)
def _merged(collective: str, algorithm: str, q: int, given: tuple[tuple[str, Any], ...],
            keys: tuple[tuple[tuple[str, Any], ...], ...],
            holders: tuple[int, ...] | None = None, played: int = 0,
            unlike: bool = False) -> tuple[Any, ...]:
    """The description of channels whose counts resolve ``algorithm``'s parameters
    (``given``) to each of ``keys`` (a tree's segments, fewer where a channel holds
    few elements), cached: their rounds side by side (:func:`_side_rounds`), each
    class carrying nothing at a count that resolves to another's (so left out: its
    messages skip empty ones); the first's alone where they cannot be.  ``holders``:
    the rank whose block each position holds where its blocks are unequal
    (:func:`_holders`; None: its own).  ``played``: the channels whose every rank's
    messages are played (:attr:`Algorithm.played_by
    <collectives.registry.Algorithm.played_by>`; 0: not played), on a machine of
    unlike links where ``unlike``."""
    held = (() if holders is None else (("holders", holders),)) \
        + ((("played", played),) if played else ()) \
        + ((("unlike", True),) if played and unlike else ())
    described = [describe(collective, algorithm, q, key + held) for key in keys]
    merged = _side_rounds(described) if len(keys) > 1 and all(
        m.skip_empty for rounds in described for r in rounds for m in r.messages) else None
    if merged is None:
        return described[0]
    entry = registered(algorithm)

    def own(counts: np.ndarray, key: tuple[tuple[str, Any], ...]) -> np.ndarray:
        return np.array([_resolved(entry, collective, q, n, given) == key
                         for n in counts.tolist()], dtype=bool)

    def masked(elements: Callable[[np.ndarray], np.ndarray],
               key: tuple[tuple[str, Any], ...]) -> Callable[[np.ndarray], np.ndarray]:
        def carried(counts: np.ndarray) -> np.ndarray:
            return np.where(own(counts, key), elements(counts), 0)
        return carried

    def masked_sizes(sizes: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None,
                     key: tuple[tuple[str, Any], ...]
                     ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
        if sizes is None:
            return None

        def carried(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            elements, start = sizes(counts)
            return np.where(own(counts, key), elements, 0), start
        return carried
    return tuple(dataclasses.replace(r, messages=tuple(
        dataclasses.replace(m, elements=masked(m.elements, keys[d]),
                            sizes=masked_sizes(m.sizes, keys[d])) for d, m in classes))
        for r, classes in merged)


def _side_rounds(described: list[tuple[Any, ...]]) -> list[tuple[Any, list[Any]]] | None:
    """Descriptions' rounds side by side: per round one of them (its kind) and every
    class then, with the number of its description, ``(d, class)``: paced rounds one by
    one, lock-step ones cut where any of them changes classes (as the channels' steps
    merge round by round); None where they are neither all paced nor all lock-step."""
    if all(r.paced for rounds in described for r in rounds):
        return [(next(r for r in together if r is not None),
                 [(d, m) for d, r in enumerate(together) if r is not None for m in r.messages])
                for together in itertools.zip_longest(*described)]
    if any(r.paced or r.chain for rounds in described for r in rounds):
        return None
    ends = [np.cumsum([r.repeat for r in rounds]) for rounds in described]
    cuts = np.unique(np.concatenate(ends))
    side = []
    for lo, hi in zip(np.r_[0, cuts[:-1]].tolist(), cuts.tolist()):
        at = [int(np.searchsorted(e, lo, side="right")) for e in ends]
        classes = [(d, m) for d, (rounds, k) in enumerate(zip(described, at))
                   if k < len(rounds) for m in rounds[k].messages]
        if classes:
            side.append((Round(hi - lo, ()), classes))
    return side


@functools.lru_cache(maxsize=256)
def _placed(algorithm: str, channels: int, topology: Any,
            nranks: int) -> tuple[Orders, tuple[tuple[str, Any], ...]]:
    """Every channel's order and the parameters the machine adds (the tree's
    ``ranks_per_node``), as :func:`schedule_params` gives the simulated tables."""
    added = schedule_params(algorithm, (("channels", channels),), topology, nranks)
    order = added.pop("order", None)
    added.pop("channels")
    orders = (tuple(range(nranks)),) * channels if order is None else tuple(order)
    return _interned(orders), tuple(added.items())


_ORDERS: dict[Orders, Orders] = {}


def _interned(orders: Orders) -> Orders:
    """One object for equal ``orders`` (the layouts are cached by the orders'
    identity): the first channels of a table's every channel count, where the others
    carry nothing (:func:`_unlike_time`), share the layouts of the fewer channels'."""
    return _ORDERS.setdefault(orders, orders)


def _piece(parts: int, counts: np.ndarray, ds: int) -> np.ndarray:
    """Bytes of the largest of ``parts`` blocks of the vector."""
    return _ceil_div(counts, parts) * ds


def _time(collective: str, algorithm: str, topology: Any, terms: Sequence[tuple[Any, ...]],
          nranks: int, counts: np.ndarray, ds: int, params: dict[str, Any]) -> np.ndarray:
    """Seconds of ``algorithm`` at every count under each of ``terms`` (protocols x
    counts), without the cost per call."""
    channels = params.pop("channels", 1)
    params.pop("order", None)
    if registered(algorithm).composed:
        phases = describe(collective, algorithm, nranks, tuple(sorted(params.items())))
        if collective == "reduce_scatter" and _rails_apart_exact(phases, topology):
            return _rails_apart(phases, topology, terms, counts, ds, channels)
        total = np.zeros((len(terms), len(counts)))
        for phase in phases:
            total += _phase_time(collective, phase, topology, terms, counts, ds, channels)
        return total
    orders, added = _placed(algorithm, channels, topology, nranks)
    if _exchanged(collective, algorithm, params, topology, orders, counts):
        return _exchange_time(topology, terms, orders[0], counts * ds)
    parts, piece = _channel_parts(collective, topology, orders, counts, ds)
    shifted = _shifted(collective, algorithm, params, topology, orders, counts)
    if shifted is not None:
        return _shift_time(shifted, terms, parts[0], ds, None if piece is None else piece[0])
    if len(_link_classes(topology)[1]) == 1:
        if registered(algorithm).empty_sends or len(parts) != len(orders):
            return _flat_time(collective, algorithm, topology, terms, orders, parts, ds,
                              {**params, **dict(added)}, piece, held=True)
        return _live_time(collective, algorithm, topology, terms, orders, parts, ds,
                          {**params, **dict(added)}, piece)
    return _unlike_time(collective, algorithm, topology, terms, orders, parts, ds,
                        {**params, **dict(added)}, piece)


def _exchanged(collective: str, algorithm: str, params: dict[str, Any], topology: Any,
               orders: Orders, counts: np.ndarray) -> bool:
    """Whether ``algorithm`` is priced as exchange rounds played rank by rank
    (:func:`_exchange_time`): described as exchange rounds by distance, every message of
    the count (:func:`_exchange_rounds`: pairwise AllToAll without per-peer counts), on
    one order of a machine of unlike links, its messages past :data:`WHOLE_TOTAL`
    (below, every rank's are routed as lock-step rounds) but within
    :data:`EXCHANGE_TOTAL`."""
    q = len(orders[0])
    return len(orders) == 1 and len(_link_classes(topology)[1]) > 1 \
        and WHOLE_TOTAL < q * (q - 1) <= EXCHANGE_TOTAL and _exchange_rounds(
            describe(collective, algorithm, q, tuple(sorted(params.items()))), q, counts)


def _shifted(collective: str, algorithm: str, params: dict[str, Any], topology: Any,
             orders: Orders, counts: np.ndarray) -> Any:
    """The shift rounds that price ``algorithm`` as fluid events (:func:`_shift_time`)
    where it is so priced, else None: on one order of a machine of unlike links, its
    parameters resolved alike at every count, described as shift rounds that
    :func:`.shifts._shifts` plays (Bruck's AllGather on a DGX's spines, within
    :data:`~.budgets.SHIFT_MESSAGES`)."""
    if len(orders) != 1 or len(_link_classes(topology)[1]) == 1:
        return None
    q, given = len(orders[0]), tuple(sorted(params.items()))
    entry = registered(algorithm)
    resolved = {_resolved(entry, collective, q, n, given) for n in np.unique(counts).tolist()}
    if len(resolved) != 1:
        return None
    return _shifts(topology, orders[0], describe(collective, algorithm, q, resolved.pop()))


#: node phases (hier's ``intra``) of 2 ranks in which a position is done once its own
#: rail's part is through: the ring's and rhd's one exchange, the chain's two streams.
#: The tree's is not (``default_flat(24)``, inner pipeline, 217 elements: -2.8e-5
#: charged so).
OWN_PART_INTRA = frozenset({"ring", "rhd", "pipeline"})


def _rails_apart_exact(phases: Sequence[Phase], topology: Any) -> bool:
    """Whether :func:`_rails_apart` prices hier's ReduceScatter ``phases``: on a machine
    of alike links and at least 2 ranks a node, where the node's phase is a ring, or of
    :data:`OWN_PART_INTRA` at 2 ranks a node (where :func:`_smaller_positions` was
    measured exact)."""
    within, size = phases[0], len(phases[0].groups[0])
    return len(_link_classes(topology)[1]) == 1 and size >= 2 and (
        within.algorithm == "ring" or size == 2 and within.algorithm in OWN_PART_INTRA)


def _rails_apart(phases: Sequence[Phase], topology: Any, terms: Sequence[tuple[Any, ...]],
                 counts: np.ndarray, ds: int, channels: int) -> np.ndarray:
    """hier's ReduceScatter (a phase in each node, then one on each rail) on a machine
    of alike links, whose rails share no rank and no link: each rail starts its phase
    as soon as its local rank is done with the node's, so the time is the slowest rail's
    own sum, not the sum of the phases' slowest.  Where the count does not divide
    among the ``L`` rails, the first rails carry one element more (their blocks those
    of every rail at the count rounded up to a multiple of ``L``, the others' those at
    the count rounded down), and a rail's phase need not be the slower for it (the
    chain's is not: ``default_flat(24)`` of 2 ranks a node, inner pipeline, at 217
    elements +3.1e-5 as the sum of the phases' slowest; 3 ranks a node, 364 elements,
    +2.6e-5).  The node's phase is charged its slowest position for the larger rails,
    and :func:`_smaller_positions` for the others."""
    within, across = phases
    rails = across.fraction
    down = counts - counts % rails
    up = np.where(counts % rails, down + rails, counts)
    node = _phase_time("reduce_scatter", within, topology, terms,
                       np.concatenate([counts, down, up]), ds, channels)
    rail = _phase_time("reduce_scatter", across, topology, terms, np.concatenate([up, down]),
                       ds, channels)
    sizes = len(counts)
    smaller = _smaller_positions(node[:, :sizes], node[:, sizes:2 * sizes],
                                 node[:, 2 * sizes:], len(within.groups[0]))
    return np.maximum(node[:, :sizes] + rail[:, :sizes], smaller + rail[:, sizes:])


def _smaller_positions(slowest: np.ndarray, down: np.ndarray, up: np.ndarray,
                       q: int) -> np.ndarray:
    """When the node phase's positions of the smaller rails are done, from its time at
    the count (``slowest``), rounded down to a multiple of its ``q`` positions (``down``:
    every rail a smaller one's blocks) and up (``up``: a larger one's): at 2 positions
    its time rounded down (a position waits on its own part only, as
    :data:`OWN_PART_INTRA` sends it); at more, the ring's, each of whose ``q - 1`` steps
    carries some larger rail's block and lasts as long as it, a smaller position's last
    step its own block: a step's difference earlier than the slowest.  Exact against
    the simulator on ``default_flat(24)`` and ``(30)`` at 2 to 8 ranks a node (each
    that divides the ranks), a ring in the node, inner ring, rhd, tree and pipeline,
    1-2 channels, 156 counts from 0 to 4,951 (11,232 cases); at 2 ranks a node every
    node phase of :data:`OWN_PART_INTRA` too."""
    if q == 2:
        return down
    return slowest - (up - down) / (q - 1)


def _unlike_time(collective: str, algorithm: str, topology: Any,
                 terms: Sequence[tuple[Any, ...]], orders: Orders, counts: np.ndarray,
                 ds: int, params: dict[str, Any], piece: np.ndarray | None) -> np.ndarray:
    """:func:`_flat_time` on a machine of unlike links, each channel at its own part
    (``counts``, orders x sizes; its runs ``piece``, as ``counts`` or a row).  Where a
    channel of no elements sends nothing (:attr:`collectives.registry.Algorithm.empty_sends`
    False: the tree, the chain), only the channels that carry something are priced (the
    first ones: a channel's part never grows with its number), in groups of equal parts
    (:func:`_channel_groups`) however far apart: at a few elements a block the channels
    that carry something meet on their links, and how their rounds fall together is
    what the time is made of (``dgx_h100(3)``'s tree AllGather over 2 channels at 2
    segments, 15 to 44 elements, 15 to 24 on channel 0 alone: the parts each priced with
    both channels carrying it were up to +12.1%; the groups exact).  Elsewhere as
    :func:`_near_or_slowest`, and past :data:`FAR_GROUP_RANKS` ranks."""
    if registered(algorithm).empty_sends or topology.nranks > FAR_GROUP_RANKS:
        return _near_or_slowest(collective, algorithm, topology, terms, orders, counts, ds,
                                params, piece)
    return _live_time(collective, algorithm, topology, terms, orders, counts, ds, params,
                      piece)


def _live_time(collective: str, algorithm: str, topology: Any,
               terms: Sequence[tuple[Any, ...]], orders: Orders, counts: np.ndarray,
               ds: int, params: dict[str, Any], piece: np.ndarray | None) -> np.ndarray:
    """:func:`_flat_time` of only the channels that carry something at each size (the
    first ones: a channel's part never grows with its number), where a channel of no
    elements sends nothing (``counts``, orders x sizes; its runs ``piece``, as
    ``counts`` or a row): on every machine, so that the empty channels' messages,
    left out of the play, do not take a round past its fill
    (:data:`~simulator.analytic.budgets.FILL_MESSAGES`: ``default_flat(64)``'s tree
    AllGather over 8 channels at 2 segments, 63 elements, all on channel 0, has a round
    of 2,408 with the 7 others; each port's queue played on its own, under by 4.1e-5)."""
    live = np.maximum(np.count_nonzero(counts, axis=0), 1)
    out = np.empty((len(terms), counts.shape[1]))
    for k in np.unique(live).tolist():
        at = live == k
        out[:, at] = _flat_time(collective, algorithm, topology, terms,
                                _first_orders(orders, k), counts[:k, at], ds, params,
                                None if piece is None else piece[:k, at], held=True)
    return out


_FIRST: dict[Any, tuple[tuple[Any, ...], Orders]] = {}


def _first_orders(orders: Orders, k: int) -> Orders:
    """The first ``k`` of ``orders``, the same object at every call and for equal
    orders (:func:`_interned`)."""
    if k == len(orders):
        return orders
    return _cached(_FIRST, (id(orders), k), (orders,), lambda: _interned(orders[:k]))


def _near_or_slowest(collective: str, algorithm: str, topology: Any,
                     terms: Sequence[tuple[Any, ...]], orders: Orders, counts: np.ndarray,
                     ds: int, params: dict[str, Any], piece: np.ndarray | None) -> np.ndarray:
    """:func:`_unlike_time` where a channel of no elements still sends: where the parts
    at a size are within :data:`NEAR_PARTS` of the largest, in groups of equal parts
    (:func:`_channel_groups`, as on flat); elsewhere every distinct part (and run)
    priced with every order carrying it, on the orders' one layout, and the slowest
    taken (:func:`_slowest_part`).  The parts say which channels send nothing and how
    each channel's blocks are cut: two DGX nodes' tree AllGather at 12, 388 and
    4,000,012 bytes, every channel charged ``ceil(count / C)``, was -32%, +28% and
    +5.2% against the DES.  Groups at every size (a layout for each pattern of parts)
    cost the three tables on 16 DGX nodes 2.6 -> 4.0 CPU s, mostly the pipeline's
    (none of whose cases is measured off)."""
    low, high = counts.min(axis=0), counts.max(axis=0)
    near = (low < high) & (high - low <= NEAR_PARTS * high)
    out = np.empty((len(terms), counts.shape[1]))
    if near.any():
        out[:, near] = _flat_time(collective, algorithm, topology, terms, orders,
                                  counts[:, near], ds, params,
                                  None if piece is None else piece[:, near], held=True)
    if not near.all():
        far = ~near
        out[:, far] = _slowest_part(collective, algorithm, topology, terms, orders,
                                    counts[:, far], ds, params,
                                    None if piece is None else piece[:, far])
    return out


def _slowest_part(collective: str, algorithm: str, topology: Any,
                  terms: Sequence[tuple[Any, ...]], orders: Orders, counts: np.ndarray,
                  ds: int, params: dict[str, Any], piece: np.ndarray | None) -> np.ndarray:
    """:func:`_flat_time` at every distinct part of ``counts`` (and run of ``piece``)
    at each size, each with every order carrying it, the slowest taken."""
    if len(counts) == 1:
        return _flat_time(collective, algorithm, topology, terms, orders, counts, ds, params,
                          piece)
    runs = counts if piece is None else np.broadcast_to(piece, counts.shape)
    distinct = [sorted(set(zip(c, r))) for c, r in zip(counts.T.tolist(), runs.T.tolist())]
    size = np.repeat(np.arange(len(distinct)), [len(d) for d in distinct])
    parts, run = np.array([p for d in distinct for p in d], dtype=np.int64).T
    times = _flat_time(collective, algorithm, topology, terms, orders, parts[None, :], ds,
                       params, None if piece is None else run[None, :])
    out = np.full((len(terms), counts.shape[1]), -np.inf)
    np.maximum.at(out.T, size, times.T)
    return out


def _channel_parts(collective: str, topology: Any, orders: Orders, counts: np.ndarray,
                   ds: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Each channel's (of ``orders``) elements at every count and the bytes of the
    runs of the buffer its vector lies in (None where it is one run): a ReduceScatter's
    or AllGather's block lies at its rank's place in the buffer, so a channel's part of
    it (its longest run), or, on an order that is not the ranks' own, the whole block,
    is a run apart from its neighbours in the order.  Each channel's elements are its
    own part (:func:`collectives.traffic.channel_counts`, as the simulated schedules
    cut them), but for collectives that are not cut so, where every channel is charged
    the largest, ``ceil(count / channels)`` (one row)."""
    channels, nranks = len(orders), len(orders[0])
    blocks = collective in ("reduce_scatter", "allgather")
    if collective in BLOCK_COLLECTIVES:
        parts = channel_counts(collective, nranks, channels, counts)
        if blocks and channels > 1:
            return parts, channel_runs(nranks, channels, counts) * ds
    else:
        parts = _ceil_div(counts, channels)[None, :]
    cut = channels > 1 or orders[0] != tuple(range(nranks))
    return parts, (_ceil_div(_ceil_div(counts, nranks), channels)[None, :] * ds
                   if blocks and cut else None)


_PHASE_ORDERS: dict[Any, tuple[tuple[Any, ...], Orders]] = {}


def _phase_time(collective: str, phase: Phase, topology: Any, terms: Sequence[tuple[Any, ...]],
                counts: np.ndarray, ds: int, channels: int) -> np.ndarray:
    """One phase of a composed algorithm: every group ``channels`` times side by side
    (protocols x counts)."""
    orders = _cached(_PHASE_ORDERS, (id(phase.groups), channels), (phase.groups,),
                     lambda: tuple(group for group in phase.groups for _ in range(channels)))
    cut = channels > 1 or collective in ("reduce_scatter", "allgather")
    elements = _phase_elements(phase, topology, counts, channels)
    # a group's vector lies in the phase's blocks apart in the buffer (so many of them),
    # and a channel takes its part of each group rank's block
    # (:func:`collectives.compose.channel_parts`): runs of a whole block of the buffer or
    # of that part, the smaller; every message over several (a ring's block too) goes as
    # a transfer per run
    runs = phase.piece // phase.fraction if phase.piece is not None and cut else 0
    piece = np.minimum(_piece(runs * phase.fraction, counts, ds),
                       _ceil_div(elements, len(phase.groups[0])) * ds) if runs else None
    return _flat_time(phase.collective, phase.algorithm, topology, terms, orders,
                      elements, ds, {}, piece, apart=runs)


def _phase_elements(phase: Phase, topology: Any, counts: np.ndarray,
                    channels: int) -> np.ndarray:
    """Elements of each of a phase's orders (every group's ``channels``, group by group)
    at every count: each order its own part (:func:`collectives.traffic.phase_counts`,
    as the simulated schedules cut them; orders x counts, priced in groups of equal
    parts by :func:`_flat_time`) at the counts where the parts differ, on a machine of
    alike links and, as :func:`_unlike_time` prices a flat algorithm's channels, for
    one whose empty channel sends nothing (the tree, the chain: where their segments
    and blocks meet is what their messages are cut at) up to :data:`FAR_GROUP_RANKS`
    ranks; elsewhere where the parts resolve the algorithm's parameters differently (a
    tree's segments, from its part's half); at the other counts every order at the
    largest channel's, ``ceil(ceil(count / fraction) / channels)`` (a row).  On a
    machine of unlike links (DGX), whose groups (rails, nodes) share no rank and no
    link, every group's channels are the first's (its part the largest): rails at
    their own parts are kinds apart that :func:`_one_of_alike` plays each, which took
    hier's inner tree's three tables on 64 nodes from 0.96 to 1.71 CPU s, with no
    case of the grids below moved past 1e-6.

    hier's inner tree on ``dgx_h100(3)`` over 8 channels at 64 MiB (rails of 2,097,152
    elements; channels 0 and 1 of 262,146 at 2 segments, the others of at most 262,145
    at 1), every channel at 262,144 (1 segment): ReduceScatter under Simple -6.4%,
    AllGather under LL +4.2%; over 2 channels at 40 MB (channel 1 of 624,999 elements,
    whose segment of its first half crosses a block by one element) AllGather under
    Simple -5.4%; on ``default_flat(8)`` of 2 ranks a node over 2 channels at 7
    elements the tree's AllGather -40%, and at up to 65,537 elements on 8 to 16 ranks
    ring, rhd and the tree up to +3.0e-4; each exact at its own part."""
    largest = _ceil_div(_ceil_div(counts, phase.fraction), channels)[None, :]
    parts = phase_counts(phase, channels, counts)
    entry = registered(phase.algorithm)
    alike = len(_link_classes(topology)[1]) == 1
    if not alike:  # groups that share no rank and no link: the first's (largest) for all
        parts = parts[:channels]
    if alike or (not entry.empty_sends and topology.nranks <= FAR_GROUP_RANKS):
        apart = parts.min(axis=0) != parts.max(axis=0)
    else:
        apart = _resolved_apart(entry, phase.collective, len(phase.groups[0]), parts)
    if not apart.any():
        return largest
    kinds = np.arange(len(phase.groups)) % (len(parts) // channels)
    rows = kinds[:, None] * channels + np.arange(channels)
    return np.where(apart, parts[rows.ravel()], largest)


def _resolved_apart(entry: Algorithm, collective: str, q: int, parts: np.ndarray) -> np.ndarray:
    """Per count (a column of ``parts``: elements of orders' vectors on ``q`` positions)
    whether they resolve ``entry``'s parameters for ``collective`` differently."""
    values, inverse = np.unique(parts, return_inverse=True)
    numbers: dict[Any, int] = {}  # each distinct resolution numbered as it first comes
    resolved = np.array([numbers.setdefault(_resolved(entry, collective, q, n, ()), len(numbers))
                         for n in values.tolist()])[inverse].reshape(parts.shape)
    return resolved.min(axis=0) != resolved.max(axis=0)


def _check(collective: str, algorithm: str, params: dict[str, Any]) -> None:
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    entry = registered(algorithm)
    entry.check_collective(collective)
    taken = entry.defaults
    unknown = sorted(set(params) - set(taken))
    if unknown:
        raise TypeError(f"parameter {unknown[0]!r} is not taken by algorithm {brief(algorithm)}; "
                        f"it takes {sorted(taken)}")
    check_int(params.get("channels", 1), "channels", 1)


def price(collective: str, algorithm: str, topology: Any, sizes: Sequence[int],
          nranks: int | None = None, dtype_size: int = 4, protocol: str | None = None,
          **params: Any) -> np.ndarray:
    """The analytic time of ``algorithm`` on ``topology`` at each of ``sizes``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    algorithm : str
        A registered algorithm that serves ``collective`` (``hier`` needs
        ``ranks_per_node``).
    topology : topology.Topology
        The machine.
    sizes : sequence of int
        Bytes of the vector, for AllToAll of every rank's send buffer
        (:func:`collectives.layout.count_of`); each is rounded down to whole elements.
    nranks : int, optional
        Ranks, from rank 0 (default all of the topology's).
    dtype_size : int, optional
        Bytes per element (default 4).
    protocol : str, optional
        A protocol of ``topology.gpu`` (its default when None); None without one.  The
        machine is taken under ``algorithm``'s figures of ``topology.gpu`` where it has
        some (:func:`simulator.gpu.gpu_terms`).
    **params
        The algorithm's parameters, ``channels`` included (``order`` is taken from the
        machine, the algorithm's ``orders``).

    Returns
    -------
    numpy.ndarray
        Seconds, one per size, the call's fixed cost of the GPU model included.

    Raises
    ------
    ValueError, TypeError
        For an unknown collective, algorithm or parameter, and as
        :func:`simulator.gpu.resolve_protocol` and the algorithm's ``resolve_params``.

    Examples
    --------
    >>> import topology
    >>> two = topology.dgx_h100(2, gpu_model=None)
    >>> one, eight = (price("allreduce", "ring", two, [1 << 30], channels=c)[0] for c in (1, 8))
    >>> round(one / eight)  # eight rings, each on its own NIC
    8
    """
    return price_protocols(collective, algorithm, topology, sizes, (protocol,), nranks,
                           dtype_size, **params)[0]


def price_protocols(collective: str, algorithm: str, topology: Any, sizes: Sequence[int],
                    protocols: Sequence[str | None], nranks: int | None = None,
                    dtype_size: int = 4, **params: Any) -> np.ndarray:
    """:func:`price` under each of ``protocols`` at once (see there for the other
    parameters): the rows are routed once, and the paced rounds played rank by rank are
    played once for all protocols, their sizes side by side.

    Returns
    -------
    numpy.ndarray
        Seconds, protocols x sizes: row ``k`` is ``price(..., protocol=protocols[k])``.

    Examples
    --------
    >>> import topology
    >>> one = topology.dgx_h100(1)
    >>> both = price_protocols("allreduce", "tree", one, [1 << 20], ["LL", "Simple"])
    >>> [bool(t == price("allreduce", "tree", one, [1 << 20], protocol=p)[0])
    ...  for t, p in zip(both[:, 0], ["LL", "Simple"])]
    [True, True]
    """
    _check(collective, algorithm, params)
    check_int(dtype_size, "dtype_size", 1)
    figures = [link_figures(topology, protocol, algorithm, params.get("channels", 1))
               for protocol in protocols]
    nranks = topology.nranks if nranks is None else nranks
    check_int(nranks, "nranks", 1, topology.nranks,
              note=f" (the ranks topology {topology.name!r} places)")
    counts = count_of(collective, np.asarray(sizes, dtype=np.int64), dtype_size, nranks)
    call_s = np.array([f[-1] for f in figures])[:, None]
    return call_s + _time(collective, algorithm, topology, [tuple(f[:-1]) for f in figures],
                          nranks, counts, dtype_size, dict(params))


def price_one(collective: str, algorithm: str, topology: Any, nbytes: int,
              nranks: int | None = None, dtype_size: int = 4, protocol: str | None = None,
              **params: Any) -> float:
    """:func:`price` at one size (see there for the parameters).

    Examples
    --------
    >>> import topology
    >>> flat = topology.flat(4, alpha=1e-6, beta=1e-9)
    >>> round(price_one("allreduce", "ring", flat, 4096) * 1e6, 4)
    12.144
    """
    check_int(nbytes, "nbytes", 0)
    return float(price(collective, algorithm, topology, [nbytes], nranks, dtype_size, protocol,
                       **params)[0])
