"""Message matching and a progress order for schedules, shared by verify and interpret.

Steps complete under the strictest MPI semantics: a step completes once every peer it
sends to or receives from has posted the step holding the matching operation
(synchronous sends, as for large messages under a rendezvous protocol).  A schedule that
progresses under these rules progresses under any eager protocol too.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .errors import DeadlockError, ScheduleError
from .schedule import Recv, Schedule, Send

__all__ = ["Matching", "match", "completion_order", "describe"]

Location = tuple[int, int]  # (rank, step)


@dataclass(frozen=True)
class Matching:
    """The partner of every send and receive.

    Attributes
    ----------
    partners : tuple of tuple of tuple of int
        ``partners[rank][step]`` lists, per operation of that step, the step index at the
        peer that holds the matching operation (``-1`` for a local copy).
    keys : tuple of tuple of tuple
        ``keys[rank][step]`` lists, per operation, the message key ``(src, dst, k)``
        (``None`` for a local copy).
    """

    partners: tuple[tuple[tuple[int, ...], ...], ...]
    keys: tuple[tuple[tuple, ...], ...]


def describe(rank: int, step: int, op: Send | Recv) -> str:
    """``rank r step i: op``, how errors name an operation."""
    return f"rank {rank} step {step}: {op}"


def match(schedule: Schedule) -> Matching:
    """Pair the k-th send from a to b with the k-th receive at b from a.

    Parameters
    ----------
    schedule : Schedule
        The schedule to match.

    Returns
    -------
    Matching
        The partner of every send and receive.

    Raises
    ------
    ScheduleError
        For a peer out of range or equal to the rank, an unmatched send or receive, or a
        matched pair whose lengths differ.
    """
    p = schedule.nranks
    sends: dict[tuple[int, int, int], tuple[int, int, Send]] = {}
    recvs: dict[tuple[int, int, int], tuple[int, int, Recv]] = {}
    counters: dict[tuple[int, int, bool], int] = {}
    keys = []
    for rank in range(p):
        rank_keys = []
        for index, step in enumerate(schedule.steps(rank)):
            step_keys: list[tuple[int, int, int] | None] = []
            for op in step.ops:
                if not isinstance(op, (Send, Recv)):
                    step_keys.append(None)
                    continue
                if not 0 <= op.peer < p or op.peer == rank:
                    raise ScheduleError(f"{describe(rank, index, op)}: peer {op.peer} must be "
                                        f"another rank in 0..{p - 1}")
                is_send = isinstance(op, Send)
                src, dst = (rank, op.peer) if is_send else (op.peer, rank)
                k = counters.get((src, dst, is_send), 0)
                counters[(src, dst, is_send)] = k + 1
                key = (src, dst, k)
                if isinstance(op, Send):
                    sends[key] = (rank, index, op)
                else:
                    recvs[key] = (rank, index, op)
                step_keys.append(key)
            rank_keys.append(tuple(step_keys))
        keys.append(tuple(rank_keys))
    for key, (rank, index, op) in sends.items():
        if key not in recvs:
            raise ScheduleError(f"{describe(rank, index, op)}: unmatched send (message {key[2]} "
                                f"from {key[0]} to {key[1]} has no receive)")
        peer_rank, peer_index, peer_op = recvs[key]
        if op.stop - op.start != peer_op.stop - peer_op.start:
            raise ScheduleError(f"{describe(rank, index, op)}: length {op.stop - op.start} does "
                                f"not match {describe(peer_rank, peer_index, peer_op)} of length "
                                f"{peer_op.stop - peer_op.start}")
    for key, (rank, index, op) in recvs.items():
        if key not in sends:
            raise ScheduleError(f"{describe(rank, index, op)}: unmatched receive (message {key[2]} "
                                f"from {key[0]} to {key[1]} is never sent)")
    partners = tuple(
        tuple(tuple(-1 if key is None else (recvs[key][1] if key[0] == rank else sends[key][1])
                    for key in step_keys) for step_keys in rank_keys)
        for rank, rank_keys in enumerate(keys))
    return Matching(partners, tuple(keys))


def completion_order(schedule: Schedule, matching: Matching) -> list[Location]:
    """Return an order in which every step of every rank can complete.

    Parameters
    ----------
    schedule : Schedule
        The schedule.
    matching : Matching
        Its matching, from :func:`match`.

    Returns
    -------
    list of Location
        ``(rank, step)`` pairs, each step after every step it waits on.

    Raises
    ------
    DeadlockError
        When some rank can never complete a step; the message names the stuck ranks, their
        steps and the peers they wait on.
    """
    p = schedule.nranks
    lengths = [len(schedule.steps(r)) for r in range(p)]
    current = [0] * p
    order: list[Location] = []
    pending = deque(range(p))
    queued = [True] * p

    def peers(rank: int, step: int) -> list[tuple[int, int]]:
        ops = schedule.steps(rank)[step].ops
        return [(op.peer, partner) for op, partner in zip(ops, matching.partners[rank][step])
                if partner >= 0 and isinstance(op, (Send, Recv))]

    while pending:
        rank = pending.popleft()
        queued[rank] = False
        step = current[rank]
        if step == lengths[rank]:
            continue
        if any(current[peer] < partner for peer, partner in peers(rank, step)):
            continue
        order.append((rank, step))
        current[rank] = step + 1
        wake = [rank]
        if step + 1 < lengths[rank]:
            wake.extend(peer for peer, _ in peers(rank, step + 1))
        for other in wake:
            if not queued[other]:
                queued[other] = True
                pending.append(other)
    if len(order) != sum(lengths):
        stuck = [r for r in range(p) if current[r] < lengths[r]]
        details = "; ".join(
            f"rank {r} at step {current[r]} waits for "
            + ", ".join(f"rank {peer} to reach step {partner}"
                        for peer, partner in peers(r, current[r]) if current[peer] < partner)
            for r in stuck[:4])
        raise DeadlockError(f"schedule deadlocks: {len(stuck)} rank(s) stuck: {details}")
    return order
