"""The public Broadcast, Reduce, AllToAll and AllToAllv calls, over MPI on NumPy buffers.

Signatures after mpi4py's (``Bcast``, ``Reduce``, ``Alltoall``, ``Alltoallv``) and the
keywords of :mod:`collectives.api`::

    broadcast(buf, *, root=0, comm=None, algorithm="auto", check=None, **params)
    reduce(sendbuf, recvbuf=None, *, root=0, op="sum", comm=None, algorithm="auto", ...)
    alltoall(sendbuf, recvbuf=None, *, comm=None, algorithm="auto", ...)
    alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, *, comm=None, ...)

``algorithm`` is one of the schedules that serve the collective
(:func:`collectives.registry.names`), ``native`` (MPI's own: ``MPI_Bcast``,
``MPI_Reduce``, ``MPI_Alltoall``, ``MPI_Alltoallv``) or ``auto``, which chooses as
MPICH's defaults do (:data:`AUTO`).  Every argument is checked before any communication;
``alltoallv``'s counts are exchanged first (one allgather of every rank's counts) and
checked for agreement, so that every rank raises the same
:class:`~collectives.ArgumentMismatchError` or builds the same schedule.  Ranks that
disagree on anything else raise as the other collectives' schedules do (every message's
tag carries the call's signature, root and counts included); ``check=True`` makes them
agree on the whole call first, ``native`` included.  The call path of
:mod:`collectives.api` (CuPy buffers, NCCL, persistent handles, tuning tables) does not
yet run these collectives: a CuPy buffer or an :class:`~collectives.NcclComm` raises
TypeError.

Importing this module imports neither mpi4py nor CuPy.
"""

from __future__ import annotations

from reprlib import repr as brief
from typing import Any, Sequence

import numpy as np

from .executors import transport_for
from .executors.check import ArgumentMismatchError
from .executors.guard import signed_plan
from .executors.plan import Plan, get_plan
from .layout import peer_counts
from .ops import check_dtype, check_op, check_op_dtype
from .registry import names
from .rooted import check_root
from .vcounts import agree_counts, check_vector, pack, unpack

__all__ = ["AUTO", "broadcast", "reduce", "alltoall", "alltoallv"]

#: ``auto``'s choice, as MPICH's defaults (src/mpi/coll/mpir_coll.c and the cvars of
#: src/mpi/coll/{bcast,reduce,alltoall}): (collective, bytes below which, fewest ranks
#: from which) -> the algorithm for small messages, and the one otherwise.  Broadcast:
#: binomial below MPIR_CVAR_BCAST_SHORT_MSG_SIZE = 12288 bytes or under
#: MPIR_CVAR_BCAST_MIN_PROCS = 8 ranks, else scatter + ring allgather; Reduce: binomial
#: below MPIR_CVAR_REDUCE_SHORT_MSG_SIZE = 2048 bytes, else reduce-scatter + gather;
#: AllToAll: Bruck below MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE = 256 bytes a block with at
#: least 8 ranks, all posted at once below MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE = 32768,
#: pairwise above.
AUTO: dict[str, tuple[int, int, str, str]] = {
    "broadcast": (12288, 8, "binomial", "scatter_allgather"),
    "reduce": (2048, 1, "binomial", "rabenseifner"),
}
_ALLTOALL_SHORT, _ALLTOALL_MEDIUM, _ALLTOALL_MIN_RANKS = 256, 32768, 8


def _auto(collective: str, nbytes: int, nranks: int) -> str:
    """``auto``'s algorithm (:data:`AUTO`) for a call of ``nbytes`` (a block's, AllToAll)."""
    if collective == "alltoall":
        if nbytes < _ALLTOALL_SHORT and nranks >= _ALLTOALL_MIN_RANKS:
            return "bruck_alltoall"
        return "linear" if nbytes < _ALLTOALL_MEDIUM else "pairwise"
    short, few, small, large = AUTO[collective]
    return small if nbytes < short or nranks < few else large


def _array(name: str, buf: Any) -> np.ndarray:
    """``buf`` as a flat view, checked: a C-contiguous NumPy array of a supported dtype."""
    if not isinstance(buf, np.ndarray):
        raise TypeError(f"{name} is a {type(buf).__module__}.{type(buf).__name__}; these "
                        "collectives take a numpy.ndarray (CuPy buffers run AllReduce, "
                        "ReduceScatter and AllGather only)")
    if not buf.flags.c_contiguous:
        raise ValueError(f"{name} is not contiguous (shape {buf.shape}); pass a C-contiguous "
                         f"array, e.g. {name}.copy()")
    check_dtype(buf.dtype)
    return buf.reshape(-1)


def _transport(comm: Any) -> Any:
    """The MPI transport of ``comm`` (None: ``MPI.COMM_WORLD``); TypeError for NCCL."""
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    transport = transport_for(comm)
    if transport.name != "mpi":
        raise TypeError("comm is an NcclComm; Broadcast, Reduce and AllToAll run over an "
                        "mpi4py communicator only")
    return transport


def _algorithm(collective: str, algorithm: Any, params: dict[str, Any]) -> None:
    allowed = (*names(collective=collective), "native", "auto")
    if algorithm not in allowed:
        raise ValueError(f"algorithm={brief(algorithm)} is not supported for {collective}; "
                         f"choose one of {list(allowed)}")
    if algorithm in ("native", "auto") and params:
        raise TypeError(f"algorithm={algorithm!r} takes no parameters, got {sorted(params)}; "
                        "name an algorithm to tune it")


def _agree(transport: Any, what: tuple[Any, ...]) -> None:
    """``check=True``: every rank's call shape, compared on every rank alike."""
    everyone = transport.allgather_object(what)
    for rank, theirs in enumerate(everyone):
        if theirs != everyone[0]:
            fields = ("collective", "count", "dtype", "op", "algorithm", "root")
            differ = [f for f, a, b in zip(fields, everyone[0], theirs) if a != b]
            raise ArgumentMismatchError(f"{what[0]}: rank {rank} differs from rank 0 in "
                                        f"{', '.join(differ)}")


def _decide(transport: Any, collective: str, count: int, dtype: Any, op: str, algorithm: str,
            root: int, check: bool | None, nbytes: int) -> str:
    """The algorithm to run, once the ranks agreed on the call where ``check`` asks."""
    if check:
        _agree(transport, (collective, count, dtype.str, op, algorithm, root))
    return _auto(collective, nbytes, transport.size) if algorithm == "auto" else algorithm


def _run(transport: Any, collective: str, algorithm: str, count: int, dtype: Any, op: str,
         source: np.ndarray, params: dict[str, Any]) -> tuple[Plan, np.ndarray]:
    """Walk the schedule on a working buffer holding ``source`` at its input range."""
    plan = get_plan(collective, algorithm, transport.size, transport.rank, count, dtype, params)
    work = np.zeros(plan.count, dtype)
    work[plan.input] = source[:plan.input.stop - plan.input.start]
    transport.guard.check_usable()
    transport.run_host(plan, signed_plan(plan, op, transport.guard.codec), op, work, None)
    return plan, work


def broadcast(buf: Any, *, root: int = 0, comm: Any = None, algorithm: str = "auto",
              check: bool | None = None, **params: Any) -> np.ndarray:
    """Broadcast ``buf`` from ``root`` to every rank, in place (``MPI_Bcast``).

    Parameters
    ----------
    buf : numpy.ndarray
        The vector: the root's is sent, every other rank's is overwritten (same size and
        dtype on every rank).
    root : int
        The rank that broadcasts.
    comm : mpi4py.MPI.Intracomm or None
        The communicator (``MPI.COMM_WORLD`` by default).
    algorithm : str
        ``chain``, ``binomial``, ``scatter_allgather``, ``native`` or ``auto``.
    check : bool or None
        True: the ranks agree on the call first.
    **params
        The algorithm's parameters (``segments`` for ``chain``).

    Returns
    -------
    numpy.ndarray
        ``buf``.

    Raises
    ------
    ValueError, TypeError
        For a bad argument, before any communication.
    ArgumentMismatchError
        When the ranks disagree.
    """
    flat = _array("buf", buf)
    transport = _transport(comm)
    check_root(root, transport.size)
    _algorithm("broadcast", algorithm, params)
    algorithm = _decide(transport, "broadcast", flat.size, flat.dtype, "", algorithm, root,
                        check, flat.nbytes)
    if algorithm == "native":
        transport.comm.Bcast(flat, root)
        return buf
    plan, work = _run(transport, "broadcast", algorithm, flat.size, flat.dtype, "sum", flat,
                      {**params, "root": root})
    flat[...] = work[:flat.size]
    return buf


def reduce(sendbuf: Any, recvbuf: Any = None, *, root: int = 0, op: str = "sum",
           comm: Any = None, algorithm: str = "auto", check: bool | None = None,
           **params: Any) -> np.ndarray | None:
    """Reduce every rank's ``sendbuf`` into the root's ``recvbuf`` (``MPI_Reduce``).

    Parameters
    ----------
    sendbuf : numpy.ndarray
        This rank's vector (same size and dtype on every rank).
    recvbuf : numpy.ndarray or None
        The root's result buffer (allocated when None); ignored elsewhere.
    root : int
        The rank that receives the result.
    op : str
        The reduction (:data:`collectives.ops.ALL_OPS`, defined for the dtype).
    comm, algorithm, check, **params
        As for :func:`broadcast`; ``algorithm`` is ``chain``, ``binomial``,
        ``rabenseifner``, ``native`` or ``auto``.

    Returns
    -------
    numpy.ndarray or None
        At the root the result (``recvbuf``), elsewhere None.

    Raises
    ------
    ValueError, TypeError
        For a bad argument, before any communication.
    ArgumentMismatchError
        When the ranks disagree.
    """
    send = _array("sendbuf", sendbuf)
    transport = _transport(comm)
    check_root(root, transport.size)
    op = check_op(op)
    check_op_dtype(op, send.dtype)
    _algorithm("reduce", algorithm, params)
    mine = transport.rank == root
    recv = None
    if mine:
        recv = np.empty_like(send) if recvbuf is None else _array("recvbuf", recvbuf)
        if recv.size != send.size or recv.dtype != send.dtype:
            raise ValueError(f"recvbuf has {recv.size} elements of {recv.dtype}; sendbuf has "
                             f"{send.size} of {send.dtype}")
    algorithm = _decide(transport, "reduce", send.size, send.dtype, op, algorithm, root, check,
                        send.nbytes)
    if algorithm == "native":
        from .executors.mpi import _MPI_OPS
        transport.comm.Reduce(send, recv, _MPI_OPS[op], root)
    else:
        plan, work = _run(transport, "reduce", algorithm, send.size, send.dtype, op, send,
                          {**params, "root": root})
        if recv is not None:
            recv[...] = work[plan.output]
    if not mine:
        return None
    return recv if recvbuf is None else recvbuf


def alltoall(sendbuf: Any, recvbuf: Any = None, *, comm: Any = None, algorithm: str = "auto",
             check: bool | None = None) -> np.ndarray:
    """Send block ``j`` of ``sendbuf`` to rank ``j``; receive rank ``i``'s into block ``i``
    (``MPI_Alltoall``).

    Parameters
    ----------
    sendbuf : numpy.ndarray
        ``nranks`` blocks of equal size.
    recvbuf : numpy.ndarray or None
        As large as ``sendbuf`` (allocated when None).
    comm, algorithm, check
        As for :func:`broadcast`; ``algorithm`` is ``pairwise``, ``bruck``, ``linear``,
        ``native`` or ``auto``.

    Returns
    -------
    numpy.ndarray
        ``recvbuf``.

    Raises
    ------
    ValueError, TypeError
        For a bad argument (a ``sendbuf`` that does not cut into ``nranks`` blocks), before
        any communication.
    """
    send = _array("sendbuf", sendbuf)
    transport = _transport(comm)
    p = transport.size
    if send.size % p:
        raise ValueError(f"sendbuf has {send.size} elements; an alltoall on {p} ranks needs a "
                         f"multiple of {p} (one equal block per rank; alltoallv takes others)")
    recv = np.empty_like(send) if recvbuf is None else _array("recvbuf", recvbuf)
    if recv.size != send.size or recv.dtype != send.dtype:
        raise ValueError(f"recvbuf has {recv.size} elements of {recv.dtype}; sendbuf has "
                         f"{send.size} of {send.dtype}")
    _algorithm("alltoall", algorithm, {})
    block = send.size // p
    algorithm = _decide(transport, "alltoall", block, send.dtype, "", algorithm, 0, check,
                        block * send.itemsize)
    if algorithm == "native":
        transport.comm.Alltoall(send, recv)
    else:
        plan, work = _run(transport, "alltoall", algorithm, block, send.dtype, "sum", send, {})
        recv[...] = work[plan.output]
    return recv if recvbuf is None else recvbuf


def alltoallv(sendbuf: Any, sendcounts: Sequence[int], sdispls: Sequence[int], recvbuf: Any,
              recvcounts: Sequence[int], rdispls: Sequence[int], *, comm: Any = None,
              algorithm: str = "pairwise") -> np.ndarray:
    """Send ``sendcounts[j]`` elements from ``sdispls[j]`` to rank ``j`` and receive
    ``recvcounts[i]`` from rank ``i`` at ``rdispls[i]`` (``MPI_Alltoallv``).

    Parameters
    ----------
    sendbuf, recvbuf : numpy.ndarray
        The buffers (one dtype); every block must lie in its buffer and receive blocks
        must not overlap.
    sendcounts, sdispls, recvcounts, rdispls : sequence of int
        One entry per rank (:mod:`collectives.vcounts`).
    comm : mpi4py.MPI.Intracomm or None
        The communicator.
    algorithm : str
        ``pairwise``, ``linear`` or ``native``.

    Returns
    -------
    numpy.ndarray
        ``recvbuf``.

    Raises
    ------
    ValueError, TypeError
        For a bad argument, before any communication.
    ArgumentMismatchError
        On every rank, when a rank's ``recvcounts`` are not what the others send it.
    """
    send, recv = _array("sendbuf", sendbuf), _array("recvbuf", recvbuf)
    if recv.dtype != send.dtype:
        raise TypeError(f"recvbuf has {recv.dtype}; sendbuf has {send.dtype}")
    transport = _transport(comm)
    p = transport.size
    check_vector("send", sendcounts, sdispls, p, send.size)
    check_vector("recv", recvcounts, rdispls, p, recv.size)
    allowed = ("pairwise", "linear", "native")
    if algorithm not in allowed:
        raise ValueError(f"algorithm={brief(algorithm)} is not supported for alltoallv; choose "
                         f"one of {list(allowed)}")
    counts = agree_counts(transport.allgather_object, transport.rank, sendcounts, recvcounts)
    if algorithm == "native":
        from mpi4py.util.dtlib import from_numpy_dtype
        kind = from_numpy_dtype(send.dtype)
        transport.comm.Alltoallv([send, (list(sendcounts), list(sdispls)), kind],
                                 [recv, (list(recvcounts), list(rdispls)), kind])
        return recvbuf
    count = max(max(row) for row in counts)
    uniform = counts == peer_counts(count, p)
    plan = get_plan("alltoall", algorithm, p, transport.rank, count, send.dtype,
                    {} if uniform else {"counts": counts})
    work = np.zeros(plan.count, send.dtype)
    pack(work, send, sdispls, counts, transport.rank)
    transport.guard.check_usable()
    transport.run_host(plan, signed_plan(plan, "sum", transport.guard.codec), "sum", work, None)
    unpack(recv, work, rdispls, counts, transport.rank)
    return recvbuf
