"""Message sizes as the command line writes them (nccl-tests' ``-b 8 -e 128M``)."""

from __future__ import annotations

import argparse
import re

__all__ = ["parse_size"]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """Parse ``"64"``, ``"8K"``, ``"1M"``, ``"1G"`` (powers of 1024) into bytes.

    Parameters
    ----------
    text : str
        A whole number with an optional ``K``, ``M`` or ``G`` and ``B`` (any case).

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    argparse.ArgumentTypeError
        Naming the text and the forms allowed.

    Examples
    --------
    >>> parse_size("8K"), parse_size("16M"), parse_size("3"), parse_size("1G")
    (8192, 16777216, 3, 1073741824)
    """
    found = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text.upper())
    if not found:
        raise argparse.ArgumentTypeError(f"size {text!r} is not allowed; use e.g. 64, 8K, 1M, 1G")
    return int(found[1]) * _UNITS[found[2]]
