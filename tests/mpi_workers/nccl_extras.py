"""What the NCCL executor does beyond the matrix: rank 0 prints one ``SUMMARY {json}`` line.

Run under ``mpirun -n P python -m mpi4py nccl_extras.py`` (one rank is enough; two on one
GPU where NCCL allows it).  It checks, on CuPy buffers over an ``NcclComm``:

* a group holding a send to this rank itself and its receive delivers, and a group failed
  on purpose (:meth:`NcclComm._fail_group`) launches nothing and leaves NCCL usable;
* CUDA-graph replay: a hand-made plan that sends to this rank, reduces and copies (what a
  schedule does at two ranks or more, which one rank's schedules never do), and every
  algorithm and collective, each called four times on the same buffers with new contents,
  give the expected bits each time; the walks were captured once and replayed after
  (:func:`expected_graphs`), and never with ``graphs=False``;
* bfloat16 (where CuPy has it through ml_dtypes): native, auto and every schedule, on
  values whose sums are exact;
* ranks that disagree on a new call shape raise ``ArgumentMismatchError`` (2 ranks or more).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

import collectives
from collectives import BLOCK_COLLECTIVES, build_schedule, interpret
from collectives.executors.plan import Plan, PlanStep, get_plan
from collectives.registry import names

#: calls per case in the replay check: the first runs directly, the second is captured
ROUNDS = 4


def self_group(comm: Any, xp: Any) -> list[str]:
    """A send to this rank and its receive in one group; a failed group launches nothing."""
    nccl, raw = comm._lib, comm.nccl
    stream = xp.cuda.Stream(non_blocking=True)
    send, recv = xp.arange(64, dtype=xp.uint8), xp.zeros(64, xp.uint8)
    failures = []
    with comm.device, stream:
        nccl.groupStart()
        raw.recv(recv.data.ptr, 64, nccl.NCCL_UINT8, comm.rank, stream.ptr)
        raw.send(send.data.ptr, 64, nccl.NCCL_UINT8, comm.rank, stream.ptr)
        nccl.groupEnd()
        stream.synchronize()
        if not (recv == send).all():
            failures.append(f"self send/recv delivered {recv[:8].get()}")
        recv.fill(0)
        nccl.groupStart()
        raw.recv(recv.data.ptr, 64, nccl.NCCL_UINT8, comm.rank, stream.ptr)
        raw.send(send.data.ptr, 64, nccl.NCCL_UINT8, comm.rank, stream.ptr)
        comm._fail_group(raw, stream.ptr)
        stream.synchronize()
        if recv.any():
            failures.append("a failed group was launched (its receive wrote)")
    again = collectives.allreduce(xp.ones(8, xp.float32), comm=comm, algorithm="native")
    if not (again.get() == comm.size).all():
        failures.append(f"after a failed group, native allreduce gave {again.get()}")
    return failures


def self_plan(rank: int, nranks: int) -> Plan:
    """One step on 8 float32: receive elements 4..7, sent by this rank to itself, into
    scratch, add them to elements 0..3, then copy 0..3 over 4..7."""
    step = PlanStep(recvs=((True, slice(0, 16), rank, 0),), sends=((slice(16, 32), rank, 0),),
                    reduces=((slice(0, 4), slice(0, 4), False),),
                    copies=((slice(0, 4), slice(4, 8)),))
    return Plan("allreduce", "self", nranks, rank, 8, "float32", (), (step,), 4, slice(0, 8),
                slice(0, 8))


def run_self_plan(comm: Any, xp: Any) -> list[str]:
    """:func:`self_plan` walked :data:`ROUNDS` times on one buffer with new contents."""
    failures = []
    stream = xp.cuda.Stream(non_blocking=True)
    work = xp.zeros(8, xp.float32)
    plan = self_plan(comm.rank, comm.size)
    for round_ in range(ROUNDS):
        mine = np.arange(8, dtype=np.float32) * (round_ + 1)
        work.set(mine, stream=stream)
        comm.walker(plan, "sum", xp)(work, None, stream)
        stream.synchronize()
        want = np.tile(mine[:4] + mine[4:], 2)
        if work.get().tobytes() != want.tobytes():
            failures.append(f"self plan round {round_}: {work.get()} != {want}")
    return failures


def replay_cases(nranks: int) -> list[tuple[str, str, int, int, int]]:
    """``(algorithm, collective, working count, input size, output size)`` per replay case."""
    part, out = 5, []
    for algorithm, collective in ((a, c) for a in collectives.ALGORITHMS for c in BLOCK_COLLECTIVES
                                  if a in names(collective=c)):
        whole = part * nranks if collective != "allreduce" else part * nranks + 1
        size = part if collective == "allgather" else whole
        result = {"allreduce": whole, "reduce_scatter": part, "allgather": whole}[collective]
        out.append((algorithm, collective, whole, size, result))
    return out


def expected_graphs(nranks: int, graphs: bool) -> dict[str, int]:
    """How the walks of :func:`run_self_plan` (with ``graphs``) and :func:`replay` run: a
    plan with steps directly once, captured once, then replayed; one without steps never
    reaches the graphs."""
    walked = sum(bool(get_plan(collective, algorithm, nranks, 0, whole, np.dtype("float32"),
                               {}).steps)
                 for algorithm, collective, whole, _, _ in replay_cases(nranks))
    if not graphs:
        return {"direct": walked * ROUNDS, "captured": 0, "replayed": 0}
    walked += 1  # the self plan
    return {"direct": walked, "captured": walked, "replayed": walked * (ROUNDS - 2)}


def replay(comm: Any, xp: Any, nranks: int) -> list[str]:
    """Every algorithm and collective, :data:`ROUNDS` times on the same buffers."""
    failures = []
    stream = xp.cuda.Stream(non_blocking=True)
    for algorithm, collective, whole, size, result in replay_cases(nranks):
        send, recv = xp.zeros(size, xp.float32), xp.zeros(result, xp.float32)
        function = getattr(collectives, collective)
        for round_ in range(ROUNDS):
            inputs = [np.arange(size, dtype=np.float32) * (round_ + 1) + r
                      for r in range(nranks)]
            send.set(inputs[comm.rank], stream=stream)
            function(send, recv, comm=comm, algorithm=algorithm, stream=stream)
            stream.synchronize()
            schedule = build_schedule(collective, algorithm, nranks, whole)
            want = interpret(schedule, inputs, "sum")[comm.rank]
            if recv.get().tobytes() != want.tobytes():
                failures.append(f"{collective} {algorithm} round {round_}: "
                                f"{recv.get()[:4]} != {want[:4]}")
    return failures


def bfloat16(comm: Any, xp: Any, nranks: int) -> tuple[list[str], bool]:
    """Native, auto and every schedule on bfloat16 (exact small sums); False if CuPy lacks
    it."""
    try:
        import ml_dtypes
        xp.zeros(1, ml_dtypes.bfloat16)
    except (ImportError, TypeError, ValueError):
        return [], False
    failures = []
    for algorithm in ("native", "auto", *names(composed=False, collective="allreduce")):
        send = xp.asarray(np.full(6, comm.rank + 1, ml_dtypes.bfloat16))
        got = collectives.allreduce(send, comm=comm, algorithm=algorithm).get()
        if not (got.astype(np.float32) == nranks * (nranks + 1) / 2).all():
            failures.append(f"bfloat16 allreduce {algorithm}: {got.astype(np.float32)}")
    return failures, True


def mismatch(comm: Any, xp: Any) -> list[str]:
    """Ranks that meet a new shape with different counts all raise (no hang)."""
    try:
        collectives.allreduce(xp.ones(11 + (comm.rank == 1), xp.float32), comm=comm,
                              algorithm="ring")
    except collectives.ArgumentMismatchError as error:
        return [] if "count differs" in str(error) else [f"mismatch said: {error}"]
    return ["ranks with different counts did not raise"]


def main() -> None:
    from mpi4py import MPI
    import cupy as xp
    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
    failures: list[str] = []
    with collectives.NcclComm(world, graphs=True) as comm:
        comm.device.use()
        failures += self_group(comm, xp)
        failures += run_self_plan(comm, xp)
        failures += replay(comm, xp, nranks)
        graphs = dict(comm.graphs.runs)
        extra, has_bfloat16 = bfloat16(comm, xp, nranks)
        failures += extra
        if nranks > 1:
            failures += mismatch(comm, xp)
    with collectives.NcclComm(world, graphs=False) as plain:
        failures += replay(plain, xp, nranks)
        plain_graphs = dict(plain.graphs.runs)
    merged = [f"rank {r}: {f}" for r, per in enumerate(world.gather(failures) or []) for f in per]
    if rank == 0:
        print("SUMMARY " + json.dumps({"nranks": nranks, "graphs": graphs,
                                       "plain_graphs": plain_graphs,
                                       "bfloat16": has_bfloat16,
                                       "failures": merged[:30]}), flush=True)


if __name__ == "__main__":
    main()
