"""Every algorithm x collective x rank count x count x dtype x op, against NumPy.

Each schedule goes through ``verify`` and then through the reference interpreter on
every dtype and op.
"""

from __future__ import annotations

import pytest

from collectives import build_schedule, interpret, verify

from .reference import DTYPES, OPS, SERVED, check_outputs, rank_inputs

RANKS = (*range(1, 18), 31, 32, 33, 64)


def counts(nranks: int) -> list[int]:
    """0, 1, ranks-1, ranks+1, a prime, ~100000."""
    return sorted({0, 1, nranks - 1, nranks + 1, 97, 100_003})


#: variants chosen by a parameter: (algorithm, collective, parameters)
VARIANTS = (("rhd", "allreduce", {"doubling": True}),)


def _check(algorithm: str, collective: str, nranks: int, **params: object) -> None:
    for count in counts(nranks):
        schedule = build_schedule(collective, algorithm, nranks, count, **params)
        verify(schedule)
        for seed, dtype in enumerate(DTYPES):
            for op in OPS:
                inputs, full = rank_inputs(collective, nranks, count, dtype, op, seed)
                outputs = interpret(schedule, inputs, op)
                check_outputs(collective, outputs, full, op)


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("algorithm, collective", SERVED)
def test_matches_numpy(algorithm: str, collective: str, nranks: int) -> None:
    _check(algorithm, collective, nranks)


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join([v[0], v[1], *map(str, v[2])]))
def test_variant_matches_numpy(variant: tuple[str, str, dict], nranks: int) -> None:
    algorithm, collective, params = variant
    _check(algorithm, collective, nranks, **params)
