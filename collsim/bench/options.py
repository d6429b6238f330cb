"""The benchmark's command line: nccl-tests' flags plus algorithms, transport and buffers.

==========================  ===================================================  ==========
flag                        meaning                                              default
==========================  ===================================================  ==========
``-C/--collective``         allreduce, reduce_scatter, allgather (also the       allreduce
                            nccl-tests names all_reduce, reduce_scatter,
                            all_gather)
``-b/--minbytes``           smallest size, bytes, with suffix K, M or G          8
``-e/--maxbytes``           largest size                                         16M
``-f/--stepfactor``         multiply the size by this between rows               2
``-n/--iters``              timed iterations per size                            20
``-w/--warmup_iters``       untimed iterations before them                       1
``-c/--check``              1: count wrong elements (#wrong), 0: skip            1
``-d/--datatype``           float, half, double, int8, uint8, int32, ...         float
``-o/--op``                 sum, prod, max, min                                  sum
``-a/--algorithms``         ring tree rhd pipeline auto native                   all six
``--transport``             mpi or nccl                                          mpi
``--buffer``                numpy or cupy                                        numpy
``--np``                    ranks to launch when not already under mpirun        4
``-t/--topology``           preset, topology file, ``calibrate`` or ``none``     calibrate
==========================  ===================================================  ==========

Sizes follow nccl-tests: the full vector's bytes (the AllReduce buffer, the
ReduceScatter input, the AllGather output), rounded down to whole elements on every rank.
"""

from __future__ import annotations

import argparse

from pathlib import Path

import numpy as np

from topology import PRESET_NAMES

from collectives.api import CHOICES
from collectives.ops import DTYPES, OPS
from collectives.schedule import COLLECTIVES
from ..sizes import parse_size

__all__ = ["add_arguments", "parse_size", "sizes", "DATATYPES", "COLLECTIVE_NAMES",
           "TOPOLOGY_PRESETS", "check_args"]


#: accepted ``-d`` names -> NumPy dtype name (nccl-tests names first, then NumPy's)
DATATYPES: dict[str, str] = {"float": "float32", "half": "float16", "double": "float64",
                             "int": "int32", **{name: name for name in DTYPES}}

#: accepted ``-C`` names -> collective (nccl-tests binaries are all_reduce_perf, ...)
COLLECTIVE_NAMES: dict[str, str] = {"all_reduce": "allreduce", "all_gather": "allgather",
                                    **{name: name for name in COLLECTIVES}}

#: ``-t`` preset names besides files (``calibrate`` measures this job, ``none`` predicts
#: nothing); DGX presets take ``--nodes``
TOPOLOGY_PRESETS = ("calibrate", "none", *PRESET_NAMES)


def _datatype(text: str) -> str:
    if text not in DATATYPES:
        raise argparse.ArgumentTypeError(f"datatype {text!r} is not supported; choose one of "
                                         f"{list(DATATYPES)}")
    return DATATYPES[text]


def _collective(text: str) -> str:
    if text not in COLLECTIVE_NAMES:
        raise argparse.ArgumentTypeError(f"collective {text!r} is not supported; choose one of "
                                         f"{list(COLLECTIVE_NAMES)}")
    return COLLECTIVE_NAMES[text]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark's arguments to ``parser``."""
    add = parser.add_argument
    add("-C", "--collective", type=_collective, default="allreduce",
        help="allreduce (all_reduce), reduce_scatter or allgather (all_gather)")
    add("-b", "--minbytes", type=parse_size, default=8, help="smallest size (default 8)")
    add("-e", "--maxbytes", type=parse_size, default=16 << 20, help="largest size (default 16M)")
    add("-f", "--stepfactor", type=int, default=2, help="size multiplier between rows (default 2)")
    add("-n", "--iters", type=int, default=20, help="timed iterations per size (default 20)")
    add("-w", "--warmup_iters", type=int, default=1, help="untimed iterations first (default 1)")
    add("-c", "--check", type=int, choices=(0, 1), default=1,
        help="1: count wrong elements in #wrong (default), 0: do not check")
    add("-d", "--datatype", type=_datatype, default="float32", metavar="TYPE",
        help="float (default), half, double, int8, uint8, int32, uint32, int64, uint64")
    add("-o", "--op", choices=sorted(OPS), default="sum", help="reduction (default sum)")
    add("-a", "--algorithms", nargs="+", choices=CHOICES, default=list(CHOICES), metavar="ALGO",
        help=f"algorithms to run, each with its own table (default: {' '.join(CHOICES)})")
    add("--transport", choices=("mpi", "nccl"), default="mpi",
        help="mpi (mpi4py) or nccl (needs --buffer cupy and one GPU per rank)")
    add("--buffer", choices=("numpy", "cupy"), default="numpy", help="array module of the buffers")
    add("--np", type=int, default=4, dest="nprocs",
        help="ranks to launch when not already under mpirun (default 4)")
    add("-t", "--topology", default="calibrate",
        help="model for the predicted best algorithm: a preset "
             f"({', '.join(TOPOLOGY_PRESETS[2:])}), a topology file, 'calibrate' (measure "
             "this job first, default) or 'none'")
    add("--nodes", type=int, default=1, help="nodes of a DGX preset (default 1)")
    add("--json", type=Path, metavar="PATH", help="write every measurement as JSON")
    add("--csv", type=Path, metavar="PATH", help="write one row per size and algorithm as CSV")
    add("--plot", type=Path, metavar="PNG", help="draw measured (and predicted) busbw vs size")
    add("--timeout", type=float, default=3600.0,
        help="seconds before a launched job is killed (default 3600)")


def check_args(args: argparse.Namespace) -> None:
    """Raise ValueError naming the flag for values no benchmark can run.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by a parser set up with :func:`add_arguments`.

    Raises
    ------
    ValueError
        For a step factor below 2, no timed iterations, negative warmup, fewer than 1
        rank or node, ``-b`` above ``-e``, NCCL without CuPy buffers, a reduction op for
        AllGather, or a topology that is neither a preset nor a file.
    """
    for flag, name, minimum in (("-f", "stepfactor", 2), ("-n", "iters", 1),
                                ("-w", "warmup_iters", 0), ("--np", "nprocs", 1),
                                ("--nodes", "nodes", 1)):
        if getattr(args, name) < minimum:
            raise ValueError(f"{flag} {getattr(args, name)} is not allowed; it must be "
                             f">= {minimum}")
    if args.minbytes > args.maxbytes:
        raise ValueError(f"-b {args.minbytes} is larger than -e {args.maxbytes}; "
                         "need minbytes <= maxbytes")
    if args.transport == "nccl" and args.buffer != "cupy":
        raise ValueError("--transport nccl needs --buffer cupy: NCCL moves GPU memory only")
    if args.collective == "allgather" and args.op != "sum":
        raise ValueError(f"-o {args.op} is not allowed for allgather, which reduces nothing")
    if args.topology not in TOPOLOGY_PRESETS and not Path(args.topology).is_file():
        raise ValueError(f"--topology {args.topology!r} is neither a preset "
                         f"({', '.join(TOPOLOGY_PRESETS)}) nor a file")


def sizes(minbytes: int, maxbytes: int, stepfactor: int, collective: str, nranks: int,
          dtype: str) -> list[tuple[int, int]]:
    """The benchmark's rows: ``(size in bytes, count per rank)``, as nccl-tests forms them.

    Sizes run ``minbytes, minbytes * stepfactor, ...`` up to ``maxbytes``; each is rounded
    down to whole elements on every rank (ReduceScatter and AllGather: a multiple of
    ``nranks`` elements); repeated rows are dropped.

    Parameters
    ----------
    minbytes : int
        First size in bytes (0 steps to 1 next).
    maxbytes : int
        Largest size in bytes.
    stepfactor : int
        Multiplier between sizes (>= 2).
    collective : str
        The collective; only ``"allreduce"`` keeps sizes per rank unsplit.
    nranks : int
        Number of ranks.
    dtype : str
        NumPy dtype name of the elements.

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
    """
    itemsize = np.dtype(dtype).itemsize
    per_count = itemsize * (1 if collective == "allreduce" else nranks)
    rows: list[tuple[int, int]] = []
    size = minbytes
    while size <= maxbytes:
        count = size // per_count
        if (count * per_count, count) not in rows:
            rows.append((count * per_count, count))
        size = size * stepfactor if size else 1
    return rows
