"""What the hellos of ``algorithm="native"`` cost: microseconds per 8-byte AllReduce.

Run ``python benchmarks/bench_native_guard.py`` (it relaunches itself under ``mpirun -n P``
for each ``--ranks`` P).  In one run, taking turns, it times per call:

* ``MPI Allreduce``: mpi4py's ``Comm.Allreduce`` on the private communicator, alone;
* ``hellos``: :meth:`~collectives.executors.hello.Hellos.exchange` alone (what the
  guard adds: a 16-byte message to and from every other rank);
* ``signature Allreduce``: one ``Allreduce`` of two int64 with MAX (``(h, -h)``), the
  other way to agree on a signature (it cannot see a rank that runs a schedule instead);
* ``native, no hellos``: ``collectives.allreduce(algorithm="native")`` with the exchange
  replaced by nothing (the call as it was before the guard);
* ``native``: ``collectives.allreduce(algorithm="native")`` as it runs now;

and prints each in microseconds and as a ratio to ``native, no hellos``.  Each figure is
the least, over ``--rounds`` rounds, of rank 0's wall-clock mean over a batch of
``--calls`` calls started after a barrier (the calls themselves keep the ranks in step):
short batches, many rounds, so that a loaded machine's quiet moments decide, as OSU's
least latency does.  With fewer cores than ranks, compare ratios within one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable

import numpy as np

from collsim.launch import in_mpi_job, run_mpi


class _Silent:
    """Stands in for a transport's hellos: exchanges nothing."""

    def exchange(self, *args: Any) -> None:
        """Do nothing."""


def measure(calls: int, rounds: int) -> dict[str, float]:
    """Microseconds per call of each variant (see the module docstring), on rank 0."""
    from mpi4py import MPI

    import collectives
    from collectives.executors.mpi import mpi_transport
    world = MPI.COMM_WORLD
    transport = mpi_transport(world)
    send, recv = np.ones(1, np.float64), np.empty(1, np.float64)
    signature, agreed = np.array([7, -7], np.int64), np.empty(2, np.int64)
    hellos = transport.hellos

    def native_without_hellos() -> None:
        transport.hellos = _Silent()
        try:
            collectives.allreduce(send, recv, comm=world, algorithm="native")
        finally:
            transport.hellos = hellos

    runs: dict[str, Callable[[], None]] = {
        "MPI Allreduce": lambda: transport.comm.Allreduce(send, recv, MPI.SUM),
        "hellos": lambda: hellos.exchange("allreduce", 1, "float64", "sum"),
        "signature Allreduce": lambda: transport.comm.Allreduce(signature, agreed, MPI.MAX),
        "native, no hellos": native_without_hellos,
        "native": lambda: collectives.allreduce(send, recv, comm=world, algorithm="native"),
    }
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, run in runs.items():
            world.Barrier()
            start = time.perf_counter()
            for _ in range(calls):
                run()
            best[name] = min(best[name], (time.perf_counter() - start) / calls * 1e6)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1000)
    args = parser.parse_args(argv)
    if not in_mpi_job():
        forwarded = sys.argv[1:] if argv is None else argv
        for nranks in args.ranks:
            result = run_mpi(nranks, [__file__, *_without_ranks(forwarded)],
                             timeout_s=1200, capture=False)
            if result.returncode:
                raise SystemExit(result.returncode)
        return
    from mpi4py import MPI
    best = measure(args.calls, args.rounds)
    if MPI.COMM_WORLD.Get_rank() == 0:
        base = best["native, no hellos"]
        print(f"{MPI.COMM_WORLD.Get_size()} ranks, 8-byte AllReduce, us per call "
              f"(ratio to native, no hellos):")
        for name, us in best.items():
            print(f"  {name:22s} {us:8.2f}  ({us / base:.2f})")


def _without_ranks(argv: list[str]) -> list[str]:
    """``argv`` without ``--ranks`` and its values (each launch runs one count)."""
    out, skipping = [], False
    for arg in argv:
        if arg == "--ranks":
            skipping = True
        elif skipping and not arg.startswith("-"):
            continue
        else:
            skipping = False
            out.append(arg)
    return out


if __name__ == "__main__":
    main()
