"""``check=True``: ranks agree on what they are about to run before any of it is posted.

Every rank contributes a small signature (collective, count, dtype, op, algorithm and a
checksum of the parameters); the signatures are all-gathered, and when any differ every
rank raises :class:`ArgumentMismatchError` naming the fields and the ranks, instead of
posting messages that would never match and hang.
"""

from __future__ import annotations

import os
import zlib
from reprlib import repr as brief
from typing import Any, Callable, Sequence

from ..errors import CollectivesError

__all__ = ["ArgumentMismatchError", "CHECK_ENV", "check_enabled", "signature", "agree"]

#: environment variable that turns the agreement check on for every call (``1``) or off
CHECK_ENV = "COLLSIM_CHECK"

_FIELDS = ("collective", "count", "dtype", "op", "algorithm", "params")
#: a mismatch message shows rank 0's value and at most this many ranks that differ from it
_SHOWN = 5


class ArgumentMismatchError(CollectivesError, ValueError):
    """Ranks called a collective with arguments that disagree."""


def check_enabled(check: bool | None) -> bool:
    """Return ``check``, or when None whether ``COLLSIM_CHECK`` is set to a true value.

    Parameters
    ----------
    check : bool or None
        The caller's choice; None defers to the environment.

    Returns
    -------
    bool
        Whether to run the agreement check.

    Raises
    ------
    ValueError
        If ``COLLSIM_CHECK`` is set to something other than 1/0, true/false, yes/no,
        on/off or empty.
    """
    if check is not None:
        return bool(check)
    value = os.environ.get(CHECK_ENV, "0").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{CHECK_ENV}={value!r} is not allowed; use 1 or 0")


def signature(collective: str, count: int, dtype: str, op: str, algorithm: str,
              params: dict[str, Any]) -> tuple:
    """Return the signature ranks compare; the parameters enter as a stable checksum.

    Parameters
    ----------
    collective : str
        The collective.
    count : int
        Elements of the working buffer.
    dtype : str
        The dtype's name.
    op : str
        The reduction.
    algorithm : str
        The algorithm asked for.
    params : dict[str, Any]
        The tuning parameters (lists compared as tuples).

    Returns
    -------
    tuple
        ``(collective, count, dtype, op, algorithm, crc32 of the sorted params)``.
    """
    text = repr(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
    return (collective, count, dtype, op, algorithm, zlib.crc32(text.encode()))


def agree(mine: tuple, allgather: Callable[[Any], Sequence[Any]]) -> None:
    """All-gather ``mine`` with ``allgather`` and raise on every rank if any rank differs.

    Parameters
    ----------
    mine : tuple
        This rank's :func:`signature`.
    allgather : callable
        Gathers one object from every rank (a transport's ``allgather_object``).

    Raises
    ------
    ArgumentMismatchError
        Naming each field that differs, what rank 0 passed for it and what the first
        ranks that differ from rank 0 passed.
    """
    rows = list(allgather(mine))
    if all(row == rows[0] for row in rows):
        return
    details = []
    for index, field in enumerate(_FIELDS):
        values = [row[index] for row in rows]
        odd = [r for r, v in enumerate(values) if v != values[0]]
        if odd:
            shown = ", ".join(f"rank {r}: {brief(values[r])}" for r in [0, *odd[:_SHOWN]])
            more = f", ... ({len(odd)} ranks differ from rank 0)" if len(odd) > _SHOWN else ""
            details.append(f"{field} differs ({shown}{more})")
    raise ArgumentMismatchError("ranks called the collective with different arguments: "
                                + "; ".join(details))
