"""What the published curves say of how far LL128 pipelines a step's latency behind its data.

Run: ``python benchmarks/bench_pipelining.py [--write [docs/results/pipelining.md]]``

A message of ``b`` bytes over a route of latency ``lat`` and rate ``r`` takes
``max(b / r, lat + min(b, u) / r)`` when its receiver forwards it in units of ``u`` bytes
(:func:`simulator.gpu.hidden_latency`).  Today ``u`` is the protocol's FIFO slot (for
LL128 562.5 KiB a channel: NCCL's buffer over ``NCCL_STEPS``), so a ring step of up to
one slot pays its whole latency on top of its data.  Within a step NCCL's LL128 forwards
less: every warp of the channel's 640 threads polls the flags of its own 2 KiB of lines
and passes them on (``src/device/prims_ll128.h``: ``WireWordPerSlice`` = 32 threads x
``NCCL_LL128_SHMEM_ELEMS_PER_THREAD`` = 8 words), so one pass of the 20 warps moves
20 x 1,920 B = 38,400 B of data; this benchmark prices every curve with that unit too.

Each compared size of every curve is priced with the analytic model
(:func:`simulator.analytic.price`) for the candidate the fidelity page chose there
(``docs/results/fidelity.json``, written by ``benchmarks/bench_fidelity.py --write``),
so the choice is held steady and only the unit moves; NCCL's in-switch algorithms keep
the page's prediction (they run Simple).  Scores as :func:`simulator.fidelity.score`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from simulator.analytic import price
from simulator.fidelity import Curve, machine, read_curves, score
from topology.gpu import GpuModel
from topology.gpu_presets import DGX_A100_GPU, DGX_H100_GPU

from results import write  # noqa: E402 - benchmarks/ is the script's folder

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
#: one pass of an LL128 channel's warps: 640 threads / 32 x 32 x 8 words x 8 B, 15/16 data
#: (NCCL_LL128_MAX_NTHREADS, NCCL_LL128_SHMEM_ELEMS_PER_THREAD, NCCL_LL128_DATAELEMS)
LL128_PASS_BYTES = 640 * 8 * 8 * 15 // 16
_LABEL = re.compile(r"^(\w+)(?:\(segments=(\d+)\))?(?: x(\d+))? (\w+)$")

ABOUT = """Each curve's compared sizes priced by the analytic model with the candidate
`docs/results/fidelity.json` chose, the LL128 forwarding unit being the FIFO slot (today)
or one pass of a channel's warps (38,400 B); geomean error as the fidelity page."""


def _with_unit(model: GpuModel, unit: float | None) -> GpuModel:
    """``model`` with LL128's slot set to ``unit`` (None: as it is)."""
    if unit is None:
        return model
    return dataclasses.replace(model, protocols=tuple(
        dataclasses.replace(p, slot_bytes=unit) if p.name == "LL128" else p
        for p in model.protocols))


def _priced(curve: Curve, chosen: list[str], kept: list[float], unit: float | None) -> list[float]:
    """Seconds per size of ``curve`` for the chosen candidates, under ``unit``."""
    preset = DGX_A100_GPU if curve.gpu == "A100" else DGX_H100_GPU
    target = machine(curve, _with_unit(preset, unit))
    out = []
    for n, label, old in zip(curve.nbytes, chosen, kept):
        found = _LABEL.match(label)
        if found is None or found.group(1) not in ("ring", "tree"):
            out.append(old)  # NCCL's in-switch algorithms: Simple, unchanged
            continue
        algorithm, segments, channels, protocol = found.groups()
        params: dict[str, Any] = {"channels": int(channels or 1)}
        if segments:
            params["segments"] = int(segments)
        out.append(float(price("allreduce", algorithm, target, [n], protocol=protocol,
                               **params)[0]))
    return out


def main() -> None:
    """Print (and with --write, keep) every curve's scores under both units."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, nargs="?", const=RESULTS / "pipelining.md",
                        help="also write the table to this page (default "
                        "docs/results/pipelining.md)")
    args = parser.parse_args()
    page = json.loads((RESULTS / "fidelity.json").read_text())
    chosen = {c["name"]: c for c in page["curves"]}
    units = (("FIFO slot (today)", None), ("CTA pass 38,400 B", float(LL128_PASS_BYTES)))
    head = f"{'curve':<30}" + "".join(f"{name:>26}" for name, _ in units)
    lines = [head, f"{'':<30}" + "    geomean  >=64MiB  worst" * len(units)]
    for curve in read_curves():
        row = chosen[curve.name]
        cells = []
        for _, unit in units:
            result = score(curve, _priced(curve, row["with"], row["predicted_s"], unit))
            large = "-" if result.geomean_large is None else f"{result.geomean_large:.1%}"
            cells.append(f"{result.geomean:>11.1%}{large:>9}{result.worst:>+7.0%}")
        lines.append(f"{curve.name:<30}" + "".join(cells))
    print("\n".join(lines))
    if args.write:
        write(args.write, "Pipelining: how far LL128 hides a step's latency",
              "\n".join(lines), ABOUT)
        print(f"written: {args.write}")


if __name__ == "__main__":
    main()
