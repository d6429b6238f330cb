"""Run ``mpirun`` so that its whole job ends with it: no rank outlives the command.

Open MPI's ``prterun`` puts every rank it starts in a process group of its own, so a
signal to the command's process group reaches ``prterun`` but not the ranks, and a
``prterun`` killed outright (``SIGKILL``, what :func:`subprocess.run` does on a timeout or
a ``KeyboardInterrupt``) leaves its ranks running.  :func:`run_job` ends a job the way
``prterun`` ends it cleanly, with ``SIGTERM``, which it passes on to every rank, and
waits :data:`GRACE_S` for it; only then does it kill ``prterun`` and every process below
it.  It does so when the job runs past its timeout, and when the command itself gets
``SIGTERM`` or ``SIGHUP`` (what ``timeout``, job schedulers and a closed terminal send) or
``SIGINT``; the command then ends as that signal would have ended it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any, Iterator, Sequence

__all__ = ["GRACE_S", "STOP_SIGNALS", "run_job", "end_job", "descendants"]

#: seconds ``prterun`` gets to end its ranks after ``SIGTERM`` before all are killed
#: (it took under 3 s with 2 ranks busy in a benchmark on this project's 2-core machine)
GRACE_S = 10.0

#: signals to the command that end the job with it (SIGINT comes as KeyboardInterrupt)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _Stopped(Exception):
    """The command got one of :data:`STOP_SIGNALS` while its job ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _processes() -> dict[int, tuple[int, int]]:
    """Every process: pid -> (parent pid, start time in clock ticks), from ``/proc``."""
    found = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # the process ended while we looked
            continue
        found[int(entry.parent.name)] = (int(fields[1]), int(fields[19]))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), read from ``/proc``.

    Parameters
    ----------
    pid : int
        The process.

    Returns
    -------
    list of int
        Process ids, parents before their children; empty where ``/proc`` is missing.
    """
    children: dict[int, list[int]] = {}
    for child, (parent, _) in _processes().items():
        children.setdefault(parent, []).append(child)
    found, queue = [], [pid]
    while queue:
        below = children.get(queue.pop(0), [])
        found += below
        queue += below
    return found


def end_job(process: subprocess.Popen[Any], grace_s: float = GRACE_S) -> None:
    """End ``mpirun`` and every process below it.

    ``SIGTERM`` to ``mpirun`` first (it ends its ranks); after ``grace_s`` seconds
    ``SIGKILL`` to it and to every process that was below it and still runs (the same
    process: its start time is checked, so a reused pid is left alone).

    Parameters
    ----------
    process : subprocess.Popen
        The running ``mpirun``.
    grace_s : float, optional
        Seconds ``mpirun`` has to end its ranks.
    """
    before = _processes()
    below = {pid: before[pid][1] for pid in descendants(process.pid) if pid in before}
    if process.poll() is None:
        process.terminate()
        try:
            process.communicate(timeout=grace_s)  # reads what it still writes to a pipe
        except subprocess.TimeoutExpired:
            now = _processes()
            below.update({pid: now[pid][1] for pid in descendants(process.pid) if pid in now})
            process.kill()
    now = _processes()
    for pid, start in below.items():
        if pid in now and now[pid][1] == start:
            with suppress(ProcessLookupError):  # it ended since
                os.kill(pid, signal.SIGKILL)
    process.communicate()


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


@contextmanager
def _handled(signals: Sequence[int], handler: Any) -> Iterator[None]:
    """``handler`` for ``signals`` inside the block, the previous ones after it (main
    thread only: Python delivers signals there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


def _end(process: subprocess.Popen[Any]) -> None:
    """:func:`end_job`, deaf to the signals that asked for it (``prterun`` sends its
    process group, this process too, ``SIGTERM`` as it ends)."""
    with _handled((*STOP_SIGNALS, signal.SIGINT), signal.SIG_IGN):
        end_job(process)


def run_job(command: Sequence[str], env: dict[str, str], timeout_s: float,
            capture: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (an ``mpirun`` line) and wait; end its whole job on every way out.

    Parameters
    ----------
    command : sequence of str
        The ``mpirun`` command line.
    env : dict[str, str]
        Its environment.
    timeout_s : float
        Seconds before the job is ended.
    capture : bool, optional
        Capture stdout and stderr (text) instead of passing them through.

    Returns
    -------
    subprocess.CompletedProcess
        With ``mpirun``'s exit status.

    Raises
    ------
    subprocess.TimeoutExpired
        After ending the job, when it ran past ``timeout_s``.
    KeyboardInterrupt
        After ending the job, on ``SIGINT``.

    Notes
    -----
    On ``SIGTERM`` or ``SIGHUP`` the job is ended, the signal's previous handler is put
    back and the signal raised again, so the command ends as it would have without a job
    (killed by the signal, by default).
    """
    pipe = subprocess.PIPE if capture else None
    stopped = None
    with _handled(STOP_SIGNALS, _raise_stopped):
        process = subprocess.Popen(list(command), env=env, text=True, stdout=pipe,
                                   stderr=pipe)
        try:
            out, err = process.communicate(timeout=timeout_s)
        except _Stopped as signal_:
            stopped = signal_.signum
            _end(process)
        except BaseException:  # the timeout, KeyboardInterrupt: no rank may outlive us
            _end(process)
            raise
    if stopped is not None:
        signal.raise_signal(stopped)
        raise SystemExit(128 + stopped)  # a handler put back that returned
    return subprocess.CompletedProcess(list(command), process.returncode, out, err)
