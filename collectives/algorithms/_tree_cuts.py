"""How a tree AllGather's messages are cut at counts that are not multiples of ``2 q S``.

The double binary tree's AllGather (:mod:`collectives.algorithms.tree`) describes its
streams as runs of segments that carry the same share of each segment, and apart the
segments at the edges of a subtree's part, into which rounding may spill.  At counts that
are multiples of ``2 q S`` (``q`` positions, ``S`` segments per half) a message carries its
share of the vector and the spill nothing; at the others it carries what the ranks'
steps cut of its segment: up, what of it the subtree's blocks hold, down, the rest.  This
module turns the tree's runs into the classes the analytic model prices, as exactly as
the messages' number allows: up to :data:`EXACT_MESSAGES` each message exactly
(:func:`each_message`; where every rank is played, past them too while the messages
times the counts that class them times the channels' square are at most
:data:`EXACT_CELLS`, on a machine of alike links: :func:`played_exactly`; else, played on
a machine of unlike links, each message in its own round, a class per share, within
:data:`CARRIED_CELLS`: :func:`each_carrying`; on a machine of alike links, played, each
piece the ranks' steps send a row of its own size and start, within
:data:`PIECE_MESSAGES`: :func:`each_piece`), up to :data:`CUT_MESSAGES`
at the parts' edges each class the most its messages cut (:func:`most_cut`), past that
closed forms (:func:`by_share`).
Past :data:`EXACT_MESSAGES`, up to :data:`MASK_MESSAGES` at the parts' edges, each of
those also says at which counts it carries anything (:meth:`_Cuts.carried`), so that
the model leaves out the empty ones of a class that carries something, as the ranks'
steps do, without a class more (a class costs the model a column of its links'
profiles; a message that says so, a row of its own).  Where each message is exact the
spill also holds the segments further from a part's edge that rounding spills into
where segments are a few elements (:func:`spilled_far`).

It knows the trees only through what the tree module hands it: per edge (of
:func:`~collectives.algorithms.tree.tree_edges`, tree 0's then tree 1's) the runs of
blocks the child's subtree holds, which rank's block each position holds (a channel's
order: where the larger of unequal blocks lie), and streams numbered up then down per
edge.  It is a
helper of that one algorithm, not an algorithm of its own (not in
:data:`collectives.algorithms.MODULES`).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

__all__ = ["EXACT_MESSAGES", "EXACT_CELLS", "CARRIED_CELLS", "CUT_MESSAGES",
           "MASK_MESSAGES", "CUT_CHUNK", "TINY_COUNT", "Blocks", "Carried", "Classes",
           "Pieced", "classing_counts", "played_exactly", "carried_each", "each_message",
           "each_carrying", "each_piece", "PIECE_MESSAGES",
           "most_cut", "by_share",
           "spilled_far"]

#: AllGather's messages (a stream's segment each) up to which each carries what the
#: ranks' steps cut of its segment (exact at any count), in a class with those that
#: carry as much at every count: the model's cost grows with its classes.  384 takes in
#: ``default_flat(p)`` to 17 ranks at 8 segments (339 messages; at 200, 176 of the 664
#: cases of 11 to 17 ranks were up to +7.7%) and leaves out ``dgx_h100(16)``'s trees
#: over nodes at one segment (508 messages in 485 classes: the three tables +22%)
EXACT_MESSAGES = 384
#: on a machine of alike links (flat), where every rank's messages are played, past
#: :data:`EXACT_MESSAGES` each message exactly all the same while its messages times the
#: counts that class them (:func:`classing_counts`) times the square of the channels
#: played are at most so many (a class per group of channels is a column of the links'
#: profiles of every channel's messages): charged the most of a class,
#: ``default_flat(20)`` at 16 segments was +5.3% at 23 elements (segments of one element,
#: whose edges rounding moves by several segments, so that the runs' whole segments are
#: not) and most flat cases of 5 to 64 ranks past 384 messages up to +0.3% (each
#: message's runs and where they start).  A price at 12 sizes of ``default_flat(20)`` at
#: 16 segments (726 messages, 7.2e5 cells) takes 0.10 -> 0.33 CPU s, at 8 over two
#: channels 0.17 -> 0.60 s; the AllGather table on ``default_flat(64)`` 0.87 -> 1.10 s
#: and 90 -> 128 MB (its trees at 2-4 segments exact).  Twice as many took that table to
#: 1.79 s and 272 MB (64 ranks at 6 and 8 segments), and the channels counted once a
#: price of 64 ranks at 4 segments over 4 channels 0.56 -> 2.7 s and 185 -> 675 MB
EXACT_CELLS = 1 << 20
#: on a machine of unlike links, where every rank is played (:func:`played_exactly`
#: is not taken there), the most messages times the counts :func:`spilled_far` reads them at
#: (``S (q + S + 8) / 2``) up to which :func:`each_carrying` describes them:
#: ``dgx_h100(8)`` at 16 segments is 1.6e6; hier's inner tree over 4 nodes' rails at 512
#: segments (4.1e8) took the AllGather table there 1.4 -> 25 CPU s and 6.6 GB
CARRIED_CELLS = 1 << 21
#: on a machine of alike links (flat), where every rank's messages are played past
#: :func:`played_exactly`, the most messages times the channels played up to which
#: :func:`each_piece` describes each piece of each a row of its own (twice the play's
#: budget of messages, :data:`simulator.analytic.PLAY_MESSAGES`, which every rank
#: played on flat, up to 64 ranks, is not held to: 64 ranks over 8 channels at 16
#: segments are 18,352, charged the most of a class past it, +5.5e-4).  The play's fill
#: then carries each piece's transfers per run, in rounds of up to
#: :data:`simulator.analytic.budgets.PIECE_FILL` pieces: a price of
#: ``default_flat(31)`` at 16 segments over 2 channels, 14 sizes, 0.47 -> 1.6 CPU s, of
#: 48 ranks over 8 channels 3.5 -> 22 s, of 64 ranks over 8 channels 2.7 -> 10.4 s (368
#: -> 515 MB); the AllGather table on ``default_flat(64)`` about 1.4 -> 1.7 s and 127
#: -> 137 MB (its one channel within the old budget)
PIECE_MESSAGES = 1 << 15
#: past :data:`EXACT_MESSAGES`, the most messages at the edges of subtrees' parts (a
#: segment a part meets in part, or one that rounding may spill into) whose cuts a class
#: of them is charged the most of; past it, a class's share of the vector rounded up and
#: the spill ``q + S`` elements, at a cost that does not grow with the messages (the
#: cuts of 16,384 cost the tables at 2,048 nodes 0.6 -> 1.4 CPU s)
CUT_MESSAGES = 1 << 12
#: past :data:`CUT_MESSAGES`, the most messages at the edges of subtrees' parts that
#: say at which counts each carries anything (:meth:`_Cuts.carried`), though charged
#: the closed forms: each message a row of its own in the model.  5,120 takes in
#: ``dgx_h100(100)`` at 16 segments (4,200: 388 B was +5.3%, charged as sent) and
#: leaves out hier's inner tree over 2,048 nodes' rails (6,142 at one segment: at
#: 8,192 the three tables there took 0.85 -> 0.97 CPU s)
MASK_MESSAGES = 5 << 10


#: per edge (of :func:`~collectives.algorithms.tree.tree_edges`, in its order), the first
#: and last blocks of each run of the child's subtree, padded with empty runs (last <
#: first): two ``(edges, runs)`` arrays; and per position the rank whose block it holds
#: (a channel's order, :func:`collectives.compose.channel_parts`), whose number says
#: whether the block is one of the larger (the first ``count % q`` ranks'), or None:
#: position ``v`` holds rank ``v``'s
Blocks = tuple[np.ndarray, np.ndarray, np.ndarray | None]
#: per message of a class its kind, and whether a message of each kind carries anything
#: at each count (:attr:`collectives.traffic.Messages.kinds`, ``carries``)
Carried = tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]
#: a description's paced rounds, each its classes: streams, first and end segments,
#: elements of the class's largest message, the element its messages start at in
#: the vector, where they are one a stream in one round and all start there (else
#: None), and which of its messages carry something at which counts (None: all that
#: the elements say)
#: per message of a class its row (its own kind), and element counts of the vector ->
#: each row's elements and the element it starts at in the vector (each rows x counts;
#: :attr:`collectives.traffic.Messages.sizes`)
Pieced = tuple[np.ndarray, Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]]
Classes = list[tuple[np.ndarray, np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray],
                     Callable[[np.ndarray], np.ndarray] | None, Carried | None]]


def each_message(q: int, segment: Callable[[np.ndarray], np.ndarray], segments: int,
                 blocks: Blocks, runs: tuple[np.ndarray, ...],
                 spill: tuple[np.ndarray, np.ndarray]) -> list[Classes]:
    """Every message (a segment of a run, and each segment at an edge) carrying what the
    ranks' steps cut of its segment (exact at every count), in a class with those that
    carry as much at every count (:func:`_alike`).

    Parameters
    ----------
    q : int
        Positions.
    segment : callable
        Element counts of the vector (array) -> elements of a segment.
    segments : int
        Segments per half of the vector (``S``).
    blocks : Blocks
        The runs of blocks each edge's subtree holds.
    runs : tuple of numpy.ndarray
        The runs of :func:`~collectives.algorithms.tree._gathered_runs`: per run its first
        and end segment, its stream and its share of each segment, in ``1 / (2 q S)`` of
        the vector.
    spill : tuple of numpy.ndarray
        The segments at the edges of subtrees' parts and their streams.

    Returns
    -------
    list of Classes
        Two paced rounds: the runs' classes, and apart the spill's.
    """
    first, end, stream, share = runs
    edge, spilled = spill
    lengths = end - first
    cuts, stream, first = _segment_cuts(q, segments, blocks, runs, spill)
    alike, carried = cuts.settled()
    shares = np.repeat(share, lengths)
    sent = [cls for _, g in _grouped(alike[:len(stream)])
            for cls in _transfers(cuts, carried, g, stream[g], first[g],
                                  _share_of(segment, q * segments, int(shares[g[0]])))]
    apart = [cls for _, g in _grouped(alike[len(stream):])
             for cls in _transfers(cuts, carried, len(stream) + g, spilled[g], edge[g],
                                   _spill_of(segment, q, segments))]
    return [sent, apart]


def each_carrying(q: int, segment: Callable[[np.ndarray], np.ndarray], segments: int,
                  blocks: Blocks, runs: tuple[np.ndarray, ...],
                  spill: tuple[np.ndarray, np.ndarray]) -> list[Classes]:
    """Every message (a segment of a run, and each segment at an edge and further out)
    in its own round, a class per share of a segment (the spilled messages' none)
    charged the most the steps cut of its messages, each message a row that says at
    which counts it carries anything (:meth:`_Cuts.carried`): where rounding moves a
    part's edges by several segments (a segment of one or two elements), the messages
    that carry something are not the runs' but those the ranks' steps cut, in their
    own rounds, at far less than :func:`each_message`'s cost (a class per share, not per
    message).  ``dgx_h100(8)`` at 16 segments: 3 classes of 2,783 messages (at 49
    elements 1,333 carry something, half one element and half two); :func:`most_cut`
    there was +8.6% (messages in rounds several off the steps', and subtrees' runs that
    carry nothing), this +2.2e-4, and :func:`each_message` exact but in 1,780 classes
    (a price 1.1 CPU s).

    Its parameters and what it returns are those of :func:`each_message` (``spill``
    with the messages further out, :func:`spilled_far`), but its one paced round.
    """
    first, end, _, share = runs
    edge, spilled = spill
    cuts, streams, at = _segment_cuts(q, segments, blocks, runs, spill)
    shares = np.concatenate([np.repeat(share, end - first), np.zeros(len(spilled), np.int64)])
    streams, at = np.concatenate([streams, spilled]), np.concatenate([at, edge])
    carries = cuts.carried(shares)
    spilled_elements = _spill_of(segment, q, segments)
    return [[(streams[g], at[g], at[g] + 1,
              cuts.most(g, _share_of(segment, q * segments, k) if k else spilled_elements),
              None, (g, carries)) for k, g in _grouped(shares)]]


def each_piece(q: int, segments: int, blocks: Blocks, runs: tuple[np.ndarray, ...],
               spill: tuple[np.ndarray, np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, Pieced]:
    """Every piece the ranks' steps send of every message (a stream's segment: of the
    runs, at the edges and further out), each a row of its own with its own elements
    and where it starts in the vector at every count (:meth:`_Cuts.pieced`): up what of
    the segment each of the subtree's runs holds, down the segment's run before each of
    them and after the last, each a transfer of its own in the simulator.  Where each
    message is charged the most of a class (:func:`most_cut`), or cut runs of the buffer
    from its class's start, a round's ports were shared unlike the steps'
    (``default_flat(31)``, 2 channels, 16 segments, 65,537 elements: -6.6e-3); a row
    per piece costs the model a row and a message of the play each, not a class (a
    column of the links' profiles each, as :func:`each_message`'s).  Leaves out the
    pieces that carry nothing at any count: those of a padded run, and of tree 1's run
    of position 0 alone where it wraps (its block lies before tree 1's half).

    Its parameters are those of :func:`each_message` (``spill`` with the messages
    further out, :func:`spilled_far`).

    Returns
    -------
    tuple
        Per piece its stream and its segment, and its :data:`Pieced`.
    """
    cuts, streams, at = _segment_cuts(q, segments, blocks, runs, spill)
    streams, at = np.concatenate([streams, spill[1]]), np.concatenate([at, spill[0]])
    first, last = blocks[0], blocks[1]
    edges, width = first.shape
    edge = streams % edges
    wraps = (edge >= edges // 2)[:, None] & (first[edge] == 0) & (last[edge] == 0)
    held = (last[edge] >= first[edge]).sum(axis=1)[:, None]  # the padded runs come last
    column = np.arange(width + 1)[None, :]
    # up a piece per run of the subtree; down one before each and one after the last
    # (the gap before the first padded run)
    kept = ((column < held) & ~np.pad(wraps, ((0, 0), (0, 1)))) \
        | ((column == held) & (streams >= edges)[:, None])
    message, piece = np.nonzero(kept)
    return streams[message], at[message], (np.arange(len(message)),
                                           cuts.pieced(message, piece))


def classing_counts(q: int, segments: int) -> int:
    """How many counts, from 1, :func:`each_message` classes messages at (those of
    :meth:`_Cuts.settled`): ``2 S + P + 2 L``, ``P = 2 q S``, ``L = lcm(q, 2 S)``."""
    return 2 * segments + 2 * q * segments + 2 * math.lcm(q, 2 * segments)


def played_exactly(q: int, segments: int, messages: int, played: int, unlike: bool) -> bool:
    """Whether ``messages`` past :data:`EXACT_MESSAGES` are each described exactly
    (:func:`each_message`) where every rank's messages are played over ``played``
    channels (0: not played): while the messages times :func:`classing_counts` times
    the channels' square are at most :data:`EXACT_CELLS`, on a machine of alike links
    only (not ``unlike``): on one of unlike links (DGX) :func:`each_carrying` describes
    them within 1e-3 of the simulator (it once took 7 to 10 segments there, at which
    each message exactly was within 1e-3 of it, at a higher cost)."""
    return not unlike and 0 < messages * classing_counts(q, segments) * played ** 2 <= EXACT_CELLS


def carried_each(q: int, segments: int, messages: int) -> bool:
    """Whether ``messages`` on a machine of unlike links, every rank played, are each
    described in its own round (:func:`each_carrying`): while they times the counts
    :func:`spilled_far` reads them at are at most :data:`CARRIED_CELLS`."""
    return messages * (segments * (q + segments + 8) // 2) <= CARRIED_CELLS


def spilled_far(q: int, segments: int, blocks: Blocks, runs: tuple[np.ndarray, ...],
                spill: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``spill`` and after it every other message (a stream's segment) that the runs do
    not hold and that the ranks' steps cut something at a count from ``2 S`` on (one,
    with one segment).  Rounding moves a part's edge, in elements, by at most ``q / 4``
    (a block's) and a segment's by at most ``S / 4 + 1``, so where a segment is smaller
    than ``q / 4 + S / 4 + 2`` elements a subtree's blocks may spill into segments
    further from its part than the one on each side that ``spill`` holds
    (``default_flat(11)``, 8 segments, 16 elements: rank 3 sends rank 5 rank 4's block
    ``[8, 10)``, segments 0 and 1 of the second half; the model was under by 1.3e-5);
    past ``S (q + S + 8) / 2`` elements no edge moves by a segment, and ``spill``
    holds every message the runs do not that carries anything.

    Parameters
    ----------
    q, segments, blocks, runs, spill
        As in :func:`each_message`.

    Returns
    -------
    tuple of numpy.ndarray
        The segments and streams of ``spill``'s messages, then of the others.
    """
    first, end, stream, _ = runs
    edge, spilled = spill
    held = np.zeros((2 * len(blocks[0]), segments), dtype=bool)
    streams, at = _segments_of(stream, first, end)
    held[streams, at] = True
    held[spilled, edge] = True
    others, other_at = np.nonzero(~held)
    counts = np.arange(1 if segments == 1 else 2 * segments,
                       segments * (q + segments + 8) // 2 + 2)
    cut = _Cuts(q, segments, blocks, others, other_at)._table(counts).any(axis=1)
    return np.concatenate([edge, other_at[cut]]), np.concatenate([spilled, others[cut]])


def _transfers(cuts: "_Cuts", carried: np.ndarray, rows: np.ndarray, streams: np.ndarray,
               at: np.ndarray, closed: Callable[[np.ndarray], np.ndarray]) -> Classes:
    """Alike messages ``rows`` (of ``cuts``; ``streams[i]``'s segment ``at[i]``; which
    runs each may carry something of, ``carried``, from :meth:`_Cuts.settled`) as
    classes: one, charged the most of theirs, where each is one run of the buffer; else a
    class per run the message may carry something of (up each of the subtree's runs it
    meets, down the segment's run before each and after the last), each charged its
    run's elements, as the ranks' steps send them: a transfer per run, which the
    simulator shares apart (``default_flat(13)``, 3 segments, 78 elements: 2 -> 1's 28
    bytes go as 4 and 24; as one, the model was under by 1.3e-5); each with where its
    run starts (:meth:`_Cuts.start`)."""
    ever = np.flatnonzero(carried[rows[0]])
    if len(ever) <= 1:
        return [(streams, at, at + 1, cuts.most(rows[:1], closed),
                 cuts.start(int(rows[0]), int(ever[0]) if len(ever) else 0), None)]
    return [(streams, at, at + 1, cuts.run(rows[0], j), cuts.start(int(rows[0]), j), None)
            for j in ever.tolist()]


def _alike(pieces: np.ndarray, starts: np.ndarray, before: np.ndarray) -> np.ndarray:
    """A number per message, the same for messages of the same number ``before`` that
    carry as much of each run of the buffer from the same element at every count: at
    each of the counts of ``pieces`` and ``starts`` (:meth:`_Cuts.settled`).  Classed
    by what each carries rather than by how its subtree's edges meet its segment,
    messages whose edges differ but cut alike share a class (``default_flat(16)``, 8
    segments: 195 classes -> 102; every class costs the model a column of its links'
    profiles); by where too, since a channel's vector lies in runs apart in the buffer,
    which cut a message where it meets them (:attr:`collectives.traffic.Messages.cut_at`)."""
    flat = np.ascontiguousarray(np.concatenate(
        [before[:, None], np.concatenate([pieces, np.where(pieces > 0, starts, -1)],
                                         axis=1).reshape(len(pieces), -1)], axis=1))
    # each row as one opaque value: far cheaper to sort than rows compared column by
    # column (np.unique's axis=0), and the classes come the same in any order
    rows = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).reshape(-1)
    return np.unique(rows, return_inverse=True)[1].reshape(-1)


def most_cut(q: int, segment: Callable[[np.ndarray], np.ndarray], segments: int,
             blocks: Blocks, start: np.ndarray, runs: tuple[np.ndarray, ...],
             spill: tuple[np.ndarray, np.ndarray]) -> list[Classes]:
    """A class per share of a segment, whole segments charged the largest, the others
    (single segments at a part's edge) the most the ranks' steps cut of theirs; and the
    spill one class, charged the most its messages carry, but a class per round for
    those in rounds before or after every run's (where a message that carries nothing
    would add a round of its own).  Below :data:`TINY_COUNT` elements each class is
    split by the counts at which its messages are empty (:func:`_by_emptiness`), each
    charged the most the steps cut of its messages there.  At every count each message
    at a part's edge says whether it carries anything (:meth:`_Cuts.carried`): at 17 to
    1,025 elements most blocks hold at most one element and most of those messages
    carry nothing, left out by the ranks' steps (``dgx_h100(65)``, 4 segments, 388 B:
    +12.2% charged as sent; ``dgx_h100(3)``, 16 segments, 4,100 B: +10.2%).

    Parameters
    ----------
    q, segment, segments, blocks
        As in :func:`each_message`.
    start : numpy.ndarray
        Per stream, the round of its segment 0.
    runs, spill
        As in :func:`each_message`.

    Returns
    -------
    list of Classes
        As :func:`each_message`'s.
    """
    first, end, stream, share = runs
    edge, spilled = spill
    empty = _by_emptiness(q, segments, blocks, runs, spill)
    parts = q * segments
    cuts, row, spill_row, carries = _at_edges(q, segments, blocks, runs, spill)
    sent: Classes = [(stream[g], first[g], end[g],
                      empty.below(g, _share_of(segment, parts, q) if k == q
                                  else cuts.most(row[g], _share_of(segment, parts, k))), None,
                      (row[g], carries))
                     for g in empty.grouped(share) for k in [int(share[g[0]])]]
    round_ = start[spilled] + edge
    alone = (round_ < (start[stream] + first).min()) | (round_ >= (start[stream] + end).max())
    at = np.where(alone, round_, round_.min(initial=0) - 1)
    apart: Classes = [(spilled[g], edge[g], edge[g] + 1,
                       empty.below(len(share) + g,
                                   cuts.most(spill_row[g], _spill_of(segment, q, segments))),
                       None, (spill_row[g], carries))
                      for g in empty.grouped(at, len(share))]
    return [sent, apart]


#: counts below which :func:`most_cut` classes its messages by the counts at which each
#: is empty: there most ranks' blocks are, and a message that carries nothing in the
#: simulator (its step skipped) was priced as sent with its class's largest
#: (``dgx_h100(16)``, one segment, 4 bytes: +51%; ``dgx_h100(65)`` +48.5%); classes grow
#: with it (below 129 the three tables on 256 nodes took 6.7 -> 9.2 CPU s, below 1025
#: 64 s)
TINY_COUNT = 17


class _Emptiness:
    """Which of some runs' messages (and spilled messages after them) are empty at each
    count below :data:`TINY_COUNT` (:func:`_by_emptiness`): a class key per run, and
    classes' elements there the most the steps cut of their messages."""

    def __init__(self, cuts: "_Cuts | None", pattern: np.ndarray,
                 members: list[np.ndarray]) -> None:
        self.cuts, self.pattern, self.members = cuts, pattern, members

    def grouped(self, key: np.ndarray, offset: int = 0) -> list[np.ndarray]:
        """The runs from ``offset`` (as :func:`_grouped`, their indices from ``offset``)
        of equal ``key`` and emptiness."""
        if self.cuts is None:
            return [g for _, g in _grouped(key)]
        pattern = self.pattern[offset:offset + len(key)]
        low = key.min(initial=0)
        return [g for _, g in _grouped((key - low) * (int(self.pattern.max()) + 1) + pattern)]

    def below(self, runs: np.ndarray, closed: Callable[[np.ndarray], np.ndarray]
              ) -> Callable[[np.ndarray], np.ndarray]:
        """``closed`` from :data:`TINY_COUNT` on, below it the most the steps cut of
        the messages of ``runs``."""
        if self.cuts is None:
            return closed
        rows, cuts = np.concatenate([self.members[i] for i in runs.tolist()]), self.cuts

        def elements(count: np.ndarray) -> np.ndarray:
            out = np.array(np.broadcast_to(closed(count), count.shape), dtype=np.int64)
            tiny = count < TINY_COUNT
            if tiny.any():
                out[tiny] = cuts._table(count[tiny])[rows].max(axis=0)
            return out
        return elements


def _by_emptiness(q: int, segments: int, blocks: Blocks, runs: tuple[np.ndarray, ...],
                  spill: tuple[np.ndarray, np.ndarray]) -> _Emptiness:
    """The runs' and spilled messages' emptiness at the counts below :data:`TINY_COUNT`
    (a run is empty where each of its messages is), from ``2 S`` elements on: a
    description of ``S`` segments is priced only there (:func:`resolve_params
    <collectives.algorithms.tree.resolve_params>` lowers the segments below), so none
    is told apart where that is :data:`TINY_COUNT` or more; nor past
    :data:`CUT_MESSAGES` runs and spilled messages (hier's inner tree over 1,024 nodes'
    rails: 7,162), whose classes split so took the three tables on ``dgx_h100(1024)``
    1.95 -> 2.82 CPU s and 246 -> 445 MB (capped, 2.28 s and 323 MB; 128 nodes 508 ->
    407 MB, its trees at 4 B still exact)."""
    first, end, stream, _ = runs
    edge, spilled = spill
    counts = np.arange(1 if segments == 1 else 2 * segments, TINY_COUNT)
    if not len(counts) or len(first) + len(spilled) > CUT_MESSAGES:
        return _Emptiness(None, np.zeros(0, np.int64), [])
    cuts, streams, _ = _segment_cuts(q, segments, blocks, runs, spill)
    carries = cuts._table(counts) > 0
    begin = np.cumsum(end - first) - (end - first)
    ran = np.logical_or.reduceat(carries[:len(streams)], begin, axis=0) if len(begin) \
        else carries[:0]
    pattern = np.unique(np.concatenate([ran, carries[len(streams):]]), axis=0,
                        return_inverse=True)[1].reshape(-1)
    members = [np.arange(a, b) for a, b in zip(begin.tolist(), (begin + end - first).tolist())]
    members += [np.array([len(streams) + i]) for i in range(len(spilled))]
    return _Emptiness(cuts, pattern, members)


def _at_edges(q: int, segments: int, blocks: Blocks, runs: tuple[np.ndarray, ...],
              spill: tuple[np.ndarray, np.ndarray]
              ) -> tuple["_Cuts", np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """The cuts of the messages at the parts' edges (each stream's partial runs', then
    the spill's), each run's row among them (a whole run's: the row after them, whose
    kind carries something at every count, never empty where a description is priced:
    from ``2 S`` elements on), each spilled message's, and which carry anything at each
    count (:meth:`_Cuts.carried`)."""
    first, _, stream, share = runs
    edge, spilled = spill
    partial = np.flatnonzero(share < q)
    cuts = _Cuts(q, segments, blocks, np.concatenate([stream[partial], spilled]),
                 np.concatenate([first[partial], edge]))
    row = np.full(len(share), len(partial) + len(spilled))
    row[partial] = np.arange(len(partial))
    carries = cuts.carried(np.concatenate([share[partial], np.zeros(len(spilled), np.int64)]))
    return cuts, row, len(partial) + np.arange(len(spilled)), carries


def by_share(q: int, segment: Callable[[np.ndarray], np.ndarray], segments: int,
             blocks: Blocks | None, runs: tuple[np.ndarray, ...],
             spill: tuple[np.ndarray, np.ndarray]) -> list[Classes]:
    """A class per share of a segment, each charged the share rounded up, and the spill
    one class, charged ``q + S`` elements (:func:`_spill_of`): closed forms, whatever the
    messages; where ``blocks`` are given, each message at a part's edge says at which
    counts it carries anything (:meth:`_Cuts.carried`).

    Its parameters (``blocks`` may be None) and what it returns are those of
    :func:`each_message`.
    """
    first, end, stream, share = runs
    edge, spilled = spill
    edges = None if blocks is None else _at_edges(q, segments, blocks, runs, spill)
    sent: Classes = [(stream[g], first[g], end[g], _share_of(segment, q * segments, k), None,
                      None if edges is None else (edges[1][g], edges[3]))
                     for k, g in _grouped(share)]
    apart: Classes = [(spilled, edge, edge + 1, _spill_of(segment, q, segments), None,
                       None if edges is None else (edges[2], edges[3]))]
    return [sent, apart if len(spilled) else []]


def _grouped(key: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The values of ``key``, in order, each with its indices (in order)."""
    if not len(key):
        return []
    # the keys less their least in the smallest unsigned type that holds them: sorted as
    # the keys, by a radix sort where that type has at most 16 bits
    low = key.min()
    order = np.argsort((key - low).astype(np.min_scalar_type(key.max() - low)), kind="stable")
    ordered = key.take(order)
    at = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    return list(zip(ordered.take(np.concatenate([[0], at])).tolist(), np.split(order, at)))


def _segment_cuts(q: int, segments: int, blocks: Blocks, runs: tuple[np.ndarray, ...],
                  spill: tuple[np.ndarray, np.ndarray]
                  ) -> tuple["_Cuts", np.ndarray, np.ndarray]:
    """:class:`_Cuts` of every segment of the runs (:func:`_segments_of`), then of the
    spilled messages; with the segments' streams and their segments."""
    first, end, stream, _ = runs
    edge, spilled = spill
    streams, at = _segments_of(stream, first, end)
    return _Cuts(q, segments, blocks, np.concatenate([streams, spilled]),
                 np.concatenate([at, edge])), streams, at


def _segments_of(stream: np.ndarray, first: np.ndarray,
                 end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each segment ``first .. end`` of each run, with the run's stream."""
    lengths = end - first
    return np.repeat(stream, lengths), \
        np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths - first, lengths)


def _share_of(segment: Callable[[np.ndarray], np.ndarray], parts: int,
              share: int) -> Callable[[np.ndarray], np.ndarray]:
    """Elements of a message that carries at most ``share`` of the vector's ``2 parts``
    (rounded up), and at most a ``segment``."""
    def elements(count: np.ndarray) -> np.ndarray:
        return np.minimum(segment(count), -(-count * share // (2 * parts)))
    return elements


def _spill_of(segment: Callable[[np.ndarray], np.ndarray], q: int,
              segments: int) -> Callable[[np.ndarray], np.ndarray]:
    """Elements that rounding spills across the edge of a segment: none where the count
    is a multiple of ``2 q segments``, else at most ``q + segments`` (a block's edge is
    off its share by at most ``q / 4``, a segment's by at most ``segments / 4`` and
    one), and at most a ``segment``."""
    def elements(count: np.ndarray) -> np.ndarray:
        return np.where(count % (2 * q * segments) == 0, 0,
                        np.minimum(segment(count), q + segments))
    return elements


#: the most elements (messages x counts x a subtree's runs) :class:`_Cuts` works on at once
CUT_CHUNK = 1 << 18
#: the most counts arrays :class:`_Cuts` keeps its figures at (the model asks at one a
#: group of channels, class by class: kept at one, each class computed them again)
KEPT_COUNTS = 8


class _Cuts:
    """What the ranks' steps cut (:func:`~collectives.algorithms.tree._tree_lanes`) of the
    segment each of some AllGather messages carries, at the counts that are not multiples
    of ``2 q S`` (at the others a message carries its share of the vector): up what of the
    segment the subtree's blocks hold, down the rest; computed once for all the messages
    at a counts array, kept for each of the last :data:`KEPT_COUNTS` (the model asks every
    class at the counts of each group of channels, the classes in turn)."""

    def __init__(self, q: int, segments: int, blocks: Blocks, streams: np.ndarray,
                 at: np.ndarray) -> None:
        first, last, self.holders = blocks
        edges = len(first)
        edge = streams % edges
        self.q, self.segments, self.at = q, segments, at[:, None]
        self.tree = (edge >= edges // 2).astype(np.int64)[:, None]
        self.down = (streams >= edges)[:, None]
        self.first, self.last = first[edge], last[edge]
        self.held: dict[bytes, np.ndarray] = {}
        self.runs: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def most(self, rows: np.ndarray, closed: Callable[[np.ndarray], np.ndarray]
             ) -> Callable[[np.ndarray], np.ndarray]:
        """Elements of the largest message of ``rows``: ``closed`` where the count is a
        multiple of ``2 q S``, else the most the steps cut of theirs."""
        def elements(count: np.ndarray) -> np.ndarray:
            out = closed(count)
            uneven = count % (2 * self.q * self.segments) != 0
            if uneven.any():
                out = np.array(out, dtype=np.int64)
                out[uneven] = self._table(count[uneven])[rows].max(axis=0)
            return out
        return elements

    def carried(self, share: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """Whether each message carries anything at each count (messages x counts), and
        a row after them that carries something at every count: where the count is a
        multiple of ``2 q S`` where its ``share`` (in ``1 / (2 q S)`` of the vector) is
        more than none, else where the steps cut it something."""
        def carries(count: np.ndarray) -> np.ndarray:
            out = np.ones((len(share) + 1, len(count)), dtype=bool)
            out[:-1] = (share > 0)[:, None]
            uneven = count % (2 * self.q * self.segments) != 0
            if uneven.any():
                out[:-1, uneven] = self._table(count[uneven]) > 0
            return out
        return carries

    def settled(self) -> tuple[np.ndarray, np.ndarray]:
        """Per message a number, the same for messages that carry as much of each run of
        the buffer from the same element (:meth:`_spans`, :func:`_alike`) at each of the
        first ``2 S + P + 2 L`` counts (``P = 2 q S``), and which runs each carries
        something of at one of them (messages x runs).  When the
        count grows by ``P`` each edge of a block or segment moves by a whole number of
        elements (its share of it), so from ``2 S + P`` on each edge stays on one side
        of another and a message's runs move and grow by as much every ``L`` counts
        (``L = lcm(q, 2 S)``: a block's edges move by whole elements every ``q`` counts,
        a segment's every ``2 S``; ``P / L = gcd(q, 2 S)`` times fewer counts than a
        period of ``P``): messages that carry as much from as far over the two periods
        of ``L`` past it do so at every count, and one that carries something of a run
        at some count does at one of these.  Taken :data:`CUT_CHUNK` figures at a time,
        each chunk's classes refining the last's (the counts' figures at once took a
        price on ``default_flat(20)`` at 16 segments from 73 to 173 MB)."""
        counts = np.arange(1, classing_counts(self.q, self.segments) + 1)
        runs = self.first.shape[1] + 1
        step = max(1, CUT_CHUNK // (max(len(self.at), 1) * runs))
        alike = np.zeros(len(self.at), dtype=np.int64)
        carried = np.zeros((len(self.at), runs), dtype=bool)
        for i in range(0, len(counts), step):
            starts, pieces = self._spans(slice(None), counts[i:i + step])
            carried |= pieces.any(axis=2)
            alike = _alike(pieces, starts, alike)
        return alike, carried

    def pieced(self, rows: np.ndarray, pieces: np.ndarray
               ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """Elements of run ``pieces[i]`` of message ``rows[i]`` (:meth:`_pieces`) and
        where each starts in the vector, at any count (each pieces x counts)."""
        def figures(count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            key = count.tobytes()
            if key not in self.runs:  # kept for the model's next call at the same counts
                self.runs = _remembered(self.runs, key, self._spans(slice(None), count))
            start, elements = self.runs[key]
            return elements[rows, pieces], start[rows, pieces]
        return figures

    def run(self, row: int, piece: int) -> Callable[[np.ndarray], np.ndarray]:
        """Elements of run ``piece`` of message ``row`` (:meth:`_pieces`) at any count."""
        return self._spanned(row, piece, 1)

    def start(self, row: int, piece: int) -> Callable[[np.ndarray], np.ndarray]:
        """Where run ``piece`` of message ``row`` (:meth:`_pieces`) starts in the vector,
        at any count."""
        return self._spanned(row, piece, 0)

    def _spanned(self, row: int, piece: int, which: int) -> Callable[[np.ndarray], np.ndarray]:
        """Figure ``which`` of :meth:`_spans` of run ``piece`` of message ``row``."""
        def figure(count: np.ndarray) -> np.ndarray:
            key = count.tobytes()
            if key not in self.runs:  # every message's, kept for the next class's call
                self.runs = _remembered(self.runs, key, self._spans(slice(None), count))
            return self.runs[key][which][row, piece]
        return figure

    def _pieces(self, rows: Any, count: np.ndarray) -> np.ndarray:
        """Elements of each run of the buffer the messages ``rows`` carry at ``count``
        (messages x runs x counts, a subtree's runs and one more): up, what of the
        segment each of the subtree's runs holds (the last nothing); down, the
        segment's run before each of the subtree's runs, and after the last."""
        return self._spans(rows, count)[1]

    def _spans(self, rows: Any, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each of :meth:`_pieces` starts in the vector, and its elements (each
        messages x runs x counts)."""
        start, stop = self._segment(rows, count)
        lo, hi = self._held(rows, count)
        start, stop = start[:, None], stop[:, None]
        inside = np.maximum(0, np.minimum(stop, hi) - np.maximum(start, lo))
        gap_from = np.concatenate([start, hi], axis=1)
        gap_to = np.concatenate([lo, stop], axis=1)
        gaps = np.maximum(0, np.minimum(stop, gap_to) - np.maximum(start, gap_from))
        up = np.concatenate([inside, np.zeros_like(start)], axis=1)
        down = self.down[rows][:, :, None]
        return (np.maximum(start, np.where(down, gap_from, np.concatenate([lo, start], axis=1))),
                np.where(down, gaps, up))

    def _held(self, rows: Any, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first and end elements of each run of the subtree's part the messages
        ``rows`` meet at ``count`` (messages x runs x counts; a padded run past every
        segment)."""
        never = np.iinfo(np.int64).max
        held_from, held_to = [], []
        for a, b in zip(self.first[rows].T, self.last[rows].T):
            padded = (b < a)[:, None]
            held_from.append(np.where(padded, never, self._block_start(count, a)))
            held_to.append(np.where(padded, never, self._block_start(count, b + 1)))
        return np.stack(held_from, axis=1), np.stack(held_to, axis=1)

    def _block_start(self, count: np.ndarray, position: np.ndarray) -> np.ndarray:
        """Where the block of each of ``position`` starts at each ``count`` (positions x
        counts): after ``position`` blocks, and as many elements more as of those the
        larger ones (held by the first ``count % q`` ranks): all up to that number where
        each position holds its own rank's, else counted per distinct ``count % q`` over
        the holders (a row of ``q`` each, not a pair of positions)."""
        if self.holders is None:
            return _near_equal(0, count[None, :], self.q, position[:, None])[0]
        size, extra = np.divmod(count, self.q)
        distinct, which = np.unique(extra, return_inverse=True)
        larger = np.zeros((len(distinct), self.q + 1), dtype=np.int64)
        np.cumsum(self.holders[None, :] < distinct[:, None], axis=1, out=larger[:, 1:])
        return position[:, None] * size[None, :] + larger[which.reshape(-1)[None, :],
                                                          position[:, None]]

    def _segment(self, rows: Any, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first and end elements of the segment of the messages ``rows`` at
        ``count`` (messages x counts)."""
        tree, at = self.tree[rows], self.at[rows]
        lo, hi = _near_equal(0, count[None, :], 2, tree)
        parts = np.minimum(self.segments, hi - lo)
        start, stop = _near_equal(lo, hi, np.maximum(parts, 1), at)
        return start, np.where(at < parts, stop, start)

    def _table(self, count: np.ndarray) -> np.ndarray:
        """Every message's elements at ``count`` (messages x counts), kept for the
        next class's call at the same counts."""
        key = count.tobytes()
        if key not in self.held:
            step = max(1, CUT_CHUNK // (len(count) * self.first.shape[1]))
            self.held = _remembered(self.held, key, np.concatenate(
                [self._cut(slice(i, i + step), count) for i in range(0, len(self.at), step)]
                or [np.zeros((0, len(count)), np.int64)]))
        return self.held[key]

    def _cut(self, rows: slice, count: np.ndarray) -> np.ndarray:
        """Elements of the messages ``rows`` at ``count``."""
        start, stop = self._segment(rows, count)
        lo, hi = self._held(rows, count)
        inside = np.maximum(0, np.minimum(stop[:, None], hi)
                            - np.maximum(start[:, None], lo)).sum(axis=1)
        return np.where(self.down[rows], stop - start - inside, inside)


def _remembered(table: dict[bytes, Any], key: bytes, value: Any) -> dict[bytes, Any]:
    """``table`` with ``value`` at ``key``, emptied first where it holds
    :data:`KEPT_COUNTS` already."""
    if len(table) >= KEPT_COUNTS:
        table = {}
    table[key] = value
    return table


def _near_equal(start: Any, stop: Any, parts: Any, index: Any) -> tuple[Any, Any]:
    """:func:`~collectives.layout.split` over arrays (of ranges, part counts and parts)."""
    size, extra = np.divmod(stop - start, parts)
    lo = start + index * size + np.minimum(index, extra)
    return lo, lo + size + (index < extra)
