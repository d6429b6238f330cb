"""Bruck's AllGather: ``ceil(lg p)`` rounds on any number of ranks.

The small-message AllGather of MPICH (for short messages and non-powers of two: Thakur,
Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH",
IJHPCA 19(1), 2005, section 4.1) and of Open MPI (coll/tuned allgather algorithm 2,
``ompi_coll_base_allgather_intra_bruck``), after Bruck, Ho, Kipnis, Upfal & Weathersby,
IEEE TPDS 8(11), 1997.

In round ``k = 0 .. ceil(lg p) - 1``, at distance ``d = 2**k``, rank ``i`` sends the
blocks of ranks ``i, i + 1, ..., i + c - 1`` (mod ``p``), ``c = min(d, p - d)``, to rank
``i - d`` and receives those of ranks ``i + d .. i + d + c - 1`` from rank ``i + d``;
after round ``k`` it holds the ``min(2d, p)`` blocks from its own on.  The textbook
algorithm gathers into a buffer that starts at the rank's own block and rotates it into
place at the end; here every block is received straight into its place in the output,
so there is no local copy, and a run of blocks that wraps past rank ``p - 1`` is sent as
two messages (its part up to the end of the vector, then its part from the start),
received in the same order.  ``blocks`` must lie in rank order one after another, as
:func:`collectives.build_schedule` and :mod:`collectives.compose` lay them.

Cost (alpha-beta, ``n`` bytes of the gathered vector, blocks dividing evenly):
``ceil(lg p) alpha + (p - 1)/p n beta``: the rounds carry 1, 2, 4, ... blocks, the last
``p - 2**(ceil(lg p) - 1)`` of them; a rank whose run wraps sends its two messages side
by side, as long together as one.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from topology.channels import node_minor

from ..registry import Algorithm, Params, ompi_ids, register
from ..schedule import Recv, Send, Step
from ..traffic import Messages, Round, largest_part, last_parts

__all__ = ["ALGORITHM", "resolve_params", "rank_steps", "traffic", "candidates"]

Range = tuple[int, int]


def resolve_params(collective: str, nranks: int, count: int) -> dict[str, Any]:
    """Bruck takes no tuning parameters.

    Parameters
    ----------
    collective : str
        The collective (unused: AllGather, checked by :func:`collectives.build_schedule`).
    nranks, count : int
        Ranks and elements of the vector (unused).

    Returns
    -------
    dict[str, Any]
        Always empty.
    """
    return {}


def _rounds(nranks: int) -> list[tuple[int, int]]:
    """``(distance, blocks sent)`` of every round."""
    return [(1 << k, min(1 << k, nranks - (1 << k))) for k in range((nranks - 1).bit_length())]


def _run(blocks: Sequence[Range], first: int, c: int) -> list[Range]:
    """The element ranges of the ``c`` blocks from block ``first`` on (mod ``len(blocks)``):
    one range, or two where they wrap past the last block."""
    p = len(blocks)
    last = first + c - 1
    if last < p:
        return [(blocks[first][0], blocks[last][1])]
    return [(blocks[first][0], blocks[p - 1][1]), (blocks[0][0], blocks[last - p][1])]


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[Range]) -> list[Step]:
    """Return the steps of ``rank``: one per round (see the module docstring).

    Parameters
    ----------
    collective : {"allgather"}
        The collective.
    rank : int
        The rank whose steps to make.
    nranks : int
        Number of ranks.
    count : int
        Elements of the vector (unused: ``blocks`` carries the layout).
    blocks : sequence of (int, int)
        ``blocks[r]``: the element range ``[start, stop)`` rank ``r`` owns, in rank order.

    Returns
    -------
    list of Step
        ``ceil(lg nranks)`` steps, each sending to ``rank - d`` and receiving from
        ``rank + d`` (one or two ranges each way).

    Examples
    --------
    >>> from collectives.layout import block
    >>> blocks = [block(6, 3, r) for r in range(3)]
    >>> for step in rank_steps("allgather", 2, 3, 6, blocks):
    ...     print(step)
    send [4:6) -> 1; recv [0:2) <- 0
    send [4:6) -> 0; recv [2:4) <- 1
    """
    steps = []
    for d, c in _rounds(nranks):
        give = _run(blocks, rank, c)
        take = _run(blocks, (rank + d) % nranks, c)
        steps.append(Step((*(Send((rank - d) % nranks, lo, hi) for lo, hi in give),
                           *(Recv((rank + d) % nranks, lo, hi) for lo, hi in take))))
    return steps


def traffic(collective: str, q: int) -> list[Round]:
    """Bruck's messages (:mod:`collectives.traffic`): a round per distance ``d``, every
    position sending its run of ``c`` blocks to the position ``d`` before it (on an
    order other than the ranks' own, the run's blocks lie apart in the buffer, a
    receive each); the arguments of :mod:`collectives.registry`.

    A run that wraps goes as two messages side by side on one route, each hiding its
    latency behind its own bytes (:func:`simulator.gpu.hidden_latency`): the slowest
    is the run cut at its middle (its smaller part through at twice its bytes' time,
    its larger when the whole run is, and both the later the smaller they are), so
    that position's two messages are described apart; the other wrapped runs, no
    slower, as one message of the run."""
    v = np.arange(q)
    rounds = []
    for d, c in _rounds(q):
        if c < 2:  # no run wraps
            rounds.append(Round(1, (Messages(v, (v - d) % q, largest_part(q, c), False),)))
            continue
        tail = c // 2  # the middle run's blocks up to the last
        middle = np.array([q - tail])
        rest = np.delete(v, q - tail)
        rounds.append(Round(1, (
            Messages(rest, (rest - d) % q, largest_part(q, c), False),
            Messages(middle, (middle - d) % q, last_parts(q, tail), False),
            Messages(middle, (middle - d) % q, largest_part(q, c - tail), False))))
    return rounds


def candidates(collective: str, channels: int, ranks_per_node: int | None) -> tuple[Params, ...]:
    """What selection tries (the arguments of :mod:`collectives.registry`): Bruck on one
    channel, a small-message algorithm whose messages channels would only cut smaller."""
    return ((),) if channels == 1 else ()


ALGORITHM = register(Algorithm(
    name="bruck", collectives=frozenset({"allgather"}), params={}, traffic=traffic,
    resolve=resolve_params, steps=rank_steps, candidates=candidates,
    # partners at distances below the node count cross the network on one rail, the large
    # late rounds stay inside the nodes (as rhd's small masks)
    orders=node_minor,
    # coll_tuned_allgather_decision.c: allgather_algorithms[] {2, "bruck"}
    ompi=ompi_ids({"allgather": (2, "bruck")})))
