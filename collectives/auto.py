"""``auto``: the algorithm a collective runs when the caller does not name one.

:func:`choose` answers from the first of these that covers the call:

1. a tuning table (:class:`collectives.tuning.Tuning`): the one given to
   :func:`use_tuning`, else the file named by ``COLLSIM_TUNING`` (written by
   ``collsim tune``, measured on the machine, or ``collsim select --tuning-out``,
   predicted by the simulator); it may name ``native``;
2. a predictor installed in this process with :func:`use_predictor`, e.g. by
   :func:`simulator.use_for_auto`, which selects on a topology (``COLLSIM_TOPOLOGY`` or
   one given) with the simulator; this package never imports the simulator itself;
3. the static rule (:func:`static_choice`).

Broadcast, Reduce and AllToAll, which no table or predictor covers, take MPICH's defaults
at once (:func:`mpich_choice`).

A decision is cached per (collective, bytes, ranks, element size) in
:attr:`~collectives.executors.runtime.Runtime.decisions`, so a repeated call costs a
dictionary lookup; installing a table or a predictor, or naming another file in
``COLLSIM_TUNING``, forgets the decisions and the calls checked under them
(:meth:`~collectives.executors.runtime.Runtime.forget_decisions`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable

from .executors.runtime import RUNTIME
from .tuning import Tuning, load_tuning

__all__ = ["TUNING_ENV", "TOPOLOGY_ENV", "STATIC_DOUBLING_UPTO", "STATIC_FOLD_UPTO",
           "MPICH_DEFAULTS", "MPICH_ALLTOALL", "Predictor", "use_tuning",
           "use_predictor", "static_choice", "choose", "source"]

#: environment variable naming a tuning file for ``auto``
TUNING_ENV = "COLLSIM_TUNING"

#: environment variable naming a topology file the simulator's predictor selects on
TOPOLOGY_ENV = "COLLSIM_TOPOLOGY"

#: a predictor: ``(collective, nbytes, nranks, dtype_size) -> (algorithm, params)``
Predictor = Callable[[str, int, int, int], tuple[str, dict[str, Any]]]

#: static rule: an AllReduce of at most this many bytes runs recursive doubling (rhd
#: ``doubling=True``: ``lg p`` exchanges of the whole vector) on 2 ranks and from 4 on.  On
#: the host model the rule's choice stays within 10% of the best at 4-64 ranks (doubling
#: wins up to 14-27 KiB there, from 64 to 4 ranks); on 3 ranks the ring's four steps
#: catch up with the fold's three well before (about 6 KiB), so 3 ranks keep the ring
STATIC_DOUBLING_UPTO = 16 << 10

#: static rule: on a count of ranks that is not a power of two, recursive halving-doubling
#: while ``nbytes <= STATIC_FOLD_UPTO[collective] * nranks * log2(nranks)``, the ring beyond
#: (rhd's fold of the ranks beyond a power of two sends whole vectors, so the ring's
#: ``2 (p - 1)`` steps catch up as the buffer grows); on a power of two, rhd at every size.
#: Read off the simulator's tuning tables on the host model :func:`topology.default_flat`
#: (one port per rank, alpha 3 us, 5 GB/s, 0.1 ns/B reduction): the ring and rhd cross
#: there at 30-550 KiB on 6-48 ranks (ReduceScatter at about half), and the rule's choice
#: is within 10% of the best at 4-64 ranks from 256 B to 256 MiB (``tests/test_auto.py``
#: holds it there).  On one port the tree never wins: a parent sends to two children
#: through it
STATIC_FOLD_UPTO = {"allreduce": 2048, "allgather": 1536, "reduce_scatter": 1024}

#: below this many ranks the static rule runs the ring (2 ranks: recursive doubling on
#: small AllReduces, see :data:`STATIC_DOUBLING_UPTO`)
_STATIC_RING_BELOW = 4

_tuning: Tuning | None = None
_tuning_path: str | None = None
_predictor: Predictor | None = None
#: ``RUNTIME.decisions`` (one look-up less per call)
_decisions = RUNTIME.decisions


#: ``auto``'s choice for Broadcast and Reduce, as MPICH's defaults (src/mpi/coll/mpir_coll.c
#: and the cvars of src/mpi/coll/{bcast,reduce,alltoall}): collective -> (bytes below
#: which, fewest ranks from which, the algorithm for small messages, the one otherwise).
#: Broadcast: binomial below MPIR_CVAR_BCAST_SHORT_MSG_SIZE = 12288 bytes or under
#: MPIR_CVAR_BCAST_MIN_PROCS = 8 ranks, else scatter + ring allgather; Reduce: binomial
#: below MPIR_CVAR_REDUCE_SHORT_MSG_SIZE = 2048 bytes, else reduce-scatter + gather.
#: AllToAll (:data:`MPICH_ALLTOALL`) is chosen on a block's bytes
MPICH_DEFAULTS: dict[str, tuple[int, int, str, str]] = {
    "broadcast": (12288, 8, "binomial", "scatter_allgather"),
    "reduce": (2048, 1, "binomial", "rabenseifner"),
}
#: AllToAll as MPICH: Bruck below MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE = 256 bytes a block
#: with at least 8 ranks, all posted at once below MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE =
#: 32768, pairwise above: (short, medium, fewest ranks for Bruck)
MPICH_ALLTOALL = (256, 32768, 8)


def use_tuning(table: Tuning | str | Path | None) -> None:
    """Make ``auto`` read ``table`` first.

    Parameters
    ----------
    table : Tuning, str, Path or None
        A table, a tuning file (read now), or None to go back to ``COLLSIM_TUNING``.

    Raises
    ------
    TypeError
        If ``table`` is none of these.
    ValueError
        If the file is not a tuning file.
    """
    global _tuning
    if table is not None and not isinstance(table, (Tuning, str, Path)):
        raise TypeError(f"table={type(table).__name__} is not allowed; pass a "
                        "collectives.tuning.Tuning, a tuning file path, or None")
    _tuning = load_tuning(table) if isinstance(table, (str, Path)) else table
    RUNTIME.forget_decisions()


def use_predictor(predictor: Predictor | None) -> None:
    """Make ``auto`` ask ``predictor`` where no tuning table covers a call.

    Parameters
    ----------
    predictor : callable or None
        ``predictor(collective, nbytes, nranks, dtype_size) -> (algorithm, params)``, or
        None to remove it.

    Raises
    ------
    TypeError
        If ``predictor`` is not callable.
    """
    global _predictor
    if predictor is not None and not callable(predictor):
        raise TypeError(f"predictor={type(predictor).__name__} is not allowed; pass a "
                        "callable or None")
    _predictor = predictor
    RUNTIME.forget_decisions()


def _table() -> Tuning | None:
    global _tuning_path, _tuning
    if _tuning is not None and _tuning_path is None:
        return _tuning
    path = os.environ.get(TUNING_ENV, "").strip() or None
    if path != _tuning_path:
        _tuning_path, _tuning = path, (load_tuning(path) if path else None)
        RUNTIME.forget_decisions()
    return _tuning


def static_choice(collective: str, nbytes: int, nranks: int) -> tuple[str, dict[str, Any]]:
    """The static rule: recursive doubling for small AllReduces (except on 3 ranks), else
    rhd from 4 ranks on (on a count that is not a power of two, up to
    :data:`STATIC_FOLD_UPTO`), else the ring; an AllGather off powers of two takes
    Bruck's (MPICH's default there for short messages; on the single-port host model it
    sends what the ring sends in ``ceil(lg p)`` steps, so it is best at every size).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    nbytes : int
        Bytes of the working buffer.
    nranks : int
        Ranks.

    Returns
    -------
    (str, dict)
        The algorithm and its parameters.

    Examples
    --------
    >>> static_choice("allreduce", 1024, 8), static_choice("allreduce", 1 << 28, 6)
    (('rhd', {'doubling': True}), ('ring', {}))
    >>> static_choice("allgather", 1024, 8), static_choice("allreduce", 64 << 10, 8)
    (('rhd', {}), ('rhd', {}))
    >>> static_choice("allgather", 1024, 6), static_choice("allgather", 64 << 10, 6)
    (('bruck', {}), ('bruck', {}))
    """
    if (collective == "allreduce" and nbytes <= STATIC_DOUBLING_UPTO
            and (nranks == 2 or nranks >= _STATIC_RING_BELOW)):
        return "rhd", {"doubling": True}
    if collective == "allgather" and nranks >= _STATIC_RING_BELOW and nranks & (nranks - 1):
        return "bruck", {}
    if nranks < _STATIC_RING_BELOW or (
            nranks & (nranks - 1)
            and nbytes > STATIC_FOLD_UPTO.get(collective, 0) * nranks * math.log2(nranks)):
        return "ring", {}
    return "rhd", {}


def mpich_choice(collective: str, nbytes: int, nranks: int) -> str:
    """``auto``'s algorithm for a Broadcast or Reduce of ``nbytes``, or an AllToAll of
    ``nbytes`` a block, as MPICH's defaults (:data:`MPICH_DEFAULTS`,
    :data:`MPICH_ALLTOALL`).

    Examples
    --------
    >>> mpich_choice("broadcast", 1 << 20, 8), mpich_choice("alltoall", 64, 8)
    ('scatter_allgather', 'bruck_alltoall')
    """
    if collective == "alltoall":
        short, medium, few = MPICH_ALLTOALL
        if nbytes < short and nranks >= few:
            return "bruck_alltoall"
        return "linear" if nbytes < medium else "pairwise"
    short, few, small, large = MPICH_DEFAULTS[collective]
    return small if nbytes < short or nranks < few else large


def source(nranks: int) -> str:
    """Say in a few words where ``auto`` takes its decisions from for ``nranks`` ranks."""
    table = _table()
    if table is not None:
        return f"tuning table ({table.source or 'no source given'})"
    if _predictor is not None:
        return f"predictor {getattr(_predictor, '__qualname__', type(_predictor).__name__)}"
    return "static rule (collectives.auto.static_choice)"


def choose(collective: str, nbytes: int, nranks: int,
           dtype_size: int = 4) -> tuple[str, dict[str, Any]]:
    """Return the algorithm ``auto`` runs for ``collective`` on ``nbytes`` over ``nranks``,
    with its tuning parameters.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"}
        The collective.
    nbytes : int
        Bytes of the working buffer (the AllReduce vector, the ReduceScatter input, the
        AllGather output, the Broadcast or Reduce vector, an AllToAll's block).
    nranks : int
        Number of ranks.
    dtype_size : int, optional
        Bytes per element (default 4).

    Returns
    -------
    algorithm : str
        One of :data:`collectives.ALGORITHMS` or ``native``.
    params : dict
        Its tuning parameters, to pass to :func:`collectives.build_schedule`.

    Raises
    ------
    RuntimeError
        When ``COLLSIM_TOPOLOGY`` is set but no predictor is installed to read it.

    Examples
    --------
    >>> choose("allreduce", 1024, 8)[0], choose("allreduce", 1 << 28, 6)[0]
    ('rhd', 'ring')
    """
    key = (collective, nbytes, nranks, dtype_size)
    given = _tuning is not None and _tuning_path is None  # use_tuning's table: no variable
    if not given and _tuning_path != (os.environ.get(TUNING_ENV, "").strip() or None):
        _table()
    found = _decisions.get(key)
    if found is None:
        found = _decisions[key] = _decide(collective, nbytes, nranks, dtype_size)
    return found[0], dict(found[1])


def _decide(collective: str, nbytes: int, nranks: int,
            dtype_size: int) -> tuple[str, tuple[tuple[str, Any], ...]]:
    if collective in MPICH_DEFAULTS or collective == "alltoall":
        return mpich_choice(collective, nbytes, nranks), ()
    if nranks == 1:
        return "ring", ()
    table = _table()
    answer = table.lookup(collective, nranks, dtype_size, nbytes) if table else None
    if answer is None and _predictor is not None:
        answer = _predictor(collective, nbytes, nranks, dtype_size)
    if answer is None and os.environ.get(TOPOLOGY_ENV, "").strip():
        raise RuntimeError(
            f"{TOPOLOGY_ENV}={os.environ[TOPOLOGY_ENV].strip()!r} needs the simulator to "
            "select on it: call simulator.use_for_auto() first, or write a table with "
            f"`collsim select -t FILE --tuning-out T.json` and set {TUNING_ENV}=T.json")
    if answer is None:
        answer = static_choice(collective, nbytes, nranks)
    return answer[0], tuple(sorted(answer[1].items()))
