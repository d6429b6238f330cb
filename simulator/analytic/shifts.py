"""Shift rounds played as fluid events: lock-step rounds in each of which every position
``v`` sends its messages to ``v + s`` (Bruck's AllGather: :func:`_shift_rounds` reads it
off the description), on one order of a machine of unlike links whose links some of
them cross from several senders to several receivers (a DGX's spines), every rank's
messages within :data:`simulator.analytic.budgets.SHIFT_MESSAGES`.

As lock-step rounds (each as long as its slowest message, every message at the share
of the round's messages on its links) Bruck's AllGather on ``dgx_h100(56..128)`` at
node counts that are not powers of two was -7.7% to +8.7% against the DES at 64 MiB:
from the rounds that cross the leaves on, a few spine links carry several messages of
a round, the ranks drift apart, and two errors of either sign follow.  A round's
messages that start late share the spine links with the next round's (twice the
transfers each), which the lock-step shares miss (96 nodes, -7.7%); and the lock-step
sum adds each round's slowest message though they lie on different ranks (72 nodes,
+8.7%).  Here every rank's messages are played as the simulator runs them
(:func:`.shift_play._play`, compiled): a message's bytes start its latency left
(:func:`simulator.gpu.hidden_latency`) after both its ends are done with the round
before, and go as a transfer per run of the buffer (as :meth:`._Described._runs`
counts them), each of a link's transfers in flight taking an equal share of it and a
transfer the least share over its route, set again on a message's links whenever it
starts or ends.

As for the exchange rounds (:mod:`.exchange`), the play is run at the bytes alone
once per machine, order and links' relative rates (shared by LL, LL128 and Simple on
``dgx_h100``, whose rates scale alike), each message's seconds a byte taken from it;
where the latency and the bytes both count, at anchor sizes with the latency
(:func:`.exchange._anchors`), each size's seconds a byte interpolated between them
(:func:`.exchange._anchor_fractions`).  Every size is then played by the ranks' clocks
(:func:`.exchange._played`: a position starts a round once it and its partner are done
with the one before), each message its latency left and its bytes at those seconds a
byte.  On ``dgx_h100(49..128)`` under LL, LL128 and Simple at 1 MiB to 1 GiB it is
within 2% of the DES (see ``docs/analytic_model.md``).
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from collectives.traffic import Round

from ..gpu import hidden_latency
from .budgets import SHIFT_MESSAGES
from .exchange import _anchor_fractions, _anchors, _crossed, _played, _relative
from .routing import _route_figures

#: the slowest message's bytes' fractions of its time between which sizes are anchors
#: (:func:`.exchange._anchors`), played with their latency: the latency moves the ranks'
#: drift even where it is little of the slowest message's time (``dgx_h100(96)``,
#: Simple at 64 MiB: 2.6% of it, and the bytes alone's play 2.1% over the size's own)
SHIFT_MIXED = (0.05, 0.999)
#: anchors at most so many times apart (:func:`.exchange._anchors`)
SHIFT_ANCHOR_RATIO = 4


def _shift_rounds(rounds: Sequence[Any], q: int) -> tuple[int, ...] | None:
    """The shifts of ``rounds`` (a description, :func:`collectives.traffic.describe`) where
    they are shift rounds over ``q`` positions: lock-step rounds, each once, of plain
    classes (unreduced, sent though empty, every message carrying its class's
    elements) in which every position sends and every message goes ``s`` positions on
    (mod ``q``), one ``s`` a round; else None."""
    shifts = []
    for r in rounds:
        if not isinstance(r, Round) or r.paced or r.chain or r.repeat != 1 or not r.messages:
            return None
        moved = set()
        sends = np.zeros(q, dtype=bool)
        for m in r.messages:
            if m.reduce or m.skip_empty or m.cut or len(m.src) == 0 or any(
                    x is not None for x in (m.rounds, m.windows, m.kinds, m.sizes)):
                return None
            moved.update(np.unique((m.dst - m.src) % q).tolist())
            sends[m.src] = True
        if len(moved) != 1 or 0 in moved or not sends.all():
            return None
        shifts.append(moved.pop())
    return tuple(shifts) or None


class _Shifts:
    """Every message of shift rounds over one order and the links of its route, the
    rounds' classes one after another.

    Attributes
    ----------
    q : int
        The positions.
    shifts : tuple of int
        Each round's shift.
    classes : list of Messages
        Every round's classes in turn.
    cls, src, dst, rounds : numpy.ndarray
        Per message its class (in ``classes``), its sender's and receiver's positions
        and its round.
    heads, links : numpy.ndarray
        Message ``i``'s route is ``links[heads[i]:heads[i + 1]]``.
    involved, involving : numpy.ndarray
        ``involving[involved[k q + x]:involved[k q + x + 1]]``: the messages of round
        ``k`` that position ``x`` sends or receives.
    sent, sent_heads : numpy.ndarray
        The messages by round and sender, and where each ``(round, sender)``'s begin.
    crossed : bool
        Whether a link carries several senders' and several receivers' messages (else
        no message's bytes are ever in flight with another's).
    """

    def __init__(self, topology: Any, order: tuple[int, ...], rounds: Sequence[Round],
                 shifts: tuple[int, ...]) -> None:
        self.q, self.shifts = len(order), shifts
        self.classes = [m for r in rounds for m in r.messages]
        number = np.repeat(np.arange(len(rounds)), [len(r.messages) for r in rounds])
        self.cls = np.repeat(np.arange(len(self.classes)), [len(m.src) for m in self.classes])
        self.src = np.concatenate([m.src for m in self.classes]).astype(np.int64)
        self.dst = np.concatenate([m.dst for m in self.classes]).astype(np.int64)
        self.rounds = number[self.cls].astype(np.int64)
        ranks = np.asarray(order, dtype=np.int64)
        lengths, links = topology.routes(ranks[self.src], ranks[self.dst])
        self.links = np.asarray(links, dtype=np.int64)
        self.heads = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ends = np.concatenate([self.rounds * self.q + self.src, self.rounds * self.q + self.dst])
        by_end = np.argsort(ends, kind="stable")
        self.involving = (by_end % len(self.src)).astype(np.int64)
        self.involved = np.searchsorted(ends[by_end], np.arange(len(rounds) * self.q + 1))
        sender = self.rounds * self.q + self.src
        self.sent = np.argsort(sender, kind="stable")
        self.sent_heads = np.searchsorted(sender[self.sent], np.arange(len(rounds) * self.q))
        message = np.repeat(np.arange(len(self.src)), lengths)
        self.crossed = bool(_crossed(self.links, self.src[message], self.dst[message]).any())


@functools.lru_cache(maxsize=4)
def _shifts(topology: Any, order: tuple[int, ...], rounds: tuple[Any, ...]) -> _Shifts | None:
    """The shift rounds ``rounds`` over ``order`` on ``topology`` where they are played
    (cached): shift rounds (:func:`_shift_rounds`) of at most :data:`SHIFT_MESSAGES`
    messages, some of whose links are crossed (:attr:`_Shifts.crossed`); else None."""
    shifts = _shift_rounds(rounds, len(order))
    if shifts is None or sum(len(m.src) for r in rounds for m in r.messages) > SHIFT_MESSAGES:
        return None
    played = _Shifts(topology, order, rounds, shifts)
    return played if played.crossed else None


def _shift_time(played: _Shifts, terms: Sequence[tuple[Any, ...]], counts: np.ndarray,
                ds: int, piece: np.ndarray | None) -> np.ndarray:
    """Seconds of the shift rounds ``played`` at every count (elements of the vector;
    its blocks in runs of ``piece`` bytes, as ``counts``, or None: one run), under each
    of ``terms`` (a protocol's link latency, bandwidth, FIFO slot, shares and seconds per
    byte reduced, per link, as :func:`simulator.gpu.link_figures` gives them):
    protocols x counts."""
    own, weight = _transfers(played, counts, ds, piece)
    sizes = counts.astype(float) * ds
    out = np.empty((len(terms), len(counts)))
    for k, (latency, bandwidth, slot, shares, _) in enumerate(terms):
        bandwidth = np.asarray(bandwidth, dtype=float)
        delay, rate, most = _route_figures(played.links, played.heads[:-1],
                                           np.asarray(latency), bandwidth, shares)
        paid = hidden_latency(delay[:, None], own, rate[:, None], slot,
                              most if np.isscalar(most) else most[:, None])
        rows, fractions = _per_byte(played, bandwidth, paid, own, weight, sizes)
        took = paid + (rows.T @ fractions) * own
        per_sender = np.maximum.reduceat(took[played.sent], played.sent_heads, axis=0)
        out[k] = _played(played.shifts, played.q, lambda block: per_sender[block])
    return out


def _transfers(played: _Shifts, counts: np.ndarray, ds: int,
               piece: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per message the bytes of each of its transfers at every count (messages x
    counts) and how many transfers it goes as, side by side (at the largest count): a
    message of a pieced class over several runs of ``piece`` bytes is a transfer per
    run, of the run's bytes (as :meth:`._Described._runs` takes them)."""
    sized = np.array([m.elements(counts) for m in played.classes], dtype=float) * ds
    own = sized.copy()
    if piece is not None:
        pieced = np.array([m.pieced for m in played.classes])
        own[pieced] = np.minimum(sized[pieced], piece)
    largest = int(np.argmax(counts))
    weight = np.ones(len(played.classes))
    np.divide(sized[:, largest], own[:, largest], out=weight, where=own[:, largest] > 0)
    return own[played.cls], weight[played.cls]


def _per_byte(played: _Shifts, bandwidth: np.ndarray, paid: np.ndarray, own: np.ndarray,
              weight: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every message's seconds a byte at a few sizes (rows x messages) and the weights
    of those rows at every one of ``sizes`` (the vector's bytes; rows x sizes): played
    at the bytes alone above the largest anchor (:func:`.exchange._anchors`: the latency
    left, ``paid``, little of the slowest message's time), else interpolated between
    the anchors, each played with its latency (messages x sizes: ``paid`` and every
    transfer's bytes ``own``)."""
    largest = int(np.argmax(sizes))
    alone = _alone(played, _relative(bandwidth), own[:, largest].tobytes(),
                   weight.tobytes()) / bandwidth.max()
    slowest = int(np.argmax(alone * own[:, largest]))
    anchors = _anchors(sizes, paid[slowest], alone[slowest] * own[slowest], SHIFT_MIXED,
                       SHIFT_ANCHOR_RATIO)
    rows = [alone]
    for n in anchors[::-1].tolist():
        at = int(np.flatnonzero(sizes == n)[0])
        rows.append(_seconds_a_byte(played, paid[:, at], own[:, at], weight, bandwidth))
    return np.array(rows), _anchor_fractions(sizes, anchors)


@functools.lru_cache(maxsize=8)
def _alone(played: _Shifts, relative: bytes, own: bytes, weight: bytes) -> np.ndarray:
    """Per message its seconds a byte played at the bytes alone, each transfer of
    ``own`` bytes (per message), the links' rates ``relative``
    (:func:`.exchange._relative`, the fastest 1 B/s)."""
    nbytes = np.frombuffer(own).copy()
    return _seconds_a_byte(played, np.zeros(len(nbytes)), nbytes, np.frombuffer(weight).copy(),
                           np.frombuffer(relative).copy())


def _seconds_a_byte(played: _Shifts, paid: np.ndarray, own: np.ndarray, weight: np.ndarray,
                    bandwidth: np.ndarray) -> np.ndarray:
    """Per message its bytes' seconds over its transfers' bytes (``own``; 0 where none),
    every rank's messages played as fluid events (:func:`.shift_play._play`), each
    paying ``paid`` first, as ``weight`` transfers side by side, on links of
    ``bandwidth``."""
    from .shift_play import _play  # Numba, imported where shift rounds are played only
    start, end = _play(np.ascontiguousarray(paid), np.ascontiguousarray(own), weight,
                       played.src, played.dst, played.rounds, played.heads, played.links,
                       bandwidth, played.involved, played.involving, played.q)
    out = np.zeros(len(own))
    np.divide(end - start, own, out=out, where=own > 0)
    return out
