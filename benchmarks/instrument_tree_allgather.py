"""Tree AllGather: simulated time on ``topology.flat`` against :func:`simulator.cost`.

Run: ``python benchmarks/instrument_tree_allgather.py [--quick]``

Prints the worst relative error per ``p`` over segment counts and sizes (even and
uneven), and the worst overall.
"""

from __future__ import annotations

import argparse

import topology
from collectives import build_schedule
from simulator import cost, simulate

ALPHA, BETA, GAMMA = 1.5e-6, 2.0e-10, 7.0e-11


def main() -> None:
    """Print the largest relative error of the cost per rank count."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    args = parser.parse_args()
    worst_all = 0.0
    for p in [*range(2, 18), 32, 64]:
        flat = topology.flat(p, ALPHA, BETA)
        depth = (p - 1).bit_length()
        worst, where = 0.0, None
        for segments in sorted({1, 2, 3, 2 * depth, 2 * depth + 3, p}):
            counts = [2 * segments * p * 16] if args.quick else [
                2 * segments * p * 16, 2 * segments * p * 1024, 2 * segments * p * 5 + 3, 97]
            for count in counts:
                schedule = build_schedule("allgather", "tree", p, count, segments=segments)
                simulated = simulate(schedule, flat, gamma=GAMMA, trace=False).time_s
                predicted = cost("allgather", "tree", p, count * 4, ALPHA, BETA, GAMMA,
                                 segments=segments)
                error = (predicted - simulated) / simulated if simulated else predicted
                if abs(error) > abs(worst):
                    worst, where = error, (segments, count)
        worst_all = max(worst_all, abs(worst))
        print(f"p={p:3d}  worst relative error {worst:+.3e}  at (segments, count)={where}")
    print(f"worst overall {worst_all:.3e}")


if __name__ == "__main__":
    main()
