"""What the default mismatch check costs: microseconds per call and per step.

Run ``python benchmarks/bench_mismatch_check.py`` (it relaunches itself under
``mpirun -n 1``).  One rank sends small messages to itself, so no other process and no
wire time enter the figures (this project's machine is a shared 2-core VM).  It times,
best of ``--repeat`` runs of ``--iterations`` each, calls of steps of ``M`` messages run
by the MPI transport's persistent walk (:meth:`PersistentPlans.run`, the compiled walk
where it applies), and from them:

* ``bare``: one step of persistent receives with the message's tag and persistent sends,
  started together, one ``Waitall`` (a walk with no check);
* ``later``: a step with no first receive (its receives take any tag, their
  ``Waitall`` with statuses, every tag compared, then the sends' ``Waitall``): a call of
  two such steps less a call of one;
* ``first``: a step that holds the call's first receive from its peer (the sends started,
  a matched probe per first receive and a receive of the matched message, then as
  ``later``): a call of that step less the per-call part;
* per call: the walk's own cost (a call of one later step less ``later``) and the
  :func:`signed_plan` look-up.

For the AllReduce of every algorithm on 8 ranks it prints what a call's walk costs with
the checks, ``per call + first steps x first + other steps x later``, beside ``steps x
bare``: the same steps posted and waited for from Python with no check.  Run it with
``COLLSIM_MPI_COMPILED=0`` for the Python walk (then the difference is the checks' cost).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any, Callable

import numpy as np

from collsim.launch import in_mpi_job, run_mpi


def best_us(runs: list[Callable[[], None]], iterations: int, repeat: int) -> list[float]:
    """Best mean CPU time of each of ``runs`` over ``repeat`` rounds of ``iterations``, in
    microseconds; the rounds take turns, so that a slow spell of the machine hits all.

    CPU time of this thread (``time.thread_time``): one rank messaging itself never waits,
    and time the shared machine gives other processes is left out."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            start = time.thread_time()
            for _ in range(iterations):
                run()
            best[i] = min(best[i], (time.thread_time() - start) / iterations * 1e6)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1, help="messages per step")
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args(argv)
    if not in_mpi_job():
        forwarded = sys.argv[1:] if argv is None else argv
        raise SystemExit(run_mpi(1, [__file__, *forwarded], timeout_s=600,
                                 capture=False).returncode)
    from mpi4py import MPI

    from collectives.registry import names
    from collectives.executors.guard import signed_plan
    from collectives.executors.mpi import mpi_transport
    from collectives.executors.plan import PlanStep, get_plan

    transport = mpi_transport(MPI.COMM_WORLD)
    comm, guard = transport.comm, transport.guard
    m = args.messages
    work, scratch = np.zeros(16 * m, np.float32), np.zeros(0, np.float32)
    spans = [slice(64 * i, 64 * i + 64) for i in range(m)]
    plan = get_plan("allreduce", "ring", 8, 0, 1 << 20, np.dtype("float32"), {})

    def call(firsts: tuple[int, ...]) -> Callable[[], None]:
        """A call of one step per entry of ``firsts``, each of ``m`` messages to and from
        this rank, that many of them probed, run by the transport's persistent walk."""
        steps = tuple(PlanStep(tuple((False, s, 0, k * m + i) for i, s in enumerate(spans)),
                               tuple((s, 0, k * m + i) for i, s in enumerate(spans)), (), (),
                               first) for k, first in enumerate(firsts))
        walked = dataclasses.replace(plan, nranks=1, rank=0, count=work.size, scratch_count=0,
                                     steps=steps)
        signed = signed_plan(walked, "sum", guard.codec)
        return lambda: transport.persistent.run(walked, signed, "sum", work, scratch)

    whole = work.view(np.uint8)
    bare_requests = [comm.Recv_init(whole[s], 0, i) for i, s in enumerate(spans)]
    bare_requests += [comm.Send_init(whole[s], 0, i) for i, s in enumerate(spans)]

    def bare() -> None:
        MPI.Prequest.Startall(bare_requests)
        MPI.Request.Waitall(bare_requests)

    def per_call() -> None:
        signed_plan(plan, "sum", guard.codec)

    it, rep = args.iterations, args.repeat
    t_bare, t_first, t_one, t_two, t_look_up = best_us(
        [bare, call((1,)), call((0,)), call((0, 0)), per_call], it, rep)
    t_later = t_two - t_one
    t_walk = t_one - t_later
    t_first -= t_walk
    t_call = t_walk + t_look_up
    print(f"# mismatch check, {m} message(s) per step, CPU time, best of {rep} x {it}")
    print(f"step, bare        {t_bare:8.2f} us")
    print(f"step, first       {t_first:8.2f} us")
    print(f"step, later       {t_later:8.2f} us")
    print(f"per call          {t_call:8.2f} us   (the walk's own {t_walk:.2f}, the signed plan's "
          f"look-up {t_look_up:.2f})")
    for algorithm in names(composed=False, collective="allreduce"):
        steps = signed_plan(get_plan("allreduce", algorithm, 8, 0, 1 << 20,
                                     np.dtype("float32"), {}), "sum", guard.codec).steps
        first = sum(bool(s.first) for s in steps)
        walk = t_call + first * t_first + (len(steps) - first) * t_later
        print(f"allreduce {algorithm:8s} 8 ranks, rank 0: {len(steps):3d} steps, {first} "
              f"probing: {walk:6.2f} us per call with the checks ({len(steps) * t_bare:.2f} "
              f"bare)")


if __name__ == "__main__":
    main()
