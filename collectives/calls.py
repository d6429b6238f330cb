"""Checked calls remembered, so that a repeated collective skips what it already checked.

A call's checks and decisions (the buffers' types, dtypes, sizes and flags, the op, the
algorithm ``auto`` or ``COLLSIM_ALGO`` resolves to, the plan) depend only on a few cheap
facts: the collective, the communicator, the op and algorithm named, ``check``, each
buffer's shape, dtype and flags, the variables the call path reads from the environment
and :func:`collectives.auto.epoch`, and the tuning parameters.  :func:`key` gathers them
into one tuple (None for a call it does not cover: CuPy buffers, a stream, a parameter
that is not a bool, int, str or None, such as ``order``, ``recvbuf=None``, an
``mpi4py.MPI.Op``); the public functions keep a :class:`Prepared` per key.  What depends
on where the buffers are (their overlap) is checked on every call.

The environment is read through ``os.environ``'s own dictionary of encoded names and
values, one lookup per variable, so that a variable set or removed between calls (as tests
do) changes the key at a fraction of the cost of ``os.environ.get``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import auto
from .executors.buffers import IN_PLACE, Call, check_overlap

__all__ = ["WATCHED_ENV", "CALLS_KEPT", "Prepared", "key", "lookup", "remember", "release_calls"]

#: the environment variables that decide what a call runs (:mod:`collectives.api`,
#: :mod:`collectives.executors.check`, :mod:`collectives.auto`, :mod:`collectives.nchannels`)
WATCHED_ENV = ("COLLSIM_ALGO", "COLLSIM_CHECK", "COLLSIM_TUNING", "COLLSIM_MIN_NCHANNELS",
               "COLLSIM_MAX_NCHANNELS")

#: prepared calls kept per process (the oldest dropped first)
CALLS_KEPT = 256

_ALGO, _CHECK, _TUNING, _MIN, _MAX = (os.environ.encodekey(name) for name in WATCHED_ENV)
#: ``os.environ``'s own dictionary (encoded names to encoded values): every change made
#: through ``os.environ`` (``monkeypatch.setenv`` included) lands in it
_ENVIRON: dict = os.environ._data  # type: ignore[attr-defined]
_NDARRAY = np.ndarray
#: the types of parameter values a key covers (each value is keyed with its type: a call
#: with ``doubling=1`` is checked in full, not taken for one with ``doubling=True``)
_SCALARS = frozenset({bool, int, str, type(None)})


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a checked call decided, to run again on buffers of the same kind.

    Attributes
    ----------
    comm : Any
        The communicator passed (kept so that its ``id`` in the key stays its own).
    transport : MpiTransport
        The transport it resolved to.
    collective, op, algorithm : str
        The call, with the algorithm resolved (``native`` or a schedule's name).
    dtype : numpy.dtype
        The buffers' dtype.
    count, part : int
        Elements of the working buffer and of one rank's block.
    in_place : bool
        Whether the input is taken from ``recvbuf``.
    plan : Plan or None
        The rank's plan (None for ``native``).
    signature : tuple or None
        What the ranks agree on before each call, when ``check`` is on; else None.
    signed : bool
        Whether ``native`` exchanges hellos first (False for ``check=False``).
    """

    comm: Any
    transport: Any
    collective: str
    op: str
    algorithm: str
    dtype: Any
    count: int
    part: int
    in_place: bool
    plan: Any
    signature: tuple | None
    signed: bool

    def call(self, sendbuf: Any, recvbuf: Any) -> Call:
        """Lay out this call's buffers, checking only where they are (their overlap).

        Parameters
        ----------
        sendbuf, recvbuf : numpy.ndarray
            Buffers of the kind :func:`key` described (``sendbuf`` unused in place).

        Returns
        -------
        Call

        Raises
        ------
        ValueError
            If the buffers overlap in memory.
        """
        recv = recvbuf if recvbuf.ndim == 1 else recvbuf.reshape(-1)
        if self.in_place:
            result = recv[:self.part] if self.collective == "reduce_scatter" else recvbuf
            return Call(self.collective, np, self.dtype, self.count, self.part, None, recv, result)
        send = sendbuf if sendbuf.ndim == 1 else sendbuf.reshape(-1)
        if np.may_share_memory(send, recv):
            check_overlap(np, send, recv)  # raises
        return Call(self.collective, np, self.dtype, self.count, self.part, send, recv, recvbuf)


def key(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: Any, algorithm: Any,
        check: bool | None, stream: Any, params: dict[str, Any]) -> tuple | None:
    """Return the facts a call's checks depend on, or None when the call is not covered.

    Parameters
    ----------
    collective, sendbuf, recvbuf, comm, op, algorithm, check, stream, params
        As passed to the public collective.

    Returns
    -------
    tuple or None
        Hashable; equal for calls whose checks and decisions are the same.
    """
    if stream is not None or type(recvbuf) is not _NDARRAY \
            or type(op) is not str or type(algorithm) is not str \
            or not (check is None or type(check) is bool):
        return None
    tuning = _params_key(params) if params else ()
    if tuning is None:
        return None
    if sendbuf is IN_PLACE or sendbuf is recvbuf:
        shape = dtype = flags = None
    elif type(sendbuf) is _NDARRAY:
        shape, dtype, flags = sendbuf.shape, sendbuf.dtype, sendbuf.flags.num
    else:
        return None
    get = _ENVIRON.get
    return (collective, id(comm), op, algorithm, check, shape, dtype, flags, recvbuf.shape,
            recvbuf.dtype, recvbuf.flags.num, auto.epoch(), get(_ALGO), get(_CHECK),
            get(_TUNING), get(_MIN), get(_MAX), tuning)


def _params_key(params: dict[str, Any]) -> tuple | None:
    """``(name, type, value)`` of every parameter, sorted; None if a value is not one of
    :data:`_SCALARS`."""
    out = []
    for name, value in sorted(params.items()):
        if type(value) not in _SCALARS:
            return None
        out.append((name, type(value), value))
    return tuple(out)


_prepared: dict[tuple, Prepared] = {}


def lookup(facts: tuple | None) -> Prepared | None:
    """Return the prepared call for ``facts`` if its transport can still run it.

    Parameters
    ----------
    facts : tuple or None
        From :func:`key`.

    Returns
    -------
    Prepared or None
        None on a miss, or when the transport was closed or failed since (the caller then
        checks the call in full, which says why).
    """
    if facts is None:
        return None
    found = _prepared.get(facts)
    if found is None or found.transport.guard.broken is not None:
        return None
    return found


def remember(facts: tuple | None, prepared: Prepared) -> None:
    """Keep ``prepared`` under ``facts`` (nothing when ``facts`` is None).

    Parameters
    ----------
    facts : tuple or None
        From :func:`key`, taken before the call was checked.
    prepared : Prepared
        What the check decided.
    """
    if facts is None or getattr(prepared.transport, "name", None) != "mpi":
        return
    _prepared[facts] = prepared
    if len(_prepared) > CALLS_KEPT:
        del _prepared[next(iter(_prepared))]


def release_calls() -> None:
    """Forget every prepared call (:func:`collectives.release`)."""
    _prepared.clear()
