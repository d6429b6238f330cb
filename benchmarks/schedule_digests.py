"""Digests of generated schedules, to show that a refactoring changes no schedule.

Run ``python benchmarks/schedule_digests.py record before.json`` on the old code, then
``python benchmarks/schedule_digests.py compare before.json`` on the new: it exits 1 and
lists the cases whose ``Schedule.to_json()`` changed or that are gone (cases new since the
record, of an algorithm added since, are counted apart). The cases cover every algorithm x
collective it runs x p in {1, 2, 3, 5, 8, 13, 16, 17, 33} x counts {0, 1, 7, 100003, 2**20 + 3},
several ``segments`` for tree and pipeline, and a reversed ``order`` (about 10 s).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any, Callable, Iterator

from collectives import ALGORITHMS, BLOCK_COLLECTIVES, build_schedule
from collectives.build import _build
from collectives.registry import names

RANKS = (1, 2, 3, 5, 8, 13, 16, 17, 33)
COUNTS = (0, 1, 7, 100003, 2**20 + 3)
SEGMENTED = [{}, {"segments": 1}, {"segments": 2}, {"segments": 5}, {"segments": 64}]
PARAMS: dict[str, list[dict[str, Any]]] = {"ring": [{}], "rhd": [{}], "tree": SEGMENTED,
                                           "pipeline": SEGMENTED}


def cases() -> Iterator[tuple[str, str, int, int, dict[str, Any]]]:
    """Yield ``(algorithm, collective, nranks, count, params)`` for every case."""
    for algorithm in ALGORITHMS:
        for collective in (c for c in BLOCK_COLLECTIVES if algorithm in names(collective=c)):
            for nranks in RANKS:
                for count in COUNTS:
                    for params in PARAMS.get(algorithm, [{}]):
                        yield algorithm, collective, nranks, count, params
                    if nranks in (5, 16):
                        reverse = tuple(range(nranks))[::-1]
                        yield algorithm, collective, nranks, count, {"order": reverse}


def digests() -> dict[str, str]:
    """Return the sha256 of each case's ``Schedule.to_json()``, keyed by the case."""
    out = {}
    for algorithm, collective, nranks, count, params in cases():
        _build.cache_clear()
        schedule = build_schedule(collective, algorithm, nranks, count, **params)
        key = f"{algorithm}/{collective}/{nranks}/{count}/{sorted(params.items())}"
        out[key] = hashlib.sha256(schedule.to_json().encode()).hexdigest()
    return out


def record_or_compare(description: str, now: Callable[[], dict[str, str]]) -> int:
    """Record the digests ``now()`` returns, or compare them with a record; return the
    exit status (1 when some differ).

    Parameters
    ----------
    description : str
        The command line's description.
    now : callable
        Returns the digests, keyed by case.

    Returns
    -------
    int
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("mode", choices=("record", "compare"))
    parser.add_argument("path", help="JSON file of digests")
    args = parser.parse_args()
    found = now()
    if args.mode == "record":
        with open(args.path, "w") as file:
            json.dump(found, file, indent=0)
        print(f"{len(found)} cases recorded in {args.path}")
        return 0
    with open(args.path) as file:
        before = json.load(file)
    changed = sorted(key for key in before if before[key] != found.get(key))
    new = found.keys() - before.keys()  # an algorithm added since the record
    print(f"{len(before)} cases recorded, {len(found)} now ({len(new)} new), "
          f"{len(changed)} differ")
    print("\n".join(changed))
    return 1 if changed else 0


def main() -> int:
    """Record or compare the digests; return the exit status."""
    return record_or_compare(__doc__.splitlines()[0], digests)

if __name__ == "__main__":
    sys.exit(main())
