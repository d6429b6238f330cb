"""AllToAllv's per-peer counts and displacements (MPI's signature), checked.

MPI_Alltoallv gives each rank ``sendcounts[j]`` and ``sdispls[j]`` (what it sends rank
``j``, from where in its send buffer) and ``recvcounts[i]`` and ``rdispls[i]`` (what it
receives from rank ``i``, to where).  A schedule needs the whole matrix
``counts[i][j]`` (elements rank ``i`` sends rank ``j``), the same on every rank, and the
ranks must agree: rank ``j``'s ``recvcounts[i]`` is rank ``i``'s ``sendcounts[j]``.
:func:`check_vector` checks one rank's arguments against its buffers, :func:`agree_counts`
exchanges them (through the transport's ``allgather``, before any other communication)
so that every rank raises the same error or builds the same matrix; :func:`pack` and
:func:`unpack` move the blocks between the user's buffers and the working buffer.
"""

from __future__ import annotations

from reprlib import repr as brief
from typing import Any, Callable, Sequence

from topology.checks import check_int, is_int

from .layout import Counts, alltoall_blocks

__all__ = ["check_counts", "check_vector", "agree_counts", "pack", "unpack", "packed_views",
           "unpacked_views"]


def check_counts(counts: Any, nranks: int) -> Counts:
    """Check an AllToAllv count matrix and return it as tuples.

    Parameters
    ----------
    counts : sequence of sequence of int
        ``counts[i][j]``: elements rank ``i`` sends rank ``j``, each at least 0.
    nranks : int
        Number of ranks: the matrix is ``nranks`` by ``nranks``.

    Returns
    -------
    tuple of tuple of int

    Raises
    ------
    ValueError
        Naming the row or entry at fault.

    Examples
    --------
    >>> check_counts([[0, 1], [2, 3]], 2)
    ((0, 1), (2, 3))
    """
    rows = tuple(counts)
    if len(rows) != nranks:
        raise ValueError(f"counts has {len(rows)} rows; with {nranks} ranks it must have "
                         f"{nranks} (one per sending rank)")
    matrix = []
    for i, row in enumerate(rows):
        row = tuple(row)
        if len(row) != nranks:
            raise ValueError(f"counts[{i}] has {len(row)} entries; it must have {nranks} "
                             "(one per receiving rank)")
        for j, value in enumerate(row):
            check_int(value, f"counts[{i}][{j}]", 0)
        matrix.append(row)
    return tuple(matrix)


def check_vector(name: str, counts: Sequence[Any], displs: Sequence[Any], nranks: int,
                 size: int) -> None:
    """Check one side of one rank's AllToAllv arguments against its buffer.

    Parameters
    ----------
    name : {"send", "recv"}
        Which side (``sendcounts``/``sdispls`` or ``recvcounts``/``rdispls``).
    counts, displs : sequence of int
        One entry per rank, each at least 0.
    nranks : int
        Number of ranks.
    size : int
        Elements of the buffer: every block ``[displs[k], displs[k] + counts[k])`` must
        lie in it; receive blocks must not overlap.

    Raises
    ------
    ValueError
        Naming the argument, the entry, its value and what is allowed.

    Examples
    --------
    >>> check_vector("recv", [2, 2], [0, 1], 2, 4)
    Traceback (most recent call last):
    ...
    ValueError: recvcounts/rdispls: the blocks from ranks 0 and 1 overlap ([0, 2) and [1, 3)); receive blocks must be disjoint
    """
    names = ("sendcounts", "sdispls") if name == "send" else ("recvcounts", "rdispls")
    for label, values in zip(names, (counts, displs)):
        if len(values) != nranks:
            raise ValueError(f"{label} has {len(values)} entries; it must have one per rank "
                             f"({nranks})")
        for k, value in enumerate(values):
            if not is_int(value) or value < 0:
                raise ValueError(f"{label}[{k}] = {brief(value)} is not allowed; it must be "
                                 "an integer >= 0")
    for k, (length, start) in enumerate(zip(counts, displs)):
        if start + length > size:
            raise ValueError(f"{names[0]}[{k}] = {length} at {names[1]}[{k}] = {start} ends at "
                             f"{start + length}, past the {size} elements of the {name} buffer")
    if name == "recv":
        spans = sorted((int(d), int(d) + int(c), k) for k, (c, d) in enumerate(zip(counts, displs))
                       if c)
        for (lo, hi, a), (lo2, hi2, b) in zip(spans, spans[1:]):
            if lo2 < hi:
                first, second = sorted((a, b))
                raise ValueError(f"recvcounts/rdispls: the blocks from ranks {first} and "
                                 f"{second} overlap ([{lo}, {hi}) and [{lo2}, {hi2})); "
                                 "receive blocks must be disjoint")


def agree_counts(allgather: Callable[[Any], list[Any]], rank: int,
                 sendcounts: Sequence[int], recvcounts: Sequence[int]) -> Counts:
    """Exchange every rank's counts and return the matrix, or raise on every rank alike.

    Parameters
    ----------
    allgather : callable
        ``allgather(obj) -> list``: every rank's ``obj`` in rank order (the transport's
        :meth:`~collectives.executors.transport.Transport.allgather_object`).
    rank : int
        This rank.
    sendcounts, recvcounts : sequence of int
        This rank's counts, checked (:func:`check_vector`).

    Returns
    -------
    tuple of tuple of int
        ``counts[i][j]``: rank ``i``'s ``sendcounts[j]``.

    Raises
    ------
    ArgumentMismatchError
        On every rank, naming the first pair that disagrees: a rank expecting from a
        peer a count other than the one the peer sends it.

    Examples
    --------
    >>> agree_counts(lambda obj: [((1, 2), (1, 3)), ((3, 4), (2, 4))], 0, (1, 2), (1, 3))
    ((1, 2), (3, 4))
    """
    from .executors.check import ArgumentMismatchError

    everyone = allgather((tuple(int(c) for c in sendcounts), tuple(int(c) for c in recvcounts)))
    sends = tuple(send for send, _ in everyone)
    for j, (_, expected) in enumerate(everyone):
        for i, sent in enumerate(sends):
            if expected[i] != sent[j]:
                raise ArgumentMismatchError(
                    f"alltoallv: rank {j} expects {expected[i]} elements from rank {i} "
                    f"(recvcounts[{i}]), which sends it {sent[j]} (sendcounts[{j}])"
                    + (" (this rank)" if rank in (i, j) else ""))
    return sends


def packed_views(work: Any, send: Any, sdispls: Sequence[int], counts: Counts,
                 rank: int) -> tuple[tuple[Any, Any], ...]:
    """``rank``'s send blocks as ``(source, destination)`` views: each non-empty block of
    ``send`` (at ``sdispls``) and its place in the working buffer.

    Parameters
    ----------
    work, send : array
        The working buffer and the user's send buffer (NumPy or CuPy, one dtype).
    sdispls : sequence of int
        Where block ``j`` starts in ``send``.
    counts : tuple of tuple of int
        The agreed matrix (:func:`agree_counts`).
    rank : int
        This rank.

    Returns
    -------
    tuple of (array, array)
    """
    sends, _ = alltoall_blocks(counts, rank)
    return tuple((send[start:start + hi - lo], work[lo:hi])
                 for (lo, hi), start in zip(sends, sdispls) if hi > lo)


def unpacked_views(recv: Any, work: Any, rdispls: Sequence[int], counts: Counts,
                   rank: int) -> tuple[tuple[Any, Any], ...]:
    """``rank``'s received blocks as ``(source, destination)`` views: each non-empty
    block's place in the working buffer and its place in ``recv`` (at ``rdispls``).

    Parameters
    ----------
    recv, work : array
        The user's receive buffer and the working buffer.
    rdispls : sequence of int
        Where block ``i`` starts in ``recv``.
    counts : tuple of tuple of int
        The agreed matrix.
    rank : int
        This rank.

    Returns
    -------
    tuple of (array, array)
    """
    _, recvs = alltoall_blocks(counts, rank)
    return tuple((work[lo:hi], recv[start:start + hi - lo])
                 for (lo, hi), start in zip(recvs, rdispls) if hi > lo)


def pack(work: Any, send: Any, sdispls: Sequence[int], counts: Counts, rank: int) -> None:
    """Copy ``rank``'s send blocks from ``send`` (at ``sdispls``) into the working buffer
    (the arguments of :func:`packed_views`)."""
    for source, destination in packed_views(work, send, sdispls, counts, rank):
        destination[...] = source


def unpack(recv: Any, work: Any, rdispls: Sequence[int], counts: Counts, rank: int) -> None:
    """Copy ``rank``'s received blocks from the working buffer into ``recv`` (at
    ``rdispls``; the arguments of :func:`unpacked_views`)."""
    for source, destination in unpacked_views(recv, work, rdispls, counts, rank):
        destination[...] = source
