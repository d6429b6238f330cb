"""Tuning tables ``auto`` reads: which algorithm runs a collective, by ranks and size.

A :class:`Tuning` is plain data: :class:`Rule` rows, each saying that ``collective`` on
``nranks`` ranks with elements of ``dtype_size`` bytes, for working buffers of
``min_bytes`` to ``max_bytes`` bytes (inclusive), runs ``algorithm`` with ``params``.
``collsim tune`` writes one from measurements on the running job, ``collsim select
--tuning-out`` from the simulator's predictions; both are JSON files of the form::

    {"format": "collsim-tuning", "version": 1, "source": "measured: collsim tune ...",
     "rules": [{"collective": "allreduce", "nranks": 4, "dtype_size": 4,
                "min_bytes": 0, "max_bytes": 65535, "algorithm": "native", "params": {}},
               ...]}

A rule with ``dtype_size`` 0 holds for every element size.  :func:`load_tuning` checks
a file field by field (collectives and algorithms by name, parameters by the algorithm's,
``min_bytes <= max_bytes``, no two rules overlapping); its errors name the file, the field
and the value.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from reprlib import repr as brief
from typing import Any, Iterable

from topology.checks import check_int
from .build import ALGORITHMS, COMPOSED, algorithm_params, check_sizes
from .registry import algorithm as registered
from .schedule import BLOCK_COLLECTIVES as COLLECTIVES

__all__ = ["FORMAT", "Rule", "Tuning", "load_tuning"]

#: the ``format`` field every tuning file carries
FORMAT = "collsim-tuning"

#: the fields of a rule's JSON object
_RULE_KEYS = frozenset({"collective", "nranks", "dtype_size", "min_bytes", "max_bytes",
                        "algorithm", "params"})
#: what a rule's ``algorithm`` may be: a schedule's algorithm, or MPI's own collective
_RULE_ALGORITHMS = (*ALGORITHMS, *COMPOSED, "native")
#: parameters that are counts: an integer >= 1 (or None: chosen by the algorithm)
_COUNT_PARAMS = frozenset({"channels", "segments", "ranks_per_node"})

Params = tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """``collective`` on ``nranks`` ranks, ``min_bytes..max_bytes``, runs ``algorithm``.

    Attributes
    ----------
    collective : str
        ``allreduce``, ``reduce_scatter`` or ``allgather``.
    nranks : int
        Ranks of the communicator.
    dtype_size : int
        Bytes per element, or 0 for every element size.
    min_bytes, max_bytes : int
        Working-buffer sizes the rule covers, inclusive.
    algorithm : str
        An algorithm of :data:`collectives.ALGORITHMS` or ``native``.
    params : tuple of (str, value)
        Its tuning parameters (``dict(params)`` for :func:`collectives.build_schedule`).
    """

    collective: str
    nranks: int
    dtype_size: int
    min_bytes: int
    max_bytes: int
    algorithm: str
    params: Params = ()

    def to_dict(self) -> dict[str, Any]:
        """The rule as the JSON object a tuning file holds."""
        return {"collective": self.collective, "nranks": self.nranks,
                "dtype_size": self.dtype_size, "min_bytes": self.min_bytes,
                "max_bytes": self.max_bytes, "algorithm": self.algorithm,
                "params": dict(self.params)}


def _rule(item: Any, where: str) -> Rule:
    """The rule ``item`` (a rule's JSON object) says, checked field by field."""
    if not isinstance(item, dict):
        raise ValueError(f"{where} is {type(item).__name__}; it must be an object")
    missing = {"collective", "nranks", "min_bytes", "max_bytes", "algorithm"} - item.keys()
    if missing:
        raise ValueError(f"{where} lacks {sorted(missing)}")
    unknown = sorted(item.keys() - _RULE_KEYS)
    if unknown:
        raise ValueError(f"{where} has unknown field {unknown[0]!r}; allowed: "
                         f"{', '.join(sorted(_RULE_KEYS))}")
    for key, allowed in (("collective", COLLECTIVES), ("algorithm", _RULE_ALGORITHMS)):
        if item[key] not in allowed or not isinstance(item[key], str):
            raise ValueError(f"{where}.{key} = {brief(item[key])} is not allowed; it must be "
                             f"one of {', '.join(allowed)}")
    if item["algorithm"] != "native" \
            and item["collective"] not in registered(item["algorithm"]).collectives:
        raise ValueError(f"{where}.algorithm = {item['algorithm']!r} is not allowed with "
                         f"collective {item['collective']!r}: it does not run it")
    check_int(item["nranks"], f"{where}.nranks", 1)
    for key in ("dtype_size", "min_bytes", "max_bytes"):
        check_int(item.get(key, 0), f"{where}.{key}", 0)
    if item["min_bytes"] > item["max_bytes"]:
        raise ValueError(f"{where}.min_bytes = {item['min_bytes']} is above {where}.max_bytes "
                         f"= {item['max_bytes']}; a rule covers min_bytes..max_bytes")
    params = item.get("params", {})
    if not isinstance(params, dict):
        raise ValueError(f"{where}.params = {brief(params)} is not allowed; it must be an "
                         "object")
    _check_params(params, item["algorithm"], f"{where}.params")
    check_sizes(params, where=f"{where}.params.")
    return Rule(str(item["collective"]), item["nranks"], item.get("dtype_size", 0),
                item["min_bytes"], item["max_bytes"], str(item["algorithm"]),
                tuple(sorted(params.items())))


def _check_params(params: dict[str, Any], algorithm: str, where: str) -> None:
    """Raise ValueError for a parameter ``algorithm`` does not take, or a count of
    :data:`_COUNT_PARAMS` that is not an integer >= 1 (a count's bound by the elements
    is the schedule's: :func:`collectives.build_schedule`)."""
    allowed = {} if algorithm == "native" else algorithm_params(algorithm)
    for name, value in params.items():
        if name not in allowed:
            raise ValueError(f"{where}.{name} is not a parameter of {algorithm}; it takes "
                             f"{', '.join(allowed) or 'none'}")
        if name in _COUNT_PARAMS and value is not None:
            check_int(value, f"{where}.{name}", 1)


@dataclass(frozen=True)
class Tuning:
    """A tuning table: rules, and where they came from.

    Attributes
    ----------
    rules : tuple of Rule
        The rows; for one (collective, nranks, dtype size) their ranges must not overlap.
    source : str
        What made it (``"measured: ..."``, ``"predicted on dgx_h100(nodes=2)"``).
    """

    rules: tuple[Rule, ...]
    source: str = ""
    _index: dict[tuple[str, int, int], tuple[list[int], list[Rule]]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[tuple[str, int, int], list[Rule]] = {}
        for rule in self.rules:
            index.setdefault((rule.collective, rule.nranks, rule.dtype_size), []).append(rule)
        built = {}
        for key, rules in index.items():
            rules.sort(key=lambda r: r.min_bytes)
            for a, b in zip(rules, rules[1:]):
                if b.min_bytes <= a.max_bytes:
                    raise ValueError(f"tuning rules overlap for {key}: {a.min_bytes}.."
                                     f"{a.max_bytes} and {b.min_bytes}..{b.max_bytes}")
            built[key] = ([r.min_bytes for r in rules], rules)
        object.__setattr__(self, "_index", built)

    def __repr__(self) -> str:
        keys = sorted({(r.collective, r.nranks) for r in self.rules})
        shown = ", ".join(f"{c}@{p}" for c, p in keys[:4]) + (", ..." if len(keys) > 4 else "")
        return f"Tuning({len(self.rules)} rules: {shown}; source={self.source!r})"

    def lookup(self, collective: str, nranks: int, dtype_size: int,
               nbytes: int) -> tuple[str, dict[str, Any]] | None:
        """The rule's algorithm and params for this call, or None when no rule covers it.

        A rule for this ``dtype_size`` is preferred over one for every size (0).

        Parameters
        ----------
        collective : str
            The collective.
        nranks : int
            Ranks of the communicator.
        dtype_size : int
            Bytes per element.
        nbytes : int
            Bytes of the working buffer.

        Returns
        -------
        (str, dict) or None
        """
        for size in (dtype_size, 0):
            found = self._index.get((collective, nranks, size))
            if found is None:
                continue
            starts, rules = found
            i = bisect_right(starts, nbytes) - 1
            if i >= 0 and nbytes <= rules[i].max_bytes:
                return rules[i].algorithm, dict(rules[i].params)
        return None

    def to_json(self) -> str:
        """The table as a tuning file's text."""
        return json.dumps({"format": FORMAT, "version": 1, "source": self.source,
                           "rules": [r.to_dict() for r in self.rules]}, indent=1)

    def save(self, path: str | Path) -> None:
        """Write the table to ``path`` as JSON."""
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def from_rules(cls, rules: Iterable[Rule], source: str = "") -> "Tuning":
        """A table of ``rules``."""
        return cls(tuple(rules), source)


def load_tuning(path: str | Path) -> Tuning:
    """Read a tuning file.

    Parameters
    ----------
    path : str or Path
        A JSON file written by ``collsim tune`` or ``collsim select --tuning-out``.

    Returns
    -------
    Tuning

    Raises
    ------
    ValueError
        If the file is not UTF-8 JSON or not a tuning file, naming the file, the first bad
        field and its value.
    OSError
        If it cannot be read.
    """
    data = Path(path).read_bytes()
    try:
        data = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ValueError(f"tuning file {str(path)!r} is not UTF-8 text: byte "
                         f"0x{data[error.start]:02x} at offset {error.start}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"tuning file {str(path)!r} is not JSON: {error}") from None
    except RecursionError:
        raise ValueError(f"tuning file {str(path)!r} is not a tuning file: its JSON is "
                         "nested too deeply") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"tuning file {str(path)!r} lacks \"format\": \"{FORMAT}\"")
    rules = data.get("rules")
    if not isinstance(rules, list):
        raise ValueError(f"tuning file {str(path)!r}: \"rules\" must be a list")
    try:
        return Tuning(tuple(_rule(item, f"rules[{i}]") for i, item in enumerate(rules)),
                      str(data.get("source", "")))
    except ValueError as error:
        raise ValueError(f"tuning file {str(path)!r}: {error}") from None
