"""nccl-tests output, as printed or as its ``-J`` JSON, read into one :class:`Log`.

Printed output (``all_reduce_perf``, ``all_gather_perf``, ``reduce_scatter_perf``,
``broadcast_perf``, ``reduce_perf``, ``alltoall_perf``; nccl-tests ``src/util.cu``)::

    # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 ...
    #
    # Using devices
    #  Rank  0 Group  0 Pid  12345 on   node001 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
    #
    #       size         count      type   redop    root     time   algbw   busbw #wrong ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)        ...
               8             2     float     sum      -1    36.47    0.00    0.00      0 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 47.1234

(older versions print no ``Group``, a bus id ``[0x1b]`` and no ``root`` column).  The JSON
(``-J FILE``, nccl-tests ``jsonOutputInit``) holds ``args``, ``env``, ``config`` (with
``nthreads``, ``ngpus`` and ``devices``) and ``results`` (``size``, ``count``, ``type``,
``redop``, ``out_of_place``/``in_place`` with ``time``, ``alg_bw``, ``bus_bw``,
``nwrong``).  ``NCCL_ALGO``/``NCCL_PROTO`` and every other NCCL setting
(``NCCL_MIN_CTAS``, ``NCCL_IB_QPS_PER_CONNECTION``, ...: :attr:`Log.settings`) are read from
``NCCL INFO NCCL_X set by environment to V`` lines, ``NCCL_X=V`` on a command line in the
log (``-x NCCL_X=V``, ``export NCCL_X=V``), or the JSON's ``env``; the caller may state them
instead (:func:`read_log`).

Every error is a :class:`LogError` that names the file and, where one is at fault, the
line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.gpu import SETTINGS

__all__ = ["COLLECTIVES", "LogError", "Device", "Row", "Log", "read_log", "parse_text",
           "parse_json"]

#: nccl-tests program -> collective name of :mod:`collectives` (None: not one of ours)
COLLECTIVES: dict[str, str | None] = {
    "all_reduce_perf": "allreduce", "all_gather_perf": "allgather",
    "reduce_scatter_perf": "reduce_scatter", "broadcast_perf": None, "reduce_perf": None,
    "alltoall_perf": None}

_HEADER = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_DEVICE = re.compile(r"#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+"
                     r"device\s+(\d+)\s+\[[^\]]*\]\s+(.+?)\s*$")
_PROGRAM = re.compile(r"\b(" + "|".join(COLLECTIVES) + r")\b")
_ENV_INFO = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (\S+?)\.?\s*$")
_ENV_ARG = re.compile(r"\b(NCCL_[A-Z0-9_]+)=([A-Za-z0-9_,^.:=/-]+)")
#: settings a run has one value of (two lines that disagree are an error): the algorithm,
#: the protocol and those the GPU model prices
_ONE_VALUE = ("NCCL_ALGO", "NCCL_PROTO", *SETTINGS)
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")


class LogError(ValueError):
    """A log that cannot be read: the message names the file, the line and what is wrong."""


@dataclass(frozen=True)
class Device:
    """One ``# Rank`` line: a rank, the process and host it ran on, its GPU."""

    rank: int
    pid: int
    host: str
    device: int
    name: str


@dataclass(frozen=True)
class Row:
    """One size of the table: bytes, elements, and out-of-place and in-place figures.

    Times are seconds, bandwidths GB/s as printed; ``in_place_s`` is None where the log has
    no in-place column; ``wrong`` is None where nccl-tests printed ``N/A``.
    """

    nbytes: int
    count: int
    dtype: str
    redop: str
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    wrong: float | None
    in_place_s: float | None


@dataclass(frozen=True)
class Log:
    """What one nccl-tests run printed.

    Attributes
    ----------
    path : str
        The file read.
    program : str or None
        ``all_reduce_perf``, ... (None when the log does not name it).
    threads, gpus_per_thread : int
        ``nThread`` and ``nGpus`` (``-t``, ``-g``).
    devices : tuple of Device
        One per rank, in rank order.
    rows : tuple of Row
        The size table.
    avg_busbw_GBps : float or None
        The ``# Avg bus bandwidth`` line.
    algo, proto : str or None
        ``NCCL_ALGO`` and ``NCCL_PROTO`` as the run was given them (None: NCCL's default).
    settings : tuple of (str, str)
        The other NCCL settings the log states, sorted by name (``("NCCL_MIN_CTAS",
        "24")``, ...).
    """

    path: str
    program: str | None
    threads: int
    gpus_per_thread: int
    devices: tuple[Device, ...]
    rows: tuple[Row, ...]
    avg_busbw_GBps: float | None
    algo: str | None
    proto: str | None
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def collective(self) -> str | None:
        """The collective of :mod:`collectives` the program runs (None: another)."""
        return COLLECTIVES.get(self.program or "all_reduce_perf")

    @property
    def ranks(self) -> int:
        """Ranks: one per device line."""
        return len(self.devices)

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts, in order of first appearance."""
        return tuple(dict.fromkeys(d.host for d in self.devices))

    @property
    def nodes(self) -> int:
        """Nodes: distinct hosts of the device lines."""
        return len(self.hosts)

    @property
    def ranks_per_node(self) -> int:
        """Ranks on each node (the same on every node; :func:`read_log` checks it)."""
        return self.ranks // self.nodes

    @property
    def gpu(self) -> str:
        """The GPU name of the device lines (``NVIDIA H100 80GB HBM3``)."""
        return self.devices[0].name

    def __repr__(self) -> str:
        return (f"Log({Path(self.path).name}: {self.program or 'nccl-tests'}, {self.ranks} "
                f"ranks on {self.nodes} nodes, {self.gpu}, {len(self.rows)} sizes, "
                f"algo={self.algo}, proto={self.proto})")


def _fail(path: str, line: int | None, message: str) -> LogError:
    return LogError(f"{path}" + (f", line {line}" if line else "") + f": {message}")


def _number(text: str, path: str, line: int, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _fail(path, line, f"{what} {text!r} is not a number") from None


def _wrong(text: str, path: str, line: int) -> float | None:
    return None if text == "N/A" else _number(text, path, line, "#wrong")


def _row(tokens: list[str], path: str, line: int) -> Row:
    """A table row: size count type redop [root] then 4 or 8 figures."""
    if len(tokens) < 8 or not (tokens[0].isdigit() and tokens[1].isdigit()):
        raise _fail(path, line, f"a size row must start with size and count; got "
                                f"{' '.join(tokens[:6])!r}")
    figures = tokens[4:]
    if len(figures) in (5, 9):  # a root column
        figures = figures[1:]
    if len(figures) not in (4, 8):
        raise _fail(path, line, f"a size row has {len(tokens)} columns; nccl-tests prints "
                                "size count type redop [root] time algbw busbw #wrong, "
                                "out of place then in place")
    time_us = _number(figures[0], path, line, "time")
    if not time_us > 0:
        raise _fail(path, line, f"time {figures[0]} us is not allowed; it must be > 0")
    in_place = _number(figures[4], path, line, "in-place time") * 1e-6 if len(figures) == 8 \
        else None
    return Row(int(tokens[0]), int(tokens[1]), tokens[2], tokens[3], time_us * 1e-6,
               _number(figures[1], path, line, "algbw"), _number(figures[2], path, line, "busbw"),
               _wrong(figures[3], path, line), in_place)


def _settings(text: str, found: dict[str, str], path: str, line: int) -> None:
    """Record the NCCL settings ``text`` states; raise where two lines disagree on one of
    :data:`_ONE_VALUE` (of the others the last stands)."""
    for pattern in (_ENV_INFO, _ENV_ARG):
        for key, value in pattern.findall(text.strip()):
            if key in _ONE_VALUE and found.setdefault(key, value).lower() != value.lower():
                raise _fail(path, line, f"{key}={value} here but {found[key]} earlier; a run "
                                        "has one")
            found[key] = value


def _others(found: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The settings besides NCCL_ALGO and NCCL_PROTO, sorted."""
    return tuple(sorted((k, v) for k, v in found.items() if k not in ("NCCL_ALGO", "NCCL_PROTO")))


def parse_text(text: str, path: str = "<log>") -> Log:
    """Read nccl-tests' printed output.

    Parameters
    ----------
    text : str
        The output (stdout; NCCL's ``INFO`` lines may be mixed in).
    path : str, optional
        The file's name, for errors.

    Returns
    -------
    Log

    Raises
    ------
    LogError
        Naming the file and line: no ``nThread`` header, no device lines, no size rows, a
        row with other columns, a figure that is not a number, settings that disagree.
    """
    header, devices, rows, avg, program = None, [], [], None, None
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if program is None and (match := _PROGRAM.search(line)):
            program = match[1]
        _settings(line, found, path, number)
        if (match := _HEADER.match(stripped)):
            header = (int(match[1]), int(match[2]))
        elif (match := _DEVICE.match(stripped)):
            devices.append(Device(int(match[1]), int(match[2]), match[3], int(match[4]),
                                  match[5]))
        elif (match := _AVG.match(stripped)):
            avg = _number(match[1], path, number, "Avg bus bandwidth")
        elif stripped and stripped[0].isdigit() and "NCCL" not in stripped:
            rows.append(_row(stripped.split(), path, number))
    if header is None:
        raise _fail(path, None, "no '# nThread N nGpus G' header line: not nccl-tests output")
    return _checked(Log(path, program, *header, tuple(devices), tuple(rows), avg,
                        found.get("NCCL_ALGO"), found.get("NCCL_PROTO"), _others(found)))


def _json_row(result: Any, path: str, index: int) -> Row:
    where = f"results[{index}]"
    try:
        out, inp = result["out_of_place"], result.get("in_place")
        time_us = float(out.get("time", out.get("cpu_time")))
        if not time_us > 0:
            raise ValueError
        return Row(int(result["size"]), int(result["count"]), str(result["type"]),
                   str(result["redop"]), time_us * 1e-6, float(out["alg_bw"]),
                   float(out["bus_bw"]),
                   None if out.get("nwrong") is None else float(out["nwrong"]),
                   None if not inp else float(inp.get("time", inp.get("cpu_time"))) * 1e-6)
    except (KeyError, TypeError, ValueError):
        raise _fail(path, None, f"{where} = {str(result)[:120]!r} is not a nccl-tests result "
                                "(size, count, type, redop, out_of_place with time > 0, "
                                "alg_bw, bus_bw)") from None


def parse_json(text: str, path: str = "<log>") -> Log:
    """Read nccl-tests' JSON output (``-J FILE``).

    Parameters
    ----------
    text : str
        The file's contents.
    path : str, optional
        The file's name, for errors.

    Returns
    -------
    Log

    Raises
    ------
    LogError
        Naming the file (and the line for invalid JSON) and the key at fault.
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise _fail(path, error.lineno, f"not valid JSON: {error.msg}") from None
    try:
        config = document["config"]
        threads, gpus = int(config["nthreads"]), int(config["ngpus"])
        devices = tuple(Device(int(d["rank"]), int(d["pid"]), str(d["hostname"]),
                               int(d["device"]), str(d["device_info"]))
                        for d in config.get("devices", ()))
        results = document["results"]
    except (KeyError, TypeError, ValueError):
        raise _fail(path, None, "not nccl-tests JSON: it needs config (nthreads, ngpus, "
                                "devices) and results") from None
    found: dict[str, str] = {}
    for entry in (*document.get("env", ()), *document.get("args", ())):
        _settings(str(entry), found, path, 0)
    args = " ".join(str(a) for a in document.get("args", ()))
    program = _PROGRAM.search(args)
    avg = (document.get("average_bus_bandwidth") or {}).get("bandwidth")
    return _checked(Log(path, program[1] if program else None, threads, gpus, devices,
                        tuple(_json_row(r, path, i) for i, r in enumerate(results)),
                        None if avg is None else float(avg), found.get("NCCL_ALGO"),
                        found.get("NCCL_PROTO"), _others(found)))


def _checked(log: Log) -> Log:
    """``log``, or a :class:`LogError` where it lacks devices or rows or is uneven."""
    if not log.devices:
        raise _fail(log.path, None, "no '#  Rank N ... on HOST device D [..] GPU' lines: the "
                                    "ranks, nodes and GPU cannot be told")
    if [d.rank for d in log.devices] != list(range(len(log.devices))):
        raise _fail(log.path, None, f"the device lines give ranks "
                                    f"{[d.rank for d in log.devices][:8]}...; they must be "
                                    "0, 1, 2, ... (the whole output of one run)")
    per_host = {h: sum(d.host == h for d in log.devices) for h in log.hosts}
    if len(set(per_host.values())) != 1:
        raise _fail(log.path, None, f"ranks per host differ ({dict(list(per_host.items())[:4])}"
                                    "); the model takes the same on every node")
    if not log.rows:
        raise _fail(log.path, None, "no size rows: the run printed no results")
    return log


def read_log(path: str | Path, algo: str | None = None, proto: str | None = None,
             env: dict[str, str] | None = None) -> Log:
    """Read one nccl-tests log, printed or JSON (by its first character).

    Parameters
    ----------
    path : str or Path
        The file.
    algo, proto : str or None, optional
        ``NCCL_ALGO`` / ``NCCL_PROTO`` the run was given, in place of what the log states.
    env : dict of str to str, optional
        Other NCCL settings the run was given (``{"NCCL_MIN_CTAS": "24"}``), in place of
        what the log states of them.

    Returns
    -------
    Log

    Raises
    ------
    LogError
        As :func:`parse_text` and :func:`parse_json`, and for an empty or unreadable file.
    """
    path = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise _fail(path, None, f"cannot be read ({error.strerror})") from None
    if not text.strip():
        raise _fail(path, None, "the file is empty")
    log = parse_json(text, path) if text.lstrip()[0] == "{" else parse_text(text, path)
    if algo is None and proto is None and not env:
        return log
    return Log(log.path, log.program, log.threads, log.gpus_per_thread, log.devices, log.rows,
               log.avg_busbw_GBps, algo or log.algo, proto or log.proto,
               tuple(sorted({**dict(log.settings), **(env or {})}.items())))
