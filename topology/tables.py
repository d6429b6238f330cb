"""The key check every table of a topology file goes through (:mod:`.files`, :mod:`.gpu_files`)."""

from __future__ import annotations

from reprlib import repr as brief
from typing import Any

from .errors import TopologyError

__all__ = ["check_keys"]


def check_keys(table: Any, allowed: dict[str, bool], where: str) -> dict[str, Any]:
    """Return ``table`` if it is a table with every required key and no unknown one.

    Parameters
    ----------
    table : Any
        The value read from the file.
    allowed : dict of str to bool
        Every key allowed, mapped to whether it is required.
    where : str
        The table's place in the file, for the error message.

    Returns
    -------
    dict

    Raises
    ------
    TopologyError
        Naming the place, the key and what is allowed.
    """
    if not isinstance(table, dict):
        raise TopologyError(f"{where} = {brief(table)} is not allowed; it must be a table")
    for key in table:
        if key not in allowed:
            raise TopologyError(f"{where}: unknown key {key!r} (= {brief(table[key])}); allowed "
                                f"keys: {', '.join(allowed)}")
    for key, required in allowed.items():
        if required and key not in table:
            raise TopologyError(f"{where}: the key {key!r} is missing")
    return table
