"""Schedules made of schedules: channels side by side, phases one after another.

A :class:`Part` is one algorithm run by some of the ranks (``ranks[v]`` plays rank ``v``)
on a virtual vector that a :class:`~collectives.placement.Placement` lays onto the real
working buffer.  :func:`channel_parts` cuts a vector into channels, each a part with its
own rank order; :func:`composed` makes one schedule of *phases*, each a list of parts
that run together.

Every part yields its rank's operations as lanes on the part's global clock of rounds
(an algorithm without lanes, such as rhd, gives each step's round through
``step_rounds``).  Within a phase the lanes of all parts are merged round by round, so
the channels' operations share steps and progress together; since the send and the
receive of every message fall in the same round, the k-th send from ``a`` to ``b``
still meets the k-th receive at ``b`` from ``a`` (ordered by round, then part, then the
part's own order).  Phases follow each other per rank.  The schedule keeps its lanes,
so the simulator reads a composed schedule as arrays as it reads a plain one; where a
part's vector lies in several pieces of the real one (ReduceScatter's and AllGather's
channels take a part of every block), each lane is cut into a lane per piece it spans,
and the schedule also gives a rank's lanes as columns
(:class:`~collectives.rounds.LaneColumns`, computed with NumPy), which the simulator
reads instead of the millions of lanes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate, chain, islice
from typing import Any, Callable, NamedTuple, Sequence, TypeVar, cast

import numpy as np

from .gcpause import gc_paused
from .layout import block, split
from .placement import Placement
from .registry import Algorithm
from .rounds import GAP, Lane, LaneColumns, merge_lanes
from .schedule import Op, Recv, Schedule, Send, new_recv, new_send

__all__ = ["Part", "channel_parts", "composed", "identity_orders", "part_lanes"]

Range = tuple[int, int]
_new_tuple = tuple.__new__
#: what :func:`_recall` keeps
_Kept = TypeVar("_Kept")


@dataclass(frozen=True, eq=False)
class Part:
    """``module``'s ``collective`` run by ``ranks`` on ``placement``'s virtual vector.

    Parameters
    ----------
    module : Algorithm
        A flat algorithm of the registry (:mod:`collectives.registry`).
    collective : str
        The collective.
    ranks : tuple of int
        ``ranks[v]``: the real rank that plays rank ``v``.
    blocks : tuple of (int, int)
        Virtual block of each ``v`` (consecutive, covering the virtual vector).
    placement : Placement
        Where the virtual vector lies in the real working buffer.
    params : dict
        The algorithm's resolved parameters.
    """

    module: Algorithm
    collective: str
    ranks: tuple[int, ...]
    blocks: tuple[Range, ...]
    placement: Placement
    params: dict[str, Any]
    position: dict[int, int] = field(init=False, repr=False)
    real_blocks: tuple[Range, ...] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", {r: v for v, r in enumerate(self.ranks)})
        real = [self.placement.ranges(lo, hi) for lo, hi in self.blocks]
        within = self.collective in self.module.within_blocks
        object.__setattr__(self, "real_blocks", tuple(r[0] for r in real)
                           if within and all(len(r) == 1 for r in real) else None)


def channel_parts(module: Algorithm, collective: str, ranks: Sequence[int], placement: Placement,
                  blocks: Sequence[Range], orders: Sequence[Sequence[int]],
                  params: dict[str, Any]) -> list[Part]:
    """Cut a vector into ``len(orders)`` channels, channel ``c`` run over ``orders[c]``.

    AllReduce channels take near-equal contiguous parts of the vector; ReduceScatter and
    AllGather channels take part ``c`` of every rank's block (so that each rank's block
    stays its own in every channel).

    Parameters
    ----------
    module : Algorithm
        The flat algorithm of every channel.
    collective : str
        The collective.
    ranks : sequence of int
        Real rank of each of the ``q`` ranks of the vector.
    placement : Placement
        Where the vector lies in the real buffer.
    blocks : sequence of (int, int)
        Virtual block of each of the ``q`` ranks.
    orders : sequence of sequence of int
        Per channel, a permutation of ``0..q-1``: the algorithm's rank ``v`` is ``order[v]``.
    params : dict
        The algorithm's unresolved parameters, resolved per channel.

    Returns
    -------
    list of Part
        One per channel.
    """
    q, size, nchannels = len(ranks), placement.size, len(orders)
    parts = []
    for c, order in enumerate(orders):
        if collective == "allreduce":
            lo, hi = split(0, size, nchannels, c)
            sub, m = placement.take([(lo, hi)]), hi - lo
            vblocks = tuple(block(m, q, v) for v in range(q))
        else:
            pieces = [split(*blocks[order[v]], nchannels, c) for v in range(q)]
            sub = placement.take(pieces)
            edges = list(accumulate((hi - lo for lo, hi in pieces), initial=0))
            m, vblocks = edges[-1], tuple(zip(edges[:-1], edges[1:]))
        resolved = module.resolve_params(collective, q, m, **params)
        parts.append(Part(module, collective, tuple(ranks[v] for v in order), vblocks, sub,
                          resolved))
    return parts


def _module_lanes(part: Part, v: int, blocks: Sequence[Range]) -> list[Lane]:
    """The algorithm's lanes of rank ``v`` (steps become one-entry lanes at their rounds)."""
    module, q, m = part.module, len(part.ranks), part.placement.size
    if module.lanes is not None:
        return module.lanes(part.collective, v, q, m, blocks, **part.params)
    steps = module.rank_steps(part.collective, v, q, m, blocks, **part.params)
    rounds = (module.step_rounds(part.collective, v, q, **part.params)
              if module.step_rounds is not None else range(len(steps)))
    lanes = []
    for round_, step in zip(rounds, steps):
        for op in step.ops:
            if isinstance(op, Send):
                lanes.append(Lane(round_, new_send, op.peer, (op.start,), (op.stop,)))
            elif isinstance(op, Recv):
                lanes.append(Lane(round_, new_recv, op.peer, (op.start,), (op.stop,),
                                  (op.reduce, op.swap)))
            else:
                raise ValueError(f"{op}: local copies cannot be placed in channels or phases")
    return lanes


class _Shifted:
    """Sequences of starts or stops moved by a constant, each computed once while it is
    met again (every rank of a part reads the same segment tuples)."""

    def __init__(self, shift: int) -> None:
        self.shift = shift
        self.seen: dict[int, tuple[Any, tuple[int | None, ...]]] = {}

    def __call__(self, values: Sequence[int | None]) -> Sequence[int | None]:
        if not self.shift:
            return values
        known = self.seen.get(id(values))
        if known is not None and known[0] is values:
            return known[1]
        s = self.shift
        moved = (tuple(None if x is None else x + s for x in values) if None in values
                 else tuple(map(s.__add__, cast(Sequence[int], values))))  # at C speed
        if len(self.seen) > 64:
            self.seen.clear()
        self.seen[id(values)] = (values, moved)
        return moved


def _placed(lane: Lane, placement: Placement, peer: int) -> list[Lane]:
    """``lane`` with its virtual ranges mapped to real ones and its peer ``peer``: a lane
    per piece."""
    first, make, flags = lane.first_round, lane.make, lane.flags
    starts, stops = lane.starts, lane.stops
    if len(starts) == 1 == len(stops) and starts[0] is not None and stops[0] is not None:
        # one entry (a tree segment over a channel's runs: millions of lanes of 8-channel
        # trees on 64 nodes), without the general case's lists of cut entries, and made
        # by tuple.__new__, half the cost of Lane's generated __new__
        return [_new_tuple(Lane, (first, make, peer, [lo], [hi], flags))
                for lo, hi in placement.ranges(starts[0], stops[0])]
    cut = [None if a is None or b is None else placement.ranges(a, b)
           for a, b in zip(lane.starts, lane.stops)]
    width = max((len(pieces) for pieces in cut if pieces), default=0)
    return [Lane(first, make, peer, [p[j][0] if p and j < len(p) else None for p in cut],
                 [p[j][1] if p and j < len(p) else None for p in cut], flags)
            for j in range(width)]


def _values(sequences: Sequence[Sequence[int | None]], counts: Sequence[int]) -> np.ndarray:
    """The first ``counts[i]`` values of each of ``sequences``, one after another, as
    float64 (exact below 2**53), NaN for None."""
    return np.array(list(chain.from_iterable(map(islice, sequences, counts))), dtype=np.float64)


class _Entries(NamedTuple):
    """Lanes' entries as arrays, for :func:`_placed_columns`: each lane's entries, first
    round, peer (virtual), make and flags; the starts and stops of the entries that are
    not gaps, and which entries those are."""

    counts: np.ndarray
    first_rounds: np.ndarray
    peers: np.ndarray
    builders: list[tuple[Callable[..., Op], tuple[bool, ...]]]
    starts: np.ndarray
    stops: np.ndarray
    filled: np.ndarray


def _entries(lanes: Sequence[Lane]) -> _Entries:
    """``lanes`` as :class:`_Entries`."""
    counts = [min(len(each.starts), len(each.stops)) for each in lanes]
    starts = _values([each.starts for each in lanes], counts)
    stops = _values([each.stops for each in lanes], counts)
    filled = np.flatnonzero(~(np.isnan(starts) | np.isnan(stops)))
    return _Entries(np.array(counts, dtype=np.int64),
                    np.array([each.first_round for each in lanes], dtype=np.int64),
                    np.array([each.peer for each in lanes], dtype=np.int64),
                    [(each.make, each.flags) for each in lanes],
                    starts[filled].astype(np.int64), stops[filled].astype(np.int64), filled)


def _placed_columns(lanes: _Entries, placement: Placement) -> LaneColumns:
    """:func:`_placed` of every one of ``lanes``, as columns with virtual peers: lane ``i``
    cut into as many lanes as the most real ranges an entry of it maps to, lane ``j`` of
    them holding range ``j`` of each entry (a gap where the entry has fewer, or none);
    computed with NumPy for all lanes at once."""
    cuts = np.zeros(int(lanes.counts.sum()), dtype=np.int64)  # real ranges per entry (0: a gap)
    cuts[lanes.filled], pieces = placement.range_lengths(lanes.starts, lanes.stops)
    cut_of, sizes, there, piece = _cut_entries(lanes.counts, cuts)
    lengths = np.full(len(there), GAP, dtype=np.int64)
    lengths[there] = pieces[piece]
    return LaneColumns(lanes.first_rounds[cut_of], lanes.peers[cut_of], sizes,
                       lanes.builders, cut_of, lengths)


def _placed_starts(lanes: _Entries, placement: Placement) -> np.ndarray:
    """The real starts of :func:`_placed_columns`' entries, in the order of its lengths
    (:data:`~collectives.rounds.GAP` for a gap)."""
    cuts = np.zeros(int(lanes.counts.sum()), dtype=np.int64)
    cuts[lanes.filled], real = placement.range_starts(lanes.starts, lanes.stops)
    _, _, there, piece = _cut_entries(lanes.counts, cuts)
    starts = np.full(len(there), GAP, dtype=np.int64)
    starts[there] = real[piece]
    return starts


def _placed_pieces(lanes: _Entries, placement: Placement) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_placed_starts` as the placement's pieces (-1 for a gap) and offsets in
    them (:meth:`Placement.range_pieces`, for a placement that gives its ranges so): what
    every placement of the same piece lengths shares."""
    cuts = np.zeros(int(lanes.counts.sum()), dtype=np.int64)
    cuts[lanes.filled], pieces, offsets = placement.range_pieces(lanes.starts, lanes.stops)
    _, _, there, at = _cut_entries(lanes.counts, cuts)
    piece = np.full(len(there), -1, dtype=np.int64)
    offset = np.zeros(len(there), dtype=np.int64)
    piece[there], offset[there] = pieces[at], offsets[at]
    return piece, offset


def _starts_of_pieces(pieces: tuple[np.ndarray, np.ndarray], placement: Placement
                      ) -> np.ndarray:
    """The real starts of :func:`_placed_pieces`' ``pieces`` on ``placement``."""
    piece, offset = pieces
    starts = placement.piece_starts(piece) + offset
    starts[piece < 0] = GAP
    return starts


def _cut_entries(counts: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Lanes of ``counts`` entries whose entries map to ``cuts`` real ranges each (0: a
    gap), cut as :func:`_placed_columns` cuts them: per cut lane, the lane it is cut from
    and its entries; per entry of the cut lanes, whether it holds a range, and for those
    that do, which of the real ranges (numbered entry by entry) it is."""
    first_piece = np.cumsum(cuts) - cuts
    lane_start = np.cumsum(counts) - counts
    width = np.zeros(len(counts), dtype=np.int64)  # the lanes each lane is cut into
    held = np.flatnonzero(counts)
    if len(held):
        width[held] = np.maximum.reduceat(cuts, lane_start[held])
    # the cut lanes' entries: lane i's j-th, its entries k = 0 .. counts[i] - 1
    cut_of = np.repeat(np.arange(len(counts)), width)
    j = np.arange(len(cut_of)) - np.repeat(np.cumsum(width) - width, width)
    sizes = counts[cut_of]
    entry = np.repeat(lane_start[cut_of] - (np.cumsum(sizes) - sizes), sizes) \
        + np.arange(int(sizes.sum()))
    j = np.repeat(j, sizes)
    there = j < cuts[entry]
    return cut_of, sizes, there, first_piece[entry[there]] + j[there]


def part_lanes(part: Part, rank: int, shifted: Callable[[Any], Any] | None = None) -> list[Lane]:
    """Return the lanes of real ``rank`` in ``part`` (none when it is not one of its ranks).

    Parameters
    ----------
    part : Part
        The part.
    rank : int
        A real rank.
    shifted : callable or None
        Moves a sequence of virtual starts or stops to real ones when the part's
        placement is one shift (a :class:`_Shifted`); made here when None.

    Returns
    -------
    list of Lane
        Real peers and real element ranges, on the part's clock of rounds.
    """
    v = part.position.get(rank)
    if v is None:
        return []
    ranks = part.ranks
    # lanes are made anew rather than by ``_replace``, which costs several times more
    # (tens of thousands of lanes per schedule, a million where placements cut them)
    if part.real_blocks is not None:  # the algorithm's ranges lie in blocks: give it real ones
        return [Lane(first, make, ranks[peer], starts, stops, flags)
                for first, make, peer, starts, stops, flags
                in _module_lanes(part, v, part.real_blocks)]
    lanes = _module_lanes(part, v, part.blocks)
    shift = part.placement.shift
    if shift is not None:
        move = shifted or _Shifted(shift)
        return [Lane(first, make, ranks[peer], move(starts), move(stops), flags)
                for first, make, peer, starts, stops, flags in lanes]
    return [placed for each in lanes for placed in _placed(each, part.placement, ranks[each.peer])]


def _end(lanes: Sequence[Lane]) -> int:
    return max(each.first_round + min(len(each.starts), len(each.stops)) for each in lanes)


def composed(collective: str, algorithm: str, nranks: int, count: int,
             params: dict[str, Any], phases: Sequence[Sequence[Part]]) -> Schedule:
    """Return the schedule of ``phases`` run one after another, each phase's parts together.

    Parameters
    ----------
    collective, algorithm : str
        Recorded with the schedule.
    nranks, count : int
        Ranks and elements of the real working buffer.
    params : dict
        The parameters recorded with the schedule.
    phases : sequence of sequence of Part
        Per phase, the parts that run together (merged round by round).

    Returns
    -------
    Schedule
        With lanes; each rank's steps are its lanes merged by
        :func:`~collectives.rounds.merge_lanes`.
    """
    movers = [[_Shifted(part.placement.shift or 0) for part in phase] for phase in phases]

    @gc_paused()  # a rank's lanes are many small objects without cycles, as its steps
    def lanes(rank: int) -> list[Lane]:
        out: list[Lane] = []
        for phase, moves in zip(phases, movers):
            these = [each for part, move in zip(phase, moves)
                     for each in part_lanes(part, rank, move)
                     if len(each.starts) and len(each.stops)]
            if out and these:
                lag = _end(out) - min(each.first_round for each in these)
                these = [each._replace(first_round=each.first_round + lag) for each in these]
            out += these
        return out

    @gc_paused()
    def generate(rank: int) -> tuple:
        return tuple(merge_lanes(lanes(rank)))

    columns = _Columns(phases) if any(_cut(part) for phase in phases for part in phase) \
        else None
    return Schedule(collective, algorithm, nranks, count, tuple(sorted(params.items())),
                    generate, lanes, lane_columns=columns,
                    lane_starts=None if columns is None else columns.starts)


def _cut(part: Part) -> bool:
    """Whether ``part``'s lanes are cut where its placement's pieces meet
    (:func:`_placed`)."""
    return part.real_blocks is None and part.placement.shift is None


class _Columns:
    """:func:`composed`'s ``lanes(rank)`` as columns where every part of ``rank`` is cut
    (:func:`_placed_columns`), else None (read the lanes).

    Parts that run one algorithm on equal virtual vectors (the channels of a schedule,
    over different rank orders) give their rank ``v`` the same algorithm's lanes: those
    are made once while the ranks read next may meet them again (:data:`_RECALLED`
    of them; a channel's order puts a rank near where the others do).  Where such parts'
    placements also cut the vector alike (pieces of equal lengths, none merging: the
    channels of ReduceScatter), the cut lanes, with virtual peers, are the same too, and
    are kept alike."""

    def __init__(self, phases: Sequence[Sequence[Part]]) -> None:
        self.phases = phases
        parts = [part for phase in phases for part in phase]
        shapes: dict[Any, int] = {}
        self.shape = {id(part): shapes.setdefault(_shape(part), len(shapes))
                      for part in parts}
        layouts: dict[Any, int] = {}
        self.layout = {id(part): layouts.setdefault((self.shape[id(part)],
                                                     part.placement.range_key), len(layouts))
                       for part in parts}
        self.ranks = {id(part): np.array(part.ranks, dtype=np.int64) for part in parts}
        self.recalled: dict[tuple[int, int], _Entries] = {}
        self.recalled_cut: dict[tuple[int, int], LaneColumns] = {}
        self.recalled_pieces: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def cut(self, part: Part, v: int) -> LaneColumns:
        """:func:`_placed_columns` of ``part``'s rank ``v``, with virtual peers."""
        return _recall(self.recalled_cut, (self.layout[id(part)], v),
                       lambda: _placed_columns(self.entries(part, v), part.placement))

    def entries(self, part: Part, v: int) -> _Entries:
        """The algorithm's lanes of ``part``'s rank ``v`` as :class:`_Entries`."""
        return _recall(self.recalled, (self.shape[id(part)], v),
                       lambda: _entries(_module_lanes(part, v, part.blocks)))

    def placed(self, rank: int) -> list[list[tuple[Part, int]]] | None:
        """Per phase, the parts of ``rank`` and its rank in each; None where one of them
        is not cut (:func:`_cut`: its lanes are read as lanes)."""
        phases = []
        for phase in self.phases:
            these = [(part, part.position[rank]) for part in phase if rank in part.position]
            if not all(_cut(part) for part, _ in these):
                return None
            phases.append(these)
        return phases

    @gc_paused()
    def __call__(self, rank: int) -> LaneColumns | None:
        phases = self.placed(rank)
        if phases is None:
            return None
        out: list[LaneColumns] = []
        end = 0  # the round after the last of ``out``'s lanes
        for phase in phases:
            cuts = [self.cut(part, v) for part, v in phase]
            joined = _joined([cut._replace(peers=self.ranks[id(part)][cut.peers])
                              for (part, _), cut in zip(phase, cuts)])
            if not len(joined.entries):
                continue
            if out:  # after the phase before
                joined = joined._replace(first_rounds=joined.first_rounds
                                         + (end - int(joined.first_rounds.min())))
            top = int((joined.first_rounds + joined.entries).max())
            end = max(end, top) if out else top
            out.append(joined)
        return _joined(out)

    @gc_paused()
    def starts(self, rank: int) -> np.ndarray | None:
        """The real starts of the entries of ``self(rank)``, in the order of its lengths
        (:data:`~collectives.rounds.GAP` for a gap), or None where that is None: made
        anew, not kept (they differ from channel to channel where the lengths do not),
        from what is kept of each part's rank (:meth:`placed_starts`)."""
        phases = self.placed(rank)
        if phases is None:
            return None
        return np.concatenate([np.zeros(0, dtype=np.int64)]
                              + [self.placed_starts(part, v)
                                 for phase in phases for part, v in phase])

    def placed_starts(self, part: Part, v: int) -> np.ndarray:
        """:func:`_placed_starts` of ``part``'s rank ``v``, from the pieces that every
        placement of its layout shares (recalled as :meth:`cut` is) where the placement
        gives its ranges by pieces."""
        placement = part.placement
        if not placement.by_pieces:
            return _placed_starts(self.entries(part, v), placement)
        pieces = _recall(self.recalled_pieces, (self.layout[id(part)], v),
                         lambda: _placed_pieces(self.entries(part, v), placement))
        return _starts_of_pieces(pieces, placement)


#: the algorithm's lanes of so many (part shape, rank) pairs :class:`_Columns` keeps, and
#: the cut lanes of as many (part shape and piece lengths, rank) pairs
_RECALLED = 256


def _recall(kept: dict[Any, _Kept], key: Any, make: Callable[[], _Kept]) -> _Kept:
    """``kept[key]``, made by ``make`` where missing (all of ``kept`` forgotten first
    where it holds :data:`_RECALLED` already)."""
    found = kept.get(key)
    if found is None:
        if len(kept) >= _RECALLED:
            kept.clear()
        found = kept[key] = make()
    return found


def _shape(part: Part) -> Any:
    """What ``part``'s algorithm's lanes of a rank depend on besides the rank (the part
    itself where a parameter cannot be hashed)."""
    key = (id(part.module), part.collective, len(part.ranks), part.placement.size,
           part.blocks, tuple(sorted(part.params.items())))
    try:
        hash(key)
    except TypeError:
        return id(part)
    return key


def _joined(columns: Sequence[LaneColumns]) -> LaneColumns:
    """``columns`` one after another, lanes without entries left out."""
    if not columns:
        empty = np.zeros(0, dtype=np.int64)
        return LaneColumns(empty, empty, empty, [], empty, empty)
    firsts, peers, entries = (np.concatenate([getattr(c, name) for c in columns])
                              for name in ("first_rounds", "peers", "entries"))
    before = np.cumsum([0] + [len(c.builders) for c in columns[:-1]])
    builder = np.concatenate([c.builder + at for c, at in zip(columns, before.tolist())])
    kept = np.flatnonzero(entries)
    return LaneColumns(firsts[kept], peers[kept], entries[kept],
                       [each for c in columns for each in c.builders], builder[kept],
                       np.concatenate([c.lengths for c in columns]))


def identity_orders(nranks: int, channels: int) -> list[tuple[int, ...]]:
    """``channels`` copies of the identity order of ``nranks`` ranks."""
    return [tuple(range(nranks))] * channels

