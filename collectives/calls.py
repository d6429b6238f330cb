"""Checked calls remembered, so that a repeated collective skips what it already checked.

A call's checks and decisions (the buffers' types, dtypes, sizes and flags, the op, the
algorithm ``auto`` or ``COLLSIM_ALGO`` resolves to, the plan) depend only on a few cheap
facts: the collective, the communicator, the op and algorithm named, ``check``, each
buffer's shape, dtype and flags, the variables the call path reads from the environment
and :func:`collectives.auto.epoch`, and the tuning parameters.  :func:`key` gathers them
into one tuple (None for a call it does not cover: CuPy buffers, a stream, a parameter
that is not a bool, int, str or None, such as ``order``, ``recvbuf=None``, an
``mpi4py.MPI.Op``); the public functions keep a :class:`Repeat` per key, bound to what it
runs (MPI's collective, or the plan with its signed tags).  What depends
on where the buffers are (their overlap) is checked on every call.

The environment is read through ``os.environ``'s own dictionary of encoded names and
values, one lookup per variable, so that a variable set or removed between calls (as tests
do) changes the key at a fraction of the cost of ``os.environ.get``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from . import auto
from .executors.buffers import IN_PLACE, check_overlap, lay_input, take_block
from .executors.check import agree
from .executors.guard import signed_plan

__all__ = ["WATCHED_ENV", "CALLS_KEPT", "Prepared", "Repeat", "key", "lookup", "remember",
           "release_calls"]

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
#: ``np.may_share_memory`` without its ``__array_function__`` dispatch (half its cost), which
#: changes nothing for the exact ``numpy.ndarray`` buffers :func:`key` covers
_may_share_memory = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


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


class Repeat:
    """A remembered call bound to what it runs: :meth:`run` replays it on new buffers.

    What every call still checks is where the buffers are (their overlap), and, with
    ``check`` on, the agreement across ranks; the rest was decided once, in ``prepared``:
    ``native`` calls MPI's collective (after its hellos when signed) through
    :meth:`~.executors.mpi.MpiTransport.native_host`, a schedule lays the input into its
    working buffer, walks the plan with its signed tags
    (:meth:`~.executors.mpi.MpiTransport.run_host`) and takes the output.

    Parameters
    ----------
    prepared : Prepared
        What the full check decided, for an MPI transport's call on NumPy buffers.

    Attributes
    ----------
    prepared : Prepared
        As given (it keeps the communicator, whose ``id`` is in the key, alive).
    guard : Guard
        The transport's guard: :func:`lookup` gives up the repeat once it broke.
    """

    __slots__ = ("prepared", "guard", "_in_place", "_cut", "_agree", "_native", "_plan",
                 "_signed", "_op", "_scatter", "_run_host")

    def __init__(self, prepared: Prepared) -> None:
        transport, plan = prepared.transport, prepared.plan
        self.prepared, self.guard, self._plan = prepared, transport.guard, plan
        self._in_place, self._op = prepared.in_place, prepared.op
        self._scatter = prepared.collective == "reduce_scatter"
        #: the result is recvbuf's first block (an in-place ReduceScatter), else recvbuf
        self._cut = prepared.part if prepared.in_place and self._scatter else None
        self._agree = None if prepared.signature is None else partial(
            agree, prepared.signature, transport.allgather_object)
        if plan is None:
            self._native = transport.native_host(prepared.collective, prepared.count,
                                                 prepared.dtype, prepared.op, prepared.signed)
        else:
            self._signed = signed_plan(plan, prepared.op, transport.guard.codec)
            self._run_host = transport.run_host

    def run(self, sendbuf: Any, recvbuf: Any) -> Any:
        """Run the call on buffers of the kind :func:`key` described.

        Parameters
        ----------
        sendbuf, recvbuf : numpy.ndarray
            As passed to the public collective (``sendbuf`` unused in place).

        Returns
        -------
        numpy.ndarray
            What the public collective returns.

        Raises
        ------
        ValueError
            If the buffers overlap in memory.
        ArgumentMismatchError, CommunicatorBrokenError
            As the public collective.
        """
        recv = recvbuf if recvbuf.ndim == 1 else recvbuf.reshape(-1)
        send = None
        if not self._in_place:
            send = sendbuf if sendbuf.ndim == 1 else sendbuf.reshape(-1)
            if _may_share_memory(send, recv):
                check_overlap(np, send, recv)  # raises
        if self._agree is not None:
            self._agree()
        if self._plan is None:
            self._native(send, recv)
        else:
            self._walk(send, recv)
        return recvbuf if self._cut is None else recv[:self._cut]

    def _walk(self, send: Any, recv: Any) -> None:
        """Lay the input into the working buffer, walk the plan, take the output."""
        plan, prepared = self._plan, self.prepared
        work = lay_input(np, prepared.collective, prepared.dtype, prepared.count, send, recv,
                         plan.input)
        self._run_host(plan, self._signed, self._op, work, send)
        if self._scatter:
            take_block(recv, work, plan.output, self.prepared.part)


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


_repeats: dict[tuple, Repeat] = {}


def lookup(facts: tuple | None) -> Repeat | None:
    """Return the remembered call for ``facts`` if its transport can still run it.

    Parameters
    ----------
    facts : tuple or None
        From :func:`key`.

    Returns
    -------
    Repeat or None
        None on a miss, or when the transport was closed or failed since (the caller then
        checks the call in full, which says why).
    """
    if facts is None:
        return None
    found = _repeats.get(facts)
    if found is None or found.guard.broken is not None:
        return None
    return found


def remember(facts: tuple | None, prepared: Prepared) -> None:
    """Keep ``prepared``, bound to what it runs, under ``facts`` (nothing when ``facts`` is
    None or the transport is not MPI's).

    Parameters
    ----------
    facts : tuple or None
        From :func:`key`, taken before the call was checked.
    prepared : Prepared
        What the check decided.
    """
    if facts is None or getattr(prepared.transport, "name", None) != "mpi":
        return
    _repeats[facts] = Repeat(prepared)
    if len(_repeats) > CALLS_KEPT:
        del _repeats[next(iter(_repeats))]


def release_calls() -> None:
    """Forget every remembered call (:func:`collectives.release`)."""
    _repeats.clear()
