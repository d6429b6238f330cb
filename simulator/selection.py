"""Algorithm selection: the predicted best algorithm per collective, size and topology.

:func:`select` answers "which algorithm (and segment count) should this collective of
``nbytes`` bytes run on this machine?" from a :class:`TuningTable`, built once per
``(topology, collective, nranks, dtype_size, method)`` and cached, so that every later call
is a table lookup (a few microseconds; ``benchmarks/bench_select.py`` shows it).

The table
---------
* Sizes: :data:`SIZES`, 1 B to 8 GiB, the powers of two and 1.5 times each (1, 2, 3, 4,
  6, 8, 12, ...); a size is rounded down to whole elements of ``dtype_size`` bytes.
* Candidates: :func:`candidates`, what each registered algorithm offers
  (:mod:`collectives.registry`): ring, recursive halving-doubling (and, for AllReduce,
  recursive doubling: rhd ``doubling=True``), and the double binary tree and chunked
  pipeline at a few segment counts.  Ties are broken by this fixed order, so every
  answer is deterministic.  Tables on all of a machine's ranks try each at every count of
  :func:`simulator.channel_choice.channel_counts` (1 and the NICs per node), over the
  algorithms' orders on the machine, and then ``hier`` on several nodes;
  ``algorithms=`` keeps only the named algorithms' candidates (as ``NCCL_ALGO``), and
  adds NCCL's own algorithms it names (``nccl-tree``, ``nccl-nvls``, ``nccl-nvlstree``,
  ``nccl-pat``: :mod:`simulator.nccl_algorithms`, priced in closed form by either method
  where NCCL runs them; no schedule runs them, ``native`` over NCCL does).
* Predictions (``method="auto"``, the rule):

  - ``"simulate"`` when ``nranks <= SIMULATE_MAX_RANKS``: every candidate's schedule is
    played on the topology by :func:`simulator.simulate` (exact, contention-aware).  A
    schedule's time is affine in the size once the size is large (every message grows in
    proportion); when three consecutive sizes at which every message carries at least
    :data:`LINEAR_MIN_ELEMENTS` elements lie on a line to :data:`LINEAR_RTOL`, the larger
    sizes are read
    off that line, and the largest size is simulated to check it (all of them are
    simulated when the check fails);
  - ``"closed_form"`` otherwise: :func:`closed_form`, the analytic model
    (:mod:`simulator.analytic`) on the routes and shared links of the same orders,
    channels and ``hier``.  On :func:`topology.flat` the two methods agree (the
    simulator's tests check it); on the DGX presets the tests state how closely.

* Protocols: on a topology with a GPU model (``topology.gpu``) every candidate is
  predicted under each of the model's protocols (:mod:`simulator.gpu`) and takes the
  least; the choice names the protocol, as NCCL picks the (algorithm, protocol) pair
  with the least predicted time.  Without a GPU model the protocol is None.

* Between two sizes of the sweep each candidate's time is interpolated linearly in bytes;
  the choice is the candidate with the least interpolated time, so the table's ranges end
  at the exact crossover sizes.  Beyond 8 GiB the times are extrapolated from the last two
  sizes and the choice stays the one at 8 GiB.

Examples
--------
>>> import topology
>>> flat = topology.flat(64, alpha=5e-6, beta=1e-10)
>>> select("allreduce", 1024, flat).algorithm, select("allreduce", 1 << 30, flat).algorithm
('rhd', 'rhd')

(On :func:`topology.flat` every rank has one port, so the bandwidth-optimal algorithms
win large vectors, as the literature says: recursive halving-doubling here, on 64 ranks,
with ``lg p`` steps against the ring's ``p - 1``.)
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from reprlib import repr as brief
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from topology.checks import check_int, is_int
from topology.model import Topology

from collectives.build import ALGORITHMS, COMPOSED, build_schedule
from collectives.layout import count_of
from collectives.registry import algorithm as registered
from collectives.registry import algorithms
from collectives.schedule import COLLECTIVES

from .channel_choice import channel_counts, hier_ranks_per_node, schedule_params
from .engine import simulate
from .gpu import protocols
from . import nccl_algorithms
from .sweeps import run_jobs
from .analytic import price_one, price_protocols

__all__ = ["SIZES", "candidates", "METHODS",
           "SIMULATE_MAX_RANKS", "MAX_SELECTED_RANKS", "Candidate", "Choice", "Range",
           "TuningTable", "select",
           "tuning_table", "measured_table", "closed_form", "clear_cache"]

#: the size sweep in bytes: powers of two from 1 B to 8 GiB and 1.5 times each in between
SIZES: tuple[int, ...] = tuple(sorted({1 << k for k in range(34)}
                                      | {3 << (k - 1) for k in range(1, 33)}))

Params = tuple[tuple[str, Any], ...]


def candidates(collective: str, channel_counts: tuple[int, ...] = (1,),
               ranks_per_node: int | None = None) -> tuple[tuple[str, Params], ...]:
    """Every candidate of ``collective`` as ``(algorithm, params)``, in tie-breaking order.

    What each registered algorithm offers (its ``candidates``, :mod:`collectives.registry`):
    the flat algorithms in the registry's order at one channel and each larger count, then
    the composed ones at each count.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    channel_counts : tuple of int, optional
        Channel counts to try (1: no ``channels`` parameter).  With ``C > 1`` channels:
        ring, and tree and pipeline at their segment counts divided by ``C`` (rounded
        up), so that the vector is cut into as many pieces as with one channel; not rhd,
        whose channels share its pairs (its orders already give every GPU its own NIC).
    ranks_per_node : int or None, optional
        When given, ``hier`` follows: with an inner ring, tree or rhd at one channel, and
        with an inner ring or rhd at each larger count.

    Returns
    -------
    tuple of (str, Params)
        Ring, rhd, for AllReduce rhd with ``doubling=True`` (recursive doubling), tree at
        1, 4 and 16 segments per half, then pipeline at four segment counts; the channel
        variants; then ``hier``.

    Examples
    --------
    >>> [_label(a, p) for a, p in candidates("allreduce")][:4]
    ['ring', 'rhd', 'rhd(doubling=True)', 'tree(segments=1)']
    >>> [a for a, _ in candidates("allgather")][:9]
    ['ring', 'rhd', 'tree', 'tree', 'tree', 'pipeline', 'pipeline', 'pipeline', 'pipeline']
    >>> for algorithm, params in candidates("allgather", (1, 8), 8):
    ...     if "channels" in dict(params):
    ...         print(_label(algorithm, params))
    ring(channels=8)
    tree(channels=8,segments=1)
    tree(channels=8,segments=2)
    pipeline(channels=8,segments=1)
    hier(channels=1,inner=ring,ranks_per_node=8)
    hier(channels=1,inner=tree,ranks_per_node=8)
    hier(channels=1,inner=rhd,ranks_per_node=8)
    hier(channels=8,inner=ring,ranks_per_node=8)
    hier(channels=8,inner=rhd,ranks_per_node=8)
    """
    flat = (1, *(c for c in channel_counts if c > 1))  # one channel whatever the counts
    return tuple((entry.name, params)
                 for composed, counts in ((False, flat), (True, channel_counts))
                 for c in counts for entry in algorithms(composed, collective)
                 for params in entry.candidates(collective, c, ranks_per_node))


#: how predictions are made; ``auto`` applies the rule of the module docstring
METHODS: tuple[str, ...] = ("auto", "simulate", "closed_form")

#: largest rank count whose tables ``method="auto"`` simulates (8: one DGX node; a table
#: of 8 ranks simulates in 0.2-0.5 s, see ``benchmarks/bench_select.py``)
SIMULATE_MAX_RANKS = 8
#: the most ranks a tuning table (and :func:`select`) is built for: four times the 16k
#: GPUs of the largest machines selection is meant for (DESIGN.md)
MAX_SELECTED_RANKS = 65536

#: linear read-off starts once every message carries about this many elements
LINEAR_MIN_ELEMENTS = 64
#: relative tolerance of the linear read-off and of its check at the largest size
LINEAR_RTOL = 1e-4


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate's prediction: ``algorithm`` with ``params`` takes ``predicted_s``
    under ``protocol`` (its fastest protocol of the GPU model; None without one)."""

    algorithm: str
    params: Params
    predicted_s: float
    protocol: str | None = None

    @property
    def label(self) -> str:
        """``"ring"``, ``"tree(segments=4)"``, ..."""
        return _label(self.algorithm, self.params)


@dataclass(frozen=True, slots=True)
class Choice:
    """The predicted best algorithm for one call.

    Attributes
    ----------
    algorithm : str
        ``ring``, ``tree``, ``rhd``, ``pipeline`` or ``hier``; or one of NCCL's own
        (``nccl-tree``, ``nccl-nvls``, ...) where ``algorithms=`` named it.
    params : tuple of (str, value)
        Its tuning parameters for :func:`collectives.build_schedule` (``dict(params)``;
        on several nodes or with ``channels`` > 1 the simulated tables ran them over the
        machine's orders, which :func:`simulator.channel_choice.schedule_params` adds).
    predicted_s : float
        Its predicted time, seconds.
    candidates : tuple of Candidate
        Every candidate's predicted time, in :func:`candidates` order.
    protocol : str or None
        The protocol of the GPU model it runs with (None without a GPU model).

    The repr names the choice and the runner-up; :attr:`candidates` holds every time.
    """

    algorithm: str
    params: Params
    predicted_s: float
    candidates: tuple[Candidate, ...]
    protocol: str | None = None

    def __repr__(self) -> str:
        others = sorted((c for c in self.candidates
                         if (c.algorithm, c.params) != (self.algorithm, self.params)),
                        key=lambda c: c.predicted_s)
        runner_up = f"; next {others[0].label} {others[0].predicted_s * 1e6:.4g} us" \
            if others else ""
        return (f"Choice({self.label}: {self.predicted_s * 1e6:.4g} us predicted{runner_up}; "
                f"{len(self.candidates)} candidates)")

    @property
    def param_dict(self) -> dict[str, Any]:
        """The tuning parameters as a dict."""
        return dict(self.params)

    @property
    def label(self) -> str:
        """``"ring"``, ``"tree(segments=4)"``, ..."""
        return _label(self.algorithm, self.params)


@dataclass(frozen=True, slots=True)
class Range:
    """Sizes ``min_bytes .. max_bytes`` (inclusive) choose candidate ``index``."""

    min_bytes: int
    max_bytes: int
    index: int


#: the largest size a range can end at (NCCL's tuner and Open MPI take 64-bit sizes)
MAX_BYTES = (1 << 63) - 1


@dataclass(frozen=True)
class TuningTable:
    """Every candidate's predicted time at every size of the sweep, and the choice ranges.

    Attributes
    ----------
    collective : str
        The collective.
    topology_name : str
        Name of the topology it was built for.
    nranks, dtype_size : int
        Ranks and bytes per element.
    method : str
        ``"simulate"`` or ``"closed_form"`` (what ``"auto"`` resolved to).
    candidates : tuple of (str, params)
        The candidates, in tie-breaking order (:func:`candidates`).
    sizes : tuple of int
        The sweep, bytes.
    times : tuple of tuple of float
        ``times[i][c]``: candidate ``c`` at ``sizes[i]``, seconds.
    ranges : tuple of Range
        Consecutive size ranges from 0 to :data:`MAX_BYTES` and the candidate each chooses.
    protocols : tuple of (str or None)
        The protocols tried (``(None,)`` without a GPU model).
    protocol_times : tuple
        ``protocol_times[k][i][c]``: candidate ``c`` at ``sizes[i]`` under
        ``protocols[k]``; ``times`` is their least over ``k``.

    The repr is a summary (what, where, the first choices); the fields hold every figure.
    """

    collective: str
    topology_name: str
    nranks: int
    dtype_size: int
    method: str
    candidates: tuple[tuple[str, Params], ...]
    sizes: tuple[int, ...]
    times: tuple[tuple[float, ...], ...]
    ranges: tuple[Range, ...]
    protocols: tuple[str | None, ...] = (None,)
    protocol_times: tuple[tuple[tuple[float, ...], ...], ...] = ()
    if TYPE_CHECKING:  # set by __post_init__, not fields
        _starts: list[int] = field(init=False)
        _protocol_starts: list[tuple[list[int], list[str | None]]] | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", [r.min_bytes for r in self.ranges])
        object.__setattr__(self, "_protocol_starts",
                           [self._protocol_line(c) for c in range(len(self.candidates))]
                           if len(self.protocols) > 1 else None)

    def _protocol_line(self, c: int) -> tuple[list[int], list[str | None]]:
        """Where candidate ``c``'s fastest protocol changes: first sizes and protocols.

        Between two sizes of the sweep (and past the last, extrapolated) every
        protocol's time is a line, so the changes are the exact crossovers of the lines.
        """
        times = [[row[c] for row in t] for t in self.protocol_times]
        firsts = [0]
        names = [self.protocols[_argmin([t[0] for t in times])]]
        last = len(self.sizes) - 2
        segments = [(i, self.sizes[i], self.sizes[i + 1]) for i in range(last + 1)]
        segments.append((last, self.sizes[-1], MAX_BYTES))  # extrapolated, as times_at
        for i, lo, hi in segments:
            x0, x1 = self.sizes[i], self.sizes[i + 1]
            t_lo, t_hi = ([t[i] + (t[i + 1] - t[i]) * (x - x0) / (x1 - x0) for t in times]
                          for x in (lo, hi))
            for first, k in _envelope(lo, hi, t_lo, t_hi):
                if self.protocols[k] != names[-1] and first > firsts[-1]:
                    firsts.append(first)
                    names.append(self.protocols[k])
        return firsts, names

    def __repr__(self) -> str:
        shown = [f"{_label(*self.candidates[r.index])} from {r.min_bytes} B"
                 for r in self.ranges[:3]]
        more = f", ... ({len(self.ranges)} ranges)" if len(self.ranges) > 3 else ""
        return (f"TuningTable({self.collective} on {self.topology_name!r}, {self.nranks} "
                f"ranks, {self.dtype_size} B elements, {self.method}: "
                f"{len(self.candidates)} candidates x {len(self.sizes)} sizes; "
                f"{', '.join(shown)}{more})")

    def times_at(self, nbytes: int) -> list[float]:
        """Every candidate's time at ``nbytes``, interpolated between sizes of the sweep.

        Below the first size the first size's times are returned; past the last, the last
        two sizes are extrapolated linearly.

        Parameters
        ----------
        nbytes : int
            Message size in bytes.

        Returns
        -------
        list of float
            Seconds, one per candidate, in :attr:`candidates` order.
        """
        return _interpolate(self.sizes, self.times, nbytes)

    def times_under(self, protocol: str | None, nbytes: int) -> list[float]:
        """Every candidate's time at ``nbytes`` under ``protocol``, interpolated.

        Parameters
        ----------
        protocol : str or None
            One of :attr:`protocols`.
        nbytes : int
            Message size in bytes.

        Returns
        -------
        list of float
            Seconds, one per candidate.

        Raises
        ------
        ValueError
            If ``protocol`` is not one of :attr:`protocols`.
        """
        if protocol not in self.protocols:
            raise ValueError(f"protocol={protocol!r} is not allowed; it must be one of "
                             f"{list(self.protocols)}")
        if len(self.protocols) == 1:
            return self.times_at(nbytes)
        times = self.protocol_times[self.protocols.index(protocol)]
        return _interpolate(self.sizes, times, nbytes)

    def protocols_at(self, nbytes: int) -> list[str | None]:
        """The protocol under which each candidate is fastest at ``nbytes``.

        Parameters
        ----------
        nbytes : int
            Message size in bytes.

        Returns
        -------
        list of (str or None)
            One of :attr:`protocols` per candidate (the first of equals).
        """
        if self._protocol_starts is None:
            return [self.protocols[0]] * len(self.candidates)
        return [names[bisect_right(firsts, nbytes) - 1]
                for firsts, names in self._protocol_starts]

    def choice(self, nbytes: int) -> Choice:
        """The choice at ``nbytes`` (see :func:`select`).

        Parameters
        ----------
        nbytes : int
            Message size in bytes (>= 0).

        Returns
        -------
        Choice
            The range's chosen candidate, with every candidate's time from :meth:`times_at`.
        """
        chosen = self.ranges[bisect_right(self._starts, nbytes) - 1].index
        predicted = self.times_at(nbytes)
        candidates = tuple(Candidate(a, p, t, k) for (a, p), t, k in
                           zip(self.candidates, predicted, self.protocols_at(nbytes)))
        algorithm, params = self.candidates[chosen]
        return Choice(algorithm, params, predicted[chosen], candidates,
                      candidates[chosen].protocol)

    def protocol_ranges(self) -> list[tuple[int, int, int, str | None]]:
        """:attr:`ranges` split where the chosen candidate's fastest protocol changes.

        Between two sizes of the sweep every protocol's time is a line, so the splits
        are the exact crossovers of those lines, as for the candidates.

        Returns
        -------
        list of (int, int, int, str or None)
            ``(min_bytes, max_bytes, candidate index, protocol)``, consecutive from 0 to
            :data:`MAX_BYTES`.
        """
        pieces: list[tuple[int, int, str | None]] = []
        for r in self.ranges:
            firsts, names = self._protocol_starts[r.index] if self._protocol_starts \
                else ([0], [self.protocols[0]])
            at = bisect_right(firsts, r.min_bytes) - 1
            for start, protocol in [(r.min_bytes, names[at])] + [
                    (f, n) for f, n in zip(firsts[at + 1:], names[at + 1:]) if f <= r.max_bytes]:
                if not pieces or pieces[-1][1:] != (r.index, protocol):
                    pieces.append((start, r.index, protocol))
        ends = [start - 1 for start, _, _ in pieces[1:]] + [MAX_BYTES]
        return [(start, end, index, protocol)
                for (start, index, protocol), end in zip(pieces, ends)]

    def crossovers(self) -> list[tuple[int, str, str]]:
        """``(size, from_label, to_label)`` wherever the choice changes."""
        return [(b.min_bytes, _label(*self.candidates[a.index]), _label(*self.candidates[b.index]))
                for a, b in zip(self.ranges, self.ranges[1:])]

    def rows(self) -> Iterator[tuple[int, int, str, float]]:
        """``(size, best index, best label, best time)`` at every size of the sweep."""
        for size, times in zip(self.sizes, self.times):
            best = _argmin(times)
            yield size, best, _label(*self.candidates[best]), times[best]


def _interpolate(sizes: tuple[int, ...], times: Any, nbytes: int) -> list[float]:
    """Each column of ``times`` at ``nbytes``, linear between sizes, extrapolated past
    the last two and flat below the first (see :meth:`TuningTable.times_at`)."""
    if nbytes <= sizes[0]:
        return list(times[0])
    i = min(bisect_right(sizes, nbytes) - 1, len(sizes) - 2)
    w = (nbytes - sizes[i]) / (sizes[i + 1] - sizes[i])  # > 1 past the sweep: extrapolated
    return [a + (b - a) * w for a, b in zip(times[i], times[i + 1])]


def _label(algorithm: str, params: Params) -> str:
    inner = ",".join(f"{k}={v}" for k, v in params)
    return f"{algorithm}({inner})" if inner else algorithm


def _argmin(times: tuple[float, ...] | list[float]) -> int:
    """Index of the least time; the earliest candidate wins a tie."""
    return min(range(len(times)), key=times.__getitem__)


def closed_form(collective: str, algorithm: str, topology: Topology, nbytes: int,
                nranks: int | None = None, dtype_size: int = 4, protocol: str | None = None,
                **params: Any) -> float:
    """The closed-form time of ``algorithm`` on ``topology``, GPU terms included.

    :func:`simulator.analytic.price`: what the algorithm describes, priced on the routes
    and shared links of the orders the simulated tables use (channels and ``hier``
    included), on the effective topology under ``protocol`` when it has a GPU model
    (:func:`simulator.gpu.gpu_terms`), plus the call's fixed cost.

    Parameters
    ----------
    collective, algorithm : str
        As :func:`simulator.cost` (``hier`` too).
    topology : topology.Topology
        The machine.
    nbytes : int
        Bytes of the working buffer, a multiple of ``dtype_size``.
    nranks : int, optional
        Ranks, from rank 0 (default all of the topology's).
    dtype_size : int, optional
        Bytes per element (default 4).
    protocol : str, optional
        A protocol of ``topology.gpu`` (default its default protocol); None without one.
    **params
        The algorithm's parameters (``channels`` included).

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError, TypeError
        As :func:`simulator.cost` and :func:`simulator.gpu.resolve_protocol`.

    Examples
    --------
    >>> import topology
    >>> round(closed_form("allreduce", "ring", topology.dgx_h100(), 8, protocol="LL") * 1e6, 2)
    15.0
    """
    check_int(nbytes, "nbytes", 0)
    if nbytes % dtype_size:
        raise ValueError(f"nbytes={nbytes} is not allowed; it must be a multiple of "
                         f"dtype_size={dtype_size}")
    return price_one(collective, algorithm, topology, nbytes, nranks, dtype_size, protocol,
                     **params)


def _closed_forms(jobs: list[tuple[Any, ...]]) -> list[list[float]]:
    """The analytic times over :data:`SIZES` of each of ``jobs`` (as
    :func:`_simulated` takes them), each candidate priced under all its jobs' protocols
    at once (:func:`simulator.analytic.price_protocols`: its paced rounds played once)."""
    grouped: dict[tuple[Any, ...], list[int]] = {}
    for k, job in enumerate(jobs):
        grouped.setdefault((*job[:4], *job[5:]), []).append(k)
    priced: list[list[float]] = [[] for _ in jobs]
    for (collective, nranks, dtype_size, topology, algorithm, params), at in grouped.items():
        times = price_protocols(collective, algorithm, topology, SIZES,
                                [jobs[k][4] for k in at], nranks, dtype_size, **dict(params))
        for k, row in zip(at, times.tolist()):
            priced[k] = row
    return priced


def _simulated(collective: str, nranks: int, dtype_size: int, topology: Any,
               protocol: str | None, algorithm: str, params: Params) -> list[float]:
    """Simulated times over :data:`SIZES`, the linear tail read off and checked."""
    def run(n: int) -> float:
        schedule = build_schedule(collective, algorithm, nranks,
                                  count_of(collective, n, dtype_size, nranks),
                                  **schedule_params(algorithm, params, topology, nranks))
        return simulate(schedule, topology, dtype_size, trace=False, verify=False,
                        protocol=protocol).time_s

    start = LINEAR_MIN_ELEMENTS * _pieces(collective, algorithm, nranks, params) * dtype_size
    times: list[float] = []
    for n in SIZES:
        if len(times) >= 3 and SIZES[len(times) - 3] >= start \
                and _on_line(SIZES, times, len(times) - 1):
            break
        times.append(run(n))
    if len(times) == len(SIZES):
        return times
    known = len(times)
    line = [_extrapolate(SIZES, times, known - 1, n) for n in SIZES[known:]]
    last = run(SIZES[-1])
    if abs(line[-1] - last) <= LINEAR_RTOL * last:
        return times + line[:-1] + [last]
    return times + _two_lines(run, known, line, last)


def _two_lines(run: Any, known: int, line: list[float], last: float) -> list[float]:
    """Times at ``SIZES[known:]`` when ``line``, read off below them, misses the largest
    size's time ``last``: a GPU model's FIFO slots start hiding latency in between, and
    time is linear in bytes below (every message within its slots) and above (every
    message past them).  The upper line runs through the two largest sizes; bisection
    finds the largest size still on ``line`` and the smallest already on the upper one,
    and the sizes between are simulated."""
    top = len(SIZES) - 1
    if known >= top:
        return [last]
    found = {top: last, top - 1: run(SIZES[top - 1])}
    slope = (last - found[top - 1]) / (SIZES[top] - SIZES[top - 1])

    def upper(i: int) -> float:
        return last + slope * (SIZES[i] - SIZES[top])

    def near(i: int, expected: float) -> bool:
        found[i] = found[i] if i in found else run(SIZES[i])
        return abs(expected - found[i]) <= LINEAR_RTOL * found[i]

    below, lowest = known - 1, top - 1  # off the upper line, and the smallest on it
    while lowest - below > 1:
        middle = (below + lowest) // 2
        below, lowest = (below, middle) if near(middle, upper(middle)) else (middle, lowest)
    highest, above = known - 1, lowest  # the largest on ``line``, and one off it
    while above - highest > 1:
        middle = (highest + above) // 2
        highest, above = (middle, above) if near(middle, line[middle - known]) \
            else (highest, middle)
    return [found[i] if i in found else line[i - known] if i <= highest
            else upper(i) if i > lowest else run(SIZES[i]) for i in range(known, top + 1)]


def _pieces(collective: str, algorithm: str, nranks: int, params: Params) -> int:
    """Into how many messages' worth ``algorithm`` cuts the vector (its ``pieces`` per
    channel)."""
    named = dict(params)
    return registered(algorithm).pieces(collective, nranks, named) * named.get("channels", 1)


def _extrapolate(sizes: tuple[int, ...], times: list[float], i: int, n: int) -> float:
    """The line through points ``i - 1`` and ``i`` at ``n``."""
    slope = (times[i] - times[i - 1]) / (sizes[i] - sizes[i - 1])
    return times[i] + slope * (n - sizes[i])


def _on_line(sizes: tuple[int, ...], times: list[float], i: int) -> bool:
    """Whether point ``i`` lies on the line through points ``i - 2`` and ``i - 1``."""
    expected = _extrapolate(sizes, times, i - 1, sizes[i])
    return abs(expected - times[i]) <= LINEAR_RTOL * times[i]


def _ranges(sizes: tuple[int, ...], times: list[list[float]]) -> tuple[Range, ...]:
    """Choice ranges of the piecewise-linear interpolation, merged across the sweep.

    Past the largest size of the sweep the choice stays the one at that size.
    """
    starts: list[tuple[int, int]] = [(0, _argmin(times[0]))]
    for i in range(len(sizes) - 1):
        starts += _envelope(sizes[i], sizes[i + 1], times[i], times[i + 1])
    starts.append((sizes[-1], _argmin(times[-1])))
    merged: list[tuple[int, int]] = []
    for start, index in starts:
        if merged and merged[-1][0] == start:
            merged.pop()
        if not merged or merged[-1][1] != index:
            merged.append((start, index))
    ends = [start - 1 for start, _ in merged[1:]] + [MAX_BYTES]
    return tuple(Range(s, e, c) for (s, c), e in zip(merged, ends))


def _envelope(lo: int, hi: int, t_lo: list[float], t_hi: list[float]) -> list[tuple[int, int]]:
    """``(first size, candidate)`` of the least of the lines from ``(lo, t_lo)`` to
    ``(hi, t_hi)`` on the integers ``lo .. hi - 1``; ties go to the earlier candidate."""
    slopes = [(b - a) / (hi - lo) for a, b in zip(t_lo, t_hi)]
    x, current = lo, _argmin(t_lo)
    found = [(x, current)]
    while True:
        switch: tuple[int, float, int] | None = None
        for c, slope in enumerate(slopes):
            drop = slopes[current] - slope
            if drop <= 0:
                continue
            gap = (t_lo[c] - t_lo[current]) / drop  # where the lines cross, from lo
            first = math.floor(gap) + (gap != math.floor(gap) or c > current)
            y = lo + max(first, x - lo + 1)
            key = (y, t_lo[c] + slope * (y - lo), c)
            if switch is None or key < switch:
                switch = key
        if switch is None or switch[0] >= hi:
            return found
        x, _, current = switch
        found.append((x, current))


def _build_table(collective: str, topology: Any, nranks: int, dtype_size: int,
                 method: str, algorithms: tuple[str, ...] | None = None) -> TuningTable:
    if method == "auto":
        method = "simulate" if nranks <= SIMULATE_MAX_RANKS else "closed_form"
    tried = _tried(collective, topology, nranks, method, algorithms)
    jobs = [(collective, nranks, dtype_size, topology, protocol, a, p)
            for protocol in protocols(topology) for a, p in tried]
    nccl = [job[5] in nccl_algorithms.ALGORITHMS for job in jobs]  # NCCL's: priced apart
    ours = [job for job, theirs in zip(jobs, nccl) if not theirs]
    if method == "simulate":
        priced = run_jobs(_simulated, ours, nranks, f"simulating {collective} on {topology.name}")
    else:
        priced = _closed_forms(ours)
    left = iter(priced)
    columns = [_nccl_priced(collective, topology, job[4], job[5]) if theirs else next(left)
               for job, theirs in zip(jobs, nccl)]
    tables = [tuple(tuple(row) for row in zip(*columns[k:k + len(tried)]))
              for k in range(0, len(columns), len(tried))]
    times = [[min(t) for t in zip(*rows)] for rows in zip(*tables)]
    return TuningTable(collective, topology.name, nranks, dtype_size, method, tried, SIZES,
                       tuple(tuple(row) for row in times), _ranges(SIZES, times),
                       protocols(topology), tuple(tables) if len(tables) > 1 else ())


#: the time a table gives NCCL's algorithm under a protocol NCCL does not run it with
#: (finite, so that the tables' interpolation stays arithmetic; no choice takes it)
UNRUN_S = 1e9


def _nccl_priced(collective: str, topology: Any, protocol: str | None,
                 algorithm: str) -> list[float]:
    """NCCL's own ``algorithm`` over :data:`SIZES` (:mod:`simulator.nccl_algorithms`)."""
    if protocol not in nccl_algorithms.nccl_protocols(algorithm, topology):
        return [UNRUN_S] * len(SIZES)
    return nccl_algorithms.nccl_costs(collective, algorithm, topology, SIZES,
                                      protocol).tolist()


def _tried(collective: str, topology: Any, nranks: int, method: str,
           algorithms: tuple[str, ...] | None) -> tuple[tuple[str, Params], ...]:
    """The candidates: with channels and ``hier`` on all of the machine's ranks,
    restricted to ``algorithms`` when given."""
    if nranks == topology.nranks:
        tried = candidates(collective, channel_counts(topology),
                           hier_ranks_per_node(topology, nranks))
    else:
        tried = candidates(collective)
    kept = tuple(c for c in tried if algorithms is None or c[0] in algorithms)
    kept += tuple((a, ()) for a in nccl_algorithms.ALGORITHMS
                  if algorithms is not None and a in algorithms
                  and nccl_algorithms.available(collective, a, topology, nranks))
    if not kept:
        raise ValueError(f"algorithms={algorithms!r} leaves no candidate with method={method!r} "
                         f"on {nranks} ranks of {topology.name!r}; hier needs several nodes "
                         f"and all of the machine's ranks, NCCL's algorithms all of them "
                         f"where NCCL runs them")
    return kept


def _check_algorithms(algorithms: Any) -> tuple[str, ...] | None:
    if algorithms is None:
        return None
    names = (algorithms,) if isinstance(algorithms, str) else tuple(algorithms)
    allowed = (*ALGORITHMS, *COMPOSED, *nccl_algorithms.ALGORITHMS)
    for name in names:
        if name not in allowed:
            raise ValueError(f"algorithms={algorithms!r} is not allowed; each must be one of "
                             f"{list(allowed)}")
    return tuple(sorted(set(names)))


def measured_table(collective: str, source: str, nranks: int, dtype_size: int,
                   tried: Sequence[tuple[str, Params]], sizes: Sequence[int],
                   times: Sequence[Sequence[float]]) -> TuningTable:
    """A tuning table of measured times (``collsim tune``), its ranges chosen as for
    predicted ones (the least of the piecewise-linear interpolations).

    Parameters
    ----------
    collective : str
        The collective.
    source : str
        Where the times come from (the table's ``topology_name``).
    nranks, dtype_size : int
        Ranks and bytes per element.
    tried : sequence of (str, params)
        The candidates measured, in tie-breaking order.
    sizes : sequence of int
        Working-buffer bytes measured, strictly increasing.
    times : sequence of sequence of float
        ``times[i][c]``: candidate ``c`` at ``sizes[i]``, seconds.

    Returns
    -------
    TuningTable
        With ``method`` ``"measured"``.

    Raises
    ------
    ValueError
        If ``sizes`` is empty or not strictly increasing, or ``times`` does not match.
    """
    if not sizes or any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise ValueError(f"sizes={list(sizes)[:6]} is not allowed; give strictly increasing "
                         "sizes")
    if len(times) != len(sizes) or any(len(row) != len(tried) for row in times):
        raise ValueError(f"times must hold {len(sizes)} rows of {len(tried)} candidates")
    rows = [list(row) for row in times]
    return TuningTable(collective, source, nranks, dtype_size, "measured", tuple(tried),
                       tuple(sizes), tuple(tuple(row) for row in rows), _ranges(tuple(sizes), rows))


_TABLES: dict[tuple[Any, ...], TuningTable] = {}


def clear_cache() -> None:
    """Forget every cached tuning table."""
    _TABLES.clear()


def _check_scale(nranks: Any) -> None:
    """Raise if ``nranks`` (an int) is above :data:`MAX_SELECTED_RANKS`, before anything
    looks at a machine that large (hashing it alone takes minutes)."""
    if is_int(nranks) and nranks > MAX_SELECTED_RANKS:
        raise ValueError(f"nranks={nranks} is not allowed; selection prices at most "
                         f"{MAX_SELECTED_RANKS} ranks (pass a smaller topology, or nranks=)")


def _check(collective: Any, topology: Any, nranks: Any, dtype_size: Any, method: Any) -> int:
    if collective not in COLLECTIVES:
        raise ValueError(f"collective={brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    if not hasattr(topology, "placement") or not hasattr(topology, "gamma_s_per_byte"):
        raise TypeError(f"topology={brief(topology)} is not allowed; pass a topology.Topology")
    nranks = topology.nranks if nranks is None else nranks
    check_int(nranks, "nranks", 1, topology.nranks,
              note=f" (the ranks topology {topology.name!r} places)")
    _check_scale(nranks)
    check_int(dtype_size, "dtype_size", 1)
    if method not in METHODS:
        raise ValueError(f"method={brief(method)} is not supported; choose one of {list(METHODS)}")
    return nranks


def tuning_table(collective: str, topology: Topology, nranks: int | None = None,
                 dtype_size: int = 4, method: str = "auto",
                 algorithms: Any = None) -> TuningTable:
    """Return the (cached) tuning table of ``collective`` on ``topology``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    topology : topology.Topology
        The machine; the table is for its first ``nranks`` ranks.
    nranks : int, optional
        Ranks, at most ``topology.nranks`` (the default).
    dtype_size : int, optional
        Bytes per element (default 4).
    method : {"auto", "simulate", "closed_form"}
        How to predict (see the module docstring).
    algorithms : str or sequence of str, optional
        Only these algorithms' candidates (as ``NCCL_ALGO`` restricts NCCL's).

    Returns
    -------
    TuningTable

    Raises
    ------
    ValueError, TypeError
        For an unknown collective or method, a bad rank count or dtype size, or something
        that is not a topology.
    """
    nranks = _check(collective, topology, nranks, dtype_size, method)
    algorithms = _check_algorithms(algorithms)
    key = (topology, collective, nranks, dtype_size, method, algorithms,
           channel_counts(topology))
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = _build_table(collective, topology, nranks, dtype_size, method,
                                            algorithms)
    return table


def select(collective: str, nbytes: int, topology: Topology, nranks: int | None = None,
           dtype_size: int = 4, *, method: str = "auto", algorithms: Any = None) -> Choice:
    """Return the predicted best algorithm for ``collective`` of ``nbytes`` on ``topology``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    nbytes : int
        Bytes of the working buffer (the AllReduce vector, the ReduceScatter input, the
        AllGather output), >= 0.
    topology : topology.Topology
        The machine.
    nranks : int, optional
        Ranks, at most ``topology.nranks`` (the default).
    dtype_size : int, optional
        Bytes per element (default 4).
    method : {"auto", "simulate", "closed_form"}
        How the table predicts (see the module docstring).
    algorithms : str or sequence of str, optional
        Only these algorithms' candidates (as ``NCCL_ALGO`` restricts NCCL's).

    Returns
    -------
    Choice
        The algorithm, its parameters and predicted time, and every candidate's time.

    Raises
    ------
    ValueError, TypeError
        As :func:`tuning_table`, and for a negative or non-integer ``nbytes``.

    Examples
    --------
    >>> import topology
    >>> choice = select("allgather", 1 << 30, topology.flat(4, alpha=1e-6, beta=1e-9))
    >>> choice.label, round(choice.predicted_s, 3)
    ('rhd', 0.805)
    >>> len(choice.candidates) == len(candidates("allgather"))  # every candidate's time
    True
    """
    _check_scale(getattr(topology, "nranks", None) if nranks is None else nranks)
    try:
        table = _TABLES.get((topology, collective,
                             topology.nranks if nranks is None else nranks, dtype_size, method,
                             _check_algorithms(algorithms), channel_counts(topology)))
    except (AttributeError, TypeError, ValueError):  # bad arguments: checked below
        table = None
    if table is None:
        table = tuning_table(collective, topology, nranks, dtype_size, method, algorithms)
    check_int(nbytes, "nbytes", 0)
    return table.choice(nbytes)
