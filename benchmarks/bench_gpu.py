"""Time per call of every algorithm against the native collective, on GPU buffers.

Run under ``mpirun -n P python -m mpi4py benchmarks/bench_gpu.py --transport nccl`` (one
rank per GPU, or several where NCCL allows it), from 8 B to 256 MiB (``--max-bytes``).
Each time is the slowest rank's mean over iterations that fill about ``--budget``
seconds, timed from a barrier to the stream's completion; the table prints native's time
and each algorithm's time as a ratio to it (above 1: slower than native), with
recursive doubling (``rhd`` ``doubling=True``) for AllReduce.

``--xp numpy --transport mpi`` runs the same loop on NumPy buffers over MPI: a stand-in
that tests the plumbing on machines without a GPU, not a GPU figure.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import collectives

ALGORITHMS = ("native", *collectives.ALGORITHMS)
#: label -> (the collective it runs, algorithm, parameters): columns beside the algorithms
VARIANTS: dict[str, tuple[str, str, dict]] = {
    "doubling": ("allreduce", "rhd", {"doubling": True})}
COLUMNS = (*ALGORITHMS, *VARIANTS)


def sizes(largest: int, factor: int) -> list[int]:
    """Byte sizes from 8 to ``largest``, multiplying by ``factor``, ``largest`` last."""
    out = [8]
    while out[-1] * factor < largest:
        out.append(out[-1] * factor)
    return [*out, largest]


def buffers(xp: Any, collective: str, nbytes: int, nranks: int) -> tuple[Any, Any]:
    """float32 send and receive buffers whose full vector has about ``nbytes`` bytes."""
    part = max(nbytes // 4 // nranks, 1)
    if collective == "allreduce":
        return xp.ones(part * nranks, xp.float32), xp.empty(part * nranks, xp.float32)
    if collective == "reduce_scatter":
        return xp.ones(part * nranks, xp.float32), xp.empty(part, xp.float32)
    return xp.ones(part, xp.float32), xp.empty(part * nranks, xp.float32)


def time_call(world: Any, call: Any, finish: Any, budget_s: float) -> float:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=("nccl", "mpi"), default="nccl")
    parser.add_argument("--xp", choices=("cupy", "numpy"), default="cupy")
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--budget", type=float, default=0.05, help="seconds per measurement")
    args = parser.parse_args()
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
        finish = stream.synchronize
    else:
        xp, comm = np, world
        finish = lambda: None  # noqa: E731 - NumPy calls return when done
    if rank == 0:
        print(f"# {args.transport} on {args.xp} buffers, {nranks} ranks, float32; time of "
              f"native (us) and each algorithm's time / native's")
        print(f"{'collective':>15} {'bytes':>10} {'native':>10} "
              + " ".join(f"{a:>9}" for a in COLUMNS[1:]), flush=True)
    for collective in collectives.COLLECTIVES:
        function = getattr(collectives, collective)
        for nbytes in sizes(args.max_bytes, args.factor):
            send, recv = buffers(xp, collective, nbytes, nranks)
            times = {}
            for column in COLUMNS:
                runs, algorithm, params = VARIANTS.get(column, (collective, column, {}))
                if runs != collective:
                    continue
                kwargs = {"comm": comm, "algorithm": algorithm, **params}
                if stream is not None:
                    kwargs["stream"] = stream
                times[column] = time_call(
                    world, lambda: function(send, recv, **kwargs), finish, args.budget)
            if rank == 0:
                native = times["native"]
                print(f"{collective:>15} {nbytes:>10} {native * 1e6:>10.1f} "
                      + " ".join(f"{times[a] / native:>9.2f}" if a in times else f"{'-':>9}"
                                 for a in COLUMNS[1:]),
                      flush=True)
    if args.xp == "cupy" and args.transport == "nccl":
        comm.close()


if __name__ == "__main__":
    main()
