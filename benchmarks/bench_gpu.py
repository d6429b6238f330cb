"""Time per call of every algorithm against the native collective, on GPU buffers.

Run under ``mpirun -n P python -m mpi4py benchmarks/bench_gpu.py --transport nccl`` (one
rank per GPU, or two per GPU where NCCL allows it), from 8 B to 256 MiB (``--max-bytes``).
Each time is the slowest rank's mean over iterations that fill about ``--budget``
seconds, timed from a barrier to the stream's completion; the table gives native's time
and each algorithm's time as a ratio to it (above 1: slower than native), with
recursive doubling (``rhd`` ``doubling=True``) for AllReduce, and over NCCL the ring
without CUDA graphs (``ring-eager``: an ``NcclComm(graphs=False)``), beside the ring's
column that replays its graph.

``--against numpy`` (with ``--transport mpi --xp cupy``) times every column on NumPy
buffers too, in the same run, and gives CuPy's time as a ratio to NumPy's instead: what
staging through the host (or a CUDA-aware MPI) costs over MPI on host memory.
``--markdown`` prints the table as a markdown table (rank 0; a title line first).

``--collectives`` picks the collectives timed (all six by default: the block ones, then
Broadcast and Reduce from rank 0 and AllToAll, whose native baselines over NCCL are
``ncclBroadcast``, ``ncclReduce`` and grouped ``ncclSend``/``ncclRecv``).

``--xp numpy --transport mpi`` runs the same loop on NumPy buffers over MPI: a stand-in
that tests the plumbing on machines without a GPU, not a GPU figure.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np

import collectives
from collectives.registry import names

#: the collectives timed, in order
TIMED = (*collectives.BLOCK_COLLECTIVES, "broadcast", "reduce", "alltoall")
#: the algorithms of the others that the block collectives' do not include
EXCHANGE_ALGORITHMS = tuple(dict.fromkeys(
    name for collective in TIMED[3:] for name in names(collective=collective)
    if name not in collectives.BLOCK_ALGORITHMS))
ALGORITHMS = ("native", *collectives.BLOCK_ALGORITHMS, *EXCHANGE_ALGORITHMS)
#: label -> (the collective it runs, algorithm, parameters): columns beside the algorithms
VARIANTS: dict[str, tuple[str, str, dict]] = {
    "doubling": ("allreduce", "rhd", {"doubling": True})}
COLUMNS = (*ALGORITHMS, *VARIANTS)
#: over NCCL, the ring without CUDA graphs (every call enqueued step by step): beside the
#: ring's column, what replaying its graph saves
EAGER = "ring-eager"


def sizes(largest: int, factor: int) -> list[int]:
    """Byte sizes from 8 to ``largest``, multiplying by ``factor``, ``largest`` last."""
    out = [8]
    while out[-1] * factor < largest:
        out.append(out[-1] * factor)
    return [*out, largest] if largest > out[-1] else out


def buffers(xp: Any, collective: str, nbytes: int, nranks: int) -> tuple[Any, Any]:
    """float32 send and receive buffers whose full vector has about ``nbytes`` bytes (a
    Broadcast's one buffer is the receive buffer, the send buffer None)."""
    if collective in ("broadcast", "reduce"):
        whole = max(nbytes // 4, 1)
        return (None if collective == "broadcast" else xp.ones(whole, xp.float32),
                xp.ones(whole, xp.float32))
    part = max(nbytes // 4 // nranks, 1)
    if collective == "allreduce":
        return xp.ones(part * nranks, xp.float32), xp.empty(part * nranks, xp.float32)
    if collective == "reduce_scatter":
        return xp.ones(part * nranks, xp.float32), xp.empty(part, xp.float32)
    if collective == "alltoall":
        return xp.ones(part * nranks, xp.float32), xp.empty(part * nranks, xp.float32)
    return xp.ones(part, xp.float32), xp.empty(part * nranks, xp.float32)


def caller(collective: str) -> Callable[..., Any]:
    """``call(send, recv, **kwargs)`` of ``collective`` (a Broadcast's buffer is ``recv``)."""
    if collective == "broadcast":
        return lambda send, recv, **kwargs: collectives.broadcast(recv, **kwargs)
    function: Callable[..., Any] = getattr(collectives, collective)
    return function


def time_call(world: Any, call: Callable[[], Any], finish: Callable[[], Any],
              budget_s: float) -> float:
    """Mean seconds per ``call()`` on the slowest rank (``finish()`` waits for the GPU)."""
    from mpi4py import MPI
    for _ in range(2):
        call()
    finish()
    world.Barrier()
    start = time.perf_counter()
    call()
    finish()
    once = world.allreduce(time.perf_counter() - start, op=MPI.MAX)
    iterations = max(3, min(500, int(budget_s / max(once, 1e-7))))
    world.Barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        call()
    finish()
    return world.allreduce((time.perf_counter() - start) / iterations, op=MPI.MAX)


def columns_of(collective: str) -> list[tuple[str, str, dict]]:
    """``(label, algorithm, parameters)`` of every column that runs ``collective``."""
    out = []
    for column in COLUMNS:
        runs, algorithm, params = VARIANTS.get(column, (collective, column, {}))
        if runs == collective and (algorithm == "native" or algorithm in names(collective=runs)):
            out.append((column, algorithm, params))
    return out


def time_columns(world: Any, function: Any, collective: str, send: Any, recv: Any, comm: Any,
                 stream: Any, budget_s: float, eager: Any = None) -> dict[str, float]:
    """Seconds per call of every column of ``collective`` on these buffers (and, given
    ``eager``, an ``NcclComm(graphs=False)``, of :data:`EAGER` on it)."""
    finish = (lambda: None) if stream is None else stream.synchronize
    times = {}
    runs = [(column, algorithm, params, comm)
            for column, algorithm, params in columns_of(collective)]
    if eager is not None and "ring" in names(collective=collective):
        runs.append((EAGER, "ring", {}, eager))
    for column, algorithm, params, on in runs:
        kwargs = {"comm": on, "algorithm": algorithm, **params}
        if stream is not None:
            kwargs["stream"] = stream
        times[column] = time_call(world, lambda: function(send, recv, **kwargs), finish,
                                  budget_s)
    return times


def row_text(collective: str, nbytes: int, base_us: float, ratios: dict[str, float],
             names: tuple[str, ...], markdown: bool) -> str:
    """One row: the baseline's microseconds and the ratio of each of ``names`` (``-``
    where the collective has no such column)."""
    cells = [f"{ratios[a]:.2f}" if a in ratios else "-" for a in names]
    if markdown:
        return f"| {collective} | {nbytes} | {base_us:.1f} | " + " | ".join(cells) + " |"
    return (f"{collective:>15} {nbytes:>10} {base_us:>10.1f} "
            + " ".join(f"{cell:>9}" for cell in cells))


def header(names: tuple[str, ...], markdown: bool, base: str) -> str:
    """The table's header (a markdown header and its rule with ``markdown``)."""
    if markdown:
        return ("| collective | bytes | " + base + " (us) | " + " | ".join(names) + " |\n"
                + "|---" * (3 + len(names)) + "|")
    return f"{'collective':>15} {'bytes':>10} {base:>10} " + " ".join(f"{a:>9}" for a in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=("nccl", "mpi"), default="nccl")
    parser.add_argument("--xp", choices=("cupy", "numpy"), default="cupy")
    parser.add_argument("--against", choices=("native", "numpy"), default="native",
                        help="the baseline of the ratios: native on the same buffers, or "
                             "every column on NumPy buffers (over MPI)")
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--budget", type=float, default=0.05, help="seconds per measurement")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--collectives", nargs="+", choices=TIMED, default=list(TIMED),
                        help="the collectives to time (all by default)")
    args = parser.parse_args()
    if args.against == "numpy" and args.transport != "mpi":
        parser.error("--against numpy is not allowed with --transport nccl; NCCL takes "
                     "CuPy buffers only (use --transport mpi)")
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
    stream = None
    if args.xp == "cupy":
        import cupy as xp
        comm = collectives.NcclComm(world) if args.transport == "nccl" else world
        device = comm.device if args.transport == "nccl" else xp.cuda.Device(
            rank % xp.cuda.runtime.getDeviceCount())
        device.use()
        stream = xp.cuda.Stream(non_blocking=True)
    else:
        xp, comm = np, world
    base = "native" if args.against == "native" else "numpy native"
    timed = {column for collective in args.collectives for column, _, _ in columns_of(collective)}
    names = tuple(column for column in (COLUMNS[1:] if args.against == "native" else COLUMNS)
                  if column in timed)
    eager = None
    if args.xp == "cupy" and args.transport == "nccl" and "ring" in timed:
        eager = collectives.NcclComm(world, graphs=False)
        names = (*names, EAGER)
    if rank == 0:
        what = ("each algorithm's time / native's" if args.against == "native"
                else f"each column's time on {args.xp} / on numpy buffers")
        print(f"{'' if args.markdown else '# '}{args.transport} on {args.xp} buffers, "
              f"{nranks} ranks, float32; time of {base} (us) and {what}\n")
        print(header(names, args.markdown, base), flush=True)
    for collective in args.collectives:
        function = caller(collective)
        for nbytes in sizes(args.max_bytes, args.factor):
            send, recv = buffers(xp, collective, nbytes, nranks)
            times = time_columns(world, function, collective, send, recv, comm, stream,
                                 args.budget, eager)
            if args.against == "numpy":
                host = buffers(np, collective, nbytes, nranks)
                baseline = time_columns(world, function, collective, *host, world, None,
                                        args.budget)
                base_us = baseline["native"] * 1e6
                ratios = {a: times[a] / baseline[a] for a in times}
            else:
                base_us = times["native"] * 1e6
                ratios = {a: times[a] / times["native"] for a in times}
            if rank == 0:
                print(row_text(collective, nbytes, base_us, ratios, names, args.markdown),
                      flush=True)
    if args.xp == "cupy" and args.transport == "nccl":
        comm.close()
    if eager is not None:
        eager.close()


if __name__ == "__main__":
    main()
