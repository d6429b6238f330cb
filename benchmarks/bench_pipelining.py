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
20 x 1,920 B = 38,400 B of data; this benchmark prices every curve with that unit too,
and with NCCL's own model (:func:`simulator.nccl_tuner.nccl_time_us`, tuning.cc), which
charges the latency of every hop once, ``baseLat + nsteps x hwLat + bytes / bw``: the
ring's latency pipelined behind no step of data, and no step gated by another.

Last, the curves on more than a leaf's nodes (the 1,024-GPU one) once more with every
leaf-spine link at a switch's own latency (:data:`SWITCH_S`) in place of half of
tuning.cc's network hop: the preset charges a route through a spine 9 us under LL128
against 5 us within a leaf, where the spine adds one switch and two cables.

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
from simulator.nccl_tuner import nccl_time_us
from topology import Link, Topology
from topology.channels import ranks_per_node
from topology.gpu import GpuModel, LinkFigures
from topology.gpu_presets import DGX_A100_GPU, DGX_H100_GPU

from results import write  # noqa: E402 - benchmarks/ is the script's folder

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
#: one pass of an LL128 channel's warps: 640 threads / 32 x 32 x 8 words x 8 B, 15/16 data
#: (NCCL_LL128_MAX_NTHREADS, NCCL_LL128_SHMEM_ELEMS_PER_THREAD, NCCL_LL128_DATAELEMS)
LL128_PASS_BYTES = 640 * 8 * 8 * 15 // 16
#: a leaf-spine link: NDR switch port-to-port latency, "<150 ns" to "~330 ns" in
#: NVIDIA Quantum-2 (QM9700) summaries (router-switch.com, yobitel.com); 150 ns a link
SWITCH_S = 150e-9
_LABEL = re.compile(r"^(\w+)(?:\(segments=(\d+)\))?(?: x(\d+))? (\w+)$")

ABOUT = """Each curve's compared sizes priced by the analytic model with the candidate
`docs/results/fidelity.json` chose, the LL128 forwarding unit being the FIFO slot (today)
or one pass of a channel's warps (38,400 B), and NCCL's own model (tuning.cc) of the same
algorithm and protocol; geomean error as the fidelity page."""


def _with_unit(model: GpuModel, unit: float | None) -> GpuModel:
    """``model`` with LL128's slot set to ``unit`` (None: as it is)."""
    if unit is None:
        return model
    return dataclasses.replace(model, protocols=tuple(
        dataclasses.replace(p, slot_bytes=unit) if p.name == "LL128" else p
        for p in model.protocols))


def _switch_spines(target: Topology) -> Topology:
    """``target`` with its leaf-spine links of a kind of their own at :data:`SWITCH_S`."""
    model = target.gpu
    assert model is not None, "the presets have a GPU model"
    spine = LinkFigures("ib_spine", 0.98, tuple((p.name, SWITCH_S) for p in model.protocols))
    links = tuple(Link(k.src, k.dst, k.latency_s, k.bandwidth_Bps,
                       "ib_spine" if "spine" in k.src + k.dst else k.kind)
                  for k in target.links)
    return Topology(target.name, target.devices, links, target.placement,
                    gpu=dataclasses.replace(model, links=model.links + (spine,)))


def _priced(curve: Curve, chosen: list[str], kept: list[float],
            unit: float | None | str, spines: bool = False) -> list[float]:
    """Seconds per size of ``curve`` for the chosen candidates, under ``unit`` (``"nccl"``:
    NCCL's own model of the same algorithm and protocol), with ``spines`` at
    :data:`SWITCH_S`."""
    preset = DGX_A100_GPU if curve.gpu == "A100" else DGX_H100_GPU
    target = machine(curve, _with_unit(preset, unit if isinstance(unit, float) else None))
    target = _switch_spines(target) if spines else target
    out = []
    for n, label, old in zip(curve.nbytes, chosen, kept):
        found = _LABEL.match(label)
        if found is None or found.group(1) not in ("ring", "tree"):
            out.append(old)  # NCCL's in-switch algorithms: Simple, unchanged
            continue
        algorithm, segments, channels, protocol = found.groups()
        if unit == "nccl":
            out.append(1e-6 * nccl_time_us(curve.gpu, algorithm, protocol, n, curve.ranks,
                                           curve.nodes))
            continue
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
    units: tuple[tuple[str, float | None | str], ...] = (
        ("FIFO slot (today)", None), ("CTA pass 38,400 B", float(LL128_PASS_BYTES)),
        ("NCCL's tuning.cc", "nccl"))
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
    lines.append("")
    for curve in read_curves():
        target = machine(curve)
        rail = target.route(0, target.nranks - ranks_per_node(target))  # GPU 0 to GPU 0
        if not any("spine" in target.links[i].src + target.links[i].dst for i in rail):
            continue  # a rail's traffic stays within its leaf
        row = chosen[curve.name]
        for name, unit in units[:2]:
            predicted = _priced(curve, row["with"], row["predicted_s"], unit, spines=True)
            result = score(curve, predicted)
            lines.append(f"{curve.name}, spine links at {SWITCH_S * 1e9:.0f} ns, {name}: "
                         f"geomean {result.geomean:.1%}; per size "
                         + " ".join(f"{p / m - 1:+.0%}" for p, m in zip(predicted, curve.time_s)))
    print("\n".join(lines))
    if args.write:
        write(args.write, "Pipelining: how far LL128 hides a step's latency",
              "\n".join(lines), ABOUT)
        print(f"written: {args.write}")


if __name__ == "__main__":
    main()
