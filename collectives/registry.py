"""The algorithms: one :class:`Algorithm` per module of :mod:`collectives.algorithms`.

An algorithm module builds one :class:`Algorithm` and registers it, last thing in the
module::

    ALGORITHM = register(Algorithm(
        name="ring", collectives=frozenset(COLLECTIVES), params={}, traffic=traffic,
        resolve=resolve_params, steps=rank_steps, lanes=rank_lanes, candidates=candidates,
        orders=rail_rings, ompi=ompi_ids({"allreduce": (4, "ring")}), nccl="ring"))

and its name goes into :data:`collectives.algorithms.MODULES` (the one line outside the
module; its place there is the algorithm's place in selection's tie-breaking order).
Everything else reads the registry (:func:`algorithm`, :func:`algorithms`):
:func:`collectives.build_schedule` (parameters, steps, lanes, phases), the simulator's
analytic model (:attr:`Algorithm.traffic`), selection (:attr:`Algorithm.candidates`,
:attr:`Algorithm.orders`), the exports (:attr:`Algorithm.ompi`, :attr:`Algorithm.nccl`)
and the command line (the names).

The functions an algorithm gives, with the arguments they are called with:

* ``resolve(collective, nranks, count, **params) -> dict``: its parameters with the
  defaults filled in and checked (ValueError naming the parameter, the value and what is
  allowed);
* ``steps(collective, rank, nranks, count, blocks, **resolved) -> sequence of Step``:
  rank ``rank``'s steps; ``blocks[r]`` is the element range rank ``r`` owns (its
  ReduceScatter output, its AllGather input); an AllReduce may cut the vector as it likes;
* ``lanes(...)`` (same arguments): the same operations as lanes
  (:mod:`collectives.rounds`), or ``step_rounds(collective, rank, nranks, **resolved)``:
  the round of each step, so that channels and phases can merge them;
* ``phases(collective, nranks, count, channels, **params)`` instead of the three above, for
  an algorithm composed of others (:mod:`collectives.compose`);
* ``traffic(collective, q, **resolved) -> list of Round (or Phase)``: its messages, for
  the analytic model (:mod:`collectives.traffic`);
* ``candidates(collective, channels, ranks_per_node) -> tuple of params``: what selection
  tries at ``channels`` channels (``ranks_per_node``: None, or the nodes' size when a
  hierarchical algorithm applies), each a sorted tuple of ``(name, value)``;
* ``orders(topology, channels) -> tuple of rank orders``: each channel's order on a
  machine (:mod:`topology.channels` has the shapes), with ``node_params(topology)``: the
  parameters the machine adds with them;
* ``pieces(collective, nranks, params) -> int``: into how many messages' worth one channel
  cuts the vector (the size from which selection reads the time off a line);
* ``ompi(collective, params) -> (id, name)``: Open MPI coll/tuned's algorithm id and name
  for it (``(0, "fixed decision")`` where Open MPI has none; :func:`ompi_ids` makes one
  from a table);
* ``working(collective, nranks, count, **resolved) -> int``: the elements of the working
  buffer where they are not ``count`` (AllToAll: what a rank sends and receives, and any
  scratch).

Besides them: ``collectives`` (those it serves: :func:`collectives.build_schedule`, the
analytic model and tuning files refuse the others, and tools and tests enumerate the
pairs with ``names(collective=...)``), ``params`` (its parameters' defaults),
``within_blocks`` (collectives whose operations each lie in one rank's block),
``empty_sends`` (False where an empty vector sends nothing at all), ``held_by``
(collectives whose ``traffic`` takes ``holders``, the rank whose block each position
holds), ``played_by`` (collectives whose ``traffic`` takes ``played``: the channels
whose every rank's messages are played, and ``unlike``: on a machine of unlike links)
and ``channeled`` (False where it runs on one channel over the ranks in their own
order).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from reprlib import repr as brief
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

__all__ = ["Algorithm", "Params", "register", "algorithm", "algorithms", "names",
           "ompi_ids", "one_candidate", "with_channels", "channel_orders", "FIXED_DECISION"]

#: tuning parameters as selection lists them: ``(name, value)`` pairs, sorted by name
Params = tuple[tuple[str, Any], ...]
#: Open MPI's "no algorithm": the range is left to its fixed decision
FIXED_DECISION: tuple[int, str] = (0, "fixed decision")


def _no_candidates(collective: str, channels: int,
                   ranks_per_node: int | None) -> tuple[Params, ...]:
    return ()


def one_candidate(collective: str, channels: int,
                  ranks_per_node: int | None) -> tuple[Params, ...]:
    """An :attr:`Algorithm.candidates` for an algorithm with nothing to tune that runs on
    one channel: its defaults at one channel, nothing at more.

    Examples
    --------
    >>> one_candidate("broadcast", 1, None), one_candidate("broadcast", 8, None)
    (((),), ())
    """
    return ((),) if channels == 1 else ()


def _blocks(collective: str, nranks: int, params: Mapping[str, Any]) -> int:
    return nranks


def _fixed_decision(collective: str, params: Mapping[str, Any]) -> tuple[int, str]:
    return FIXED_DECISION


def with_channels(channels: int, params: Params = ()) -> Params:
    """``params`` with ``("channels", channels)`` among them when ``channels > 1``, sorted
    (a candidate of one channel names none).

    Examples
    --------
    >>> with_channels(1, (("segments", 4),)), with_channels(8, (("segments", 4),))
    ((('segments', 4),), (('channels', 8), ('segments', 4)))
    """
    return tuple(sorted((*params, ("channels", channels)))) if channels > 1 else tuple(params)


def ompi_ids(table: Mapping[str, tuple[int, str]]) -> Callable[[str, Mapping[str, Any]],
                                                                tuple[int, str]]:
    """An :attr:`Algorithm.ompi` from a table: collective -> (Open MPI id, its name); a
    collective not in it is left to Open MPI's fixed decision.

    Parameters
    ----------
    table : mapping
        ``{collective: (coll/tuned algorithm id, Open MPI's name)}``.

    Returns
    -------
    callable
        ``(collective, params) -> (id, name)``.

    Examples
    --------
    >>> ompi_ids({"allgather": (4, "ring")})("allreduce", {})
    (0, 'fixed decision')
    """
    fixed = dict(table)

    def ompi(collective: str, params: Mapping[str, Any]) -> tuple[int, str]:
        return fixed.get(collective, FIXED_DECISION)
    return ompi


@dataclass(frozen=True, eq=False)
class Algorithm:
    """Everything about one algorithm (see the module docstring for the functions).

    Attributes
    ----------
    name : str
        As :func:`collectives.build_schedule` takes it.
    collectives : frozenset of str
        The collectives it serves.
    params : mapping
        Its tuning parameters with their defaults (None: chosen from the rank count and
        size); ``channels`` and (for a flat algorithm) ``order`` come on top.
    traffic : callable
        The messages the analytic model prices.
    resolve, steps, lanes, step_rounds, phases : callable or None
        Parameters filled in and checked, and how a rank's operations are made (a flat
        algorithm has ``resolve`` and ``steps``; ``phases`` makes a composed one).
    within_blocks : frozenset of str
        Collectives whose every operation lies in one rank's block and reads nothing but
        ``blocks`` (:mod:`collectives.compose` may then place the blocks anywhere).
    candidates : callable
        What selection tries.
    orders : callable or None
        Each channel's rank order on a machine (None: a composed algorithm, which takes
        no ``order``).
    node_params : callable or None
        Parameters the machine adds with the orders.
    pieces : callable
        Messages' worth one channel cuts the vector into.
    empty_sends : bool
        Whether an empty vector still sends its (empty) messages; False where it sends
        nothing at all.
    held_by : frozenset of str
        Collectives whose ``traffic`` takes ``holders``: per position the rank whose block
        it holds (a channel's order), which says where the larger of unequal blocks lie
        (else the first positions').
    played_by : frozenset of str
        Collectives whose ``traffic`` takes ``played``: the channels (at least 1) where
        the analytic model plays every rank's messages, where a finer description pays
        (the tree's AllGather: each message exactly, past the number of messages it
        otherwise allows), and ``unlike``: True on a machine of unlike links (DGX),
        where it pays at fewer descriptions.
    ompi : callable
        Open MPI's id and name.
    working : callable or None
        The working buffer's elements where they are not ``count``.
    channeled : bool
        Whether it takes ``channels`` above 1 and ``order`` (False: it runs on one
        channel over the ranks in their own order).
    nccl : str or None
        NCCL's name for the same algorithm, where NCCL runs it (its tuner file's ``algo``).
    """

    name: str
    collectives: frozenset[str]
    params: Mapping[str, Any]
    traffic: Callable[..., Sequence[Any]]
    resolve: Callable[..., dict[str, Any]] | None = None
    steps: Callable[..., Sequence[Any]] | None = None
    lanes: Callable[..., list[Any]] | None = None
    step_rounds: Callable[..., list[int]] | None = None
    phases: Callable[..., list[list[Any]]] | None = None
    within_blocks: frozenset[str] = frozenset()
    candidates: Callable[[str, int, int | None], tuple[Params, ...]] = _no_candidates
    orders: Callable[[Any, int], tuple[tuple[int, ...], ...]] | None = None
    node_params: Callable[[Any], dict[str, Any]] | None = None
    pieces: Callable[[str, int, Mapping[str, Any]], int] = _blocks
    empty_sends: bool = True
    held_by: frozenset[str] = frozenset()
    played_by: frozenset[str] = frozenset()
    ompi: Callable[[str, Mapping[str, Any]], tuple[int, str]] = _fixed_decision
    working: Callable[..., int] | None = None
    channeled: bool = True
    nccl: str | None = None
    defaults: Mapping[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if (self.phases is None) == (self.steps is None or self.resolve is None):
            raise ValueError(f"algorithm {self.name!r} must give steps= and resolve=, or "
                             f"phases=")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        generic = {"channels": 1} if self.composed or not self.channeled else \
            {"channels": 1, "order": None}
        object.__setattr__(self, "defaults", MappingProxyType({**self.params, **generic}))

    def __repr__(self) -> str:
        kind = "composed" if self.composed else "flat"
        return (f"Algorithm({self.name!r}, {kind}, serves {sorted(self.collectives)}, "
                f"params {sorted(self.params)})")

    @property
    def composed(self) -> bool:
        """Whether it is made of other algorithms' phases (it then takes no ``order``)."""
        return self.phases is not None

    def resolve_params(self, collective: str, nranks: int, count: int,
                       **params: Any) -> dict[str, Any]:
        """Its ``resolve``: the parameters filled in and checked (a composed algorithm's
        are passed on as given: its phases check them).

        Parameters
        ----------
        collective : str
            The collective.
        nranks, count : int
            Ranks and elements of the vector.
        **params
            The parameters given.

        Returns
        -------
        dict
        """
        if self.resolve is None:
            return dict(params)
        return self.resolve(collective, nranks, count, **params)

    def rank_steps(self, collective: str, rank: int, nranks: int, count: int,
                   blocks: Sequence[tuple[int, int]], **resolved: Any) -> Sequence[Any]:
        """Its ``steps`` for ``rank`` (the arguments of the module docstring).

        Returns
        -------
        sequence of Step

        Raises
        ------
        TypeError
            For a composed algorithm (it has phases, not steps).
        """
        if self.steps is None:
            raise TypeError(f"algorithm {self.name!r} is composed: it has phases, not steps")
        return self.steps(collective, rank, nranks, count, blocks, **resolved)

    def check_collective(self, collective: str) -> None:
        """Raise ValueError if this algorithm does not serve ``collective``.

        Parameters
        ----------
        collective : str
            A collective of :data:`collectives.COLLECTIVES`.
        """
        if collective not in self.collectives:
            raise ValueError(f"algorithm {self.name!r} does not run {collective}; it runs "
                             f"{sorted(self.collectives)}")


_REGISTRY: dict[str, Algorithm] = {}


def register(entry: Algorithm) -> Algorithm:
    """Record ``entry`` under its name and return it (a module's last statement).

    Parameters
    ----------
    entry : Algorithm
        The algorithm.

    Returns
    -------
    Algorithm
        ``entry``.

    Raises
    ------
    ValueError
        If another algorithm of that name is registered.
    """
    known = _REGISTRY.get(entry.name)
    if known is not None and known is not entry:
        raise ValueError(f"algorithm {entry.name!r} is registered twice")
    _REGISTRY[entry.name] = entry
    return entry


_LOADED: dict[str, Algorithm] = {}


def _loaded() -> dict[str, Algorithm]:
    """The registry with every module of :data:`collectives.algorithms.MODULES` imported,
    in that order (imported once)."""
    if not _LOADED:
        from .algorithms import MODULES

        for module in MODULES:
            importlib.import_module(f"{__package__}.algorithms.{module}")
        _LOADED.update((name, _REGISTRY[name]) for name in MODULES)
    return _LOADED


def algorithms(composed: bool | None = None, collective: str | None = None
               ) -> tuple[Algorithm, ...]:
    """Every registered algorithm, in the order of :data:`collectives.algorithms.MODULES`.

    Parameters
    ----------
    composed : bool or None, optional
        Only the flat ones (False) or only the composed ones (True); None: all.
    collective : str or None, optional
        Only those that serve it.

    Returns
    -------
    tuple of Algorithm
    """
    return tuple(a for a in _loaded().values()
                 if (composed is None or a.composed == composed)
                 and (collective is None or collective in a.collectives))


def names(composed: bool | None = None, collective: str | None = None) -> tuple[str, ...]:
    """The names of :func:`algorithms` (same parameters).

    Examples
    --------
    >>> names(composed=False)[:2]
    ('ring', 'rhd')
    """
    return tuple(a.name for a in algorithms(composed, collective))


def algorithm(name: str) -> Algorithm:
    """The registered algorithm ``name``.

    Parameters
    ----------
    name : str
        Its name.

    Returns
    -------
    Algorithm

    Raises
    ------
    ValueError
        If no algorithm of that name is registered, naming those that are.

    Examples
    --------
    >>> algorithm("ring").name
    'ring'
    """
    found = _loaded().get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"algorithm {brief(name)} is not supported; choose one of "
                         f"{list(_loaded())}")
    return found


def channel_orders(topology: Any, channels: int, name: str) -> tuple[tuple[int, ...], ...]:
    """Each channel's rank order for algorithm ``name`` on a machine (its ``orders``).

    Pass the result as ``order=`` with ``channels=len(orders)`` to
    :func:`collectives.build_schedule`.

    Parameters
    ----------
    topology : Topology
        The machine.
    channels : int
        Number of channels, at least 1.
    name : str
        A flat algorithm.

    Returns
    -------
    tuple of tuple of int
        ``channels`` permutations of the ranks.

    Raises
    ------
    ValueError
        For an unknown or composed algorithm, or ``channels`` not an integer >= 1.
    TypeError
        If ``topology`` is not a Topology.

    Examples
    --------
    >>> import topology
    >>> channel_orders(topology.dgx_h100(2), 8, "ring")[0]
    (0, 2, 3, 4, 5, 6, 7, 1, 9, 10, 11, 12, 13, 14, 15, 8)
    """
    entry = algorithm(name)
    if entry.orders is None:
        raise ValueError(f"algorithm={name!r} is not allowed; it takes no rank order; choose "
                         f"one of {list(names(composed=False))}")
    return entry.orders(topology, channels)
