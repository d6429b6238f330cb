"""The command line's shared arguments: size sweeps, datatypes, machines, output files.

Every ``collsim`` command takes these with one meaning (the README's flag table):

* the sweep of nccl-tests: ``-b/--minbytes``, ``-e/--maxbytes`` (suffixes K, M, G for
  powers of 1024), ``-f/--stepfactor`` or ``-i/--stepbytes``;
* ``-d/--datatype``: nccl-tests' type names (``float``, ``half``, ``bfloat16``, ...) or
  NumPy's;
* the machine: ``--topology`` (a preset or a topology file), ``--ranks``, ``--nodes`` (DGX
  presets), ``--alpha``/``--beta`` (the flat and mesh presets), refused where the preset cannot
  take them.

Values are checked before anything launches or measures; a bad one raises
:class:`UsageError`, which :func:`collsim.cli.main` prints as one line (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Sequence

import topology

__all__ = ["UsageError", "parse_size", "DATATYPES", "ITEMSIZES", "add_sweep", "sweep",
           "datatype", "add_machine", "machine", "check_at_least", "check_output",
           "check_distinct"]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

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


def parse_size(text: str) -> int:
    """Parse ``"64"``, ``"8K"``, ``"1M"``, ``"1G"`` (powers of 1024) into bytes.

    Parameters
    ----------
    text : str
        A whole number with an optional ``K``, ``M`` or ``G`` and ``B`` (any case).

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
    found = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text.upper())
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
    add("-b", "--minbytes", type=parse_size, default=minbytes, metavar="SIZE",
        help=f"smallest size in bytes, suffix K, M or G (default {minbytes})")
    add("-e", "--maxbytes", type=parse_size, default=maxbytes, metavar="SIZE",
        help=f"largest size in bytes (default {maxbytes})")
    if stepfactor is not None:
        add("-f", "--stepfactor", type=int, default=None, metavar="F",
            help=f"multiply the size by F between rows (default {stepfactor})")
        add("-i", "--stepbytes", type=parse_size, default=None, metavar="SIZE",
            help="add SIZE bytes between rows instead of multiplying")
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
        For ``-b`` above ``-e``, ``-f`` below 2, ``-i`` below 1, or both ``-f`` and ``-i``.

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
                ranks: int | None = None) -> None:
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
    """
    names = ", ".join((*extra, *topology.PRESET_NAMES))
    add = parser.add_argument
    add("--topology", default=default, metavar="NAME",
        help=f"the machine: {names}, or a topology file (default {default})")
    add("--ranks", type=int, default=ranks, metavar="N", help=ranks_help)
    add("--nodes", type=int, default=None, metavar="N",
        help=f"nodes of {' or '.join(_NODE_PRESETS)} (default 1)")
    add("--alpha", type=float, default=None, metavar="SECONDS",
        help=f"latency of the flat and mesh presets (default {topology.FLAT_ALPHA_S:g})")
    add("--beta", type=float, default=None, metavar="S_PER_BYTE",
        help=f"seconds per byte of the flat and mesh presets (default {topology.FLAT_BETA_S_PER_BYTE:g})")


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
        if value is not None and not value > 0:
            raise UsageError(f"--{flag} {value:g} is not allowed; it must be > 0")
    if args.nodes is not None:
        check_at_least("--nodes", args.nodes, 1)
    if args.ranks is not None:
        check_at_least("--ranks", args.ranks, 1)
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
        given = f"--ranks {wanted}" if nranks is None else f"--topology {name!r}"
        raise UsageError(f"{given} is not allowed: {model.name} places {model.nranks} ranks "
                         f"and {wanted} are needed"
                         + ("; add --nodes" if name in _NODE_PRESETS else ""))
    return model


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


def check_output(flag: str, path: Path | None) -> None:
    """Raise UsageError when ``path`` cannot be written (checked before any work is done).

    Parameters
    ----------
    flag : str
        The flag that named the file.
    path : Path or None
        The file to write; None when not asked for.

    Raises
    ------
    UsageError
        When the folder does not exist or either it or the file is not writable.
    """
    if path is None:
        return
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is not allowed: it is a folder; name a file")
    if not folder.is_dir():
        raise UsageError(f"{flag} {str(path)!r} is not allowed: folder {str(folder)!r} does "
                         "not exist")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise UsageError(f"{flag} {str(path)!r} is not allowed: it cannot be written")

