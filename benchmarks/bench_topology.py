"""How long building topologies and routing on them takes.

Run: ``python benchmarks/bench_topology.py [--nodes 128] [--flat-ranks 1024]``

The simulator asks ``route(a, b)`` for every transfer; routes are cached per pair, so what
matters is the first query of each pair: ring neighbours (natural and ``ring_order``) and
recursive-doubling partners (``a ^ 2**k``) on a large cluster.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

from rich.console import Console
from rich.table import Table

import topology


def _time(function: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def _routes(t: topology.Topology, pairs: list[tuple[int, int]]) -> Callable[[], int]:
    return lambda: sum(len(t.route(a, b)) for a, b in pairs)


def main() -> None:
    """Print a table of build and route times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=128, help="DGX H100 nodes (default 128)")
    parser.add_argument("--flat-ranks", type=int, default=1024, help="ranks of flat (1024)")
    args = parser.parse_args()
    table = Table(title="topology build and route times (first query of each pair)")
    for column in ("what", "items", "seconds"):
        table.add_column(column)
    seconds, dgx = _time(lambda: topology.dgx_h100(args.nodes))
    p = dgx.nranks
    table.add_row(f"build dgx_h100({args.nodes}): {len(dgx.links)} links", "1", f"{seconds:.3f}")
    ring = [(r, (r + 1) % p) for r in range(p)]
    table.add_row("routes, ring neighbours (natural order)", str(p),
                  f"{_time(_routes(dgx, ring))[0]:.3f}")
    seconds, order = _time(lambda: topology.ring_order(topology.dgx_h100(args.nodes)))
    table.add_row("ring_order (on a fresh copy)", "1", f"{seconds:.3f}")
    fresh = topology.dgx_h100(args.nodes)
    pairs = [(order[i], order[(i + 1) % p]) for i in range(p)]
    table.add_row("routes, ring neighbours (ring_order)", str(p),
                  f"{_time(_routes(fresh, pairs))[0]:.3f}")
    partners = [(a, a ^ (1 << k)) for a in range(p) for k in range(p.bit_length() - 1)
                if a ^ (1 << k) < p]
    table.add_row("routes, recursive-doubling partners", str(len(partners)),
                  f"{_time(_routes(fresh, partners))[0]:.3f}")
    table.add_row("routes again (cached), recursive doubling", str(len(partners)),
                  f"{_time(_routes(fresh, partners))[0]:.3f}")
    seconds, flat = _time(lambda: topology.flat(args.flat_ranks, 1e-6, 1e-10))
    table.add_row(f"build flat({args.flat_ranks}): {len(flat.links)} links", "1",
                  f"{seconds:.3f}")
    ring = [(r, (r + 1) % flat.nranks) for r in range(flat.nranks)]
    table.add_row("routes, flat ring neighbours", str(flat.nranks),
                  f"{_time(_routes(flat, ring))[0]:.3f}")
    Console().print(table)


if __name__ == "__main__":
    main()
