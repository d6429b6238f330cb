"""One rank's operations on a global clock of rounds, merged into its steps.

Pipelined algorithms (tree, pipeline) place each operation in a round; a rank posts, in
one step, everything it does in a round, and skips the rounds in which it does nothing.
Their operations come in *lanes*: a lane is one stream of operations, at most one per
consecutive round (typically one tree edge in one direction, one entry per segment).
Merging lanes round by round, with C-level iteration, is what keeps generating a
1024-rank schedule cheap.
"""

from __future__ import annotations

from functools import partial
from itertools import repeat
from typing import Callable, Iterable, Optional, Sequence

from .schedule import Op, Step

__all__ = ["Lane", "lane", "merge_lanes"]

#: ``(first_round, entries)``: the operation ``entries[i]`` belongs to round
#: ``first_round + i``; ``None`` entries are rounds without one
Lane = tuple[int, Sequence[Optional[Op]]]


def lane(first_round: int, make: Callable[..., Op], peer: int, starts: Iterable[int],
         stops: Iterable[int], *flags: bool) -> Lane:
    """Return a lane of one operation per round, with one peer.

    Parameters
    ----------
    first_round : int
        The round of the first operation; the others follow one round apart.
    make : callable
        ``make(peer, start, stop, *flags) -> Op``, e.g. :data:`~collectives.schedule.new_send`.
    peer : int
        The peer of every operation.
    starts, stops : iterable of int
        The operations' element ranges; the shorter one ends the lane.
    *flags : bool
        Trailing arguments of every ``make`` call (``reduce`` of a receive).

    Returns
    -------
    Lane
        ``(first_round, [op, ...])``.

    Examples
    --------
    >>> from collectives.schedule import new_recv
    >>> lane(3, new_recv, 1, [0, 4], [4, 8], True)[1]
    [Recv(peer=1, start=0, stop=4, reduce=True), Recv(peer=1, start=4, stop=8, reduce=True)]
    """
    return first_round, list(map(make, repeat(peer), starts, stops, *map(repeat, flags)))


def merge_lanes(lanes: Sequence[Lane]) -> list[Step]:
    """Return the steps of a rank whose operations come in ``lanes``.

    Parameters
    ----------
    lanes : sequence of Lane
        ``(first_round, entries)`` pairs; rounds may be negative. Empty lanes and
        ``None`` entries are allowed.

    Returns
    -------
    list of Step
        One step per round with at least one operation, in round order. A step holds
        its round's operations lane by lane, in the order of ``lanes``.

    Examples
    --------
    >>> from collectives.schedule import Send
    >>> a, b, c = Send(1, 0, 1), Send(1, 1, 2), Send(2, 0, 1)
    >>> [str(step) for step in merge_lanes([(0, [a, b]), (1, [c])])]
    ['send [0:1) -> 1', 'send [1:2) -> 1; send [0:1) -> 2']
    """
    lanes = [(first, entries) for first, entries in lanes if entries]
    if not lanes:
        return []
    base = min(first for first, _ in lanes)
    top = max(first + len(entries) for first, entries in lanes)
    padded = [[None] * (first - base) + list(entries) + [None] * (top - first - len(entries))
              for first, entries in lanes]
    rounds = map(tuple, map(partial(filter, None), zip(*padded)))  # operations are truthy
    return [Step(ops) for ops in rounds if ops]
