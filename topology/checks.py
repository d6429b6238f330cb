"""Checks of argument values that every layer shares: whole numbers and finite numbers.

``bool`` is a subclass of ``int`` in Python, so ``isinstance(True, int)`` holds; a count, a
rank or a size given as ``True`` is refused here.  This module sits in the lowest layer
(it imports nothing of ours), so :mod:`topology`, :mod:`collectives`, :mod:`simulator`
and the ``collsim`` tools all check their arguments with it.  Messages name the
parameter, the value and what is allowed: ``nranks=0 is not allowed; it must be an
integer >= 1``.
"""

from __future__ import annotations

import math
from reprlib import repr as brief
from typing import Any, TypeGuard

__all__ = ["is_int", "is_number", "check_int", "check_number"]


def is_int(value: Any) -> TypeGuard[int]:
    """Return True for an ``int`` that is not a ``bool``.

    Parameters
    ----------
    value : Any
        The value to test.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_int(3), is_int(True), is_int(3.0)
    (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """Return True for an ``int`` or ``float`` that is not a ``bool``.

    Parameters
    ----------
    value : Any
        The value to test.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_number(2.5), is_number(2), is_number(False), is_number("2")
    (True, True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_int(value: Any, name: str, minimum: int | None = None, maximum: int | None = None,
              *, note: str = "", error: type[Exception] = ValueError) -> int:
    """Return ``value`` when it is an int (not a bool) in ``[minimum, maximum]``.

    Parameters
    ----------
    value : Any
        The value to check.
    name : str
        The parameter's name, as the message shows it.
    minimum, maximum : int or None, optional
        Inclusive bounds; None for none.
    note : str, optional
        Appended to the message (e.g. ``" or None"``, or why the bound is what it is).
    error : type of Exception, optional
        What to raise; default ValueError.

    Returns
    -------
    int
        ``value``.

    Raises
    ------
    ValueError
        (or ``error``) naming ``name``, ``value`` and the bounds.

    Examples
    --------
    >>> check_int(4, "nranks", 1)
    4
    >>> check_int(0, "nranks", 1)
    Traceback (most recent call last):
    ...
    ValueError: nranks=0 is not allowed; it must be an integer >= 1
    >>> check_int(8, "rank", 0, 7)
    Traceback (most recent call last):
    ...
    ValueError: rank=8 is not allowed; it must be an integer in [0, 7]
    """
    low = minimum is None or (is_int(value) and value >= minimum)
    high = maximum is None or (is_int(value) and value <= maximum)
    if not (is_int(value) and low and high):
        raise error(f"{name}={brief(value)} is not allowed; it must be "
                    f"{_bounds('an integer', minimum, maximum)}{note}")
    return value


def check_number(value: Any, name: str, minimum: float = 0.0, *, positive: bool = False,
                 note: str = "", error: type[Exception] = ValueError) -> float:
    """Return ``value`` as a float when it is a finite number ``>= minimum`` (``> 0`` when
    ``positive``).

    Parameters
    ----------
    value : Any
        The value to check (int or float, not bool).
    name : str
        The parameter's name, as the message shows it.
    minimum : float, optional
        Smallest value allowed; default 0.
    positive : bool, optional
        Require ``value > 0`` instead of ``>= minimum``.
    note : str, optional
        Appended to the message (e.g. the unit).
    error : type of Exception, optional
        What to raise; default ValueError.

    Returns
    -------
    float
        ``float(value)``.

    Raises
    ------
    ValueError
        (or ``error``) naming ``name``, ``value`` and what is allowed.

    Examples
    --------
    >>> check_number(5e-6, "alpha", positive=True)
    5e-06
    >>> check_number(float("nan"), "gamma")
    Traceback (most recent call last):
    ...
    ValueError: gamma=nan is not allowed; it must be a finite number >= 0.0
    """
    fine = is_number(value) and math.isfinite(value)
    if not (fine and (value > 0 if positive else value >= minimum)):
        bound = "> 0" if positive else f">= {minimum}"
        raise error(f"{name}={brief(value)} is not allowed; it must be a finite number "
                    f"{bound}{note}")
    return float(value)


def _bounds(kind: str, minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"{kind} in [{minimum}, {maximum}]"
    if minimum is not None:
        return f"{kind} >= {minimum}"
    return kind if maximum is None else f"{kind} <= {maximum}"
