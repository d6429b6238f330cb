"""The schedule: a collective algorithm as plain, immutable data.

A :class:`Schedule` says, for every rank, an ordered tuple of :class:`Step`; each
step holds operations that are posted together and completed together:

* :class:`Send` an element range of the rank's working buffer to a peer;
* :class:`Recv` an element range from a peer, copying it into place or reducing it
  into place (``reduce=True``);
* :class:`Copy` a range locally inside the working buffer.

The k-th send from rank ``a`` to rank ``b`` matches the k-th receive at ``b`` from
``a`` (MPI's non-overtaking rule); nothing else couples ranks.  Within a step, all
operations see the buffer as it was when the step was posted, and receives and copies
write when it completes.

The working buffer of every rank holds ``count`` elements: the AllReduce vector, the
ReduceScatter input or the AllGather output (see :mod:`collectives.layout`).

Steps are generated per rank, lazily, and cached: a rank of a 1024-rank job that only
runs its own part never builds the other 1023 ranks' steps.  Operations are slotted
frozen dataclasses, so a schedule stays plain data (JSON round trip, ``==``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, Union

__all__ = ["Send", "Recv", "Copy", "Op", "Step", "Schedule", "COLLECTIVES"]

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")


@dataclass(frozen=True, slots=True)
class Send:
    """Send elements ``[start, stop)`` of the working buffer to rank ``peer``."""

    peer: int
    start: int
    stop: int

    def __str__(self) -> str:
        return f"send [{self.start}:{self.stop}) -> {self.peer}"


@dataclass(frozen=True, slots=True)
class Recv:
    """Receive elements ``[start, stop)`` from rank ``peer``; reduce them in if ``reduce``."""

    peer: int
    start: int
    stop: int
    reduce: bool = False

    def __str__(self) -> str:
        verb = "reduce" if self.reduce else "recv"
        return f"{verb} [{self.start}:{self.stop}) <- {self.peer}"


@dataclass(frozen=True, slots=True)
class Copy:
    """Copy elements ``[start, stop)`` to ``[dst, dst + stop - start)`` locally."""

    start: int
    stop: int
    dst: int

    def __str__(self) -> str:
        return f"copy [{self.start}:{self.stop}) -> [{self.dst}:{self.dst + self.stop - self.start})"


Op = Union[Send, Recv, Copy]
_OP_TYPES: dict[str, type] = {"send": Send, "recv": Recv, "copy": Copy}
_OP_NAMES: dict[type, str] = {cls: name for name, cls in _OP_TYPES.items()}


@dataclass(frozen=True, slots=True)
class Step:
    """Operations posted together and completed together."""

    ops: tuple[Op, ...]

    def __str__(self) -> str:
        return "; ".join(str(op) for op in self.ops) or "(nothing)"


RankSteps = tuple[Step, ...]


@dataclass(frozen=True, eq=False)
class Schedule:
    """A collective algorithm for ``nranks`` ranks on a vector of ``count`` elements.

    Parameters
    ----------
    collective : str
        ``"allreduce"``, ``"reduce_scatter"`` or ``"allgather"``.
    algorithm : str
        Name of the algorithm that generated the steps.
    nranks : int
        Number of ranks, at least 1.
    count : int
        Elements in the full vector, at least 0.
    params : tuple of (str, value) pairs
        The algorithm's tuning parameters, sorted by name.
    generate : callable
        ``generate(rank) -> tuple[Step, ...]``; called at most once per rank.
    lanes : callable or None, optional
        ``lanes(rank) -> list[Lane]``: the rank's operations as
        :class:`~collectives.rounds.Lane` s, for algorithms that make them (``generate``
        then merges them with :func:`~collectives.rounds.merge_lanes`).  A consumer that
        reads millions of operations as arrays uses them to skip building the
        operations; None when the steps are only available as steps.
    """

    collective: str
    algorithm: str
    nranks: int
    count: int
    params: tuple[tuple[str, Any], ...]
    generate: Callable[[int], RankSteps] = field(repr=False)
    lanes: Callable[[int], Sequence[Any]] | None = field(default=None, repr=False)
    _cache: dict[int, RankSteps] = field(default_factory=dict, repr=False)

    @classmethod
    def from_steps(cls, collective: str, algorithm: str, count: int,
                   ranks: list[list[Step]] | tuple[RankSteps, ...],
                   params: dict[str, Any] | None = None) -> "Schedule":
        """Build a schedule from explicit per-rank steps (hand-made or loaded).

        Parameters
        ----------
        collective : str
            The collective.
        algorithm : str
            The algorithm's name.
        count : int
            Elements of the working buffer.
        ranks : list of list of Step or tuple of RankSteps
            ``ranks[r]``: the steps of rank ``r``; the number of ranks is ``len(ranks)``.
        params : dict[str, Any] or None, optional
            The tuning parameters recorded with the schedule.

        Returns
        -------
        Schedule
            The schedule (not checked; see :func:`collectives.verify`).
        """
        frozen = tuple(tuple(steps) for steps in ranks)
        return cls(collective, algorithm, len(frozen), count,
                   tuple(sorted((params or {}).items())), frozen.__getitem__)

    def steps(self, rank: int) -> RankSteps:
        """Return the steps of ``rank``, generating them on first use.

        Parameters
        ----------
        rank : int
            A rank in ``0..nranks-1``.

        Returns
        -------
        RankSteps
            The rank's steps, in order.

        Raises
        ------
        ValueError
            If ``rank`` is not in ``0..nranks-1``.
        """
        steps = self._cache.get(rank)
        if steps is None:
            if not 0 <= rank < self.nranks:
                raise ValueError(f"rank {rank} is out of range: the schedule has "
                                 f"{self.nranks} ranks (0..{self.nranks - 1})")
            steps = self._cache[rank] = self.generate(rank)
        return steps

    @property
    def ranks(self) -> tuple[RankSteps, ...]:
        """Every rank's steps (generates all ranks)."""
        return tuple(self.steps(r) for r in range(self.nranks))

    @property
    def param_dict(self) -> dict[str, Any]:
        """The tuning parameters as a dict."""
        return dict(self.params)

    def num_steps(self, rank: int | None = None) -> int:
        """Steps of ``rank``, or the most steps of any rank when ``rank`` is None.

        Parameters
        ----------
        rank : int or None, optional
            A rank in ``0..nranks-1``, or None for the maximum over ranks.

        Returns
        -------
        int
            Number of steps.

        Raises
        ------
        ValueError
            If ``rank`` is not in ``0..nranks-1``.
        """
        if rank is not None:
            return len(self.steps(rank))
        return max((len(self.steps(r)) for r in range(self.nranks)), default=0)

    def sent_elements(self, rank: int) -> int:
        """Elements ``rank`` sends over the whole schedule.

        Parameters
        ----------
        rank : int
            A rank in ``0..nranks-1``.

        Returns
        -------
        int
            Total elements over every send of every step.

        Raises
        ------
        ValueError
            If ``rank`` is not in ``0..nranks-1``.
        """
        return sum(op.stop - op.start for step in self.steps(rank)
                   for op in step.ops if isinstance(op, Send))

    def __iter__(self) -> Iterator[RankSteps]:
        return iter(self.ranks)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        head = (self.collective, self.algorithm, self.nranks, self.count, self.params)
        other_head = (other.collective, other.algorithm, other.nranks, other.count, other.params)
        return head == other_head and self.ranks == other.ranks

    def __hash__(self) -> int:
        return hash((self.collective, self.algorithm, self.nranks, self.count, self.params))

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params)
        lines = [f"{self.algorithm} {self.collective}: {self.nranks} ranks, "
                 f"{self.count} elements" + (f" ({params})" if params else "")]
        for rank in range(self.nranks):
            lines.append(f"rank {rank}:")
            lines.extend(f"  step {i}: {step}" for i, step in enumerate(self.steps(rank)))
        return "\n".join(lines)

    def to_json(self) -> str:
        """Serialise to JSON; :meth:`from_json` reads it back."""
        def encode(op: Op) -> list[Any]:
            name = _OP_NAMES[type(op)]
            if isinstance(op, Send):
                return [name, op.peer, op.start, op.stop]
            if isinstance(op, Recv):
                return [name, op.peer, op.start, op.stop, op.reduce]
            return [name, op.start, op.stop, op.dst]

        return json.dumps({
            "collective": self.collective, "algorithm": self.algorithm,
            "nranks": self.nranks, "count": self.count, "params": dict(self.params),
            "ranks": [[[encode(op) for op in step.ops] for step in steps] for steps in self],
        })

    @classmethod
    def from_json(cls, text: str) -> "Schedule":
        """Read a schedule written by :meth:`to_json`.

        Parameters
        ----------
        text : str
            The JSON text.

        Returns
        -------
        Schedule
            The schedule; list-valued parameters become tuples.

        Raises
        ------
        ValueError
            If the text is not valid JSON or its rank list disagrees with ``nranks``.
        KeyError
            If a required field or an op name is missing or unknown.
        """
        data = json.loads(text)
        params = {k: tuple(v) if isinstance(v, list) else v for k, v in data["params"].items()}
        ranks = [[Step(tuple(_OP_TYPES[op[0]](*op[1:]) for op in step)) for step in steps]
                 for steps in data["ranks"]]
        if len(ranks) != data["nranks"]:
            raise ValueError(f"JSON schedule says nranks={data['nranks']} but lists {len(ranks)} ranks")
        return cls.from_steps(data["collective"], data["algorithm"], data["count"], ranks, params)
