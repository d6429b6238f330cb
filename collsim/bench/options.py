"""The benchmark's command line: nccl-tests' flags, with their meanings, and ours.

==========================  ===================================================  ==========
flag                        meaning                                              default
==========================  ===================================================  ==========
``-b/--minbytes``           smallest size, bytes, with suffix K, M or G          8
``-e/--maxbytes``           largest size                                         16M
``-f/--stepfactor``         multiply the size by this between rows               2
``-i/--stepbytes``          add this many bytes between rows instead             -
``-n/--iters``              timed iterations per size                            20
``-w/--warmup_iters``       untimed iterations before them                       1
``-c/--check``              1: count wrong elements (#wrong), 0: skip            1
``-d/--datatype``           float, half, double, int8, ..., or all               float
``-o/--op``                 sum, prod, max, min, or all                          sum
``-a/--average``            time over ranks: 0 rank 0, 1 mean, 2 min, 3 max      3
``-z/--blocking``           1: wait for every call to complete (GPU buffers)     0
``-C/--report_cputime``     1: time until the calls are issued, not completed    0
``-t/--nthreads``           threads per rank (1 only: one thread drives a rank)  1
``-g/--ngpus``              GPUs per thread (1 only: one GPU per rank)           1
``--collective``            allreduce, reduce_scatter, allgather, broadcast,     allreduce
                            reduce, alltoall (also the nccl-tests names
                            all_reduce, all_gather)
``-r/--root``               the root of broadcast and reduce                     0
``--algorithms``            those that serve the collective, auto, native        all
``--transport``             mpi or nccl                                          mpi
``--buffer``                numpy or cupy                                        numpy
``--ranks``                 ranks to launch when not already under mpirun        4
``--topology``              preset, topology file, ``calibrate`` or ``none``     calibrate
==========================  ===================================================  ==========

Sizes follow nccl-tests: the full vector's bytes (the AllReduce, Broadcast or Reduce
buffer, the ReduceScatter input, the AllGather output, every rank's AllToAll send
buffer), rounded down to whole elements on every rank.  Broadcast, Reduce and AllToAll run
over MPI on NumPy buffers; Broadcast is in place and Reduce and AllToAll out of place, so
their in-place columns repeat the out-of-place measurement.
``-a`` defaults to 3 (the slowest rank, as the OSU benchmarks report); nccl-tests'
default is 1.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import numpy as np

from collectives.api import CHOICES
from collectives.build import ALGORITHMS
from collectives.ops import DTYPES, OPS
from collectives.schedule import BLOCK_COLLECTIVES, COLLECTIVES, ROOTED
from ..args import (MAX_ITERS, MAX_TIMEOUT_S, UsageError, add_machine, add_sweep,
                    check_memory, check_output, datatype, served,
                    launch_limit, machine, parse_size, seconds, sweep, whole)

__all__ = ["add_arguments", "parse_size", "sizes", "COLLECTIVE_NAMES", "TOPOLOGY_EXTRA",
           "AVERAGE", "check_args", "datatypes", "ops"]

#: accepted ``--collective`` names -> collective (nccl-tests binaries are all_reduce_perf, ...)
COLLECTIVE_NAMES: dict[str, str] = {"all_reduce": "allreduce", "all_gather": "allgather",
                                    **{name: name for name in COLLECTIVES}}

#: ``--topology`` names besides presets and files: ``calibrate`` measures this job,
#: ``none`` predicts nothing
TOPOLOGY_EXTRA = ("calibrate", "none")

#: ``-a`` values: how the time of a row is made from the ranks' times (nccl-tests')
AVERAGE = {0: "rank 0", 1: "mean", 2: "min", 3: "max"}


#: collectives that reduce nothing (``-o`` is ``sum`` only, shown as ``none``)
NO_OP = ("allgather", "broadcast", "alltoall")


def _collective(text: str) -> str:
    if text not in COLLECTIVE_NAMES:
        raise argparse.ArgumentTypeError(f"collective {text!r} is not supported; choose one of "
                                         f"{', '.join(COLLECTIVE_NAMES)}")
    return COLLECTIVE_NAMES[text]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark's arguments to ``parser``."""
    add = parser.add_argument
    add_sweep(parser, 8, 16 << 20, stepfactor=2)
    add("-n", "--iters", type=whole(1, MAX_ITERS), default=20,
        help=f"timed iterations per size, at most {MAX_ITERS} (default 20)")
    add("-w", "--warmup_iters", type=whole(0, MAX_ITERS), default=1,
        help=f"untimed iterations first, at most {MAX_ITERS} (default 1)")
    add("-c", "--check", type=int, choices=(0, 1), default=1,
        help="1: count wrong elements in #wrong (default), 0: do not check")
    add("-d", "--datatype", type=datatype, default="float32", metavar="TYPE",
        help="float (default), half, double, int8, uint8, int32, uint32, int64, uint64, or all")
    add("-o", "--op", choices=(*sorted(OPS), "all"), default="sum",
        help="reduction (default sum), or all")
    add("-a", "--average", type=int, choices=sorted(AVERAGE), default=3,
        help="time of a row from the ranks' times: 0 rank 0, 1 mean, 2 min, 3 max (default)")
    add("-z", "--blocking", type=int, choices=(0, 1), default=0,
        help="1: wait for each call to complete before the next (GPU buffers)")
    add("-C", "--report_cputime", type=int, choices=(0, 1), default=0,
        help="1: time until the calls are issued, not until they complete (GPU buffers)")
    add("-t", "--nthreads", type=whole(1, 1, "one thread drives each rank; launch more ranks "
                                          "with --ranks"), default=1,
        help="threads per rank: 1 only")
    add("-g", "--ngpus", type=whole(1, 1, "each rank uses one GPU; launch more ranks with "
                                      "--ranks"), default=1,
        help="GPUs per thread: 1 only (one per rank)")
    add("--collective", type=_collective, default="allreduce",
        help="allreduce (all_reduce), reduce_scatter, allgather (all_gather), broadcast, "
             "reduce or alltoall")
    add("-r", "--root", type=whole(0, launch_limit()), default=0,
        help="the root rank of broadcast and reduce (default 0)")
    add("--algorithms", nargs="+", choices=(*ALGORITHMS, "native", "auto"), default=None,
        metavar="ALGO", help="algorithms to run, each with its own table (default: every "
                             f"one that serves the collective; for allreduce "
                             f"{' '.join(CHOICES)})")
    add("--transport", choices=("mpi", "nccl"), default="mpi",
        help="mpi (mpi4py) or nccl (needs --buffer cupy and one GPU per rank)")
    add("--buffer", choices=("numpy", "cupy"), default="numpy", help="array module of the buffers")
    add_machine(parser, "calibrate", TOPOLOGY_EXTRA,
                ranks_help="ranks to launch when not already under mpirun (default 4)", ranks=4,
                max_ranks=launch_limit())
    add("--json", type=Path, metavar="PATH", help="write every measurement as JSON")
    add("--csv", type=Path, metavar="PATH", help="write one row per size and algorithm as CSV")
    add("--plot", type=Path, metavar="PNG", help="draw measured (and predicted) busbw vs size")
    add("--timeout", type=seconds(), default=3600.0,
        help=f"seconds before a launched job is ended, at most {MAX_TIMEOUT_S:g} (default "
             "3600)")


def datatypes(args: argparse.Namespace) -> list[str]:
    """The dtypes to run: ``-d``'s, or for ``-d all`` every one the buffers hold.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by a parser set up with :func:`add_arguments`.

    Returns
    -------
    list of str
        NumPy dtype names.
    """
    return list(DTYPES) if args.datatype == "all" else [args.datatype]


def ops(args: argparse.Namespace) -> list[str]:
    """The reductions to run: ``-o``'s, or for ``-o all`` every one (AllGather: ``sum``,
    which it ignores).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by a parser set up with :func:`add_arguments`.

    Returns
    -------
    list of str
    """
    if args.collective in NO_OP:
        return ["sum"]
    return sorted(OPS) if args.op == "all" else [args.op]


def check_args(args: argparse.Namespace, nranks: int | None = None) -> None:
    """Raise UsageError naming the flag for values no benchmark can run.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by a parser set up with :func:`add_arguments`.
    nranks : int or None, optional
        Ranks of the job under ``mpirun``; ``--ranks`` when None.

    Raises
    ------
    UsageError
        For a bad sweep, repeated algorithms, a dtype the buffers lack, NCCL
        without CuPy buffers, CuPy not installed, a reduction op for AllGather, a machine
        option its topology cannot take, a topology that is neither a preset nor a file
        nor places the ranks, buffers of ``-e`` bytes that the launched ranks' memory
        cannot hold, or an output file that cannot be written.  (Each number's bounds
        are checked as it is parsed.)
    """
    sweep(args)
    args.algorithms = served("--algorithms", args.collective, args.algorithms,
                             (*ALGORITHMS, "native", "auto"))
    _check_collective(args, args.ranks if nranks is None else nranks)
    if args.datatype not in (*DTYPES, "all"):
        raise UsageError(f"-d {args.datatype} is not allowed with --buffer {args.buffer}: "
                         f"its arrays have no {args.datatype}; choose one of "
                         f"{', '.join(DTYPES)} or all")
    if args.transport == "nccl" and args.buffer != "cupy":
        raise UsageError("--transport nccl needs --buffer cupy: NCCL moves GPU memory only")
    if args.buffer == "cupy" and importlib.util.find_spec("cupy") is None:
        raise UsageError("--buffer cupy is not allowed here: CuPy is not installed "
                         "(pip install cupy-cuda12x)")
    if args.collective in NO_OP and args.op not in ("sum", "all"):
        raise UsageError(f"-o {args.op} is not allowed for {args.collective}, which reduces "
                         "nothing")
    if args.plot is not None and len(datatypes(args)) * len(ops(args)) > 1:
        raise UsageError(f"--plot {args.plot} is not allowed with -d all or -o all: a plot "
                         "draws one datatype and op")
    if nranks is None and args.buffer == "numpy":  # the ranks this command launches here
        check_memory("-e", args.maxbytes, args.ranks)
    _check_model(args, args.ranks if nranks is None else nranks)
    for flag in ("json", "csv", "plot"):
        check_output(f"--{flag}", getattr(args, flag))


def _check_collective(args: argparse.Namespace, nranks: int) -> None:
    """Broadcast, Reduce and AllToAll run over MPI on NumPy buffers; the root is a rank."""
    if args.collective not in BLOCK_COLLECTIVES and (args.transport, args.buffer) != \
            ("mpi", "numpy"):
        raise UsageError(f"--collective {args.collective} is not allowed with --transport "
                         f"{args.transport} --buffer {args.buffer}: it runs over mpi on numpy "
                         "buffers")
    if args.collective in ROOTED and args.root >= nranks:
        raise UsageError(f"-r {args.root} is not allowed: the root must be one of the "
                         f"{nranks} ranks")


def _check_model(args: argparse.Namespace, nranks: int) -> None:
    """The machine options; a preset or file must place the job's ``nranks``."""
    if args.topology in TOPOLOGY_EXTRA:
        for flag in ("nodes", "alpha", "beta"):
            if getattr(args, flag) is not None:
                raise UsageError(f"--{flag} {getattr(args, flag)} is not allowed with "
                                 f"--topology {args.topology}, which takes no machine options")
    else:
        machine(args, nranks)


def sizes(minbytes: int, maxbytes: int, stepfactor: int, collective: str, nranks: int,
          dtype: str, stepbytes: int | None = None) -> list[tuple[int, int]]:
    """The benchmark's rows: ``(size in bytes, count per rank)``, as nccl-tests forms them.

    Sizes run ``minbytes, minbytes * stepfactor, ...`` (or ``minbytes + stepbytes, ...``)
    up to ``maxbytes``; each is rounded down to whole elements on every rank
    (ReduceScatter and AllGather: a multiple of ``nranks`` elements); repeated rows are
    dropped.

    Parameters
    ----------
    minbytes : int
        First size in bytes (0 steps to 1 next).
    maxbytes : int
        Largest size in bytes.
    stepfactor : int
        Multiplier between sizes (>= 2).
    collective : str
        The collective; AllReduce, Broadcast and Reduce keep sizes per rank unsplit,
        the others count elements per rank's block (AllToAll: per peer).
    nranks : int
        Number of ranks.
    dtype : str
        NumPy dtype name of the elements.
    stepbytes : int or None, optional
        Increment between sizes instead of ``stepfactor``.

    Returns
    -------
    list of tuple[int, int]
        ``(nbytes, count)`` per row, in increasing order.

    Examples
    --------
    >>> sizes(8, 64, 2, "allreduce", 4, "float32")
    [(8, 2), (16, 4), (32, 8), (64, 16)]
    >>> sizes(8, 64, 2, "allgather", 4, "float32")
    [(0, 0), (16, 1), (32, 2), (64, 4)]
    >>> sizes(8, 40, 2, "allreduce", 4, "float32", stepbytes=16)
    [(8, 2), (24, 6), (40, 10)]
    """
    itemsize = np.dtype(dtype).itemsize
    per_count = itemsize * (1 if collective in ("allreduce", "broadcast", "reduce") else nranks)
    asked = sweep(argparse.Namespace(minbytes=minbytes, maxbytes=maxbytes,
                                     stepfactor=None if stepbytes else stepfactor,
                                     stepbytes=stepbytes, default_stepfactor=stepfactor))
    rows: list[tuple[int, int]] = []
    for size in asked:
        count = size // per_count
        if (count * per_count, count) not in rows:
            rows.append((count * per_count, count))
    return rows
