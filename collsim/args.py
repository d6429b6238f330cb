"""The command line's shared arguments: size sweeps, datatypes, machines, output files.

Every ``collsim`` command takes these with one meaning (the README's flag table):

* the sweep of nccl-tests: ``-b/--minbytes``, ``-e/--maxbytes`` (suffixes K, M, G for
  powers of 1024), ``-f/--stepfactor`` or ``-i/--stepbytes``;
* ``-d/--datatype``: nccl-tests' type names (``float``, ``half``, ``bfloat16``, ...) or
  NumPy's;
* the machine: ``--topology`` (a preset or a topology file), ``--ranks``, ``--nodes`` (DGX
  presets), ``--alpha``/``--beta`` (the flat and mesh presets), refused where the preset cannot
  take them.

Every number a flag takes has bounds, stated in its help and checked as it is parsed
(:class:`Bounded`): sizes at most :data:`MAX_BYTES`, ranks launched at most
:data:`RANKS_PER_CORE` per core of this machine (:func:`launch_limit`), ranks of a model
at most :data:`MAX_MODEL_RANKS`, calls at most :data:`MAX_ITERS`, a sweep at most
:data:`MAX_SWEEP` sizes; every output file is checked writable (:func:`check_output`).
Values are checked before anything launches or measures; a bad one raises
:class:`UsageError` or argparse's error, which :func:`collsim.cli.main` prints as one line
naming the flag (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import topology

__all__ = ["UsageError", "Bounded", "parse_size", "DATATYPES", "ITEMSIZES", "MAX_BYTES",
           "MAX_ITERS", "MAX_MODEL_RANKS", "MAX_SIMULATE_RANKS", "MAX_SELECT_RANKS", "MAX_NODES", "MAX_STEPFACTOR", "MAX_SWEEP",
           "MAX_TIMEOUT_S", "RANKS_PER_CORE", "BUFFERS_PER_RANK", "launch_limit", "whole",
           "size", "seconds", "add_sweep", "sweep", "datatype", "add_machine", "machine",
           "model_ranks", "check_at_least", "check_output", "check_distinct", "served", "check_memory"]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

#: the largest size in bytes any flag takes (1 TiB): ``-b``, ``-e``, ``-i``, ``--sizes``
MAX_BYTES = 1 << 40
#: the most calls (timed, untimed) or rounds per size any flag asks for
MAX_ITERS = 10**6
#: the most ranks ``schedule`` prints (the flat preset's ``--ranks``): 1024 ranks of
#: steps take minutes to print on a 2-core machine (``schedule --ranks 1024``: 209 s)
MAX_MODEL_RANKS = 1024
#: the most ranks ``simulate`` plays (:data:`simulator.MAX_SIMULATED_RANKS`: the DES of
#: a 4,096-rank ring takes some 40 s and 3 GB)
MAX_SIMULATE_RANKS = 4096
#: the most ranks ``select`` prices: 2,048 DGX nodes, which the analytic model answers in
#: seconds (``benchmarks/bench_select.py``)
MAX_SELECT_RANKS = 16384
#: the most ``--nodes`` of a DGX preset (8 ranks each) any command takes
MAX_NODES = MAX_SELECT_RANKS // 8
#: the largest ``-f`` (a factor above the largest size makes a sweep of one size)
MAX_STEPFACTOR = 1 << 20
#: the most sizes one ``-b``/``-e`` sweep makes (``-i 1 -e 1G`` would make a billion)
MAX_SWEEP = 4096
#: the longest ``--timeout``, seconds (about 11.6 days)
MAX_TIMEOUT_S = 1e6
#: ranks a command launches at most per core of this machine (more ranks than cores share
#: them; past this many each gets too little of a core to answer in time)
RANKS_PER_CORE = 16
#: buffers of the largest size each rank of a measuring command holds at most (send,
#: receive, the expected values, the library's work space), for :func:`check_memory`
BUFFERS_PER_RANK = 4

#: ``-d`` names -> NumPy-style dtype name (nccl-tests' names, then NumPy's)
DATATYPES: dict[str, str] = {
    "float": "float32", "half": "float16", "double": "float64", "int": "int32",
    "bfloat16": "bfloat16", **{name: name for name in (
        "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
        "float64")}}

#: bytes per element of each dtype name of :data:`DATATYPES`
ITEMSIZES: dict[str, int] = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8,
                             "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4,
                             "float64": 8}

#: presets that take ``--nodes``, and those that take ``--alpha``/``--beta``
_NODE_PRESETS = ("dgx-h100", "dgx-a100")
_ALPHA_BETA_PRESETS = ("flat", "mesh")


class UsageError(ValueError):
    """A command-line value no command can run; the message names the flag, the value
    and what is allowed."""


def launch_limit() -> int:
    """The most ranks a command launches on this machine: :data:`RANKS_PER_CORE` per core.

    Returns
    -------
    int
        ``RANKS_PER_CORE * os.cpu_count()`` (all the machine's cores, not those this
        process is bound to: a launched rank is bound to one).
    """
    return RANKS_PER_CORE * (os.cpu_count() or 1)


@dataclass(frozen=True)
class Bounded:
    """An argparse ``type``: the text as a number from ``minimum`` to ``maximum``.

    Attributes
    ----------
    parse : callable
        Text -> number (``int``, ``float``, :func:`parse_size`); raises ValueError or
        ``argparse.ArgumentTypeError`` for text it cannot read.
    minimum, maximum : int or float
        The bounds, inclusive unless ``above``.
    what : str
        What the number is, for the message (``"an integer"``).
    above : bool
        The number must be above ``minimum`` (a duration, a latency).
    note : str
        Why the bounds are what they are, appended to the message.

    Examples
    --------
    >>> whole(1, 10)("3")
    3
    >>> whole(1, 10)("11")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 11 is not allowed; it must be an integer from 1 to 10
    """

    parse: Callable[[str], int | float]
    minimum: int | float
    maximum: int | float
    what: str = "an integer"
    above: bool = False
    note: str = ""

    @property
    def allowed(self) -> str:
        """The values allowed, in words."""
        if self.minimum == self.maximum:
            return f"{self.minimum}"
        low, high = (f"{bound:.15g}" for bound in (self.minimum, self.maximum))
        return (f"{self.what} above {low} and at most {high}" if self.above
                else f"{self.what} from {low} to {high}")

    def __call__(self, text: str) -> int | float:
        """Parse ``text``; raise ``argparse.ArgumentTypeError`` outside the bounds."""
        try:
            value = self.parse(text)
        except (ValueError, OverflowError, argparse.ArgumentTypeError):
            value = None
        inside = value is not None and (value > self.minimum if self.above
                                        else value >= self.minimum) and value <= self.maximum
        if value is None or not inside:
            raise argparse.ArgumentTypeError(
                f"{text} is not allowed; it must be {self.allowed}"
                + (f" ({self.note})" if self.note else ""))
        return value


def whole(minimum: int, maximum: int, note: str = "") -> Bounded:
    """An integer flag's type, from ``minimum`` to ``maximum`` (:class:`Bounded`)."""
    return Bounded(int, minimum, maximum, note=note)


def seconds(maximum: float = MAX_TIMEOUT_S) -> Bounded:
    """A duration's type: seconds above 0, at most ``maximum`` (:class:`Bounded`)."""
    return Bounded(float, 0, maximum, "a number of seconds", above=True)


def size(minimum: int = 0, maximum: int = MAX_BYTES) -> Bounded:
    """A size's type: bytes with suffix K, M, G or T, from ``minimum`` to ``maximum``."""
    return Bounded(parse_size, minimum, maximum, "a size in bytes", note="suffix K, M, G "
                   "or T for powers of 1024, e.g. 64, 8K, 1M")


def parse_size(text: str) -> int:
    """Parse ``"64"``, ``"8K"``, ``"1M"``, ``"1G"``, ``"1T"`` (powers of 1024) into bytes.

    Parameters
    ----------
    text : str
        A whole number with an optional ``K``, ``M``, ``G`` or ``T`` and ``B`` (any case).

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    argparse.ArgumentTypeError
        Naming the text and the forms allowed.

    Examples
    --------
    >>> parse_size("8K"), parse_size("16M"), parse_size("3"), parse_size("1G")
    (8192, 16777216, 3, 1073741824)
    """
    found = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)B?\s*", text.upper())
    if not found:
        raise argparse.ArgumentTypeError(f"size {text!r} is not allowed; use e.g. 64, 8K, 1M, 1G")
    return int(found[1]) * _UNITS[found[2]]


def datatype(text: str) -> str:
    """The dtype name ``-d text`` means (``float`` -> ``float32``); ``all`` stays ``all``.

    Parameters
    ----------
    text : str
        A name of :data:`DATATYPES`, or ``all``.

    Returns
    -------
    str
        The NumPy-style name, or ``"all"``.

    Raises
    ------
    argparse.ArgumentTypeError
        For any other name, listing the names allowed.

    Examples
    --------
    >>> datatype("half"), datatype("bfloat16"), datatype("all")
    ('float16', 'bfloat16', 'all')
    """
    if text == "all":
        return text
    if text not in DATATYPES:
        raise argparse.ArgumentTypeError(f"datatype {text!r} is not supported; choose one of "
                                         f"{', '.join(DATATYPES)} or all")
    return DATATYPES[text]


def add_sweep(parser: argparse.ArgumentParser, minbytes: int, maxbytes: int,
              stepfactor: int | None = 2) -> None:
    """Add nccl-tests' ``-b -e`` and, when ``stepfactor`` is not None, ``-f -i``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    minbytes, maxbytes : int
        Defaults of ``-b`` and ``-e``.
    stepfactor : int or None, optional
        Default of ``-f``; None for a command whose sizes are fixed (``select``).
    """
    add = parser.add_argument
    add("-b", "--minbytes", type=size(), default=minbytes, metavar="SIZE",
        help=f"smallest size in bytes, suffix K, M, G or T, at most 1T (default {minbytes})")
    add("-e", "--maxbytes", type=size(), default=maxbytes, metavar="SIZE",
        help=f"largest size in bytes, at most 1T (default {maxbytes})")
    if stepfactor is not None:
        add("-f", "--stepfactor", type=whole(2, MAX_STEPFACTOR), default=None, metavar="F",
            help=f"multiply the size by F (2 to {MAX_STEPFACTOR}) between rows (default "
                 f"{stepfactor})")
        add("-i", "--stepbytes", type=size(1), default=None, metavar="SIZE",
            help=f"add SIZE bytes between rows instead of multiplying (at most {MAX_SWEEP} "
                 "rows)")
        parser.set_defaults(default_stepfactor=stepfactor)


def sweep(args: argparse.Namespace) -> list[int]:
    """The sizes ``-b``, ``-e`` and ``-f`` or ``-i`` ask for, in bytes, checked.

    Sizes run ``b, b*f, b*f^2, ...`` (or ``b, b+i, ...``) up to ``e``; a sweep from 0
    steps to 1 next (nccl-tests' ``-b 0``).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed with :func:`add_sweep`.

    Returns
    -------
    list of int
        Sizes in increasing order.

    Raises
    ------
    UsageError
        For ``-b`` above ``-e``, ``-f`` below 2, ``-i`` below 1, both ``-f`` and ``-i``,
        or more than :data:`MAX_SWEEP` sizes.

    Examples
    --------
    >>> sweep(argparse.Namespace(minbytes=8, maxbytes=64, stepfactor=None, stepbytes=None,
    ...                          default_stepfactor=2))
    [8, 16, 32, 64]
    >>> sweep(argparse.Namespace(minbytes=0, maxbytes=40, stepfactor=None, stepbytes=16,
    ...                          default_stepfactor=2))
    [0, 1, 17, 33]
    """
    factor, step = args.stepfactor, args.stepbytes
    if factor is not None and step is not None:
        raise UsageError(f"-f {factor} and -i {step} are both given; choose one: -f multiplies "
                         "the size, -i adds to it")
    if args.minbytes > args.maxbytes:
        raise UsageError(f"-b {args.minbytes} is larger than -e {args.maxbytes}; "
                         "need minbytes <= maxbytes")
    if step is not None:
        check_at_least("-i", step, 1)
        rows = (args.maxbytes - max(args.minbytes, 1)) // step + 1 + (args.minbytes == 0)
        if rows > MAX_SWEEP:
            raise UsageError(f"-i {step} is not allowed with -b {args.minbytes} -e "
                             f"{args.maxbytes}: it makes {rows} sizes, and a sweep has at "
                             f"most {MAX_SWEEP}; give a larger -i or use -f")
    else:
        factor = args.default_stepfactor if factor is None else factor
        check_at_least("-f", factor, 2)
    sizes, size = [], args.minbytes
    while size <= args.maxbytes:
        sizes.append(size)
        size = 1 if size == 0 else size + step if step is not None else size * factor
    return sizes


def add_machine(parser: argparse.ArgumentParser, default: str, extra: Sequence[str] = (),
                ranks_help: str = "ranks: of the flat or mesh preset (default 8), or the first "
                                  "N a larger machine places (default all)",
                ranks: int | None = None, max_ranks: int = MAX_MODEL_RANKS) -> None:
    """Add ``--topology``, ``--nodes``, ``--alpha``, ``--beta`` and ``--ranks``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser.
    default : str
        Default ``--topology``.
    extra : sequence of str, optional
        Names besides presets and files that the command takes (``calibrate``, ``none``).
    ranks_help : str, optional
        What ``--ranks`` means for this command.
    ranks : int or None, optional
        Default of ``--ranks``.
    max_ranks : int, optional
        The most ``--ranks`` (:data:`MAX_MODEL_RANKS`; for a command that launches
        them, :func:`launch_limit`).
    """
    names = ", ".join((*extra, *topology.PRESET_NAMES))
    add = parser.add_argument
    add("--topology", default=default, metavar="NAME",
        help=f"the machine: {names}, or a topology file (default {default})")
    add("--ranks", type=whole(1, max_ranks), default=ranks, metavar="N",
        help=f"{ranks_help}; at most {max_ranks}")
    most = max(1, min(MAX_NODES, max_ranks // 8))
    add("--nodes", type=whole(1, most, f"8 ranks each, {max_ranks} at most"),
        default=None, metavar="N",
        help=f"nodes of {' or '.join(_NODE_PRESETS)}, at most {most} (default 1)")
    add("--alpha", type=Bounded(float, 0, 1.0, "a number of seconds", above=True),
        default=None, metavar="SECONDS",
        help=f"latency of the flat and mesh presets, at most 1 s (default {topology.FLAT_ALPHA_S:g})")
    add("--beta", type=Bounded(float, 0, 1.0, "a number of seconds per byte", above=True),
        default=None, metavar="S_PER_BYTE",
        help="seconds per byte of the flat and mesh presets, at most 1 (default "
             f"{topology.FLAT_BETA_S_PER_BYTE:g})")


def _check_machine_options(args: argparse.Namespace) -> None:
    name = args.topology
    if args.nodes is not None and name not in _NODE_PRESETS:
        raise UsageError(f"--nodes {args.nodes} is not allowed with --topology {name}; only "
                         f"{' and '.join(_NODE_PRESETS)} take it")
    for flag in ("alpha", "beta"):
        value = getattr(args, flag)
        if value is not None and name not in _ALPHA_BETA_PRESETS:
            raise UsageError(f"--{flag} {value:g} is not allowed with --topology {name}; only "
                             f"{' and '.join(_ALPHA_BETA_PRESETS)} take it")
    if name not in topology.PRESET_NAMES and not Path(name).is_file():
        raise UsageError(f"--topology {name!r} is neither a preset "
                         f"({', '.join(topology.PRESET_NAMES)}) nor a file")


def machine(args: argparse.Namespace, nranks: int | None = None) -> topology.Topology:
    """The machine ``--topology`` and its options name, checked.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed with :func:`add_machine`.
    nranks : int or None, optional
        Ranks the machine must place (the flat or mesh preset's size); ``--ranks`` (flat: 8) when
        None.

    Returns
    -------
    topology.Topology

    Raises
    ------
    UsageError
        For an option the preset cannot take, a value out of range, a name that is
        neither a preset nor a file, a file that does not load, or a machine that places
        fewer than the ranks asked for.
    """
    _check_machine_options(args)
    wanted = args.ranks if nranks is None else nranks
    name = args.topology
    try:
        if name in topology.PRESET_NAMES:
            given = {"alpha": args.alpha, "beta": args.beta, "nranks": wanted or 8}
            model = topology.preset(name, nodes=args.nodes or 1,
                                    **{k: v for k, v in given.items() if v is not None})
        else:
            model = topology.load(name)
    except (OSError, ValueError) as error:
        raise UsageError(f"--topology {name!r} is not allowed: {error}") from None
    if wanted is not None and wanted > model.nranks:
        culprit = f"--ranks {wanted}" if nranks is None else f"--topology {name!r}"
        raise UsageError(f"{culprit} is not allowed: {model.name} places {model.nranks} ranks "
                         f"and {wanted} are needed"
                         + ("; add --nodes" if name in _NODE_PRESETS else ""))
    return model


def model_ranks(args: argparse.Namespace, model: topology.Topology,
                limit: int = MAX_MODEL_RANKS) -> int:
    """The ranks a command models on ``model``: ``--ranks``, else all the machine's.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed with :func:`add_machine`.
    model : topology.Topology
        The machine (:func:`machine`).
    limit : int, optional
        The most ranks the command models (:data:`MAX_SIMULATE_RANKS`,
        :data:`MAX_SELECT_RANKS`).

    Returns
    -------
    int

    Raises
    ------
    UsageError
        When they are more than ``limit`` (a topology file's).
    """
    nranks = args.ranks or model.nranks
    if nranks > limit:
        raise UsageError(f"--topology {args.topology!r} is not allowed without --ranks: "
                         f"{model.name} places {nranks} ranks and this command models at "
                         f"most {limit}; give --ranks N")
    return nranks


def check_at_least(flag: str, value: int | float, minimum: int | float) -> None:
    """Raise UsageError unless ``value >= minimum``.

    Parameters
    ----------
    flag : str
        The flag, as the user types it (``-n``, ``--ranks``).
    value : int or float
        Its value.
    minimum : int or float
        The smallest value allowed.

    Raises
    ------
    UsageError
        ``"-n 0 is not allowed; it must be >= 1"``.
    """
    if value < minimum:
        raise UsageError(f"{flag} {value} is not allowed; it must be >= {minimum}")


def check_distinct(flag: str, values: Sequence[str]) -> None:
    """Raise UsageError when ``values`` repeats a name.

    Parameters
    ----------
    flag : str
        The flag that took the values.
    values : sequence of str
        The values given.

    Raises
    ------
    UsageError
        Naming the repeated value.
    """
    repeated = [v for i, v in enumerate(values) if v in values[:i]]
    if repeated:
        raise UsageError(f"{flag} {' '.join(values)} is not allowed: {repeated[0]!r} is given "
                         "twice; name each once")


def served(flag: str, collective: str, requested: Sequence[str] | None,
           choices: Sequence[str]) -> list[str]:
    """The algorithms a command runs for ``collective``: ``requested``, or by default those
    of ``choices`` that run it (``native`` and ``auto``, executor choices, run every one).

    Parameters
    ----------
    flag : str
        The flag that took ``requested``.
    collective : str
        The collective.
    requested : sequence of str or None
        The names given (None: the default).
    choices : sequence of str
        The names the flag accepts.

    Returns
    -------
    list of str

    Raises
    ------
    UsageError
        For a repeated name, or a named algorithm that does not run ``collective``.

    Examples
    --------
    >>> served("--algorithms", "allgather", None, ("ring", "native"))
    ['ring', 'native']
    """
    from collectives.registry import algorithm

    def runs(name: str) -> bool:
        return name in ("native", "auto") or collective in algorithm(name).collectives

    if requested is None:
        return [name for name in choices if runs(name)]
    check_distinct(flag, requested)
    wrong = [name for name in requested if not runs(name)]
    if wrong:
        raise UsageError(f"{flag} {wrong[0]} is not allowed with {collective}: it does not run "
                         f"{collective}; choose among {' '.join(n for n in choices if runs(n))}")
    return list(requested)


def check_output(flag: str, path: Path | None) -> None:
    """Raise UsageError when ``path`` cannot be written (checked before any work is done).

    The check writes: an existing file is opened for appending (its contents are kept),
    a new one is created and removed again, so that what the file system refuses (a
    read-only mount, ``/proc``, permissions, also for root) is found now and not after
    the measurements.  Under ``mpirun`` only rank 0 checks (it writes the files).

    Parameters
    ----------
    flag : str
        The flag that named the file.
    path : Path or None
        The file to write; None when not asked for.

    Raises
    ------
    UsageError
        When the path is a folder, its folder does not exist, or the file cannot be
        written.
    """
    if path is None or os.environ.get("OMPI_COMM_WORLD_RANK",
                                      os.environ.get("PMIX_RANK", "0")) != "0":
        return
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is not allowed: it is a folder; name a file")
    if not folder.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is not allowed: folder {str(folder)!r} does "
                         "not exist")
    try:
        if path.exists():
            path.open("a").close()
        else:
            path.open("x").close()
            path.unlink()
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"{flag} {str(path)!r} is not allowed: it cannot be written "
                         f"({reason})") from None


def check_memory(flag: str, nbytes: int, nranks: int, buffers: int = BUFFERS_PER_RANK) -> None:
    """Raise UsageError when ``nranks`` ranks holding ``buffers`` buffers of ``nbytes``
    bytes each would not fit in this machine's memory.

    Parameters
    ----------
    flag : str
        The flag that asked for the size.
    nbytes : int
        Bytes of the largest buffer.
    nranks : int
        Ranks on this machine.
    buffers : int, optional
        Buffers of that size per rank (:data:`BUFFERS_PER_RANK`).

    Raises
    ------
    UsageError
        Naming the flag, the memory needed and the memory the machine has.
    """
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # not reported: nothing to check against
        return
    needed = nbytes * nranks * buffers
    if needed > memory:
        raise UsageError(f"{flag} {nbytes} is not allowed with {nranks} ranks: they would "
                         f"hold {needed / 2**30:.1f} GiB ({buffers} buffers each) and this "
                         f"machine has {memory / 2**30:.1f} GiB")
