"""Export tuning tables to the files NCCL's and Open MPI's tuners read.

NCCL example tuner plugin (NCCL's ``plugins/tuner/example``, ``ext-tuner/example`` before
2.29; ``NCCL_TUNER_PLUGIN=libnccl-tuner-example.so``, ``NCCL_TUNER_CONFIG_FILE=...``).
NCCL 2.27.5 through 2.30 read the file (the plugin of 2.27.3 and earlier reads none); one
line per size range, ``coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks,
numPipeOps,regBuff`` (the last two optional; ``-1`` matches any).  The plugin's parsing
rules (plugin.c ``loadConfig``), which :func:`read_nccl_csv` applies: a line starting with
``#`` in its first column, or empty, is skipped; fields are split at commas and trimmed
of spaces and tabs; a line of 8 to 10 fields is a configuration, others are ignored; an
unknown collective, algorithm or protocol silently becomes AllReduce, Ring, Simple; a
line is read in pieces of at most 255 characters (``MAX_LINE_LENGTH`` 256), so a longer
one is read as two.  The first line that matches a call (collective, size in
``[min_bytes, max_bytes]``, nNodes, nRanks, numPipeOps, regBuff) sets that (algorithm,
protocol)'s cost to 0, so NCCL runs it, unless NCCL cannot run it there (its cost
``NCCL_ALGO_PROTO_IGNORE``: the plugin tries the next line).

What the file says (:func:`to_nccl_csv`, :func:`nccl_ranges`):

* Only NCCL's algorithms, with NCCL's meaning: ``ring`` is our ring (the algorithms
  whose ``nccl`` names one, :mod:`collectives.registry`); ``tree``,
  ``nvls``, ``nvls_tree`` and ``pat`` are NCCL's own (:mod:`simulator.nccl_algorithms`:
  ``tree`` is a chain in each node and a double binary tree over nodes, which none of
  our tree, rhd, pipeline or hier is, so none of them is ever written as ``tree``).
* Per (collective, size, nNodes, nRanks) of the machine: the (algorithm, protocol) our
  model predicts fastest among them, written only where it is predicted at least as
  fast as what NCCL's own model would choose there (:func:`simulator.nccl_tuner.nccl_choice`,
  tuning.cc), that choice priced in our model too.  The comparison runs on a grid (the
  sizes of :data:`simulator.selection.SIZES` from one element, eight steps between
  each two, and powers of two up to 1 TiB): a pair is written over a step of the grid
  only if it is at least as fast at both of its ends, and the step is cut where NCCL's
  choice changes (bisection).  Where no pair of ours is, or where NCCL's choice is one
  our model cannot price, NCCL's own choice is kept.
* ``channels``: NCCL's own channel count for the written pair at each size
  (:func:`simulator.nccl_tuner.nccl_channels`, enqueue.cc), ranges split where it
  changes.  Never ``-1``: the plugin starts every call at one channel
  (``*nChannels = 1`` in ``pluginGetCollInfo``, 2.27.5-2.30) and keeps that where a line
  says ``-1`` or no line matches, and NCCL takes a plugin's non-zero count as the call's
  channels (enqueue.cc ``ncclGetAlgoInfo``), its README's "-1 keeps NCCL's default"
  notwithstanding.  For the same reason the file writes NCCL's own choice, with NCCL's
  channels, where ours is not faster (``keep_nccl=True``, the default) and covers every
  size of each collective it names; a collective it does not name runs on one channel
  under this plugin.  Broadcast and Reduce (NCCL runs them on Ring only) are named
  ``ring``, priced in our model as our chain on one channel (NCCL's ring opened at the
  root): where NCCL's own choice is faster the line keeps it, protocol and channels.
* ``numPipeOps`` and ``regBuff``: ``-1`` (any): the model prices one collective per
  call on unregistered buffers.

Open MPI coll/tuned dynamic rules (``--mca coll_tuned_use_dynamic_rules 1 --mca
coll_tuned_dynamic_rules_filename FILE``; format read by ``ompi/mca/coll/tuned/
coll_tuned_dynamic_file.c``, the "classic" reader): whitespace-separated integers, ``#``
comments::

    <number of collectives>
    <collective id> <number of comm sizes>
    <comm size> <number of message sizes>
    <message size> <algorithm> <faninout> <segsize>     (first message size must be 0)

Collective ids are Open MPI's ``COLLTYPE`` (``ompi/mca/coll/base/coll_base_functions.h``):
ALLGATHER 0, ALLREDUCE 2, ALLTOALL 3, BCAST 7, REDUCE 11, REDUCESCATTERBLOCK 13 (our
ReduceScatter is ``MPI_Reduce_scatter_block``).  Message sizes are Open MPI's ``dsize *
count`` of the call: the whole vector for Allreduce, Bcast and Reduce, one rank's block for
Reduce_scatter_block, and ``dsize * count * comm size`` (the whole gathered vector, every
rank's whole send buffer) for Allgather and Alltoall (``coll_tuned_*_decision_dynamic``),
so ReduceScatter ranges are divided by ``nranks``.  Broadcast, Reduce and AllToAll take
the ids their algorithms' registry entries give (``coll_tuned_bcast_decision.c``: 3
pipeline, 6 binomial, 9 scatter_allgather_ring; ``coll_tuned_reduce_decision.c``: 3
pipeline, 5 binomial, 7 rabenseifner; ``coll_tuned_alltoall_decision.c``: 1 linear, 2
pairwise, 3 modified_bruck), with segsize 0 (the chain's segments are not written).
Algorithm ids: each algorithm's ``ompi`` (:mod:`collectives.registry`), from
``coll_tuned_allreduce_decision.c``, ``coll_tuned_allgather_decision.c`` and
``coll_tuned_reduce_scatter_block_decision.c``; today:

=============== ====================== ======================= =============================
ours            allreduce              allgather               reduce_scatter_block
=============== ====================== ======================= =============================
ring            4 ring                 4 ring                  0 (none: fixed decision)
rhd             6 rabenseifner         3 recursive_doubling    2 recursive_doubling
rhd, doubling   3 recursive_doubling   (AllReduce only)        (AllReduce only)
tree            2 nonoverlapping       0 (none)                0 (none)
pipeline        2 nonoverlapping       0 (none)                0 (none)
hier, native    0 (none)               0 (none)                0 (none)
=============== ====================== ======================= =============================

``nonoverlapping`` is a reduce then a broadcast, each on coll/tuned's segmented trees or
chains; 0 ("ignore") hands the range back to Open MPI's fixed decision.  One comm-size
rule is written per table (in the classic reader a single rule covers every comm size).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from reprlib import repr as brief
from typing import Any, Iterable

import numpy as np

from collectives.registry import FIXED_DECISION, algorithms
from collectives.registry import algorithm as registered
from topology.channels import nics_per_node
from topology.order import node_groups

from . import nccl_algorithms
from .gpu import protocols as gpu_protocols
from .analytic import price
from .nccl_algorithms import NCCL_NAMES
from .nccl_tuner import nccl_channels, nccl_choice, tuner_kind
from .selection import MAX_BYTES, SIZES, TuningTable

__all__ = ["NCCL_COLL", "NCCL_FIELDS", "NcclRange", "nccl_ranges", "nccl_pair_times", "ring_of",
           "to_nccl_csv",
           "read_nccl_csv", "OMPI_COLL_ID", "ompi_algorithm",
           "to_ompi_rules", "read_ompi_rules"]

#: our collective -> the NCCL tuner CSV's ``coll``
NCCL_COLL: dict[str, str] = {"allreduce": "allreduce", "allgather": "allgather",
                             "reduce_scatter": "reducescatter", "broadcast": "broadcast",
                             "reduce": "reduce"}
#: what the plugin parses (plugin.c parseCollType, parseAlgorithm, parseProtocol)
NCCL_PLUGIN_COLLECTIVES = ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")
NCCL_PLUGIN_ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls",
                          "nvls_tree", "pat")
NCCL_PROTOCOLS = ("ll", "ll128", "simple")
NCCL_FIELDS = ("coll", "min_bytes", "max_bytes", "algo", "proto", "channels", "nNodes",
               "nRanks", "numPipeOps", "regBuff")
#: plugin.c MAX_LINE_LENGTH 256: ``fgets`` reads at most 255 characters of a line
NCCL_LINE_MAX = 255
#: sub-sizes per step of :data:`simulator.selection.SIZES` at which the export compares,
#: and the sizes past its 8 GiB up to which it does
_STEPS_BETWEEN = 8
_BEYOND = tuple(1 << k for k in range(34, 41))
#: evenly spaced sizes inside each line of ours at which it is checked again against
#: NCCL's own choice: a curve may bump between the grid's sizes (a chain's segments
#: change with the size: `dgx-a100` at 128 nodes, Broadcast, ring LL 4% slower than
#: LL128 at 41.2 MB, though faster at the grid's 39.8 and 41.9 MB, as the DES has it)
_CHECKS_INSIDE = 3

#: our collective -> Open MPI COLLTYPE id (coll_base_functions.h)
OMPI_COLL_ID: dict[str, int] = {"allgather": 0, "allreduce": 2, "alltoall": 3, "broadcast": 7,
                                "reduce": 11, "reduce_scatter": 13}


def _ompi(collective: str, algorithm: str, params: Any = ()) -> tuple[int, str]:
    """Open MPI's id and name of a candidate (``native``: Open MPI's fixed decision)."""
    if algorithm == "native":  # an executor choice, not an algorithm of the registry
        return FIXED_DECISION
    return registered(algorithm).ompi(collective, dict(params))


def ompi_algorithm(collective: str, algorithm: str, params: Any = ()) -> int:
    """The Open MPI coll/tuned algorithm id of a candidate (0: Open MPI's fixed decision).

    Parameters
    ----------
    collective : str
        The collective.
    algorithm : str
        A registered algorithm (its ``ompi``), or ``native``.
    params : dict or tuple of (str, value), optional
        Its parameters: rhd with ``doubling=True`` is Open MPI's recursive doubling.

    Returns
    -------
    int

    Examples
    --------
    >>> ompi_algorithm("allreduce", "rhd"), ompi_algorithm("allreduce", "rhd", {"doubling": True})
    (6, 3)
    >>> ompi_algorithm("broadcast", "scatter_allgather"), ompi_algorithm("alltoall", "pairwise")
    (9, 2)
    """
    return _ompi(collective, algorithm, params)[0]


@dataclass(frozen=True)
class NcclRange:
    """One line of the NCCL tuner CSV.

    Attributes
    ----------
    collective : str
        Ours (a key of :data:`NCCL_COLL`).
    min_bytes, max_bytes : int
        The sizes, inclusive.
    algorithm, protocol : str
        NCCL's names (``"nvls_tree"``, ``"ll128"``).
    channels : int
        NCCL's own channel count for them at these sizes.
    ours : bool
        True where our model's choice, at least as fast as NCCL's own and not it; False
        where NCCL's own choice is kept.
    """

    collective: str
    min_bytes: int
    max_bytes: int
    algorithm: str
    protocol: str
    channels: int
    ours: bool


def _grid(dtype_size: int) -> list[int]:
    """The sizes compared: :data:`SIZES` from one element, :data:`_STEPS_BETWEEN` steps
    between each two, and :data:`_BEYOND`."""
    sizes = [n for n in SIZES if n >= dtype_size] + list(_BEYOND)
    grid = {n for a, b in zip(sizes, sizes[1:])
            for n in range(a, b, max(1, (b - a) // _STEPS_BETWEEN))}
    return sorted(grid | {sizes[-1]})


def nccl_pair_times(collective: str, topology: Any, sizes: list[int], dtype_size: int = 4
                    ) -> dict[tuple[str, str], np.ndarray]:
    """Our model's seconds at ``sizes`` of every (NCCL algorithm, protocol) it prices.

    The ring (one channel per NIC, as NCCL's rings cross every NIC; for Broadcast and
    Reduce the chain, on one channel) and :mod:`simulator.nccl_algorithms`, on all of
    ``topology``'s ranks.

    Parameters
    ----------
    collective : str
        A key of :data:`NCCL_COLL`.
    topology : topology.Topology
        A machine with a GPU model.
    sizes : list of int
        Bytes of the working buffer.
    dtype_size : int, optional
        Bytes per element (default 4).

    Returns
    -------
    dict
        ``{(NCCL's algorithm, protocol): seconds per size}``, e.g. ``("nvls", "Simple")``.
    """
    channels = max(1, nics_per_node(topology))
    out = {(entry.nccl, p): np.asarray(price(collective, entry.name, topology, sizes,
                                             topology.nranks, dtype_size, p,
                                             **({"channels": channels} if entry.channeled
                                                else {})))
           for entry in algorithms(composed=False, collective=collective)
           if entry.nccl is not None for p in gpu_protocols(topology) if p is not None}
    for algorithm in nccl_algorithms.ALGORITHMS:
        for p in nccl_algorithms.nccl_protocols(algorithm, topology):
            if nccl_algorithms.available(collective, algorithm, topology, protocol=p):
                out[(NCCL_NAMES[algorithm], p)] = nccl_algorithms.nccl_costs(
                    collective, algorithm, topology, sizes, p)
    return out


def ring_of(collective: str) -> str:
    """Our algorithm that is NCCL's Ring for ``collective`` (its registry entry's ``nccl``):
    the ring, or for Broadcast and Reduce the chain (NCCL's ring opened at the root).

    Examples
    --------
    >>> ring_of("allreduce"), ring_of("broadcast")
    ('ring', 'chain')
    """
    return next(a.name for a in algorithms(composed=False, collective=collective)
                if a.nccl == "ring")


def _first_change(value: Any, low: int, high: int) -> int:
    """The least size in ``(low, high]`` where ``value`` differs from ``value(low)``
    (``value(high)`` does), by bisection."""
    start = value(low)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if value(middle) == start else (low, middle)
    return high


def _pieces(value: Any, low: int, high: int) -> list[tuple[int, int, Any]]:
    """``[low, high]`` cut where ``value`` changes: ``(first, last, value)``."""
    out = []
    while value(low) != value(high):
        cut = _first_change(value, low, high)
        out.append((low, cut - 1, value(low)))
        low = cut
    return out + [(low, high, value(low))]


def nccl_ranges(collective: str, topology: Any, dtype_size: int = 4,
                keep_nccl: bool = True) -> tuple[NcclRange, ...]:
    """The NCCL tuner CSV's lines of ``collective`` on all of ``topology``'s ranks.

    Parameters
    ----------
    collective : str
        A key of :data:`NCCL_COLL`.
    topology : topology.Topology
        A machine whose GPU generation NCCL's model knows
        (:func:`simulator.nccl_tuner.tuner_kind`).
    dtype_size : int, optional
        Bytes per element (default 4): sizes below one element are not compared.
    keep_nccl : bool, optional
        Write NCCL's own choice where ours is not faster (default True; see the module
        docstring), or leave those ranges out.

    Returns
    -------
    tuple of NcclRange
        From 0 to :data:`MAX_BYTES` with ``keep_nccl``; consecutive, not overlapping.

    Raises
    ------
    ValueError
        For a collective NCCL's model here does not rank, or a machine it does not know.

    Examples
    --------
    >>> import topology
    >>> first = nccl_ranges("allreduce", topology.dgx_h100())[0]
    >>> first.min_bytes, first.algorithm, first.protocol, first.channels, first.ours
    (0, 'ring', 'll', 1, False)
    """
    kind = tuner_kind(topology)
    if collective not in NCCL_COLL or kind is None:
        raise ValueError(f"collective={brief(collective)} on {brief(topology)} is not "
                         f"allowed; give one of {list(NCCL_COLL)} on a machine with the GPU "
                         f"model of a DGX preset (NCCL's own model is known only there)")
    ranks, nodes = topology.nranks, len(node_groups(topology))
    grid = _grid(dtype_size)
    times = nccl_pair_times(collective, topology, grid, dtype_size)
    at = {n: i for i, n in enumerate(grid)}

    def nccl(n: int) -> tuple[str, str]:
        return nccl_choice(kind, n, ranks, nodes, collective=collective)

    chosen = []
    for i, (low, nxt) in enumerate(zip(grid, grid[1:] + [MAX_BYTES])):
        high = nxt - 1 if i + 1 < len(grid) else MAX_BYTES
        for first, last, theirs in _pieces(nccl, low, high):
            pair, ours = _chosen(times, theirs, at[low], min(i + 1, len(grid) - 1))
            chosen.append((first, last, pair, ours, theirs))
    lines: list[NcclRange] = []
    for first, last, pair, ours, theirs in _checked_inside(collective, topology, chosen,
                                                           dtype_size):
        if ours or keep_nccl:
            lines += _with_channels(collective, kind, pair, ours, first, last, ranks, nodes)
    if lines and lines[0].min_bytes == grid[0]:  # sizes below one element go with it
        lines[0] = dataclasses.replace(lines[0], min_bytes=0)
    return tuple(_merged(lines))


def _chosen(times: dict[tuple[str, str], np.ndarray], theirs: tuple[str, str], i: int,
            j: int) -> tuple[tuple[str, str], bool]:
    """Ours where some pair is at least as fast as NCCL's ``theirs`` at sizes ``i`` and
    ``j`` of the grid (the fastest at ``i`` of those), else ``theirs``."""
    if theirs not in times:
        return theirs, False
    bound = times[theirs]
    fine = [pair for pair, t in times.items() if t[i] <= bound[i] and t[j] <= bound[j]]
    best = min(fine, key=lambda pair: (times[pair][i], pair != theirs))
    return (best, True) if best != theirs else (theirs, False)


def _inside(first: int, last: int) -> list[int]:
    """:data:`_CHECKS_INSIDE` sizes evenly spaced strictly inside ``[first, last]``
    (fewer where it holds fewer), at most :data:`_BEYOND`'s last."""
    last = min(last, _BEYOND[-1])
    return sorted({int(n) for n in np.linspace(first, last, _CHECKS_INSIDE + 2)[1:-1]}
                  - {first, last})


def _checked_inside(collective: str, topology: Any, chosen: list[Any], dtype_size: int
                    ) -> list[Any]:
    """``chosen`` (per line: its first and last size, the pair, whether it is ours, and
    NCCL's own), each of ours that is slower than NCCL's own at one of its sizes
    :func:`_inside` given back to NCCL's own."""
    checks = {n for first, last, _, ours, _ in chosen if ours for n in _inside(first, last)}
    if not checks:
        return chosen
    sizes = sorted(checks)
    times = nccl_pair_times(collective, topology, sizes, dtype_size)
    at = {n: i for i, n in enumerate(sizes)}
    out = []
    for first, last, pair, ours, theirs in chosen:
        inside = [at[n] for n in _inside(first, last)] if ours else []
        if inside and np.any(times[pair][inside] > times[theirs][inside]):
            pair, ours = theirs, False
        out.append((first, last, pair, ours, theirs))
    return out


def _with_channels(collective: str, kind: str, pair: tuple[str, str], ours: bool,
                   low: int, high: int, ranks: int, nodes: int) -> list[NcclRange]:
    """Lines of ``pair`` over ``[low, high]``, cut where NCCL's channel count changes."""
    def count(n: int) -> int:
        return nccl_channels(kind, pair[0], pair[1], n, ranks, nodes)

    return [NcclRange(collective, a, b, pair[0], pair[1].lower(), c, ours)
            for a, b, c in _pieces(count, low, high)]


def _merged(lines: list[NcclRange]) -> list[NcclRange]:
    """Consecutive lines of one algorithm, protocol, channel count and origin as one."""
    out: list[NcclRange] = []
    for line in lines:
        last = out[-1] if out else None
        if last is not None and (last.algorithm, last.protocol, last.channels, last.ours) \
                == (line.algorithm, line.protocol, line.channels, line.ours) \
                and last.max_bytes + 1 == line.min_bytes:
            out[-1] = dataclasses.replace(last, max_bytes=line.max_bytes)
        else:
            out.append(line)
    return out


def to_nccl_csv(topology: Any, collectives: Iterable[str] = tuple(NCCL_COLL),
                dtype_size: int = 4, keep_nccl: bool = True) -> str:
    """The NCCL example tuner plugin's file for ``topology`` (see the module docstring).

    Parameters
    ----------
    topology : topology.Topology
        The machine, all of its ranks.
    collectives : iterable of str, optional
        Keys of :data:`NCCL_COLL` (default all three).
    dtype_size : int, optional
        Bytes per element (default 4).
    keep_nccl : bool, optional
        As :func:`nccl_ranges`.

    Returns
    -------
    str
        Comment lines naming the machine and each line's origin, then the lines; only
        comments on a machine whose NCCL model is not known here.
    """
    collectives = list(collectives)
    head = [f"# collsim: NCCL example tuner plugin file (NCCL 2.27.5-2.30) for "
            f"{topology.name}, {topology.nranks} ranks",
            "# format: " + ",".join(NCCL_FIELDS),
            "# ours: our model's choice, at least as fast as NCCL's own; kept: NCCL's own"]
    if tuner_kind(topology) is None:
        return "\n".join(head + ["# nothing written: NCCL's own model is known only on the "
                                 "GPU models of the DGX presets"]) + "\n"
    nodes = len(node_groups(topology))
    lines = list(head)
    for collective in collectives:
        ranges = nccl_ranges(collective, topology, dtype_size, keep_nccl)
        lines.append(f"# {collective}: {sum(r.ours for r in ranges)} of {len(ranges)} "
                     f"ranges ours")
        origin = None
        for r in ranges:
            if r.ours != origin:
                origin = r.ours
                lines.append("# ours" if r.ours else "# kept")
            lines.append(f"{NCCL_COLL[r.collective]},{r.min_bytes},{r.max_bytes},"
                         f"{r.algorithm},{r.protocol},{r.channels},{nodes},{topology.nranks},"
                         "-1,-1")
    return "\n".join(lines) + "\n"


def read_nccl_csv(text: str) -> list[dict[str, object]]:
    """Parse a tuner file as the example plugin does, refusing what it would misread.

    Parameters
    ----------
    text : str
        The file's contents.

    Returns
    -------
    list of dict
        Per configuration line, :data:`NCCL_FIELDS` by name; the numbers as int
        (``numPipeOps`` and ``regBuff`` -1 where the line leaves them out).

    Raises
    ------
    ValueError
        For a line the plugin would read in pieces (longer than :data:`NCCL_LINE_MAX`),
        a line of fewer than 8 or more than 10 fields, a collective, algorithm or
        protocol the plugin does not parse (it would run AllReduce, Ring or Simple
        instead), or a number that is not an integer.
    """
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) > NCCL_LINE_MAX:
            raise ValueError(f"line {number} has {len(line)} characters; the plugin reads "
                             f"at most {NCCL_LINE_MAX} of a line and the rest as another")
        if not line or line.startswith("#"):
            continue
        # strtok: runs of commas are one separator
        fields = [f.strip(" \t") for f in line.split(",") if f]
        if not 8 <= len(fields) <= len(NCCL_FIELDS):
            raise ValueError(f"line {number} {brief(line)} has {len(fields)} fields; the "
                             f"plugin reads 8 to 10 (and ignores a line of fewer): "
                             f"{','.join(NCCL_FIELDS)}")
        row: dict[str, object] = dict(zip(NCCL_FIELDS, fields))
        row.setdefault("numPipeOps", "-1")
        row.setdefault("regBuff", "-1")
        for key, allowed in (("coll", NCCL_PLUGIN_COLLECTIVES), ("algo", NCCL_PLUGIN_ALGORITHMS),
                             ("proto", NCCL_PROTOCOLS)):
            if row[key] not in allowed:
                raise ValueError(f"line {number}: {key}={brief(row[key])} is not allowed; "
                                 f"the plugin parses {list(allowed)}")
        for key in NCCL_FIELDS[1:3] + NCCL_FIELDS[5:]:
            try:
                row[key] = int(str(row[key]))
            except ValueError:
                raise ValueError(f"line {number}: {key}={brief(row[key])} is not an "
                                 "integer") from None
        rows.append(row)
    return rows


def _ompi_size(table: TuningTable, nbytes: int) -> int:
    """The first Open MPI rule size (a block for ReduceScatter) whose working buffer is at
    least ``nbytes``: a table row starting at ``nbytes`` governs rule sizes from there on."""
    return -(-nbytes // table.nranks) if table.collective == "reduce_scatter" else nbytes


def to_ompi_rules(tables: Iterable[TuningTable]) -> str:
    """Write ``tables`` as an Open MPI coll/tuned dynamic rules file (classic format).

    At most one table per collective (the file keys rules by collective, then comm size).

    Parameters
    ----------
    tables : iterable of TuningTable
        The tables, one per collective.

    Returns
    -------
    str
        The file's contents.

    Raises
    ------
    ValueError
        For two tables of the same collective.
    """
    tables = list(tables)
    seen = [t.collective for t in tables]
    if len(set(seen)) != len(seen):
        raise ValueError(f"tables={seen} is not allowed; give at most one table per collective")
    lines = ["# collsim tuning table: Open MPI coll/tuned dynamic rules (classic format)",
             f"{len(tables)}  # collectives"]
    for table in tables:
        rules: list[tuple[int, tuple[int, str]]] = []
        for r in table.ranges:
            algorithm = _ompi(table.collective, *table.candidates[r.index])
            start = 0 if r.min_bytes == 0 else _ompi_size(table, r.min_bytes)
            if rules and rules[-1][0] == start:
                rules.pop()
            if not rules or rules[-1][1][0] != algorithm[0]:
                rules.append((start, algorithm))
        lines += [f"{OMPI_COLL_ID[table.collective]}  # {table.collective} on "
                  f"{table.topology_name} ({table.method})",
                  "1  # comm sizes",
                  f"{table.nranks} {len(rules)}  # comm size, message sizes"]
        lines += [f"{start} {number} 0 0  # from {start} B: {name}"
                  for start, (number, name) in rules]
    return "\n".join(lines) + "\n"


def read_ompi_rules(text: str) -> dict[int, dict[int, list[tuple[int, int, int, int]]]]:
    """Parse a classic rules file, checking what Open MPI's reader checks.

    Parameters
    ----------
    text : str
        The file's contents (``#`` comments allowed; an optional
        ``rule-file-version-N`` word first).

    Returns
    -------
    dict
        ``{collective id: {comm size: [(msg size, algorithm, faninout, segsize), ...]}}``.

    Raises
    ------
    ValueError
        For a truncated file, a negative number, or a first message size other than 0.
    """
    words = [w for line in text.splitlines() for w in line.split("#", 1)[0].split()]
    if words and words[0].startswith("rule-file-version-"):
        words = words[1:]
    numbers = iter(words)

    def take(what: str) -> int:
        try:
            value = int(next(numbers))
        except StopIteration:
            raise ValueError(f"the rules file ends where {what} should be") from None
        if value < 0:
            raise ValueError(f"{what}={value} is not allowed; it must be >= 0")
        return value

    rules: dict[int, dict[int, list[tuple[int, int, int, int]]]] = {}
    for _ in range(take("number of collectives")):
        per_comm = rules.setdefault(take("collective id"), {})
        for _ in range(take("number of comm sizes")):
            comm_size = take("comm size")
            entries = [tuple(take(w) for w in ("message size", "algorithm", "faninout",
                                                  "segsize"))
                       for _ in range(take("number of message sizes"))]
            if entries and entries[0][0] != 0:
                raise ValueError(f"comm size {comm_size}: the first message size is "
                                 f"{entries[0][0]}; Open MPI needs a rule from 0")
            per_comm[comm_size] = entries  # type: ignore[assignment]
    return rules

