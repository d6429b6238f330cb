"""Bus bandwidth of each algorithm beside the native MPI collective, on NumPy buffers.

Run ``python benchmarks/bench_executors.py`` (it relaunches itself under ``mpirun -n 4``)
or ``mpirun -n 4 python benchmarks/bench_executors.py``.  For each collective and size it
times, in the same run, MPI's own collective called directly through mpi4py (``MPI``:
``Comm.Allreduce``, ``Reduce_scatter_block``, ``Allgather``, the baseline), every algorithm
and ``native`` (MPI's collective through our API, after its hellos: see
:mod:`collectives.executors.hello`), and prints, as nccl-tests does, MPI's busbw and each
one's busbw as a ratio to it (above 1: faster than MPI's own), the best of our schedules,
and with ``--tuning FILE`` (written by ``collsim tune``) ``auto`` reading that table.  busbw = algbw x 2(p-1)/p for AllReduce and x (p-1)/p for
ReduceScatter and AllGather (nccl-tests' PERFORMANCE.md), with algbw = bytes of the full
vector / time.  Time is the slowest rank's mean over the iterations, after warm-up calls,
the least of ``--rounds`` rounds over the algorithms; with ``--per-call`` the least over
single calls each timed after a barrier (OSU's least latency), which a shared, loaded
machine disturbs far less.

Beside the algorithms, the variants of :data:`VARIANTS` (an algorithm with a parameter,
for the collectives that take it): ``rhd doubling`` is recursive doubling, AllReduce only.

``--persistent`` times every algorithm and ``native`` through its persistent handle
(``collectives.allreduce_init`` etc.) instead of a call each time.  ``--unchecked`` passes
``check=False`` to every one of ours: ``native`` (and ``auto`` where it runs native) then
calls MPI's collective without hellos, as mpi4py does.

``--fixed-cost`` instead times one rank's 8-byte AllReduce (a single process, no mpirun):
raw mpi4py ``Comm.Allreduce`` beside ``collectives.allreduce`` with ``native``, ``ring``
and ``auto``, and the handles of ``allreduce_init`` with ``native`` and ``ring``: what a
call costs in Python before any message moves.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

import collectives
from collectives.registry import algorithm as algorithm_named
from collsim.launch import in_mpi_job, run_mpi
from collsim.tune import slowest_seconds

#: schedules chosen by a parameter, timed beside the algorithms: label -> (the collective
#: that takes it, algorithm, parameters)
VARIANTS: dict[str, tuple[str, str, dict]] = {
    "rhd doubling": ("allreduce", "rhd", {"doubling": True})}
OURS = (*collectives.BLOCK_ALGORITHMS, *VARIANTS)
#: MPI's own collective called directly through mpi4py: the baseline of every ratio
MPI_OWN = "MPI"
ALGORITHMS = (*OURS, "native", MPI_OWN)
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


def applies(collective: str, algorithm: str) -> bool:
    """Whether ``algorithm`` (a name or a label of :data:`VARIANTS`) runs ``collective``."""
    if algorithm in VARIANTS:
        return VARIANTS[algorithm][0] == collective
    return algorithm in ("native", MPI_OWN) or collective in algorithm_named(algorithm).collectives


def caller(comm, collective: str, algorithm: str, send: np.ndarray, recv: np.ndarray,
           persistent: bool = False, check: bool | None = None):
    """A call with no arguments that runs the collective: ``collectives.allreduce(...)`` etc.
    bound to its arguments (and ``check``), or with ``persistent`` the handle of
    ``allreduce_init(...)``; for :data:`MPI_OWN` mpi4py's own call on ``comm``; a label of
    :data:`VARIANTS` runs its algorithm with its parameters."""
    if algorithm == MPI_OWN:
        from mpi4py import MPI
        if collective == "allreduce":
            return partial(comm.Allreduce, send, recv, MPI.SUM)
        if collective == "reduce_scatter":
            return partial(comm.Reduce_scatter_block, send, recv, MPI.SUM)
        return partial(comm.Allgather, send, recv)
    params: dict = {}
    if algorithm in VARIANTS:
        _, algorithm, params = VARIANTS[algorithm]
    if persistent:
        return getattr(collectives, f"{collective}_init")(send, recv, comm=comm,
                                                          algorithm=algorithm, check=check,
                                                          **params)
    return partial(getattr(collectives, collective), send, recv, comm=comm, algorithm=algorithm,
                   check=check, **params)


def time_one(comm, run, budget_s: float, per_call: bool = False) -> float:
    """Seconds per ``run()`` on the slowest rank; iterations fill about ``budget_s``.

    The mean over the iterations; with ``per_call``, each call is timed alone after a
    barrier and the least over the calls of the slowest rank's time counts (OSU's least
    latency): what a call costs when no other process takes the cores.
    """
    from mpi4py import MPI
    for _ in range(2):
        run()
    comm.Barrier()
    start = time.perf_counter()
    run()
    once = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
    iterations = max(3, min(1000 if not per_call else 100, int(budget_s / max(once, 1e-7))))
    return slowest_seconds(comm, run, iterations, per_call)


def measure(comm, collectives_: list[str], byte_sizes: list[int], budget_s: float,
            algorithms: tuple[str, ...] = ALGORITHMS, rounds: int = 3,
            per_call: bool = False, persistent: bool = False,
            check: bool | None = None) -> list[dict]:
    """Time every (collective, size, algorithm); rows as dicts.

    Each time is the least of ``rounds`` rounds that visit the algorithms in turn: on a
    shared machine noise only adds time, and it hits every algorithm alike.  With
    ``persistent`` every algorithm, ``native`` included, runs through its
    ``<collective>_init`` handle; ``check`` is passed to every one of ours.
    """
    rows = []
    p = comm.Get_size()
    for collective in collectives_:
        for nbytes in byte_sizes:
            send, recv = buffers(collective, nbytes, p)
            real_bytes = (recv if collective != "reduce_scatter" else send).nbytes
            best = {algorithm: float("inf") for algorithm in algorithms
                    if applies(collective, algorithm)}
            runs = {algorithm: caller(comm, collective, algorithm, send, recv, persistent, check)
                    for algorithm in best}
            for _ in range(rounds):
                for algorithm, run in runs.items():
                    best[algorithm] = min(best[algorithm],
                                          time_one(comm, run, budget_s, per_call))
            if persistent:
                for algorithm, run in runs.items():
                    if algorithm != MPI_OWN:
                        run.free()
            for algorithm, seconds in best.items():
                busbw = real_bytes / seconds * BUS_FACTOR[collective](p) if seconds else 0.0
                rows.append({"collective": collective, "bytes": real_bytes, "algorithm": algorithm,
                             "time_us": seconds * 1e6, "busbw_GBps": busbw / 1e9})
    return rows


def render(rows: list[dict], nranks: int, check: bool | None = None) -> None:
    """Print one rich table per collective: MPI's own busbw, and as ratios to it each
    algorithm's, the best of ours, ``native`` through our API and ``auto`` (when measured)."""
    from rich.console import Console
    from rich.table import Table
    console = Console(width=150)
    extra = ("native", "auto") if any(row["algorithm"] == "auto" for row in rows) else ("native",)
    for collective in dict.fromkeys(row["collective"] for row in rows):
        table = Table(title=f"{collective}, {nranks} ranks, float32: busbw ratio to MPI's own "
                            "(mpi4py called directly)"
                            + (", ours with check=False" if check is False else ""))
        table.add_column("size", justify="right")
        table.add_column("MPI time (us)", justify="right")
        table.add_column("MPI busbw (GB/s)", justify="right")
        ours = [a for a in OURS if applies(collective, a)]
        for algorithm in (*ours, "best", *extra):
            table.add_column(algorithm, justify="right")
        mine = [row for row in rows if row["collective"] == collective]
        for nbytes in dict.fromkeys(row["bytes"] for row in mine):
            at = {row["algorithm"]: row for row in mine if row["bytes"] == nbytes}
            own = at[MPI_OWN]["time_us"]
            ratios = [own / at[a]["time_us"] for a in ours]
            shown = [*ratios, max(ratios), *(own / at[a]["time_us"] for a in extra)]
            table.add_row(_size(nbytes), f"{own:.1f}", f"{at[MPI_OWN]['busbw_GBps']:.3f}",
                          *(f"{ratio:.2f}" for ratio in shown))
        console.print(table)


def fixed_cost(calls: int = 20000, repeats: int = 7) -> dict[str, float]:
    """Microseconds per 8-byte AllReduce on one rank: raw mpi4py and through the API.

    CPU time of this process (``time.process_time``: one rank never waits for another, and
    time the process spends descheduled on a shared machine is not counted), the least of
    ``repeats`` runs of ``calls`` calls each.
    """
    from mpi4py import MPI
    comm = MPI.COMM_SELF
    send, recv = np.ones(2, np.float32), np.empty(2, np.float32)
    runs = {"raw mpi4py Allreduce": lambda: comm.Allreduce(send, recv, MPI.SUM)}
    for algorithm in ("native", "ring", "auto"):
        runs[f"allreduce {algorithm}"] = (
            lambda a=algorithm: collectives.allreduce(send, recv, comm=comm, algorithm=a))
    runs["allreduce native check=False"] = (
        lambda: collectives.allreduce(send, recv, comm=comm, algorithm="native", check=False))
    for algorithm in ("native", "ring"):
        runs[f"allreduce_init {algorithm}"] = collectives.allreduce_init(send, recv, comm=comm,
                                                                        algorithm=algorithm)
    runs["allreduce_init native check=False"] = collectives.allreduce_init(
        send, recv, comm=comm, algorithm="native", check=False)
    runs["auto.choose alone"] = lambda: collectives.auto.choose("allreduce", 8, 4, 4)
    out = {}
    for name, run in runs.items():
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            for _ in range(calls):
                run()
            best = min(best, (time.process_time() - start) / calls)
        out[name] = best * 1e6
    return out


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
    parser.add_argument("--budget", type=float, default=0.1, help="seconds per measurement")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds over the algorithms; the least time counts")
    parser.add_argument("--collectives", nargs="+", default=list(collectives.BLOCK_COLLECTIVES),
                        choices=collectives.BLOCK_COLLECTIVES)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--tuning", type=Path,
                        help="a tuning file (collsim tune): also time auto reading it")
    parser.add_argument("--per-call", action="store_true",
                        help="time calls one by one; the least counts (a shared machine)")
    parser.add_argument("--persistent", action="store_true",
                        help="run every algorithm and native through collectives.*_init handles")
    parser.add_argument("--unchecked", action="store_true",
                        help="pass check=False to ours: native (and auto running it) without "
                             "hellos")
    parser.add_argument("--fixed-cost", action="store_true",
                        help="time one rank's 8-byte AllReduce instead (no mpirun)")
    args = parser.parse_args()
    if args.fixed_cost:
        for name, us in fixed_cost().items():
            print(f"{name:34s} {us:7.2f} us")
        return
    if not in_mpi_job():
        result = run_mpi(args.nranks, [__file__, *sys.argv[1:]], timeout_s=3600, capture=False)
        raise SystemExit(result.returncode)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    algorithms = ALGORITHMS
    if args.tuning:
        collectives.auto.use_tuning(args.tuning)
        algorithms = (*ALGORITHMS, "auto")
    rows = measure(comm, args.collectives, sizes(args.min_bytes, args.max_bytes, args.factor),
                   args.budget, algorithms, args.rounds, args.per_call, args.persistent,
                   False if args.unchecked else None)
    if comm.Get_rank() == 0:
        render(rows, comm.Get_size(), False if args.unchecked else None)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
