"""Fit on one published curve of a cluster, predict the others of the same cluster.

Run: ``python benchmarks/bench_fit.py [--output docs/results/fit.md]``

For every group of curves of one cluster in ``simulator/data/nccl-tests`` (:data:`GROUPS`,
with why they are one cluster), the GPU model is fitted to each curve in turn
(:func:`collsim.fit.figures.fit`) and every other curve of the group is predicted on the
fitted figures and on the unfitted preset (:func:`collsim.fit.figures.check`), scored as
``benchmarks/bench_fidelity.py`` scores the published curves.  Writes the table, with the
command, date and machine on top, to ``--output``.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time
from pathlib import Path

from collsim.fit.figures import FIGURES, check, fit, preset_of
from simulator.fidelity import DATA_DIR, read_curve

#: curves of one cluster: (group, why, curve stems)
GROUPS = (
    ("H100 IB, nccl-tests#309", "one thread's 8x H100 NDR nodes (8 NICs per node): 8 "
     "nodes with NCCL's defaults and tuned (NCCL_MIN_CTAS=24, NCCL_IB_QPS_PER_CONNECTION=2; "
     "one comment), 2 nodes with Ring and the tuned settings (the same comment), 2 nodes "
     "with NCCL's defaults (the opening post, Dell XE9680)",
     ("h100_8node_default", "h100_8node_tuned", "h100_2node_ring_nccl2.26",
      "h100_2node_default_nccl2.26.2")),
    ("A100 RoCE, OCI", "OCI BM.GPU4.8 / BM.GPU.B4.8 (8x A100-SXM4-40GB, RoCE cluster "
     "network), oracle-quickstart/oci-hpc-oke: 2 nodes default and Ring",
     ("a100_2node_roce_default", "a100_2node_ring_nccl2.29.3")),
)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _figure(name: str, value: float, determined: float) -> str:
    text = f"{value * 1e6:.2f}" if name == "launch" else f"{value:.3f}"
    return text if determined >= 0.5 else f"({text})"


def main() -> None:
    """Fit each curve of each group, score the rest; print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=Path("docs/results/fit.md"))
    args = parser.parse_args()
    rows = ["| fitted on | predicted | same settings | fitted: geomean | <1MiB | >=64MiB "
            "| preset: geomean | <1MiB | >=64MiB |", "|---|---|---|---|---|---|---|---|---|"]
    started = time.time()
    figures = ["| fitted on | " + " | ".join(f.name for f in FIGURES) + " |",
               "|---|" + "---|" * len(FIGURES)]
    for group, why, names in GROUPS:
        curves = {n: read_curve(DATA_DIR / f"{n}.csv") for n in names}
        for fitted_on in names:
            result = fit([curves[fitted_on]])
            print(f"{group}: fitted on {fitted_on} ({time.time() - started:.0f} s); "
                  f"undetermined: {', '.join(result.undetermined) or 'none'}", flush=True)
            figures.append(f"| {fitted_on} | " + " | ".join(
                _figure(f.name, result.values[f.name], result.determined[f.name])
                for f in FIGURES) + " |")
            own, _ = result.scores()[0]
            rows.append(f"| {fitted_on} | (itself) | | {_percent(own.geomean)} | "
                        f"{_percent(own.geomean_small)} | {_percent(own.geomean_large)} | "
                        "| | |")
            for other in names:
                if other == fitted_on:
                    continue
                _, fitted = check(curves[other], result.model)
                _, preset = check(curves[other], preset_of(curves[other].gpu))
                same = "yes" if curves[other].priced_settings == curves[fitted_on].priced_settings \
                    else "no"
                rows.append(f"| {fitted_on} | {other} | {same} | {_percent(fitted.geomean)} | "
                            f"{_percent(fitted.geomean_small)} | "
                            f"{_percent(fitted.geomean_large)} | {_percent(preset.geomean)} | "
                            f"{_percent(preset.geomean_small)} | "
                            f"{_percent(preset.geomean_large)} |")
                print(rows[-1], flush=True)
    groups = "\n".join(f"- {group}: {why}" for group, why, _ in GROUPS)
    text = (f"# Fitted on one curve, predicting the others of its cluster\n\n"
            f"`python benchmarks/bench_fit.py`, {datetime.date.today()}, "
            f"{platform.machine()} {platform.system()} ({time.time() - started:.0f} s)\n\n"
            f"Groups:\n{groups}\n\n" + "\n".join(rows) + "\n\n"
            "Fitted figures (launch in us, efficiencies as fractions, the others as factors on "
            "the preset's; in brackets: not determined by the curve, the preset's nearly):\n\n"
            + "\n".join(figures) + "\n")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
