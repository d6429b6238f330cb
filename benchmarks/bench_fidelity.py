"""How well the GPU cost model predicts published nccl-tests AllReduce curves.

Run: ``python benchmarks/bench_fidelity.py [--plot fidelity.png] [--data DIR] [--detail]
[--write [docs/results/fidelity.md]]``

Every curve in ``simulator/data/nccl-tests/`` (each CSV names its source, hardware, NCCL
version and the algorithm NCCL ran) is predicted on the DGX preset of its GPU and node
count with the algorithm NCCL ran (:mod:`simulator.fidelity`), and scored over the sizes
where NCCL ran what the model has: geomean error (``exp(mean |log(predicted /
measured)|) - 1``), the same below 1 MiB and from 64 MiB on, and the worst size; then,
for curves of the same machine kind, their time ratio at the sizes both compare (what one
set of figures per machine kind cannot reconcile).  ``--plot`` draws bus
bandwidth per size, the predicted line over the measured points (hollow: not compared).
Multi-node curves are simulated with a channel per NIC; the 1024-GPU curve takes a few
minutes of the run (every size of it is simulated).  ``--write`` puts what it printed in
``docs/results/fidelity.md`` (or the page given), with the command, date and machine on
top, and every prediction, and our best schedule against NCCL's predicted choice (priced
in the model) per size on 1, 8 and 128 DGX-H100 nodes, in the ``.json`` beside it, which
``notebooks/fidelity.ipynb`` draws.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

import topology
from simulator.busbw import bandwidths
from simulator.export import nccl_pair_times
from simulator.fidelity import DATA_DIR, Curve, disagreements, predict, read_curves, score
from simulator.nccl_tuner import nccl_choice, tuner_kind
from simulator.selection import SIZES, tuning_table

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
#: DGX-H100 node counts of the best-schedule-against-NCCL comparison
BEST_NODES = (1, 8, 128)

from results import command, write  # noqa: E402 - benchmarks/ is the script's folder

#: what the page's figures are
ABOUT = """Each published `all_reduce_perf` curve of `simulator/data/nccl-tests/` (its
source in the CSV's header) predicted on the preset of its GPU and node count with the
algorithm and protocol NCCL ran, scored where NCCL ran what the model has: geomean error
`exp(mean |log(predicted/measured)|) - 1`, below 1 MiB, from 64 MiB, and the worst size."""


def _size(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):g} {unit}"
    return f"{nbytes} B"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _plot(results: list[tuple[Curve, list[tuple[str, str | None, float]]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = 3
    rows = -(-len(results) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 3.6 * rows), squeeze=False)
    for ax, (curve, predicted) in zip(axes.flat, results):
        busbw = [bandwidths("allreduce", curve.ranks, n, t)[1] / 1e9
                 for n, t in zip(curve.nbytes, curve.time_s)]
        model = [bandwidths("allreduce", curve.ranks, n, t)[1] / 1e9
                 for n, (_, _, t) in zip(curve.nbytes, predicted)]
        kept = curve.compared
        ax.plot(curve.nbytes, model, "-", color="C0", label="predicted")
        ax.plot([n for n, k in zip(curve.nbytes, kept) if k],
                [b for b, k in zip(busbw, kept) if k], "o", color="C1", label="measured")
        ax.plot([n for n, k in zip(curve.nbytes, kept) if not k],
                [b for b, k in zip(busbw, kept) if not k], "o", mfc="none", color="C1",
                label="measured, not compared")
        ax.set_xscale("log", base=2)
        ax.set_title(curve.name, fontsize=9)
        ax.set_xlabel("bytes")
        ax.set_ylabel("busbw (GB/s)")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(results):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _detail(console: Console, curve: Curve,
            predicted: list[tuple[str, str | None, float]]) -> None:
    view = Table(title=f"{curve.name}: {curve.header.get('source', '')}")
    for column in ("size", "measured (us)", "predicted (us)", "error", "with", "compared"):
        view.add_column(column, justify="right")
    for n, t, (label, protocol, p), kept in zip(curve.nbytes, curve.time_s, predicted,
                                                 curve.compared):
        view.add_row(_size(n), f"{t * 1e6:.1f}", f"{p * 1e6:.1f}", f"{p / t - 1:+.0%}",
                     f"{label} {protocol or ''}", "yes" if kept else "no")
    console.print(view)


def _used(curve: Curve, predicted: list[tuple[str, str | None, float]]) -> str:
    """The candidates the compared sizes were predicted with, in size order."""
    used: list[str] = []
    for (label, protocol, _), kept in zip(predicted, curve.compared):
        name = f"{label} {protocol}" if protocol else label
        if kept and (not used or used[-1] != name):
            used.append(name)
    return " > ".join(used)


def _ran(curve: Curve) -> str:
    """What NCCL ran, as the curve's header says (its settings, or "default")."""
    algorithm = curve.header.get("algorithm", "")
    if algorithm.startswith("NCCL default"):
        return "default"
    return " ".join(part for part in algorithm.replace(",", " ").split()
                    if part.startswith(("NCCL_ALGO=", "NCCL_PROTO=")))


def best_against_nccl(nodes: int) -> dict[str, list]:
    """Per size of the sweep (from 4 B), our best schedule (:func:`simulator.select`'s
    table) and NCCL's predicted choice (:func:`simulator.nccl_tuner.nccl_choice`), both
    priced in the model, for AllReduce on ``nodes`` DGX-H100 nodes."""
    machine = topology.dgx_h100(nodes)
    sizes = [n for n in SIZES if n >= 4]
    table = tuning_table("allreduce", machine)
    priced = nccl_pair_times("allreduce", machine, sizes)
    kind = tuner_kind(machine)
    nccl = [nccl_choice(kind, n, machine.nranks, nodes) for n in sizes]
    best = [table.choice(n) for n in sizes]
    return {"sizes": sizes, "ours": [c.label for c in best],
            "ours_s": [c.predicted_s for c in best],
            "nccl": [f"{a} {p}" for a, p in nccl],
            "nccl_s": [float(priced[pair][i]) for i, pair in enumerate(nccl)]}


def _write(page: Path, lines: list[str], results: list[tuple[Curve, list]]) -> None:
    """``page`` (what was printed, headed by command, date and machine) and its ``.json``."""
    write(page, "Fidelity: the GPU model against published nccl-tests curves",
          "\n".join(lines), ABOUT)
    curves = [{"name": c.name, "ranks": c.ranks, "sizes": list(c.nbytes),
               "measured_s": list(c.time_s), "predicted_s": [t for _, _, t in p],
               "with": [f"{label} {k or ''}".strip() for label, k, _ in p],
               "compared": list(c.compared), "why": c.why} for c, p in results]
    best = {str(nodes): best_against_nccl(nodes) for nodes in BEST_NODES}
    page.with_suffix(".json").write_text(json.dumps(
        {"stamp": command(), "curves": curves, "best_against_nccl": best}, indent=1) + "\n")


def main() -> None:
    """Predict and score every curve; print one row per curve (and per size with --detail)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="folder of curve CSVs")
    parser.add_argument("--plot", type=Path, help="write the busbw plots to this PNG")
    parser.add_argument("--detail", action="store_true", help="print every size of every curve")
    parser.add_argument("--write", type=Path, nargs="?", const=RESULTS / "fidelity.md",
                        help="also write what it printed as this page (default "
                        "docs/results/fidelity.md) and the predictions as its .json")
    args = parser.parse_args()
    console = Console(width=200, highlight=False)
    results = []
    rows = [("curve", "ranks", "NCCL ran", "sizes", "geomean", "<1MiB", ">=64MiB",
             "worst size")]
    notes = []
    for curve in read_curves(args.data):
        predicted = predict(curve)
        results.append((curve, predicted))
        result = score(curve, [t for _, _, t in predicted])
        rows.append((curve.name, f"{curve.ranks}", _ran(curve),
                     f"{result.compared}/{len(curve.nbytes)}", _percent(result.geomean),
                     _percent(result.geomean_small), _percent(result.geomean_large),
                     f"{_size(result.worst_bytes)} ({result.worst:+.0%})"))
        notes.append(f"{curve.name}: predicted with {_used(curve, predicted)}"
                     + (f"; not compared: {curve.why}" if curve.why else ""))
        if args.detail:
            _detail(console, curve, predicted)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i in (0, 2) else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))) for row in rows]
    lines += [""] + notes + [""]
    for pair in disagreements([curve for curve, _ in results]):
        lines.append(f"same machine kind, {pair.second} / {pair.first} at the sizes both "
                     f"compare: " + ", ".join(f"{_size(n)} {r:.2f}"
                                              for n, r in zip(pair.nbytes, pair.ratios))
                     + f" (up to {pair.spread:.0%} apart)")
    for line in lines:
        console.print(line)
    if args.write:
        _write(args.write, lines, results)
        console.print(f"written: {args.write}, {args.write.with_suffix('.json')}")
    if args.plot:
        _plot(results, args.plot)
        console.print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
