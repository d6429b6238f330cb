"""``collsim bench``: nccl-tests' tables for every algorithm beside native, under mpirun.

Outside ``mpirun`` it checks its arguments, then launches itself on ``--ranks`` ranks with
the pip-installed ``mpirun``; under ``mpirun -n N python -m collsim bench ...`` it runs on
the job's ranks.  Rank 0 shows progress on stderr (:mod:`collsim.terminal`), prints one
nccl-tests table per algorithm (per datatype and op with ``-d all``/``-o all``), then the
measured best algorithm per size beside the model's choice, and writes ``--json``,
``--csv`` and ``--plot``.  The exit status is 1 when any element was wrong.
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from ..launch import in_mpi_job, relaunch
from ..terminal import progress
from .options import AVERAGE, add_arguments, check_args, datatypes, ops, sizes

__all__ = ["add_arguments", "main"]


def main(args: argparse.Namespace) -> int:
    """Benchmark under this MPI job, or launch one on ``args.ranks`` ranks that does."""
    if not in_mpi_job():
        check_args(args)
        return relaunch("bench", args, add_arguments, args.ranks, args.timeout)
    from mpi4py import MPI

    check_args(args, MPI.COMM_WORLD.Get_size())
    return _run(args)


def _describe(model: Any) -> str:
    """The model's name, its rank 0 -> 1 route (latency, bandwidth), and its per-call and
    per-message overheads when it has them."""
    if model is None:
        return "none"
    machine = model.topology
    if machine.nranks < 2:
        return model.name
    text = (f"{model.name}, rank 0 -> 1: alpha {machine.alpha(0, 1) * 1e6:.2f} us, "
            f"{1 / machine.beta(0, 1) / 1e9:.2f} GB/s")
    if machine.overhead_s_per_message or model.per_call_s:
        text += (f", {machine.overhead_s_per_message * 1e6:.2f} us CPU per message end, "
                 f"{model.per_call_s * 1e6:.1f} us per call")
    return text


def _banner(args: argparse.Namespace, nranks: int, ranks: list[Any], model: Any) -> str:
    step = (f"{args.stepbytes}(bytes)" if args.stepbytes is not None
            else f"{args.stepfactor or args.default_stepfactor}(factor)")
    lines = [f"# collsim bench: {args.collective}, {nranks} ranks, transport {args.transport}, "
             f"{args.buffer} buffers",
             f"#  minBytes {args.minbytes} maxBytes {args.maxbytes} step: {step} "
             f"warmup iters: {args.warmup_iters} iters: {args.iters} "
             f"validation: {args.check} blocking: {args.blocking} "
             f"time: {AVERAGE[args.average]} over ranks"
             + (", until issued (-C 1)" if args.report_cputime else ""),
             f"#  model: {_describe(model)}",
             "#", "# Using devices"]
    lines += [f"#  Rank {r:2d} Pid {pid:7d} on {host:>12} device {device}"
              for r, (pid, host, device) in enumerate(ranks)]
    return "\n".join(lines)


def _rows(args: argparse.Namespace, nranks: int, dtype: str) -> list[tuple[int, int]]:
    return sizes(args.minbytes, args.maxbytes, args.stepfactor or args.default_stepfactor,
                 args.collective, nranks, dtype, args.stepbytes)


def _run(args: argparse.Namespace) -> int:
    from mpi4py import MPI

    from simulator import use_for_auto

    from .predict import machine
    from .runner import Case, open_comm, sweep

    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
    comm, xp = open_comm(args.transport, args.buffer, world)
    device = "cpu" if xp.__name__ == "numpy" else f"gpu {xp.cuda.Device().id}"
    ranks = world.gather((os.getpid(), socket.gethostname(), f"{device} [{xp.__name__}]"))
    model = machine(args, nranks, world)
    if model is not None:  # auto selects on the model the predicted column uses
        use_for_auto(model.topology)
    runs = [(dtype, op) for dtype in datatypes(args) for op in ops(args)]
    total = sum(len(_rows(args, nranks, dtype)) for dtype, _ in runs) * len(args.algorithms)
    results = []
    with progress("bench", total, enabled=rank == 0) as advance:
        for dtype, op in runs:
            case = Case(args.collective, dtype, op, args.iters, args.warmup_iters,
                        bool(args.check), args.average, bool(args.blocking),
                        bool(args.report_cputime), args.root)
            rows = _rows(args, nranks, dtype)
            measured, skipped = sweep(case, args.algorithms, rows, comm, xp, world,
                                      lambda name, size: advance(f"{dtype} {op} {name} {size} B"))
            results.append((case, rows, measured, skipped))
    if rank != 0:
        return 0
    print(_banner(args, nranks, ranks or [], model))  # rank 0 gathered every rank's
    docs = [_report(args, nranks, model, *result) for result in results]
    _write(args, docs)
    return 1 if any(doc["out_of_bounds"] for doc in docs) else 0


def _report(args: argparse.Namespace, nranks: int, model: Any, case: Any,
            rows: list[tuple[int, int]], measured: list[Any],
            skipped: dict[str, str]) -> dict[str, Any]:
    """Print one datatype and op's tables and best-per-size summary; return its document."""
    from .predict import predict
    from .report import best_table, document, table

    ran = [name for name in args.algorithms if name not in skipped]
    predicted = predict(args.collective, rows, nranks, case.dtype, model, ran) if model else None
    doc = document(case, nranks, args.transport, args.buffer, measured, skipped,
                   model.name if model and predicted else None, predicted)
    for algorithm in args.algorithms:
        if algorithm in skipped:
            print(f"# Algorithm: {algorithm} skipped: {skipped[algorithm]}\n#")
        else:
            print(table(doc, algorithm))
    print(best_table(doc))
    if predicted:
        print("# Predicted with simulator.tuning_table's parameters per algorithm (the JSON's "
              "'params'); the benchmark ran each algorithm's default parameters")
    return doc


def _write(args: argparse.Namespace, docs: list[dict[str, Any]]) -> None:
    """Write ``--json`` (one document, or a list of them for several datatypes or ops),
    ``--csv`` (every document's rows) and ``--plot`` (one document)."""
    from .plot import plot_busbw
    from .report import write_csv, write_json

    if args.json is not None:
        print(f"# wrote {write_json(docs[0] if len(docs) == 1 else docs, args.json)}")
    if args.csv is not None:
        print(f"# wrote {write_csv(docs, args.csv)}")
    if args.plot is not None:
        print(f"# wrote {plot_busbw(docs[0], args.plot)}")

