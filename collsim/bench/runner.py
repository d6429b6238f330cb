"""The timing loop, run on every rank of an MPI job.

For every size and every algorithm, in that order (so all algorithms of one size run
back to back, under the same conditions), out of place and then in place:

1. fill the buffers with :func:`~.check.rank_input` and run once; with checking on,
   count the elements that differ from :func:`~.check.expected` (summed over ranks);
2. run ``warmup`` untimed iterations;
3. barrier, then time ``iters`` iterations (waiting for the GPU stream at the end, or
   after every call with ``blocking``), and report the average per iteration over the
   ranks as ``average`` says: rank 0's, the mean, the least or the largest (default).
   With ``report_cputime`` the time stops when the calls are issued, before the wait.

This is nccl-tests' loop (its ``-n``/``-w``/``-c``/``-a``/``-z``/``-C``), with a barrier
before every timed batch as in the OSU micro-benchmarks.  Broadcast (in place), Reduce and
AllToAll (out of place) have one placement each, which both columns show.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import collectives
from collectives import api
from collectives.schedule import BLOCK_COLLECTIVES
from .check import count_wrong, expected, rank_input

__all__ = ["Timing", "Row", "Case", "open_comm", "measure_row", "sweep"]


@dataclass(frozen=True)
class Timing:
    """One placement of one row: seconds per call and wrong elements (None: unchecked)."""

    time_s: float
    wrong: int | None


@dataclass(frozen=True)
class Row:
    """One size of one algorithm, out of place and in place."""

    algorithm: str
    nbytes: int
    count: int
    out_of_place: Timing
    in_place: Timing


@dataclass(frozen=True)
class Case:
    """What every row of a run shares (``average``, ``blocking``, ``report_cputime`` and
    ``root`` as nccl-tests' ``-a``, ``-z``, ``-C`` and ``-r``)."""

    collective: str
    dtype: str
    op: str
    iters: int
    warmup: int
    check: bool
    average: int = 3
    blocking: bool = False
    report_cputime: bool = False
    root: int = 0


def open_comm(transport: str, buffer: str, mpi_comm: Any) -> tuple[Any, Any]:
    """Return ``(comm for the collectives, array module)`` for ``transport`` and ``buffer``.

    With CuPy buffers each rank uses GPU ``local rank mod GPUs``; ``nccl`` creates an
    :class:`~collectives.NcclComm` over ``mpi_comm``.

    Parameters
    ----------
    transport : str
        ``"nccl"`` for an NCCL communicator; anything else uses ``mpi_comm`` itself.
    buffer : str
        ``"numpy"`` for host buffers; anything else imports CuPy.
    mpi_comm : mpi4py.MPI.Comm
        The job's MPI communicator.

    Returns
    -------
    tuple
        ``(comm, xp)``: the communicator to pass to the collectives and ``numpy`` or
        ``cupy``.
    """
    if buffer == "numpy":
        import numpy
        xp: Any = numpy
    else:
        import cupy
        from mpi4py import MPI

        xp = cupy

        local = mpi_comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
        xp.cuda.Device(local % xp.cuda.runtime.getDeviceCount()).use()
    if transport == "nccl":
        from collectives.executors.nccl import NcclComm

        return NcclComm(mpi_comm), xp
    return mpi_comm, xp


def _buffers(case: Case, xp: Any, rank: int, nranks: int, count: int,
             in_place: bool) -> tuple[Any, Any, Any]:
    """``(sendbuf, recvbuf, result view)`` holding this rank's input, on ``xp``: for
    Broadcast the one buffer (the root's vector at the root, -1 elsewhere) twice."""
    mine = xp.asarray(rank_input(case.collective, rank, nranks, count, case.dtype, case.op,
                                 case.root))
    if case.collective == "broadcast":
        if rank != case.root:
            mine[...] = -1
        return mine, mine, mine
    if case.collective == "reduce":
        recv = xp.empty(count if rank == case.root else 0, dtype=mine.dtype)
        return mine, recv, recv
    if case.collective == "alltoall":
        recv = xp.empty(mine.size, dtype=mine.dtype)
        return mine, recv, recv
    if not in_place:
        out = count * nranks if case.collective == "allgather" else count
        recv = xp.empty(out, dtype=mine.dtype)
        return mine, recv, recv
    if case.collective == "allgather":
        recv = xp.zeros(count * nranks, dtype=mine.dtype)
        recv[rank * count:(rank + 1) * count] = mine
        return api.IN_PLACE, recv, recv
    return api.IN_PLACE, mine, mine[:count]


def _synchronize(xp: Any) -> None:
    if xp.__name__ == "cupy":
        xp.cuda.get_current_stream().synchronize()


def _measure(case: Case, call: Callable[[Any, Any], Any], xp: Any, mpi_comm: Any,
             count: int, in_place: bool) -> Timing:
    from mpi4py import MPI

    rank, nranks = mpi_comm.Get_rank(), mpi_comm.Get_size()
    send, recv, result = _buffers(case, xp, rank, nranks, count, in_place)
    call(send, recv)
    wrong = None
    if case.check:
        want = expected(case.collective, rank, nranks, count, case.dtype, case.op, case.root)
        wrong = mpi_comm.allreduce(count_wrong(result, want), op=MPI.SUM)
    for _ in range(case.warmup):
        call(send, recv)
    _synchronize(xp)
    mpi_comm.Barrier()
    start = time.perf_counter()
    for _ in range(case.iters):
        call(send, recv)
        if case.blocking:
            _synchronize(xp)
    issued = time.perf_counter()
    _synchronize(xp)
    end = issued if case.report_cputime else time.perf_counter()
    return Timing(_over_ranks((end - start) / case.iters, case.average, mpi_comm), wrong)


def _over_ranks(seconds: float, average: int, mpi_comm: Any) -> float:
    """Every rank's ``seconds`` made one as nccl-tests' ``-a``: 0 rank 0's, 1 the mean,
    2 the least, 3 the largest."""
    from mpi4py import MPI

    if average == 0:
        return mpi_comm.bcast(seconds, root=0)
    if average == 1:
        return mpi_comm.allreduce(seconds, op=MPI.SUM) / mpi_comm.Get_size()
    return mpi_comm.allreduce(seconds, op=MPI.MIN if average == 2 else MPI.MAX)


def measure_row(case: Case, algorithm: str, comm: Any, xp: Any, mpi_comm: Any,
                nbytes: int, count: int) -> Row:
    """Measure ``algorithm`` at one size, out of place then in place, on every rank.

    Parameters
    ----------
    case : Case
        What every row shares (collective, dtype, op, iters, warmup, check).
    algorithm : str
        Algorithm name passed to the collective.
    comm : Any
        Communicator passed to the collective (from :func:`open_comm`).
    xp : module
        Array module for the buffers (``numpy`` or ``cupy``).
    mpi_comm : mpi4py.MPI.Comm
        MPI communicator for barriers and the cross-rank reductions.
    nbytes : int
        Message size in bytes, recorded in the row.
    count : int
        Elements per rank.

    Returns
    -------
    Row
        The out-of-place and in-place timings.

    Raises
    ------
    TypeError, ValueError
        From the collective, on every rank alike and before any communication, when the
        algorithm cannot run this dtype or op (e.g. ``native`` on a dtype MPI lacks).
    """
    call = _caller(case, algorithm, comm)
    out_of_place = _measure(case, call, xp, mpi_comm, count, False)
    if case.collective not in BLOCK_COLLECTIVES:  # one placement only (module docstring)
        return Row(algorithm, nbytes, count, out_of_place, out_of_place)
    return Row(algorithm, nbytes, count, out_of_place,
               _measure(case, call, xp, mpi_comm, count, True))


def _caller(case: Case, algorithm: str, comm: Any) -> Callable[[Any, Any], Any]:
    """``call(sendbuf, recvbuf)``: one call of the case's collective."""
    if case.collective == "broadcast":
        return lambda send, recv: collectives.broadcast(recv, root=case.root, comm=comm,
                                                        algorithm=algorithm)
    if case.collective == "reduce":
        return lambda send, recv: collectives.reduce(
            send, recv if recv.size else None, root=case.root, op=case.op, comm=comm,
            algorithm=algorithm)
    if case.collective == "alltoall":
        return lambda send, recv: collectives.alltoall(send, recv, comm=comm,
                                                       algorithm=algorithm)
    function = getattr(api, case.collective)
    options = {} if case.collective == "allgather" else {"op": case.op}
    return lambda send, recv: function(send, recv, comm=comm, algorithm=algorithm, **options)


def sweep(case: Case, algorithms: Sequence[str], rows: Sequence[tuple[int, int]], comm: Any,
          xp: Any, mpi_comm: Any,
          progress: Callable[[str, int], None] | None = None) -> tuple[list[Row], dict[str, str]]:
    """Measure every size, and at each size every algorithm; on every rank.

    An algorithm whose collective raises TypeError or ValueError is skipped at that
    size and all later ones.

    Parameters
    ----------
    case : Case
        What every row shares (collective, dtype, op, iters, warmup, check).
    algorithms : Sequence[str]
        Algorithm names, measured in this order at each size.
    rows : Sequence[tuple[int, int]]
        ``(nbytes, count)`` per size.
    comm : Any
        Communicator passed to the collectives (from :func:`open_comm`).
    xp : module
        Array module for the buffers (``numpy`` or ``cupy``).
    mpi_comm : mpi4py.MPI.Comm
        MPI communicator for barriers and the cross-rank reductions.
    progress : callable or None, optional
        Called as ``progress(algorithm, nbytes)`` after each attempt.

    Returns
    -------
    (rows, skipped)
        The measured rows (size-major) and, per algorithm that could not run, the reason.
    """
    measured: list[Row] = []
    skipped: dict[str, str] = {}
    for nbytes, count in rows:
        for algorithm in algorithms:
            if algorithm in skipped:
                continue
            try:
                measured.append(measure_row(case, algorithm, comm, xp, mpi_comm, nbytes, count))
            except (TypeError, ValueError) as error:
                skipped[algorithm] = str(error)
            if progress is not None:
                progress(algorithm, nbytes)
    return measured, skipped
