"""Bruck's AllToAll: ``ceil(log2 p)`` rounds for small messages (Open MPI's modified Bruck).

Registered as ``bruck_alltoall`` (``bruck`` is Bruck's AllGather, :mod:`.bruck`).

Rank ``r`` first rotates its blocks so that position ``i`` holds its block for
``r + i``.  In round ``b`` it sends every position whose bit ``b`` is set to ``r + 2**b``
in one message and receives the same positions from ``r - 2**b``; after the last round
position ``i`` holds the block that rank ``r - i`` sent ``r``, and is copied there.
Positions are packed into a send area before each round and unpacked from a receive
area after it (local copies, which cost nothing on the model).  ``h_b`` positions move in
round ``b`` (about ``p / 2``), so on the single-port alpha-beta model, ``n`` elements a
block::

    T = sum_b (alpha + h_b * n * beta)

Per-peer counts must all be equal (the blocks travel through other ranks' positions).
The working buffer holds, after the ``p`` blocks sent and the ``p`` received, the rotated
blocks and the two packing areas.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..registry import Algorithm, ompi_ids, one_candidate, register
from ..rooted import levels
from ..schedule import Copy, Op, Step, new_recv, new_send
from ..traffic import Messages, Round

__all__ = ["ALGORITHM", "resolve_params", "working", "rank_steps",
           "traffic", "moving"]

def resolve_params(collective: str, nranks: int, count: int,
                   counts: tuple[tuple[int, ...], ...] | None = None) -> dict[str, Any]:
    """Accept per-peer counts only when they are all equal (to ``count``).

    Returns
    -------
    dict
        ``{"counts": None}``.

    Raises
    ------
    ValueError
        For unequal per-peer counts.
    """
    if counts is not None and any(c != count for row in counts for c in row):
        raise ValueError("counts= with unequal entries is not allowed with algorithm "
                         "'bruck_alltoall', whose blocks travel through other ranks' "
                         "positions; use 'pairwise' or 'linear' for an AllToAllv")
    return {"counts": None}


def moving(nranks: int, b: int) -> list[int]:
    """The positions that move in round ``b``: those with bit ``b`` set.

    Examples
    --------
    >>> moving(6, 1)
    [2, 3]
    """
    return [i for i in range(nranks) if i >> b & 1]


def _widest(nranks: int) -> int:
    return max((len(moving(nranks, b)) for b in range(levels(nranks))), default=0)


def working(collective: str, nranks: int, count: int,
            counts: tuple[tuple[int, ...], ...] | None = None) -> int:
    """Elements of the working buffer: sent, received and rotated blocks, and the
    two packing areas of the widest round."""
    return (3 * nranks + 2 * _widest(nranks)) * count


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[tuple[int, int]],
               counts: tuple[tuple[int, ...], ...] | None = None) -> list[Step]:
    """Return ``rank``'s steps: rotate and pack, then per round an exchange and the
    copies that unpack it and pack the next (the last round's place every block).

    Parameters
    ----------
    collective : {"alltoall"}
        The collective.
    rank, nranks, count : int
        The rank, the number of ranks and the elements of every block.
    blocks : sequence of (int, int)
        Unused.
    counts : None
        Resolved to None (all equal).

    Returns
    -------
    list of Step
        ``2 ceil(log2 p) + 1`` steps; one copy for one rank.
    """
    p, m, r = nranks, count, rank
    send, recv, rotated = 0, p * m, 2 * p * m
    packed = 3 * p * m
    unpacked = packed + _widest(p) * m
    where = [send + (r + i) % p * m for i in range(p)]  # position i, before the rotation
    rounds = levels(p)
    if rounds == 0:
        return [Step((Copy(0, m, recv),))]
    first = [Copy(r * m, p * m, rotated), Copy(0, r * m, rotated + (p - r) * m)]
    steps: list[list[Op]] = [[*first, *_pack(where, moving(p, 0), packed, m)]]
    where = [rotated + i * m for i in range(p)]
    for b in range(rounds):
        moved = moving(p, b)
        size = len(moved) * m
        steps.append([new_send((r + (1 << b)) % p, packed, packed + size),
                      new_recv((r - (1 << b)) % p, unpacked, unpacked + size)])
        landed = {i: unpacked + k * m for k, i in enumerate(moved)}
        if b + 1 < rounds:
            copies = [Copy(landed[i], landed[i] + m, where[i]) for i in moved]
            now = [landed.get(i, where[i]) for i in range(p)]
            steps.append([*copies, *_pack(now, moving(p, b + 1), packed, m)])
        else:
            steps.append([Copy(landed.get(i, where[i]), landed.get(i, where[i]) + m,
                               recv + (r - i) % p * m) for i in range(p)])
    return [Step(tuple(ops)) for ops in steps]


def _pack(where: list[int], moved: list[int], packed: int, m: int) -> list[Copy]:
    """Copies of the positions ``moved`` (at ``where``) into the packing area, in order."""
    return [Copy(where[i], where[i] + m, packed + k * m) for k, i in enumerate(moved)]


def traffic(collective: str, q: int, counts: None = None) -> list[Round]:
    """One round per bit, every rank sending ``h_b`` blocks in one message to
    ``r + 2**b`` (:mod:`collectives.traffic`).

    Parameters
    ----------
    collective : {"alltoall"}
        The collective.
    q : int
        Positions.
    counts : None
        Resolved to None.

    Returns
    -------
    list of Round
    """
    v = np.arange(q)
    rounds = []
    for b in range(levels(q)):
        units = len(moving(q, b))
        rounds.append(Round(1, (Messages(v, (v + (1 << b)) % q, _blocks(units), False,
                                         pieced=False),)))
    return rounds


def _blocks(units: int) -> Any:
    """Elements of ``units`` blocks of ``count`` elements."""
    def elements(count: np.ndarray) -> np.ndarray:
        return units * np.asarray(count)
    return elements


ALGORITHM = register(Algorithm(
    name="bruck_alltoall", collectives=frozenset({"alltoall"}), params={"counts": None},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, channeled=False,
    working=working, candidates=one_candidate,
    # coll_tuned_alltoall_decision.c: 3 is "modified_bruck"
    ompi=ompi_ids({"alltoall": (3, "modified_bruck")})))
