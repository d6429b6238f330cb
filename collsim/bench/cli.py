"""``collsim bench``: nccl-tests' tables for every algorithm beside native, under mpirun.

Outside ``mpirun`` it launches itself on ``--np`` ranks with the pip-installed ``mpirun``;
under ``mpirun -n N python -m collsim bench ...`` it runs on the job's ranks.  Rank 0
prints one nccl-tests table per algorithm, then the measured best algorithm per size
beside the model's choice, and writes ``--json``, ``--csv`` and ``--plot``.  The exit
status is 1 when any element was wrong.
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any, Callable

from ..launch import in_mpi_job, relaunch
from .options import add_arguments, check_args, sizes

__all__ = ["add_arguments", "main"]


def main(args: argparse.Namespace) -> int:
    """Benchmark under this MPI job, or launch one on ``args.nprocs`` ranks that does."""
    check_args(args)
    if not in_mpi_job():
        return relaunch("bench", args, add_arguments, args.nprocs, args.timeout)
    return _run(args)


def _progress(total: int, enabled: bool) -> tuple[Callable[[str, int], None], Callable[[], None]]:
    """A rich progress bar on stderr: ``(advance, stop)``; no-ops when not ``enabled``."""
    if not enabled:
        return (lambda name, size: None), (lambda: None)
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task("bench", total=total)
    bar.start()

    def advance(name: str, size: int) -> None:
        bar.update(task, advance=1, description=f"{name:>8} {size:>10} B")

    return advance, bar.stop


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
    lines = [f"# collsim bench: {args.collective}, {nranks} ranks, transport {args.transport}, "
             f"{args.buffer} buffers",
             f"#  minBytes {args.minbytes} maxBytes {args.maxbytes} step: {args.stepfactor}"
             f"(factor) warmup iters: {args.warmup_iters} iters: {args.iters} "
             f"validation: {args.check}",
             f"#  model: {_describe(model)}",
             "#", "# Using devices"]
    lines += [f"#  Rank {r:2d} Pid {pid:7d} on {host:>12} device {device}"
              for r, (pid, host, device) in enumerate(ranks)]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from mpi4py import MPI

    from simulator import use_for_auto

    from .plot import plot_busbw
    from .predict import machine, predict
    from .report import best_table, document, table, write_csv, write_json
    from .runner import Case, open_comm, sweep

    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
    comm, xp = open_comm(args.transport, args.buffer, world)
    device = "cpu" if xp.__name__ == "numpy" else f"gpu {xp.cuda.Device().id}"
    ranks = world.gather((os.getpid(), socket.gethostname(), f"{device} [{xp.__name__}]"))
    model = machine(args.topology, nranks, args.nodes, world)
    if model is not None:  # auto selects on the model the predicted column uses
        use_for_auto(model.topology)
    case = Case(args.collective, args.datatype, args.op, args.iters, args.warmup_iters,
                bool(args.check))
    rows = sizes(args.minbytes, args.maxbytes, args.stepfactor, args.collective, nranks,
                 args.datatype)
    advance, stop = _progress(len(rows) * len(args.algorithms), rank == 0)
    try:
        measured, skipped = sweep(case, args.algorithms, rows, comm, xp, world, advance)
    finally:
        stop()
    if rank != 0:
        return 0
    predicted = predict(args.collective, rows, nranks, args.datatype, model) if model else None
    doc = document(case, nranks, args.transport, args.buffer, measured, skipped,
                   model.name if model else None, predicted)
    print(_banner(args, nranks, ranks, model))
    for algorithm in args.algorithms:
        if algorithm in skipped:
            print(f"# Algorithm: {algorithm} skipped: {skipped[algorithm]}\n#")
        else:
            print(table(doc, algorithm))
    print(best_table(doc))
    if predicted:
        print("# Predicted with simulator.tuning_table's parameters per algorithm (the JSON's "
              "'params'); the benchmark ran each algorithm's default parameters")
    for path, write in ((args.json, write_json), (args.csv, write_csv), (args.plot, plot_busbw)):
        if path is not None:
            print(f"# wrote {write(doc, path)}")
    return 1 if doc["out_of_bounds"] else 0
