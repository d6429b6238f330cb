"""Bus bandwidth of each algorithm beside the native MPI collective, on NumPy buffers.

Run ``python benchmarks/bench_executors.py`` (it relaunches itself under ``mpirun -n 4``)
or ``mpirun -n 4 python benchmarks/bench_executors.py``.  For each collective and size it
times every algorithm and ``native`` in the same run and prints, as nccl-tests does, the
native busbw and each algorithm's busbw as a ratio to native (above 1: faster than MPI's
own).  busbw = algbw x 2(p-1)/p for AllReduce and x (p-1)/p for ReduceScatter and
AllGather (nccl-tests' PERFORMANCE.md), with algbw = bytes of the full vector / time.
Time is the slowest rank's mean over the iterations, after warm-up calls.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import collectives
from collsim.launch import in_mpi_job, run_mpi

ALGORITHMS = (*collectives.ALGORITHMS, "native")
BUS_FACTOR = {"allreduce": lambda p: 2 * (p - 1) / p, "reduce_scatter": lambda p: (p - 1) / p,
              "allgather": lambda p: (p - 1) / p}


def sizes(smallest: int, largest: int, factor: int) -> list[int]:
    """Byte sizes from ``smallest`` to ``largest``, multiplying by ``factor``."""
    out = [smallest]
    while out[-1] * factor <= largest:
        out.append(out[-1] * factor)
    if out[-1] != largest:
        out.append(largest)
    return out


def buffers(collective: str, nbytes: int, nranks: int) -> tuple[np.ndarray, np.ndarray]:
    """Send and receive buffers whose full vector has ``nbytes`` bytes of float32."""
    count = max(nbytes // 4 // nranks * nranks, nranks) if collective != "allreduce" else nbytes // 4
    part = count // nranks
    if collective == "allreduce":
        return np.ones(count, np.float32), np.empty(count, np.float32)
    if collective == "reduce_scatter":
        return np.ones(count, np.float32), np.empty(part, np.float32)
    return np.ones(part, np.float32), np.empty(count, np.float32)


def time_one(comm, collective: str, algorithm: str, send: np.ndarray, recv: np.ndarray,
             budget_s: float) -> float:
    """Mean seconds per call on the slowest rank; iterations fill about ``budget_s``."""
    from mpi4py import MPI
    function = getattr(collectives, collective)
    for _ in range(2):
        function(send, recv, comm=comm, algorithm=algorithm)
    comm.Barrier()
    start = time.perf_counter()
    function(send, recv, comm=comm, algorithm=algorithm)
    once = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
    iterations = max(3, min(1000, int(budget_s / max(once, 1e-7))))
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(iterations):
        function(send, recv, comm=comm, algorithm=algorithm)
    return comm.allreduce((time.perf_counter() - start) / iterations, op=MPI.MAX)


def measure(comm, collectives_: list[str], byte_sizes: list[int], budget_s: float) -> list[dict]:
    """Time every (collective, size, algorithm); rows as dicts."""
    rows = []
    p = comm.Get_size()
    for collective in collectives_:
        for nbytes in byte_sizes:
            send, recv = buffers(collective, nbytes, p)
            real_bytes = (recv if collective != "reduce_scatter" else send).nbytes
            for algorithm in ALGORITHMS:
                seconds = time_one(comm, collective, algorithm, send, recv, budget_s)
                busbw = real_bytes / seconds * BUS_FACTOR[collective](p) if seconds else 0.0
                rows.append({"collective": collective, "bytes": real_bytes, "algorithm": algorithm,
                             "time_us": seconds * 1e6, "busbw_GBps": busbw / 1e9})
    return rows


def render(rows: list[dict], nranks: int) -> None:
    """Print one rich table per collective: native busbw and each algorithm's ratio."""
    from rich.console import Console
    from rich.table import Table
    console = Console(width=140)
    for collective in dict.fromkeys(row["collective"] for row in rows):
        table = Table(title=f"{collective}, {nranks} ranks, float32: busbw ratio to native")
        table.add_column("size", justify="right")
        table.add_column("native time (us)", justify="right")
        table.add_column("native busbw (GB/s)", justify="right")
        for algorithm in ALGORITHMS[:-1]:
            table.add_column(algorithm, justify="right")
        mine = [row for row in rows if row["collective"] == collective]
        for nbytes in dict.fromkeys(row["bytes"] for row in mine):
            at = {row["algorithm"]: row for row in mine if row["bytes"] == nbytes}
            native = at["native"]
            ratios = [f"{native['time_us'] / at[a]['time_us']:.2f}" for a in ALGORITHMS[:-1]]
            table.add_row(_size(nbytes), f"{native['time_us']:.1f}",
                          f"{native['busbw_GBps']:.3f}", *ratios)
        console.print(table)


def _size(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--nranks", type=int, default=4, help="ranks when self-launching")
    parser.add_argument("--min-bytes", type=int, default=8)
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per measurement")
    parser.add_argument("--collectives", nargs="+", default=list(collectives.COLLECTIVES),
                        choices=collectives.COLLECTIVES)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    if not in_mpi_job():
        result = run_mpi(args.nranks, [__file__, *sys.argv[1:]], timeout_s=3600, capture=False)
        raise SystemExit(result.returncode)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rows = measure(comm, args.collectives, sizes(args.min_bytes, args.max_bytes, args.factor),
                   args.budget)
    if comm.Get_rank() == 0:
        render(rows, comm.Get_size())
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
