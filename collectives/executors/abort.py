"""No hang when one rank fails: the job is aborted, as ``python -m mpi4py`` does.

When a rank raises and the exception is not caught, or calls ``sys.exit`` with a non-zero
status, the other ranks are typically waiting inside a collective for it, and a plain
``mpirun -n 3 python app.py`` would wait forever (the failing rank's ``MPI_Finalize`` waits
for them too).  The first collective on a communicator therefore installs, once per
process:

* a :data:`sys.excepthook` that prints the traceback as usual, then calls
  ``MPI.COMM_WORLD.Abort(1)``;
* a wrapper of :func:`sys.exit` that records a non-zero status, and an :mod:`atexit`
  handler that aborts with it (``raise SystemExit(n)`` written out is not seen: call
  ``sys.exit``).

Opt out with ``COLLSIM_ABORT_ON_ERROR=0`` or :func:`abort_on_error` ``(False)`` before the
first collective (e.g. a test harness that catches errors on some ranks on purpose); the
hooks installed earlier are then removed.
"""

from __future__ import annotations

import atexit
import os
import sys
from types import TracebackType
from typing import Any

__all__ = ["ABORT_ENV", "abort_on_error", "install", "installed"]

#: environment variable: ``0`` keeps the job running when a rank fails (default ``1``)
ABORT_ENV = "COLLSIM_ABORT_ON_ERROR"

_state: dict[str, Any] = {"wanted": None, "installed": False, "status": 0,
                          "excepthook": None, "exit": None}


def abort_on_error(enabled: bool) -> None:
    """Turn the abort-on-failure hooks on or off for this process (over the environment).

    Parameters
    ----------
    enabled : bool
        True installs them at the next collective; False removes them now.
    """
    _state["wanted"] = bool(enabled)
    if not enabled:
        _uninstall()


def installed() -> bool:
    """Return whether the hooks are installed in this process."""
    return bool(_state["installed"])


def _wanted() -> bool:
    if _state["wanted"] is not None:
        return bool(_state["wanted"])
    value = os.environ.get(ABORT_ENV, "1").strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("", "1", "true", "yes", "on"):
        return True
    raise ValueError(f"{ABORT_ENV}={value!r} is not allowed; use 1 or 0")


def _abort(status: int) -> None:
    """Flush what this rank printed, then abort every rank of the job."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass  # closed or replaced streams: nothing to flush
    from mpi4py import MPI
    if MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.COMM_WORLD.Abort(status)


def _excepthook(kind: type[BaseException], value: BaseException,
                traceback: TracebackType | None) -> None:
    _state["excepthook"](kind, value, traceback)
    _abort(1)


def _exit(status: Any = None) -> None:
    code = 0 if status is None else status if isinstance(status, int) else 1
    _state["status"] = code
    _state["exit"](status)


def _at_exit() -> None:
    if _state["installed"] and _state["status"]:
        _abort(int(_state["status"]) & 0xFF or 1)


def install() -> None:
    """Install the hooks unless opted out or already installed (called by the executors)."""
    if _state["installed"] or not _wanted():
        return
    _state.update(installed=True, excepthook=sys.excepthook, exit=sys.exit, status=0)
    sys.excepthook = _excepthook
    sys.exit = _exit  # type: ignore[assignment]  # returns when the saved exit does
    atexit.register(_at_exit)


def _uninstall() -> None:
    if not _state["installed"]:
        return
    if sys.excepthook is _excepthook:
        sys.excepthook = _state["excepthook"]
    if sys.exit is _exit:
        sys.exit = _state["exit"]
    atexit.unregister(_at_exit)
    _state.update(installed=False, status=0)
