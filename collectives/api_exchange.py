"""The public Broadcast, Reduce, AllToAll and AllToAllv calls, over MPI on NumPy buffers.

Signatures after mpi4py's (``Bcast``, ``Reduce``, ``Alltoall``, ``Alltoallv``) and the
keywords of :mod:`collectives.api`::

    broadcast(buf, *, root=0, comm=None, algorithm="auto", check=None, **params)
    reduce(sendbuf, recvbuf=None, *, root=0, op="sum", comm=None, algorithm="auto", ...)
    alltoall(sendbuf, recvbuf=None, *, comm=None, algorithm="auto", ...)
    alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, *, comm=None, ...)

``algorithm`` is one of the schedules that serve the collective
(:func:`collectives.registry.names`), ``native`` (MPI's own: ``MPI_Bcast``,
``MPI_Reduce``, ``MPI_Alltoall``, ``MPI_Alltoallv``, entries of
:data:`~collectives.executors.mpi.NATIVE_MPI`) or ``auto``, which chooses as MPICH's
defaults do (:func:`collectives.auto.mpich_choice`).  Every argument is checked before
any communication; ``alltoallv``'s counts are exchanged first (one allgather of every
rank's counts) and checked for agreement, so that every rank raises the same
:class:`~collectives.ArgumentMismatchError` or builds the same schedule.  A checked call
then runs through the one call path (:mod:`collectives.calls`): it binds a
:class:`~collectives.calls.BoundCall`, which the call cache keeps (not an AllToAllv's,
whose counts are agreed on every call, nor a Reduce's off its root).  Ranks that disagree
on anything else raise as the other collectives' schedules do (every message's tag
carries the call's signature, root and counts included); ``check=True`` (or
``COLLSIM_CHECK=1``) makes them agree on the whole call first, ``native`` included, which
otherwise runs bare, without hellos.  CuPy buffers, NCCL and persistent handles do not
yet run these collectives: a CuPy buffer or an :class:`~collectives.NcclComm` raises
TypeError.

Importing this module imports neither mpi4py nor CuPy.
"""

from __future__ import annotations

from dataclasses import replace
from reprlib import repr as brief
from typing import Any, Sequence

import numpy as np

from .auto import mpich_choice
from .calls import BoundCall, Prepared, key, lookup, remember
from .executors import transport_for
from .executors.buffers import IN_PLACE, Call
from .executors.check import check_enabled, signature
from .executors.plan import get_plan
from .executors.transport import Transport
from .layout import peer_counts
from .ops import check_dtype, check_op, check_op_dtype
from .registry import names
from .rooted import check_root
from .vcounts import agree_counts, check_vector

__all__ = ["broadcast", "reduce", "alltoall", "alltoallv"]


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


def _transport(comm: Any) -> Transport:
    """The MPI transport of ``comm`` (None: ``MPI.COMM_WORLD``, as
    :func:`~.executors.transport_for` takes it); TypeError for NCCL."""
    transport = transport_for(comm)
    if transport.name != "mpi":
        raise TypeError("comm is an NcclComm; Broadcast, Reduce and AllToAll run over an "
                        "mpi4py communicator only")
    return transport


def _algorithm(collective: str, algorithm: Any, params: dict[str, Any], nbytes: int,
               nranks: int) -> str:
    """Check ``algorithm`` and its ``params``; return the one to run (``auto`` resolved)."""
    allowed = (*names(collective=collective), "native", "auto")
    if algorithm not in allowed:
        raise ValueError(f"algorithm={brief(algorithm)} is not supported for {collective}; "
                         f"choose one of {list(allowed)}")
    if algorithm in ("native", "auto") and params:
        raise TypeError(f"algorithm={algorithm!r} takes no parameters, got {sorted(params)}; "
                        "name an algorithm to tune it")
    return mpich_choice(collective, nbytes, nranks) if algorithm == "auto" else algorithm


def _cached(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: Any, algorithm: Any,
            check: bool | None, params: dict[str, Any]) -> tuple[tuple | None, BoundCall | None]:
    """The call cache's facts for a call (None where the send buffer is not an array of
    its own), and the bound call kept under them, if any."""
    if type(sendbuf) is not np.ndarray or sendbuf is recvbuf:
        return None, None
    facts = key(collective, sendbuf, recvbuf, comm, op, algorithm, check, None, params)
    return facts, lookup(facts)


def _first(facts: tuple | None, comm: Any, transport: Transport, call: Call, op: str,
           algorithm: str, params: dict[str, Any], check: bool | None) -> Any:
    """Bind a checked call (:class:`~collectives.calls.BoundCall`), remember it under
    ``facts`` (where it has an output here), and run it.  MPI's own collective runs bare,
    without hellos: ``check`` is what makes the ranks agree before it."""
    native = algorithm == "native"
    transport.validate(call, op, native)
    planned = "alltoall" if call.collective == "alltoallv" else call.collective
    plan = None if native else get_plan(planned, algorithm, transport.size, transport.rank,
                                        call.count, call.dtype, params)
    agreed = (signature(call.collective, call.count, call.dtype.name, op, algorithm, params)
              if check_enabled(check) else None)
    shape = replace(call, send=None, recv=None, result=None)
    bound = BoundCall(Prepared(comm, transport, shape, op, algorithm, call.send is None, plan,
                               agreed, False, False))
    if call.recv is not None:
        remember(facts, bound)
    return bound.first(call, None)


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
    rooted = {**params, "root": root}
    facts = key("broadcast", IN_PLACE, buf, comm, "sum", algorithm, check, None, rooted)
    bound = lookup(facts)
    if bound is not None:
        return bound(IN_PLACE, buf)
    flat = _array("buf", buf)
    transport = _transport(comm)
    check_root(root, transport.size)
    chosen = _algorithm("broadcast", algorithm, params, flat.nbytes, transport.size)
    call = Call("broadcast", np, flat.dtype, flat.size, flat.size, None, flat, buf, root)
    return _first(facts, comm, transport, call, "sum", chosen, rooted, check)


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
    rooted = {**params, "root": root}
    facts, bound = _cached("reduce", sendbuf, recvbuf, comm, op, algorithm, check, rooted)
    if bound is not None:
        return bound(sendbuf, recvbuf)
    send = _array("sendbuf", sendbuf)
    transport = _transport(comm)
    check_root(root, transport.size)
    op = check_op(op)
    check_op_dtype(op, send.dtype)
    chosen = _algorithm("reduce", algorithm, params, send.nbytes, transport.size)
    mine = transport.rank == root
    recv = None
    if mine:
        recv = np.empty_like(send) if recvbuf is None else _array("recvbuf", recvbuf)
        if recv.size != send.size or recv.dtype != send.dtype:
            raise ValueError(f"recvbuf has {recv.size} elements of {recv.dtype}; sendbuf has "
                             f"{send.size} of {send.dtype}")
    call = Call("reduce", np, send.dtype, send.size, send.size, send, recv,
                recvbuf if recvbuf is not None and mine else recv, root)
    return _first(facts, comm, transport, call, op, chosen, rooted, check)


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
    facts, bound = _cached("alltoall", sendbuf, recvbuf, comm, "sum", algorithm, check, {})
    if bound is not None:
        return bound(sendbuf, recvbuf)
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
    block = send.size // p
    chosen = _algorithm("alltoall", algorithm, {}, block * send.itemsize, p)
    call = Call("alltoall", np, send.dtype, block, block, send, recv,
                recv if recvbuf is None else recvbuf)
    return _first(facts, comm, transport, call, "sum", chosen, {}, check)


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
    count = max(max(row) for row in counts)
    uniform = counts == peer_counts(count, p)
    vector = (list(sendcounts), list(sdispls), list(recvcounts), list(rdispls), counts)
    call = Call("alltoallv", np, send.dtype, count, count, send, recv, recvbuf, 0, vector)
    return _first(None, comm, transport, call, "sum", algorithm,
                  {} if uniform or algorithm == "native" else {"counts": counts}, False)
