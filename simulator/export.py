"""Export tuning tables to the files NCCL's and Open MPI's tuners read.

NCCL example tuner plugin (``NCCL_TUNER_PLUGIN=libnccl-tuner-example.so``,
``NCCL_TUNER_CONFIG_FILE=...``; source: NCCL ``plugins/tuner/example/plugin.c`` and its
README): a CSV, one line per size range,
``coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks``, ``#`` lines are comments.

* ``coll``: ``allreduce``, ``allgather``, ``reducescatter``;
* ``algo``: NCCL has ``ring`` and ``tree`` (trees for AllReduce only); our algorithms map as

  ======== ================ ============================================================
  ours     NCCL             why
  ======== ================ ============================================================
  ring     ring             the same ring
  tree     tree             NCCL's double binary tree (AllReduce only)
  rhd      tree             the log-depth, latency-bound family (AllReduce only)
  pipeline tree             NCCL's tree is a chain inside a node (AllReduce only)
  hier     tree             intra-node chain, inter-node tree: NCCL's tree is the
                            hierarchical one (AllReduce only)
  ======== ================ ============================================================

  For ReduceScatter and AllGather NCCL has no tree: ranges whose choice is not ``ring``
  are left out (NCCL then keeps its own choice there) and listed in a comment line, as
  are ranges of a measured table that choose ``native`` (the library's own);
* ``proto``: ``simple`` by default; ``model``: the protocol the table chose per size on a
  topology with a GPU model (:meth:`TuningTable.protocol_ranges`; ranges split where
  it changes, ``simple`` where the table has none);
* ``channels``: the chosen candidate's channel count where the table tried channel counts
  (:func:`simulator.selection.candidates`), else -1 (NCCL's default), unless given;
  ``nNodes`` as given (-1: any); ``nRanks`` the table's.

Open MPI coll/tuned dynamic rules (``--mca coll_tuned_use_dynamic_rules 1 --mca
coll_tuned_dynamic_rules_filename FILE``; format read by ``ompi/mca/coll/tuned/
coll_tuned_dynamic_file.c``, the "classic" reader): whitespace-separated integers, ``#``
comments::

    <number of collectives>
    <collective id> <number of comm sizes>
    <comm size> <number of message sizes>
    <message size> <algorithm> <faninout> <segsize>     (first message size must be 0)

Collective ids are Open MPI's ``COLLTYPE`` (``ompi/mca/coll/base/coll_base_functions.h``):
ALLGATHER 0, ALLREDUCE 2, REDUCESCATTERBLOCK 13 (our ReduceScatter is
``MPI_Reduce_scatter_block``).  Message sizes are Open MPI's ``dsize * count`` of the call:
the whole vector for Allreduce, one rank's block for Reduce_scatter_block, and
``dsize * count * comm size`` (the whole gathered vector) for Allgather
(``coll_tuned_*_decision_dynamic``), so ReduceScatter ranges are divided by ``nranks``.
Algorithm ids (``coll_tuned_allreduce_decision.c``, ``coll_tuned_allgather_decision.c``,
``coll_tuned_reduce_scatter_block_decision.c``):

=============== ====================== ======================= =============================
ours            allreduce              allgather               reduce_scatter_block
=============== ====================== ======================= =============================
ring            4 ring                 4 ring                  0 (none: fixed decision)
rhd             6 rabenseifner         3 recursive_doubling    2 recursive_doubling
rhd, doubling   3 recursive_doubling   (AllReduce only)        (AllReduce only)
tree            2 nonoverlapping       0 (none)                0 (none)
pipeline        2 nonoverlapping       0 (none)                0 (none)
native          0 (none)               0 (none)                0 (none)
=============== ====================== ======================= =============================

``nonoverlapping`` is a reduce then a broadcast, each on coll/tuned's segmented trees or
chains; 0 ("ignore") hands the range back to Open MPI's fixed decision.  One comm-size
rule is written per table (in the classic reader a single rule covers every comm size).
"""

from __future__ import annotations

from reprlib import repr as brief
from typing import Any, Iterable

from .selection import TuningTable

__all__ = ["NCCL_COLL", "NCCL_ALGO", "OMPI_COLL_ID", "OMPI_ALGORITHM", "ompi_algorithm",
           "to_nccl_csv",
           "read_nccl_csv", "to_ompi_rules", "read_ompi_rules"]

#: our collective -> the NCCL tuner CSV's ``coll``
NCCL_COLL: dict[str, str] = {"allreduce": "allreduce", "allgather": "allgather",
                             "reduce_scatter": "reducescatter"}
#: (collective, algorithm) -> NCCL algorithm; missing pairs are left out of the CSV
NCCL_ALGO: dict[tuple[str, str], str] = {
    ("allreduce", "ring"): "ring", ("allreduce", "tree"): "tree",
    ("allreduce", "rhd"): "tree", ("allreduce", "pipeline"): "tree",
    ("allreduce", "hier"): "tree",
    ("allgather", "ring"): "ring", ("reduce_scatter", "ring"): "ring"}
NCCL_PROTOCOLS = ("ll", "ll128", "simple")
_NCCL_HEADER = "coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks"

#: our collective -> Open MPI COLLTYPE id (coll_base_functions.h)
OMPI_COLL_ID: dict[str, int] = {"allgather": 0, "allreduce": 2, "reduce_scatter": 13}
#: (collective, algorithm) -> Open MPI coll/tuned algorithm id (0: fixed decision)
OMPI_ALGORITHM: dict[tuple[str, str], int] = {
    ("allreduce", "ring"): 4, ("allreduce", "rhd"): 6, ("allreduce", "tree"): 2,
    ("allreduce", "pipeline"): 2,
    ("allgather", "ring"): 4, ("allgather", "rhd"): 3, ("allgather", "tree"): 0,
    ("allgather", "pipeline"): 0,
    ("reduce_scatter", "ring"): 0, ("reduce_scatter", "rhd"): 2,
    ("reduce_scatter", "tree"): 0, ("reduce_scatter", "pipeline"): 0,
    ("allreduce", "hier"): 0, ("allgather", "hier"): 0, ("reduce_scatter", "hier"): 0,
    **{(collective, "native"): 0 for collective in ("allreduce", "allgather", "reduce_scatter")}}

#: Open MPI's allreduce id of rhd with ``doubling=True`` (recursive doubling)
OMPI_ALLREDUCE_DOUBLING = 3

#: Open MPI's names of the algorithm ids used above, per collective
OMPI_NAMES: dict[str, dict[int, str]] = {
    "allreduce": {0: "fixed decision", 2: "nonoverlapping", 3: "recursive_doubling", 4: "ring",
                  6: "rabenseifner"},
    "allgather": {0: "fixed decision", 3: "recursive_doubling", 4: "ring"},
    "reduce_scatter": {0: "fixed decision", 2: "recursive_doubling"}}


def _algorithm(table: TuningTable, index: int) -> str:
    return table.candidates[index][0]


def ompi_algorithm(collective: str, algorithm: str, params: Any = ()) -> int:
    """The Open MPI coll/tuned algorithm id of a candidate (0: Open MPI's fixed decision).

    Parameters
    ----------
    collective : str
        The collective.
    algorithm : str
        Ours (a key of :data:`OMPI_ALGORITHM` with ``collective``).
    params : dict or tuple of (str, value), optional
        Its parameters: rhd with ``doubling=True`` is Open MPI's recursive doubling.

    Returns
    -------
    int

    Examples
    --------
    >>> ompi_algorithm("allreduce", "rhd"), ompi_algorithm("allreduce", "rhd", {"doubling": True})
    (6, 3)
    """
    if (collective, algorithm) == ("allreduce", "rhd") and dict(params).get("doubling"):
        return OMPI_ALLREDUCE_DOUBLING
    return OMPI_ALGORITHM[(collective, algorithm)]


def _channels(table: TuningTable, index: int, channels: int | None) -> int:
    """The ``channels`` column of a range choosing candidate ``index``."""
    if channels is not None:
        return channels
    if not any("channels" in dict(params) for _, params in table.candidates):
        return -1
    return dict(table.candidates[index][1]).get("channels", 1)
def _pieces(table: TuningTable, proto: str) -> list[tuple[int, int, int, str]]:
    """``(min, max, candidate, NCCL protocol)``: the table's ranges with ``proto``, or
    split by the table's protocols for ``proto="model"``."""
    if proto != "model":
        return [(r.min_bytes, r.max_bytes, r.index, proto) for r in table.ranges]
    return [(low, high, index, (protocol or "simple").lower())
            for low, high, index, protocol in table.protocol_ranges()]


def to_nccl_csv(tables: Iterable[TuningTable], nnodes: int = -1, proto: str = "simple",
                channels: int | None = None) -> str:
    """Write ``tables`` as the NCCL example tuner plugin's CSV (see the module docstring).

    Parameters
    ----------
    tables : iterable of TuningTable
        One per collective (and rank count).
    nnodes : int
        The ``nNodes`` column: nodes the job spans, or -1 for any.
    proto : {"simple", "ll", "ll128", "model"}
        The protocol of every line, or ``"model"``: the table's choice per range.
    channels : int or None
        The ``channels`` column of every line (-1: NCCL's default); None (default): the
        chosen candidate's channel count where the table tried channel counts, else -1.

    Returns
    -------
    str
        The CSV text, with comment lines naming the source and the ranges left out.
    """
    if proto not in NCCL_PROTOCOLS + ("model",):
        raise ValueError(f"proto={brief(proto)} is not supported; choose one of "
                         f"{list(NCCL_PROTOCOLS) + ['model']}")
    lines = [f"# collsim tuning table; format: {_NCCL_HEADER}"]
    for table in tables:
        lines.append(f"# {table.collective} on {table.topology_name}, {table.nranks} ranks, "
                     f"{table.method}")
        merged: list[list] = []  # [min, max, nccl algorithm or None, ours, proto, channels]
        for low, high, index, protocol in _pieces(table, proto):
            algorithm = _algorithm(table, index)
            nccl = NCCL_ALGO.get((table.collective, algorithm))
            count = _channels(table, index, channels)
            if merged and nccl is not None and merged[-1][2] == nccl \
                    and merged[-1][4:] == [protocol, count]:
                merged[-1][1] = high
            else:
                merged.append([low, high, nccl, algorithm, protocol, count])
        for low, high, nccl, algorithm, protocol, count in merged:
            if nccl is None:
                lines.append(f"# left out: {table.collective} {low}-{high} chooses "
                             f"{algorithm}, which NCCL lacks for it")
            else:
                lines.append(f"{NCCL_COLL[table.collective]},{low},{high},{nccl},{protocol},"
                             f"{count},{nnodes},{table.nranks}")
    return "\n".join(lines) + "\n"


def read_nccl_csv(text: str) -> list[dict[str, object]]:
    """Parse a tuner CSV into one dict per line (comments and blank lines skipped).

    Parameters
    ----------
    text : str
        The CSV's contents.

    Returns
    -------
    list of dict
        Per line, the header's fields by name; ``min_bytes``, ``max_bytes``,
        ``channels``, ``nNodes`` and ``nRanks`` as int, the rest as str.

    Raises
    ------
    ValueError
        For a line without the 8 required fields or with a non-integer number.
    """
    rows = []
    names = _NCCL_HEADER.split(",")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < len(names):
            raise ValueError(f"line {number} {brief(line)} has {len(fields)} fields; the NCCL "
                             f"tuner needs {len(names)}: {_NCCL_HEADER}")
        row: dict[str, object] = dict(zip(names, fields))
        for key in ("min_bytes", "max_bytes", "channels", "nNodes", "nRanks"):
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
        rules: list[tuple[int, int]] = []
        for r in table.ranges:
            algorithm = ompi_algorithm(table.collective, *table.candidates[r.index])
            start = 0 if r.min_bytes == 0 else _ompi_size(table, r.min_bytes)
            if rules and rules[-1][0] == start:
                rules.pop()
            if not rules or rules[-1][1] != algorithm:
                rules.append((start, algorithm))
        lines += [f"{OMPI_COLL_ID[table.collective]}  # {table.collective} on "
                  f"{table.topology_name} ({table.method})",
                  "1  # comm sizes",
                  f"{table.nranks} {len(rules)}  # comm size, message sizes"]
        names = OMPI_NAMES[table.collective]
        lines += [f"{start} {algorithm} 0 0  # from {start} B: {names[algorithm]}"
                  for start, algorithm in rules]
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

