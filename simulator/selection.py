"""Algorithm selection: the predicted best algorithm per collective, size and topology.

:func:`select` answers "which algorithm (and segment count) should this collective of
``nbytes`` bytes run on this machine?" from a :class:`TuningTable`, built once per
``(topology, collective, nranks, dtype_size, method)`` and cached, so that every later call
is a table lookup (a few microseconds; ``benchmarks/bench_select.py`` shows it).

The table
---------
* Sizes: :data:`SIZES`, 1 B to 8 GiB, the powers of two and 1.5 times each (1, 2, 3, 4,
  6, 8, 12, ...); a size is rounded down to whole elements of ``dtype_size`` bytes.
* Candidates: :func:`candidates`, ring, recursive halving-doubling, and the double binary
  tree and chunked pipeline at each segment count of :data:`TREE_SEGMENTS` and
  :data:`PIPELINE_SEGMENTS`.  Ties are broken by this fixed order, so every answer is
  deterministic.
* Predictions (``method="auto"``, the rule):

  - ``"simulate"`` when ``nranks <= SIMULATE_MAX_RANKS``: every candidate's schedule is
    played on the topology by :func:`simulator.simulate` (exact, contention-aware).  A
    schedule's time is affine in the size once the size is large (every message grows in
    proportion); when three consecutive sizes at which every message carries at least
    :data:`LINEAR_MIN_ELEMENTS` elements lie on a line to :data:`LINEAR_RTOL`, the larger
    sizes are read
    off that line, and the largest size is simulated to check it (all of them are
    simulated when the check fails);
  - ``"closed_form"`` otherwise: :func:`simulator.cost` with the topology's worst route
    from rank 0 (largest latency and largest seconds per byte, taken separately: the
    bottleneck every algorithm's critical path crosses on the symmetric presets) and its
    ``gamma_s_per_byte``.  On :func:`topology.flat` the two methods agree (the simulator's
    tests check it).

* Between two sizes of the sweep each candidate's time is interpolated linearly in bytes;
  the choice is the candidate with the least interpolated time, so the table's ranges end
  at the exact crossover sizes.  Beyond 8 GiB the times are extrapolated from the last two
  sizes and the choice stays the one at 8 GiB.

Examples
--------
>>> import topology
>>> flat = topology.flat(64, alpha=5e-6, beta=1e-10)
>>> select("allreduce", 1024, flat).algorithm, select("allreduce", 1 << 30, flat).algorithm
('rhd', 'tree')

(On :func:`topology.flat` a rank sends to several peers at full bandwidth at once, so the
segmented double binary tree beats the ring on large vectors; on machines with one link
per rank, e.g. :func:`topology.dgx_h100` with 6 ranks, the ring wins them.)
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from collectives.build import build_schedule
from collectives.schedule import COLLECTIVES

from .cost import cost
from .engine import simulate

__all__ = ["SIZES", "candidates", "TREE_SEGMENTS", "PIPELINE_SEGMENTS", "METHODS",
           "SIMULATE_MAX_RANKS", "Candidate", "Choice", "Range", "TuningTable", "select",
           "tuning_table", "measured_table", "effective_model", "clear_cache"]

#: the size sweep in bytes: powers of two from 1 B to 8 GiB and 1.5 times each in between
SIZES: tuple[int, ...] = tuple(sorted({1 << k for k in range(34)}
                                      | {3 << (k - 1) for k in range(1, 33)}))

#: segments per half-vector of the double binary tree tried by the tables
TREE_SEGMENTS: tuple[int, ...] = (1, 4, 16)
#: segments of the chunked pipeline tried by the tables: of the whole vector for
#: AllReduce, of each rank's block for ReduceScatter and AllGather
PIPELINE_SEGMENTS: dict[str, tuple[int, ...]] = {
    "allreduce": (1, 4, 16, 64), "reduce_scatter": (1, 2, 4, 8), "allgather": (1, 2, 4, 8)}

Params = tuple[tuple[str, Any], ...]


def candidates(collective: str) -> tuple[tuple[str, Params], ...]:
    """Every candidate of ``collective`` as ``(algorithm, params)``, in tie-breaking order.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective (a key of :data:`PIPELINE_SEGMENTS`).

    Returns
    -------
    tuple of (str, Params)
        Ring, rhd, tree at each of :data:`TREE_SEGMENTS`, then pipeline at each of
        ``PIPELINE_SEGMENTS[collective]``.

    Examples
    --------
    >>> [a for a, _ in candidates("allreduce")]
    ['ring', 'rhd', 'tree', 'tree', 'tree', 'pipeline', 'pipeline', 'pipeline', 'pipeline']
    """
    return (("ring", ()), ("rhd", ()),
            *(("tree", (("segments", s),)) for s in TREE_SEGMENTS),
            *(("pipeline", (("segments", s),)) for s in PIPELINE_SEGMENTS[collective]))


#: how predictions are made; ``auto`` applies the rule of the module docstring
METHODS: tuple[str, ...] = ("auto", "simulate", "closed_form")

#: largest rank count whose tables ``method="auto"`` simulates (8: one DGX node; a table
#: of 8 ranks simulates in 0.2-0.5 s, see ``benchmarks/bench_select.py``)
SIMULATE_MAX_RANKS = 8

#: linear read-off starts once every message carries about this many elements
LINEAR_MIN_ELEMENTS = 64
#: relative tolerance of the linear read-off and of its check at the largest size
LINEAR_RTOL = 1e-4


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate's prediction: ``algorithm`` with ``params`` takes ``predicted_s``."""

    algorithm: str
    params: Params
    predicted_s: float

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
        ``ring``, ``tree``, ``rhd`` or ``pipeline``.
    params : tuple of (str, value)
        Its tuning parameters for :func:`collectives.build_schedule` (``dict(params)``).
    predicted_s : float
        Its predicted time, seconds.
    candidates : tuple of Candidate
        Every candidate's predicted time, in :func:`candidates` order.
    """

    algorithm: str
    params: Params
    predicted_s: float
    candidates: tuple[Candidate, ...]

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", [r.min_bytes for r in self.ranges])

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
        sizes, times = self.sizes, self.times
        if nbytes <= sizes[0]:
            return list(times[0])
        i = min(bisect_right(sizes, nbytes) - 1, len(sizes) - 2)
        w = (nbytes - sizes[i]) / (sizes[i + 1] - sizes[i])  # > 1 past the sweep: extrapolated
        return [a + (b - a) * w for a, b in zip(times[i], times[i + 1])]

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
        candidates = tuple(Candidate(a, p, t) for (a, p), t in zip(self.candidates, predicted))
        algorithm, params = self.candidates[chosen]
        return Choice(algorithm, params, predicted[chosen], candidates)

    def crossovers(self) -> list[tuple[int, str, str]]:
        """``(size, from_label, to_label)`` wherever the choice changes."""
        return [(b.min_bytes, _label(*self.candidates[a.index]), _label(*self.candidates[b.index]))
                for a, b in zip(self.ranges, self.ranges[1:])]

    def rows(self) -> Iterator[tuple[int, int, str, float]]:
        """``(size, best index, best label, best time)`` at every size of the sweep."""
        for size, times in zip(self.sizes, self.times):
            best = _argmin(times)
            yield size, best, _label(*self.candidates[best]), times[best]


def _label(algorithm: str, params: Params) -> str:
    inner = ",".join(f"{k}={v}" for k, v in params)
    return f"{algorithm}({inner})" if inner else algorithm


def _argmin(times: tuple[float, ...] | list[float]) -> int:
    """Index of the least time; the earliest candidate wins a tie."""
    return min(range(len(times)), key=times.__getitem__)


def effective_model(topology: Any, nranks: int) -> tuple[float, float, float]:
    """``(alpha, beta, gamma)`` of the closed forms on ``topology``'s first ``nranks`` ranks.

    The largest latency and the largest seconds per byte over the routes from rank 0 (one
    search plus one route per rank), and the topology's ``gamma_s_per_byte``.

    Parameters
    ----------
    topology : Topology
        The model.
    nranks : int
        Ranks used, from rank 0; below 2, alpha and beta are 0.

    Returns
    -------
    tuple[float, float, float]
        Seconds, seconds per byte, seconds per byte reduced.
    """
    if nranks < 2:
        return 0.0, 0.0, float(topology.gamma_s_per_byte)
    alpha = max(latency for _, latency in topology.costs(0)[1:nranks])
    beta = max(topology.beta(0, r) for r in range(1, nranks))
    return alpha, beta, float(topology.gamma_s_per_byte)


def _closed_form(collective: str, nranks: int, dtype_size: int, model: tuple[float, ...],
                 algorithm: str, params: Params) -> list[float]:
    alpha, beta, gamma = model
    return [cost(collective, algorithm, nranks, n - n % dtype_size, alpha, beta, gamma,
                 dtype_size, **dict(params)) for n in SIZES]


def _simulated(collective: str, nranks: int, dtype_size: int, topology: Any,
               algorithm: str, params: Params) -> list[float]:
    """Simulated times over :data:`SIZES`, the linear tail read off and checked."""
    def run(n: int) -> float:
        schedule = build_schedule(collective, algorithm, nranks, n // dtype_size, **dict(params))
        return simulate(schedule, topology, dtype_size, trace=False).time_s

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
    return times + [run(n) for n in SIZES[known:-1]] + [last]


def _pieces(collective: str, algorithm: str, nranks: int, params: Params) -> int:
    """Into how many messages' worth ``algorithm`` cuts the vector (blocks or segments)."""
    segments = dict(params).get("segments", 1)
    if algorithm == "tree":
        return 2 * segments
    if algorithm == "pipeline":
        return segments * (1 if collective == "allreduce" else nranks)
    return nranks


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
                 method: str) -> TuningTable:
    if method == "auto":
        method = "simulate" if nranks <= SIMULATE_MAX_RANKS else "closed_form"
    tried = candidates(collective)
    if method == "simulate":
        columns = [_simulated(collective, nranks, dtype_size, topology, a, p) for a, p in tried]
    else:
        model = effective_model(topology, nranks)
        columns = [_closed_form(collective, nranks, dtype_size, model, a, p) for a, p in tried]
    times = [list(row) for row in zip(*columns)]
    return TuningTable(collective, topology.name, nranks, dtype_size, method, tried, SIZES,
                       tuple(tuple(row) for row in times), _ranges(SIZES, times))


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


def _check(collective: Any, topology: Any, nranks: Any, dtype_size: Any, method: Any) -> int:
    if collective not in COLLECTIVES:
        raise ValueError(f"collective={collective!r} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    if not hasattr(topology, "placement") or not hasattr(topology, "gamma_s_per_byte"):
        raise TypeError(f"topology={topology!r} is not allowed; pass a topology.Topology")
    nranks = topology.nranks if nranks is None else nranks
    if isinstance(nranks, bool) or not isinstance(nranks, int) \
            or not 1 <= nranks <= topology.nranks:
        raise ValueError(f"nranks={nranks!r} is not allowed; it must be an int in "
                         f"[1, {topology.nranks}] (the ranks topology {topology.name!r} places)")
    if isinstance(dtype_size, bool) or not isinstance(dtype_size, int) or dtype_size < 1:
        raise ValueError(f"dtype_size={dtype_size!r} is not allowed; it must be an int >= 1")
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not supported; choose one of {list(METHODS)}")
    return nranks


def tuning_table(collective: str, topology: Any, nranks: int | None = None,
                 dtype_size: int = 4, method: str = "auto") -> TuningTable:
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
    key = (topology, collective, nranks, dtype_size, method)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = _build_table(collective, topology, nranks, dtype_size, method)
    return table


def select(collective: str, nbytes: int, topology: Any, nranks: int | None = None,
           dtype_size: int = 4, *, method: str = "auto") -> Choice:
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
    >>> choice.label, round(choice.predicted_s, 3), len(choice.candidates)
    ('rhd', 0.805, 9)
    """
    try:
        table = _TABLES.get((topology, collective,
                             topology.nranks if nranks is None else nranks, dtype_size, method))
    except (AttributeError, TypeError):  # not a topology, or unhashable: checked below
        table = None
    if table is None:
        table = tuning_table(collective, topology, nranks, dtype_size, method)
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"nbytes={nbytes!r} is not allowed; it must be an int >= 0")
    return table.choice(nbytes)
