"""A description's rounds routed and laid out for pricing (:class:`_Layout`):
rows per round, the paced rounds' play, alike parts played once."""

from __future__ import annotations

from typing import Any

import numpy as np

from .cache import _cached, _digest
from .sample import Groups, Orders, _link_classes
from .budgets import _is_held, _queued
from .routing import _Rows, _covered, _routed, _stretch
from .flow import _Flow


def _joined(parts: list[np.ndarray], lengths: np.ndarray, offsets: np.ndarray,
            empty: np.ndarray | None = None) -> np.ndarray:
    """``parts`` one after another, each plus its row of ``offsets`` (``lengths``: each
    part's length; ``empty`` when there are none)."""
    if not parts:
        return np.zeros(0, dtype=np.int64) if empty is None else empty
    return np.concatenate(parts) + np.repeat(offsets, lengths, axis=0)


class _Layout:
    """A description's rounds on one machine's orders, as arrays over all their rows
    (the same for every description of the same positions: a tree's at every segment
    count whose rounds carry the same streams): per round one block of rows, each with
    the round it is of, its role and its classes; per class its first row and its block; per row
    its class, weight and its messages' kind (``row_kind``, :attr:`_Rows.kind`); per link of a row's route its class and the load it shares the
    link with (``pair``: a profile of the messages crossing it by class, and the row's
    class: each pair's ``pair_profile``, ``pair_class`` and how many messages of its
    class its profile counts, ``pair_own``; the profiles' ``(profile, class, count)``
    ``triples``, by profile, :meth:`loads` by classes that load a link alike); of the paced
    rounds their ``stretch`` (:func:`_stretch`) and, where every rank is sampled, their
    pieces' ``hops`` (rows numbered across the blocks; None otherwise) and the
    :class:`_Flow` of them, of one part of each kind (:func:`_one_of_alike`; None
    without hops).  Where the orders are in ``groups``
    (their number), a round's class ``c`` of group ``g`` is class ``c * groups + g``
    (:func:`_grouped_classes`)."""

    __slots__ = ("blocks", "class_rows", "class_block", "block_classes", "row_class",
                 "weight", "links", "pair", "pair_profile", "pair_class", "pair_own",
                 "triples", "stretch", "hops", "flow", "groups", "row_kind")

    def __init__(self, topology: Any, orders: Orders, rounds: tuple[Any, ...],
                 digests: list[tuple[int, ...]], groups: Groups, fill: int) -> None:
        wanted = [(r, i, "chain" if r.chain else "repeat") for i, r in enumerate(rounds)]
        made = _routed(topology, orders,
                       [(r, role == "chain", digests[i]) for r, i, role in wanted], groups)
        self.groups = 1 if groups is None else max(groups) + 1
        routed = [(b, i, role) for b, (_, i, role) in zip(made, wanted) if len(b.owners)]
        self.blocks = [(i, role, rows.owners.tolist()) for rows, i, role in routed]
        blocks = [rows for rows, _, _ in routed]
        nclasses = [len(rows.owners) for rows in blocks]
        self.class_block = np.repeat(np.arange(len(blocks)), nclasses)
        self.block_classes = np.searchsorted(self.class_block, np.arange(len(blocks)))
        nrows = np.array([len(rows.weight) for rows in blocks], dtype=np.int64)
        self.row_class = _joined([rows.local for rows in blocks], nrows,
                                 self.block_classes)
        self.class_rows = np.searchsorted(self.row_class, np.arange(sum(nclasses)))
        self.weight = np.concatenate([rows.weight for rows in blocks] or [np.zeros(0)])[:, None]
        self.row_kind = np.concatenate([rows.kind for rows in blocks]
                                       or [np.zeros(0, dtype=np.int64)])
        starts = np.cumsum(nrows) - nrows
        self.stretch = _stretch(_joined([rows.paced for rows in blocks],
                                        np.array([len(rows.paced) for rows in blocks]),
                                        np.column_stack([starts, 0 * starts, 0 * starts]),
                                        np.zeros((0, 3), dtype=np.int64)))
        self.hops = self._hops(blocks, starts)
        held = _is_held(rounds)
        self.flow = None
        if self.hops is not None and len(self.hops) and not held:
            played = _one_of_alike(self.hops)
            alike = len(_link_classes(topology)[1]) == 1
            self.flow = _Flow(played, self.class_block[self.row_class[played[:, 0]]],
                              alike, fill,
                              _queued(topology, orders, list(rounds)))
        self.links, profile = self._padded(topology, blocks, starts, int(nrows.sum()))
        nprofiles = np.array([len(rows.profiles) for rows in blocks], dtype=np.int64)
        first_profile = np.cumsum(nprofiles) - nprofiles
        self._pairs(profile, _joined([rows.triples for rows in blocks],
                                     np.array([len(rows.triples) for rows in blocks]),
                                     np.column_stack([first_profile, self.block_classes,
                                                      0 * first_profile]),
                                     np.zeros((0, 3), dtype=np.int64)),
                    sum(nclasses))

    @staticmethod
    def _hops(blocks: list[_Rows], starts: np.ndarray) -> np.ndarray | None:
        """Every block's paced pieces (:attr:`_Rows.hops`), rows numbered across the
        blocks (from ``starts``); None unless every block has them."""
        if any(rows.hops is None for rows in blocks if len(rows.paced)):
            return None
        width = max([rows.hops.shape[1] for rows in blocks if rows.hops is not None],
                    default=6)
        hops = [np.zeros((0, width), dtype=np.int64) if rows.hops is None
                else np.pad(rows.hops, ((0, 0), (0, width - rows.hops.shape[1])),
                            constant_values=-1)  # links padded as the rows' are
                for rows in blocks]
        offsets = np.zeros((len(starts), width), dtype=np.int64)
        offsets[:, 0] = starts
        return _joined(hops, np.array([len(h) for h in hops], dtype=np.int64), offsets,
                       np.zeros((0, width), dtype=np.int64))

    @staticmethod
    def _padded(topology: Any, blocks: list[_Rows], starts: np.ndarray,
                total: int) -> tuple[np.ndarray, np.ndarray]:
        """Every row's links (by class) and their profiles (numbered across the blocks),
        padded to one width with the pad link class and each block's empty profile."""
        width = max([rows.links.shape[1] for rows in blocks], default=1)
        links = np.full((total, width), len(_link_classes(topology)[1]), dtype=np.int64)
        profile = np.empty((total, width), dtype=np.int64)
        offset = 0
        for rows, lo in zip(blocks, starts.tolist()):
            hi, used = lo + len(rows.weight), rows.links.shape[1]
            links[lo:hi, :used] = rows.links
            profile[lo:hi, :used] = rows.profile + offset
            profile[lo:hi, used:] = offset + len(rows.profiles) - 1  # the empty profile
            offset += len(rows.profiles)
        return links, profile

    def _pairs(self, profile: np.ndarray, triples: np.ndarray, nclasses: int) -> None:
        """Every distinct (profile, row class) of the rows' links: its profile, its class
        and its profile's count of that class; the profiles' ``triples`` by profile."""
        nclasses = max(1, nclasses)
        pairs, self.pair = np.unique(profile * nclasses + self.row_class[:, None],
                                     return_inverse=True)
        self.pair = self.pair.reshape(profile.shape)
        self.pair_profile, self.pair_class = np.divmod(pairs, nclasses)
        self.triples = triples[np.argsort(triples[:, 0], kind="stable")]
        # a profile's count of each class it holds, found by (profile, class)
        held, at = np.unique(self.triples[:, 0] * nclasses + self.triples[:, 1],
                             return_inverse=True)
        counts = np.bincount(at.reshape(-1), weights=self.triples[:, 2], minlength=len(held))
        found = np.minimum(np.searchsorted(held, pairs), max(len(held) - 1, 0))
        self.pair_own = np.where(held[found] == pairs, counts[found], 0.0) if len(held) \
            else np.zeros(len(pairs))

    def loads(self, labels: np.ndarray) -> tuple[np.ndarray, ...]:
        """Each pair's profile's messages by ``labels`` (one a class: classes of one label
        load a link alike), as ``(pair's class, label, count)`` columns, the pairs' first
        rows at the fourth: a link that carries hundreds of classes of a few sizes (a
        pairwise AllToAll's rounds on ``dgx_h100(32)``) is a few rows a pair, not a row a
        class (2.6 million rows: 6.8 of 7.5 CPU s of the AllToAll table)."""
        nlabels = int(labels.max(initial=0)) + 1
        profile, of_class, count = self.triples.T
        grouped, at = np.unique(profile * nlabels + labels[of_class], return_inverse=True)
        many = np.bincount(at.reshape(-1), weights=count, minlength=len(grouped))
        of_profile, label = np.divmod(grouped, nlabels)
        first = np.searchsorted(of_profile,
                                np.arange(int(self.pair_profile.max(initial=-1)) + 2))
        size = (first[1:] - first[:-1])[self.pair_profile]
        rows = np.cumsum(size) - size
        taken = np.repeat(first[:-1][self.pair_profile] - rows, size) + np.arange(size.sum())
        return np.repeat(self.pair_class, size), label[taken], many[taken], rows


def _one_of_alike(hops: np.ndarray) -> np.ndarray:
    """The paced pieces ``hops`` (:attr:`_Layout.hops`) of one of each kind of their
    parts that share no rank and no link (:func:`_apart`), in their order: parts alike
    but for the ranks' and links' names, one hop after another (as hier's inner tree on
    each rail of a DGX machine up to one leaf's nodes), play alike, each rank's clock
    the same float as its like's, so the play's time, its ranks' latest clock, is one
    part's of each kind (three tables on ``dgx_h100(8)``: its 8 rails' plays were 3.0
    of 3.8 CPU s)."""
    part = _apart(hops)
    count = int(part.max()) + 1
    if count == 1:
        return hops
    order = np.argsort(part, kind="stable")
    sorted_part = part[order]
    bounds = np.searchsorted(sorted_part, np.arange(count + 1)).tolist()
    named = hops[order]
    # first by how many hops take each of a hop's ranks and links (a pass; parts that
    # differ there, as rails whose crossings hash to other spines, are not alike)
    ends, links = named[:, 3:5], named[:, 6:]
    takers = np.bincount(ends.reshape(-1))[ends]
    on = np.append(np.bincount(links[links >= 0], minlength=int(links.max()) + 1), 0)[links]
    counted = np.column_stack([named[:, [0, 1, 2, 5]], takers, on])
    if len({counted[lo:hi].tobytes() for lo, hi in zip(bounds[:-1], bounds[1:])}) == count:
        return hops
    # ranks and links named by where they first come in their part
    named[:, 3:5] = _first_seen(ends, sorted_part, count)
    named[:, 6:] = _first_seen(links, sorted_part, count)
    kinds: dict[bytes, int] = {}
    for p, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        kinds.setdefault(named[lo:hi].tobytes(), p)
    return hops[np.isin(part, list(kinds.values()))]


def _apart(hops: np.ndarray) -> np.ndarray:
    """Each hop's part (numbered from 0): hops are of one part where they share a rank
    (sender or receiver, columns 3 and 4) or a link (columns 6 on, -1 at the pad),
    directly or through others (min-label hooking with full pointer jumping, a few
    passes)."""
    ranks = int(hops[:, 3:5].max()) + 1
    sender = hops[:, 3]
    links = hops[:, 6:]
    real = links >= 0
    ends = np.concatenate([hops[:, 4], ranks + links[real]])
    starts = np.concatenate([sender, np.broadcast_to(sender[:, None], links.shape)[real]])
    parent = np.arange(ranks + int(links.max(initial=-1)) + 1)
    while True:
        low = np.minimum(parent[starts], parent[ends])
        hooked = parent.copy()
        np.minimum.at(hooked, parent[starts], low)
        np.minimum.at(hooked, parent[ends], low)
        while True:  # every node straight to its root
            jumped = hooked[hooked]
            if np.array_equal(jumped, hooked):
                break
            hooked = jumped
        if np.array_equal(hooked, parent):
            break
        parent = hooked
    return np.unique(parent[sender], return_inverse=True)[1].reshape(-1)


def _first_seen(values: np.ndarray, part: np.ndarray, count: int) -> np.ndarray:
    """``values`` (rows x columns, ints >= 0, -1 kept) renamed within each row's
    ``part`` (rows sorted by part, a value in one part only) by where they first come,
    row by row, from 0."""
    flat = values.reshape(-1)
    real = flat >= 0
    distinct, first, inverse = np.unique(flat[real], return_index=True, return_inverse=True)
    seen = np.argsort(first)  # the distinct values as they first come, part by part
    place = np.empty(len(distinct), dtype=np.int64)
    place[seen] = np.arange(len(distinct))
    of = part[np.flatnonzero(real) // values.shape[1]][first]
    start = np.searchsorted(of[seen], np.arange(count))
    out = flat.copy()
    out[real] = (place - start[of])[inverse.reshape(-1)]
    return out.reshape(values.shape)


_LAYOUTS: dict[Any, tuple[tuple[Any, ...], _Layout]] = {}


_SPANS: dict[Any, tuple[tuple[Any, ...], int]] = {}
_ROUND_DIGESTS: dict[Any, tuple[tuple[Any, ...], list[tuple[int, ...]]]] = {}


def _span(rounds: tuple[Any, ...]) -> int:
    """How many rounds some paced message of a description is in flight in (cached by
    the description: every machine's orders read the same)."""
    return _cached(_SPANS, id(rounds), (rounds,), lambda: _covered(
        [m for r in rounds for m in r.messages if m.rounds is not None]))


def _digests(rounds: tuple[Any, ...]) -> list[tuple[int, ...]]:
    """Every round's classes' digests (cached by the description)."""
    return _cached(_ROUND_DIGESTS, id(rounds), (rounds,),
                   lambda: [tuple(map(_digest, r.messages)) for r in rounds])


def _layout(topology: Any, orders: Orders, rounds: tuple[Any, ...], groups: Groups,
            fill: int) -> _Layout:
    """:class:`_Layout` of ``rounds`` on ``orders`` in ``groups``, its play's rounds
    filled where they have at most ``fill`` messages with a shared link (cached by the
    rounds' kinds and their classes' positions)."""
    digests = _digests(rounds)
    key = (topology, id(orders), groups, fill, tuple((bool(r.chain), r.held, d)
                                                     for r, d in zip(rounds, digests)))
    return _cached(_LAYOUTS, key, (orders,),
                   lambda: _Layout(topology, orders, rounds, digests, groups, fill))
