"""What the collectives hold between calls, and how to give it back.

* :func:`release` drops the cached workspace (scratch, staging areas; at most
  ``COLLSIM_WORKSPACE_BYTES``, 64 MiB by default, are kept between calls), the cached
  plans, the checked calls that refer to them (:mod:`collectives.calls`) and the
  persistent requests bound to them, so their memory returns once no call is running.
* :func:`close` frees the private duplicate kept for an MPI communicator; ``comm.Free()``
  does it too.  :meth:`NcclComm.close` destroys an NCCL communicator.
* :func:`abort_on_error` turns off (or on) the hooks that abort the whole job when a rank
  fails (:mod:`collectives.executors.abort`).
"""

from __future__ import annotations

from .calls import release_calls
from .executors.abort import abort_on_error
from .executors.buffers import release_workspace, workspace_bytes
from .executors.guard import release_signed
from .executors.mpi import close, release_bindings
from .executors.plan import release_plans

__all__ = ["release", "close", "abort_on_error", "workspace_bytes"]


def release() -> None:
    """Drop the cached workspace and plans of this process.

    Call it between phases of a program, not while a collective runs on another thread.
    The next call allocates and plans anew.

    Examples
    --------
    >>> import collectives
    >>> collectives.release()
    >>> collectives.workspace_bytes()
    0
    """
    release_calls()
    release_bindings()
    release_workspace()
    release_plans()
    release_signed()
