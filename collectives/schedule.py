"""The schedule: a collective algorithm as plain, immutable data.

A :class:`Schedule` says, for every rank, an ordered tuple of :class:`Step`; each
step holds operations that are posted together and completed together:

* :class:`Send` an element range of the rank's working buffer to a peer;
* :class:`Recv` an element range from a peer, copying it into place or reducing it
  into place (``reduce=True``: ``into = op(into, received)``, or with ``swap=True``
  ``into = op(received, into)``, for two ranks that reduce the same pair of values and
  must get the same bits);
* :class:`Copy` a range locally inside the working buffer.

The k-th send from rank ``a`` to rank ``b`` matches the k-th receive at ``b`` from
``a`` (MPI's non-overtaking rule); nothing else couples ranks.  Within a step, all
operations see the buffer as it was when the step was posted, and receives and copies
write when it completes; a step may send a range that it reduces into (recursive
doubling), never one that it receives or copies into (:func:`~collectives.verify`).

The working buffer of every rank holds ``count`` elements: the AllReduce, Broadcast or
Reduce vector, the ReduceScatter input or the AllGather output; an AllToAll's holds
:attr:`Schedule.elements` (what the rank sends, then what it receives, then any scratch
the algorithm needs; see :mod:`collectives.layout`).

Steps are generated per rank, lazily, and cached: a rank of a 1024-rank job that only
runs its own part never builds the other 1023 ranks' steps.  Operations are slotted
frozen dataclasses, so a schedule stays plain data (JSON round trip, ``==``).
Generators that make millions of them use :data:`new_send` and :data:`new_recv`, which
build the very same objects about twice as fast.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, Union, cast

__all__ = ["Send", "Recv", "Copy", "Op", "Step", "Schedule", "COLLECTIVES", "BLOCK_COLLECTIVES", "ROOTED", "EDGE_ITEMS",
           "new_send", "new_recv"]

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall")
#: the collectives whose vector the ranks cut into one block each (ring, rhd, tree,
#: pipeline and hier serve these)
BLOCK_COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")
#: the collectives with a ``root`` parameter: the rank whose vector is broadcast, or the
#: rank that receives the reduction
ROOTED = ("broadcast", "reduce")

#: ``str(schedule)`` shows the first this many ranks, and of a rank with more than twice
#: this many steps the first and last this many (as NumPy's ``edgeitems``)
EDGE_ITEMS = 3


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
    """Receive elements ``[start, stop)`` from rank ``peer``; reduce them in if ``reduce``.

    A reducing receive computes ``into = op(into, received)``; with ``swap`` the received
    data is the left operand, ``into = op(received, into)``.  Float ``max`` and ``min``
    (signed zeros, NaN payloads) and even ``sum`` (which of two NaNs survives) are not
    bitwise commutative, so two ranks that each reduce the other's copy of the same pair
    swap on one side to compute the same bits.
    """

    peer: int
    start: int
    stop: int
    reduce: bool = False
    swap: bool = False

    def __str__(self) -> str:
        verb = "reduce" if self.reduce else "recv"
        return f"{verb} [{self.start}:{self.stop}) <- {self.peer}" + \
            (" (received first)" if self.swap else "")


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


def _brief(value: Any) -> str:
    """A parameter in a glance: a tuple of more than ``2 * EDGE_ITEMS`` items shows its
    first and last ``EDGE_ITEMS``, ``...`` between them, as NumPy prints a long array;
    nested tuples (one rank order per channel) are shortened the same way at every level."""
    if not isinstance(value, tuple):
        return repr(value)
    items = list(value)
    if len(items) > 2 * EDGE_ITEMS:
        items = [*items[:EDGE_ITEMS], ..., *items[-EDGE_ITEMS:]]
    text = ", ".join("..." if item is ... else _brief(item) for item in items)
    return f"({text},)" if len(value) == 1 else f"({text})"


# A frozen dataclass's __init__ stores each field through object.__setattr__, a call per
# field (Send(...) ~450 ns, new_send(...) ~200 ns on this project's 2-core machine; with
# Send and Recv instead of the builders, every rank's steps of the 1024-rank ring, tree
# and pipeline schedules took 16-110% longer to build, 59% in all).
# Each builder below has the same slots as its class, so it stores its fields
# as plain attributes and then becomes an instance of that class (``__class__``
# assignment checks that the layouts agree and raises TypeError if they ever do not).
# The result is an ordinary frozen instance: type, ==, hash, repr, pickling and
# immutability are the class's own.

class _SendBuilder:
    __slots__ = ("peer", "start", "stop")

    def __init__(self, peer: int, start: int, stop: int) -> None:
        self.peer = peer
        self.start = start
        self.stop = stop
        self.__class__ = Send  # type: ignore[assignment]


class _RecvBuilder:
    __slots__ = ("peer", "start", "stop", "reduce", "swap")

    def __init__(self, peer: int, start: int, stop: int, reduce: bool = False,
                 swap: bool = False) -> None:
        self.peer = peer
        self.start = start
        self.stop = stop
        self.reduce = reduce
        self.swap = swap
        self.__class__ = Recv  # type: ignore[assignment]


#: ``new_send(peer, start, stop)``: the same object as ``Send(peer, start, stop)``, built faster
new_send = cast(Callable[[int, int, int], Send], _SendBuilder)
#: ``new_recv(peer, start, stop, reduce=False, swap=False)``: the same object as ``Recv(...)``,
#: built faster
new_recv = cast(Callable[..., Recv], _RecvBuilder)


@dataclass(frozen=True, eq=False)
class Schedule:
    """A collective algorithm for ``nranks`` ranks on a vector of ``count`` elements.

    ``str(schedule)`` is a summary: totals, then the first :data:`EDGE_ITEMS` ranks step
    by step, long ranks cut short with ``...`` as NumPy prints a long array;
    :meth:`to_text` prints every step of every rank.

    Parameters
    ----------
    collective : str
        One of :data:`COLLECTIVES`.
    algorithm : str
        Name of the algorithm that generated the steps.
    nranks : int
        Number of ranks, at least 1.
    count : int
        Elements in the full vector, at least 0; for AllToAll the elements a rank sends
        each peer (the most any rank sends any peer, with per-peer ``counts``).
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
    working : int or None, optional
        Elements of every rank's working buffer when they are not ``count`` (AllToAll);
        read it as :attr:`elements`.
    lane_columns : callable or None, optional
        ``lane_columns(rank) -> LaneColumns or None``: ``lanes(rank)`` as
        :class:`~collectives.rounds.LaneColumns`, for schedules whose lanes are many
        (a composed schedule's channels cut at their blocks,
        :func:`collectives.compose.composed`); None for a rank whose lanes are read as
        lanes.
    lane_starts : callable or None, optional
        ``lane_starts(rank) -> ndarray or None``: the real start of each entry of
        ``lane_columns(rank)``, in the order of its ``lengths``
        (:data:`~collectives.rounds.GAP` for a gap), for a consumer that needs the
        ranges, not only their lengths (:func:`collectives.verify`); None where
        ``lane_columns(rank)`` is.
    """

    collective: str
    algorithm: str
    nranks: int
    count: int
    params: tuple[tuple[str, Any], ...]
    generate: Callable[[int], RankSteps] = field(repr=False)
    lanes: Callable[[int], Sequence[Any]] | None = field(default=None, repr=False)
    working: int | None = field(default=None, repr=False)
    lane_columns: Callable[[int], Any] | None = field(default=None, repr=False)
    lane_starts: Callable[[int], Any] | None = field(default=None, repr=False)
    _cache: dict[int, RankSteps] = field(default_factory=dict, repr=False)

    @classmethod
    def from_steps(cls, collective: str, algorithm: str, count: int,
                   ranks: list[list[Step]] | tuple[RankSteps, ...],
                   params: dict[str, Any] | None = None,
                   working: int | None = None) -> "Schedule":
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
        working : int or None, optional
            Elements of the working buffer when they are not ``count`` (AllToAll).

        Returns
        -------
        Schedule
            The schedule (not checked; see :func:`collectives.verify`).
        """
        frozen = tuple(tuple(steps) for steps in ranks)
        return cls(collective, algorithm, len(frozen), count,
                   tuple(sorted((params or {}).items())), frozen.__getitem__, working=working)

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
    def elements(self) -> int:
        """Elements of every rank's working buffer: ``count``, or ``working`` when set."""
        return self.count if self.working is None else self.working

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

    def __repr__(self) -> str:
        params = "".join(f", {k}={_brief(v)}" for k, v in self.params)
        return (f"Schedule({self.collective!r}, {self.algorithm!r}, nranks={self.nranks}, "
                f"count={self.count}{params})")

    def __str__(self) -> str:
        lines = [self._header(), self._totals()]
        shown = min(self.nranks, EDGE_ITEMS)
        for rank in range(shown):
            lines += self._rank_lines(rank, EDGE_ITEMS)
        if shown < self.nranks:
            lines.append(f"... {self.nranks - shown} more ranks (to_text() prints every step "
                         "of every rank)")
        return "\n".join(lines)

    def to_text(self, ranks: Sequence[int] | None = None) -> str:
        """Every step of ``ranks`` (of every rank by default), one line per step.

        Parameters
        ----------
        ranks : sequence of int or None, optional
            The ranks to print, in this order; None for ``0 .. nranks-1``.

        Returns
        -------
        str
            The header line (algorithm, collective, ranks, count, parameters), then for each
            rank a ``rank r:`` line and its ``step i: ...`` lines.

        Raises
        ------
        ValueError
            If a rank is not in ``0..nranks-1``.

        Examples
        --------
        >>> from collectives import build_schedule
        >>> print(build_schedule("allgather", "ring", 2, 4).to_text(ranks=[1]))
        ring allgather: 2 ranks, 4 elements
        rank 1:
          step 0: send [2:4) -> 0; recv [0:2) <- 0
        """
        lines = [self._header()]
        for rank in range(self.nranks) if ranks is None else ranks:
            lines += self._rank_lines(rank, None)
        return "\n".join(lines)

    def _header(self) -> str:
        params = ", ".join(f"{k}={_brief(v)}" for k, v in self.params)
        return (f"{self.algorithm} {self.collective}: {self.nranks} ranks, "
                f"{self.count} elements" + (f" ({params})" if params else ""))

    def _totals(self) -> str:
        kinds: Counter[type] = Counter()
        reducing = 0
        for rank in range(self.nranks):
            for step in self.steps(rank):
                kinds.update(map(type, step.ops))
                reducing += sum(1 for op in step.ops if isinstance(op, Recv) and op.reduce)
        return (f"{self.num_steps()} steps at most per rank; {sum(kinds.values())} operations: "
                f"{kinds[Send]} sends, {kinds[Recv]} receives ({reducing} reducing), "
                f"{kinds[Copy]} copies")

    def _rank_lines(self, rank: int, edge: int | None) -> list[str]:
        """``rank r:`` and its steps; with ``edge``, only the first and last ``edge`` of a
        rank with more than ``2 * edge`` steps, ``...`` between them."""
        steps = list(enumerate(self.steps(rank)))
        lines = [f"rank {rank}:"]
        if edge is None or len(steps) <= 2 * edge:
            return lines + [f"  step {i}: {step}" for i, step in steps]
        return lines + [f"  step {i}: {step}" for i, step in steps[:edge]] + ["  ..."] + \
            [f"  step {i}: {step}" for i, step in steps[-edge:]]

    def to_json(self) -> str:
        """Serialise to JSON; :meth:`from_json` reads it back."""
        def encode(op: Op) -> list[Any]:
            name = _OP_NAMES[type(op)]
            if isinstance(op, Send):
                return [name, op.peer, op.start, op.stop]
            if isinstance(op, Recv):  # swap only where set: older files read the same
                return [name, op.peer, op.start, op.stop, op.reduce, *([True] if op.swap else [])]
            return [name, op.start, op.stop, op.dst]

        return json.dumps({
            "collective": self.collective, "algorithm": self.algorithm,
            "nranks": self.nranks, "count": self.count, "params": dict(self.params),
            **({} if self.working is None else {"elements": self.working}),
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
            The schedule; list-valued parameters become tuples (at every level).

        Raises
        ------
        ValueError
            Naming the field and its value: not valid JSON, nested too deeply, a missing
            or unknown field, a wrong type, a peer that is not a rank of the schedule, a
            range outside ``count``, a rank list whose length is not ``nranks``
            (:func:`collectives.schedule_json.decode`).
        """
        from .schedule_json import decode

        collective, algorithm, count, params, ranks, working = decode(text)
        return cls.from_steps(collective, algorithm, count, ranks, params, working)
