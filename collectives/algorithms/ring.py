"""Ring: reduce-scatter then allgather around the ring ``0 -> 1 -> ... -> p-1 -> 0``.

Each of the ``p - 1`` reduce-scatter steps sends one block to the next rank and reduces
the block received from the previous rank; after them rank ``r`` holds the reduced
block ``r``. Each of the ``p - 1`` allgather steps forwards the block received last.
AllReduce is both phases (``2(p-1)`` steps, ``2(p-1)/p`` of the vector sent per rank);
ReduceScatter and AllGather are one phase each (``(p-1)/p`` of the vector).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Sequence

from ..gcpause import gc_paused
from ..schedule import Step, new_recv, new_send

__all__ = ["PARAMS", "resolve_params", "rank_steps"]

PARAMS: dict[str, Any] = {}


def resolve_params(collective: str, nranks: int, count: int) -> dict[str, Any]:
    """Ring takes no tuning parameters.

    Parameters
    ----------
    collective : str
        The collective (unused).
    nranks : int
        Number of ranks (unused).
    count : int
        Elements of the vector (unused).

    Returns
    -------
    dict[str, Any]
        Always empty.
    """
    return {}


@gc_paused()
def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]]) -> list[Step]:
    """Return the ring steps of ``rank``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective; anything other than ReduceScatter or AllGather runs both phases.
    rank : int
        The rank whose steps to make.
    nranks : int
        Number of ranks.
    count : int
        Elements of the vector (unused: ``blocks`` carries the layout).
    blocks : sequence of (int, int)
        ``blocks[r]``: the element range ``[start, stop)`` rank ``r`` owns.

    Returns
    -------
    list of Step
        ``nranks - 1`` steps per phase.
    """
    # entry i of starts/stops is block rank - i (mod nranks), and sends[i] sends it on;
    # AllReduce's two phases send the same p - 2 blocks and share those (immutable) ops
    starts, stops = zip(*(blocks[rank::-1] + blocks[:rank:-1]))
    sends = list(map(new_send, repeat((rank + 1) % nranks), starts, stops))
    left = (rank - 1) % nranks
    steps: list[Step] = []
    if collective != "allgather":  # step s: send block rank-1-s, reduce block rank-2-s in
        recvs = map(new_recv, repeat(left), starts[2:] + starts[:1], stops[2:] + stops[:1],
                    repeat(True))
        steps += map(Step, zip(sends[1:], recvs))
    if collective != "reduce_scatter":  # step s: send block rank-s, receive block rank-1-s
        recvs = map(new_recv, repeat(left), starts[1:], stops[1:], repeat(False))
        steps += map(Step, zip(sends[:-1], recvs))
    return steps
