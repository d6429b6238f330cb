"""Predicted busbw with channels on DGX-H100 presets, next to each machine's bound.

Run ``python benchmarks/bench_channels.py [--nodes 1 2 4 8 16] [--json out.json]
[--write docs/results/channels.md]`` (``--write``: also the printed tables as a page of
``docs/results/``, with the command, date and machine on top).

Table 1: AllReduce of 4 GiB per algorithm (ring, tree, rhd, pipeline, hier) on
``dgx_h100(nodes)``, each with the channel count (of
:func:`simulator.channel_choice.channel_counts`: 1 and the NICs per node) and, for hier,
the inner algorithm (ring, tree, rhd) that the simulator predicts fastest, with default
segments; orders from :func:`topology.channels.channel_orders` (and the tree over nodes,
``ranks_per_node``, from :func:`simulator.channel_choice.schedule_params`).  The bound is the
preset's own link figures: one GPU's NVLink rate inside one node, NICs per node x NIC rate
across nodes (busbw counts ``2(p-1)/p`` of the vector per rank, as nccl-tests does).

Table 2: ring and tree (best channels) against hier (best inner algorithm and channels)
at small and mid sizes on the largest machine.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import topology
from collectives import build_schedule
from simulator import simulate
from simulator.busbw import bandwidths
from simulator.channel_choice import HIER_INNER, channel_counts, schedule_params
from topology.channels import nics_per_node

from results import Output, write

ALGORITHMS = ("ring", "tree", "rhd", "pipeline", "hier")

#: what the page's figures are
ABOUT = """Predicted by the simulator (not measured).  Table 1: busbw of a 4 GiB AllReduce
per algorithm on `dgx_h100(nodes)`, each with the channel count (`c1`, `c8`) and, for
hier, the inner algorithm it predicts fastest; the bound is NICs per node x the NIC's
achievable rate (one GPU's achievable NVLink rate on one node).  Table 2: ring, tree and
hier (best channels) at small and mid sizes on the largest machine, time in us."""


def bound_Bps(machine: topology.Topology) -> float:
    """The busbw bound from the preset's links: NICs x NIC rate, or one GPU's NVLink, times
    the achievable fraction of that link kind when the preset carries a GPU model."""
    nics = nics_per_node(machine)
    kind = "ib" if nics else "nvlink"
    rate = next(link.bandwidth_Bps for link in machine.links
                if link.kind == kind and link.src.startswith("n0."))
    efficiency = machine.gpu.figures(kind).efficiency if machine.gpu is not None else 1.0
    return rate * max(nics, 1) * efficiency


def variants(algorithm: str, machine: topology.Topology) -> list[dict]:
    """The parameter sets tried for ``algorithm``."""
    counts = channel_counts(machine)
    if algorithm != "hier":
        return [{"channels": c} for c in counts]
    size = machine.nranks // max(1, len(topology.order.node_groups(machine)))
    return [{"channels": c, "inner": inner, "ranks_per_node": size}
            for inner in HIER_INNER for c in counts]


def best(algorithm: str, machine: topology.Topology, nbytes: int) -> tuple[float, dict]:
    """The least simulated time of ``algorithm`` over its variants, and that variant."""
    found = []
    for params in variants(algorithm, machine):
        schedule = build_schedule("allreduce", algorithm, machine.nranks, nbytes // 4,
                                  **schedule_params(algorithm, tuple(params.items()), machine))
        found.append((simulate(schedule, machine, trace=False).time_s, params))
    return min(found, key=lambda pair: pair[0])


def main() -> None:
    """Print both tables (and write them as JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--nbytes", type=int, default=4 << 30)
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[1 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20])
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--write", type=Path, help="also write the tables as this page")
    args = parser.parse_args()
    rows, small = [], []
    out = Output()
    out(f"# AllReduce {args.nbytes} B, busbw GB/s (chosen channels; hier: inner algorithm)")
    out(f"{'nodes':>5} {'bound':>7} " + " ".join(f"{a:>16}" for a in ALGORITHMS))
    for nodes in args.nodes:
        machine = topology.dgx_h100(nodes)
        cells = []
        for algorithm in ALGORITHMS:
            if algorithm == "hier" and nodes == 1:
                cells.append("-")
                continue
            start = time.perf_counter()
            time_s, params = best(algorithm, machine, args.nbytes)
            busbw = bandwidths("allreduce", machine.nranks, args.nbytes, time_s)[1]
            rows.append({"nodes": nodes, "algorithm": algorithm, "params": params,
                         "busbw_GBps": busbw / 1e9, "bound_GBps": bound_Bps(machine) / 1e9,
                         "seconds_to_simulate": time.perf_counter() - start})
            tag = f"c{params['channels']}" + (f",{params['inner']}" if "inner" in params else "")
            cells.append(f"{busbw / 1e9:.1f} ({tag})")
        out(f"{nodes:5d} {bound_Bps(machine) / 1e9:7.1f} " + " ".join(f"{c:>16}" for c in cells))
    machine = topology.dgx_h100(max(args.nodes))
    out(f"\n# ring, tree and hier on dgx_h100({max(args.nodes)}), AllReduce time in us")
    out(f"{'bytes':>10} {'ring':>18} {'tree':>18} {'hier':>22}")
    for nbytes in args.sizes:
        (ring_s, ring_p), (tree_s, tree_p), (hier_s, hier_p) = (
            best(algorithm, machine, nbytes) for algorithm in ("ring", "tree", "hier"))
        small.append({"nbytes": nbytes, "ring_s": ring_s, "ring": ring_p, "tree_s": tree_s,
                      "tree": tree_p, "hier_s": hier_s, "hier": hier_p})
        out(f"{nbytes:10d} {ring_s * 1e6:12.1f} (c{ring_p['channels']}) "
            f"{tree_s * 1e6:12.1f} (c{tree_p['channels']}) "
            f"{hier_s * 1e6:12.1f} (c{hier_p['channels']},{hier_p['inner']})")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"allreduce_4GiB": rows, "ring_tree_hier": small}, file, indent=1)
    if args.write:
        write(args.write, "Channels: predicted AllReduce on DGX-H100 presets", out.text, ABOUT)


if __name__ == "__main__":
    main()
