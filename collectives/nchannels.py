"""Bounds on the channel count from the environment, as NCCL_MIN/MAX_NCHANNELS for NCCL.

``COLLSIM_MIN_NCHANNELS`` and ``COLLSIM_MAX_NCHANNELS`` bound every channel count used:
the counts selection tries (:func:`simulator.selection.channel_counts`) and a ``channels=``
passed to a collective (:mod:`collectives.api`), which is raised to the minimum or lowered
to the maximum.  Every rank of a job must see the same values.
"""

from __future__ import annotations

import os
from typing import Mapping

from .build import MAX_CHANNELS

__all__ = ["MIN_ENV", "MAX_ENV", "channel_bounds", "clamp_channels"]

#: environment variable: the fewest channels (as ``NCCL_MIN_NCHANNELS``)
MIN_ENV = "COLLSIM_MIN_NCHANNELS"
#: environment variable: the most channels (as ``NCCL_MAX_NCHANNELS``)
MAX_ENV = "COLLSIM_MAX_NCHANNELS"


def _read(environ: Mapping[str, str], name: str) -> int | None:
    text = environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_CHANNELS:
        raise ValueError(f"{name}={text!r} is not allowed; it must be an integer in "
                         f"[1, {MAX_CHANNELS}]")
    return value


def channel_bounds(environ: Mapping[str, str] | None = None) -> tuple[int, int | None]:
    """Return ``(fewest, most)`` channels from the environment (``most`` None: no bound).

    Parameters
    ----------
    environ : mapping, optional
        The environment (``os.environ`` by default).

    Returns
    -------
    tuple of (int, int or None)

    Raises
    ------
    ValueError
        If a variable is not an integer >= 1, or the minimum exceeds the maximum.

    Examples
    --------
    >>> channel_bounds({"COLLSIM_MAX_NCHANNELS": "4"})
    (1, 4)
    """
    environ = os.environ if environ is None else environ
    low, high = _read(environ, MIN_ENV), _read(environ, MAX_ENV)
    if low is not None and high is not None and low > high:
        raise ValueError(f"{MIN_ENV}={low} exceeds {MAX_ENV}={high}; the minimum must not "
                         f"exceed the maximum")
    return low or 1, high


def clamp_channels(channels: int, environ: Mapping[str, str] | None = None) -> int:
    """Return ``channels`` raised to the minimum and lowered to the maximum of the environment.

    Parameters
    ----------
    channels : int
        A channel count.
    environ : mapping, optional
        The environment (``os.environ`` by default).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``channels`` is not an integer >= 1, or as :func:`channel_bounds`.

    Examples
    --------
    >>> clamp_channels(8, {"COLLSIM_MAX_NCHANNELS": "2"}), clamp_channels(1, {})
    (2, 1)
    """
    if isinstance(channels, bool) or not isinstance(channels, int) or channels < 1:
        raise ValueError(f"channels={channels!r} is not allowed; it must be an integer >= 1")
    low, high = channel_bounds(environ)
    return max(low, channels if high is None else min(channels, high))
