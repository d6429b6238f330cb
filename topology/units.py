"""Quantities with units in topology files: "300 GB/s", "200 Gb/s", "1.5 us", "0.02 ns/B",
"512 KiB".

Prefixes are decimal (K = 1e3, G = 1e9) as in datasheets, binary with ``i`` (GiB/s);
``B`` is a byte and ``b`` a bit. A bare number is an error: ``bandwidth = 450`` could be
450 B/s or 450 GB/s, so every quantity names its unit (``"450 GB/s"``, ``"1e-6 s"``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from reprlib import repr as brief

from .errors import TopologyError

__all__ = ["QUANTITIES", "parse", "format_quantity"]

_PREFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_TIME = {"s": Fraction(1), "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6),
         "\u00b5s": Fraction(1, 10**6), "ns": Fraction(1, 10**9), "ps": Fraction(1, 10**12)}

#: quantity -> {unit: value of one unit in the base unit}; the first unit of each is the base
QUANTITIES: dict[str, dict[str, Fraction]] = {
    "latency": dict(_TIME),
    "bandwidth": {
        **{f"{p}B/s": Fraction(v) for p, v in _PREFIX.items()},
        **{f"{p}b/s": Fraction(v, 8) for p, v in _PREFIX.items()},
    },
    "gamma": {f"{unit}/B": value for unit, value in _TIME.items()},
    "size": {f"{p}B": Fraction(v) for p, v in _PREFIX.items()},
}

#: units save writes, in order of preference
_PREFERRED = {"latency": ("us", "ns", "ms", "s"),
              "bandwidth": ("GB/s", "MB/s", "KB/s", "B/s", "TB/s"),
              "gamma": ("ns/B", "ps/B", "us/B", "s/B"),
              "size": ("KiB", "MiB", "B", "GiB")}

_PATTERN = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S+)\s*")


def _scale(number: float, factor: Fraction) -> float:
    """``number * factor`` with one rounding when the factor is an integer or its inverse."""
    if factor.denominator == 1:
        return number * factor.numerator
    if factor.numerator == 1:
        return number / factor.denominator
    return number * factor.numerator / factor.denominator


def parse(value: object, quantity: str, key: str) -> float:
    """Return ``value`` (a string with a unit) in base units (s, B/s, s/B, B).

    Parameters
    ----------
    value : str
        E.g. ``"450 GB/s"``, ``"1.5 us"``, ``"2e-11 s/B"``.
    quantity : {"latency", "bandwidth", "gamma", "size"}
        What it measures: seconds, bytes per second, seconds per byte, bytes.
    key : str
        The key it came from, for error messages (``links[3].bandwidth``).

    Raises
    ------
    TopologyError
        When the value is a bare number (naming the unit to add), is not a number, has
        no or the wrong unit, or is not finite.

    Examples
    --------
    >>> parse("200 Gb/s", "bandwidth", "x"), parse("500 ns", "latency", "x")
    (25000000000.0, 5e-07)
    """
    units = QUANTITIES[quantity]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise TopologyError(f"{key} = {value!r} has no unit; write it as a string with one, "
                            f"e.g. '{value!r} {next(iter(units))}' or "
                            f"'1.5 {_PREFERRED[quantity][0]}'; allowed units: "
                            f"{', '.join(units)}")
    if isinstance(value, str) and (match := _PATTERN.fullmatch(value)):
        if match.group(2) not in units:
            raise TopologyError(f"{key} = {brief(value)}: unknown unit {match.group(2)!r} for a "
                                f"{quantity}; allowed: {', '.join(units)}")
        number = _scale(float(match.group(1)), units[match.group(2)])
    else:
        raise TopologyError(f"{key} = {brief(value)} is not a {quantity}; write a string such as "
                            f"'1.5 {_PREFERRED[quantity][0]}' (a number and a unit)")
    if not math.isfinite(number):
        raise TopologyError(f"{key} = {brief(value)} is not allowed; it must be finite")
    return number


def format_quantity(number: float, quantity: str) -> str:
    """Return ``number`` (base units) as a string with a unit that parses back exactly.

    Falls back to the base unit (``"3.3333333333333335e-07 s"``) when no other unit
    reproduces it bit for bit.

    Parameters
    ----------
    number : float
        The value in base units (s, B/s, s/B, B).
    quantity : str
        A key of :data:`QUANTITIES` (e.g. ``"latency"``, ``"bandwidth"``, ``"gamma"``).

    Returns
    -------
    str
        Such as ``"1.5 us"``.

    Examples
    --------
    >>> format_quantity(450e9, "bandwidth"), format_quantity(1.5e-6, "latency")
    ('450 GB/s', '1.5 us')
    """
    for unit in _PREFERRED[quantity]:
        factor = QUANTITIES[quantity][unit]
        shown = _scale(number, 1 / factor)
        text = repr(shown).removesuffix(".0")
        if 1 <= abs(shown) < 1000 and _scale(float(text), factor) == number:
            return f"{text} {unit}"
    return f"{float(number)!r} {next(iter(QUANTITIES[quantity]))}"
