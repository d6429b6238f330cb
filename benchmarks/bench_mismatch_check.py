"""What the default mismatch check costs: microseconds per call and per step.

Run ``python benchmarks/bench_mismatch_check.py`` (it relaunches itself under
``mpirun -n 1``).  One rank sends small messages to itself, so no other process and no
wire time enter the figures (this project's machine is a shared 2-core VM).  For one step
of ``M`` messages it times, best of ``--repeat`` runs of ``--iterations`` steps each:

* ``bare``: ``Irecv`` with the message's tag, ``Isend``, ``Waitall`` (the executor before
  the check);
* ``checked``: ``Irecv`` with ``ANY_TAG``, ``Isend`` with the signed tag, then
  :meth:`Guard.complete` on a step that holds a first receive from its peer (``Waitall``
  with statuses, every receive's tag compared with the plan's);
* ``unchecked``: the same on a later step (statuses, but no tags compared);

and, per call, the :func:`signed_plan` look-up.  A call costs ``per call + checked steps x
(checked - bare) + other steps x (unchecked - bare)``; it prints that for the AllReduce
of every algorithm on 8 ranks.
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

    from collectives import ALGORITHMS
    from collectives.executors.guard import Guard, signed_plan
    from collectives.executors.plan import PlanStep, get_plan

    comm = MPI.COMM_WORLD.Dup()
    guard = Guard(comm, MPI.COMM_WORLD.Get_attr(MPI.TAG_UB))
    m = args.messages
    work = np.zeros(64 * m, np.uint8)
    spans = [slice(64 * i, 64 * i + 64) for i in range(m)]
    step = PlanStep(tuple((False, s, 0, i) for i, s in enumerate(spans)),
                    tuple((s, 0, i) for i, s in enumerate(spans)), (), ())
    plan = get_plan("allreduce", "ring", 8, 0, 1 << 20, np.dtype("float32"), {})
    one_step = dataclasses.replace(plan, nranks=1, rank=0, steps=(step,))
    signed = signed_plan(one_step, "sum", guard.codec)
    later = dataclasses.replace(signed, steps=(dataclasses.replace(signed.steps[0],
                                                                  check=False),))
    buffers = (work,)

    def bare() -> None:
        requests = [comm.Irecv(work[s], 0, tag) for _, s, _, tag in step.recvs]
        requests += [comm.Isend(work[s], 0, tag) for s, _, tag in step.sends]
        MPI.Request.Waitall(requests)

    def guarded(tags: Any) -> Callable[[], None]:
        """One step as collectives.executors.mpi._walk runs it."""
        signed_step = tags.steps[0]

        def run() -> None:
            requests = [comm.Irecv(work[s], 0, MPI.ANY_TAG) for _, s, _, _ in step.recvs]
            requests += [comm.Isend(work[s], peer, tag) for s, peer, tag in signed_step.sends]
            guard.complete(MPI, requests, step, tags, 0, buffers, str)
        return run

    def per_call() -> None:
        signed_plan(plan, "sum", guard.codec)

    it, rep = args.iterations, args.repeat
    t_bare, t_checked, t_later, t_call = best_us([bare, guarded(signed), guarded(later),
                                                  per_call], it, rep)
    print(f"# mismatch check, {m} message(s) per step, CPU time, best of {rep} x {it}")
    print(f"step, bare        {t_bare:8.2f} us")
    print(f"step, checked     {t_checked:8.2f} us   ({t_checked - t_bare:+.2f} us)")
    print(f"step, unchecked   {t_later:8.2f} us   ({t_later - t_bare:+.2f} us)")
    print(f"per call (signed plan look-up) {t_call:.2f} us")
    for algorithm in ALGORITHMS:
        steps = signed_plan(get_plan("allreduce", algorithm, 8, 0, 1 << 20,
                                     np.dtype("float32"), {}), "sum", guard.codec).steps
        checked = sum(s.check for s in steps)
        extra = t_call + checked * (t_checked - t_bare) + (len(steps) - checked) * (
            t_later - t_bare)
        print(f"allreduce {algorithm:8s} 8 ranks, rank 0: {len(steps):3d} steps, {checked} "
              f"checked: {extra:+.2f} us per call")


if __name__ == "__main__":
    main()
