"""Paced rounds played rank by rank (:class:`_Flow`): each rank has a clock, a
message starts once both its ends are done with the round before."""

from __future__ import annotations

from typing import Any, Callable, Literal

import numpy as np

from .arrays import _dense_unique, _within
from .budgets import PLAY_SIDE_BY_SIDE
from .sharing import _filled_ends, _filled_runs, _grouped_ends, _queue_ends


def _crossed_links(hops: np.ndarray, count: int) -> np.ndarray:
    """Whether each of ``count`` links is taken by pieces of ``hops`` (:attr:`_Layout.hops`)
    of several senders and of several receivers: their messages' ends do not all wait on
    one rank's clock (a leaf's links to the spines; a GPU's or a NIC's own carry only
    messages its rank's clock holds to the rounds), so that messages of different rounds
    may meet there."""
    taken = hops[:, 6:].reshape(-1)
    piece = np.repeat(np.arange(len(hops)), hops.shape[1] - 6)[taken >= 0]
    taken = taken[taken >= 0]
    count = max(count, int(taken.max(initial=-1)) + 1)

    def several(ends: np.ndarray) -> np.ndarray:
        least = np.full(count, np.iinfo(np.int64).max)
        most = np.full(count, -1)
        np.minimum.at(least, taken, ends[piece])
        np.maximum.at(most, taken, ends[piece])
        return most > least
    return several(hops[:, 3]) & several(hops[:, 4])


class _Flow:
    """The paced rounds played as the simulator plays the ranks' steps: in each round
    every message in flight (a piece of :attr:`_Layout.hops` in that round) starts once
    both its ends are done with the round before (each rank has a clock); its bytes are
    through once every link of its route has carried its share there (on a link that
    no other message of the round takes, its row's shared time), and no sooner than
    its own start plus its bytes' time alone.  A link that several of the round's
    messages share carries them as the simulator's link does on its own
    (:func:`_shared_ends`): each from its own start, the link's rate shared equally
    among those started and not through, re-shared whenever one starts or ends; so a
    message that starts early has the link to itself until the next starts, and one
    that starts late ends with the others.  What a message is held back to on another
    link meanwhile is not seen there: the simulator's max-min sharing then gives the
    others more of this link, and the message, held on one link and then on another,
    may end later than either link alone has it (on flat, tree AllGather at 4 segments
    on 3, 6 and 11 ranks: up to -0.99%); so on a machine whose links are all alike
    the round's messages are carried at max-min rates over all its shared links
    together (also where each is on one, as on the per-pair mesh: :func:`_coupled`;
    :func:`_filled_ends`, up to
    ``fill`` of them: :data:`FILL_MESSAGES`, none for a chain past
    :data:`UNHELD_RANKS` ranks; any number where each link carries at most two groups
    of messages alike in their links, a channel's or those of channels of one order:
    :func:`_grouped_ends`).  Not ``queued``, no link is shared: a message takes
    its row's lock-step share of each (:func:`_unqueued`).  A
    message of a cut
    class (:attr:`collectives.traffic.Messages.cut`) carries its own part in each round
    there (elsewhere its largest).  On a link that messages of several senders and
    several receivers take (a leaf's to a spine), messages of different rounds meet
    (:meth:`_met`).  Its sender is done its latency later, its
    receiver after its reduction too, and a rank's clock moves to the last of its
    messages' ends (max-plus over the rounds; a rank with nothing to do in a round, or
    only empty messages left out, keeps its clock).

    ``row``: per message of a round, the rounds one after another; ``kind``, ``kinds``:
    each message's kind (its row and which of its links are shared in its round) and per
    kind its row and its links not shared (their slowest is taken once per kind);
    ``rounds``: per round its messages (a slice of those) and their ranks (sender over
    receiver), across (width first, so that each reduction is elementwise over slabs):
    the messages on each shared link (numbered in the round, by block: messages of two
    blocks never share a link, as :func:`_route_rows` has them) and its messages' ends
    (sends, then receives) gathered by rank; then the messages with a shared link
    (numbered in the round) and the ranks whose ends those are; ``queues``: per round,
    across as well, each shared link's entries (the messages' places in their rows'
    links, rows x (links and one of its own, its bytes alone, last), flat) and which of
    them are real (the rest pad a link's queue to the round's longest), and per message
    with a shared link its cells in that table, one per such link; ``coupled``: per round
    where its messages are carried at max-min rates over its shared links together,
    which of those each message with one is on (else None; none but where ``filled``, on
    a machine whose links are all alike); ``ranks``: one more
    than the highest rank; ``widest``: the most messages a round has; ``segment``: per
    message of a round, the rounds its own message was in flight in before (the part it
    carries, of a cut class: :attr:`collectives.traffic.Messages.cut`)."""

    __slots__ = ("row", "rounds", "ranks", "kind", "kinds", "queues", "widest", "segment",
                 "coupled", "partners", "filled", "links", "crossed")

    def __init__(self, hops: np.ndarray, block: np.ndarray, filled: bool, fill: int,
                 queued: bool = True) -> None:
        row, first, end, sender, receiver, lead = hops[:, :6].T
        many = end - first
        hop = np.repeat(np.arange(len(hops)), many)
        within = _within(many)
        when = first[hop] + within
        order = np.argsort(when, kind="stable")
        hop, when = hop[order], when[order]
        self.segment = (lead[hop] + within[order]).astype(np.int32)
        self.row, sender, receiver = (a[hop].astype(np.int32) for a in (row, sender, receiver))
        self.ranks = int(max(sender.max(), receiver.max())) + 1
        cuts = np.flatnonzero(np.r_[True, when[1:] != when[:-1], True])
        lo, hi = cuts[:-1], cuts[1:]
        self.widest = int((hi - lo).max())
        at = np.repeat(np.arange(len(lo)), hi - lo)  # each message's round
        # unqueued, every link is charged at the message's lock-step share of it (its
        # row's), as if the messages sharing it started together: no queues
        members, link, cell, queues = self._links(hops[hop, 6:], block[hop], at, lo) \
            if queued else self._unqueued(len(hop), hops.shape[1] - 5, len(lo))
        ends, ranks = self._ends(sender, receiver, at, lo, hi)
        shared = link < np.array([len(m) for m in members], dtype=np.int32)[at][:, None]
        self.kind, self.kinds = self._kinds(shared)
        crossing, cells = self._crossing(shared, cell, at, lo)
        # the padded tables across (their width first), so that each reduction over a
        # row's entries is an elementwise one over whole slabs
        pair = np.stack([sender, receiver])
        self.rounds = [(slice(a, b), pair[:, a:b], *map(_across, (m, e)), c, r)
                       for a, b, m, c, e, r in zip(lo.tolist(), hi.tolist(), members,
                                                   crossing, ends, ranks)]
        self.queues = [(spots, real, _across(c)) for (spots, real), c in zip(queues, cells)]
        self.filled = filled
        coupled = [_coupled(r[2], q[1][:, :, 0], r[4], fill) if filled else (None, None)
                   for r, q in zip(self.rounds, self.queues)]
        self.coupled = [on for on, _ in coupled]
        # a round not coupled has no groups
        self.partners = [groups if on is not None else None for on, groups in coupled]
        self.links, self.crossed = self._crossed(hops, hops[hop, 6:], at, lo)

    @staticmethod
    def _crossed(hops: np.ndarray, links: np.ndarray, at: np.ndarray,
                 lo: np.ndarray) -> tuple[int, list[tuple[np.ndarray, ...] | None] | None]:
        """The links that messages of different rounds may meet on
        (:func:`_crossed_links` of ``hops``, :attr:`_Layout.hops`); their number, and
        per round (each message's ``at``, its
        messages from ``lo``; ``links``: theirs, messages x links, -1 at the pad) its
        messages' entries on them: the messages (numbered in the round; each once),
        where each one's entries start, and per entry its message, its place in the
        message's links and the link (numbered from 0), or None where it has none;
        None where no link is so taken."""
        crossed = _crossed_links(hops, int(links.max(initial=-1)) + 1)
        if not crossed.any():
            return 0, None
        number = np.append(np.cumsum(crossed) - 1, -1)
        message, column = np.nonzero(np.append(crossed, False)[links])  # the pad: False
        link = number[links[message, column]]
        rounds = at[message]
        local = message - lo[rounds]
        first = np.r_[True, message[1:] != message[:-1]]
        bounds = np.searchsorted(rounds, np.arange(len(lo) + 1))
        # each message's first entry, counted from its round's first
        starts = np.flatnonzero(first) - bounds[rounds[first]]
        cuts = np.searchsorted(rounds[first], np.arange(1, len(lo)))
        out: list[tuple[np.ndarray, ...] | None] = [
            (m, f, e, c, k) if len(m) else None
            for m, f, e, c, k in zip(np.split(local[first], cuts), np.split(starts, cuts),
                                     *(np.split(a, bounds[1:-1])
                                       for a in (local, column, link)))]
        return int(crossed.sum()), out

    @staticmethod
    def _unqueued(count: int, width: int, rounds: int) -> tuple[list[np.ndarray], np.ndarray,
                                                                np.ndarray,
                                                                list[tuple[np.ndarray, ...]]]:
        """:meth:`_links` where no link is shared: of ``count`` messages of ``width``
        links and its own each, over ``rounds`` rounds."""
        return ([np.zeros((0, 1), dtype=np.int32)] * rounds,
                np.zeros((count, width), dtype=np.int32), np.zeros(count * width, dtype=np.int64),
                [(np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0, 1), dtype=bool))] * rounds)

    def _kinds(self, shared: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Each message's kind (its row and which of its links, ``shared``: messages x
        (links and its own), are shared in its round), and the kinds' rows and links
        not shared."""
        width = shared.shape[1]
        bits = shared.astype(np.int64) @ (1 << np.arange(width, dtype=np.int64))
        kinds, kind = _dense_unique(self.row.astype(np.int64) << width | bits)
        alone = (kinds[:, None] >> np.arange(width) & 1) == 0
        return kind.astype(np.int32), (kinds >> width, alone)

    @staticmethod
    def _crossing(shared: np.ndarray, cell: np.ndarray, at: np.ndarray,
                  lo: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per round the messages (numbered in it) with a ``shared`` link (messages x
        (links and its own)), and per such message (a row, padded with its first) those
        links' cells in the round's table of queues (``cell``, flat as ``shared``)."""
        width = shared.shape[1]
        message, position = np.nonzero(shared)
        starts = np.flatnonzero(np.diff(message, prepend=-1))
        rounds = at[message[starts]]
        count = len(lo)
        return (np.split((message - lo[at[message]])[starts].astype(np.int32),
                         np.searchsorted(rounds, np.arange(1, count))),
                _in_rounds(cell[message * width + position], starts, rounds, count))

    def _links(self, links: np.ndarray, block: np.ndarray, at: np.ndarray,
               lo: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray,
                                        list[tuple[np.ndarray, np.ndarray]]]:
        """Per message its ``links`` (-1 at the pad), ``block`` and round (``at``, whose
        messages start at ``lo``): per round the messages (numbered from 0 in it) on each
        link that several share (a row each, padded with its first), and per message
        where each of its links, and one more of its own, takes its first start from: a
        shared link's number in its round, else ``shared + m``, its own start
        (``shared``: the round's shared links, ``m``: the message's number), each
        shared link's cell in its round's table of queues (a row per place in a queue,
        a column per shared link; flat as ``link``) and per round that table (each
        entry's place in its row's links, rows x (links and its own), flat; across) and
        which of its cells are real."""
        width = links.shape[1]
        order, starts = _grouped(links, at * (int(block.max()) + 1) + block)
        rounds = at[order // width]
        many = np.diff(np.append(starts, len(order)))
        shared = many > 1
        sizes, group_round = many[shared], rounds[starts[shared]]
        count = np.bincount(group_round, minlength=len(lo))  # shared links per round
        number = np.arange(len(sizes)) - (np.cumsum(count) - count)[group_round]
        message, on_shared = order // width, np.repeat(shared, many)
        entry = (order + message)[on_shared]  # in messages x (links and its own)
        own = np.arange(len(at)) - lo[at]  # each message's number in its round
        link = np.repeat((count[at] + own).astype(np.int32)[:, None], width + 1, axis=1)
        link.reshape(-1)[entry] = np.repeat(number, sizes)
        starts = (np.cumsum(sizes) - sizes).astype(np.int32)
        places = self.row[message[on_shared]].astype(np.int64) * (width + 1) \
            + (order % width)[on_shared]
        cell = np.zeros(link.size, dtype=np.int64)
        cell[entry] = _within(sizes) * np.repeat(count[group_round], sizes) \
            + np.repeat(number, sizes)
        spots = _in_rounds(places, starts, group_round, len(lo))
        queues = [(_across(s), (np.arange(s.shape[1])[:, None] < n)[:, :, None])
                  for s, n in zip(spots, np.split(sizes, np.cumsum(count)[:-1]))]
        return (_in_rounds(own[message[on_shared]], starts, group_round, len(lo)), link,
                cell, queues)

    @staticmethod
    def _ends(sender: np.ndarray, receiver: np.ndarray, at: np.ndarray, lo: np.ndarray,
              hi: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per round (each message's ``at``; its messages from ``lo`` to ``hi``) its
        messages' ends, sends then receives (``0 .. 2 n``), of each rank that has some
        (a row, padded with its first) and those ranks."""
        count = len(sender)
        sides = np.concatenate([sender, receiver])
        rounds = np.tile(at, 2)
        by_rank = np.argsort(rounds * (int(sides.max()) + 1) + sides, kind="stable")
        sides, rounds = sides[by_rank], rounds[by_rank]
        message = by_rank % count
        local = message - lo[at[message]] + np.where(by_rank < count, 0, (hi - lo)[at[message]])
        starts = np.flatnonzero(np.r_[True, (sides[1:] != sides[:-1])
                                      | (rounds[1:] != rounds[:-1])])
        return (_in_rounds(local, starts, rounds[starts], len(lo)),
                np.split(sides[starts], np.searchsorted(rounds[starts], np.arange(1, len(lo)))))

    def played(self, parts: list[tuple[Any, ...]]) -> list[np.ndarray]:
        """:meth:`time` of each of ``parts``, as many side by side in one play as keep a
        round's arrays within :data:`PLAY_SIDE_BY_SIDE` numbers (a play's cost is a numpy
        pass per round: side by side, the passes are fewer; past that, each pass outgrows
        the processor's cache, and plays apart are as fast)."""
        # parts whose units go as transfers per run (:meth:`_Described._run_table`) are
        # played apart from the others
        out: list[np.ndarray] = [np.zeros(0)] * len(parts)
        for runs in (False, True):
            taken = [k for k, part in enumerate(parts) if (part[8] is not None) == runs]
            for batch in self._batches([parts[k][1].shape[2] for k in taken]):
                chosen = [taken[j] for j in batch]
                for k, played in zip(chosen, self.time([parts[k] for k in chosen])):
                    out[k] = played
        return out

    def _batches(self, widths: list[int]) -> list[list[int]]:
        """Parts of ``widths`` sizes in batches (their numbers) of as many as keep a
        round's arrays within :data:`PLAY_SIDE_BY_SIDE` numbers."""
        batches: list[list[int]] = []
        sizes = 0
        for k, width in enumerate(widths):
            if not batches or (sizes + width) * self.widest > PLAY_SIDE_BY_SIDE:
                batches.append([])
                sizes = 0
            batches[-1].append(k)
            sizes += width
        return batches

    def time(self, parts: list[tuple[Any, ...]]) -> list[np.ndarray]:
        """Seconds of the paced rounds at every size of each of ``parts`` (a protocol's
        figures at a description's sizes; played together, their sizes side by side),
        each from every row's latency ``paid`` (once its bytes are through), its shared
        time on each link of its route (``spread``, rows x links x sizes) and those
        links' ``bandwidth`` (rows x links), its bytes' time ``alone``, its receiver's
        ``reduction`` (None: none) and whether its messages are ``sent`` (an empty one
        left out is no message: it holds no link and neither end), rows x sizes (or
        rows x 1, alike at every size); and, where some rows' messages carry a smaller
        part from some round of theirs on (a cut class at uneven parts), from which
        (rows x sizes) and those figures at the smaller part (``smaller``; None where
        none do): a message carries it in the rounds of its message from that one on,
        and every queue it is in is played apart (:func:`_queue_ends`); and how many
        transfers a row's message is (``transfers``, rows x sizes; None: one each), its
        bytes' time ``alone`` then each one's (:meth:`_Described._runs`); but where the
        parts give each unit's transfers, one per run of the buffer, their reductions
        and latency (:meth:`_Described._run_play`), a message of a round pays its
        unit's, and carries its transfers where the play is filled, those its ports
        share carried kind by kind (:func:`_filled_runs`)."""
        widths = [part[1].shape[2] for part in parts]
        paid, spread, alone, reduction, sent, smaller, transfers, runs = \
            _side_by_side(parts, widths)
        row, kind = self.row, self.kind
        work = _full_rate(alone, [part[2] for part in parts], widths)
        # each entry's transfers (its message's runs: :meth:`_Described._runs`)
        weight = None if transfers is None else _per_entry(transfers, spread.shape[1] + 1)
        across = spread.shape[1] + 1  # a row's links and its own
        base, spread = self._unshared(spread, alone)
        sizes = spread.shape[1]
        # each link that messages of different rounds may meet on: when the bytes of
        # those that took it so far would be through at its full rate
        free = np.full((self.links, sizes), -np.inf)
        every = np.arange(sizes)[None, :]
        if any(c is not None for c in self.coupled):
            capacity, rate = _capacities([part[2] for part in parts], widths)
            carried = alone * rate  # bytes
        if smaller is not None:
            units, paid_s, spread_s, alone_s, reduction_s = smaller
            work_s = _full_rate(alone_s, [part[2] for part in parts], widths)
            base_s = self._unshared(spread_s, alone_s)[0]
            if any(c is not None for c in self.coupled):
                carried_s = alone_s * rate
        # an empty message left out holds no link and ends nothing
        idle = None if sent.all() else np.where(sent, 0.0, np.inf)
        clock = np.zeros((self.ranks, sizes))
        # every message's ends' times, sends then receives
        ended = np.empty((2 * self.widest, sizes))
        meeting = self.crossed or [None] * len(self.rounds)
        for (run, pair, members, ends, crossing, ranks), (spots, real, cells), coupled, \
                partners, met in zip(self.rounds, self.queues, self.coupled, self.partners,
                                     meeting):
            # the round's rows' figures, taken round by round (taken for every message
            # at once, they fill memory several times the cache's size)
            here = row[run]
            start = clock[pair].max(axis=0)
            through = base[kind[run]]
            paying, reducing = paid[here], None if reduction is None else reduction[here]
            small = None
            unit = None if runs is None else np.minimum(self.segment[run], runs[3].shape[1] - 1)
            if smaller is not None:
                # the messages that carry a smaller unit in this round
                small = _carries_smaller(self.segment[run], units[:, here])
                through = np.where(small, base_s[kind[run]], through)
                paying = np.where(small, paid_s[here], paying)
                if reducing is not None:
                    reducing = np.where(small, reduction_s[here], reducing)
            if runs is not None:  # its unit's, through with its longest run
                paying = runs[3][here, unit]
                if runs[2] is not None:
                    reducing = runs[2][here, unit]
            if len(crossing):
                held = start if idle is None else start + idle[here]
                if coupled is None:
                    # each shared link's queue played as the simulator shares it
                    shared = _queue_ends(held[members], real, spots, work, spread,
                                         None if small is None else (small[members], work_s),
                                         weight,
                                         None if runs is None else runs[4][here, unit][members])
                    # the latest of its shared links' ends (links x messages)
                    carried_to = shared.reshape(-1, sizes)[cells].max(axis=0)
                else:
                    # a message on several shared links: max-min over them together
                    # (not only where each link's queue sees it through at its own
                    # time: where they agree, the others' shares elsewhere still move
                    # it: on default_flat(6), tree AllReduce at 5 segments and 1,000
                    # elements, under by 4.8e-4)
                    crossed = here[crossing]
                    if runs is not None and runs[0] is not None and unit is not None:
                        # each unit's transfers
                        taken = (slice(None), crossed, unit[crossing])
                        carried_to = _filled_runs(held[crossing], runs[0][taken],
                                                  runs[1][taken], rate[crossed], coupled,
                                                  capacity[spots[0]])
                    else:
                        nbytes = carried[crossed]
                        if small is not None:
                            nbytes = np.where(small[crossing], carried_s[crossed], nbytes)
                        cap, links = rate[crossed], capacity[spots[0]]
                        # (a message over channels says its transfers: one each, a
                        # chain's, is a message)
                        if partners is not None and (transfers is None
                                                     or (transfers[crossed] == 1).all()) \
                                and (cap == cap[0]).all() and (links == cap[0]).all():
                            carried_to = _grouped_ends(held[crossing], nbytes, cap,
                                                       coupled, links, partners)
                        else:
                            carried_to = _filled_ends(
                                held[crossing], nbytes, cap, coupled, links,
                                None if transfers is None else transfers[crossed])
                through[crossing] = np.maximum(through[crossing],
                                               carried_to - held[crossing])
            if met is not None:
                through = self._met(met, here, start, through, free,
                                    work(here[met[2]][:, None] * across + met[3][:, None],
                                         every),
                                    None if idle is None else sent[here])
            count = len(start)
            sent_end = ended[:count]
            np.add(through, start, out=sent_end)
            if idle is None:
                sent_end += paying
            else:
                sent_end[...] = np.where(sent[here], sent_end + paying, -np.inf)
            if reducing is None:
                ended[count:2 * count] = sent_end
            else:
                np.add(sent_end, reducing, out=ended[count:2 * count])
            done = ended[ends].max(axis=0)
            # a message ends after both its ends' clocks: only a rank whose messages were
            # all left out keeps its clock
            clock[ranks] = done if idle is None else np.maximum(clock[ranks], done)
        return np.split(clock.max(axis=0), np.cumsum(widths)[:-1])

    @staticmethod
    def _met(met: tuple[np.ndarray, ...], here: np.ndarray, start: np.ndarray,
             through: np.ndarray, free: np.ndarray, work: np.ndarray,
             sent: np.ndarray | None) -> np.ndarray:
        """``through`` (each of a round's messages' time from its ``start`` until its
        bytes are through, messages x sizes) of its messages on links that messages of
        different rounds may meet on (``met``: :meth:`_crossed`'s of this round), where
        the bytes of the messages that took the link before would not be through at its
        start (``free``: per link when they would be at its full rate, a fluid backlog;
        links x sizes, updated with this round's ``work``, each entry's bytes' time
        there): behind a slow crossing ranks drift apart, and the messages of one round
        meet those of the next on a leaf's link to the spine, which the rounds, played
        one after another, do not see.  What is left shares the link with the message
        as one message's does (the simulator shares it equally): it is through that
        much later, by at most its own bytes' time there; the backlog, not the ends
        played, since those were played before it came and are not slowed by it.  An
        unsent message (``sent``: False; None, every one is sent) holds no link."""
        messages, starts, message, _, link = met
        left = np.maximum(free[link] - start[message], 0.0)
        through = through.copy()
        through[messages] += np.maximum.reduceat(np.minimum(left, work), starts, axis=0)
        began = start[message] if sent is None else \
            np.where(sent[message], start[message], -np.inf)
        np.maximum.at(free, link, began)
        np.add.at(free, link, work if sent is None else np.where(sent[message], work, 0.0))
        return through

    def _unshared(self, spread: np.ndarray, alone: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each kind's slowest link not shared (of ``spread``, rows x links x sizes, and
        its own, ``alone``), once, and ``spread`` with its own link last, flat (rows x
        (links and its own), sizes)."""
        spread = np.concatenate([spread, alone[:, None, :]], axis=1)  # its own link last
        rows, unshared = self.kinds
        base = np.where(unshared[:, :, None], spread[rows], -np.inf).max(axis=1)
        return base, spread.reshape(-1, spread.shape[2])


def _carries_smaller(unit: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Whether each message carries a smaller unit (messages x sizes), from its ``unit``
    (its number in its class's order) and its row's ``units`` (:func:`_unit_sizes`, 5 x
    messages x sizes): its block (from the last where the base is) and its part there."""
    cut, base, larger, from_larger, from_smaller = units
    unit = unit[:, None]
    block = np.abs(base - unit // cut)
    return unit % cut >= np.where(block < larger, from_larger, from_smaller)


def _full_rate(alone: np.ndarray, bandwidths: list[np.ndarray],
               widths: list[int]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The bytes' time of entries (places in their rows' links, rows x (links and its
    own), flat) at their links' full rate, at some of the sizes side by side: each
    row's time ``alone`` (rows x sizes) at its slowest link, scaled by that link's
    bandwidth over the entry's (``widths`` sizes under each of ``bandwidths``, rows x
    links)."""
    scale = np.stack([(b.min(axis=1)[:, None] / np.hstack(
        [b, np.full((len(b), 1), np.inf)])).reshape(-1) for b in bandwidths])
    part = np.repeat(np.arange(len(widths)), widths)  # each size's of ``bandwidths``
    width = bandwidths[0].shape[1] + 1

    def work(places: np.ndarray, size: np.ndarray) -> np.ndarray:
        return alone[places // width, size] * scale[part[size], places]
    return work


def _per_entry(values: np.ndarray, width: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Entries' (places in their rows' links, rows x ``width``, flat) of a row's
    ``values`` (rows x sizes), at some of the sizes."""
    def taken(places: np.ndarray, size: np.ndarray) -> np.ndarray:
        return values[places // width, size]
    return taken


def _coupled(members: np.ndarray, real: np.ndarray, crossing: np.ndarray,
             fill: int) -> tuple[np.ndarray | None,
                                 tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """Which of a round's shared links each of its messages with one (``crossing``) is
    on (messages x links; ``members``: places x links, the messages numbered in the
    round, ``real`` where they are), where they are at most ``fill``, or each link is
    shared by two groups (:func:`_partners`: their fill costs a pass of a few numbers per
    group and event, whatever their number, where a group's messages carry alike); else
    None (each link's queue is played on its own, :func:`_queue_ends`).  Filled too
    where each message is on one shared link (the per-pair mesh, channels of one order
    sharing a pair's link): a queue of units over runs goes as transfers of its longest
    (tree ReduceScatter on a mesh of 5 ranks, 3 channels, 2 segments, 24 elements, was
    over by 2.4e-4), the fill carries each unit's own (:func:`_filled_runs`).  With it
    the messages' groups (:func:`_partners`; None where they are not so grouped)."""
    if not len(crossing):
        return None, None
    at = np.full(int(max(members.max(), crossing.max())) + 1, -1)
    at[crossing] = np.arange(len(crossing))
    place, link = np.nonzero(real)
    message = at[members[place, link]]
    on = np.zeros((len(crossing), members.shape[1]), dtype=bool)
    on[message, link] = True
    groups = _partners(message, link, on.shape)
    return (on if len(crossing) <= fill or real.shape[0] <= 2 or groups is not None
            else None), groups


def _partners(message: np.ndarray, link: np.ndarray, shape: tuple[int, int]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The messages of a coupled round (each ``message`` on its ``link``: the
    messages x links of ``shape`` that are set, :func:`_coupled`) in groups of messages
    on the same links, where the groups are all of one size, every link is shared by at
    most two groups and every group is on at most two links (a chain's on flat over
    channels of one order: a rank's two sends over every channel share its port, and so
    do its two receives); else None.  Each message's group, the first message of each
    group, and per group the other group on each of its shared links (groups x 2; the
    pad, and a link it is alone on: the number of groups).  Taken from the set entries
    alone: a round's messages and links are thousands each on hundreds of ranks."""
    messages, width = shape
    entries = np.unique(message.astype(np.int64) * width + link)
    message, link = np.divmod(entries, width)
    many_links = np.bincount(message, minlength=messages)
    if (many_links > 2).any():
        return None
    # a message's links, at most two: its first and its last name its group (none: the
    # first and the last of all)
    begin, some = np.cumsum(many_links) - many_links, many_links > 0
    lowest, highest = np.zeros(messages, dtype=np.int64), np.full(messages, width - 1)
    lowest[some] = link[begin[some]]
    highest[some] = link[begin[some] + many_links[some] - 1]
    _, group = _dense_unique(lowest * width + highest)
    count = int(group.max()) + 1
    many = np.bincount(group, minlength=count)
    # (a fancy assignment's order over repeated places is not promised)
    first = np.argsort(group, kind="stable")[np.cumsum(many) - many]
    leads = np.zeros(messages, dtype=bool)
    leads[first] = True
    taken = leads[message]
    place, link = group[message[taken]], link[taken]
    order = np.lexsort((link, place))
    place, link = place[order], link[order]
    sharing = np.bincount(link, minlength=width)
    if (many != many[0]).any() or (sharing > 2).any():
        return None
    # the other of a link's two groups: their numbers' sum less its own
    total = np.bincount(link, weights=place, minlength=width).astype(np.int64)
    other = np.where(sharing[link] == 2, total[link] - place, count)
    table = np.full((count, 2), count, dtype=np.int64)
    table[place, _within(np.bincount(place, minlength=count))] = other
    return group, first, table


def _capacities(bandwidths: list[np.ndarray], widths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each entry's link's bandwidth (rows x (links and its own), flat; x sizes, ``widths``
    of them under each of ``bandwidths``, rows x links) and each row's bottleneck's (rows
    x sizes)."""
    band = np.concatenate([np.broadcast_to(b[:, :, None], (*b.shape, w))
                           for b, w in zip(bandwidths, widths)], axis=2)
    rate = band.min(axis=1)
    return np.concatenate([band, rate[:, None, :]], axis=1).reshape(-1, band.shape[2]), rate


def _side_by_side(parts: list[tuple[Any, ...]], widths: list[int]) -> tuple[Any, ...]:
    """The rows' figures of :meth:`_Flow.time`'s ``parts`` (each at ``widths`` sizes)
    side by side: latency, spread, bytes' time alone, reduction (None where no part has
    one; 0, which adds nothing, where only some do), whether sent, the smaller
    parts' round and figures (None where no part has them; where only some do, the
    others' from a round never reached) and the transfers a message is (None where no
    part says; one where only some do)."""
    def joined(k: int, of: list[tuple[Any, ...]] = parts) -> np.ndarray:
        return np.concatenate([np.broadcast_to(part[k], (*part[k].shape[:-1], w))
                               for part, w in zip(of, widths)], axis=-1)

    def reduced(of: list[tuple[Any, ...]]) -> np.ndarray | None:
        reductions = [part[4] for part in of]
        return None if all(r is None for r in reductions) else np.concatenate(
            [np.zeros((len(part[0]), w)) if r is None else np.broadcast_to(r, (len(r), w))
             for part, r, w in zip(of, reductions, widths)], axis=1)
    smaller = None
    if any(part[7] is not None for part in parts):
        never = np.iinfo(np.int32).max
        # a part without smaller units: one part a block, from one never reached
        units = [np.array([1, 0, 0, never, never])[:, None, None] if part[7] is None
                 else part[7][0] for part in parts]
        small = [part if part[7] is None else part[7][1] for part in parts]
        smaller = (np.concatenate([np.broadcast_to(u, (5, len(part[0]), w)) for u, part, w in
                                   zip(units, parts, widths)], axis=2),
                   joined(0, small), joined(1, small), joined(3, small), reduced(small))
    transfers = None if all(part[6] is None for part in parts) else np.concatenate(
        [np.ones((len(part[0]), w)) if part[6] is None else part[6]
         for part, w in zip(parts, widths)], axis=1)
    return joined(0), joined(1), joined(3), reduced(parts), joined(5), smaller, transfers, \
        _side_runs([part[8] for part in parts])


def _side_runs(tables: list[Any]) -> tuple[Any, ...] | None:
    """The :meth:`_Described._run_play` figures of parts played side by side (None where
    they have none): their units padded to the most any has (no transfers and no
    reduction there, the last unit's latency and scale, which a message past it has), their
    sizes side by side, no reduction where only some reduce, no transfers where the
    play is not filled."""
    if tables[0] is None:
        return None
    units = max(t[3].shape[1] for t in tables)

    def padded(table: np.ndarray, axis: int,
               mode: Literal["constant", "edge"] = "constant") -> np.ndarray:
        width = [(0, 0)] * table.ndim
        width[axis] = (0, units - table.shape[axis])
        return np.pad(table, width, mode=mode)
    weights, sizes = (None, None) if tables[0][0] is None else (
        np.concatenate([padded(t[k], 2) for t in tables], axis=-1) for k in (0, 1))
    reduction = None if all(t[2] is None for t in tables) else np.concatenate(
        [padded(np.zeros(t[3].shape) if t[2] is None else t[2], 1) for t in tables],
        axis=-1)
    paid, scale = (np.concatenate([padded(t[k], 1, "edge") for t in tables], axis=-1)
                   for k in (3, 4))
    return weights, sizes, reduction, paid, scale


def _grouped(links: np.ndarray, tag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries of ``links`` (messages x links, -1 at the pad; flat) but the pad, by
    each message's ``tag`` (numbers >= 0) and then link, and where each (tag, link)
    starts among them."""
    real = np.flatnonzero(links.ravel() >= 0)
    keys = (tag[:, None] * (int(links.max(initial=0)) + 1) + links).ravel()[real]
    by_key = np.argsort(keys, kind="stable")
    keys = keys[by_key]
    return real[by_key], np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])


def _across(table: np.ndarray) -> np.ndarray:
    """``table`` (rows x width) across: width x rows, contiguous."""
    return np.ascontiguousarray(table.T)


def _in_rounds(values: np.ndarray, starts: np.ndarray, rounds: np.ndarray,
               count: int) -> list[np.ndarray]:
    """``values`` in groups (each from its of ``starts``), the groups in ``count``
    rounds (``rounds``: each group's, sorted): per round its groups' values as rows,
    each padded with its first value (no rows in a round without groups)."""
    many = np.diff(np.append(starts, len(values)))
    groups = np.bincount(rounds, minlength=count)
    first = np.cumsum(groups) - groups
    width = np.ones(count, dtype=np.int64)
    np.maximum.at(width, rounds, many)
    size = groups * width
    offset = np.cumsum(size) - size
    wide = width[rounds]
    at = offset[rounds] + (np.arange(len(starts)) - first[rounds]) * wide
    flat = np.repeat(values[starts].astype(np.int32), wide)  # indices within a round
    flat[np.repeat(at, many) + _within(many)] = values
    return [flat[o:o + n].reshape(g, w) for o, n, g, w in
            zip(offset.tolist(), size.tolist(), groups.tolist(), width.tolist())]
