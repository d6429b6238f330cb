"""Where output goes: tables that a pipe receives whole and plain, progress a terminal sees.

Output to a terminal gets rich's colours and live progress; output to a pipe or a file
gets neither escape codes nor cut numbers (tables as wide as their content, lines
unwrapped).  Under ``mpirun`` a rank cannot tell: Open MPI gives every rank's stdout a
pseudo-terminal, even when ``mpirun``'s own output goes to a file.  So a command that
launches ``mpirun`` says in :data:`TTY_ENV` which of its own streams are terminals, and
ranks started some other way treat neither as one (set ``COLLSIM_TTY=stderr`` under your
own ``mpirun`` to see progress).  Progress goes to stderr, from rank 0 only.
"""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn)

from .launch import in_mpi_job

__all__ = ["TTY_ENV", "is_terminal", "terminal_env", "console", "progress"]

#: the launcher's streams that are terminals, comma-separated (``stdout,stderr``, or empty)
TTY_ENV = "COLLSIM_TTY"

#: a width no table of ours reaches: output that is not a terminal is never cut
_UNLIMITED = 1 << 16


def is_terminal(stream: str) -> bool:
    """Return True when ``stream`` (``"stdout"`` or ``"stderr"``) reaches a terminal.

    Parameters
    ----------
    stream : {"stdout", "stderr"}
        Which stream.

    Returns
    -------
    bool
        What :data:`TTY_ENV` says when it is set; False in a rank ``mpirun`` started
        without it; else whether the stream is a terminal.
    """
    told = os.environ.get(TTY_ENV)
    if told is not None:
        return stream in told.split(",")
    if in_mpi_job():
        return False
    return getattr(sys, stream).isatty()


def terminal_env() -> dict[str, str]:
    """Variables a launcher passes to its ranks: :data:`TTY_ENV` and, with a terminal,
    its width as ``COLUMNS``.

    Returns
    -------
    dict[str, str]
    """
    names = [name for name in ("stdout", "stderr") if is_terminal(name)]
    env = {TTY_ENV: ",".join(names)}
    if names:
        env["COLUMNS"] = str(shutil.get_terminal_size().columns)
    return env


def console(stderr: bool = False) -> Console:
    """A rich console for stdout (or stderr): styled on a terminal, plain and uncut
    elsewhere.

    Parameters
    ----------
    stderr : bool, optional
        Write to stderr instead of stdout.

    Returns
    -------
    rich.console.Console
    """
    terminal = is_terminal("stderr" if stderr else "stdout")
    return Console(stderr=stderr, force_terminal=terminal, force_interactive=terminal,
                   width=None if terminal else _UNLIMITED, soft_wrap=not terminal,
                   highlight=terminal)


@contextmanager
def progress(description: str, total: int | None = None,
             enabled: bool = True) -> Iterator[Callable[..., None]]:
    """Live progress on stderr while the block runs; yields ``advance(text, steps=1)``.

    A bar when ``total`` is known, a spinner otherwise, with the elapsed time; it is
    removed when the block ends.  Nothing is shown unless ``enabled`` (rank 0) and stderr
    is a terminal (:func:`is_terminal`).

    Parameters
    ----------
    description : str
        What is running.
    total : int or None, optional
        Steps to come; None for a spinner.
    enabled : bool, optional
        False on every rank but 0.

    Yields
    ------
    callable
        ``advance(text, steps=1)``: show ``text`` beside the description, count ``steps``.
    """
    if not (enabled and is_terminal("stderr")):
        yield lambda text, steps=1: None
        return
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn(), console=console(stderr=True),
                   transient=True)
    task = bar.add_task(description, total=total)

    def advance(text: str, steps: int = 1) -> None:
        bar.update(task, advance=steps, description=f"{description} {text}")

    with bar:
        yield advance
