"""``auto``: the algorithm a collective runs when the caller does not name one.

Until the selection API (``simulator.select``) takes over, the choice is a size rule,
kept in :func:`choose` alone so that the selection API can replace its body:

* one rank: ``ring`` (it has no steps);
* fewer than :data:`SMALL_BYTES` bytes in the working buffer: ``rhd`` (recursive
  halving-doubling needs about ``log2 p`` rounds, so latency dominates less);
* otherwise ``ring`` (it sends the fewest bytes per rank, ``(p-1)/p`` of the vector per
  phase, so bandwidth dominates less).
"""

from __future__ import annotations

__all__ = ["SMALL_BYTES", "choose"]

#: below this many bytes (the whole working buffer) the latency-bound rule picks ``rhd``;
#: 64 KiB is NCCL's and Open MPI's usual region for switching to the ring at a few ranks
SMALL_BYTES = 64 * 1024


def choose(collective: str, nbytes: int, nranks: int) -> str:
    """Return the algorithm ``auto`` runs for ``collective`` on ``nbytes`` over ``nranks``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    nbytes : int
        Bytes of the working buffer (the AllReduce vector, the ReduceScatter input, the
        AllGather output).
    nranks : int
        Number of ranks.

    Returns
    -------
    str
        One of :data:`collectives.ALGORITHMS`.

    Examples
    --------
    >>> choose("allreduce", 1024, 8), choose("allreduce", 1 << 20, 8)
    ('rhd', 'ring')
    """
    if nranks > 1 and nbytes < SMALL_BYTES:
        return "rhd"
    return "ring"
