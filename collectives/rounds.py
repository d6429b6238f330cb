"""One rank's operations on a global clock of rounds, merged into its steps.

Pipelined algorithms (tree, pipeline) place each operation in a round; a rank posts, in
one step, everything it does in a round, and skips the rounds in which it does nothing.
Their operations come in *lanes*: a lane is one stream of operations of one kind with
one peer, at most one per consecutive round (typically one tree edge in one direction,
one entry per segment). A lane holds its element ranges, not operation objects, so a
consumer that reads millions of operations as arrays (the simulator's
:func:`simulator.flatten.flatten`) never builds them; :func:`merge_lanes` builds the
steps, round by round with C-level iteration, which is what keeps generating a
1024-rank schedule cheap.  Lanes that are windows of one sequence (ring's, a rotation of
the blocks per rank) hold a :class:`Window` of it, which copies nothing and which such a
consumer reads once for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from functools import partial
from itertools import islice, repeat
from typing import Any, Callable, Iterator, NamedTuple, Optional, Sequence

import numpy as np

from .schedule import Op, Step

__all__ = ["GAP", "Lane", "LaneColumns", "Window", "lane", "merge_lanes", "short_columns"]

#: a round without an operation, in :attr:`LaneColumns.lengths`
GAP = int(np.iinfo(np.int64).min)


class Window(SequenceABC):
    """Entries ``start:stop`` of the tuple ``base``, without a copy.

    Parameters
    ----------
    base : tuple
        The sequence looked through; windows of one base share it.
    start, stop : int
        The entries of ``base`` seen, ``0 <= start <= stop <= len(base)``.

    Examples
    --------
    >>> w = Window((5, 6, 7, 8), 1, 3)
    >>> len(w), list(w), w[-1], 5 in w, w[1:]
    (2, [6, 7], 7, False, Window(base=(5, 6, 7, 8), start=2, stop=3))
    """

    __slots__ = ("base", "start", "stop")

    def __init__(self, base: tuple[Any, ...], start: int, stop: int) -> None:
        self.base, self.start, self.stop = base, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __iter__(self) -> Iterator[Any]:
        return islice(self.base, self.start, self.stop)

    def __contains__(self, value: object) -> bool:
        return value in iter(self)

    def __getitem__(self, index: Any) -> Any:
        seen = range(self.start, self.stop)[index]
        if isinstance(index, slice):
            if seen.step == 1:
                return Window(self.base, seen.start, seen.stop)
            return tuple(self.base[i] for i in seen)
        return self.base[seen]

    def __repr__(self) -> str:
        return f"Window(base={self.base!r}, start={self.start}, stop={self.stop})"


class Lane(NamedTuple):
    """A stream of operations ``make(peer, starts[i], stops[i], *flags)``, the ``i``-th in
    round ``first_round + i``; a ``None`` start is a round without one.  The shorter of
    ``starts`` and ``stops`` ends the lane.

    Examples
    --------
    >>> from collectives.schedule import new_recv
    >>> Lane(0, new_recv, 1, [0, None, 4], [4, None, 8], (True,)).ops()
    [Recv(peer=1, start=0, stop=4, reduce=True, swap=False), None, Recv(peer=1, start=4, stop=8, reduce=True, swap=False)]
    """

    first_round: int
    make: Callable[..., Op]
    peer: int
    starts: Sequence[Optional[int]]
    stops: Sequence[Optional[int]]
    flags: tuple[bool, ...] = ()

    def ops(self) -> list[Optional[Op]]:
        """Return the lane's operations, one entry per round (``None`` for a gap)."""
        make, peer, flags = self.make, self.peer, self.flags
        if None in self.starts:
            return [None if a is None else make(peer, a, b, *flags)
                    for a, b in zip(self.starts, self.stops)]
        return list(map(make, repeat(peer), self.starts, self.stops, *map(repeat, flags)))


class LaneColumns(NamedTuple):
    """One rank's lanes as columns, one entry per lane, and their entries' lengths: what a
    consumer that reads lanes as arrays (:func:`simulator.flatten.flatten`) takes of them,
    without a :class:`Lane` per lane (a channel of ReduceScatter cuts each tree segment
    into a lane per block it spans: millions of them).

    Attributes
    ----------
    first_rounds, peers, entries : ndarray of int64
        Each lane's first round, peer and entries (``min(len(starts), len(stops))``).
    builders : list of (callable, tuple of bool)
        The lanes' distinct ``(make, flags)``, or some of them more than once.
    builder : ndarray of int64
        Each lane's place in ``builders``.
    lengths : ndarray of int64
        Each entry's ``stop - start``, lane by lane, :data:`GAP` where its start or stop
        is None.
    """

    first_rounds: np.ndarray
    peers: np.ndarray
    entries: np.ndarray
    builders: list[tuple[Callable[..., Op], tuple[bool, ...]]]
    builder: np.ndarray
    lengths: np.ndarray


def short_columns(lanes: Sequence[Lane], most: int) -> tuple[tuple[Any, ...], list[int]] | None:
    """``lanes`` column by column (their first rounds, makes, peers, starts, stops and
    flags) and each lane's entries, where each has at most ``most`` entries and as many
    starts as stops (a composed schedule's one-entry lanes, read without a loop per
    lane); None for no lanes or any other.

    Examples
    --------
    >>> from collectives.schedule import new_send
    >>> columns, counts = short_columns([lane(0, new_send, 1, [0], [4]),
    ...                                  lane(1, new_send, 2, [4], [8])], 8)
    >>> columns[0], columns[2], columns[3], counts
    ((0, 1), (1, 2), ([0], [4]), [1, 1])
    >>> short_columns([lane(0, new_send, 1, [0, 4], [4, 8])], 1) is None
    True
    """
    if not lanes:
        return None
    columns = tuple(zip(*lanes))
    counts = list(map(len, columns[3]))
    if max(counts) > most or counts != list(map(len, columns[4])):
        return None
    return columns, counts


def lane(first_round: int, make: Callable[..., Op], peer: int, starts: Sequence[int],
         stops: Sequence[int], *flags: bool) -> Lane:
    """Return a lane of one operation per round, with one peer.

    Parameters
    ----------
    first_round : int
        The round of the first operation; the others follow one round apart.
    make : callable
        ``make(peer, start, stop, *flags) -> Op``, e.g. :data:`~collectives.schedule.new_send`.
    peer : int
        The peer of every operation.
    starts, stops : sequence of int
        The operations' element ranges; the shorter one ends the lane.
    *flags : bool
        Trailing arguments of every ``make`` call (``reduce`` and ``swap`` of a receive).

    Returns
    -------
    Lane
        The lane; its operations are built by :meth:`Lane.ops` (or :func:`merge_lanes`).

    Examples
    --------
    >>> from collectives.schedule import new_recv
    >>> lane(3, new_recv, 1, [0, 4], [4, 8], True).ops()
    [Recv(peer=1, start=0, stop=4, reduce=True, swap=False), Recv(peer=1, start=4, stop=8, reduce=True, swap=False)]
    """
    return Lane(first_round, make, peer, starts, stops, flags)


def merge_lanes(lanes: Sequence[Lane]) -> list[Step]:
    """Return the steps of a rank whose operations come in ``lanes``.

    Parameters
    ----------
    lanes : sequence of Lane
        The rank's lanes; rounds may be negative. Empty lanes and gaps are allowed.

    Returns
    -------
    list of Step
        One step per round with at least one operation, in round order. A step holds
        its round's operations lane by lane, in the order of ``lanes``.

    Examples
    --------
    >>> from collectives.schedule import new_send
    >>> lanes = [lane(0, new_send, 1, [0, 1], [1, 2]), lane(1, new_send, 2, [0], [1])]
    >>> [str(step) for step in merge_lanes(lanes)]
    ['send [0:1) -> 1', 'send [1:2) -> 1; send [0:1) -> 2']
    """
    built = [(each.first_round, each.ops()) for each in lanes]
    built = [(first, entries) for first, entries in built if entries]
    if not built:
        return []
    base = min(first for first, _ in built)
    top = max(first + len(entries) for first, entries in built)
    padded = [[None] * (first - base) + entries + [None] * (top - first - len(entries))
              for first, entries in built]
    rounds = map(tuple, map(partial(filter, None), zip(*padded)))  # operations are truthy
    return [Step(ops) for ops in rounds if ops]
