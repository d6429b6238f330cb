"""Inputs made ready late on a non-blocking stream: every algorithm and collective (Broadcast
and Reduce from the last rank, AllToAll, beside the block ones) must wait for them.  Rank 0
prints one ``SUMMARY {json}`` line.

Run under ``mpirun -n P python -m mpi4py stream_order.py --transport mpi|nccl``.  For each
case the send buffer is zeroed and synchronised, then, on a new non-blocking stream, a
slow chain of kernels runs before the buffer is filled with ``rank + 1``; the collective
is called with ``stream=`` that stream and checked after synchronising it.  An executor
that read the buffer before the stream reached it would see zeros.

``--xp numpy`` is a stand-in for machines without a GPU: the same cases and checks on
NumPy buffers over MPI, no streams; it tests this script's plumbing, not stream order.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

import collectives
from collectives.registry import names

#: AllReduce, Broadcast and Reduce elements; ReduceScatter, AllGather and AllToAll use
#: blocks of COUNT // nranks + 1
COUNT = 6720
#: the collectives run, each with every algorithm and native
COLLECTIVES = (*collectives.BLOCK_COLLECTIVES, "broadcast", "reduce", "alltoall")


def slow(xp: Any) -> None:
    """Queue a few milliseconds of GPU work on the current stream."""
    x = xp.ones(1 << 22, xp.float32)
    for _ in range(30):
        x = xp.sin(x)


def one_case(xp: Any, comm: Any, collective: str, algorithm: str, rank: int,
             nranks: int, **params: Any) -> str | None:
    """Run one case (``params``: the algorithm's); return a failure message or None."""
    part = COUNT // nranks + 1
    count = {"reduce_scatter": part * nranks, "allgather": part,
             "alltoall": part * nranks}.get(collective, COUNT)
    send = xp.zeros(count, xp.float32)
    function = getattr(collectives, collective)
    kwargs: dict[str, Any] = {"comm": comm, "algorithm": algorithm, **params}
    root = nranks - 1  # Broadcast's and Reduce's: the last rank
    if collective in ("broadcast", "reduce"):
        kwargs["root"] = root
    if xp is np:
        send[...] = rank + 1
        result = function(send, **kwargs)
    else:
        xp.cuda.Device().synchronize()
        stream = xp.cuda.Stream(non_blocking=True)
        with stream:
            slow(xp)
            send.fill(rank + 1)
        result = function(send, stream=stream, **kwargs)
        stream.synchronize()
    total = nranks * (nranks + 1) / 2
    ranks = np.repeat(np.arange(1, nranks + 1, dtype=np.float32), part)
    want = {"allreduce": np.full(count, total), "reduce_scatter": np.full(part, total),
            "allgather": ranks, "alltoall": ranks, "broadcast": np.full(count, root + 1),
            "reduce": np.full(count, total) if rank == root else None}[collective]
    if want is None or result is None:
        return None if want is None and result is None else (
            f"{collective} {algorithm}: returned {type(result).__name__} off the root")
    got = result.get() if xp is not np else result
    if not np.array_equal(got, want):
        return (f"{collective} {algorithm} {params or ''}: {int((got != want).sum())} wrong of "
                f"{got.size}")
    return None


def cases() -> list[tuple[str, str, dict[str, Any]]]:
    """``(collective, algorithm, parameters)`` per case: every algorithm and native, and
    recursive doubling (which reduces into what a step sends)."""
    out: list[tuple[str, str, dict[str, Any]]] = [
        (collective, algorithm, {}) for collective in COLLECTIVES
        for algorithm in (*names(composed=False, collective=collective), "native")]
    return [*out, ("allreduce", "rhd", {"doubling": True})]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=("mpi", "nccl"), default="mpi")
    parser.add_argument("--xp", choices=("cupy", "numpy"), default="cupy")
    args = parser.parse_args()
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
    if args.xp == "cupy":
        import cupy as xp
        comm = collectives.NcclComm(world) if args.transport == "nccl" else world
        if args.transport == "mpi":
            xp.cuda.Device(rank % xp.cuda.runtime.getDeviceCount()).use()
        else:
            comm.device.use()
    else:
        xp, comm = np, world
    failures = []
    for collective, algorithm, params in cases():
        failure = one_case(xp, comm, collective, algorithm, rank, nranks, **params)
        if failure:
            failures.append(f"rank {rank}: {failure}")
    merged = [f for per_rank in world.gather(failures) or [] for f in per_rank]
    if rank == 0:
        print("SUMMARY " + json.dumps({"transport": args.transport, "xp": args.xp,
                                       "nranks": nranks, "cases": len(cases()),
                                       "failures": merged[:30]}), flush=True)
    if args.xp == "cupy" and args.transport == "nccl":
        comm.close()


if __name__ == "__main__":
    main()
