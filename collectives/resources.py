"""What the collectives hold between calls, and how to give it back.

* :func:`release` drops the cached workspace (scratch, staging areas; at most
  ``COLLSIM_WORKSPACE_BYTES``, 64 MiB by default, are kept between calls), the cached
  plans, the bound calls that refer to them (:mod:`collectives.calls`) and the
  persistent requests bound to them, so their memory returns once no call is running.
* :func:`close` frees the private duplicate kept for an MPI communicator; ``comm.Free()``
  does it too.  :meth:`NcclComm.close` destroys an NCCL communicator.
* :func:`abort_on_error` turns off (or on) the hooks that abort the whole job when a rank
  fails (:mod:`collectives.executors.abort`).
"""

from __future__ import annotations

from .executors.abort import abort_on_error
from .executors.buffers import workspace_bytes
from .executors.mpi import close
from .executors.runtime import RUNTIME

__all__ = ["release", "close", "abort_on_error", "workspace_bytes"]


def release() -> None:
    """Drop the cached workspace, plans, bound calls and persistent requests of this process
    (everything :data:`~collectives.executors.runtime.RUNTIME` holds but ``auto``'s
    decisions).

    Call it between phases of a program, not while a collective runs on another thread.
    The next call allocates and plans anew.

    Examples
    --------
    >>> import collectives
    >>> collectives.release()
    >>> collectives.workspace_bytes()
    0
    """
    RUNTIME.release()
