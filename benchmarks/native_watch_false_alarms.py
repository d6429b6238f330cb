"""Why native does not just watch for point-to-point messages while in MPI's collective.

Run ``python benchmarks/native_watch_false_alarms.py`` (it relaunches itself under
``mpirun -n 3``).  A correct program: every rank runs an ``Iallreduce`` (32 KiB) with an
``Irecv(ANY_SOURCE, ANY_TAG)`` watch posted beside it and ``Waitany`` over both, then
one ring step (send to the next rank, receive from the previous) as the next call.  It
counts, per rank, how often the watch completed first while the rank's collective was
still pending (the next call's message of a peer that finished earlier: a watch would
raise a false mismatch), and how often it matched just after the collective completed,
before it could be cancelled.
"""

from __future__ import annotations

import sys

import numpy as np

from collsim.launch import in_mpi_job, run_mpi

CALLS = 3000


def main() -> None:
    if not in_mpi_job():
        raise SystemExit(run_mpi(3, [__file__, *sys.argv[1:]], timeout_s=300,
                                 capture=False).returncode)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD.Dup()
    rank, size = comm.Get_rank(), comm.Get_size()
    data, out = np.ones(4096), np.empty(4096)
    message, got = np.ones(16), np.empty(16)
    early = late = 0
    status = MPI.Status()
    for _ in range(CALLS):
        watch = comm.Irecv(got, MPI.ANY_SOURCE, MPI.ANY_TAG)
        collective = comm.Iallreduce(data, out, MPI.SUM)
        caught = MPI.Request.Waitany([collective, watch]) == 1
        if caught:
            early += 1
            collective.Wait()
        else:
            watch.Cancel()
            watch.Wait(status)
            caught = not status.Is_cancelled()
            late += caught
        send = comm.Isend(message, (rank + 1) % size, 7)
        if not caught:
            comm.Recv(got, (rank - 1) % size, 7)
        send.Wait()
    print(f"rank {rank}: watch first while the collective was pending {early}, matched "
          f"just after it completed {late}, of {CALLS} correct calls", flush=True)


if __name__ == "__main__":
    main()
