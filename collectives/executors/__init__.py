"""Executors: run a schedule's plan for real, over MPI (mpi4py) or NCCL (CuPy).

* :mod:`.plan` compiles one rank's steps once and caches the plan;
* :mod:`.buffers` checks and lays out NumPy or CuPy buffers before any communication;
* :mod:`.runtime` holds what the collectives keep between calls, in one object;
* :mod:`.walk` is the MPI step walk, with its postings and stagings as strategies;
* :mod:`.persistent` binds plans to buffers as persistent requests, which
  :mod:`.compiled` also walks in one native call;
* :mod:`.mpi` walks plans over MPI, CUDA-aware or staged through host memory;
* :mod:`.nccl` walks plans through NCCL's grouped send/recv;
* :mod:`.graphs` captures a repeated NCCL walk as a CUDA graph and replays it;
* :mod:`.check` makes ranks agree on their arguments (``check=True``);
* :mod:`.guard` carries each call's signature in its message tags, checks it, and cleans
  up after a failed call;
* :mod:`.hello` has MPI's own collectives (``native``) exchange signed hellos first, so
  ranks that disagree, or run a schedule beside them, raise instead of hanging;
* :mod:`.abort` aborts the job when a rank fails (unless opted out);
* :mod:`.transport` states what a transport is (:class:`~.transport.Transport`).

Importing this package imports neither mpi4py nor CuPy; the transports do on first use.
"""

from __future__ import annotations

from typing import Any

from .mpi import mpi_transport
from .nccl import NcclComm
from .transport import Transport

__all__ = ["Transport", "transport_for"]


def transport_for(comm: Any) -> Transport:
    """Return the transport for ``comm``.

    Parameters
    ----------
    comm : NcclComm, mpi4py.MPI.Intracomm or None
        None or an mpi4py communicator runs over MPI (:func:`~.mpi.mpi_transport`), an
        :class:`~collectives.executors.nccl.NcclComm` over NCCL.

    Returns
    -------
    MpiTransport or NcclComm
        The transport.

    Raises
    ------
    TypeError
        If ``comm`` is neither.
    """
    if isinstance(comm, NcclComm):
        return comm
    return mpi_transport(comm)
