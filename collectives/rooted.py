"""Rooted collectives (Broadcast, Reduce) written for root 0 and run from any root.

An algorithm numbers the ranks from the root: rank ``r`` is virtual rank
``(r - root) mod p``, so that the root is virtual rank 0; the peers it names are virtual
and :func:`real` turns them back into ranks.  The binomial trees that several of them
use are here too: in round ``t`` of ``L = ceil(log2 p)`` the virtual ranks that are
multiples of ``2m`` (``m = 2**(L-1-t)``) send to ``v + m`` (Broadcast; Reduce runs the
rounds backwards).
"""

from __future__ import annotations

from typing import Any

from topology.checks import check_int

__all__ = ["check_root", "virtual", "real", "levels", "lowbit"]


def check_root(root: Any, nranks: int) -> int:
    """Return ``root`` when it is a rank of ``nranks``.

    Raises
    ------
    ValueError
        Naming the value and the ranks allowed.

    Examples
    --------
    >>> check_root(3, 2)
    Traceback (most recent call last):
    ...
    ValueError: root=3 is not allowed; it must be an integer in [0, 1] (a rank of the 2)
    """
    return check_int(root, "root", 0, nranks - 1, note=f" (a rank of the {nranks})")


def virtual(rank: int, root: int, nranks: int) -> int:
    """The virtual rank of ``rank``: its distance from ``root`` along ``0..p-1``."""
    return (rank - root) % nranks


def real(v: int, root: int, nranks: int) -> int:
    """The rank of virtual rank ``v``."""
    return (v + root) % nranks


def levels(nranks: int) -> int:
    """Rounds of a binomial tree over ``nranks``: ``ceil(log2 nranks)`` (0 for one rank)."""
    return (nranks - 1).bit_length()


def lowbit(v: int, nranks: int) -> int:
    """The mask at which virtual rank ``v`` joins a binomial tree: its lowest set bit, or
    ``2**levels(nranks)`` for the root (``v = 0``)."""
    return v & -v if v else 1 << levels(nranks)
