"""NCCL's own algorithms in the model: NCCL's tree, NVLS, NVLSTree and PAT, in closed form.

These are what NCCL runs and the schedules of :mod:`collectives` do not: no schedule
builds them, ``native`` over NCCL runs them.  Each is priced here the way NCCL builds it,
on the machine's GPU model (:mod:`topology.gpu`, read through
:func:`simulator.gpu.gpu_terms`: per-hop latency and achievable rate of NVLink and of
the network under the protocol, the call's cost, the GPU's reduction rate), so that
:func:`simulator.select` (``algorithms=`` naming them) and the NCCL export
(:mod:`simulator.export`) can rank them beside the ring.  With ``n`` bytes, ``g`` GPUs
per node, ``N`` nodes and ``K`` NICs per node:

``nccl-tree`` (AllReduce; NCCL's Tree): a chain through each node's GPUs and a double
binary tree over the nodes (src/graph/trees.cc), reduce up and broadcast down,
pipelined.  Every GPU sends ``n`` up and ``n`` down its chain over NVLink (``2n``); a node
sends and receives ``n`` over the network on two nodes (a root in one tree, a leaf in the
other) and ``2n`` on more (interior in one tree, a leaf in the other), spread over its
NICs.  Time: the call, the depth ``2 ((g - 1) hop_NVLink + floor(log2 N) hop_net)``
(tuning.cc's form, with this model's hops under the tree's figures), the slower of the
two streams, and the reduction of ``n`` bytes.

``nccl-nvls`` (one node of Hopper or later on NVSwitch, Simple; NCCL >= 2.17): the
switch is the device that reduces (NVLink SHARP: ``multimem.ld_reduce`` and the
multicast ``multimem.st``).  For AllReduce each GPU's link carries its whole vector to
the switch and its shard's result back out as a multicast, ``n (1 + 1/g)`` each way; for
ReduceScatter and AllGather ``n (g - 1) / g``.  The switch reduces at line rate, so no
GPU reduction term; the rate is NVLink's under Simple times tuning.cc's
``nvlsEfficiency`` (0.85 on Hopper) and its ``(heads - 1) / heads``, and the latency
tuning.cc's NVLS hop (25 us, ``hwLat[NVLINK][NVLS][Simple]``; its base latency is 0)
after the launch.

``nccl-nvlstree`` (AllReduce on several nodes, Simple): NVLS inside each node onto one
head per NIC, NCCL's double binary tree over the nodes between the heads, NVLS
multicast back: the NVLS stream as above and the network stream of ``nccl-tree``, the
slower of the two, after tuning.cc's NVLS hop and ``2 floor(log2 N)`` of this model's
network hops; the heads reduce what the network brings.

``nccl-pat`` (AllGather and ReduceScatter with one GPU per node, Simple; NCCL >= 2.23):
the parallel aggregated trees exchange in ``ceil(log2 N)`` rounds and move what a ring
moves, ``n (N - 1) / N`` through the node's NIC (ReduceScatter reduces as much).

Where NCCL serves each one is :func:`simulator.nccl_tuner.serves` (tuning.cc's
conditions), on a machine whose GPU generation it knows
(:func:`simulator.nccl_tuner.tuner_kind`), for all of the machine's ranks in equal nodes;
NVLS also needs an ``nvswitch`` device in the node.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from topology.channels import nics_per_node
from topology.order import node_groups

from .gpu import gpu_terms
from .nccl_tuner import NET_US, NVLINK_US, TUNERS, serves, tuner_kind

__all__ = ["ALGORITHMS", "NCCL_NAMES", "available", "nccl_protocols", "nccl_costs"]

#: NCCL's algorithms priced here, by the names selection and the command line take
ALGORITHMS: tuple[str, ...] = ("nccl-tree", "nccl-nvls", "nccl-nvlstree", "nccl-pat")
#: our names of NCCL's algorithms -> NCCL's (the example tuner plugin's)
NCCL_NAMES: dict[str, str] = {"ring": "ring", "nccl-tree": "tree", "nccl-nvls": "nvls",
                              "nccl-nvlstree": "nvls_tree", "nccl-pat": "pat"}
#: the GPU model's algorithm figures each one runs under (the tree's for NCCL's tree)
_FIGURES = {"nccl-tree": "tree", "nccl-nvls": None, "nccl-nvlstree": "tree", "nccl-pat": None}


@dataclass(frozen=True)
class _Shape:
    """What the closed forms read of a machine under one protocol."""

    nodes: int
    per_node: int
    nics: int
    nvlink_s: float
    nvlink_Bps: float
    net_s: float
    net_Bps: float
    call_s: float
    launch_s: float
    gamma: float
    nvls_fraction: float


@functools.lru_cache(maxsize=32)
def _layout(topology: Any) -> tuple[int, int] | None:
    """``(nodes, GPUs per node)`` of a machine of equal nodes of consecutive ranks."""
    groups = node_groups(topology)
    size = len(groups[0])
    if any(group != tuple(range(k * size, (k + 1) * size)) for k, group in enumerate(groups)):
        return None
    return len(groups), size


def available(collective: str, algorithm: str, topology: Any, nranks: int | None = None,
              protocol: str = "Simple") -> bool:
    """Whether NCCL runs ``algorithm`` for ``collective`` on ``nranks`` of ``topology``.

    Parameters
    ----------
    collective : str
        ``"allreduce"``, ``"reduce_scatter"`` or ``"allgather"``.
    algorithm : str
        One of :data:`ALGORITHMS`.
    topology : topology.Topology
        The machine.
    nranks : int, optional
        Ranks (default all of the machine's; NCCL's algorithms are priced on all of them).
    protocol : str, optional
        A protocol of the GPU model (default Simple).

    Returns
    -------
    bool

    Examples
    --------
    >>> import topology
    >>> [available("allreduce", a, topology.dgx_h100(1)) for a in ALGORITHMS]
    [True, True, False, False]
    >>> available("allreduce", "nccl-nvls", topology.dgx_a100(1))
    False
    """
    kind = tuner_kind(topology)
    layout = _layout(topology) if kind is not None else None
    if kind is None or layout is None or nranks not in (None, topology.nranks) \
            or algorithm not in ALGORITHMS:
        return False
    nodes, per_node = layout
    if algorithm == "nccl-nvls" and not any(d.kind == "nvswitch" for d in topology.devices):
        return False
    return serves(kind, collective, NCCL_NAMES[algorithm], protocol, topology.nranks, nodes)


def nccl_protocols(algorithm: str, topology: Any) -> tuple[str, ...]:
    """The protocols of ``topology``'s GPU model that NCCL runs ``algorithm`` under.

    Parameters
    ----------
    algorithm : str
        One of :data:`ALGORITHMS`.
    topology : topology.Topology
        A machine with a GPU model.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> import topology
    >>> nccl_protocols("nccl-nvls", topology.dgx_h100()), nccl_protocols("nccl-tree", topology.dgx_h100())
    (('Simple',), ('LL', 'LL128', 'Simple'))
    """
    names = topology.gpu.protocol_names
    return names if algorithm == "nccl-tree" else tuple(p for p in names if p == "Simple")


def _shape(topology: Any, protocol: str, algorithm: str) -> _Shape:
    machine, call_s = gpu_terms(topology, protocol, _FIGURES[algorithm])
    layout, kind = _layout(topology), tuner_kind(topology)
    assert layout is not None and kind is not None  # available() said NCCL runs it here
    nodes, per_node = layout
    model = topology.gpu
    launch_s = model.call_s(protocol) - model.protocol(protocol).call_s
    near = (machine.alpha(0, 1), 1.0 / machine.beta(0, 1)) if per_node > 1 else (0.0, math.inf)
    far = (machine.alpha(0, per_node), 1.0 / machine.beta(0, per_node)) if nodes > 1 \
        else (0.0, math.inf)
    tuner = TUNERS[kind]
    heads = tuner.nvls_channels
    nvls = tuner.nvls_efficiency * (heads - 1) / heads if heads > 1 else 0.0
    return _Shape(nodes, per_node, max(1, nics_per_node(topology)), *near, *far, call_s,
                  launch_s, machine.gamma_s_per_byte, nvls)


def _network_bytes(n: np.ndarray, nodes: int) -> np.ndarray:
    """Bytes a node sends (and receives) over the network in NCCL's double binary tree."""
    return n * (0.0 if nodes == 1 else 1.0 if nodes == 2 else 2.0)


def _tree(collective: str, n: np.ndarray, s: _Shape) -> np.ndarray:
    depth = 2 * ((s.per_node - 1) * s.nvlink_s + int(math.log2(s.nodes)) * s.net_s)
    intra = 2 * n / s.nvlink_Bps
    inter = _network_bytes(n, s.nodes) / (s.nics * s.net_Bps)
    return s.call_s + depth + np.maximum(intra, inter) + n * s.gamma


def _nvls_stream(collective: str, n: np.ndarray, s: _Shape) -> np.ndarray:
    g = s.per_node
    moved = n * (1 + 1 / g) if collective == "allreduce" else n * (g - 1) / g
    return moved / (s.nvlink_Bps * s.nvls_fraction)


def _nvls(collective: str, n: np.ndarray, s: _Shape) -> np.ndarray:
    return s.launch_s + NVLINK_US["nvls"][2] * 1e-6 + _nvls_stream(collective, n, s)


def _nvls_tree(collective: str, n: np.ndarray, s: _Shape) -> np.ndarray:
    across = _network_bytes(n, s.nodes) / s.nics
    latency = NVLINK_US["nvls_tree"][2] * 1e-6 + 2 * int(math.log2(s.nodes)) * s.net_s
    return (s.launch_s + latency
            + np.maximum(_nvls_stream(collective, n, s), across / s.net_Bps) + across * s.gamma)


def _pat(collective: str, n: np.ndarray, s: _Shape) -> np.ndarray:
    moved = n * (s.nodes - 1) / s.nodes
    reduced = moved * s.gamma if collective == "reduce_scatter" else 0.0
    return s.call_s + math.ceil(math.log2(s.nodes)) * s.net_s + moved / s.net_Bps + reduced


_FORMS = {"nccl-tree": _tree, "nccl-nvls": _nvls, "nccl-nvlstree": _nvls_tree,
          "nccl-pat": _pat}


def nccl_costs(collective: str, algorithm: str, topology: Any, sizes: Sequence[int],
               protocol: str = "Simple") -> np.ndarray:
    """Predicted seconds of NCCL's ``algorithm`` at each of ``sizes`` on ``topology``.

    Parameters
    ----------
    collective : str
        ``"allreduce"``, ``"reduce_scatter"`` or ``"allgather"``.
    algorithm : str
        One of :data:`ALGORITHMS`.
    topology : topology.Topology
        The machine, all of its ranks.
    sizes : sequence of int
        Bytes of the working buffer.
    protocol : str, optional
        A protocol of :func:`nccl_protocols` (default Simple).

    Returns
    -------
    numpy.ndarray
        Seconds per size.

    Raises
    ------
    ValueError
        Where NCCL does not run ``algorithm`` there (:func:`available`).

    Examples
    --------
    >>> import topology
    >>> t = nccl_costs("allreduce", "nccl-nvls", topology.dgx_h100(), [0, 1 << 30])
    >>> [round(x * 1e6) for x in t]
    [25, 4174]
    """
    if not available(collective, algorithm, topology, protocol=protocol):
        raise ValueError(f"algorithm={algorithm!r} is not allowed for {collective} under "
                         f"{protocol} on {getattr(topology, 'name', topology)!r}: NCCL does "
                         f"not run it there; it runs {list(ALGORITHMS)} where tuning.cc's "
                         f"conditions hold")
    n = np.asarray(sizes, dtype=float)
    return _FORMS[algorithm](collective, n, _shape(topology, protocol, algorithm))
