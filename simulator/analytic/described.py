"""A description priced at every size under each protocol
(:class:`_Described`), cached by its rounds."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from collectives.traffic import window_part

from ..gpu import hidden_latency
from .cache import _cached
from .sample import Groups, Orders, SAMPLE_ALL_RANKS, _link_classes
from .budgets import (FILL_MESSAGES, UNHELD_RANKS, _fill, _front, _is_held, _played,
                      _stepped, _unheld)
from .arrays import _ceil_div, _distinct_rows, _unique_rows
from .units import RUN_KINDS, _unit_runs, _unit_sizes, _unit_spans
from .flow import _crossed_links
from .layout import _layout, _span


#: a time per row and link of its route (rows x links x counts) as ``(times, at)``:
#: ``times[at]``, the rows that share their links alike one row of ``times``
Shared = tuple[np.ndarray, np.ndarray]


class _Described:
    """A description on one machine's orders: its :class:`_Layout`, every class's
    messages, and per block its coefficients of the slowest message and of the chain's
    crossing (a chain's: its hops once, its slowest ``chain - 1`` times, or ``chain``
    times and no crossing where it only waits; ``repeat``
    rounds: their slowest); with ``groups`` of orders, every class's group (its
    messages are of the group's count)."""

    __slots__ = ("layout", "messages", "slow", "cross", "sizes", "class_size", "flags",
                 "span", "front", "cut", "cut_of", "blocks", "group", "pieced", "cut_at",
                 "positions", "windows", "carries", "pieces")

    def __init__(self, topology: Any, orders: Orders, rounds: tuple[Any, ...],
                 groups: Groups, fill: int = FILL_MESSAGES) -> None:
        self.layout = layout = _layout(topology, orders, rounds, groups, fill)
        many = layout.groups
        self.messages = [rounds[i].messages[c // many] for i, _, owners in layout.blocks
                         for c in owners]
        self.group = np.array([c % many for _, _, owners in layout.blocks for c in owners],
                              dtype=np.int64)
        coefficients = [{"repeat": (0 if r.paced else r.repeat, 0.0),
                         "chain": (r.chain, 0.0) if r.waits else (r.chain - 1, 1.0)}[role]
                        for r, role in ((rounds[i], role) for i, role, _ in layout.blocks)]
        self.slow = np.array([c[0] for c in coefficients], dtype=float)
        self.span = _span(rounds)
        self.front = _front(topology, orders, list(rounds))
        self.cross = np.array([c[1] for c in coefficients], dtype=float)
        # each evaluated once per group
        sizes = {(id(m.elements), g): (m.elements, g)
                 for m, g in zip(self.messages, self.group.tolist())}
        at = {key: k for k, key in enumerate(sizes)}
        self.sizes = list(sizes.values())
        self.class_size = np.array([at[id(m.elements), g]
                                    for m, g in zip(self.messages, self.group.tolist())],
                                   dtype=np.int64)
        self.pieced = np.array([m.pieced for m in self.messages], dtype=bool)
        self.flags = np.array([(m.reduce, m.pieced, m.skip_empty) for m in self.messages],
                              dtype=bool).reshape(-1, 3)[layout.row_class][:, :, None]
        # per class the parts its messages carry one a round (0: whole), where the play
        # is filled: elsewhere its queues of unequal parts, each played on its own, cost
        # the three tables on 128 DGX nodes +20% and are not exact there either
        filled = layout.flow is not None and layout.flow.filled
        self.cut = np.array([m.cut if filled else 0 for m in self.messages], dtype=np.int64)
        self.cut_of = [m.cut_of for m in self.messages]
        # where every played class says where what it cuts starts, each unit's runs of
        # the buffer (:meth:`_run_table`): filled, the play's transfers; elsewhere the
        # latency each unit's longest run leaves unhidden
        self.cut_at = [m.cut_at for m in self.messages] \
            if layout.flow is not None and all(m.cut_at is not None and m.cut
                                               for m in self.messages) else None
        self.positions = len(orders[0])
        # the classes whose messages all carry one window of blocks (:func:`_windowed`)
        self.windows = [(c, int(m.windows[0, 0])) for c, m in enumerate(self.messages)
                        if m.windows is not None and len(m.windows)
                        and (m.windows == m.windows[0]).all()]
        # per class its blocks, and the last one's number where its units run backward
        self.blocks = np.array([(m.blocks, (m.blocks - 1) * m.backward) for m in self.messages],
                               dtype=np.int64).reshape(-1, 2)
        # the rows of classes that say which of their messages carry anything, by what
        # says it and the group (each evaluated once)
        carries: dict[tuple[int, int], tuple[Any, int, list[np.ndarray]]] = {}
        for c, (m, g) in enumerate(zip(self.messages, self.group.tolist())):
            if m.carries is not None:
                rows = np.arange(layout.class_rows[c], layout.class_rows[c + 1]
                                 if c + 1 < len(layout.class_rows) else len(layout.row_class))
                carries.setdefault((id(m.carries), g), (m.carries, g, []))[2].append(rows)
        self.carries = [(f, g, np.concatenate(rows)) for f, g, rows in carries.values()]
        # the rows of classes whose every message is a kind of its own size and start
        # (:attr:`Messages.sizes <collectives.traffic.Messages.sizes>`), by class
        self.pieces = [(m.sizes, g, np.arange(layout.class_rows[c], layout.class_rows[c + 1]
                                              if c + 1 < len(layout.class_rows)
                                              else len(layout.row_class)))
                       for c, (m, g) in enumerate(zip(self.messages, self.group.tolist()))
                       if m.sizes is not None]

    def time(self, topology: Any, terms: Sequence[tuple[Any, ...]], counts: np.ndarray,
             ds: int, piece: np.ndarray | None, apart: int = 0,
             silent: bool = False) -> tuple[np.ndarray, list[tuple[Any, ...]] | None]:
        """Seconds at every count (elements of each group's orders: groups x counts) under
        each of ``terms`` (a protocol's link
        latency and bandwidth, FIFO slot, link shares and seconds per byte reduced, as
        :func:`simulator.gpu.link_figures` gives them; protocols x counts): over the
        blocks, the slowest message times its coefficient plus the chain's crossing (the
        sum over its hops) times its, and the paced rounds (:meth:`_stretched`); but
        where the paced rounds are played (:attr:`_Layout.flow`) they are left out, and
        what :meth:`_Flow.time` plays them from is returned per protocol (else None).
        ``apart``: every message's blocks lie apart in the buffer, in so many runs of
        each group's vector, the longest ``piece`` bytes (groups x counts; a composed
        algorithm's phase), not only those its description says are pieced (0: those
        alone).  ``silent``: a group of no elements sends nothing
        (:attr:`collectives.registry.Algorithm.empty_sends`)."""
        if not self.messages:
            return np.zeros((len(terms), counts.shape[1])), None
        layout = self.layout
        elements = np.array([size(counts[g]) for size, g in self.sizes], dtype=float) * ds
        sized = elements[self.class_size]
        nbytes = sized[layout.row_class]
        pieces = self._pieced(counts, ds)
        if pieces is not None:  # each row its own message's bytes
            nbytes[pieces[0]] = pieces[1]
        group = self.group[layout.row_class]
        reduce, pieced, skip_empty = self.flags[:, 0], self.flags[:, 1] | bool(apart), \
            self.flags[:, 2]
        first = _link_classes(topology)[1]
        # a message over several runs of the buffer shares its links as a transfer per
        # run, as the simulator's flows do: hier's inner tree AllGather sends a subtree's
        # blocks (apart in the buffer) on a NIC beside a one-block message, which gets a
        # transfer's share, not a message's (dgx_h100(64), LL, 64 MiB: -4.2% -> -0.4%)
        runs = self._runs(sized, piece, apart, counts, ds) if piece is not None else None
        shared = self._shared(sized, runs)
        own = nbytes if runs is None else runs[1][layout.row_class]
        transfers = None if runs is None else runs[0][layout.row_class]
        if pieces is not None:
            own, transfers, shared = self._own_shares(pieces, nbytes, own, transfers, shared,
                                                      piece, sized, runs)
        sent = ~(skip_empty & (nbytes <= 0))
        if silent:
            sent = sent & (counts[group] > 0)
        for carries, g, rows in self.carries:  # a message that carries nothing is not sent
            sent[rows] &= carries(counts[g])[layout.row_kind[rows]]
        # a message over several runs of the buffer goes as a transfer per run, side by
        # side: each hides its latency behind its own bytes and is reduced on its own
        smaller = self._smaller(counts, ds, sized, piece, pieced)
        table = self._run_table(counts, ds, piece, pieces) \
            if piece is not None and self._unit_runs_told(
                apart, any(slot is not None for _, _, slot, _, _ in terms)) else None
        out = np.empty((len(terms), counts.shape[1]))
        plays: list[tuple[Any, ...]] = []
        for k, (latency, bandwidth, slot, shares, gamma) in enumerate(terms):
            routes = (np.append(latency[first], 0.0)[layout.links].sum(axis=1)[:, None],
                      np.append(bandwidth[first], np.inf)[layout.links],
                      # a route's shares (simulator.gpu.route_shares): the most of its links'
                      1.0 if shares is None else
                      np.append(shares[first], 1.0)[layout.links].max(axis=1)[:, None])
            out[k], play = self._priced(routes, shared, nbytes, own, sent,
                                        (reduce, gamma, slot), transfers)
            if smaller is not None:  # the play's figures where a message is the smaller
                units, shared_s, nbytes_s, own_s = smaller
                small = self._priced(routes, shared_s, nbytes_s, own_s, sent,
                                     (reduce, gamma, slot), transfers)[1]
            if play is not None:
                plays.append((*play, None if smaller is None else (units, small),
                              None if table is None else
                              self._run_play(table, reduce, gamma, routes, slot, own)))
        return out, (plays if layout.flow is not None else None)

    def _unit_runs_told(self, apart: int, slotted: bool) -> bool:
        """Whether each unit's runs of the buffer are priced (:meth:`_run_table`) where
        its group's vector lies in runs: where every played class says where what it
        cuts starts, the runs are one a position (a channel's part of every rank's block; a
        composed algorithm's phase where each rank's block is one run: ``apart`` so many
        runs), and the play carries each unit's transfers (filled) or some protocol's
        FIFO slots (``slotted``) hide the latency behind a run's bytes."""
        flow = self.layout.flow
        return self.cut_at is not None and flow is not None and \
            apart in (0, self.positions) and (flow.filled or slotted)

    def _pieced(self, counts: np.ndarray, ds: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The rows of classes whose every message is a kind of its own
        (:attr:`Messages.sizes <collectives.traffic.Messages.sizes>`), their bytes and
        the element each starts at in its group's vector (each rows x counts; None
        where no class is)."""
        if not self.pieces:
            return None
        kind = self.layout.row_kind
        told = [(rows, *sizes(counts[g])) for sizes, g, rows in self.pieces]
        return (np.concatenate([rows for rows, _, _ in told]),
                np.concatenate([elements[kind[rows]] for rows, elements, _ in told]) * ds,
                np.concatenate([start[kind[rows]] for rows, _, start in told]))

    def _own_shares(self, pieces: tuple[np.ndarray, np.ndarray, np.ndarray],
                    nbytes: np.ndarray, own: np.ndarray, transfers: np.ndarray | None,
                    shared: Shared, piece: np.ndarray | None, sized: np.ndarray,
                    runs: tuple[np.ndarray, np.ndarray] | None
                    ) -> tuple[np.ndarray, np.ndarray | None, Shared]:
        """``own`` (bytes per transfer) and ``transfers`` of the rows of ``pieces``
        (:meth:`_pieced`) from their own ``nbytes`` (:meth:`_runs`' rule: a transfer
        per run of ``piece`` bytes), and their ``shared`` time on their links (those
        rows' own, after the others): the row's own message at its own bytes, the others
        sharing the link at their classes' (:meth:`_shared`)."""
        rows, mine = pieces[0], nbytes[pieces[0]]
        row_class = self.layout.row_class[rows]
        own = own.copy()
        own[rows] = mine if runs is None or piece is None else \
            np.where(self.pieced[row_class][:, None],
                     np.minimum(mine, piece[self.group[row_class]]), mine)
        if transfers is not None:
            each = np.ones_like(mine)
            np.divide(mine, own[rows], out=each, where=own[rows] > 0)
            transfers = transfers.copy()
            transfers[rows] = each
        # the class's own load as priced for a message of its largest bytes, less one of
        # them, plus the row's own message (where its class is on the link at all)
        cls_transfers, cls_own = (np.ones_like(sized), sized) if runs is None else runs
        at = cls_transfers[row_class][:, None, :], cls_own[row_class][:, None, :]
        # rows x links: how many messages of its class share the link, itself counted
        counted = self.layout.pair_own[self.layout.pair[rows]][:, :, None]
        others = np.maximum(counted - 1, 0) * at[0] * np.minimum(at[1], own[rows][:, None, :])
        times, of = shared
        before = times[of[rows]]
        after = np.where(counted > 0, before - counted * at[0] * at[1] + others
                         + mine[:, None, :], before)
        of = of.copy()
        of[rows] = len(times) + np.arange(of[rows].size).reshape(len(rows), -1)
        return own, transfers, (np.concatenate([times, after.reshape(-1, times.shape[1])]), of)

    def _run_table(self, counts: np.ndarray, ds: int, piece: np.ndarray,
                   pieces: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                   ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray]:
        """Per row, per unit its messages carry (:attr:`Messages.cut
        <collectives.traffic.Messages.cut>`) and per count, the transfers it goes as,
        one per run of the buffer it meets (:func:`_unit_runs`; runs of its group's
        vector, ``counts``, whose longest is ``piece`` bytes, groups x counts): how many
        of each of :data:`RUN_KINDS` kinds and their bytes (each kinds x rows x units x
        counts; None where the play is not filled: it carries each message whole), the
        bytes of the longest and whether they are several (rows x units x counts).  The
        ``b / f`` rule of :meth:`_runs` is off where a unit's first and last runs are
        parts (``default_flat(3)``, tree ReduceScatter over 3 channels at 4 segments and
        ``1 << 20`` elements: +0.98%)."""
        cuts = np.array([m.cut for m in self.messages], dtype=np.int64)
        units = int((cuts * self.blocks[:, 0]).max(initial=1))
        shape = (RUN_KINDS, len(self.messages), units, counts.shape[1])
        weights, sizes = np.zeros(shape), np.zeros(shape)
        # classes of one unit (the whole of what each cuts, from where it starts) taken
        # together: a tree AllGather's are hundreds
        single: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for c, (at, whole) in enumerate(zip(self.cut_at or [], self.cut_of)):
            g = self.group[c]
            mine = counts[g]
            cut = mine if whole is None else whole(mine)
            if cuts[c] * self.blocks[c, 0] == 1:
                single.append((c, at(mine), cut, mine, piece[g] // ds))
                continue
            start, length = _unit_spans(cut, int(cuts[c]), int(self.blocks[c, 0]),
                                        bool(self.blocks[c, 1]), at(mine))
            w, e = _unit_runs(start, length, mine, self.positions, piece[g] // ds)
            weights[:, c, :len(start)], sizes[:, c, :len(start)] = w, e * ds
        if single:
            rows = [c for c, *_ in single]
            start, length, mine, longest = (np.array([one[k] for one in single])
                                            for k in range(1, 5))
            w, e = _unit_runs(start, length, mine, self.positions, longest)
            weights[:, rows, 0], sizes[:, rows, 0] = w, e * ds
        row_class: Any = self.layout.row_class
        flow = self.layout.flow
        if pieces is not None:  # each of those rows its own message's runs
            weights, sizes = weights[:, row_class], sizes[:, row_class]
            told, nbytes, start = pieces
            g = self.group[row_class[told]]
            w, e = _unit_runs(start, nbytes // ds, counts[g], self.positions, piece[g] // ds)
            weights[:, told, 0], sizes[:, told, 0] = w, e * ds
            row_class = slice(None)
        largest = np.where(weights > 0, sizes, 0.0).max(axis=0)[row_class]
        several = np.asarray((weights[1:] > 0).any(axis=0))[row_class]
        if flow is None or not flow.filled:
            return None, None, largest, several
        return weights[:, row_class], sizes[:, row_class], largest, several

    @staticmethod
    def _run_play(table: tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray],
                  reduce: np.ndarray, gamma: float, routes: tuple[np.ndarray, np.ndarray, Any],
                  slot: float | None, own: np.ndarray) -> tuple[Any, ...]:
        """The play's figures of a :meth:`_run_table`: its transfers and their bytes,
        every row's reduction of each unit (None where none reduces), the latency each
        unit pays over its row's ``routes`` (latency, its links' bandwidth, shares)
        under FIFO slots of ``slot`` bytes, and its longest run over its row's bytes a
        transfer, ``own`` (rows x counts; :meth:`_runs`), each rows x units x counts: a
        transfer's bytes are reduced as they arrive, the largest last, and the transfers
        of a unit go side by side, each hiding its latency behind its own bytes, so the
        unit is through with its longest run's, and where it shares a link it is as many
        transfers of that run as make its bytes (one run: as its row's, whose queues
        need no play of their own; :func:`_queue_ends`; hier's inner tree
        ReduceScatter on ``dgx_h100(3)``, whose segments straddle a rank's block at 12
        MB, under Simple was -9.4% charged as its row's)."""
        weights, sizes, largest, several = table
        latency, bandwidth, shares = routes
        rate = bandwidth.min(axis=1)[:, None, None]
        paid = np.broadcast_to(hidden_latency(
            latency[:, :, None], largest, rate, slot,
            shares[:, :, None] if isinstance(shares, np.ndarray) else shares), largest.shape)
        reduction = np.where(reduce[:, :, None], gamma * largest, 0.0) \
            if gamma and reduce.any() else None
        scale = np.ones(largest.shape)
        np.divide(largest, own[:, None, :], out=scale, where=several & (own[:, None, :] > 0))
        return weights, sizes, reduction, paid, scale

    def _runs(self, sized: np.ndarray, piece: np.ndarray, apart: int, counts: np.ndarray,
              ds: int) -> tuple[np.ndarray, np.ndarray]:
        """Per class (x counts) how many transfers its messages of ``sized`` bytes are,
        one per run of the buffer (runs of ``piece`` bytes, groups x counts, where they
        are pieced or ``apart``), and the bytes of each: taken as ``b / f`` transfers of
        the run's ``f`` bytes, ``b`` in all (the runs but a message's first and last are
        whole); but a class of one window of its group's vector (of ``counts``
        elements, ``ds`` bytes each) at the longest run it meets (:meth:`_window_runs`)."""
        pieced = self.pieced | bool(apart)
        own = np.where(pieced[:, None], np.minimum(sized, piece[self.group]), sized)
        if self.windows and not apart:
            at, first = (np.array(column) for column in zip(*self.windows))
            own[at] = self._window_runs(first, sized[at] // ds, counts[self.group[at]],
                                        piece[self.group[at]] // ds) * ds
        transfers = np.ones_like(sized)
        np.divide(sized, own, out=transfers, where=own > 0)
        return transfers, own

    def _window_runs(self, first: np.ndarray, length: np.ndarray, count: np.ndarray,
                     longest: np.ndarray) -> np.ndarray:
        """Elements of the longest run of the buffer that each window from block ``first``
        of ``length`` elements (windows x counts) meets in its vector of ``count`` elements
        cut into near-equal blocks, whose longest run is ``longest`` elements
        (:func:`_unit_runs`): at a ReduceScatter's channel 0 holding blocks of two
        elements and one, a window of the first is runs of one, of the second one run,
        so the window whose links carry the most is not the one reduced the longest
        (rhd over 2 channels on ``default_flat(16)``, 23 elements, each class priced at
        its largest window and the longest run was +3.7e-4)."""
        size, extra = np.divmod(count, self.positions)
        start = first[:, None] * size + np.minimum(first[:, None], extra)
        weights, elements = _unit_runs(start, length, count, self.positions, longest)
        return np.where(weights > 0, elements, 0).max(axis=0)

    def _shared(self, sized: np.ndarray,
                runs: tuple[np.ndarray, np.ndarray] | None) -> Shared:
        """Every row's bytes' time on each link of its route at the link's full rate
        (:data:`Shared`, a row of times per pair of :attr:`_Layout.pair`) from its
        class's bytes (``sized``, classes x counts): a link shared by transfers of
        ``f_i`` bytes (max-min, as the simulator shares it) carries one of ``f`` bytes
        in ``sum_i min(f_i, f) / bandwidth``; a message is a transfer, or, with ``runs``
        (:meth:`_runs`), a transfer per run, through with its longest.  Classes alike
        there (the same bytes, transfers) are summed first, a link's load by each
        distinct class (:meth:`_Layout.loads`); the products in place (each entries x
        counts: 31 MB on ``dgx_h100(2048)``)."""
        layout = self.layout
        alike, labels, _ = _distinct_rows(sized if runs is None else np.hstack(runs))
        mine, theirs, many, first = layout.loads(labels)
        if runs is None:
            load = alike[theirs]
            np.minimum(load, sized[mine], out=load)
            load *= many[:, None]
        else:
            transfers, own = np.hsplit(alike, 2)
            load = transfers[theirs]
            load *= many[:, None]
            least = own[theirs]
            np.minimum(least, runs[1][mine], out=least)
            load *= least
        return np.add.reduceat(load, first, axis=0), layout.pair

    def _smaller(self, counts: np.ndarray, ds: int, sized: np.ndarray,
                 piece: np.ndarray | None, pieced: np.ndarray
                 ) -> tuple[np.ndarray, Shared, np.ndarray, np.ndarray] | None:
        """Where a played class carries units one a round (:attr:`Messages.cut
        <collectives.traffic.Messages.cut>`) and some are one element smaller than its
        ``sized`` bytes, at some of ``counts``: which units (:func:`_unit_sizes`, per
        row, 5 x rows x counts), and the rows' shared time on each link
        (:data:`Shared`), bytes and bytes per transfer at the smaller unit; else None
        (the play charges every unit as the class's ``sized`` bytes)."""
        cut = self.cut[:, None]
        if not (cut > 0).any():
            return None
        mine = counts[self.group]  # each class's group's, or what of it the class cuts
        for c, whole in enumerate(self.cut_of):
            # a class of one unit carries the whole of it: never a smaller one
            if whole is not None and cut[c, 0] * self.blocks[c, 0] > 1:
                mine[c] = whole(mine[c])
        units = _unit_sizes(mine, np.maximum(cut, 1), self.blocks[:, :1], self.blocks[:, 1:])
        never = np.iinfo(np.int32).max
        uneven = (cut > 0) & ((units[3] < cut) | (units[4] < cut))
        if not uneven.any():
            return None
        units[3:] = np.where(uneven, units[3:], never)
        layout = self.layout
        sized = np.where(uneven, sized - ds, sized)
        shared = self._shared(sized, None)
        nbytes = sized[layout.row_class]
        own = nbytes if piece is None else \
            np.where(pieced, np.minimum(nbytes, piece[self.group[layout.row_class]]), nbytes)
        return units[:, layout.row_class], shared, nbytes, own

    def _priced(self, routes: tuple[np.ndarray, np.ndarray, Any], shared: Shared,
                nbytes: np.ndarray, own: np.ndarray, sent: np.ndarray,
                reduced: tuple[np.ndarray, float, float | None],
                transfers: np.ndarray | None) -> tuple[np.ndarray, tuple[Any, ...] | None]:
        """Seconds at every count under one protocol, from every row's route's
        ``routes`` (latency, its links' bandwidth, shares), its bytes' ``shared`` time
        on each link at full rate (:data:`Shared`), its ``nbytes``, its ``own`` bytes per
        transfer, whether it is ``sent`` and ``reduced`` (whether it is, seconds per byte,
        the FIFO slot); and what :meth:`_Flow.time` plays the paced rounds from where
        :attr:`_Layout.flow` plays them (they are left out of the seconds; else None), a
        message as ``transfers`` of its ``own`` bytes where they are given
        (:meth:`_runs`)."""
        layout = self.layout
        latency, bandwidth, shares = routes
        reduce, gamma, slot = reduced
        rate = bandwidth.min(axis=1)[:, None]
        if layout.flow is None:
            spread, carried = None, _slowest_link(shared, bandwidth)
        else:
            spread = shared[0][shared[1]] / bandwidth[:, :, None]  # on each link of the route
            carried = spread.max(axis=1)
        paid = hidden_latency(latency, own, rate, slot, shares)
        transfer = np.where(sent, paid + carried, 0.0)
        reduction = np.where(reduce & sent, gamma * own, 0.0) if gamma and reduce.any() \
            else None
        time = transfer if reduction is None else transfer + reduction
        slowest = np.maximum.reduceat(time, layout.class_rows, axis=0)
        summed = np.add.reduceat(layout.weight * time, layout.class_rows, axis=0)
        blocks = np.maximum(0.0, np.maximum.reduceat(slowest, layout.block_classes, axis=0))
        crossed = np.add.reduceat(summed, layout.block_classes, axis=0)
        lock_step = self.slow @ blocks + self.cross @ crossed
        if layout.flow is None:
            return lock_step + self._stretched(time), None
        return lock_step, (paid, spread, bandwidth,
                           (nbytes if transfers is None else own) / rate, reduction, sent,
                           transfers)

    def _stretched(self, time: np.ndarray) -> np.ndarray:
        """The paced rounds (:class:`collectives.traffic.Round`) where not every rank is
        played, from every row's whole ``time``: every round as long as the slowest row
        then in flight, the rounds in which no sampled message is (far from the sample)
        as long as those in which one is, on average."""
        rows, inside, rounds = self.layout.stretch
        if not len(rows):
            return np.zeros(time.shape[1])
        slowest = np.where(inside[:, :, None], time[rows][:, None, :], 0.0).max(axis=0)
        if self.front is not None:
            return self._followed(self.front, time[rows], self.layout.weight[rows], inside,
                                  rounds, slowest)
        return (rounds @ slowest) * (self.span / rounds.sum())

    @staticmethod
    def _followed(speeds: tuple[float, float], time: np.ndarray, weight: np.ndarray,
                  inside: np.ndarray, rounds: np.ndarray, slowest: np.ndarray) -> np.ndarray:
        """The held paced rounds where :func:`_front` (its ``speeds``), from their rows'
        ``time`` and ``weight`` (messages), whether each is in flight in each stretch of
        ``rounds``, and each stretch's ``slowest`` row.  A rank waits only on its neighbours'
        clocks, so the slowest path does not pay every round's slowest message, as the
        lock-step stretch does: it sits on one row's hops while they are in flight, and
        before and after keeps up with the rounds' first rounds and ends, crossing a
        hop a round (at the messages' mean time) where they move a position a round,
        and for the rest of the rounds sitting on the slowest hop then in flight.  A
        chain's ReduceScatter on 128 nodes at one segment: its hops cross the spine
        from round 255 only, and the path reaches them after the NVLink and leaf hops
        before (the simulator 5.18 ms, the lock-step stretch +12.7%, this -0.9%)."""
        moving = (weight * time).sum(axis=0) / weight.sum()
        paid = np.cumsum(np.vstack([np.zeros((1, time.shape[1])),
                                    rounds[:, None] * slowest]), axis=0)
        passed = np.r_[0, np.cumsum(rounds)]
        seen = np.flatnonzero(inside.any(axis=1))
        first = inside.argmax(axis=1)
        end = inside.shape[1] - inside[:, ::-1].argmax(axis=1)
        gone = [(passed[first], paid[first]),  # before each row's first stretch
                (passed[-1] - passed[end], paid[-1] - paid[end])]  # after its last
        path = (inside @ rounds)[:, None] * time
        for speed, (count, sitting) in zip(speeds, gone):
            # crossing a hop takes no longer than the round's slowest message
            path += np.minimum(speed * count[:, None] * moving + (1.0 - speed) * sitting,
                               sitting)
        return path[seen].max(axis=0)


def _slowest_link(shared: Shared, bandwidth: np.ndarray) -> np.ndarray:
    """Each row's most seconds on a link of its route (rows x counts) from its ``shared``
    time there at full rate and the links' ``bandwidth`` (rows x links), link by link:
    no rows x links x counts of them at once (a pairwise AllToAll's 15,000 rows on
    ``dgx_h100(2048)`` at 66 sizes: 49 MB each)."""
    times, of = shared
    slowest = times[of[:, 0]] / bandwidth[:, :1]
    for link in range(1, of.shape[1]):
        np.maximum(slowest, times[of[:, link]] / bandwidth[:, link:link + 1], out=slowest)
    return slowest


_DESCRIBED: dict[Any, tuple[tuple[Any, ...], _Described]] = {}


def _described(topology: Any, orders: Orders, rounds: tuple[Any, ...],
               groups: Groups) -> _Described:
    """:class:`_Described` of ``rounds`` on ``orders`` of ``topology`` in ``groups``
    (cached); held paced rounds played (:func:`_unheld`): on a machine of alike links
    where every rank is played (:func:`_played`), filled up to :data:`UNHELD_RANKS`
    ranks, past that where each port carries at most two of a round's messages, else
    each port's queue on its own (past the play's budgets, on channels of one order, from
    shorter chains, :func:`_shortened`, else held to the chain's front,
    :func:`_front`); elsewhere where every rank is sampled and messages of
    different rounds may meet on a link (:func:`_crossed_links`), which the lock-step
    rounds do not see (a chain's AllGather on ``dgx_h100(8, nodes_per_leaf=2,
    spines=2)`` at one segment, 64 MiB, LL, was +10.3%, played exact); elsewhere the
    lock-step sum is within 1% of the play (``dgx_h100`` of 1-8 nodes: a chain's
    ReduceScatter +0.38% the most), at two thirds of its cost."""
    def make() -> _Described:
        alike = len(_link_classes(topology)[1]) == 1
        if alike and _is_held(rounds) and _played(topology, orders, list(_unheld(rounds))):
            fill = FILL_MESSAGES if topology.nranks <= UNHELD_RANKS else 0
            return _Described(topology, orders, _unheld(rounds), groups, fill)
        if not (_is_held(rounds) and topology.nranks <= SAMPLE_ALL_RANKS):
            stepped = _stepped(rounds)
            if stepped is not None and not _played(topology, orders, list(rounds)):
                return _Described(topology, orders, stepped, groups)
            return _Described(topology, orders, rounds, groups, _fill(rounds))
        hops = _layout(topology, orders, rounds, groups, FILL_MESSAGES).hops
        unheld = hops is not None and bool(_crossed_links(hops, 0).any())
        return _Described(topology, orders, _unheld(rounds) if unheld else rounds, groups)
    key = (topology, id(orders), id(rounds), groups)
    return _cached(_DESCRIBED, key, (orders, rounds), make)


def _window_parts(rounds: tuple[Any, ...], q: int, counts: np.ndarray,
                  longest: np.ndarray) -> list[tuple[tuple[Any, ...], np.ndarray]]:
    """``rounds`` on ``q`` positions at ``counts`` (elements of each group's vectors,
    groups x sizes) in runs whose longest is ``longest`` elements (as ``counts``), as
    ``(rounds, sizes)`` parts (each with whether it is priced at each size): at the
    sizes where some group's channel holds blocks of at most one element, whose parts
    of the blocks are runs of one element then one longer run (:func:`_unit_runs`), a
    class per set of windows that carry alike (:func:`_windowed`); elsewhere
    ``rounds`` as they are, a class at its largest window, where a window's runs are
    its blocks' own (exact there: rhd's ReduceScatter on ``default_flat(65)`` over 2
    channels was off only from 66 to 128 elements, by up to +1.0e-3, each class at its
    largest window; a class per window everywhere doubled its CPU on 2,048 ranks)."""
    small = (longest > _ceil_div(counts, q)).any(axis=0)
    parts = [(rounds, ~small)] if not small.all() else []
    if small.any():
        parts.append((_windowed(rounds, q, counts[:, small], longest[:, small]), small))
    return parts


_WINDOW_SETS: dict[int, tuple[tuple[Any, ...], list[Any]]] = {}


def _window_sets(rounds: tuple[Any, ...]) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Per class of ``rounds`` (round by round) the distinct windows its messages carry
    (:attr:`collectives.traffic.Messages.windows`, ``(lo, hi)`` rows) and each message's
    among them; None where it says none (cached by the description)."""
    def make() -> list[tuple[np.ndarray, np.ndarray] | None]:
        out: list[tuple[np.ndarray, np.ndarray] | None] = []
        for m in (m for r in rounds for m in r.messages):
            if m.windows is None:
                out.append(None)
                continue
            windows, which = np.unique(m.windows, axis=0, return_inverse=True)
            out.append((windows.reshape(-1, 2), which.reshape(-1)))
        return out
    return _cached(_WINDOW_SETS, id(rounds), (rounds,), make)


_WINDOWED: dict[Any, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def _windowed(rounds: tuple[Any, ...], q: int, counts: np.ndarray,
              longest: np.ndarray) -> tuple[Any, ...]:
    """``rounds`` on ``q`` positions with every class that says its messages' windows
    (:attr:`collectives.traffic.Messages.windows`) a class per set of its windows that
    carry alike at ``counts`` (elements of each group's vectors, groups x sizes) in runs
    whose longest is ``longest`` elements (as ``counts``): the same elements and the
    same longest run met at each (:func:`_window_signature`), so that each message is
    priced at its own (:meth:`_Described._runs`) in as many classes as its round's
    windows carry distinct sizes, not one per window (rhd's are ``2 (q - 1)``; a class
    each on 2,048 ranks doubled its price's CPU); cached by the description and the
    sets, ``rounds`` themselves where no class says its windows."""
    sets = _window_sets(rounds)
    if all(s is None for s in sets):
        return rounds
    labels = [None if s is None else _first_come(
        _unique_rows(_window_signature(s[0], q, counts, longest))[1]) for s in sets]
    key = (id(rounds), b"|".join(b"" if k is None else k.tobytes() for k in labels))

    def make() -> tuple[Any, ...]:
        alike = iter(zip(sets, labels))
        return tuple(dataclasses.replace(r, messages=tuple(
            one for m in r.messages for one in _by_window(m, q, *next(alike))))
            for r in rounds)
    return _cached(_WINDOWED, key, (rounds,), make)


def _window_signature(windows: np.ndarray, q: int, counts: np.ndarray,
                      longest: np.ndarray) -> np.ndarray:
    """Per window (``(lo, hi)`` rows of the vector's ``q`` near-equal blocks) its
    elements and the longest run of the buffer it meets (as
    :meth:`_Described._window_runs` reads them) at every one of ``counts`` (elements,
    any shape) whose runs' longest is ``longest`` (as ``counts``): windows x 2
    counts."""
    count, longest = counts.reshape(1, -1), longest.reshape(1, -1)
    lo, width = windows[:, :1], windows[:, 1:] - windows[:, :1]
    size, extra = np.divmod(count, q)
    elements = width * size + np.clip(extra - lo, 0, width)
    start = lo * size + np.minimum(lo, extra)
    weights, runs = _unit_runs(start, elements, count, q, longest)
    return np.hstack([elements, np.where(weights > 0, runs, 0).max(axis=0)])


def _first_come(labels: np.ndarray) -> np.ndarray:
    """``labels`` (ints >= 0) renumbered from 0 as they first come, so that one
    partition is one key at every count that makes it."""
    distinct, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(distinct))
    return rank[inverse.reshape(-1)]


def _by_window(messages: Any, q: int, sets: tuple[np.ndarray, np.ndarray] | None,
               labels: np.ndarray | None) -> tuple[Any, ...]:
    """A class (:class:`collectives.traffic.Messages`) as a class per set of the windows
    it carries (``sets``: its distinct windows and each message's; ``labels``: each
    window's set), each of its first window's elements, its messages said to carry it
    (they carry alike); itself where it says none."""
    if sets is None or labels is None:
        return (messages,)
    windows, which = sets
    of = labels[which]
    order = np.argsort(of, kind="stable")
    bounds = np.searchsorted(of[order], np.arange(int(labels.max()) + 2))
    out = []
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        mine = order[lo:hi]
        first = windows[which[mine[0]]]
        out.append(dataclasses.replace(
            messages, src=messages.src[mine], dst=messages.dst[mine],
            elements=window_part(q, *first.tolist()),
            windows=np.tile(first, (len(mine), 1)),
            rounds=None if messages.rounds is None else messages.rounds[mine]))
    return tuple(out)
