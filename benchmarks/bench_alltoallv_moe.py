"""A MoE dispatch's AllToAllv on a simulated DGX-H100 cluster, with each algorithm.

Usage: ``python benchmarks/bench_alltoallv_moe.py [--nodes 8] [--tokens 4096]
[--write docs/results/alltoallv_moe.md]``.

Every GPU holds ``--tokens`` tokens of ``--hidden`` bfloat16 elements and one expert
(``nodes * 8`` experts); each token goes to its ``--top-k`` experts, drawn with
Zipf-skewed popularity (exponent ``--skew``, a fixed seed), so some GPUs receive several
times their share and some pairs exchange nothing.  ``counts[i][j]`` is the elements GPU
``i`` sends GPU ``j``.  Each algorithm that runs an AllToAllv (pairwise, linear) is played
by the simulator on ``topology.dgx_h100(nodes)``; beside them the same call padded to its
largest block (every block that size), which Bruck can run, and the uniform AllToAll of
the same total bytes (no skew), to show what the skew costs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import topology  # noqa: E402
from collectives import build_schedule  # noqa: E402
from simulator import simulate  # noqa: E402
from results import Output, write  # noqa: E402

BF16 = 2  # bytes per element


def moe_counts(gpus: int, tokens: int, hidden: int, top_k: int, skew: float,
               seed: int = 0) -> np.ndarray:
    """``counts[i][j]``: elements GPU ``i`` sends the expert on GPU ``j``."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, gpus + 1) ** skew
    popularity = rng.permutation(popularity / popularity.sum())
    routed = np.stack([rng.multinomial(tokens * top_k, popularity) for _ in range(gpus)])
    return routed * hidden


def _row(out: Output, name: str, seconds: float, nbytes: int) -> None:
    out(f"{name:>34}  {seconds * 1e3:10.3f}  {nbytes / seconds / 1e9:12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--skew", type=float, default=1.0)
    parser.add_argument("--write", type=Path, help="also write the table as this page")
    args = parser.parse_args()
    out = Output()
    machine = topology.dgx_h100(args.nodes)
    gpus = machine.nranks
    counts = moe_counts(gpus, args.tokens, args.hidden, args.top_k, args.skew)
    matrix = tuple(tuple(int(c) for c in row) for row in counts)
    largest = int(counts.max())
    total = int(counts.sum())
    received = counts.sum(axis=0)
    out(f"MoE dispatch on {machine.name}: {gpus} GPUs, {args.tokens} tokens x top-{args.top_k} "
        f"of {args.hidden} bf16 each, Zipf skew {args.skew}")
    out(f"bytes sent per GPU {args.tokens * args.top_k * args.hidden * BF16 / 2**20:.0f} MiB; "
        f"received per GPU {received.min() * BF16 / 2**20:.0f} to "
        f"{received.max() * BF16 / 2**20:.0f} MiB; largest block "
        f"{largest * BF16 / 2**20:.2f} MiB; empty blocks {int((counts == 0).sum())}")
    out()
    out(f"{'algorithm':>34}  {'time (ms)':>10}  {'GB/s per GPU':>12}")
    per_gpu = total * BF16 // gpus  # what each GPU sends on average, bytes
    for algorithm in ("pairwise", "linear"):
        schedule = build_schedule("alltoall", algorithm, gpus, largest, counts=matrix)
        result = simulate(schedule, machine, BF16, trace=False, verify=False)
        _row(out, f"{algorithm} (alltoallv)", result.time_s, per_gpu)
    for algorithm in ("pairwise", "linear", "bruck_alltoall"):
        schedule = build_schedule("alltoall", algorithm, gpus, largest)
        result = simulate(schedule, machine, BF16, trace=False, verify=False)
        _row(out, f"{algorithm} (padded to the largest)", result.time_s, per_gpu)
    even = total // (gpus * gpus)
    for algorithm in ("pairwise", "linear", "bruck_alltoall"):
        schedule = build_schedule("alltoall", algorithm, gpus, even)
        result = simulate(schedule, machine, BF16, trace=False, verify=False)
        _row(out, f"{algorithm} (uniform, same bytes)", result.time_s, per_gpu)
    if args.write:
        write(args.write, "MoE-shaped AllToAllv on a simulated DGX-H100 cluster", out.text,
              "Simulated (the discrete-event simulator on `topology.dgx_h100`, its GPU "
              "model), not measured. GB/s per GPU is the average bytes a GPU sends over "
              "the time.")


if __name__ == "__main__":
    main()
