"""Recursive halving-doubling (Rabenseifner's algorithm), and recursive doubling.

AllReduce is a recursive-halving reduce-scatter followed by a recursive-doubling
allgather (Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 19(1), 2005, section 4.3); ReduceScatter is the first phase
and AllGather the second.  Partners are ``newrank ^ mask`` among a power-of-two *core*,
as in msccl-tools' ``peer = rank ^ count`` loop: halving runs ``mask = p'/2 .. 1`` and
leaves core rank ``i`` with the reduced chunk ``i``; doubling runs ``mask = 1 .. p'/2``.

With ``doubling=True`` (AllReduce only) AllReduce is *recursive doubling* instead, the
small-message algorithm of MPICH and of Open MPI's ``coll_tuned`` (allreduce algorithm
3; Thakur et al. section 4.2): at ``mask = 1 .. p'/2`` core rank ``i`` exchanges the
whole vector with ``i ^ mask`` and reduces it in, ``lg p'`` steps instead of
``2 lg p'``, each moving all ``n`` bytes.  Both partners reduce the same two partial
results, so the rank whose ``mask`` bit is set takes the received one as the left
operand (``Recv(swap=True)``): both compute ``op(lower half, upper half)`` and get the
same bits even where ``op`` is not bitwise commutative (float ``max`` of ``+0`` and
``-0``, which of two NaNs a sum keeps).

Non-powers of two
-----------------
With ``p' = 2**floor(log2 p)`` and ``r = p - p'``, ``r`` pairs of neighbouring ranks fold
into one core rank each (the higher rank of a pair survives; the lower one is *extra*).
The pairs are spread evenly over the core (core rank ``i`` is a pair when
``ceil((i+1) r / p') > ceil(i r / p')``), so every halving window holds near the same
number of ranks; the first pair is ranks ``0, 1`` (rank 0 sends, as in MPICH).

* AllReduce: the extra rank sends its whole vector to its survivor, which reduces it in
  (fold in); after the core finishes, the survivor sends the whole result back (fold out).
  The core cuts the vector into ``p'`` near-equal chunks.
* ReduceScatter: fold in as for AllReduce; core rank ``i`` owns the union of its real
  ranks' blocks, so the survivor of a pair also reduces the extra rank's block and sends it
  to the extra rank at the end.  Every real rank ends with exactly ``blocks[rank]``.
* AllGather: the extra rank sends its block to its survivor (fold in); the core runs
  recursive doubling over the unions of blocks; the survivor sends the extra rank every
  element but its own block (fold out).

Each element is reduced along one path and then copied (or, in recursive doubling,
reduced by both partners from the same operands in the same order), so every rank ends
bitwise identical.

Cost (alpha-beta-gamma)
-----------------------
``n`` bytes in the full vector, latency ``alpha`` per message, ``beta`` seconds per byte
sent, ``gamma`` seconds per byte reduced; ``lg = log2``.

=================  ====================  ===========================================
collective         steps (critical path) time
=================  ====================  ===========================================
AllReduce, p = p'  ``2 lg p``            ``2 lg p a + 2 (p-1)/p n b + (p-1)/p n g``
AllReduce, p > p'  ``2 lg p' + 2``       ``(2 lg p' + 2) a + (2 (p'-1)/p' + 2) n b
                                         + ((p'-1)/p' + 1) n g``
ReduceScatter      ``lg p`` (p = p'),    ``lg p a + (p-1)/p n b + (p-1)/p n g`` (p = p')
                   ``lg p' + 2``
AllGather          ``lg p`` (p = p'),    ``lg p a + (p-1)/p n b`` (p = p')
                   ``lg p' + 2``
AllReduce,         ``lg p'`` (p = p'),   ``lg p' (a + n b + n g)``, plus
``doubling=True``  ``lg p' + 2``         ``2 a + 2 n b + n g`` for p > p'
=================  ====================  ===========================================

Folding for ``p > p'`` adds, for AllReduce, ``a + n b + n g`` before and ``a + n b``
after the core (the whole vector each way).  ReduceScatter pays ``a + n b + n g`` to fold
in and ``a + n/p b`` to fold out; AllGather pays ``a + n/p b`` to fold in and
``a + (p-1)/p n b`` to fold out.  In the core of a ReduceScatter or AllGather with
``p > p'`` and equal blocks, the step at ``mask = m`` moves at most
``(m + ceil(m r / p')) n / p`` bytes (a window of ``m`` core ranks, ``ceil(m r / p')`` of
them pairs), about ``m n / p'``; summed over ``m = 1, 2, .., p'/2`` that is about
``(p'-1)/p' n`` bytes (and as many reduced, for ReduceScatter).  AllReduce sends exactly
``2 (p-1)/p n`` elements per rank at ``p = p'`` when ``p`` divides ``n``.

Ranks outside the core (the extra ranks) have only the two fold steps; core ranks that are
not in a pair have no fold steps and wait on their partners in the first core step.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from topology.channels import node_minor

from ..layout import blocks_of
from ..layout import split
from ..registry import Algorithm, Params, ompi_ids, register
from ..schedule import BLOCK_COLLECTIVES, Recv, Send, Step
from ..traffic import Messages, Round, largest_part

__all__ = ["ALGORITHM", "resolve_params", "rank_steps", "step_rounds", "traffic", "candidates",
           "ompi"]

Range = tuple[int, int]
Chunks = Callable[[int, int], list[Range]]


def resolve_params(collective: str, nranks: int, count: int,
                   doubling: bool = False) -> dict[str, Any]:
    """Check the parameters: ``doubling`` picks recursive doubling for AllReduce.

    Parameters
    ----------
    collective : str
        The collective.
    nranks : int
        Number of ranks (unused).
    count : int
        Elements of the vector (unused).
    doubling : bool, optional
        True: recursive doubling (AllReduce only); False (the default): halving-doubling.

    Returns
    -------
    dict[str, Any]
        ``{"doubling": True}`` for recursive doubling, else empty (the schedules of
        halving-doubling record no parameter).

    Raises
    ------
    ValueError
        If ``doubling`` is not a bool, or is True for another collective than AllReduce.

    Examples
    --------
    >>> resolve_params("allreduce", 4, 8, doubling=True)
    {'doubling': True}
    >>> resolve_params("allgather", 4, 8, doubling=True)
    Traceback (most recent call last):
    ...
    ValueError: doubling=True is not allowed for allgather; recursive doubling is an allreduce: use doubling=False
    """
    if not isinstance(doubling, bool):
        raise ValueError(f"doubling={doubling!r} is not allowed; it must be True or False")
    if doubling and collective != "allreduce":
        raise ValueError(f"doubling=True is not allowed for {collective}; recursive doubling "
                         "is an allreduce: use doubling=False")
    return {"doubling": True} if doubling else {}


@dataclass(frozen=True)
class _Fold:
    """How ``nranks`` real ranks fold into a power-of-two core of ``core`` ranks.

    Core rank ``i`` stands for the real ranks ``first(i) .. first(i + 1) - 1`` (one rank,
    or a pair whose higher rank survives).
    """

    nranks: int
    core: int

    @classmethod
    def of(cls, nranks: int) -> "_Fold":
        return cls(nranks, 1 << (nranks.bit_length() - 1))

    def first(self, i: int) -> int:
        """First real rank of core rank ``i`` (``first(core) == nranks``)."""
        return i - (-i * (self.nranks - self.core) // self.core)

    def survivor(self, i: int) -> int:
        """The real rank that runs core rank ``i``."""
        return self.first(i + 1) - 1

    def core_rank(self, rank: int) -> int:
        """The core rank that real ``rank`` belongs to."""
        return bisect_right(range(self.core), rank, key=self.first) - 1


def _nonempty(pieces: Sequence[Range], at: int) -> list[Range]:
    """Drop empty ranges; keep one empty range at ``at`` when none is left.

    Every step then holds its message even when it is empty, so the step structure does
    not depend on ``count``.
    """
    kept = [(lo, hi) for lo, hi in pieces if hi > lo]
    return kept or [(at, at)]


def _exchange(peer: int, give: list[Range], take: list[Range], reduce: bool,
              swap: bool = False) -> Step:
    return Step(tuple(Send(peer, *g) for g in give) +
                tuple(Recv(peer, *t, reduce, swap) for t in take))


def _halving(fold: _Fold, i: int, chunks: Chunks) -> list[Step]:
    """Recursive-halving reduce-scatter of core rank ``i``: ``mask = core/2 .. 1``."""
    steps = []
    lo, hi, mask = 0, fold.core, fold.core // 2
    while mask:
        mid = lo + mask
        keep, give = ((mid, hi), (lo, mid)) if i & mask else ((lo, mid), (mid, hi))
        steps.append(_exchange(fold.survivor(i ^ mask), chunks(*give), chunks(*keep), True))
        (lo, hi), mask = keep, mask // 2
    return steps


def _doubling(fold: _Fold, i: int, chunks: Chunks) -> list[Step]:
    """Recursive-doubling allgather of core rank ``i``: ``mask = 1 .. core/2``."""
    steps = []
    lo, mask = i, 1
    while mask < fold.core:
        other = lo ^ mask
        steps.append(_exchange(fold.survivor(i ^ mask), chunks(lo, lo + mask),
                               chunks(other, other + mask), False))
        lo, mask = min(lo, other), mask * 2
    return steps


def _whole_doubling(fold: _Fold, i: int, count: int) -> list[Step]:
    """Recursive-doubling allreduce of core rank ``i``: the whole vector each way at
    ``mask = 1 .. core/2``, the received partial on the left where ``i`` has the bit."""
    whole = [(0, count)]
    return [_exchange(fold.survivor(i ^ mask), whole, whole, True, bool(i & mask))
            for mask in (1 << k for k in range(fold.core.bit_length() - 1))]


def _fold_pieces(collective: str, count: int, extra: Range) -> tuple[list[Range], list[Range]]:
    """Ranges an extra rank sends in and receives back, given its block ``extra``."""
    whole = [(0, count)]
    if collective == "allreduce":
        return whole, whole
    if collective == "reduce_scatter":
        return whole, _nonempty([extra], extra[0])
    return _nonempty([extra], extra[0]), _nonempty([(0, extra[0]), (extra[1], count)], 0)


def rank_steps(collective: str, rank: int, nranks: int, count: int,
               blocks: Sequence[Range], doubling: bool = False) -> list[Step]:
    """Return the recursive halving-doubling (or recursive doubling) steps of ``rank``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    rank : int
        The rank whose steps to generate.
    nranks : int
        Number of ranks.
    count : int
        Elements of the full vector.
    blocks : sequence of (int, int)
        ``blocks[r]`` is the element range rank ``r`` owns; together they cover
        ``[0, count)`` without overlap.
    doubling : bool, optional
        Recursive doubling (AllReduce only, see :func:`resolve_params`).

    Returns
    -------
    list of Step
        Only ``rank``'s steps, ``O(log nranks)`` of them.

    Examples
    --------
    >>> from collectives.layout import block
    >>> steps = rank_steps("allreduce", 0, 4, 8, [block(8, 4, r) for r in range(4)])
    >>> [str(step) for step in steps]  # doctest: +NORMALIZE_WHITESPACE
    ['send [4:8) -> 2; reduce [0:4) <- 2', 'send [2:4) -> 1; reduce [0:2) <- 1',
     'send [0:2) -> 1; recv [2:4) <- 1', 'send [0:4) -> 2; recv [4:8) <- 2']
    >>> blocks = [block(8, 4, r) for r in range(4)]
    >>> [str(step) for step in rank_steps("allreduce", 1, 4, 8, blocks, doubling=True)]
    ['send [0:8) -> 0; reduce [0:8) <- 0 (received first)', 'send [0:8) -> 3; reduce [0:8) <- 3']
    """
    fold = _Fold.of(nranks)
    i = fold.core_rank(rank)
    if collective == "allreduce":
        def chunks(lo: int, hi: int) -> list[Range]:
            return [(split(0, count, fold.core, lo)[0], split(0, count, fold.core, hi - 1)[1])]
    else:
        def chunks(lo: int, hi: int) -> list[Range]:
            first, stop = fold.first(lo), fold.first(hi)
            return _nonempty(blocks_of(blocks, range(first, stop)), blocks[first][0])
    paired = fold.first(i) != fold.survivor(i)
    extra = fold.first(i)
    fold_in, fold_out = _fold_pieces(collective, count, blocks[extra]) if paired else ([], [])
    reduce_in = collective != "allgather"
    if paired and rank == extra:
        peer = fold.survivor(i)
        return [_exchange(peer, fold_in, [], reduce_in), _exchange(peer, [], fold_out, False)]
    if doubling:
        core = _whole_doubling(fold, i, count)
    else:
        core = [*(_halving(fold, i, chunks) if collective != "allgather" else []),
                *(_doubling(fold, i, chunks) if collective != "reduce_scatter" else [])]
    if not paired:
        return core
    return [_exchange(extra, [], fold_in, reduce_in), *core, _exchange(extra, fold_out, [], False)]


def step_rounds(collective: str, rank: int, nranks: int, doubling: bool = False) -> list[int]:
    """Return the round of each of ``rank``'s steps on a clock shared by all ranks.

    The fold in is round 0, core step ``j`` is round ``j + 1`` and the fold out the round
    after the core (``p`` a power of two: no folds, core step ``j`` is round ``j``), so
    both ends of every message fall in the same round; :mod:`collectives.compose` merges
    channels by these rounds.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    rank, nranks : int
        The rank and the number of ranks.
    doubling : bool, optional
        Recursive doubling (AllReduce only).

    Returns
    -------
    list of int
        One round per step of :func:`rank_steps`, increasing.

    Examples
    --------
    >>> step_rounds("allreduce", 0, 3), step_rounds("allreduce", 1, 3)
    ([0, 3], [0, 1, 2, 3])
    >>> step_rounds("allreduce", 2, 3)
    [1, 2]
    """
    fold = _Fold.of(nranks)
    lg = fold.core.bit_length() - 1
    core = lg if doubling else lg * ((collective != "allgather") + (collective != "reduce_scatter"))
    if fold.core == nranks:
        return list(range(core))
    i = fold.core_rank(rank)
    if fold.first(i) == fold.survivor(i):
        return list(range(1, core + 1))
    if rank == fold.first(i):
        return [0, core + 1]
    return list(range(core + 2))


def _whole(count: np.ndarray) -> np.ndarray:
    return count


def traffic(collective: str, q: int, doubling: bool = False) -> list[Round]:
    """rhd's messages (:mod:`collectives.traffic`): the fold-in of the extra ranks, one
    class per mask of the halving and of the doubling (or of recursive doubling, the
    whole vector each way), the fold-out.

    A window of ``mask`` core ranks covers ``mask`` of the core's ``p'`` chunks
    (AllReduce) or the blocks of the ranks they stand for (ReduceScatter, AllGather:
    the largest such run of ranks); a class is priced at its largest message.  With a
    fold (``q`` not a power of two) the steps are one paced round, each class in flight
    in its own step's round only: a rank goes on once its partner is ready, and the
    fold's ranks wait on theirs alone (``dgx_h100(33)``: as lock-step rounds AllReduce
    was +10.0% at 4 B against the simulator); without, lock-step rounds.

    Parameters
    ----------
    collective : str
        The collective.
    q : int
        Positions.
    doubling : bool, optional
        Recursive doubling (AllReduce only).

    Returns
    -------
    list of Round
    """
    if q < 2:
        return []
    fold = _Fold.of(q)
    core = fold.core
    first = np.array([fold.first(i) for i in range(core + 1)])
    survivor, lone = first[1:] - 1, first[:-1]
    paired = np.flatnonzero(first[1:] - first[:-1] == 2)
    i = np.arange(core)
    reduces = collective != "allgather"

    def window(mask: int) -> Callable[[np.ndarray], np.ndarray]:
        if collective == "allreduce":
            return largest_part(core, mask)
        ranks = int((first[mask::mask] - first[:-mask:mask]).max())
        return largest_part(q, ranks)

    def exchange(mask: int, elements: Callable[[np.ndarray], np.ndarray], reduce: bool,
                 given: np.ndarray | None = None) -> Round:
        # ``given``: the first core rank of each message's window, whose ranks' blocks
        # it carries (a ReduceScatter's or AllGather's)
        windows = None if given is None else \
            np.column_stack([first[given], first[given + mask]])
        return Round(1, (Messages(survivor, survivor[i ^ mask], elements, reduce,
                                  windows=windows),))

    fold_in = _whole if reduces else largest_part(q)
    last = int(lone[paired].max()) if len(paired) else 0

    def rest(count: np.ndarray) -> np.ndarray:  # the vector less the smallest extra block
        return count - count // q - (last < count % q)

    fold_out = {"allreduce": _whole, "reduce_scatter": largest_part(q)}.get(collective, rest)
    rounds = [Round(1, (Messages(lone[paired], survivor[paired], fold_in, reduces),))] \
        if len(paired) else []
    masks = [1 << k for k in range(core.bit_length() - 1)]
    if doubling:
        rounds += [exchange(mask, _whole, True) for mask in masks]
    else:
        blocks = collective != "allreduce"
        if collective != "allgather":  # the half of the partner's range
            rounds += [exchange(mask, window(mask), True,
                                (i ^ mask) & -mask if blocks else None)
                       for mask in reversed(masks)]
        if collective != "reduce_scatter":  # the range gathered so far
            rounds += [exchange(mask, window(mask), False, i & -mask if blocks else None)
                       for mask in masks]
    if not len(paired):
        # every rank in every round: the lock-step rounds are its steps (played, the same
        # to 1e-15 on dgx_h100(2), (16), (128) and default_flat(8), (16), to 1e-6 on the
        # spine shapes of 8-32 nodes, at +22% of 16 nodes' tables' CPU time)
        return rounds
    rounds.append(Round(1, (Messages(survivor[paired], lone[paired], fold_out, False),)))
    return [Round(1, tuple(_in_round(k, m) for k, r in enumerate(rounds) for m in r.messages),
                  paced=True)]


def _in_round(k: int, messages: Messages) -> Messages:
    """``messages`` in flight in round ``k`` only (of a paced round)."""
    return replace(messages, rounds=np.tile([k, k + 1], (len(messages.src), 1)))


def candidates(collective: str, channels: int, ranks_per_node: int | None) -> tuple[Params, ...]:
    """What selection tries: halving-doubling, and for AllReduce recursive doubling, on one
    channel (channels would share its pairs; its orders already give every GPU its own
    NIC).

    Its arguments are those :mod:`collectives.registry` describes.
    """
    if channels > 1:
        return ()
    return ((), *(((("doubling", True),),) if collective == "allreduce" else ()))


#: Open MPI coll/tuned's ids (coll_tuned_allreduce_decision.c,
#: coll_tuned_allgather_decision.c, coll_tuned_reduce_scatter_block_decision.c)
_OMPI = ompi_ids({"allreduce": (6, "rabenseifner"), "allgather": (3, "recursive_doubling"),
                  "reduce_scatter": (2, "recursive_doubling")})


def ompi(collective: str, params: Mapping[str, Any]) -> tuple[int, str]:
    """Open MPI's id and name: Rabenseifner's algorithm, or with ``doubling=True`` Open
    MPI's recursive doubling (allreduce algorithm 3).

    Parameters
    ----------
    collective : str
        The collective.
    params : mapping
        The candidate's parameters.

    Returns
    -------
    (int, str)

    Examples
    --------
    >>> ompi("allreduce", {}), ompi("allreduce", {"doubling": True})
    ((6, 'rabenseifner'), (3, 'recursive_doubling'))
    """
    if collective == "allreduce" and params.get("doubling"):
        return 3, "recursive_doubling"
    return _OMPI(collective, params)


ALGORITHM = register(Algorithm(
    name="rhd", collectives=frozenset(BLOCK_COLLECTIVES), params={"doubling": False},
    resolve=resolve_params, traffic=traffic, steps=rank_steps, step_rounds=step_rounds,
    candidates=candidates, orders=node_minor, ompi=ompi))
