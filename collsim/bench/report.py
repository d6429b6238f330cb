"""The benchmark's results as a document, and that document as nccl-tests tables, JSON, CSV.

The document is a plain dict (what ``--json`` writes), so tables, CSV and plots can be
made again from a saved run:

* ``collective, nranks, dtype, op, transport, buffer, iters, warmup, check``: the run;
* ``rows``: per size and algorithm, ``size_B``, ``count`` and, for ``out_of_place`` and
  ``in_place``, ``time_us``, ``algbw_GBps``, ``busbw_GBps`` and ``wrong`` (None when
  unchecked); busbw follows nccl-tests (:mod:`simulator.busbw`);
* ``skipped``: algorithm -> why it could not run;
* ``topology`` and ``predicted`` (per size: ``best`` and every algorithm's ``time_us``),
  when a model was given;
* ``out_of_bounds`` (all wrong elements) and ``avg_busbw_GBps`` per algorithm.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Sequence

from simulator.busbw import bandwidths

from .runner import Case, Row, Timing

__all__ = ["TYPE_NAMES", "document", "table", "best_table", "measured_best", "write_json",
           "write_csv", "load_json"]

#: NumPy dtype name -> the name nccl-tests prints
TYPE_NAMES = {"float32": "float", "float16": "half", "float64": "double"}

GB = 1e9  # nccl-tests reports GB/s as 1e9 bytes per second


def _placement(timing: Timing, collective: str, nranks: int, nbytes: int) -> dict[str, Any]:
    algbw, busbw = bandwidths(collective, nranks, nbytes, timing.time_s)
    return {"time_us": timing.time_s * 1e6, "algbw_GBps": algbw / GB, "busbw_GBps": busbw / GB,
            "wrong": timing.wrong}


def document(case: Case, nranks: int, transport: str, buffer: str, rows: Sequence[Row],
             skipped: dict[str, str], topology: str | None = None,
             predicted: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Gather a run into the JSON-ready document described in the module docstring.

    Parameters
    ----------
    case : Case
        The benchmark case (collective, dtype, op, iters, warmup, check).
    nranks : int
        Number of ranks the run used.
    transport : str
        Transport name recorded in the document.
    buffer : str
        Buffer kind recorded in the document.
    rows : Sequence[Row]
        Measured rows, one per size and algorithm.
    skipped : dict[str, str]
        Algorithm -> why it could not run.
    topology : str or None, optional
        Name of the model topology, when predictions were made.
    predicted : list of dict or None, optional
        Per-size predictions (``size_B``, ``best``, ``time_us``); None for none.

    Returns
    -------
    dict[str, Any]
        The document: the run's settings, ``rows``, ``skipped``, ``topology``,
        ``predicted``, ``out_of_bounds`` and ``avg_busbw_GBps`` per algorithm.
    """
    out_rows: list[dict[str, Any]] = [{"algorithm": row.algorithm, "size_B": row.nbytes, "count": row.count,
                 "out_of_place": _placement(row.out_of_place, case.collective, nranks, row.nbytes),
                 "in_place": _placement(row.in_place, case.collective, nranks, row.nbytes)}
                for row in rows]
    placements = [row[key] for row in out_rows for key in ("out_of_place", "in_place")]
    algorithms = list(dict.fromkeys(row["algorithm"] for row in out_rows))
    average = {}
    for algorithm in algorithms:
        mine = [row[key]["busbw_GBps"] for row in out_rows if row["algorithm"] == algorithm
                for key in ("out_of_place", "in_place")]
        average[algorithm] = sum(mine) / len(mine)
    rooted = {"root": case.root} if case.collective in ("broadcast", "reduce") else {}
    return {"collective": case.collective, "nranks": nranks, "dtype": case.dtype, "op": case.op,
            **rooted,
            "transport": transport, "buffer": buffer, "iters": case.iters,
            "warmup": case.warmup, "check": case.check, "rows": out_rows, "skipped": skipped,
            "topology": topology, "predicted": predicted or [],
            "out_of_bounds": sum(p["wrong"] or 0 for p in placements),
            "avg_busbw_GBps": average}


def _time(us: float) -> str:
    """nccl-tests' time column: fewer decimals as the time grows."""
    return f"{us:7.0f}" if us >= 10000 else f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


def _half(placement: dict[str, Any]) -> str:
    wrong = "N/A" if placement["wrong"] is None else str(placement["wrong"])
    return (f"  {_time(placement['time_us'])}  {placement['algbw_GBps']:6.2f}  "
            f"{placement['busbw_GBps']:6.2f}  {wrong:>5}")


_HEADER = ("#\n"
           "#                                                     " + " " * 10 + "out-of-place"
           + " " * 20 + "in-place\n"
           "#       size         count      type   redop    root"
           + "     time   algbw   busbw #wrong" * 2 + "\n"
           "#        (B)    (elements)                          "
           + "     (us)  (GB/s)  (GB/s)       " * 2)


def table(doc: dict[str, Any], algorithm: str) -> str:
    """nccl-tests' table and footer for ``algorithm`` in ``doc``.

    The footer's out-of-bounds count and average bus bandwidth cover this algorithm's
    rows; the redop column reads ``none`` for AllGather and root is ``-1``, as in
    nccl-tests.

    Parameters
    ----------
    doc : dict[str, Any]
        A document made by :func:`document` or read by :func:`load_json`.
    algorithm : str
        The algorithm whose rows to print.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    type_name = TYPE_NAMES.get(doc["dtype"], doc["dtype"])
    redop = "none" if doc["collective"] in ("allgather", "broadcast", "alltoall") else doc["op"]
    root = doc.get("root", -1)
    lines = [f"# Algorithm: {algorithm}", _HEADER]
    wrong = 0
    for row in doc["rows"]:
        if row["algorithm"] != algorithm:
            continue
        lines.append(f"{row['size_B']:12d}  {row['count']:12d}  {type_name:>8}  {redop:>6}  "
                     f"{root:6d}" + _half(row["out_of_place"]) + _half(row["in_place"]))
        wrong += (row["out_of_place"]["wrong"] or 0) + (row["in_place"]["wrong"] or 0)
    lines += [f"# Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}",
              f"# Avg bus bandwidth    : {doc['avg_busbw_GBps'].get(algorithm, 0.0):g} ",
              "#"]
    return "\n".join(lines)


def measured_best(doc: dict[str, Any], placement: str = "out_of_place",
                  exclude: tuple[str, ...] = ("auto",)) -> dict[int, str]:
    """Size -> the algorithm with the shortest measured time there.

    Parameters
    ----------
    doc : dict[str, Any]
        A document made by :func:`document` or read by :func:`load_json`.
    placement : str, optional
        Which time to compare: ``"out_of_place"`` (default) or ``"in_place"``.
    exclude : tuple of str, optional
        Algorithms left out; by default ``auto``, which runs one of the others.

    Returns
    -------
    dict[int, str]
        Message size in bytes -> name of the fastest algorithm.
    """
    best: dict[int, tuple[float, str]] = {}
    for row in doc["rows"]:
        if row["algorithm"] in exclude:
            continue
        entry = (row[placement]["time_us"], row["algorithm"])
        best[row["size_B"]] = min(best.get(row["size_B"], entry), entry)
    return {size: name for size, (_, name) in best.items()}


def best_table(doc: dict[str, Any]) -> str:
    """Per size: the measured best algorithm and its time.

    When the document has a model, the table also shows the predicted best (chosen among
    the schedules that ran), its measured time and its predicted time, each column
    labelled, and how often prediction and measurement agree (``native`` left out).

    Parameters
    ----------
    doc : dict[str, Any]
        A document made by :func:`document` or read by :func:`load_json`.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    times = {(row["size_B"], row["algorithm"]): row["out_of_place"]["time_us"]
             for row in doc["rows"]}
    best = measured_best(doc)
    if not doc["predicted"]:
        lines = ["# Best algorithm per size (out-of-place)",
                 "#       size    measured       time", "#        (B)        best       (us)"]
        lines += [f"{size:12d}  {name:>10}  {_time(times[(size, name)]):>9}"
                  for size, name in best.items()]
        return "\n".join([*lines, "#"])
    entries = {entry["size_B"]: entry for entry in doc["predicted"]}
    predicted = {size: entry["best"] for size, entry in entries.items()}
    ran = sorted({row["algorithm"] for row in doc["rows"]} - {"auto", "native"})
    lines = [f"# Best algorithm per size (out-of-place): measured on this job; predicted on "
             f"{doc['topology']} among the schedules run ({' '.join(ran)})",
             "#       size    measured    measured   predicted    measured   predicted",
             "#        (B)        best   time (us)        best   time (us)   time (us)"]
    for size, name in best.items():
        guess = predicted.get(size, "-")
        measured = times.get((size, guess))
        model = entries[size]["time_us"].get(guess) if size in entries else None
        lines.append(f"{size:12d}  {name:>10}  {_time(times[(size, name)]):>10}  {guess:>10}  "
                     + "  ".join(f"{_time(t):>10}" if t is not None else f"{'-':>10}"
                                 for t in (measured, model)))
    schedules = measured_best(doc, exclude=("auto", "native"))
    agree = sum(predicted.get(size) == name for size, name in schedules.items())
    lines += [f"# Predicted best matches the measured best schedule (native left out) at "
              f"{agree} of {len(schedules)} sizes", "#"]
    return "\n".join(lines)


def write_json(doc: dict[str, Any] | list[dict[str, Any]], path: str | Path) -> Path:
    """Write ``doc`` as indented JSON to ``path``.

    Parameters
    ----------
    doc : dict[str, Any] or list of them
        The document to write (a list for a run over several datatypes or ops).
    path : str or Path
        Destination file; overwritten.

    Returns
    -------
    Path
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def load_json(path: str | Path) -> Any:
    """Read a document written by :func:`write_json` (``--json``).

    Parameters
    ----------
    path : str or Path
        The JSON file.

    Returns
    -------
    dict[str, Any] or list of them
        The document, or the documents of a run over several datatypes or ops.
    """
    return json.loads(Path(path).read_text())


_CSV_FIELDS = ("collective", "algorithm", "size_B", "count", "dtype", "op", "nranks",
               *(f"{p}_{f}" for p in ("oop", "ip")
                 for f in ("time_us", "algbw_GBps", "busbw_GBps", "wrong")),
               "predicted_time_us", "predicted_best")


def write_csv(doc: dict[str, Any] | list[dict[str, Any]], path: str | Path) -> Path:
    """Write one CSV line per size and algorithm (and datatype and op).

    Columns prefixed ``oop`` are out of place, ``ip`` in place; the predicted columns
    are empty without a model.

    Parameters
    ----------
    doc : dict[str, Any] or list of them
        The document to write, or several (one per datatype and op).
    path : str or Path
        Destination file; overwritten.

    Returns
    -------
    Path
        ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=_CSV_FIELDS)
        writer.writeheader()
        for one in [doc] if isinstance(doc, dict) else doc:
            _write_rows(writer, one)
    return path


def _write_rows(writer: csv.DictWriter, doc: dict[str, Any]) -> None:
    """Write ``doc``'s rows to ``writer``."""
    predicted = {entry["size_B"]: entry for entry in doc["predicted"]}
    for row in doc["rows"]:
        guess = predicted.get(row["size_B"], {})
        line = {key: doc[key] for key in ("collective", "dtype", "op", "nranks")}
        line.update({key: row[key] for key in ("algorithm", "size_B", "count")})
        for short, key in (("oop", "out_of_place"), ("ip", "in_place")):
            line.update({f"{short}_{field}": value for field, value in row[key].items()})
        line["predicted_time_us"] = guess.get("time_us", {}).get(row["algorithm"], "")
        line["predicted_best"] = guess.get("best", "")
        writer.writerow(line)
