"""What the published curves say of how far a ring step's latency hides behind its data.

Run: ``python benchmarks/bench_pipelining.py [--write [docs/results/pipelining.md]]``

A message of ``b`` bytes over a route of latency ``lat`` and rate ``r`` takes
``max(b / r, lat + min(b, u) / r)`` when its receiver forwards it in units of ``u`` bytes
(:func:`simulator.gpu.hidden_latency`).  A simulated channel stands for ``k`` of NCCL's
channels.  In step (:attr:`topology.LinkFigures.in_step`, the presets' NVLink), the unit
is their FIFO slots side by side, ``k`` slots, so a ring step of up to that pays its
whole latency and then all of its bytes.  Out of step (the presets' network since issue
29), the unit is one channel's share, ``min(b, k slots) / k``: each channel's step pays
the latency and its own bytes while the others' bytes fill the link.

Each curve's compared sizes are priced with the analytic model
(:func:`simulator.analytic.price`) for the candidate the fidelity page chose there
(``docs/results/fidelity.json``, written by ``benchmarks/bench_fidelity.py --write``),
so the choice is held steady and only the rule moves: the network in step (the presets
before issue 29), out of step (now), and NCCL's own model of the same algorithm and
protocol (:func:`simulator.nccl_tuner.nccl_time_us`, tuning.cc), which charges the
latency of every hop once, ``baseLat + nsteps x hwLat + bytes / bw``: the ring's latency
pipelined behind no step of data, no step gated by another.  NCCL's in-switch algorithms
keep the page's prediction (they run Simple).  Scores as :func:`simulator.fidelity.score`.

Last, the measured time of each step of the rings NCCL was told to run across nodes,
``(time - call) / 2(p - 1)``, beside the latency of the ring's slowest route (through the
network), its step's bytes over that route's rate, all of a simulated channel's and one
NCCL channel's share, and what a step over that route costs in step and out of step.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from simulator.analytic import price
from simulator.channel_choice import schedule_params
from simulator.fidelity import Curve, channel_count, machine, read_curves, score
from simulator.gpu import gpu_terms, hidden_latency
from simulator.nccl_tuner import nccl_time_us
from topology.gpu import GpuModel

from results import write  # noqa: E402 - benchmarks/ is the script's folder

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
_LABEL = re.compile(r"^(\w+)(?:\(segments=(\d+)\))?(?: x(\d+))? (\w+)$")

ABOUT = """Each curve's compared sizes priced by the analytic model with the candidate
`docs/results/fidelity.json` chose, NCCL's channels crossing the network in step (the
presets before issue 29) or out of step (now), and NCCL's own model (tuning.cc) of the same
algorithm and protocol; geomean error as the fidelity page.  Then the measured time of a
step of each ring NCCL was told to run across nodes, beside the route latency and bytes
the model charges it."""


def _in_step(model: GpuModel) -> GpuModel:
    """``model`` with NCCL's channels in step on every link kind."""
    return dataclasses.replace(model, links=tuple(dataclasses.replace(f, in_step=True)
                                                  for f in model.links))


def _priced(curve: Curve, chosen: list[str], kept: list[float], rule: str) -> list[float]:
    """Seconds per size of ``curve`` for the chosen candidates under ``rule``: ``"in step"``,
    ``"out of step"`` (the preset) or ``"nccl"`` (NCCL's own model of the same algorithm
    and protocol)."""
    target = machine(curve)
    if rule == "in step":
        assert target.gpu is not None, "the presets have a GPU model"
        target = dataclasses.replace(target, gpu=_in_step(target.gpu))
    out = []
    for n, label, old in zip(curve.nbytes, chosen, kept):
        found = _LABEL.match(label)
        if found is None or found.group(1) not in ("ring", "tree"):
            out.append(old)  # NCCL's in-switch algorithms: Simple, unchanged
            continue
        algorithm, segments, channels, protocol = found.groups()
        if rule == "nccl":
            out.append(1e-6 * nccl_time_us(curve.gpu, algorithm, protocol, n, curve.ranks,
                                           curve.nodes))
            continue
        params: dict[str, Any] = {"channels": int(channels or 1)}
        if segments:
            params["segments"] = int(segments)
        out.append(float(price("allreduce", algorithm, target, [n], protocol=protocol,
                               **params)[0]))
    return out


def _steps(curve: Curve, chosen: list[str]) -> list[str]:
    """Per size of a ring curve across nodes: the measured time of a step, and what the
    model charges a step over its slowest route under the protocol of the fidelity page's
    ``chosen`` candidate (microseconds)."""
    target = machine(curve)
    assert target.gpu is not None, "the presets have a GPU model"
    channels = channel_count(target)
    share = max(1.0, target.gpu.channels / channels)  # NCCL channels a simulated one is
    order = schedule_params("ring", (("channels", channels),), target)["order"][0]
    hops = list(zip(order, order[1:] + order[:1]))
    steps = 2 * (curve.ranks - 1)
    lines = []
    for n, t, label in zip(curve.nbytes, curve.time_s, chosen):
        protocol = label.split()[-1]
        effective, call_s = gpu_terms(target, protocol, "ring", channels)
        slowest = max(hops, key=lambda h: effective.alpha(*h))
        lat, rate = effective.alpha(*slowest), 1 / effective.beta(*slowest)
        step = n / channels / curve.ranks  # a simulated channel's step
        charged = [step / rate + hidden_latency(lat, step, rate, effective.slot_bytes, k)
                   for k in (1.0, share)]  # in step, out of step
        lines.append(f"{curve.name:<28}{n / 2**20:>9.0f}{protocol:>8}"
                     f"{(t - call_s) / steps * 1e6:>10.1f}{lat * 1e6:>9.1f}"
                     f"{step / rate * 1e6:>9.1f}{step / share / rate * 1e6:>7.1f}"
                     + f"{charged[0] * 1e6:>11.1f}{charged[1] * 1e6:>12.1f}")
    return lines


def main() -> None:
    """Print (and with --write, keep) every curve's scores under each rule, and the steps."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, nargs="?", const=RESULTS / "pipelining.md",
                        help="also write the table to this page (default "
                        "docs/results/pipelining.md)")
    args = parser.parse_args()
    page = json.loads((RESULTS / "fidelity.json").read_text())
    chosen = {c["name"]: c for c in page["curves"]}
    rules = (("network in step (before)", "in step"), ("out of step (now)", "out of step"),
             ("NCCL's tuning.cc", "nccl"))
    head = f"{'curve':<30}" + "".join(f"{name:>26}" for name, _ in rules)
    lines = [head, f"{'':<30}" + "    geomean  >=64MiB  worst" * len(rules)]
    curves = read_curves()
    for curve in curves:
        row = chosen[curve.name]
        cells = []
        for _, rule in rules:
            result = score(curve, _priced(curve, row["with"], row["predicted_s"], rule))
            large = "-" if result.geomean_large is None else f"{result.geomean_large:.1%}"
            cells.append(f"{result.geomean:>11.1%}{large:>9}{result.worst:>+7.0%}")
        lines.append(f"{curve.name:<30}" + "".join(cells))
    lines += ["", "a step of the rings across nodes (us): measured; the slowest route's latency, "
              "a simulated channel's bytes over its rate and one NCCL channel's share of "
              "them; what a step over it costs in step (before) and out of step (now)",
              f"{'curve':<28}{'MiB':>9}{'proto':>8}{'measured':>10}{'latency':>9}"
              f"{'bytes':>9}{'share':>7}{'in step':>11}{'out of step':>12}"]
    for curve in curves:
        if curve.algorithm == "ring" and curve.nodes > 1:
            lines += _steps(curve, chosen[curve.name]["with"])
    print("\n".join(lines))
    if args.write:
        write(args.write, "Pipelining: how far a ring step's latency hides behind its data",
              "\n".join(lines), ABOUT)
        print(f"written: {args.write}")


if __name__ == "__main__":
    main()
