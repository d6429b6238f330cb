"""The analytic model: what an algorithm describes, priced on a machine.

Every algorithm describes its communication (:mod:`collectives.traffic`) as lock-step
rounds of message classes on the positions of its rank order, or, composed, as phases of
flat algorithms on groups of ranks.  :func:`price` turns that into time on a machine:

* **Orders.**  ``C`` channels each carry their own part of the vector
  (:func:`collectives.traffic.channel_counts`) over their own order
  (:func:`simulator.channel_choice.schedule_params`, as the simulated tables run them); a
  phase runs every group of ranks ``C`` times side by side, each group's channel at its
  own part where they differ (:func:`_phase_elements`: on a machine of alike links, and
  for the tree and the chain up to :data:`FAR_GROUP_RANKS` ranks, on DGX every group's
  channels the first group's; elsewhere where they resolve other parameters), else at
  the largest.  The channels that carry nothing are left out where an empty channel
  sends nothing (the tree, the chain; :func:`_live_time`; on a machine of unlike links
  up to :data:`FAR_GROUP_RANKS` ranks); on a machine of unlike links (DGX) where it
  sends (or past them), parts further apart than
  :data:`NEAR_PARTS` are each priced with every channel carrying it, the slowest taken
  (:func:`_unlike_time`); else the channels of equal parts at a size are a group, each class of a round a class per
  group priced at its group's part (:func:`_channel_groups`), the groups' rounds side by
  side where their parts resolve other parameters (:func:`_merged`).  Phases follow one
  another, but hier's ReduceScatter on a machine of alike links, with a ring in the node
  or at 2 ranks a node, is its slowest rail's own sum (:func:`_rails_apart`).  On every machine a
  message over several runs of the buffer shares its links as a transfer per run
  (:meth:`_Described._runs`), as the simulator's flows do.
* **Messages on links.**  A round's classes of every channel and group are in flight
  together: each message takes its route (:meth:`topology.Topology.route`), the messages
  on a link share it as the simulator's max-min sharing does (equally, until the shorter
  end: one of ``b`` bytes among messages of ``b_i`` bytes is through after
  ``sum_i min(b_i, b)`` bytes' time), and a message takes the longest any link of its
  route keeps it.  Its latency is its route's (the sum of its
  links', by link kind under a GPU model), less what the protocol's FIFO slots hide of it
  (:func:`simulator.gpu.hidden_latency`, at the route's nominal bottleneck rate); a
  message over several runs of the buffer (a ReduceScatter's or AllGather's channel
  holds its part of each block: runs of ``piece`` bytes) is a transfer per run side by
  side, each hiding its latency behind its own bytes (where a cut class says where
  what it cuts starts and its rounds are played, each unit's own runs, its first and
  last in part: :meth:`_Described._run_table`; carried run by run on a machine of
  alike links, elsewhere as transfers of its longest run, whose latency it pays).
* **Rounds.**  A round lasts as long as its slowest message plus the receiver's reduction
  of it (``gamma`` a byte, at most ``piece`` bytes at once, run by run); a chain of
  ``S`` segments takes the sum over its hops plus ``S - 1`` times its slowest hop (on a
  machine of unlike links, at least the pace of the links its hops crowd, every hop
  routed: :func:`_crowded`, its crowded hops played segment by segment where their
  bytes bunch or the chain never fills, counts past the play's reach on the line of two
  plays, :mod:`.coupled`; a ring after a tree's rounds steps at the pace of its hops
  that start together: :func:`_staggered`); a
  stretch of paced rounds (a pipeline's, a tree's over nodes) the sum over its rounds of
  the slowest message then in flight (:meth:`_Described._stretched`), or, where every
  rank is sampled or the paced rounds are few enough messages to route them all
  (:func:`_played`), as the simulator plays the ranks' steps (:class:`_Flow`: each rank
  has a clock; a message of a round starts once both its ends are done with the round
  before, its bytes are through once each link of its route has carried its share, a
  link the round's messages share carrying them from their own starts, equally among
  those in flight), and the sender is done after its transfer, the receiver
  after its reduction too), unless the description holds its paced rounds to the lock-step sum
  (:attr:`collectives.traffic.Round.held`; on one order past the play's budget, the
  path that follows the chain's front, :meth:`_Described._followed`; on a machine of
  alike links where every rank is sampled they are played all the same, filled up to
  :data:`UNHELD_RANKS` ranks, :func:`_unheld`); the time is the
  sum over the rounds, plus the GPU model's cost per call
  (:func:`simulator.gpu.gpu_terms`).

**Sample.**  The messages priced are those with an end on a sampled rank: every rank up
to :data:`SAMPLE_ALL_RANKS` ranks, else every rank of a few nodes (the first two, the
middle one, the last), which on a machine whose nodes are alike meet every kind of
route and link load a round has.  The model's cost therefore grows with the number of
classes (and by a numpy pass over each class's positions), not with rank pairs.  Paced
rounds are the exception: a rank's clock waits on its partners' and theirs on their
partners', so a sample cannot play them; where their messages over every channel are
at most :data:`PLAY_MESSAGES`, in flight in at most :data:`PLAY_HOPS` rounds in all
over at most :data:`PLAY_ROUNDS` rounds, every rank's are routed and played (their cost
bounded by those budgets, whatever the rank count); past the messages but of at most
:data:`STRETCH_MESSAGES` within the others, from every rank's messages (a sample
misses rounds whose slowest message lies elsewhere: a tree's crossings at the depths
its nodes do not sit at), over channels played unqueued (each message at its lock-step
share of every link, :func:`_unqueued`), else (held, one order, groups apart) the
lock-step stretch; past any, the lock-step stretch from the sample's.
Another round of at most :data:`WHOLE_MESSAGES` messages is routed at every rank too,
where its description's rounds (of distinct positions) are at most :data:`WHOLE_TOTAL`.
Exchange rounds by distance (pairwise AllToAll) past that but within
:data:`EXCHANGE_TOTAL` messages on a machine of unlike links are played rank by rank
(:mod:`.exchange`: the ranks' clocks, a rank starting a round once it and its partner
are done with the one before, and each message at the share of the messages in flight
on its links with it, iterated; for the bytes alone once, with the latency at a few
anchor sizes, interpolated between).  Shift rounds (Bruck's AllGather: every position
sending ``s`` positions on in a round) within :data:`SHIFT_MESSAGES` messages, on one
order of a machine of unlike links some of whose links several senders and receivers
cross (a DGX's spines), are played as fluid events (:mod:`.shifts`, compiled: each
message's bytes start its latency left after both its ends are done with the round
before, a transfer per run of the buffer, each of a link's transfers an equal share
of it, a transfer the least over its route; for the bytes alone once, at anchor sizes
with the latency, interpolated between, every size then by the ranks' clocks).

**Cost.** A round's sampled messages are routed once for every protocol (links alike in
kind, latency, line rate and flow cap are alike under every protocol) and merged into rows
of alike messages (a class, and per link of the route its class and the messages sharing it
by class; messages of a class that say they carry something at other counts,
:attr:`collectives.traffic.Messages.kinds`, are rows apart, each left out where it carries
nothing, or, where each is a kind of its own (:attr:`~collectives.traffic.Messages.sizes`),
each priced at its own bytes and over the runs of the buffer from its own start); rounds of
the same positions share them, however they were described (a tree's at every segment
count), and a description's rounds not yet routed are routed in one pass (blocks that never
share a link; the paced rounds apart), from each class's sampled messages only. A
description's rows are then priced at every size in one numpy pass, under each protocol, but
for paced rounds played rank by rank: a numpy pass per round over the ranks then busy
(within the budgets above), once for every protocol and description that share the play
(:func:`price_protocols`, their sizes side by side), and of its parts that share no rank and
no link, one of each kind (:func:`_one_of_alike`: hier's inner tree on DGX rails).
``benchmarks/bench_select.py`` measures a table.

The lock-step sum is exact on a contention-free machine whenever each round's slowest
message lies on the critical path (ring at every count; rhd on powers of two with even
windows; pipeline with even segments); otherwise it is an upper bound (a rank with
nothing to do in a round does not wait for it, as the paced rounds played rank by rank
show: a chain's AllReduce segments run ahead of the rounds behind a network crossing, a
tree's NVLink chains ahead of its crossings, a tree's ranks over all ranks ahead of
their trees' slower edges: +5.3% on ``default_flat(10)``).  On a machine the
max-min sharing of the simulator gives a message more than its equal share when another
is held back elsewhere, and channels drift apart; ``benchmarks/bench_select.py`` prints
the worst error against :func:`simulator.simulate` per algorithm.

**Modules.**  :mod:`.pricing` (the entry points: orders, channel parts, phases),
:mod:`.described` (a description priced at every size), :mod:`.layout` (its rounds
routed and laid out), :mod:`.routing` (a round's messages routed into rows of alike
ones), :mod:`.flow` (paced rounds played rank by rank), :mod:`.exchange` (pairwise exchange
rounds played rank by rank), :mod:`.shifts` and :mod:`.shift_play` (shift rounds played
as fluid events, compiled), :mod:`.crowded` (a chain's hops crowding the links they
share), :mod:`.coupled` and :mod:`.coupled_play` (those hops played, compiled with
Numba), :mod:`.chain_play` (a chain's ReduceScatter on flat ports played whole,
compiled), :mod:`.compiling` (their first compile after an install said on stderr),
:mod:`.sharing` (messages sharing links: fills and queues), :mod:`.units` (a cut class's transfers per run),
:mod:`.budgets` (what is played, routed whole, stretched or held), :mod:`.sample`
(which ranks are priced), :mod:`.cache` and :mod:`.arrays` (shared helpers).
"""

from __future__ import annotations

from .sample import SAMPLE_ALL_RANKS
from .budgets import (PLAY_MESSAGES, PLAY_HOPS, PLAY_ROUNDS, PLAY_SIDE_BY_SIDE,
                      WHOLE_MESSAGES, WHOLE_TOTAL, STRETCH_MESSAGES, NEAR_PARTS, UNHELD_RANKS,
                      PAIRED_PASSES, CHAIN_EDGE, CHAIN_RATIO, FAR_GROUP_RANKS, EXCHANGE_TOTAL,
                      SHIFT_MESSAGES)
from .pricing import price, price_one, price_protocols

__all__ = ["price", "price_one", "price_protocols", "SAMPLE_ALL_RANKS", "PLAY_MESSAGES",
           "PLAY_HOPS", "PLAY_ROUNDS", "PLAY_SIDE_BY_SIDE", "WHOLE_MESSAGES", "WHOLE_TOTAL",
           "STRETCH_MESSAGES", "NEAR_PARTS", "UNHELD_RANKS", "PAIRED_PASSES",
           "CHAIN_EDGE", "CHAIN_RATIO", "FAR_GROUP_RANKS", "EXCHANGE_TOTAL",
           "SHIFT_MESSAGES"]
