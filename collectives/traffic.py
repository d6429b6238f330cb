"""What an algorithm's communication looks like, for the analytic model to price.

Every algorithm (:mod:`collectives.registry`) has a ``traffic`` function that describes its
messages on ``q`` positions as lock-step :class:`Round` s, each a few :class:`Messages`
classes in flight together: a ring's every hop alike, one class per mask of recursive
halving-doubling and its folds, a tree's streams by depth, a chain's segments, or,
for a composed algorithm, its :class:`Phase` s (a flat algorithm on groups of ranks).
Positions are those of the algorithm's rank order; the pricing function
(:mod:`simulator.analytic`) maps them to ranks per channel, reads the machine's routes
for a sample of them and sums, round by round, the slowest message of each round.

The classes hold positions as NumPy arrays and the size of their largest message as a
function of the vector's element count (vectorised over counts), so that the description
is made once per algorithm, collective, rank count and parameters, and priced at every
size at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from .registry import algorithm as registered

__all__ = ["Messages", "Round", "Phase", "describe", "largest_part", "last_parts",
           "window_part", "nested_part", "channel_counts", "channel_runs", "phase_counts"]

#: counts (elements of the vector, one per size) -> elements of a class's largest message
Elements = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class Messages:
    """A class of messages sent together: ``src[i] -> dst[i]`` (positions).

    Attributes
    ----------
    src, dst : numpy.ndarray
        Positions of the senders and receivers (int arrays of one length).
    elements : callable
        Element counts of the vector (array) -> elements of the class's largest message.
    reduce : bool
        Whether the receiver reduces what it receives.
    pieced : bool
        Whether a message spanning several runs of the buffer is received as several
        receives, reduced side by side (rhd's windows, a tree's segments), rather than as
        one (a ring's or chain's block, laid out as one).
    skip_empty : bool
        Whether a message of no elements is left out (it costs nothing) rather than sent
        (it costs its latency).
    rounds : numpy.ndarray or None
        For a paced round (:attr:`Round.paced`): per message the first round it is in
        flight and the round after its last (``(n, 2)`` ints), one message of
        ``elements`` in each round between.
    cut : int
        For a paced class, 0 (every round carries ``elements``) or the parts a message
        carries one a round: the vector (or what ``cut_of`` makes of it) is cut into
        ``blocks`` near-equal blocks and each block into ``cut`` near-equal parts
        (:func:`collectives.layout.split`: the first ones one element larger where some
        are), its units; in the ``k``-th round it is in flight, message ``i`` carries
        unit ``units[i] + k`` (0 without ``units``) of them taken block by block, each
        block's parts in order, from the first block, or, ``backward``, from the last
        (each unit ``elements``' figure or one element fewer), as a chain's AllReduce
        segments (one block), its ReduceScatter's and AllGather's segments of every
        rank's block and a tree's segments of its half go (the model reads it where it
        plays the paced rounds rank by rank on a machine of alike links).
    cut_of : callable or None
        For a cut class, element counts of the vector -> elements of what it cuts
        (a tree's half); None: the vector itself.
    cut_at : callable or None
        For a cut class, element counts of the vector -> the element at which what it
        cuts starts in the vector (a tree's half), where the model is to price each
        unit over the runs of the buffer it meets (a ReduceScatter's channel vector
        lies in runs apart: each unit goes as a transfer per run); None: not said.
    blocks : int
        Blocks the vector is cut into before its ``cut`` parts (a cut class's).
    backward : bool
        Whether a cut class's units run from the last block to the first.
    units : numpy.ndarray or None
        A cut class's first unit of each message (ints; None: 0 each).
    windows : numpy.ndarray or None
        Per message the first of the vector's ``q`` near-equal blocks it carries and
        the block after its last (``(n, 2)`` ints; rhd's halving and doubling windows),
        where its messages carry different blocks (``elements`` is the largest): the
        model prices each window on its own where the blocks lie in runs that make
        them differ in more than their size (a ReduceScatter's channel vector); None:
        not said.
    kinds : numpy.ndarray or None
        Per message its row of what ``carries`` gives (ints): messages of one kind carry
        something at the same counts; None: each carries something wherever
        ``elements`` is more than 0.
    carries : callable or None
        With ``kinds``, element counts of the vector (array) -> whether a message of
        each kind carries anything at each (kinds x counts bools): one that carries
        nothing is left out, though its class's largest carries something (a tree
        AllGather's messages cut from its segments at a few elements, where most
        blocks hold one or none; a chain Broadcast's later segments, in rounds that
        repeat so many times as a bit of their number is worth, where it is set).
    sizes : callable or None
        With ``kinds``, element counts of the vector (array) -> the elements of each
        kind's message and the element it starts at in the vector (each kinds x
        counts), where each message is a kind of its own (a tree AllGather's pieces of
        segments, each what the ranks' steps cut: :attr:`elements` is their most): the
        model prices each at its own size, and, for a cut class of one unit
        (:attr:`cut`), over the runs of the buffer it meets from its own start (not
        ``cut_at``'s); a message of no elements is not sent.  None: each carries
        ``elements``.
    """

    src: np.ndarray
    dst: np.ndarray
    elements: Elements
    reduce: bool
    pieced: bool = True
    skip_empty: bool = False
    rounds: np.ndarray | None = None
    cut: int = 0
    cut_of: Elements | None = None
    cut_at: Elements | None = None
    blocks: int = 1
    backward: bool = False
    units: np.ndarray | None = None
    windows: np.ndarray | None = None
    kinds: np.ndarray | None = None
    carries: Elements | None = None
    sizes: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None

    def __repr__(self) -> str:
        return f"Messages({len(self.src)} messages, reduce={self.reduce})"


@dataclass(frozen=True, eq=False)
class Round:
    """``repeat`` lock-step rounds, each carrying every class of ``messages`` at once; or,
    with ``chain`` segments, the hops of a chain that ``chain`` segments cross one after
    another (every class's hops in turn, each hop one message of a segment): the
    critical path crosses every hop once and waits ``chain - 1`` times at the slowest.
    The ``paced`` rounds of a description are one stretch of rounds whose messages
    each say in which rounds they are in flight (:attr:`Messages.rounds`): every round
    of the stretch lasts as long as the slowest message then in flight, each message
    priced as in flight with the messages of its own ``Round`` that share a link with
    it in those rounds (a chain's both ways, on every channel); where the model
    sees every rank, it plays them as the ranks' steps do (a message starts once both
    its ends are done with the round before), unless a paced round is ``held``: the
    ranks' steps hold every message to its rounds closely enough that the lock-step
    stretch prices them (a chain's ReduceScatter and AllGather), save on a machine of
    alike links (flat), where they are played too, with the lock-step rounds after
    them (a chain's ends run ahead of its inner ranks' shared ports).  A chain round that
    ``waits`` only waits ``chain`` times at its slowest hop, crossing none (a chain's
    later segments, at their own sizes, behind a first that crosses every hop)."""

    repeat: int
    messages: tuple[Messages, ...]
    chain: int = 0
    paced: bool = False
    held: bool = False
    waits: bool = False

    def __repr__(self) -> str:
        kind = f"chain of {self.chain} segments" if self.chain else f"x{self.repeat}"
        return f"Round({kind}, {len(self.messages)} classes)"


@dataclass(frozen=True)
class Phase:
    """One phase of a composed algorithm: ``collective`` by ``algorithm`` on each of
    ``groups`` (tuples of ranks) side by side, over ``fraction`` of the vector's
    elements (``count -> ceil(count / fraction)`` the largest group's: group ``g``'s
    is part ``g % fraction`` of the vector's ``fraction`` near-equal parts,
    :func:`phase_counts`), ``piece``: the number of blocks a phase's vector lies in
    apart in the buffer (or None)."""

    collective: str
    algorithm: str
    groups: tuple[tuple[int, ...], ...]
    fraction: int
    piece: int | None = None


@lru_cache(maxsize=512)
def describe(collective: str, algorithm: str, q: int,
             params: tuple[tuple[str, Any], ...] = ()) -> tuple[Any, ...]:
    """The rounds (or phases) of ``algorithm`` for ``collective`` on ``q`` positions.

    Parameters
    ----------
    collective : str
        The collective.
    algorithm : str
        A registered algorithm (:mod:`collectives.registry`).
    q : int
        Positions (ranks of one channel's order), at least 1.
    params : tuple of (str, value)
        The algorithm's resolved parameters (``resolve_params``), sorted.

    Returns
    -------
    tuple of Round, or tuple of Phase
        Empty for one position.
    """
    return tuple(registered(algorithm).traffic(collective, q, **dict(params)))


def largest_part(parts: int, units: int = 1) -> Elements:
    """Elements of ``units`` consecutive parts of the vector cut into ``parts`` near-equal
    parts (:func:`collectives.layout.split`), the largest such run."""
    def elements(count: np.ndarray) -> np.ndarray:
        size, extra = np.divmod(count, parts)
        return units * size + np.minimum(units, extra)
    return elements


def last_parts(parts: int, units: int) -> Elements:
    """Elements of the last ``units`` parts of the vector cut into ``parts`` near-equal
    parts (:func:`collectives.layout.split`: the first ``count % parts`` one larger), the
    smallest such run."""
    def elements(count: np.ndarray) -> np.ndarray:
        size, extra = np.divmod(count, parts)
        return units * size + np.maximum(0, extra - (parts - units))
    return elements


def window_part(parts: int, lo: int, hi: int) -> Elements:
    """Elements of parts ``lo`` to ``hi`` (not included) of the vector cut into ``parts``
    near-equal parts (:func:`collectives.layout.split`: the first ones one larger).

    Examples
    --------
    >>> window_part(6, 4, 6)(np.array([20, 3]))
    array([6, 0])
    """
    def elements(count: np.ndarray) -> np.ndarray:
        size, extra = np.divmod(count, parts)
        return (hi - lo) * size + np.clip(extra - lo, 0, hi - lo)
    return elements


def nested_part(outer: int, inner: int, units: int = 1) -> Elements:
    """Elements of ``units`` of the ``inner`` parts of the largest of ``outer`` parts."""
    def elements(count: np.ndarray) -> np.ndarray:
        return largest_part(inner, units)(-(-count // outer))
    return elements


def _parts(elements: np.ndarray, channels: int) -> np.ndarray:
    """Each of ``channels`` near-equal parts of ``elements`` (a row; channels x its
    length), the first ``elements % channels`` one larger."""
    size, extra = np.divmod(elements, channels)
    return size + (np.arange(channels)[:, None] < extra)


def channel_counts(collective: str, q: int, channels: int, counts: np.ndarray) -> np.ndarray:
    """Elements of each channel's vector at each of ``counts`` (channels x counts), as
    :func:`collectives.compose.channel_parts` cuts a vector of ``q`` blocks: an
    AllReduce's channel ``c`` takes part ``c`` of the vector, the others' part ``c`` of
    every block (each cut into ``channels`` near-equal parts,
    :func:`collectives.layout.split`).  Each channel's blocks are then the near-equal
    parts of its vector (the first ranks' one larger where some are)."""
    counts = np.asarray(counts)[None, :]
    if collective == "allreduce":
        return _parts(counts, channels)
    size, extra = np.divmod(counts, q)
    return extra * _parts(size + 1, channels) + (q - extra) * _parts(size, channels)


def channel_runs(q: int, channels: int, counts: np.ndarray) -> np.ndarray:
    """Elements of the longest run of the buffer that each of ``channels`` (at least 2)
    holds of a ReduceScatter's or AllGather's vector (channels x counts;
    :func:`channel_counts`): its part of the largest block; but channel 0's parts of
    blocks of at most one element are whole blocks and meet: with blocks of two
    elements and one, those of one (the last ``q - count % q``) are one run; with
    blocks of one and none, its part is the first ``count % q`` elements."""
    size, extra = np.divmod(np.asarray(counts)[None, :], q)
    runs = _parts(size + (extra > 0), channels)
    runs[0] = np.where(size[0] == 0, extra[0], np.where(size[0] == 1, q - extra[0], runs[0]))
    return runs


def phase_counts(phase: Phase, channels: int, counts: np.ndarray) -> np.ndarray:
    """Elements of each channel's vector of a phase's groups at each of ``counts``
    (``fraction * channels`` x counts: row ``f * channels + c`` channel ``c`` of the
    groups ``g`` of ``g % fraction == f``), as :mod:`collectives.algorithms.hier` cuts
    them: group ``g``'s vector is part ``g % fraction`` of the vector cut into
    ``fraction`` near-equal parts (the first ones one larger: a rail's blocks, a local
    rank's block; the whole vector at a fraction of 1), of blocks that are its
    near-equal parts, each channel's vector its part of them (:func:`channel_counts`)."""
    q, parts = len(phase.groups[0]), phase.fraction
    vectors = _parts(np.asarray(counts)[None, :], parts)
    cut = channel_counts(phase.collective, q, channels, vectors.ravel())
    return cut.reshape(channels, parts, -1).transpose(1, 0, 2).reshape(parts * channels, -1)
