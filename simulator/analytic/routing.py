"""A round's sampled messages routed and merged into rows of alike messages
(:class:`_Rows`), rounds of the same positions routed once."""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable

import numpy as np

from .arrays import _dense_unique, _list_labels, _sorted_unique, _unique_rows, _within
from .cache import _cached, _digest, _found, _store
from .sample import Groups, Orders, _link_classes, _ranks, _sampled
from .budgets import _is_paced, _queued, _stretched_whole, _unqueued, _whole


class _Rows:
    """One round's sampled messages, alike ones merged: per row its class (``owner``, and
    ``local``: its place among ``owners``, the classes with rows), the messages it stands
    for (``weight``: of its class's messages per order) and, per link of its route, the
    link's class and its load (``profile``: a row of ``profiles``, how many messages of
    each of ``owners`` cross the link with it; padded with the link class after the
    last and the empty profile, the last); of a paced round the rounds in which the
    row's messages are in flight (``paced``: ``(row, first, end)`` of disjoint runs of
    rounds, none for other rounds); the profiles as ``(profile, class, count)``
    (``triples``: the empty profile's ``(last, 0, 0)``); where every rank is sampled,
    every paced piece of a message apart (``hops``: ``(row, first, end, sender,
    receiver, links...)``, :func:`_hops`; None otherwise); per row the kind of its
    messages (``kind``: :attr:`collectives.traffic.Messages.kinds`, -1 where its class
    says none)."""

    __slots__ = ("owners", "local", "weight", "links", "profile", "profiles", "paced",
                 "triples", "hops", "kind")

    def __init__(self, owner: np.ndarray, count: np.ndarray, sizes: np.ndarray,
                 links: np.ndarray, profile: np.ndarray, profiles: np.ndarray,
                 paced: np.ndarray, hops: np.ndarray | None, kind: np.ndarray) -> None:
        self.owners, self.local = _dense_unique(owner)
        self.kind = kind
        sampled = np.bincount(self.local, weights=count)
        self.weight = count * (sizes[self.owners] / sampled)[self.local]
        self.links, self.profile, self.paced, self.hops = links, profile, paced, hops
        self.profiles = np.vstack([profiles[:, self.owners],
                                   np.zeros((1, len(self.owners)), dtype=np.int64)])
        p, c = np.nonzero(self.profiles)
        self.triples = np.column_stack([np.append(p, len(self.profiles) - 1), np.append(c, 0),
                                        np.append(self.profiles[p, c], 0)])


_ROUTED: dict[Any, tuple[tuple[Any, ...], _Rows]] = {}


def _routed(topology: Any, orders: Orders, wanted: list[tuple[Any, bool, tuple[int, ...]]],
            groups: Groups) -> list[_Rows]:
    """The rows of each of ``wanted`` (a round, whether a chain's hops are in flight one
    index at a time, in every order at once, else all at once, and its classes' digests)
    on ``orders``, each class apart in each of ``groups`` (:func:`_route_rows`): the same
    under every protocol, cached by the classes' positions (so that rounds described
    apart, a tree's at each segment count, share them), and those not cached routed
    together (the paced rounds apart from the others, from every rank where
    :func:`_played` or :func:`_stretched_whole`)."""
    rounds = [r for r, _, _ in wanted]
    sample = _sampled(topology, orders)
    played = _queued(topology, orders, rounds)
    stretched = played or _stretched_whole(orders, rounds)
    whole = _whole(topology, orders, wanted)
    keys = [(topology, id(orders), groups, chained, digests,
             (played, stretched) if _is_paced(r) else alone)
            for (r, chained, digests), alone in zip(wanted, whole)]
    # (kept here too: storing them may empty the cache of those found before)
    found = {key: _found(_ROUTED, key, (orders,)) for key in keys}
    missing = {key: block[:2] for key, block in zip(keys, wanted) if found[key] is None}
    paced = [key for key, (r, _) in missing.items() if _is_paced(r)]
    routed = [key for key in missing if key not in paced and key[-1]]
    batches = [paced, routed, [key for key in missing if key not in paced + routed]]
    every = np.ones((len(orders), len(orders[0])), dtype=bool)
    for batch, sampled, ends in zip(batches, (every if stretched else sample, every, sample),
                                    (played or _unqueued(orders, rounds), True,
                                     bool(sample.all()))):
        if batch:
            made = _route_rows(topology, _ranks(orders), sampled,
                               [(missing[key][0].messages, missing[key][1]) for key in batch],
                               ends, groups)
            for key, rows in zip(batch, made):
                found[key] = _store(_ROUTED, key, (orders,), rows)
    return [found[key] for key in keys]


def _route_rows(topology: Any, ranks: np.ndarray, sampled: np.ndarray,
                blocks: list[tuple[tuple[Any, ...], bool]], played: bool,
                groups: Groups) -> list[_Rows]:
    """:class:`_Rows` of each of ``blocks`` (a round's classes, and whether a chain's
    hops are in flight one at a time) on every order of ``ranks`` (orders x positions),
    their messages with an end on a sampled rank (``sampled``, by order and position;
    see :func:`_routed`), with their pieces' hops where ``played``; the messages of one
    block share links, those of two never (blocks with paced classes apart from the
    others).  Where the orders are in ``groups`` (each order's; None: one), each class
    is a class per group, of its messages in the group's orders (:func:`_grouped_classes`:
    a group's channels carry parts of their own size)."""
    classes = tuple(m for group, _ in blocks for m in group)
    block = np.repeat(np.arange(len(blocks)), [len(group) for group, _ in blocks])
    sizes = np.array([len(m.src) for m in classes], dtype=np.int64)
    picked = list(map(_keeper(sampled), classes))
    order = np.concatenate([o for o, _ in picked])
    index = np.concatenate([i for _, i in picked])  # a message's place in its class
    owners = np.repeat(np.arange(len(classes)), [len(i) for _, i in picked])
    src = np.concatenate([m.src[i] for m, (_, i) in zip(classes, picked)])
    dst = np.concatenate([m.dst[i] for m, (_, i) in zip(classes, picked)])
    kind = np.concatenate([np.full(len(i), -1, dtype=np.int64) if m.kinds is None
                           else m.kinds[i] for m, (_, i) in zip(classes, picked)])
    chained = np.array([c for _, c in blocks], dtype=bool)[block]
    together = np.where(chained[owners], index + owners * (1 + sizes[owners]), 0) \
        * len(blocks) + block[owners]
    lengths, links = _entries(topology, ranks[order, src] * topology.nranks
                              + ranks[order, dst])
    nlinks = len(topology.links)
    keys = np.repeat(together, lengths) * nlinks + links
    message = np.repeat(np.arange(len(owners)), lengths)
    rounds = _in_flight(classes, owners, index)
    units = _first_units(classes, owners, index)
    first_class = np.searchsorted(block, np.arange(len(blocks) + 1))
    local = np.arange(len(classes)) - first_class[block]
    if groups is not None:
        owners, block, local, first_class, sizes = _grouped_classes(
            np.array(groups), order, owners, block, local, first_class, sizes)
    ends = np.column_stack([ranks[order, src], ranks[order, dst]]) if played else None
    lead = np.zeros(len(owners), dtype=np.int64)
    if rounds.any():  # pieces of messages, in flight with the same others throughout
        piece, cut, entry, profiles, profile = _pieces(
            keys, message, local[owners], block[owners], rounds, int(np.diff(first_class).max()))
        # a piece's first unit: its message's, and one a round from its message's first
        # round (what part of a cut message it carries)
        lead = units[piece] + cut[:, 0] - rounds[piece, 0]
        rounds = cut
        owners, lengths, links, kind = owners[piece], lengths[piece], links[entry], kind[piece]
        message = np.repeat(np.arange(len(piece)), lengths)
        ends = None if ends is None else ends[piece]
    else:  # the messages in flight together on each link, by block and class
        profiles, profile = _profiles(keys, local[owners[message]], nlinks, len(blocks),
                                      int(np.diff(first_class).max()))
    return _split(len(blocks), sizes, first_class, block[owners], local[owners], lengths,
                  links, profiles, profile, np.column_stack([rounds, lead]), ends,
                  _link_classes(topology), kind)


def _grouped_classes(groups: np.ndarray, order: np.ndarray, owners: np.ndarray,
                     block: np.ndarray, local: np.ndarray, first_class: np.ndarray,
                     sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each class made a class per group of orders (class ``c``'s messages in group ``g``
    are class ``c * G + g``): from each order's group (``groups``) and each message's
    ``order`` and class (``owners``), each message's new class, and per new class its
    ``block``, its place in it (``local``), each block's first (``first_class``) and its
    messages per order (``sizes``: its class's, times the share of the orders the group
    has)."""
    count = int(groups.max()) + 1
    share = np.bincount(groups, minlength=count) / len(groups)
    return (owners * count + groups[order], np.repeat(block, count),
            (local[:, None] * count + np.arange(count)).reshape(-1), first_class * count,
            (sizes[:, None] * share).reshape(-1))


def _keeper(sampled: np.ndarray) -> Callable[[Any], tuple[np.ndarray, np.ndarray]]:
    """:func:`_kept` on ``sampled`` (orders x positions), for one class after another:
    up to 64 orders, from the orders in which each position is sampled as the bits of
    one number (a pass over a class's messages, not one per order)."""
    count = len(sampled)
    if count > 64:
        return functools.partial(_kept, sampled)
    shifts = np.arange(count, dtype=np.uint64)[:, None]
    bits = np.bitwise_or.reduce(sampled.astype(np.uint64) << shifts, axis=0)

    def kept(messages: Any) -> tuple[np.ndarray, np.ndarray]:
        hit = bits[messages.src]
        hit |= bits[messages.dst]
        at = np.flatnonzero(hit)
        if len(messages.src) and not len(at):
            return np.zeros(1, dtype=np.intp), np.zeros(1, dtype=np.intp)
        order, which = np.nonzero((hit[at] >> shifts) & 1)  # by order, then place
        return order, at[which]
    return kept


def _kept(sampled: np.ndarray, messages: Any) -> tuple[np.ndarray, np.ndarray]:
    """The orders and places of a class's messages with an end on a sampled position
    (``sampled``, by order and position), or, for a class far from the sample, of one
    of its messages."""
    keep = sampled[:, messages.src]
    keep |= sampled[:, messages.dst]
    width = len(messages.src)
    flat = np.flatnonzero(keep)  # one pass (np.nonzero of 2-d makes two)
    if width and not len(flat):
        flat = np.zeros(1, dtype=np.intp)
    order, index = np.divmod(flat, max(width, 1))
    return order, index


def _profiles(keys: np.ndarray, column: np.ndarray, nlinks: int, nblocks: int,
              width: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct profiles (a block, then the messages on a link by class) of the
    links of every route's entries (``keys``: the link and what it is shared in;
    ``column``: the entry's message's class in its block) and each entry's."""
    shared, at = np.unique(keys, return_inverse=True)
    at = at.reshape(-1)
    block = shared // nlinks % nblocks
    # each link's classes and counts as a list, the links of equal lists found first:
    # a row of counts a link is 23,000 links by 256 classes on dgx_h100(2048) (half the
    # AllToAll table's CPU)
    held, count = np.unique(at * width + column, return_counts=True)
    link, local = np.divmod(held, width)
    label, first = _list_labels(block, link,
                                _unique_rows(np.column_stack([local, count]))[1])
    kept = np.full(len(shared), -1)  # each list kept's row
    kept[first] = np.arange(len(first))
    counts = np.zeros((len(first), width), dtype=np.int64)
    on = kept[link] >= 0
    counts[kept[link[on]], local[on]] = count[on]
    profiles, unique, _ = _unique_rows(np.column_stack([block[first], counts]))
    return profiles, unique[label[at]]


def _split(nblocks: int, sizes: np.ndarray, first_class: np.ndarray, block: np.ndarray,
           local: np.ndarray, lengths: np.ndarray, links: np.ndarray, profiles: np.ndarray,
           profile: np.ndarray, rounds: np.ndarray, ends: np.ndarray | None,
           link_classes: tuple[np.ndarray, ...], kind: np.ndarray) -> list[_Rows]:
    """Merge alike messages (their ``block`` and class there, ``local``; their routes'
    ``lengths`` and ``links``, each link's of ``profiles``; their ``rounds`` and, a third
    column, how many rounds of their messages came before them, and end ranks, ``ends``,
    None where not every rank is sampled; their ``kind``, -1 where their class says
    none: messages of two kinds carry something at other counts, so are rows apart)
    into each block's :class:`_Rows`."""
    link_class, first = link_classes
    many = np.bincount(profiles[:, 0], minlength=nblocks)  # profiles of each block
    top = int(many.max()) + 1  # above every block's last profile, its pad's
    message = np.repeat(np.arange(len(lengths)), lengths)
    width = np.ones(nblocks, dtype=np.int64)
    np.maximum.at(width, block, lengths)
    codes = np.repeat((len(first) * top + many[block])[:, None], int(width.max()), axis=1)
    column = np.arange(len(links)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    codes[message, column] = link_class[links] * top \
        + profile - (np.cumsum(many) - many)[profiles[profile, 0]]
    # a route's figures do not depend on the order of its links; its hops keep which
    # link each sorted code is of
    placed = None
    if ends is None:
        codes.sort(axis=1)
    else:
        codes, placed = _by_code(codes, message, column, links)
    kinds = bool((kind >= 0).any())
    rows, row, merged = _unique_rows(np.column_stack([block, local, codes]
                                                     + ([kind + 1] if kinds else [])))
    kind = rows[:, -1] - 1 if kinds else np.full(len(rows), -1, dtype=np.int64)
    rounds, lead = rounds[:, :2], rounds[:, 2]
    live = rounds[:, 1] > rounds[:, 0]
    runs = _runs(row[live], rounds[live])
    bounds = np.searchsorted(rows[:, 0], np.arange(nblocks + 1))
    last = np.searchsorted(runs[:, 0], bounds)
    hops = None if ends is None or placed is None else \
        _hops(row[live], rounds[live], ends[live], lead[live], placed[live])
    at = None if hops is None else np.searchsorted(hops[:, 0], bounds)
    return [_Rows(rows[lo:hi, 1], merged[lo:hi],
                  sizes[first_class[b]:first_class[b + 1]],
                  rows[lo:hi, 2:2 + width[b]] // top, rows[lo:hi, 2:2 + width[b]] % top,
                  profiles[profiles[:, 0] == b, 1:],
                  runs[last[b]:last[b + 1]] - np.array([lo, 0, 0]),
                  None if hops is None or at is None
                  else _from_row(hops[at[b]:at[b + 1], :6 + width[b]], lo), kind[lo:hi])
            for b, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]


def _by_code(codes: np.ndarray, message: np.ndarray, column: np.ndarray,
             links: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every route's ``codes`` sorted, and the link each is of (of ``links``, each
    entry's at ``(message, column)``; -1 at the pad)."""
    placed = np.full(codes.shape, -1, dtype=np.int64)
    placed[message, column] = links
    order = np.argsort(codes, axis=1, kind="stable")
    return np.take_along_axis(codes, order, axis=1), np.take_along_axis(placed, order, axis=1)


def _hops(row: np.ndarray, rounds: np.ndarray, ends: np.ndarray, lead: np.ndarray,
          links: np.ndarray) -> np.ndarray:
    """Every paced piece as ``(row, first, end, sender, receiver, lead, links...)`` (its
    row, the rounds ``[first, end)`` it is in flight in, its end ranks, its message's
    rounds before ``first``, the links of its route in its row's order, -1 at the pad),
    by row."""
    hops = np.column_stack([row, rounds, ends, lead, links]).astype(np.int64) \
        .reshape(-1, 6 + links.shape[1])
    return hops[np.argsort(hops[:, 0], kind="stable")]


def _from_row(hops: np.ndarray, row: int) -> np.ndarray:
    """``hops`` with their rows numbered from ``row``."""
    hops = hops.copy()
    hops[:, 0] -= row
    return hops


def _stretch(paced: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paced rounds' rows (``(row, first, end)`` runs), cut where a run starts or
    ends: the rows, whether each is in flight in each stretch of rounds, and each
    stretch's rounds (0 where no row is)."""
    row, first, end = paced.T
    rows, row = np.unique(row, return_inverse=True)
    bounds = np.unique(np.concatenate([first, end]))
    starts = np.zeros((len(rows), len(bounds)), dtype=np.int64)
    np.add.at(starts, (row, np.searchsorted(bounds, first)), 1)
    np.add.at(starts, (row, np.searchsorted(bounds, end)), -1)
    inside = np.cumsum(starts, axis=1)[:, :-1] > 0
    return rows, inside, np.diff(bounds) * inside.any(axis=0)


def _runs(group: np.ndarray, rounds: np.ndarray) -> np.ndarray:
    """The union of the rounds ``[first, end)`` of each group, as ``(group, first,
    end)`` of disjoint runs, by group and first round."""
    if not len(group):
        return np.zeros((0, 3), dtype=np.int64)
    order = np.lexsort((rounds[:, 0], group))
    group, (first, end) = group[order], rounds[order].T
    shift = (int(end.max()) - int(first.min()) + 1) * group  # keeps each group's runs apart
    reach = np.maximum.accumulate(end + shift)
    new = np.r_[True, first[1:] + shift[1:] > reach[:-1]]
    starts = np.flatnonzero(new)
    return np.column_stack([group[starts], first[starts], np.maximum.reduceat(end, starts)])


def _covered(classes: list[Any]) -> int:
    """How many rounds some message of the paced ``classes`` is in flight in."""
    covers = [_covers(m) for m in classes if len(m.rounds)]
    if not covers:
        return 0
    low = min(first for first, _ in covers)
    union = np.zeros(max(first + len(inside) for first, inside in covers) - low, dtype=bool)
    for first, inside in covers:
        union[first - low:first - low + len(inside)] |= inside
    return int(np.count_nonzero(union))


_COVERS: dict[int, tuple[tuple[Any, ...], tuple[int, np.ndarray]]] = {}


def _covers(messages: Any) -> tuple[int, np.ndarray]:
    """The rounds some message of a paced class is in flight in (per message its
    ``[first, end)``): the first, and whether each from it to the last is (cached by
    the class's positions: equal classes of descriptions apart read them once)."""
    def make() -> tuple[int, np.ndarray]:
        first, end = messages.rounds[:, 0], messages.rounds[:, 1]
        low = int(first.min())
        reach = int(end.max()) - low
        started = np.bincount(first - low, minlength=reach + 1) \
            - np.bincount(end - low, minlength=reach + 1)
        return low, np.cumsum(started[:-1]) > 0
    return _cached(_COVERS, _digest(messages), (), make)


def _in_flight(classes: tuple[Any, ...], owner: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The rounds in which each message (of class ``owner``, sorted, ``index`` in it) is
    in flight (:attr:`collectives.traffic.Messages.rounds`); ``(0, 0)`` for classes that
    do not say."""
    rounds = np.zeros((len(owner), 2), dtype=np.int64)
    bounds = np.searchsorted(owner, np.arange(len(classes) + 1)).tolist()
    for m, lo, hi in zip(classes, bounds[:-1], bounds[1:]):
        if m.rounds is not None:
            rounds[lo:hi] = m.rounds[index[lo:hi]]
    return rounds


def _first_units(classes: tuple[Any, ...], owner: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The first unit each message (of class ``owner``, sorted, ``index`` in it) carries
    (:attr:`collectives.traffic.Messages.units`); 0 for classes that do not say."""
    units = np.zeros(len(owner), dtype=np.int64)
    bounds = np.searchsorted(owner, np.arange(len(classes) + 1)).tolist()
    for m, lo, hi in zip(classes, bounds[:-1], bounds[1:]):
        if m.units is not None:
            units[lo:hi] = m.units[index[lo:hi]]
    return units


def _pieces(keys: np.ndarray, message: np.ndarray, column: np.ndarray, block: np.ndarray,
            rounds: np.ndarray, width: int) -> tuple[np.ndarray, ...]:
    """Every message (in flight in ``rounds``, of class ``column`` of ``block``; its
    route's links are the entries of ``message`` with link ``keys``) cut where another
    message on one of its links starts or ends, so that each piece shares every link
    with the same messages throughout: per piece its message and rounds, per piece's
    link its entry, and the distinct profiles (a block, then the messages on the link by
    class) and each piece's link's."""
    low = int(rounds.min())
    rounds = rounds - low  # from 0, for the cuts' keys
    mine, theirs = _overlapping(keys, rounds[message])
    ours, other = message[mine], rounds[message[theirs]]
    count = len(rounds)
    # a message's cuts: its own first and end rounds, and those of others strictly inside
    at = np.concatenate([ours, ours])
    cut = np.concatenate([other[:, 0], other[:, 1]])
    inside = (rounds[at, 0] < cut) & (cut < rounds[at, 1])
    span = int(rounds.max()) + 1
    own = np.arange(count) * span
    cuts = _sorted_unique(np.concatenate([own + rounds[:, 0], own + rounds[:, 1],
                                          at[inside] * span + cut[inside]]))
    at, cut = np.divmod(cuts, span)
    same = at[1:] == at[:-1]
    piece, first, end = at[:-1][same], cut[:-1][same], cut[1:][same]
    lengths = np.bincount(message, minlength=count)
    entries = lengths[piece]
    entry = np.repeat((np.cumsum(lengths) - lengths)[piece], entries) + _within(entries)
    profiles = np.empty((len(entry), 1 + width), dtype=np.int64)  # its block, then counts
    profiles[:, 0] = block[message[entry]]
    _covering(mine, message[theirs], message, column, (piece, first), rounds, entry,
              profiles[:, 1:])
    profiles, profile, _ = _unique_rows(profiles)
    return piece, np.column_stack([first, end]) + low, entry, profiles, profile


def _covering(mine: np.ndarray, j: np.ndarray, message: np.ndarray, column: np.ndarray,
              pieces: tuple[np.ndarray, np.ndarray], rounds: np.ndarray, entry: np.ndarray,
              profiles: np.ndarray) -> None:
    """Per piece's link (its entry of ``entry``; ``pieces``: each one's message and first
    round, by message and first round) the messages by class (``column``) that
    cover the piece on that link, written to its row of ``profiles`` (entries x
    classes; not a new matrix: a copy of it, the block put first, was fresh memory as
    large as it): of the pairs ``(mine, j)`` (an entry and the message
    of one in flight with it on its link), each covers a run of its entry's pieces (they
    are cut at its first round and end), counted where it starts and ends and summed
    over the entry's pieces in order (not per pair and piece: 128 nodes' 8-channel chain
    has 3.3 million of those)."""
    piece, first = pieces
    count, span = len(rounds), int(rounds.max()) + 1
    cut = np.bincount(piece, minlength=count)  # each message's pieces
    many = cut[message]  # each entry's pieces
    at = np.cumsum(many) - many  # each entry's first piece, entries one after another
    # the run of its entry's pieces each pair covers: from the piece that starts at j's
    # first round to the one at its end
    runs = _pieces_before(piece * span + first, cut, span, len(mine))(message[mine],
                                                                    rounds[j])
    live = runs[:, 1] > runs[:, 0]
    size, width = len(entry) + 1, profiles.shape[1]
    spots = (at[mine] * width + column[j])[live]  # by piece, then class
    runs = runs[live] * width
    # (in place, a row a piece: 55,000 pieces by 192 classes on dgx_h100(96) are 85 MB
    # an array)
    delta = np.bincount(spots + runs[:, 0], minlength=size * width)
    delta -= np.bincount(spots + runs[:, 1], minlength=size * width)
    covered = np.cumsum(delta.reshape(size, width), axis=0, out=delta.reshape(size, width))
    profiles[np.argsort(entry, kind="stable")] = covered[:-1]


def _pieces_before(starts: np.ndarray, cut: np.ndarray, span: int,
                   lookups: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """How many of a message's pieces start before a round: from every piece's
    ``starts`` (its message times ``span``, plus its first round; sorted) and each
    message's pieces (``cut``), a function of messages and rounds (messages x k) to
    those counts.  Looked up in a table of every message and round where that is no
    larger than the ``lookups`` to come (2.6 million pairs on ``dgx_h100(96)``: a search
    each took most of :func:`_covering`'s time), else searched."""
    count = len(cut)
    first = np.cumsum(cut) - cut  # each message's first piece
    if count * span <= lookups:
        table = np.searchsorted(starts, np.arange(count * span)) - np.repeat(first, span)
        return lambda own, at: table[(own * span)[:, None] + at]
    return lambda own, at: np.searchsorted(starts, (own * span)[:, None] + at) \
        - first[own][:, None]


def _overlapping(keys: np.ndarray, rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of entries on the same link (``keys``: the link and what it is shared
    in) in flight together (``rounds``: each entry's ``[first, end)``, from 0), each
    entry with itself included, as ``(mine, theirs)`` (in no order: what they give is
    summed or sorted; a sort of them by ``mine`` was a tenth of :func:`_pieces`' time
    on ``dgx_h100(96)``).  Entries on a link in
    rounds apart are left out: their rounds cut none of the other's inside, and neither
    covers a piece of the other; a stretch of many rounds (a pipeline's) has many
    messages on a link, few at once."""
    span = int(rounds.max(initial=0)) + 1
    order = np.lexsort((rounds[:, 0], keys))
    key, first, end = keys[order], rounds[order, 0], rounds[order, 1]
    link = np.cumsum(np.r_[0, key[1:] != key[:-1]])  # the links numbered from 0
    # those after each in (link, first round) order that start before it ends
    stop = np.searchsorted(link * span + first, link * span + end)
    ahead = np.maximum(stop - np.arange(1, len(order) + 1), 0)
    at = np.repeat(np.arange(len(order)), ahead)
    later = at + 1 + _within(ahead)
    return np.concatenate([order, order[at], order[later]]), \
        np.concatenate([order, order[later], order[at]])


_ROUTES: dict[Any, dict[int, tuple[int, ...]]] = {}


def _entries(topology: Any, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The routes of ``pairs`` (``src * nranks + dst``) as every pair's number of links
    and their links, one after another."""
    known = _ROUTES.setdefault(topology, {})
    if len(_ROUTES) > 16:
        _ROUTES.clear()
        known = _ROUTES.setdefault(topology, {})
    unique, inverse = np.unique(pairs, return_inverse=True)
    routes = []
    for key in unique.tolist():
        route = known.get(key)
        if route is None:
            route = known[key] = topology.route(*divmod(key, topology.nranks))
        routes.append(route)
    lengths = np.fromiter(map(len, routes), dtype=np.int64, count=len(routes))
    flat = np.fromiter(itertools.chain.from_iterable(routes), dtype=np.int64,
                       count=int(lengths.sum()))
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    length = lengths[inverse]
    message = np.repeat(np.arange(len(pairs)), length)
    offset = np.arange(len(message)) - np.repeat(np.cumsum(length) - length, length)
    return length, flat[first[inverse][message] + offset]


def _route_figures(links: np.ndarray, heads: np.ndarray, latency: np.ndarray,
                   bandwidth: np.ndarray, shares: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray, Any]:
    """Per route (its ``links`` one after another, each route's first at ``heads``,
    :func:`_entries`) its latency (the links' summed), its bottleneck rate and its
    links' most shares (1 where ``shares`` is None): what
    :func:`simulator.gpu.hidden_latency` takes of a message alone on it."""
    delay = np.add.reduceat(latency[links], heads)
    rate = np.minimum.reduceat(bandwidth[links], heads)
    share = 1.0 if shares is None else np.maximum.reduceat(shares[links], heads)
    return delay, rate, share
