"""The analytic model: what an algorithm describes, priced on a machine.

Every algorithm describes its communication (:mod:`collectives.traffic`) as lock-step
rounds of message classes on the positions of its rank order, or, composed, as phases of
flat algorithms on groups of ranks.  :func:`price` turns that into time on a machine:

* **Orders.**  ``C`` channels each carry their own part of the vector
  (:func:`collectives.traffic.channel_counts`) over their own order
  (:func:`simulator.channel_choice.schedule_params`, as the simulated tables run them); a
  phase runs every group of ranks ``C`` times side by side.  On a machine of unlike links
  (DGX) parts further apart than :data:`NEAR_PARTS` are each priced with every channel
  carrying it, the slowest taken (:func:`_unlike_time`); else
  the channels of equal parts at a size are a group, each class of a round a class per
  group priced at its group's part (:func:`_channel_groups`), the groups' rounds side by
  side where their parts resolve other parameters (:func:`_merged`).  On every machine a
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
  what it cuts starts and its rounds are played on a machine of alike links, each
  unit's own runs, its first and last in part: :meth:`_Described._run_table`).
* **Rounds.**  A round lasts as long as its slowest message plus the receiver's reduction
  of it (``gamma`` a byte, at most ``piece`` bytes at once, run by run); a chain of
  ``S`` segments takes the sum over its hops plus ``S - 1`` times its slowest hop; a
  stretch of paced rounds (a pipeline's, a tree's over nodes) the sum over its rounds of
  the slowest message then in flight (:meth:`_Described._stretched`), or, where every
  rank is sampled or the paced rounds are few enough messages to route them all
  (:func:`_played`), as the simulator plays the ranks' steps (:class:`_Flow`: each rank
  has a clock; a message of a round starts once both its ends are done with the round
  before, its bytes are through once each link of its route has carried its share, a
  link the round's messages share carrying them from their own starts, equally among
  those in flight (on DGX, rhd's steps, each message at its lock-step share:
  :func:`_queues_played`), and the sender is done after its transfer, the receiver
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

**Cost.**  A round's sampled messages are routed once for every protocol (links alike in
kind, latency, line rate and flow cap are alike under every protocol) and merged into
rows of alike messages (a class, and per link of the route its class and the messages
sharing it by class; messages of a class that say they carry something at other counts,
:attr:`collectives.traffic.Messages.kinds`, are rows apart, each left out where it
carries nothing); rounds of the same positions share them, however they were described (a
tree's at every segment count), and a description's rounds not yet routed are routed in
one pass (blocks that never share a link; the paced rounds apart), from each class's
sampled messages only.  A description's rows are then priced at every size in one numpy
pass, under each protocol, but for paced rounds played rank by rank: a numpy pass per
round over the ranks then busy (within the budgets above), once for every protocol and
description that share the play (:func:`price_protocols`, their sizes side by side),
and of its parts that share no rank and no link, one of each kind (:func:`_one_of_alike`:
hier's inner tree on DGX rails).
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
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from reprlib import repr as brief
from typing import Any, Callable, Sequence

import numpy as np

from topology.checks import check_int
from topology.model import FullMesh
from topology.order import node_groups

from collectives.layout import count_of
from collectives.registry import Algorithm
from collectives.registry import algorithm as registered
from collectives.schedule import BLOCK_COLLECTIVES, COLLECTIVES
from collectives.traffic import Phase, Round, channel_counts, channel_runs, describe

from .channel_choice import schedule_params
from .gpu import flow_caps, hidden_latency, line_figures, link_figures, link_kinds

__all__ = ["price", "price_one", "price_protocols", "SAMPLE_ALL_RANKS", "PLAY_MESSAGES",
           "PLAY_HOPS", "PLAY_ROUNDS", "PLAY_SIDE_BY_SIDE", "WHOLE_MESSAGES", "WHOLE_TOTAL",
           "STRETCH_MESSAGES", "NEAR_PARTS", "UNHELD_RANKS", "PAIRED_PASSES"]

#: up to so many ranks every rank's messages are priced; above, those of a few nodes
SAMPLE_ALL_RANKS = 64
#: paced rounds of at most so many messages, in flight in at most so many rounds in all
#: (over every channel), over a stretch of at most so many rounds, are played rank by
#: rank (:func:`_played`)
PLAY_MESSAGES, PLAY_HOPS, PLAY_ROUNDS = 1 << 14, 1 << 17, 1 << 12
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
#: segments side by side, 8, 7 and 6 at 67 elements: at 256, under by 8.9e-6)
FILL_MESSAGES = 1 << 9
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
#: paced rounds past the play's messages but of at most so many (over every channel),
#: within its other budgets, are routed at every rank, over channels played unqueued,
#: else stretched lock-step (:func:`_stretched_whole`, :func:`_unqueued`): 65 to 128 nodes'
#: 8-channel trees, up to 53,712 messages (their AllGather at 2 segments), not 2,048
#: nodes' one-channel trees (65,532: routing them would take the three closed-form
#: tables there past a second)
STRETCH_MESSAGES = 7 << 13

#: on a machine of unlike links (DGX), the channels' parts at a size at most this
#: fraction of the largest apart are priced in groups of orders (:func:`_unlike_time`):
#: two DGX nodes' tree AllGather at 4,000,012 bytes over two channels of 500,003 and
#: 500,000 elements, each part priced with both channels carrying it, was +7.2% against
#: the DES (the first's blocks cut unevenly in both), exact in groups; parts further
#: apart differ by at least this fraction of a channel's part of a block, so are at most
#: ``1 / NEAR_PARTS`` elements a block
NEAR_PARTS = 1 / 8

#: on a machine of alike links (flat), held paced rounds (a chain's ReduceScatter and
#: AllGather) are played rank by rank (:func:`_unheld`) where every rank is played
#: (:func:`_played`: up to 64 ranks, past that within the play's budgets, 128 ranks at 8
#: segments, 256 at one), their messages carried at max-min rates over their shared
#: ports together (:func:`_filled_ends`) up to so many ranks; past that so only the
#: rounds whose ports each carry at most two (one channel: :func:`_paired_ends`, a few
#: passes a round), the others each port's queue on its own (:func:`_queue_ends`: the
#: fill's events grow with the ranks in every round; 3 channels of one order on
#: ``default_flat(40)``, ReduceScatter at 2 segments, within 6.5e-5).  One channel is
#: exact at 33 to 128 ranks, where each port's queue on its own was within 6.5e-5 (33 to
#: 64 ranks, ReduceScatter) and the lock-step stretch up to +5% (past 64); the
#: ReduceScatter's four chain candidates on ``default_flat(64)``, 31 sizes, 0.26 -> 0.5
#: CPU s (the max-min fill's events: 24.5 s a table), on ``default_flat(100)`` 0.06 ->
#: 1.1 s
UNHELD_RANKS = 32

#: the kinds of transfer a unit of a cut class over several runs of the buffer goes as
#: (:func:`_unit_runs`): its first run's part, whole runs of the longer and of the
#: shorter length, its last run's part
RUN_KINDS = 4

Orders = tuple[tuple[int, ...], ...]
#: each order's group (from 0; the orders of a group carry parts of one size), or None:
#: one group
Groups = tuple[int, ...] | None


def _ceil_div(a: Any, b: Any) -> Any:
    return -(-a // b)


@functools.lru_cache(maxsize=16)
def _sample(topology: Any) -> np.ndarray:
    """Whether each rank of ``topology`` is sampled (see the module docstring)."""
    sampled = np.zeros(topology.nranks, dtype=bool)
    if topology.nranks <= SAMPLE_ALL_RANKS:
        sampled[:] = True
        return sampled
    groups = node_groups(topology)
    n = len(groups)
    for g in {0, 1, n // 2, n - 1} & set(range(n)):
        sampled[list(groups[g])] = True
    return sampled


_KEPT = 4096  # entries of each cache below before it is emptied


def _found(cache: dict[Any, tuple[tuple[Any, ...], Any]], key: Any,
           held: tuple[Any, ...]) -> Any:
    """``cache[key]`` if there and of the objects ``held`` (else None)."""
    found = cache.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], held)):
        return found[1]
    return None


def _store(cache: dict[Any, tuple[tuple[Any, ...], Any]], key: Any, held: tuple[Any, ...],
           value: Any) -> Any:
    """Keep ``value`` as ``cache[key]`` with the objects ``held`` alive (the cache emptied
    first when full); return it."""
    if len(cache) > _KEPT:
        cache.clear()
    cache[key] = (held, value)
    return value


def _cached(cache: dict[Any, tuple[tuple[Any, ...], Any]], key: Any, held: tuple[Any, ...],
            make: Any) -> Any:
    """``cache[key]``, made by ``make()`` unless there; ``key`` holds ids, ``held`` the
    objects they are of (kept alive with the entry, and checked)."""
    found = _found(cache, key, held)
    return _store(cache, key, held, make()) if found is None else found


@functools.lru_cache(maxsize=16)
def _link_classes(topology: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every link's class and one link of each class: links of one kind, latency, line
    rate and flow cap are alike under every protocol (:func:`simulator.gpu.link_figures`
    scales a link's figures by its kind, and caps a link at a NIC by its flows: a leaf's
    up link of the NIC's line rate, as on ``dgx_h100(16, nodes_per_leaf=4, spines=4)``,
    is not capped)."""
    if isinstance(topology.links, FullMesh):
        return np.zeros(len(topology.links), dtype=np.int64), np.zeros(1, dtype=np.int64)
    key = link_kinds(topology)[1]
    for figure in (*line_figures(topology), flow_caps(topology)):
        values, at = np.unique(figure, return_inverse=True)
        key = key * len(values) + at.reshape(-1)
    _, first, classes = np.unique(key, return_index=True, return_inverse=True)
    met = np.argsort(first)  # classes numbered as their first links come
    number = np.empty_like(met)
    number[met] = np.arange(len(met))
    return number[classes.reshape(-1)], first[met]


_RANKS: dict[Any, tuple[tuple[Any, ...], np.ndarray]] = {}


def _ranks(orders: Orders) -> np.ndarray:
    """``orders`` as an array (cached by the orders' identity)."""
    return _cached(_RANKS, id(orders), (orders,), lambda: np.fromiter(
        itertools.chain.from_iterable(orders), dtype=np.int64,
        count=len(orders) * len(orders[0])).reshape(len(orders), -1))


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
_DIGESTS: dict[tuple[int, ...], tuple[tuple[Any, ...], int]] = {}
#: positions numbered so far, by a few of their values (then a mark per other positions
#: with the same: bytes, which the garbage collector does not track)
_NUMBERED: dict[bytes, tuple[tuple[np.ndarray, ...], int]] = {}
_NUMBERS = itertools.count()  # never reused: a number emptied from _NUMBERED stays its own


def _digest(messages: Any) -> int:
    """A number for the positions of a class (and the first units it carries, and its
    messages' kinds: rows are merged by them), the same for equal positions (cached by
    its arrays' identity)."""
    held = (messages.src, messages.dst, messages.rounds, messages.units, messages.kinds)
    return _cached(_DIGESTS, tuple(map(id, held)), held, lambda: _numbered(
        tuple(a for a in held if a is not None)))


def _numbered(arrays: tuple[np.ndarray, ...]) -> int:
    """The number of ``arrays``' values: that of equal arrays numbered before (compared
    whole, where a few of their values agree: a pass, several times cheaper than a hash
    of them), else a new one."""
    key = b"".join(np.int64(a.size).tobytes() + a.reshape(-1)[::max(1, a.size // 16)].tobytes()
                   for a in arrays)
    if len(_NUMBERED) > _KEPT:
        _NUMBERED.clear()
    found = _NUMBERED.get(key)
    while found is not None:
        known, number = found
        if len(known) == len(arrays) and all(a is b or np.array_equal(a, b)
                                             for a, b in zip(arrays, known)):
            return number
        key += b"+"
        found = _NUMBERED.get(key)
    _NUMBERED[key] = (arrays, next(_NUMBERS))
    return _NUMBERED[key][1]


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


def _is_paced(round_: Any) -> bool:
    """Whether a round's messages say in which rounds they are in flight."""
    return any(m.rounds is not None for m in round_.messages)


def _played(topology: Any, orders: Orders, rounds: list[Any]) -> bool:
    """Whether the paced ``rounds`` on ``orders`` are played rank by rank (:class:`_Flow`,
    every rank's paced messages routed): where every rank is sampled, or where, over
    all the orders, they hold at most :data:`PLAY_MESSAGES` messages (each routed) in
    flight in at most :data:`PLAY_HOPS` rounds in all (each a hop of the play) over a
    stretch of at most :data:`PLAY_ROUNDS` rounds (a numpy pass each); past any, the
    lock-step stretch (:func:`_stretched_whole`)."""
    if topology.nranks <= SAMPLE_ALL_RANKS:
        return True
    messages, hops, span = _paced_load(orders, rounds)
    return messages <= PLAY_MESSAGES and hops <= PLAY_HOPS and span <= PLAY_ROUNDS


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


_SAMPLED: dict[Any, tuple[tuple[Any, ...], np.ndarray]] = {}


def _sampled(topology: Any, orders: Orders) -> np.ndarray:
    """Whether each position of each of ``orders`` holds a sampled rank (cached)."""
    return _cached(_SAMPLED, (topology, id(orders)), (orders,),
                   lambda: _sample(topology)[_ranks(orders)])


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
    counts = np.bincount(at * width + column, minlength=len(shared) * width).reshape(-1, width)
    profiles, unique, _ = _unique_rows(np.column_stack([shared // nlinks % nblocks, counts]))
    return profiles, unique[at]


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
    profiles = _covering(mine, message[theirs], message, column, (piece, first), rounds,
                         entry, width)
    profiles, profile, _ = _unique_rows(np.column_stack([block[message[entry]], profiles]))
    return piece, np.column_stack([first, end]) + low, entry, profiles, profile


def _covering(mine: np.ndarray, j: np.ndarray, message: np.ndarray, column: np.ndarray,
              pieces: tuple[np.ndarray, np.ndarray], rounds: np.ndarray, entry: np.ndarray,
              width: int) -> np.ndarray:
    """Per piece's link (its entry of ``entry``; ``pieces``: each one's message and first
    round, by message and first round) the messages by class (``column``) that
    cover the piece on that link: of the pairs ``(mine, j)`` (an entry and the message
    of one in flight with it on its link), each covers a run of its entry's pieces (they
    are cut at its first round and end), counted where it starts and ends and summed
    over the entry's pieces in order (not per pair and piece: 128 nodes' 8-channel chain
    has 3.3 million of those)."""
    piece, first = pieces
    span = int(rounds.max()) + 1
    starts = piece * span + first
    own = message[mine]
    low = np.searchsorted(starts, own * span)  # each entry's message's first piece
    runs = np.searchsorted(starts, np.stack([own * span + rounds[j, 0],
                                             own * span + rounds[j, 1]])) - low
    many = np.bincount(piece, minlength=len(rounds))[message]  # each entry's pieces
    at = np.cumsum(many) - many  # each entry's first piece, entries one after another
    live = runs[1] > runs[0]
    size = len(entry) + 1
    spots = column[j[live]] * size + at[mine][live] + runs[:, live]  # by class, then piece
    delta = np.bincount(spots[0], minlength=size * width) \
        - np.bincount(spots[1], minlength=size * width)
    by_entry = np.argsort(entry, kind="stable")
    profiles = np.empty((len(entry), width), dtype=np.int64)
    profiles[by_entry] = np.cumsum(delta.reshape(width, size), axis=1)[:, :-1].T
    return profiles


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by a sort (numpy's unique hashes first: 15 times slower on
    the half million cuts of 128 nodes' 8-channel chain)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _overlapping(keys: np.ndarray, rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of entries on the same link (``keys``: the link and what it is shared
    in) in flight together (``rounds``: each entry's ``[first, end)``, from 0), each
    entry with itself included, as ``(mine, theirs)`` by ``mine``.  Entries on a link in
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
    mine = np.concatenate([order, order[at], order[later]])
    theirs = np.concatenate([order, order[later], order[at]])
    by_mine = np.argsort(mine, kind="stable")
    return mine[by_mine], theirs[by_mine]


def _within(lengths: np.ndarray) -> np.ndarray:
    """``0 .. n - 1`` for each ``n`` of ``lengths``, one after another."""
    return np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _unique_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of a matrix of integers >= 0 (sorted), each row's among them and
    their counts: one number per row where they fit in 63 bits, else row by row."""
    bases = matrix.max(axis=0, initial=0) + 1
    if np.sum(np.log2(bases.astype(float))) < 62:
        weights = np.concatenate([np.cumprod(bases[::-1])[::-1][1:], [1]])
        _, first, inverse, counts = np.unique(matrix @ weights, return_index=True,
                                              return_inverse=True, return_counts=True)
        return matrix[first], inverse.reshape(-1), counts
    order = np.lexsort(matrix.T[::-1])  # np.unique(axis=0)'s order, without its slow sort
    ranked = matrix[order]
    new = np.ones(len(matrix), dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    inverse = np.empty(len(matrix), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ranked[new], inverse, np.diff(np.append(np.flatnonzero(new), len(matrix)))


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
    class: ``expanded`` lists each pair's profile's classes and counts); of the paced
    rounds their ``stretch`` (:func:`_stretch`) and, where every rank is sampled, their
    pieces' ``hops`` (rows numbered across the blocks; None otherwise) and the
    :class:`_Flow` of them, of one part of each kind (:func:`_one_of_alike`; None
    without hops).  Where the orders are in ``groups``
    (their number), a round's class ``c`` of group ``g`` is class ``c * groups + g``
    (:func:`_grouped_classes`)."""

    __slots__ = ("blocks", "class_rows", "class_block", "block_classes", "row_class",
                 "weight", "links", "pair", "expanded", "pair_rows", "stretch", "hops",
                 "flow", "groups", "row_kind")

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
                              _queued(topology, orders, list(rounds))
                              and _queues_played(alike, rounds))
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
        """Every distinct (profile, row class) of the rows' links, and each one's
        profile's ``(pair, class, count)`` in ``expanded`` (pairs' first at
        ``pair_rows``)."""
        nclasses = max(1, nclasses)
        pairs, self.pair = np.unique(profile * nclasses + self.row_class[:, None],
                                     return_inverse=True)
        self.pair = self.pair.reshape(profile.shape)
        of_pair, class_of_pair = np.divmod(pairs, nclasses)
        triples = triples[np.argsort(triples[:, 0], kind="stable")]
        first = np.searchsorted(triples[:, 0], np.arange(int(of_pair.max(initial=-1)) + 2))
        many = (first[1:] - first[:-1])[of_pair]
        self.pair_rows = np.cumsum(many) - many
        taken = np.repeat(first[:-1][of_pair] - self.pair_rows, many) + np.arange(many.sum())
        self.expanded = np.column_stack([np.repeat(class_of_pair, many), triples[taken, 1],
                                         triples[taken, 2]])


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
    on 3, 6 and 11 ranks: up to -0.99%); so on a machine whose links are all alike,
    where a message is on several shared links, the round's messages are carried at
    max-min rates over all its shared links together (:func:`_filled_ends`, up to
    ``fill`` of them: :data:`FILL_MESSAGES`, none for a chain past
    :data:`UNHELD_RANKS` ranks; any number where each link carries at most two:
    :func:`_paired_ends`).  Not ``queued``, no link is shared: a message takes
    its row's lock-step share of each (:func:`_unqueued`, :func:`_queues_played`).  A
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
        self.coupled = [_coupled(r[2], q[1][:, :, 0], r[4], fill) if filled else None
                        for r, q in zip(self.rounds, self.queues)]
        self.partners = [_partners(c) for c in self.coupled]
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
        parts give each unit's transfers, one per run of the buffer, and their
        reductions (:meth:`_Described._run_play`), a message of a round carries its
        unit's, those its ports share carried kind by kind (:func:`_filled_runs`)."""
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
            unit = None if runs is None else np.minimum(self.segment[run], runs[0].shape[2] - 1)
            if smaller is not None:
                # the messages that carry a smaller unit in this round
                small = _carries_smaller(self.segment[run], units[:, here])
                through = np.where(small, base_s[kind[run]], through)
                paying = np.where(small, paid_s[here], paying)
                if reducing is not None:
                    reducing = np.where(small, reduction_s[here], reducing)
            if runs is not None and runs[2] is not None:
                reducing = runs[2][here, unit]
            if len(crossing):
                held = start if idle is None else start + idle[here]
                if coupled is None:
                    # each shared link's queue played as the simulator shares it
                    shared = _queue_ends(held[members], real, spots, work, spread,
                                         None if small is None else (small[members], work_s),
                                         weight)
                    # the latest of its shared links' ends (links x messages)
                    carried_to = shared.reshape(-1, sizes)[cells].max(axis=0)
                else:
                    # a message on several shared links: max-min over them together
                    # (not only where each link's queue sees it through at its own
                    # time: where they agree, the others' shares elsewhere still move
                    # it: on default_flat(6), tree AllReduce at 5 segments and 1,000
                    # elements, under by 4.8e-4)
                    crossed = here[crossing]
                    if runs is not None and unit is not None:  # each unit's transfers
                        taken = (slice(None), crossed, unit[crossing])
                        carried_to = _filled_runs(held[crossing], runs[0][taken],
                                                  runs[1][taken], rate[crossed], coupled,
                                                  capacity[spots[0]])
                    else:
                        nbytes = carried[crossed]
                        if small is not None:
                            nbytes = np.where(small[crossing], carried_s[crossed], nbytes)
                        cap, links = rate[crossed], capacity[spots[0]]
                        if partners is not None and transfers is None \
                                and (cap == cap[0]).all() and (links == cap[0]).all():
                            carried_to, settled = _paired_ends(held[crossing], nbytes / cap,
                                                               partners)
                            if not settled.all():  # the fill's events where they did not
                                apart = ~settled
                                carried_to[:, apart] = _filled_ends(
                                    held[crossing][:, apart], nbytes[:, apart], cap[:, apart],
                                    coupled, links[:, apart])
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


def _unit_sizes(counts: np.ndarray, cut: np.ndarray, blocks: np.ndarray,
                base: np.ndarray) -> np.ndarray:
    """Which units of a vector of ``counts`` elements (classes x counts) cut into
    ``blocks`` near-equal blocks, each into ``cut`` near-equal parts (each class's; the
    first blocks and parts one element larger where some are), are one element smaller
    than the largest: as :func:`_carries_smaller` reads them, per class ``cut``, the
    block numbers' ``base`` (:attr:`_Described.blocks`), the larger blocks and from
    which part on a larger block's and a smaller block's units are the smaller (``cut``
    where none is), stacked (5 x classes x counts).  A block of ``b`` elements has parts
    of ``b // cut`` and one more, so of the largest block's ``L`` (its largest part)
    only those from ``b % cut`` on are smaller, and none where ``b`` is ``L * cut``."""
    size, extra = np.divmod(counts, blocks)
    largest = _ceil_div(size + (extra > 0), cut)

    def smaller_from(block: np.ndarray) -> np.ndarray:
        return np.where(block // cut >= largest, cut, block % cut)
    shape = counts.shape
    return np.stack([np.broadcast_to(cut, shape), np.broadcast_to(base, shape), extra,
                     np.where(extra > 0, smaller_from(size + 1), cut), smaller_from(size)])


def _unit_spans(count: np.ndarray, cut: int, blocks: int, backward: bool,
                at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each unit of a cut class starts in the vector and its elements (units x
    counts): ``count`` elements from ``at`` (counts) cut into ``blocks`` near-equal
    blocks, each into ``cut`` near-equal parts (the first ones one element larger),
    taken block by block (from the last, ``backward``), each block's parts in order
    (:attr:`collectives.traffic.Messages.cut`)."""
    unit = np.arange(cut * blocks)[:, None]
    block = unit // cut
    if backward:
        block = blocks - 1 - block
    part = unit % cut
    size, extra = np.divmod(count, blocks)
    length = size + (block < extra)
    small, larger = np.divmod(length, cut)
    start = at + block * size + np.minimum(block, extra) + part * small + np.minimum(part, larger)
    return start, small + (part < larger)


def _unit_runs(start: np.ndarray, length: np.ndarray, count: np.ndarray, positions: int,
               longest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The transfers that ``length`` elements from ``start`` (units x counts) of a
    channel's vector of ``count`` elements go as, a transfer per run of the buffer they
    meet (:func:`collectives.compose.channel_parts`: the channel's part of each of
    ``positions`` blocks, the near-equal parts of its vector, the first ones one larger;
    but where the longest run is ``longest`` elements, more than those, the channel's
    parts of blocks of at most one element meet: runs of one element, then one of
    ``longest``, :func:`collectives.traffic.channel_runs`): how many transfers of each
    of :data:`RUN_KINDS` kinds and their elements (each kinds x units x counts), the
    first run's part, whole runs of the longer and of the shorter length, the last
    run's part (an empty unit a transfer of none)."""
    merged = longest > _ceil_div(count, positions)
    size = np.where(merged, 1, count // positions)
    longer = np.where(merged, 0, count % positions)
    regular = np.where(merged, count - longest, positions)  # runs before the merged one
    edge = np.where(merged, count - longest, count)

    def run(element: np.ndarray) -> np.ndarray:
        past = longer * (size + 1)
        at = np.where(element < past, element // (size + 1),
                      longer + (element - past) // np.maximum(size, 1))
        return np.where(element >= edge, regular, at)

    def begins(index: np.ndarray) -> np.ndarray:
        return np.where(index >= regular, edge, index * size + np.minimum(index, longer))
    end = start + length
    first, last = run(start), run(np.maximum(end - 1, start))
    one = (length <= 0) | (first == last)
    whole = np.maximum(last - first - 1, 0)
    long_runs = np.clip(np.minimum(last, longer) - first - 1, 0, None)
    weights = np.stack([np.ones(one.shape), np.where(one, 0, long_runs),
                        np.where(one, 0, whole - long_runs), np.where(one, 0, 1)])
    elements = np.stack([np.where(one, np.maximum(length, 0), begins(first + 1) - start),
                         np.broadcast_to(size + 1, one.shape), np.broadcast_to(size, one.shape),
                         np.where(one, 0, end - begins(last))])
    return weights, elements


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
             fill: int) -> np.ndarray | None:
    """Which of a round's shared links each of its messages with one (``crossing``) is
    on (messages x links), where some is on several (``members``: places x links, the
    messages numbered in the round, ``real`` where they are) and they are at most
    ``fill``, or each link is shared by two (:func:`_partners`: their fill costs a pass
    of a few numbers per message and event, whatever their number); else None (each
    link's queue is played on its own, :func:`_queue_ends`)."""
    if not len(crossing) or (len(crossing) > fill and real.shape[0] > 2):
        return None
    at = np.full(int(max(members.max(), crossing.max())) + 1, -1)
    at[crossing] = np.arange(len(crossing))
    place, link = np.nonzero(real)
    on = np.zeros((len(crossing), members.shape[1]), dtype=bool)
    on[at[members[place, link]], link] = True
    return on if (on.sum(axis=1) > 1).any() else None


def _partners(on: np.ndarray | None) -> np.ndarray | None:
    """Per message of a coupled round (``on``: messages x links, :func:`_coupled`) the
    other message on each of its shared links (messages x 2; the pad, and a link it is
    alone on: ``len(on)``), where every link is shared by at most two and every message
    is on at most two (a chain's on one channel, on flat: a rank's two sends share its
    port, and so do its two receives); else None."""
    if on is None or (on.sum(axis=0) > 2).any() or (on.sum(axis=1) > 2).any():
        return None
    count = len(on)
    message, link = np.nonzero(on)
    many = on.sum(axis=0)
    # the other of a link's two messages: their numbers' sum less its own
    total = np.bincount(link, weights=message, minlength=on.shape[1]).astype(np.int64)
    other = np.where(many[link] == 2, total[link] - message, count)
    table = np.full((count, 2), count, dtype=np.int64)
    table[message, _within(np.bincount(message, minlength=count))] = other
    return table


def _capacities(bandwidths: list[np.ndarray], widths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each entry's link's bandwidth (rows x (links and its own), flat; x sizes, ``widths``
    of them under each of ``bandwidths``, rows x links) and each row's bottleneck's (rows
    x sizes)."""
    band = np.concatenate([np.broadcast_to(b[:, :, None], (*b.shape, w))
                           for b, w in zip(bandwidths, widths)], axis=2)
    rate = band.min(axis=1)
    return np.concatenate([band, rate[:, None, :]], axis=1).reshape(-1, band.shape[2]), rate


def _filled_ends(start: np.ndarray, nbytes: np.ndarray, cap: np.ndarray, on: np.ndarray,
                 capacity: np.ndarray, transfers: np.ndarray | None = None) -> np.ndarray:
    """When each of a round's messages that share links is through, as the simulator's
    links carry them together: each from its own ``start`` with ``nbytes`` to carry
    (messages x sizes; never started at infinity: -inf; with ``transfers``, as many
    transfers of ``nbytes`` each, side by side), at max-min fair rates over the links
    it is ``on`` (messages x links; ``capacity``: links x sizes) and its own ``cap``
    (its route's bottleneck), set again whenever one starts or ends.  A pass per start
    and end; each a progressive filling (:func:`_max_min`)."""
    count = len(start)
    end = np.full(start.shape, -np.inf)
    left = nbytes.astype(float)
    waiting = start.copy()
    flying = np.zeros(start.shape, dtype=bool)
    now = start.min(axis=0)
    now[np.isinf(now)] = 0.0
    for _ in range(2 * count):
        came = waiting <= now
        flying |= came
        waiting = np.where(came, np.inf, waiting)
        rate = _max_min(flying, cap, on, capacity, transfers)
        # (a message fixed at no rate, on a link of no room left, waits: inf)
        with np.errstate(divide="ignore"):
            taken = np.where(flying, left / np.where(flying, rate, 1.0), np.inf)
        step = np.minimum(taken.min(axis=0), waiting.min(axis=0) - now)
        if np.isinf(step).all():
            break
        step[np.isinf(step)] = 0.0
        ended = flying & (taken <= step)
        end = np.where(ended, now + taken, end)
        left = np.where(flying, left - rate * step, left)
        flying &= ~ended
        now = now + step
    return end


def _paired_ends(start: np.ndarray, work: np.ndarray,
                 partners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_filled_ends` where every link is shared by at most two messages and all
    links and caps are alike (:func:`_partners`, on flat): the progressive filling
    fixes every message with a partner in flight at half the rate (those links fill
    first, all at once) and the others at the full rate (their cap), so a message
    carries its bytes' time alone, ``work`` (messages x sizes), at half the speed while
    one of its ``partners`` (messages x 2) is in flight, else at full speed, from its own
    ``start`` (never: infinity; its end -inf).  Its end is so a function of its
    partners' (:func:`_paired_pass`), and the ends are that function's one fixed point
    (at the first time two sets of ends differ, the messages in flight and so every
    message's progress up to it are the same in both); iterated from every message at
    half the speed throughout, an upper bound, they fall to it (the function rises
    with the partners' ends) in a few passes (a chain on ``default_flat(64)``: 2 to 3 a
    round, at most 10), each of a few numbers per message whose partner's end moved in
    the pass before, where the fill's event loop takes a pass per start and end (on
    ``default_flat(64)`` a chain's ReduceScatter took 24.5 CPU s a table so).  The ends
    and, per size, whether they settled within :data:`PAIRED_PASSES` passes."""
    count, sizes = start.shape
    never = np.isinf(start)
    # partners' starts, clipped to each message's own (the pad never starts)
    began = np.maximum(np.vstack([start, np.full((1, sizes), np.inf)])[partners],
                       start[:, None, :])
    target = start + work
    end = np.where(never, -np.inf, start + 2.0 * work)
    ends = np.full((count + 1, sizes), -np.inf)  # the pad's last: never in flight
    rows = np.arange(count)  # those a partner's end moved, again
    moved = np.zeros((0, sizes), dtype=bool)
    for _ in range(PAIRED_PASSES):
        ends[:count] = end
        again = np.where(never[rows], -np.inf,
                         _paired_pass(start[rows], target[rows], began[rows],
                                      ends[partners[rows]]))
        # settled where a pass moves no end by more than a few roundings
        was = end[rows]
        with np.errstate(invalid="ignore"):  # never started: -inf both times, not moved
            moved = (again != was) & (np.abs(again - was) > 4e-16 * np.abs(again))
        end[rows] = again
        # those whose partner's end moved (partners are each other's; the pad's left out)
        due = np.zeros(count + 1, dtype=bool)
        due[partners[rows[moved.any(axis=1)]]] = True
        rows = np.flatnonzero(due[:count])
        if not len(rows):
            break
    return end, np.asarray(~moved.any(axis=0))


def _paired_pass(start: np.ndarray, target: np.ndarray, began: np.ndarray,
                 ended: np.ndarray) -> np.ndarray:
    """Each message's end (:func:`_paired_ends`) where its partners are in flight from
    ``began`` (clipped to its own ``start``) to ``ended`` (messages x 2 x sizes): its
    progress from its start, ``g(t) = t - |B ∩ [start, t)| / 2`` (``B``: the union of
    its partners' spans), rises at half the speed inside ``B``, so it is through where
    ``g`` reaches ``target`` (its start plus its bytes' time alone), from the last of
    ``g``'s breaks (its start, its partners' starts and ends) that ``g`` has not passed
    it by, at the speed after that break."""
    a1, a2, b1, b2 = began[:, 0], began[:, 1], ended[:, 0], ended[:, 1]
    both, either = np.maximum(a1, a2), np.minimum(b1, b2)  # where the spans overlap

    def busy(t: np.ndarray) -> np.ndarray:  # |B ∩ [start, t)|
        return np.maximum(np.minimum(b1, t) - a1, 0.0) \
            + np.maximum(np.minimum(b2, t) - a2, 0.0) \
            - np.maximum(np.minimum(either, t) - both, 0.0)
    with np.errstate(invalid="ignore"):  # a message never started: inf - inf, left out
        breaks = np.stack([a1, b1, a2, b2])
        breaks = np.where(np.isfinite(breaks), np.maximum(breaks, start), start)
        at = np.where(breaks - busy(breaks) / 2.0 <= target, breaks, start).max(axis=0)
        inside = ((a1 <= at) & (at < b1)) | ((a2 <= at) & (at < b2))
        return at + (target - at + busy(at) / 2.0) * np.where(inside, 2.0, 1.0)


def _filled_runs(start: np.ndarray, weights: np.ndarray, nbytes: np.ndarray, cap: np.ndarray,
                 on: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """:func:`_filled_ends` of messages that each go as transfers of several kinds
    (``weights`` of each of ``nbytes``, kinds x messages x sizes; :func:`_unit_runs`):
    a message's transfers share its links and cap, so they carry alike until the
    shortest is through, and a message is one entry of as many transfers as are not yet
    through (an entry per kind made the play of 32 flat ranks' trees several times
    slower); it is through with its longest."""
    end = np.full(start.shape, -np.inf)
    kinds = (weights > 0).any(axis=(1, 2))  # those some message has
    weights, nbytes = weights[kinds], nbytes[kinds]
    real = weights > 0
    longest = np.where(real, nbytes, 0.0).max(axis=0)
    carried = np.zeros(start.shape)  # by each of a message's transfers
    waiting = start.copy()
    flying = np.zeros(start.shape, dtype=bool)
    now = start.min(axis=0)
    now[np.isinf(now)] = 0.0
    for _ in range((RUN_KINDS + 1) * 2 * len(start)):
        came = waiting <= now
        flying |= came
        waiting = np.where(came, np.inf, waiting)
        going = real & (nbytes > carried)
        rate = _max_min(flying, cap, on, capacity, np.where(going, weights, 0.0).sum(axis=0))
        # to its next transfer's end (none left: now)
        gap = np.where(going, nbytes - carried, np.inf).min(axis=0)
        gap[np.isinf(gap)] = 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            taken = np.where(flying, np.where(gap > 0, gap / np.where(flying, rate, 1.0), 0.0),
                             np.inf)
        step = np.minimum(taken.min(axis=0), waiting.min(axis=0) - now)
        if np.isinf(step).all():
            break
        step[np.isinf(step)] = 0.0
        reached = flying & (taken <= step)
        carried = np.where(reached, carried + gap,
                           np.where(flying, carried + rate * step, carried))
        ended = reached & (carried >= longest)
        end = np.where(ended, now + taken, end)
        flying &= ~ended
        now = now + step
    return end


def _max_min(flying: np.ndarray, cap: np.ndarray, on: np.ndarray,
             capacity: np.ndarray, transfers: np.ndarray | None = None) -> np.ndarray:
    """The max-min fair rates of the ``flying`` messages (messages x sizes; with
    ``transfers``, a rate of each of so many transfers side by side) over the links they
    are ``on`` (messages x links; ``capacity``: links x sizes), each at most its ``cap``,
    by progressive filling as the simulator sets them: the smallest fair share of a link
    (its room over its transfers not fixed) or cap fixes those messages, and so on."""
    # only the play on flat fills (and scipy.sparse takes 0.14 s to import)
    from scipy.sparse import csr_array
    rate = np.zeros(flying.shape)
    free = flying.copy()
    room = capacity.astype(float)
    # the sums over a link's messages as products with the links' sparse incidence:
    # messages x links x sizes taken apart cost the play of 64 flat ranks' rounds 14
    # times more, and dense products went to BLAS, whose threads spun on them (three
    # tables on ``default_flat(64)``: 23.5 CPU s and 46.5 s wall on 2 loaded cores, 3.7
    # and 7.4 s with one BLAS thread)
    links, messages = csr_array(on.T.astype(float)), csr_array(on.astype(float))
    each = np.ones(flying.shape) if transfers is None else transfers
    for _ in range(len(flying)):
        if not free.any():
            break
        many = links @ np.where(free, each, 0.0)
        share = np.where(many > 0, room / np.maximum(many, 1), np.inf)
        fair = np.minimum(share.min(axis=0), np.where(free, cap, np.inf).min(axis=0))
        tight = messages @ (share <= fair).astype(float) > 0
        fixed = free & ((cap <= fair) | tight)
        rate = np.where(fixed, fair, rate)
        # (a size whose messages are all fixed has no fair share left: inf)
        room = np.maximum(room - links @ np.where(fixed, each, 0.0)
                          * np.where(np.isinf(fair), 0.0, fair), 0.0)
        free &= ~fixed
    return rate


def _queue_ends(start: np.ndarray, real: np.ndarray, spots: np.ndarray,
                work: Callable[[np.ndarray, np.ndarray], np.ndarray], spread: np.ndarray,
                smaller: tuple[np.ndarray, Callable[..., np.ndarray]] | None,
                weight: Callable[[np.ndarray, np.ndarray], np.ndarray] | None) -> np.ndarray:
    """:func:`_shared_ends` of a round's queues (``start``: places x links x sizes, an
    empty place, not ``real``, as the queue's first; its entries ``spots``, their bytes'
    time at the link's full rate ``work(entries, sizes)`` and of ``spread``, the time
    each takes where all start together, its shared time):
    where a queue's messages start together (on most links and sizes) each is through
    its ``spread`` after (an empty place's is never read), as :func:`_shared_ends` has
    them; the others are played by it, and so is every queue where some entries carry
    a smaller part (``smaller``: whether each does, as ``start``, and their bytes' time
    then; the spread is of whole parts); an entry of ``weight(entries, sizes)``
    transfers (None: one) is that many, of its bytes each."""
    now = start.min(axis=0)
    end = now + spread[spots]
    apart = (start.max(axis=0) > now) | np.isinf(now)  # (a queue of messages left out)
    if smaller is not None:
        apart |= smaller[0].any(axis=0)
    if apart.any():
        # taken column by column (np.take: contiguous, a row per place; indexed as
        # [:, link, size], each column's few places lie together, and every reduction
        # over the places runs along short rows, many times slower)
        cells = np.flatnonzero(apart)
        link, size = np.divmod(cells, apart.shape[1])
        places = len(start)
        entries = np.take(spots, link, axis=1)
        work_at = work(entries, size)
        if smaller is not None:
            small, work_s = smaller
            work_at = np.where(np.take(small.reshape(places, -1), cells, axis=1),
                               work_s(entries, size), work_at)
        end.reshape(places, -1)[:, cells] = _shared_ends(
            np.where(np.take(real[:, :, 0], link, axis=1),
                     np.take(start.reshape(places, -1), cells, axis=1), np.inf), work_at,
            None if weight is None else weight(entries, size))
    return end


def _shared_ends(start: np.ndarray, work: np.ndarray,
                 weight: np.ndarray | None = None) -> np.ndarray:
    """When each message in a shared link's queue is through, as the simulator's link
    carries them on its own: each message (``start``, ``work``: places x links x sizes,
    its bytes' time at the link's full rate; an empty place starts at infinity; as
    ``weight`` transfers of that many bytes each, side by side, where given) from its
    own start, the link's rate shared equally among the transfers started and not
    through, re-shared whenever one starts or ends; -inf at an empty place.

    From one start to the next the messages in flight share the link as if none came:
    one with ``left_i`` to carry is through ``sum_j w_j min(left_j, left_i)`` later, if
    that is before the next start; the others each carry the same share of what is
    left of the time until then.  A pass per distinct start (one where all start
    together, as on most links)."""
    end = np.full(start.shape, -np.inf)
    now = start.min(axis=0)
    now[np.isinf(now)] = 0.0  # a queue of messages left out: none ever comes
    waiting = start  # each message's start until it comes, then infinity
    flying = np.zeros(start.shape, dtype=bool)
    left = work
    for _ in range(len(start)):
        came = waiting == now
        flying |= came
        waiting = np.where(came, np.inf, waiting)
        coming = waiting.min(axis=0)
        upto = coming - now
        share = np.where(flying, left, 0.0)
        spans = np.minimum(share[:, None], share[None, :])
        through = (spans if weight is None else spans * weight[None, :]).sum(axis=1)
        ended = flying & (through <= upto)
        end = np.where(ended, now + through, end)
        if np.isinf(coming).all():
            break
        flying &= ~ended
        # the others' level: the time left once the ended are through, shared equally
        many = flying if weight is None else np.where(flying, weight, 0.0)
        done = share if weight is None else share * weight
        # (a transfer each at least: a weight is at least 1)
        level = (upto - np.where(ended, done, 0.0).sum(axis=0)) \
            / np.maximum(many.sum(axis=0), 1)
        left = np.where(flying, share - level, left)
        now = np.where(np.isinf(coming), now, coming)  # a queue all come stays put
    return end


def _dense_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers >= 0, by a table of them
    where they are few enough to (no sort: a round's kinds are rows by shared links,
    a few thousand at most, over a play's hundreds of thousands of messages)."""
    top = int(values.max(initial=0)) + 1
    if top > 4 * len(values) + 4096:
        return np.unique(values, return_inverse=True)
    present = np.zeros(top, dtype=bool)
    present[values] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]


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


def _side_runs(tables: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """The :meth:`_Described._run_play` figures of parts played side by side (None where
    they have none): their units padded to the most any has, their sizes side by side,
    no reduction where only some reduce."""
    if tables[0] is None:
        return None
    units = max(t[0].shape[2] for t in tables)

    def padded(table: np.ndarray, axis: int) -> np.ndarray:
        width = [(0, 0)] * table.ndim
        width[axis] = (0, units - table.shape[axis])
        return np.pad(table, width)
    weights = np.concatenate([padded(t[0], 2) for t in tables], axis=-1)
    sizes = np.concatenate([padded(t[1], 2) for t in tables], axis=-1)
    reduction = None if all(t[2] is None for t in tables) else np.concatenate(
        [padded(np.zeros(t[0].shape[1:]) if t[2] is None else t[2], 1) for t in tables],
        axis=-1)
    return weights, sizes, reduction


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


class _Described:
    """A description on one machine's orders: its :class:`_Layout`, every class's
    messages, and per block its coefficients of the slowest message and of the chain's
    crossing (a chain's: its hops once, its slowest ``chain - 1`` times; ``repeat``
    rounds: their slowest); with ``groups`` of orders, every class's group (its
    messages are of the group's count)."""

    __slots__ = ("layout", "messages", "slow", "cross", "sizes", "class_size", "flags",
                 "span", "front", "cut", "cut_of", "blocks", "group", "pieced", "cut_at",
                 "positions", "windows", "carries")

    def __init__(self, topology: Any, orders: Orders, rounds: tuple[Any, ...],
                 groups: Groups, fill: int = FILL_MESSAGES) -> None:
        self.layout = layout = _layout(topology, orders, rounds, groups, fill)
        many = layout.groups
        self.messages = [rounds[i].messages[c // many] for i, _, owners in layout.blocks
                         for c in owners]
        self.group = np.array([c % many for _, _, owners in layout.blocks for c in owners],
                              dtype=np.int64)
        coefficients = [{"repeat": (0 if r.paced else r.repeat, 0.0),
                         "chain": (r.chain - 1, 1.0)}[role]
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
        # where every class says where what it cuts starts, each unit's runs of the
        # buffer (:meth:`_run_table`)
        self.cut_at = [m.cut_at for m in self.messages] \
            if filled and all(m.cut_at is not None and m.cut for m in self.messages) else None
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

    def time(self, topology: Any, terms: Sequence[tuple[Any, ...]], counts: np.ndarray,
             ds: int, piece: np.ndarray | None, apart: bool = False,
             silent: bool = False) -> tuple[np.ndarray, list[tuple[Any, ...]] | None]:
        """Seconds at every count (elements of each group's orders: groups x counts) under
        each of ``terms`` (a protocol's link
        latency and bandwidth, FIFO slot, link shares and seconds per byte reduced, as
        :func:`simulator.gpu.link_figures` gives them; protocols x counts): over the
        blocks, the slowest message times its coefficient plus the chain's crossing (the
        sum over its hops) times its, and the paced rounds (:meth:`_stretched`); but
        where the paced rounds are played (:attr:`_Layout.flow`) they are left out, and
        what :meth:`_Flow.time` plays them from is returned per protocol (else None).
        ``apart``: every message's blocks lie apart in the buffer, in runs of ``piece``
        bytes (groups x counts; a composed algorithm's phase), not only those its
        description says are pieced.  ``silent``: a group of no elements sends nothing
        (:attr:`collectives.registry.Algorithm.empty_sends`)."""
        if not self.messages:
            return np.zeros((len(terms), counts.shape[1])), None
        layout = self.layout
        elements = np.array([size(counts[g]) for size, g in self.sizes], dtype=float) * ds
        sized = elements[self.class_size]
        nbytes = sized[layout.row_class]
        group = self.group[layout.row_class]
        reduce, pieced, skip_empty = self.flags[:, 0], self.flags[:, 1] | apart, \
            self.flags[:, 2]
        first = _link_classes(topology)[1]
        # a message over several runs of the buffer shares its links as a transfer per
        # run, as the simulator's flows do: hier's inner tree AllGather sends a subtree's
        # blocks (apart in the buffer) on a NIC beside a one-block message, which gets a
        # transfer's share, not a message's (dgx_h100(64), LL, 64 MiB: -4.2% -> -0.4%)
        runs = self._runs(sized, piece, apart, counts, ds) if piece is not None else None
        shared = self._shared(sized, runs)
        sent = ~(skip_empty & (nbytes <= 0))
        if silent:
            sent = sent & (counts[group] > 0)
        for carries, g, rows in self.carries:  # a message that carries nothing is not sent
            sent[rows] &= carries(counts[g])[layout.row_kind[rows]] | ~skip_empty[rows]
        # a message over several runs of the buffer goes as a transfer per run, side by
        # side: each hides its latency behind its own bytes and is reduced on its own
        own = nbytes if runs is None else runs[1][layout.row_class]
        transfers = None if runs is None else runs[0][layout.row_class]
        smaller = self._smaller(counts, ds, sized, piece, pieced)
        # a composed algorithm's phase lies in runs of its own (``apart``)
        table = None if piece is None or apart or self.cut_at is None else \
            self._run_table(counts, ds, piece)
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
            plays.append((*play, None if smaller is None else (units, small),
                          None if table is None else self._run_play(table, reduce, gamma)))
        return out, (plays if layout.flow is not None else None)

    def _run_table(self, counts: np.ndarray, ds: int,
                   piece: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row, per unit its messages carry (:attr:`Messages.cut
        <collectives.traffic.Messages.cut>`) and per count, the transfers it goes as,
        one per run of the buffer it meets (:func:`_unit_runs`; runs of its group's
        vector, ``counts``, whose longest is ``piece`` bytes, groups x counts): how many
        of each of :data:`RUN_KINDS` kinds and their bytes (each kinds x rows x units x
        counts).  The ``b / f`` rule of :meth:`_runs` is off where a unit's first and
        last runs are parts (``default_flat(3)``, tree ReduceScatter over 3 channels at
        4 segments and ``1 << 20`` elements: +0.98%)."""
        units = int((self.cut * self.blocks[:, 0]).max(initial=1))
        shape = (RUN_KINDS, len(self.messages), units, counts.shape[1])
        weights, sizes = np.zeros(shape), np.zeros(shape)
        # classes of one unit (the whole of what each cuts, from where it starts) taken
        # together: a tree AllGather's are hundreds
        single: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for c, (at, whole) in enumerate(zip(self.cut_at or [], self.cut_of)):
            g = self.group[c]
            mine = counts[g]
            cut = mine if whole is None else whole(mine)
            if self.cut[c] * self.blocks[c, 0] == 1:
                single.append((c, at(mine), cut, mine, piece[g] // ds))
                continue
            start, length = _unit_spans(cut, int(self.cut[c]), int(self.blocks[c, 0]),
                                        bool(self.blocks[c, 1]), at(mine))
            w, e = _unit_runs(start, length, mine, self.positions, piece[g] // ds)
            weights[:, c, :len(start)], sizes[:, c, :len(start)] = w, e * ds
        if single:
            rows = [c for c, *_ in single]
            start, length, mine, longest = (np.array([one[k] for one in single])
                                            for k in range(1, 5))
            w, e = _unit_runs(start, length, mine, self.positions, longest)
            weights[:, rows, 0], sizes[:, rows, 0] = w, e * ds
        return weights[:, self.layout.row_class], sizes[:, self.layout.row_class]

    @staticmethod
    def _run_play(table: tuple[np.ndarray, np.ndarray], reduce: np.ndarray,
                  gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The play's figures of a :meth:`_run_table`: its transfers and their bytes,
        and every row's reduction of each unit (rows x units x counts; None where none
        reduces): a transfer's bytes are reduced as they arrive, the largest last."""
        weights, sizes = table
        if not (gamma and reduce.any()):
            return weights, sizes, None
        largest = np.where(weights > 0, sizes, 0.0).max(axis=0)
        return weights, sizes, np.where(reduce[:, :, None], gamma * largest, 0.0)

    def _runs(self, sized: np.ndarray, piece: np.ndarray, apart: bool, counts: np.ndarray,
              ds: int) -> tuple[np.ndarray, np.ndarray]:
        """Per class (x counts) how many transfers its messages of ``sized`` bytes are,
        one per run of the buffer (runs of ``piece`` bytes, groups x counts, where they
        are pieced or ``apart``), and the bytes of each: taken as ``b / f`` transfers of
        the run's ``f`` bytes, ``b`` in all (the runs but a message's first and last are
        whole); but a class of one window of its group's vector (of ``counts``
        elements, ``ds`` bytes each) at the longest run it meets (:meth:`_window_runs`)."""
        pieced = self.pieced | apart
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
                runs: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
        """Every row's bytes' time on each link of its route at the link's full rate
        (rows x links x counts) from its class's bytes (``sized``, classes x counts): a
        link shared by transfers of ``f_i`` bytes (max-min, as the simulator shares it)
        carries one of ``f`` bytes in ``sum_i min(f_i, f) / bandwidth``; a message is a
        transfer, or, with ``runs`` (:meth:`_runs`), a transfer per run, through with
        its longest."""
        layout = self.layout
        mine, theirs, many = layout.expanded.T
        if runs is None:
            load = many[:, None] * np.minimum(sized[theirs], sized[mine])
        else:
            transfers, own = runs
            load = many[:, None] * transfers[theirs] * np.minimum(own[theirs], own[mine])
        return np.add.reduceat(load, layout.pair_rows, axis=0)[layout.pair]

    def _smaller(self, counts: np.ndarray, ds: int, sized: np.ndarray,
                 piece: np.ndarray | None, pieced: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """Where a played class carries units one a round (:attr:`Messages.cut
        <collectives.traffic.Messages.cut>`) and some are one element smaller than its
        ``sized`` bytes, at some of ``counts``: which units (:func:`_unit_sizes`, per
        row, 5 x rows x counts), and the rows' shared time on each link, bytes and
        bytes per transfer at the smaller unit; else None (the play charges every unit
        as the class's ``sized`` bytes)."""
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

    def _priced(self, routes: tuple[np.ndarray, np.ndarray, Any], shared: np.ndarray,
                nbytes: np.ndarray, own: np.ndarray, sent: np.ndarray,
                reduced: tuple[np.ndarray, float, float | None],
                transfers: np.ndarray | None) -> tuple[np.ndarray, tuple[Any, ...]]:
        """Seconds at every count under one protocol, from every row's route's
        ``routes`` (latency, its links' bandwidth, shares), its bytes' ``shared`` time
        on each link at full rate, its ``nbytes``, its ``own`` bytes per transfer,
        whether it is ``sent`` and ``reduced`` (whether it is, seconds per byte, the FIFO
        slot); and what :meth:`_Flow.time` plays the paced rounds from (they are left
        out of the seconds where :attr:`_Layout.flow` plays them), a message as
        ``transfers`` of its ``own`` bytes where they are given (:meth:`_runs`)."""
        layout = self.layout
        latency, bandwidth, shares = routes
        reduce, gamma, slot = reduced
        rate = bandwidth.min(axis=1)[:, None]
        spread = shared / bandwidth[:, :, None]  # on each link of the route
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
        play = (paid, spread, bandwidth, (nbytes if transfers is None else own) / rate,
                reduction, sent, transfers)
        return (lock_step if layout.flow is not None else lock_step + self._stretched(time),
                play)

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


_DESCRIBED: dict[Any, tuple[tuple[Any, ...], _Described]] = {}


def _described(topology: Any, orders: Orders, rounds: tuple[Any, ...],
               groups: Groups) -> _Described:
    """:class:`_Described` of ``rounds`` on ``orders`` of ``topology`` in ``groups``
    (cached); held paced rounds played (:func:`_unheld`): on a machine of alike links
    where every rank is played (:func:`_played`), filled up to :data:`UNHELD_RANKS`
    ranks, past that where each port carries at most two of a round's messages, else
    each port's queue on its own (past the play's budgets, held to the chain's
    front, :func:`_front`); elsewhere where every rank is sampled and messages of
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
            return _Described(topology, orders, rounds, groups)
        hops = _layout(topology, orders, rounds, groups, FILL_MESSAGES).hops
        unheld = hops is not None and bool(_crossed_links(hops, 0).any())
        return _Described(topology, orders, _unheld(rounds) if unheld else rounds, groups)
    key = (topology, id(orders), id(rounds), groups)
    return _cached(_DESCRIBED, key, (orders, rounds), make)


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


def _queues_played(alike: bool, rounds: tuple[Any, ...]) -> bool:
    """Whether the play of paced ``rounds`` (:class:`_Flow`) carries each shared link's
    queue from its messages' own starts, else each message at its lock-step share of
    every link (its row's, as if the messages sharing it started together): queued but
    on a machine of unlike links (``alike``: False) where every message is in flight in
    one round (rhd's steps, :func:`_stepped`).  There a queue's late messages, held back
    on another link, are not seen: rhd on ``dgx_h100(128)`` at 64 MiB, LL, queued was
    -6.8% (AllGather; ReduceScatter -5.7%, recursive doubling -5.1%) against the DES,
    unqueued -2.1%, as the lock-step rounds; on 33, 65 and 100 nodes (the fold's extra
    ranks ahead of the rounds) unqueued is within 0.4% of the DES at 4 B to 4 KiB (65
    nodes queued: exact)."""
    return alike or _stepped(rounds) is None


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


_WINDOWED: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}


def _windowed(rounds: tuple[Any, ...], q: int) -> tuple[Any, ...]:
    """``rounds`` on ``q`` positions with every class that says its messages' windows
    (:attr:`collectives.traffic.Messages.windows`) a class per window, each of its
    window's elements, so that each message is priced at its own (:meth:`_Described._runs`)
    (cached by the description; ``rounds`` themselves where none says)."""
    def make() -> tuple[Any, ...]:
        if all(m.windows is None for r in rounds for m in r.messages):
            return rounds
        return tuple(dataclasses.replace(r, messages=tuple(
            one for m in r.messages for one in _by_window(m, q))) for r in rounds)
    return _cached(_WINDOWED, id(rounds), (rounds,), make)


def _by_window(messages: Any, q: int) -> tuple[Any, ...]:
    """A class (:class:`collectives.traffic.Messages`) as a class per window its messages
    carry (itself where it says none)."""
    if messages.windows is None:
        return (messages,)
    windows, which = np.unique(messages.windows, axis=0, return_inverse=True)
    out = []
    for k, (lo, hi) in enumerate(windows.tolist()):
        mine = which.reshape(-1) == k
        out.append(dataclasses.replace(
            messages, src=messages.src[mine], dst=messages.dst[mine],
            elements=_window_part(q, lo, hi), windows=messages.windows[mine],
            rounds=None if messages.rounds is None else messages.rounds[mine]))
    return tuple(out)


def _window_part(q: int, lo: int, hi: int) -> Callable[[np.ndarray], np.ndarray]:
    """Elements of blocks ``lo`` to ``hi`` (not included) of the vector cut into ``q``
    near-equal blocks (:func:`collectives.layout.split`: the first ones one larger)."""
    def elements(count: np.ndarray) -> np.ndarray:
        size, extra = np.divmod(count, q)
        return (hi - lo) * size + np.clip(extra - lo, 0, hi - lo)
    return elements


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
               piece: np.ndarray | None, apart: bool = False) -> np.ndarray:
    """One flat algorithm over ``orders`` (its channels and groups), each order carrying
    ``counts`` elements (orders x sizes, or a row: every order alike), under each of
    ``terms`` (protocols x sizes), its messages in runs of ``piece`` bytes (as
    ``counts``) where they are pieced, every one where ``apart``
    (:meth:`_Described.time`): the orders of equal elements at a size are a group, each
    priced at its own (:func:`_channel_groups`); the paced rounds that a description's
    :class:`_Flow` plays (it is shared by the descriptions of the same positions, at
    every count where they resolve alike) are played once for every protocol and
    description."""
    q, sizes = len(orders[0]), counts.shape[1]
    if q < 2:
        return np.zeros((len(terms), sizes))
    entry = registered(algorithm)
    given = tuple(sorted(params.items()))
    grouped = _channel_groups(counts)
    # the parameters each group's count resolves (the largest's first)
    resolved = [(tuple(dict.fromkeys(_resolved(entry, collective, q, n, given)
                                     for n in elements[:, 0].tolist())), groups)
                for groups, elements in grouped]
    out = np.zeros((len(terms), sizes))
    plays: dict[int, tuple[_Flow, list[tuple[int, np.ndarray, tuple[Any, ...]]]]] = {}
    for keys, groups in dict.fromkeys(resolved):
        at = np.array([r == (keys, groups) for r in resolved])
        taken = np.flatnonzero(at)
        elements = np.hstack([grouped[j][1] for j in taken.tolist()])
        # each group's runs: those of one of its orders (alike in a group)
        pieces = None if piece is None else \
            piece[np.unique(groups, return_index=True)[1] if groups else [0]][:, at]
        rounds = _merged(collective, algorithm, q, given, keys)
        # each window its own class where every rank is priced anyway: rhd's windows
        # are 2 (q - 1) (past 64 ranks, at most +1.2e-3 at 2 and 3 channels on
        # default_flat(65), (80); a class per window there too was exact at 65, 80 and
        # 128 ranks, but priced rhd's ReduceScatter over 2 channels on 512 ranks in 1.22
        # CPU s against 0.76, on 2,048 in 22.0 against 11.0)
        if piece is not None and not apart and topology.nranks <= SAMPLE_ALL_RANKS and \
                len(_link_classes(topology)[1]) == 1:
            rounds = _windowed(rounds, q)
        described = _described(topology, orders, rounds, groups)
        out[:, at], inputs = described.time(topology, terms, elements, ds, pieces, apart,
                                            not entry.empty_sends)
        flow = described.layout.flow
        if inputs is not None and flow is not None:
            plays.setdefault(id(flow), (flow, []))[1].extend(
                (k, at, play) for k, play in enumerate(inputs))
    for flow, parts in plays.values():
        for (k, at, _), played in zip(parts, flow.played([play for _, _, play in parts])):
            out[k, at] += played
    if not entry.empty_sends:  # an empty vector sends nothing
        out[:, (counts == 0).all(axis=0)] = 0.0
    return out


@functools.lru_cache(maxsize=256)
def _merged(collective: str, algorithm: str, q: int, given: tuple[tuple[str, Any], ...],
            keys: tuple[tuple[tuple[str, Any], ...], ...]) -> tuple[Any, ...]:
    """The description of channels whose counts resolve ``algorithm``'s parameters
    (``given``) to each of ``keys`` (a tree's segments, fewer where a channel holds
    few elements), cached: their rounds side by side (:func:`_side_rounds`), each
    class carrying nothing at a count that resolves to another's (so left out: its
    messages skip empty ones); the first's alone where they cannot be."""
    described = [describe(collective, algorithm, q, key) for key in keys]
    merged = _side_rounds(described) if len(keys) > 1 and all(
        m.skip_empty for rounds in described for r in rounds for m in r.messages) else None
    if merged is None:
        return described[0]
    entry = registered(algorithm)

    def masked(elements: Callable[[np.ndarray], np.ndarray],
               key: tuple[tuple[str, Any], ...]) -> Callable[[np.ndarray], np.ndarray]:
        def carried(counts: np.ndarray) -> np.ndarray:
            own = [_resolved(entry, collective, q, n, given) == key for n in counts.tolist()]
            return np.where(own, elements(counts), 0)
        return carried
    return tuple(dataclasses.replace(r, messages=tuple(
        dataclasses.replace(m, elements=masked(m.elements, keys[d])) for d, m in classes))
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
    return orders, tuple(added.items())


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
        total = np.zeros((len(terms), len(counts)))
        for phase in phases:
            total += _phase_time(collective, phase, topology, terms, counts, ds, channels)
        return total
    orders, added = _placed(algorithm, channels, topology, nranks)
    parts, piece = _channel_parts(collective, topology, orders, counts, ds)
    priced = _flat_time if len(_link_classes(topology)[1]) == 1 else _unlike_time
    return priced(collective, algorithm, topology, terms, orders, parts, ds,
                  {**params, **dict(added)}, piece)


def _unlike_time(collective: str, algorithm: str, topology: Any,
                 terms: Sequence[tuple[Any, ...]], orders: Orders, counts: np.ndarray,
                 ds: int, params: dict[str, Any], piece: np.ndarray | None) -> np.ndarray:
    """:func:`_flat_time` on a machine of unlike links, each channel at its own part
    (``counts``, orders x sizes; its runs ``piece``, as ``counts`` or a row): where the
    parts at a size are within :data:`NEAR_PARTS` of the largest, in groups of equal
    parts (:func:`_channel_groups`, as on flat); elsewhere every distinct part (and
    run) priced with every order carrying it, on the orders' one layout, and the
    slowest taken (:func:`_slowest_part`).  The parts say which channels send nothing
    and how each channel's blocks are cut: two DGX nodes' tree AllGather at 12, 388
    and 4,000,012 bytes, every channel charged ``ceil(count / C)``, was -32%, +28%
    and +5.2% against the DES.  Groups at every size (a layout for each pattern of
    parts) cost the three tables on 16 DGX nodes 2.4 -> 4.9 CPU s and on 128 nodes
    6.1 -> 18.4; parts far apart are few elements a block, where how channels of
    unequal parts share links is not what the time is made of."""
    low, high = counts.min(axis=0), counts.max(axis=0)
    near = (low < high) & (high - low <= NEAR_PARTS * high)
    out = np.empty((len(terms), counts.shape[1]))
    if near.any():
        out[:, near] = _flat_time(collective, algorithm, topology, terms, orders,
                                  counts[:, near], ds, params,
                                  None if piece is None else piece[:, near])
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
    elements = _ceil_div(_ceil_div(counts, phase.fraction), channels)
    # a group's vector lies in the phase's blocks apart in the buffer, and a channel
    # takes its part of each group rank's block (:func:`collectives.compose.channel_parts`):
    # runs of a whole block of the buffer or of that part, the smaller; every message
    # over several (a ring's block too) goes as a transfer per run
    piece = np.minimum(_piece(phase.piece, counts, ds),
                       _ceil_div(elements, len(phase.groups[0])) * ds)[None, :] \
        if phase.piece is not None and cut else None
    return _flat_time(phase.collective, phase.algorithm, topology, terms, orders,
                      elements[None, :], ds, {}, piece, apart=True)


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
