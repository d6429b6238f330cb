"""Reading a schedule's JSON (:meth:`collectives.Schedule.from_json`), checked field by field.

A schedule file is what :meth:`~collectives.Schedule.to_json` writes::

    {"collective": "allreduce", "algorithm": "ring", "nranks": 2, "count": 4,
     "params": {}, "ranks": [[[["send", 1, 0, 2], ["recv", 1, 2, 4, true]], ...], ...]}

``ranks[r][s]`` is step ``s`` of rank ``r``, a list of operations: ``["send", peer, start,
stop]``, ``["recv", peer, start, stop, reduce]`` (with ``true`` after it for a swapped
reduction) or ``["copy", start, stop, dst]``.  Every error names the field as a path into
the document (``ranks[1][0][0].peer``) and its value: peers must be other ranks of the
schedule, ranges within ``count`` elements (within ``elements``, where an AllToAll's
working buffer holds more than ``count``), flags ``true`` or ``false``.
"""

from __future__ import annotations

import json
from reprlib import repr as brief
from typing import Any

from topology.checks import check_int

from .schedule import COLLECTIVES, Copy, Op, Recv, Send, Step

__all__ = ["decode"]

#: the fields of a schedule's JSON object
_KEYS = ("collective", "algorithm", "nranks", "count", "params", "ranks")
#: the fields a schedule's JSON object may hold besides :data:`_KEYS`
_OPTIONAL = ("elements",)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where} = {brief(value)} is not allowed; it must be a list")
    return value


def _frozen(value: Any) -> Any:
    """``value`` with every list a tuple, at every level (an order per channel)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where} = {brief(value)} is not allowed; it must be true or false")
    return value


def _range(start: Any, stop: Any, count: int, where: str) -> tuple[int, int]:
    check_int(start, f"{where}.start", 0, count)
    check_int(stop, f"{where}.stop", start, count, note=" (start to count)")
    return start, stop


def _op(item: Any, nranks: int, count: int, where: str) -> Op:
    item = _list(item, where)
    if not item or item[0] not in ("send", "recv", "copy"):
        raise ValueError(f"{where} = {brief(item)} is not allowed; it must start with "
                         "'send', 'recv' or 'copy'")
    name, *fields = item
    sizes = {"send": (3,), "recv": (4, 5), "copy": (3,)}[name]
    if len(fields) not in sizes:
        raise ValueError(f"{where} = {brief(item)} is not allowed; a {name} has "
                         f"{' or '.join(str(n) for n in sizes)} fields after its name")
    if name == "copy":
        start, stop = _range(fields[0], fields[1], count, where)
        check_int(fields[2], f"{where}.dst", 0, count - (stop - start),
                  note=" (the copy must end within count)")
        return Copy(start, stop, fields[2])
    peer = check_int(fields[0], f"{where}.peer", 0, nranks - 1)
    start, stop = _range(fields[1], fields[2], count, where)
    if name == "send":
        return Send(peer, start, stop)
    flags = [_flag(v, f"{where}.{key}") for v, key in zip(fields[3:], ("reduce", "swap"))]
    return Recv(peer, start, stop, *flags)


def decode(text: str) -> tuple[str, str, int, dict[str, Any], list[list[Step]], int | None]:
    """Parse and check a schedule's JSON text.

    Parameters
    ----------
    text : str
        What :meth:`~collectives.Schedule.to_json` writes.

    Returns
    -------
    tuple
        ``(collective, algorithm, count, params, ranks, elements)``: ``ranks[r]`` the
        steps of rank ``r``; list-valued parameters become tuples; ``elements`` the
        working buffer's elements where the file says (else None: ``count``).

    Raises
    ------
    ValueError
        Naming the field and its value: not JSON, nested too deeply, a missing or
        unknown field, a wrong type, a peer that is not another rank of the schedule, a
        range outside ``count``, a rank list whose length is not ``nranks``.
    """
    try:
        return _decode(text)
    except RecursionError:
        raise ValueError("not a schedule: its JSON is nested too deeply") from None


def _decode(text: str) -> tuple[str, str, int, dict[str, Any], list[list[Step]], int | None]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a schedule: not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"not a schedule: {brief(data)} is not a JSON object")
    missing = [key for key in _KEYS if key not in data]
    unknown = [key for key in data if key not in _KEYS + _OPTIONAL]
    if missing or unknown:
        raise ValueError(f"not a schedule: field {(missing or unknown)[0]!r} is "
                         f"{'missing' if missing else 'unknown'}; it has {', '.join(_KEYS)}")
    if data["collective"] not in COLLECTIVES:
        raise ValueError(f"collective = {brief(data['collective'])} is not allowed; it must "
                         f"be one of {', '.join(COLLECTIVES)}")
    if not isinstance(data["algorithm"], str) or not data["algorithm"]:
        raise ValueError(f"algorithm = {brief(data['algorithm'])} is not allowed; it must be "
                         "a non-empty string")
    nranks = check_int(data["nranks"], "nranks", 1)
    count = check_int(data["count"], "count", 0)
    working = None if "elements" not in data else check_int(data["elements"], "elements", 0)
    bound = count if working is None else working
    if not isinstance(data["params"], dict):
        raise ValueError(f"params = {brief(data['params'])} is not allowed; it must be an "
                         "object")
    params = {k: _frozen(v) for k, v in data["params"].items()}
    ranks = _list(data["ranks"], "ranks")
    if len(ranks) != nranks:
        raise ValueError(f"ranks lists {len(ranks)} ranks; nranks = {nranks} says how many "
                         "it must list")
    steps = [[Step(tuple(_op(op, nranks, bound, f"ranks[{r}][{s}][{o}]")
                         for o, op in enumerate(_list(step, f"ranks[{r}][{s}]"))))
              for s, step in enumerate(_list(rank, f"ranks[{r}]"))]
             for r, rank in enumerate(ranks)]
    return data["collective"], data["algorithm"], count, params, steps, working
