"""``auto``: the algorithm a collective runs when the caller does not name one.

:func:`choose` asks the selection API (:func:`simulator.select`) for the predicted best
algorithm on the communicator's machine, described by a topology:

1. the one given to :func:`use_topology` (a :class:`topology.Topology` or a file path);
2. else the topology file named by the environment variable ``COLLSIM_TOPOLOGY``
   (e.g. written by ``collsim calibrate``);
3. else the default: :func:`topology.flat` with :data:`DEFAULT_ALPHA_S`,
   :data:`DEFAULT_BETA_S_PER_BYTE` and :data:`DEFAULT_GAMMA_S_PER_BYTE`.

The first call for a collective and rank count builds the tuning table (a fraction of a
second to a few seconds); later calls look it up in microseconds.  ``auto`` takes no
tuning parameters, so the executor runs the chosen algorithm with its default segments.
The simulator is imported on the first call only.
"""

from __future__ import annotations

import dataclasses
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["TOPOLOGY_ENV", "DEFAULT_ALPHA_S", "DEFAULT_BETA_S_PER_BYTE",
           "DEFAULT_GAMMA_S_PER_BYTE", "use_topology", "machine", "choose"]

#: environment variable naming a topology file for ``auto``
TOPOLOGY_ENV = "COLLSIM_TOPOLOGY"

#: default model: MPI ranks sharing one host's memory (source: ``collsim calibrate -n 4``
#: on this project's 2-core x86 VM, pip Open MPI 5 wheel, NumPy: alpha 1-6 us per pair,
#: 4.5-13 GB/s per pair; ``a += b`` 0.02 ns/B in cache, so 0.1 ns/B is taken for vectors
#: beyond it; rounded)
DEFAULT_ALPHA_S = 3e-6
DEFAULT_BETA_S_PER_BYTE = 2e-10
DEFAULT_GAMMA_S_PER_BYTE = 1e-10

_chosen: Any = None


def use_topology(machine: Any) -> None:
    """Make ``auto`` select on ``machine``.

    Parameters
    ----------
    machine : Topology, str, Path or None
        A :class:`topology.Topology`, a topology file path (loaded now), or None to go
        back to ``COLLSIM_TOPOLOGY`` or the default.

    Raises
    ------
    TypeError
        If ``machine`` is none of these.
    topology.TopologyError
        If the file cannot be parsed.
    """
    global _chosen
    if machine is not None and not isinstance(machine, (str, Path)) \
            and not hasattr(machine, "placement"):
        raise TypeError(f"machine={machine!r} is not allowed; pass a topology.Topology, a "
                        "topology file path, or None")
    _chosen = _load(str(machine)) if isinstance(machine, (str, Path)) else machine


@lru_cache(maxsize=8)
def _load(path: str) -> Any:
    import topology

    return topology.load(path)


@lru_cache(maxsize=8)
def _default(nranks: int) -> Any:
    import topology

    flat = topology.flat(nranks, DEFAULT_ALPHA_S, DEFAULT_BETA_S_PER_BYTE)
    return dataclasses.replace(flat, name=f"default flat({nranks})",
                               gamma_s_per_byte=DEFAULT_GAMMA_S_PER_BYTE)


def machine(nranks: int) -> Any:
    """The topology ``auto`` selects on for ``nranks`` ranks (see the module docstring).

    Parameters
    ----------
    nranks : int
        Ranks of the communicator.

    Returns
    -------
    Topology
        The one given to :func:`use_topology`, else the file in ``COLLSIM_TOPOLOGY``,
        else a default flat model of ``nranks`` ranks.

    Raises
    ------
    ValueError
        When the given topology places fewer than ``nranks`` ranks.
    """
    found = _chosen
    if found is None and os.environ.get(TOPOLOGY_ENV, "").strip():
        found = _load(os.environ[TOPOLOGY_ENV].strip())
    if found is None:
        return _default(nranks)
    if found.nranks < nranks:
        raise ValueError(f"topology {found.name!r} places {found.nranks} ranks but the "
                         f"communicator has nranks={nranks}; give a topology with at least "
                         f"{nranks} (set {TOPOLOGY_ENV} or call use_topology)")
    return found


def choose(collective: str, nbytes: int, nranks: int,
           dtype_size: int = 4) -> tuple[str, dict[str, Any]]:
    """Return the algorithm ``auto`` runs for ``collective`` on ``nbytes`` over ``nranks``,
    with the tuning parameters (e.g. ``segments``) the selection chose for it.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    nbytes : int
        Bytes of the working buffer (the AllReduce vector, the ReduceScatter input, the
        AllGather output).
    nranks : int
        Number of ranks.
    dtype_size : int, optional
        Bytes per element (default 4).

    Returns
    -------
    algorithm : str
        One of :data:`collectives.ALGORITHMS`.
    params : dict
        Its tuning parameters, to pass to :func:`collectives.build_schedule`.

    Examples
    --------
    >>> choose("allreduce", 1024, 8)[0], choose("allreduce", 1 << 28, 6)[0]
    ('rhd', 'tree')
    """
    if nranks == 1:
        return "ring", {}
    from simulator.selection import select

    choice = select(collective, nbytes, machine(nranks), nranks, dtype_size)
    return choice.algorithm, dict(choice.params)
