"""What the model plays rank by rank, routes at every rank, stretches or holds:
the budgets (see the package docstring) and the tests on a description's
rounds against them."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from collectives.traffic import Round

from .cache import _cached
from .sample import Orders, SAMPLE_ALL_RANKS, _link_classes, _sampled


#: paced rounds of at most so many messages, in flight in at most so many rounds in all
#: (over every channel), over a stretch of at most so many rounds, are played rank by
#: rank (:func:`_played`)
PLAY_MESSAGES, PLAY_HOPS, PLAY_ROUNDS = 1 << 14, 1 << 17, 1 << 12
#: paced rounds none of which is held (a tree's) of at most so many messages are played
#: within so many rounds in flight in all in place of :data:`PLAY_HOPS`: hier's
#: one-channel inner tree at 1 GiB on ``dgx_h100(48)`` and ``(64)`` (its 8 rails' 1,504
#: to 5,904 messages in flight in 131,472 to 258,048 rounds) was up to -17% as the
#: sample's lock-step stretch, which misses the tree's edges that cross a spine
#: (ReduceScatter under Simple at 48 nodes, AllGather under LL at 64); played, within
#: 3%.  Not 256 nodes' (8,160 messages: the three tables there 4.7 -> 5.1 CPU s, 398
#: -> 498 MB), nor held rounds (the pipeline's chain on 48 and 64 DGX nodes, up to +36%
#: against the DES played so)
UNHELD_PLAY_MESSAGES, UNHELD_PLAY_HOPS = 3 << 11, 1 << 18
#: a play of paced rounds takes several protocols' and descriptions' sizes side by side
#: while a round's messages times their sizes stay at most so many (:meth:`_Flow.played`)
PLAY_SIDE_BY_SIDE = 1 << 14
#: on a machine whose links are all alike (flat), a played round's messages that share
#: links are carried at max-min fair rates over all of them together
#: (:func:`_filled_ends`) where they are at most so many and some shares several, else
#: each link's queue on its own (:func:`_queue_ends`): 3 channels' trees on 16 flat
#: ranks have rounds of 108 (at 32, their AllReduce was under by up to 0.42%), a
#: chain's ReduceScatter over 3 channels on 16 ranks more (at 32, under by 4.5e-3), and
#: 4 channels' tree AllGather on 13 ranks at 8 segments up to 364 (their channels'
#: segments side by side, 8, 7 and 6 at 67 elements: at 256, under by 8.9e-6), and 8
#: channels' trees at 16 segments up to 736 on 24 ranks and 1,504 on 64 (at 512,
#: ReduceScatter on 24 ranks under by up to 1.3%, AllReduce on 31 by 3.9e-5, on 128 at 3
#: channels +2.6e-4; the three closed-form tables on ``flat(64)``, 1.71 -> 1.79 CPU s, that
#: ReduceScatter on ``default_flat(128)`` at 4 sizes 2.7 -> 5.0 s), 2,400 on 128, 4,320 on
#: 256 and 8,352 on 512 (past 2,048 then: their ReduceScatter over by 1.9e-4 on 128 to 512
#: ranks at 4,099 elements, AllReduce on 256 under by 2.1e-7 at 257).  The fill compiled
#: (:mod:`.filling`), those prices over 8 channels take 0.35 -> 0.63 CPU s a size on 256
#: ranks, 1.0 -> 1.7 s on 512 (peak +35 and +115 MB); the flat tables (one channel) are
#: the same bit for bit up to 512 ranks; on 1,024 one channel's trees at 16 segments
#: have rounds of up to 2,060 (AllReduce and ReduceScatter at 48 elements were under by
#: 3e-6: the three tables 8.9 -> 10.0 CPU s, 822 -> 847 MB)
FILL_MESSAGES = 1 << 14
#: a played round of pieces each of its own size and start (a tree AllGather's on flat,
#: :attr:`collectives.traffic.Messages.sizes`, at most
#: :data:`collectives.algorithms._tree_cuts.PIECE_MESSAGES` over every channel) is
#: filled up to so many messages with a shared link (:func:`_fill`): 64 ranks' 8
#: channels at 16 segments have rounds of up to 2,416 (past :data:`FILL_MESSAGES`, each
#: port's queue on its own, under by up to 1.8e-5 at 70,000 elements; filled, exact)
PIECE_FILL = 1 << 15
#: a played round whose shared links each carry at most two messages (a chain's, on
#: flat) is filled by iterating its ends to their fixed point (:func:`_paired_ends`), at
#: most so many passes (a chain on ``default_flat(64)`` takes at most 10), and by the
#: fill's events at the sizes where they have not settled by then
PAIRED_PASSES = 32
#: a round (not paced) of at most so many messages over every channel is routed at
#: every rank (:func:`_whole`), where its description's rounds that are not paced are at
#: most the second: 128 nodes' rhd halving (10 distinct rounds of 1,024 messages) and
#: hier's inner rhd at 8 channels (7 of 8,192), not the descriptions of 2,048 nodes' 8
#: orders whose small rounds are within the first (65,504 messages in 32 rounds, 31
#: within: routing those takes the three closed-form tables there from 0.74 to 1.35
#: CPU s)
WHOLE_MESSAGES, WHOLE_TOTAL = 1 << 13, 7 << 13
#: exchange rounds by distance (pairwise AllToAll) past :data:`WHOLE_TOTAL` messages but
#: at most so many, on a machine of unlike links, are played rank by rank
#: (:mod:`.exchange`): ``dgx_h100(30)`` to ``(64)`` (57,360 to 261,632 messages), whose
#: sample's rounds see about an eighth of the spine links' load (to -39% against the
#: DES; now within 3.2% at 4 KiB to 1 GiB under every protocol), not 65 nodes and more
#: (a table's 66 sizes under three protocols take about 0.4 CPU s at 32 nodes, 1.5 s at
#: 64, growing with the ranks times the rounds)
EXCHANGE_TOTAL = 1 << 18
#: shift rounds (Bruck's AllGather) of at most so many messages, some of whose links
#: several senders and receivers cross (a DGX's spines), on one order of a machine of
#: unlike links, are played as fluid events (:mod:`.shifts`): ``dgx_h100(33)`` to
#: ``(128)`` (2,904 to 10,240 messages), not 2,048 nodes (229,376), whose rounds stay
#: lock-step
SHIFT_MESSAGES = 1 << 14
#: paced rounds past the play's messages but of at most so many (over every channel),
#: within its other budgets, are routed at every rank, over channels played unqueued,
#: else stretched lock-step (:func:`_stretched_whole`, :func:`_unqueued`): 65 to 128 nodes'
#: 8-channel trees, up to 53,712 messages (their AllGather at 2 segments), not 2,048
#: nodes' one-channel trees (65,532: routing them would take the three closed-form
#: tables there past a second)
STRETCH_MESSAGES = 7 << 13

#: on a machine of alike links (flat) past :data:`SAMPLE_ALL_RANKS` ranks, a description
#: that takes the channels whose every rank's messages are played
#: (:attr:`collectives.registry.Algorithm.played_by`: a tree AllGather's pieces, each
#: its own row) is priced so where its paced messages are in flight in at most so many
#: rounds in all over every channel, within the play's budgets (:func:`_fine`):
#: ``default_flat(128)`` at one and two segments (685 and 1,235 pieces) and 256 at one
#: (1,387) are exact so, were up to +9.5e-4, -8.4e-3 and +2.7e-4, and 96 to 128 at 4
#: and 16 segments (up to 9,939 pieces on 128 ranks; at 96, 4 segments, 2^20 elements,
#: -6.65e-3; 256 at 4, 512 at 2: -3.5e-3, -8.7e-3).  With the fill compiled
#: (:mod:`.filling`) the AllGather table alone on ``default_flat(128)`` takes 2.1 ->
#: 2.6-2.9 CPU s so, on 512 4.0 -> 3.2 s (before it, 2.0 -> 3.9 and 3.0 -> 12.3 s); the
#: three closed-form tables' peak on 128, 256, 512: 212, 291, 314 -> 359, 601, 577 MB
#: (Numba about 100 MB of it)
FINE_MESSAGES = 5 << 11

#: on a machine of unlike links (DGX), where a channel of no elements still sends, the
#: channels' parts at a size at most this fraction of the largest apart are priced in
#: groups of orders (:func:`_unlike_time`; elsewhere in groups however far apart):
#: two DGX nodes' tree AllGather at 4,000,012 bytes over two channels of 500,003 and
#: 500,000 elements, each part priced with both channels carrying it, was +7.2% against
#: the DES (the first's blocks cut unevenly in both), exact in groups; parts further
#: apart differ by at least this fraction of a channel's part of a block, so are at most
#: ``1 / NEAR_PARTS`` elements a block
NEAR_PARTS = 1 / 8
#: on a machine of unlike links (DGX), where a channel of no elements sends nothing,
#: the channels that carry something are priced in groups however far apart their
#: parts (:func:`_unlike_time`; a hier phase's channels of every group at their own
#: parts where they differ, :func:`_phase_elements`) up to so many ranks (128 DGX
#: nodes, as far as the DES measures them); past that as where it sends (parts far apart each priced with every
#: channel carrying it): the groups take a layout for each number of channels that
#: carry something, which took the three tables on 256 nodes from 7.3 to 10.4 CPU s
#: and on 2,048 nodes from 0.8 to 1.2 s (past the issue's one second)
FAR_GROUP_RANKS = 1 << 10

#: on a machine of alike links (flat), held paced rounds (a chain's ReduceScatter and
#: AllGather) are played rank by rank (:func:`_unheld`) where every rank is played
#: (:func:`_played`: up to 64 ranks, past that within the play's budgets, 128 ranks at 8
#: segments, 256 at one), their messages carried at max-min rates over their shared
#: ports together (:func:`_filled_ends`) up to so many ranks; past that so only the
#: rounds whose ports each carry at most two groups of messages alike in their links
#: (one channel, or channels of one order: :func:`_grouped_ends`, a few passes a round,
#: and where a group's messages are one element apart the fill's events from the first
#: time a group takes more or less than half a port), the others each port's queue on its own (:func:`_queue_ends`: the fill's
#: events grow with the ranks in every round; 3 channels of one order on
#: ``default_flat(40)``, ReduceScatter at 2 segments, were within 6.5e-5 so, now
#: exact).  One channel is
#: exact at 33 to 128 ranks, where each port's queue on its own was within 6.5e-5 (33 to
#: 64 ranks, ReduceScatter) and the lock-step stretch up to +5% (past 64); the
#: ReduceScatter's four chain candidates on ``default_flat(64)``, 31 sizes, 0.26 -> 0.5
#: CPU s (the max-min fill's events: 24.5 s a table), on ``default_flat(100)`` 0.06 ->
#: 1.1 s
UNHELD_RANKS = 32
#: on a machine of alike links, held paced rounds on one order (over one channel or
#: several) past the play's budgets (a chain's ReduceScatter and AllGather,
#: ``default_flat(256)`` at 8 segments, ``default_flat(200)`` over 8 channels) are
#: priced from chains of fewer ranks, each played (:func:`_shortened`): the shorter
#: side (the ranks whose blocks are one element larger, or the others) and the two
#: sides' difference, each past so many ranks, are taken as a line whose slope two
#: shorter chains give (the chain's time is affine in each once its ends have run
#: ahead and its middle settled)
CHAIN_EDGE = 12
#: a chain's ReduceScatter past the play's budgets, on one channel over ports (flat:
#: a rank's sends share one, its receives another), is played whole, compiled
#: (:func:`~simulator.analytic.chain_play._chain_time`), up to so many ranks at the
#: counts whose blocks are cut into uneven segments: there its time is not affine in
#: the chain's length (with every block of 515 elements at 8 segments its slope over
#: 8 ranks more moves by -1.3e-9 to +1.6e-9 s between 64 and 256 ranks), so no
#: extension from shorter chains is exact (:func:`~.pricing._shortened`: up to
#: -4.3e-6; blocks of one element on 256 ranks at 4 segments, 97 and 192 elements,
#: +3.9e-7 and -6.8e-6); played whole, 20 ms a count at 256 ranks and 8 segments
#: where every segment holds an element, 3 ms where most are empty (blocks of one
#: element: an empty message is not settled); over several channels of one order, up to
#: so many ranks at every count (:func:`~simulator.analytic.chain_play._channels_time`:
#: 96 ranks at 8 channels and 8 segments, 97 elements, was +9.8e-6; 256 at 4 segments,
#: 65,537, -3.27e-4; 0.2-0.3 CPU s a count at 96 ranks, 1.8-3.5 s at 256 and 8 segments)
WHOLE_CHAIN_RANKS = 1 << 8
#: past :data:`WHOLE_CHAIN_RANKS`, up to so many ranks, such a chain is played whole
#: only at the counts whose every segment holds an element (a block at least one
#: element a segment): ``default_flat(512)`` at 4 segments, 5,000 and 131,840 elements
#: (-1.1e-6, -4.3e-6) and ``(301)`` at 3, 131,840 (-2.1e-5) are exact so, and a table
#: holds one such count a segment count (35, 70 ms a count at 512 ranks and 4, 8
#: segments; 150, 575 ms at 1,024), where it holds some 25 of blocks of a few elements
#: or none (every uneven count played whole: the ReduceScatter table on
#: ``default_flat(512)`` 3.0 -> 3.8 CPU s, on ``(1024)`` 4.7 -> 8.0 s); those keep
#: the extension (512 ranks at 4 segments, 384 elements, blocks of one element on
#: three quarters of the ranks: -7.6e-6)
FULL_CHAIN_RANKS = 1 << 10
#: the first chain a longer chain's ReduceScatter is priced from holds its two sides'
#: difference and its shorter side in the ratio its own do, up to so many
#: (:func:`_along_ray`): past the edges its time is affine in each only within a range
#: of their ratio (the least of a plane per range; blocks of one element on 512 and
#: 1,024 ranks at 2 and 4 segments take another plane past a difference of about 2 to
#: 2.7 times the shorter side: were up to +5.3e-5, now within 1e-13)
CHAIN_RATIO = 3


def _is_paced(round_: Any) -> bool:
    """Whether a round's messages say in which rounds they are in flight."""
    return any(m.rounds is not None for m in round_.messages)


def _played(topology: Any, orders: Orders, rounds: list[Any]) -> bool:
    """Whether the paced ``rounds`` on ``orders`` are played rank by rank (:class:`_Flow`,
    every rank's paced messages routed): where every rank is sampled, or where, over
    all the orders, they hold at most :data:`PLAY_MESSAGES` messages (each routed) in
    flight in at most :data:`PLAY_HOPS` rounds in all (each a hop of the play) over a
    stretch of at most :data:`PLAY_ROUNDS` rounds (a numpy pass each; rounds none of
    which is held, of at most :data:`UNHELD_PLAY_MESSAGES` messages, within
    :data:`UNHELD_PLAY_HOPS` in place of the second); past any, the
    lock-step stretch (:func:`_stretched_whole`).  rhd's steps (:func:`_stepped`, each
    message in flight in one round) are played up to :data:`STRETCH_MESSAGES` messages:
    hier's inner rhd over 8 channels on ``dgx_h100(72)`` to ``(120)`` (up to 27k
    messages) was up to +11.8% (ReduceScatter, 64 MiB, LL) as their lock-step rounds,
    which charge a fold's partners each round's slowest message (two flows hashed to
    one spine link) while the DES runs them after the others, alone; played, within
    0.3%.  It doubles the three closed-form tables' CPU time on ``dgx_h100(96)`` (7.2 ->
    14.3 s); powers of two (no fold) are lock-step rounds, not paced."""
    if topology.nranks <= SAMPLE_ALL_RANKS:
        return True
    messages, hops, span = _paced_load(orders, rounds)
    budget = STRETCH_MESSAGES if _stepped(tuple(rounds)) is not None else PLAY_MESSAGES
    unheld = messages <= UNHELD_PLAY_MESSAGES and not _is_held(rounds)
    hop_budget = UNHELD_PLAY_HOPS if unheld else PLAY_HOPS
    return messages <= budget and hops <= hop_budget and span <= PLAY_ROUNDS


def _fine(topology: Any, orders: Orders, rounds: list[Any]) -> bool:
    """Whether the paced ``rounds`` on ``orders`` of a description that takes the
    channels played (or, a bound, of the one that does not) are priced so past
    :data:`SAMPLE_ALL_RANKS` ranks: played (:func:`_played`) and in flight in at most
    :data:`FINE_MESSAGES` rounds in all over the orders (a piece is in flight in the
    one round of its segment, so its description's messages; the other's messages in
    flight over several rounds are a piece a round at least)."""
    return _played(topology, orders, rounds) and _paced_load(orders, rounds)[1] <= FINE_MESSAGES


def _fill(rounds: Sequence[Any]) -> int:
    """The most messages with a shared link a played round of ``rounds`` is filled with
    (:func:`~simulator.analytic.flow._coupled`): :data:`PIECE_FILL` where some class is
    pieces each of its own size and start, else :data:`FILL_MESSAGES`."""
    pieced = any(m.sizes is not None for r in rounds for m in r.messages)
    return PIECE_FILL if pieced else FILL_MESSAGES


def _extended(topology: Any, orders: Orders, rounds: list[Any]) -> bool:
    """Whether the paced ``rounds`` on ``orders`` are priced from shorter chains
    (:func:`_shortened`): held, on channels of one order of a machine of alike links,
    past the play's budgets (:func:`_played`, as :func:`_unheld` plays them)."""
    return _is_held(rounds) and len(_link_classes(topology)[1]) == 1 \
        and all(order == orders[0] for order in orders) \
        and not _played(topology, orders, list(_unheld(tuple(rounds))))


def _queued(topology: Any, orders: Orders, rounds: list[Any]) -> bool:
    """Whether the paced ``rounds`` on ``orders`` are played with each shared link's
    queue (:class:`_Flow`): where :func:`_played`, or where every rank is sampled (an
    order within the sampled nodes); else unqueued where :func:`_unqueued`."""
    return _played(topology, orders, rounds) or bool(_sampled(topology, orders).all())


def _unqueued(orders: Orders, rounds: list[Any]) -> bool:
    """Whether the paced ``rounds`` on ``orders``, where not played with queues
    (:func:`_queued`), are played with each message at its lock-step share of every link,
    as if a shared link's messages started together (an upper bound of its queue): where
    :func:`_stretched_whole`, not held, over channels (several orders of the same ranks).
    From 65 DGX nodes (three leaf groups) 8 channels' tree AllReduce (16,608 messages)
    was +6.9% stretched lock-step (4 KiB Simple: four IB latencies of rounds its ranks do
    not wait for), and is exact so (a queue's messages there, two channels' on an NVLink
    port, start together); played with queues, the three tables on 128 nodes cost 7.3 ->
    9.3 CPU s, unqueued 7.3 -> 7.5.  Not one order or groups apart: 256 nodes' one-channel
    tree AllGather and hier's inner trees would take them 5.1 -> 6.2."""
    return len(orders) > 1 and len(np.unique(orders)) == len(orders[0]) \
        and not _is_held(rounds) and _stretched_whole(orders, rounds)


def _stretched_whole(orders: Orders, rounds: list[Any]) -> bool:
    """Whether the paced ``rounds`` on ``orders``, where not played, are routed from
    every rank's messages, and played unqueued or stretched (:func:`_unqueued`):
    where, over all the orders, they hold at most :data:`STRETCH_MESSAGES` messages
    within the play's other budgets, or, held, at most :data:`PLAY_MESSAGES` whatever
    their rounds; past any, from the sample's."""
    messages, hops, span = _paced_load(orders, rounds)
    if _is_held(rounds):
        # never played: the stretch's cost is its messages', whatever their rounds
        return messages <= PLAY_MESSAGES
    return messages <= STRETCH_MESSAGES and hops <= PLAY_HOPS and span <= PLAY_ROUNDS


def _is_held(rounds: Sequence[Any]) -> bool:
    """Whether some of ``rounds`` are paced and held to the lock-step stretch."""
    return any(r.paced and r.held for r in rounds)


def _front(topology: Any, orders: Orders, rounds: list[Any]) -> tuple[float, float] | None:
    """How many positions a round the first rounds and the ends of held paced
    ``rounds`` on ``orders`` move (at most one; the slowest class's), where, past the
    play's budget and stretched from every rank, they are priced as the path that
    follows the chain's front (:meth:`_Described._followed`): on one order, where a
    rank's step holds one position, so that the ranks' clocks carry a hold-up one
    position a round; else None."""
    if not (len(orders) == 1 and _is_held(rounds) and topology.nranks > SAMPLE_ALL_RANKS
            and not _played(topology, orders, rounds) and _stretched_whole(orders, rounds)):
        return None
    # positions, not messages: a hop that idles a round is two messages (its runs)
    spread = np.array([[len(np.unique(m.src)) - 1, *np.ptp(m.rounds, axis=0)] for r in rounds
                       for m in r.messages if m.rounds is not None and len(m.rounds) > 1])
    speeds = spread[:, :1] / np.maximum(spread[:, 1:], 1)  # all at once: no bound on it
    first, end = np.minimum(1.0, speeds.min(axis=0)).tolist()
    return first, end


def _paced_load(orders: Orders, rounds: list[Any]) -> tuple[int, int, int]:
    """The paced ``rounds``' messages and the rounds they are in flight in, in all over
    ``orders``, and the rounds they stretch over."""
    loads = [_round_load(r) for r in rounds]
    firsts = [first for _, _, first, _ in loads if first is not None]
    ends = [end for _, _, _, end in loads if end is not None]
    return (sum(load[0] for load in loads) * len(orders),
            sum(load[1] for load in loads) * len(orders),
            max(ends, default=0) - min(firsts, default=0))


_LOADS: dict[int, tuple[tuple[Any, ...], tuple[int, int, int | None, int | None]]] = {}


def _round_load(round_: Any) -> tuple[int, int, int | None, int | None]:
    """A round's paced messages, the rounds they are in flight in, in all, and the first
    and the last of those (None without any; cached by the round: every machine's
    orders and every budget read them)."""
    def make() -> tuple[int, int, int | None, int | None]:
        paced = [m.rounds for m in round_.messages if m.rounds is not None]
        ran = [m for m in paced if len(m)]
        return (sum(len(m) for m in paced),
                sum(int(m[:, 1].sum()) - int(m[:, 0].sum()) for m in paced),
                min((int(m[:, 0].min()) for m in ran), default=None),
                max((int(m[:, 1].max()) for m in ran), default=None))
    return _cached(_LOADS, id(round_), (round_,), make)


def _whole(topology: Any, orders: Orders,
           wanted: list[tuple[Any, bool, tuple[int, ...]]]) -> list[bool]:
    """Whether every rank's messages of each round of ``wanted`` (as :func:`_routed`'s)
    that is not paced are routed: where every rank is sampled, or where, over all the
    orders, it holds at most :data:`WHOLE_MESSAGES` and the rounds of ``wanted`` that are
    not paced (those of the same positions once: they share their routes) at most
    :data:`WHOLE_TOTAL` (a round's slowest message may lie between ranks the sample
    does not meet, as a flat tree's over some nodes, or on the spine link the most of
    its messages hash to, as rhd's halving across 64 DGX nodes' two scalable units: 18
    rounds of 512 messages); past either, the sample."""
    if topology.nranks <= SAMPLE_ALL_RANKS:
        return [True] * len(wanted)
    distinct = {digests: r for r, _, digests in wanted if not _is_paced(r)}
    if _messages(list(distinct.values())) * len(orders) > WHOLE_TOTAL:
        return [False] * len(wanted)
    return [_messages([r]) * len(orders) <= WHOLE_MESSAGES for r, _, _ in wanted]


def _messages(rounds: list[Any]) -> int:
    """The messages of the rounds of ``rounds`` that are not paced, on one order."""
    return sum(len(m.src) for r in rounds if not _is_paced(r) for m in r.messages)


def _stepped(rounds: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A description of one paced round whose every message is in flight in one round
    (rhd's steps) as lock-step rounds, one per step, where it is not played: stretched
    from every rank as paced rounds, each message priced with those of its class
    alone, rhd on 128 DGX nodes was -6.8% (AllGather, LL, 64 MiB) against the DES, as
    lock-step rounds -2.1%; else None."""
    if len(rounds) != 1 or not rounds[0].paced or rounds[0].held:
        return None
    steps: dict[int, list[Any]] = {}
    for m in rounds[0].messages:
        if m.rounds is None or m.cut or not len(m.rounds) or \
                (m.rounds != [m.rounds[0, 0], m.rounds[0, 0] + 1]).any():
            return None
        steps.setdefault(int(m.rounds[0, 0]), []).append(dataclasses.replace(m, rounds=None))
    if sorted(steps) != list(range(len(steps))):
        return None
    return tuple(Round(1, tuple(steps[k])) for k in range(len(steps)))


_UNHELD: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def _unheld(rounds: tuple[Any, ...]) -> tuple[Any, ...]:
    """A description's held paced rounds (its first) as played on a machine of alike
    links, where a chain's ends run ahead of the lock-step rounds (its ReduceScatter's
    stretch +4.8% on ``default_flat(17)`` at 2 segments): not held, and its lock-step
    rounds after them (a chain's late units) made classes of its paced round, each
    message in flight in one round after the stretch, a round after another, so that
    it starts once both its ends are done (as lock-step rounds, every message after
    the last rank's clock: +2.7e-4 on 3 ranks, 7 elements) (cached by the description)."""
    def make() -> tuple[Any, ...]:
        paced = [r for r in rounds if r.paced]
        end = max(int(m.rounds[:, 1].max()) for r in paced for m in r.messages
                  if m.rounds is not None and len(m.rounds))
        after = []
        for r in rounds[len(paced):]:
            for k in range(r.repeat):
                after += [dataclasses.replace(m, rounds=np.tile([end + k, end + k + 1],
                                                                (len(m.src), 1)))
                          for m in r.messages]
            end += r.repeat
        first = dataclasses.replace(paced[0], messages=paced[0].messages + tuple(after),
                                    held=False)
        return (first, *paced[1:])
    return _cached(_UNHELD, id(rounds), (rounds,), make)
