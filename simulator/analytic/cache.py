"""The model's caches: entries keyed by ids, the objects they are of kept alive
and checked; positions numbered alike however they were described."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np


_KEPT = 4096  # entries of each cache below before it is emptied


def _found(cache: dict[Any, tuple[tuple[Any, ...], Any]], key: Any,
           held: tuple[Any, ...]) -> Any:
    """``cache[key]`` if there and of the objects ``held`` (else None)."""
    found = cache.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], held)):
        return found[1]
    return None


def _store(cache: dict[Any, tuple[tuple[Any, ...], Any]], key: Any, held: tuple[Any, ...],
           value: Any) -> Any:
    """Keep ``value`` as ``cache[key]`` with the objects ``held`` alive (the cache emptied
    first when full); return it."""
    if len(cache) > _KEPT:
        cache.clear()
    cache[key] = (held, value)
    return value


def _cached(cache: dict[Any, tuple[tuple[Any, ...], Any]], key: Any, held: tuple[Any, ...],
            make: Any) -> Any:
    """``cache[key]``, made by ``make()`` unless there; ``key`` holds ids, ``held`` the
    objects they are of (kept alive with the entry, and checked)."""
    found = _found(cache, key, held)
    return _store(cache, key, held, make()) if found is None else found
_DIGESTS: dict[tuple[int, ...], tuple[tuple[Any, ...], int]] = {}
#: positions numbered so far, by a few of their values (then a mark per other positions
#: with the same: bytes, which the garbage collector does not track)
_NUMBERED: dict[bytes, tuple[tuple[np.ndarray, ...], int]] = {}
_NUMBERS = itertools.count()  # never reused: a number emptied from _NUMBERED stays its own


def _digest(messages: Any) -> int:
    """A number for the positions of a class (and the first units it carries, and its
    messages' kinds: rows are merged by them), the same for equal positions (cached by
    its arrays' identity)."""
    held = (messages.src, messages.dst, messages.rounds, messages.units, messages.kinds)
    return _cached(_DIGESTS, tuple(map(id, held)), held, lambda: _numbered(
        tuple(a for a in held if a is not None)))


def _numbered(arrays: tuple[np.ndarray, ...]) -> int:
    """The number of ``arrays``' values: that of equal arrays numbered before (compared
    whole, where a few of their values agree: a pass, several times cheaper than a hash
    of them), else a new one."""
    key = b"".join(np.int64(a.size).tobytes() + a.reshape(-1)[::max(1, a.size // 16)].tobytes()
                   for a in arrays)
    if len(_NUMBERED) > _KEPT:
        _NUMBERED.clear()
    found = _NUMBERED.get(key)
    while found is not None:
        known, number = found
        if len(known) == len(arrays) and all(a is b or np.array_equal(a, b)
                                             for a, b in zip(arrays, known)):
            return number
        key += b"+"
        found = _NUMBERED.get(key)
    _NUMBERED[key] = (arrays, next(_NUMBERS))
    return _NUMBERED[key][1]
