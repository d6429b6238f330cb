"""Broadcast, Reduce, AllToAll and AllToAllv calls checked in full and decided, not run.

Each ``check_*`` function takes a public call's arguments (:mod:`collectives.api_exchange`,
:mod:`collectives.handles`), checks them, lays the buffers out
(:class:`~collectives.executors.buffers.Call`) and decides what the call runs
(:class:`~collectives.calls.Prepared`): MPI's or NCCL's own collective, or a schedule's
plan.  Nothing is communicated, except an AllToAllv's counts, which every rank exchanges
and checks (:func:`~collectives.vcounts.agree_counts`) so that all raise alike or build
the same schedule.  Buffers are NumPy or CuPy arrays; over an
:class:`~collectives.NcclComm` they must be CuPy arrays on its GPU (its ``validate``).
"""

from __future__ import annotations

from dataclasses import replace
from reprlib import repr as brief
from typing import Any, Sequence

from .auto import mpich_choice
from .calls import Prepared
from .executors import transport_for
from .executors.buffers import Call, check_pair, flat_buffer
from .executors.check import check_enabled, signature
from .executors.plan import get_plan
from .executors.transport import Transport
from .layout import peer_counts
from .ops import check_op, check_op_dtype
from .registry import names
from .rooted import check_root
from .vcounts import agree_counts, check_vector

__all__ = ["check_broadcast", "check_reduce", "check_alltoall", "check_alltoallv"]

#: AllToAllv's algorithms: the schedules that take per-peer counts, and MPI's or NCCL's own
ALLTOALLV_ALGORITHMS = ("pairwise", "linear", "native")


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


def _like(xp: Any, send: Any, recvbuf: Any) -> tuple[Any, Any]:
    """A receive buffer like ``send`` (allocated when ``recvbuf`` is None), checked against
    it, flat, and the array to return."""
    if recvbuf is None:
        recv = xp.empty_like(send)
        return recv, recv
    xp_recv, recv = flat_buffer("recvbuf", recvbuf, writeable=True)
    check_pair(send, recv, xp, xp_recv)
    if recv.size != send.size:
        raise ValueError(f"recvbuf has {recv.size} elements; sendbuf has {send.size} (the "
                         "same number is needed)")
    return recv, recvbuf


def _prepare(comm: Any, transport: Transport, call: Call, op: str, algorithm: str,
             params: dict[str, Any], check: bool | None) -> Prepared:
    """Validate ``call`` on ``transport`` and decide what it runs: the rank's plan (none for
    ``native``) and what the ranks agree on (with ``check`` on; over an ``NcclComm``, once
    per call shape unless ``check=False``, as :func:`collectives.api.check_call` decides).
    MPI's own collective runs bare, without hellos: ``check`` is what makes ranks agree."""
    native = algorithm == "native"
    transport.validate(call, op, native)
    planned = "alltoall" if call.collective == "alltoallv" else call.collective
    plan = None if native else get_plan(planned, algorithm, transport.size, transport.rank,
                                        call.count, call.dtype, params)
    checked = check_enabled(check)
    once = not checked and check is not False and transport.name == "nccl"
    agreed = (signature(call.collective, call.count, call.dtype.name, op, algorithm, params)
              if checked or once else None)
    shape = replace(call, send=None, recv=None, result=None)
    return Prepared(comm, transport, shape, op, algorithm, call.send is None, plan, agreed,
                    once, False)


def check_broadcast(buf: Any, root: Any, comm: Any, algorithm: Any, check: bool | None,
                    params: dict[str, Any]) -> tuple[Prepared, Call]:
    """Check a Broadcast of ``buf`` from ``root`` (:func:`collectives.broadcast`).

    Parameters
    ----------
    buf, root, comm, algorithm, check, params
        As passed to :func:`collectives.broadcast`.

    Returns
    -------
    prepared : Prepared
        What the call runs.
    call : Call
        Its buffers, laid out.

    Raises
    ------
    TypeError, ValueError
        For a bad argument.
    """
    xp, flat = flat_buffer("buf", buf, writeable=True)
    transport = transport_for(comm)
    check_root(root, transport.size)
    chosen = _algorithm("broadcast", algorithm, params, flat.nbytes, transport.size)
    call = Call("broadcast", xp, flat.dtype, flat.size, flat.size, None, flat, buf, root)
    return _prepare(comm, transport, call, "sum", chosen, {**params, "root": root}, check), call


def check_reduce(sendbuf: Any, recvbuf: Any, root: Any, op: Any, comm: Any, algorithm: Any,
                 check: bool | None, params: dict[str, Any]) -> tuple[Prepared, Call]:
    """Check a Reduce into ``root``'s ``recvbuf`` (:func:`collectives.reduce`); ``recvbuf``
    is allocated at the root when None, and ignored elsewhere.

    Parameters
    ----------
    sendbuf, recvbuf, root, op, comm, algorithm, check, params
        As passed to :func:`collectives.reduce`.

    Returns
    -------
    prepared : Prepared
        What the call runs.
    call : Call
        Its buffers, laid out (``recv`` None off the root).

    Raises
    ------
    TypeError, ValueError
        For a bad argument.
    """
    xp, send = flat_buffer("sendbuf", sendbuf)
    transport = transport_for(comm)
    check_root(root, transport.size)
    op = check_op(op)
    check_op_dtype(op, send.dtype)
    chosen = _algorithm("reduce", algorithm, params, send.nbytes, transport.size)
    recv = result = None
    if transport.rank == root:
        recv, result = _like(xp, send, recvbuf)
    call = Call("reduce", xp, send.dtype, send.size, send.size, send, recv, result, root)
    return _prepare(comm, transport, call, op, chosen, {**params, "root": root}, check), call


def check_alltoall(sendbuf: Any, recvbuf: Any, comm: Any, algorithm: Any,
                   check: bool | None) -> tuple[Prepared, Call]:
    """Check an AllToAll (:func:`collectives.alltoall`).

    Parameters
    ----------
    sendbuf, recvbuf, comm, algorithm, check
        As passed to :func:`collectives.alltoall`.

    Returns
    -------
    prepared : Prepared
        What the call runs.
    call : Call
        Its buffers, laid out (``count`` is one block's elements).

    Raises
    ------
    TypeError, ValueError
        For a bad argument, such as a ``sendbuf`` that does not cut into ``nranks``
        equal blocks.
    """
    xp, send = flat_buffer("sendbuf", sendbuf)
    transport = transport_for(comm)
    p = transport.size
    if send.size % p:
        raise ValueError(f"sendbuf has {send.size} elements; an alltoall on {p} ranks needs a "
                         f"multiple of {p} (one equal block per rank; alltoallv takes others)")
    recv, result = _like(xp, send, recvbuf)
    block = send.size // p
    chosen = _algorithm("alltoall", algorithm, {}, block * send.itemsize, p)
    call = Call("alltoall", xp, send.dtype, block, block, send, recv, result)
    return _prepare(comm, transport, call, "sum", chosen, {}, check), call


def check_alltoallv(sendbuf: Any, sendcounts: Sequence[int], sdispls: Sequence[int],
                    recvbuf: Any, recvcounts: Sequence[int], rdispls: Sequence[int],
                    comm: Any, algorithm: Any) -> tuple[Prepared, Call]:
    """Check an AllToAllv (:func:`collectives.alltoallv`) and agree on its counts.

    Parameters
    ----------
    sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, comm, algorithm
        As passed to :func:`collectives.alltoallv`.

    Returns
    -------
    prepared : Prepared
        What the call runs.
    call : Call
        Its buffers, laid out, with the counts agreed (``vector``).

    Raises
    ------
    TypeError, ValueError
        For a bad argument, before any communication.
    ArgumentMismatchError
        On every rank, when a rank's ``recvcounts`` are not what the others send it.
    """
    xp, send = flat_buffer("sendbuf", sendbuf)
    xp_recv, recv = flat_buffer("recvbuf", recvbuf, writeable=True)
    check_pair(send, recv, xp, xp_recv)
    transport = transport_for(comm)
    p = transport.size
    check_vector("send", sendcounts, sdispls, p, send.size)
    check_vector("recv", recvcounts, rdispls, p, recv.size)
    if algorithm not in ALLTOALLV_ALGORITHMS:
        raise ValueError(f"algorithm={brief(algorithm)} is not supported for alltoallv; choose "
                         f"one of {list(ALLTOALLV_ALGORITHMS)}")
    counts = agree_counts(transport.allgather_object, transport.rank, sendcounts, recvcounts)
    count = max(max(row) for row in counts)
    uniform = counts == peer_counts(count, p)
    vector = (list(sendcounts), list(sdispls), list(recvcounts), list(rdispls), counts)
    call = Call("alltoallv", xp, send.dtype, count, count, send, recv, recvbuf, 0, vector)
    params = {} if uniform or algorithm == "native" else {"counts": counts}
    return _prepare(comm, transport, call, "sum", algorithm, params, None), call
