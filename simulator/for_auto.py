"""The simulator's predictions for ``collectives`` ``auto``, installed on request.

``collectives`` never imports the simulator: :func:`use_for_auto` installs a predictor into
:mod:`collectives.auto` that selects with :func:`simulator.select` on a topology, and
:func:`tuning_rules` turns tuning tables into the rules of a tuning file
(``collsim select --tuning-out``) that ``auto`` reads without the simulator.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import topology
from collectives import auto
from collectives.tuning import Rule

from . import nccl_algorithms
from .channel_choice import schedule_params
from .selection import TuningTable, select

__all__ = ["use_for_auto", "machine", "tuning_rules"]

_given: Any = None


@lru_cache(maxsize=8)
def _load(path: str) -> Any:
    return topology.load(path)


def machine(nranks: int) -> topology.Topology:
    """The topology the installed predictor selects on for ``nranks`` ranks.

    The one given to :func:`use_for_auto`, else the file in ``COLLSIM_TOPOLOGY``, else
    :func:`topology.default_flat` of ``nranks`` ranks.

    Raises
    ------
    ValueError
        When the topology places fewer than ``nranks`` ranks.
    """
    found = _given
    path = os.environ.get(auto.TOPOLOGY_ENV, "").strip()
    if found is None and path:
        found = _load(path)
    if found is None:
        return topology.default_flat(nranks)
    if found.nranks < nranks:
        raise ValueError(f"topology {found.name!r} places {found.nranks} ranks but the "
                         f"communicator has nranks={nranks}; give a topology with at least "
                         f"{nranks} (set {auto.TOPOLOGY_ENV} or call use_for_auto)")
    return found


def _predict(collective: str, nbytes: int, nranks: int,
             dtype_size: int) -> tuple[str, dict[str, Any]]:
    """The selected algorithm with the parameters of the schedule it was simulated as: the
    channels' rank orders and the tree's ``ranks_per_node`` on the machine, so that the
    run is the schedule predicted."""
    found = machine(nranks)
    choice = select(collective, nbytes, found, nranks, dtype_size)
    return choice.algorithm, schedule_params(choice.algorithm, choice.params, found, nranks)


def use_for_auto(topology_: topology.Topology | str | os.PathLike[str] | None = None) -> None:
    """Install the simulator's selection as ``auto``'s predictor.

    Parameters
    ----------
    topology_ : Topology, str, Path or None
        The machine: a :class:`topology.Topology`, a topology file, or None for
        ``COLLSIM_TOPOLOGY`` or the default host (:func:`machine`).

    Raises
    ------
    TypeError
        If ``topology_`` is none of these.

    Examples
    --------
    >>> import collectives.auto, topology
    >>> use_for_auto(topology.dgx_h100())
    >>> collectives.auto.choose("allreduce", 1 << 28, 6)[0]
    'ring'
    >>> collectives.auto.use_predictor(None)
    """
    global _given
    if topology_ is not None and not isinstance(topology_, (str, Path)) \
            and not hasattr(topology_, "placement"):
        raise TypeError(f"topology_={type(topology_).__name__} is not allowed; pass a "
                        "topology.Topology, a topology file path, or None")
    _given = _load(str(topology_)) if isinstance(topology_, (str, Path)) else topology_
    auto.use_predictor(_predict)


def tuning_rules(tables: Iterable[TuningTable], dtype_size: int = 0) -> list[Rule]:
    """The rules of a tuning file from tuning tables: one per range of each table.

    Parameters
    ----------
    tables : iterable of TuningTable
        Tables of one or more collectives and rank counts.
    dtype_size : int, optional
        Element size the rules hold for (0, the default: every size).

    Returns
    -------
    list of Rule
        A range choosing one of NCCL's own algorithms (:mod:`simulator.nccl_algorithms`),
        which no schedule runs, chooses ``native`` (NCCL's own call).
    """
    return [Rule(t.collective, t.nranks, dtype_size, r.min_bytes, r.max_bytes,
                 *_runnable(*t.candidates[r.index])) for t in tables for r in t.ranges]


def _runnable(algorithm: str, params: Any) -> tuple[str, Any]:
    """A candidate as ``auto`` runs it: NCCL's own algorithms by ``native``."""
    return ("native", ()) if algorithm in nccl_algorithms.ALGORITHMS else (algorithm, params)
