"""What NCCL itself would choose: its own cost model (src/graph/tuning.cc) for AllReduce.

NCCL picks, per call, the (algorithm, protocol) pair with the least time in *its* model,
``latency + bytes / bandwidth``, whose figures are constants of the GPU generation and
the topology search (NCCL 2.30.7 tuning.cc; the Ampere and Hopper rows unchanged since
2.28).  What that pair then takes on the machine is another matter (the simulator's GPU
model): e.g. on 8x A100 NCCL's model ranks LL128 first from 4 to 16 MiB, at 0.92 of
Simple's bandwidth, and the published curves (``a100_1node_nccl2.19.3_g8``,
``a100_1node_dgx``) show LL128 ran there, at far less.  :func:`simulator.fidelity.predict`
therefore takes the protocol from this module and the time from the simulator.

Only Ring and Tree (the algorithms the simulator has) are ranked; NVLS, NVLSTree,
CollNet and PAT are not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Tuner", "TUNERS", "nccl_choice", "nccl_time_us"]

PROTOCOLS = ("LL", "LL128", "Simple")

#: tuning.cc baseLatencies (us), {LL, LL128, Simple}
BASE_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
#: tuning.cc hwLatencies (us) NVLINK and NET rows, {LL, LL128, Simple}
NVLINK_US = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4)}
NET_US = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0)}


@dataclass(frozen=True)
class Tuner:
    """The inputs of NCCL's model on one machine kind.

    Attributes
    ----------
    channels : int
        Channels of the ring and tree graphs (``graph->nChannels``).
    intra_GBps, inter_GBps : float
        Bandwidth per channel inside a node and across nodes (``bwIntra``, ``bwInter``).
    ll_max_GBps : tuple of float
        ``llMaxBws`` for 1, 2 and more nodes (the 1-node figure by GPU, the others by CPU).
    ring_ll128_GBps, tree_GBps, tree_ll128_GBps : tuple of float
        Per-channel caps ``perChMaxRingLL128Bws``, ``perChMaxTreeBws``,
        ``perChMaxTreeLL128Bws`` for 1, 2 and more nodes.
    net_overhead_us : float
        ``getNetOverhead``: the network post cost per ring step (1 us Intel, 2 us AMD).
    """

    channels: int
    intra_GBps: float
    inter_GBps: float
    ll_max_GBps: tuple[float, float, float]
    ring_ll128_GBps: tuple[float, float, float]
    tree_GBps: tuple[float, float, float]
    tree_ll128_GBps: tuple[float, float, float]
    net_overhead_us: float


#: per GPU kind.  Channels: 24 on an 8x A100 NVSwitch node (NCCL's log in nccl-tests#100,
#: "Channel 23/24"), 12 NVLinks x 20 GB/s = 240 GB/s (tuning.cc's SM80 NVLink figure) over
#: them; 8x H100: 18 NVLinks x 20.6 GB/s = 370.8 GB/s over 16.  Across nodes the search
#: finds a channel per NIC and NCCL doubles them: 16 channels over 8 NICs, HDR 25 GB/s and
#: NDR 50 GB/s each (nccl-model-facts.md).  CPUs: DGX A100 and OCI BM.GPU4.8 have AMD EPYC,
#: DGX H100 and Dell XE9680 Intel Xeon (vendor datasheets): llMaxBws and the net overhead.
TUNERS = {
    "A100": Tuner(24, 10.0, 200.0 / 16, (87.7, 22.5, 19.0), (20.0, 20.0, 20.0),
                  (24.0, 23.6, 17.8), (20.0, 20.0, 20.0), 2.0),
    "H100": Tuner(16, 370.8 / 16, 370.8 / 16, (141.0, 39.0, 20.4), (36.7, 36.7, 36.7),
                  (38.7, 41.4, 36.0), (36.7, 36.7, 29.0), 1.0),
}

#: tuning.cc treeCorrectionFactor {LL, LL128, Simple} for 64 B x 2**i, i < 23
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0,
     1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9,
     .9, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8,
     .9, .9),
)


def _bus_GBps(tuner: Tuner, algorithm: str, p: int, nodes: int) -> float:
    """tuning.cc's bus bandwidth of (algorithm, protocol ``p``) before the per-size factor."""
    index = min(nodes, 3) - 1
    channels = tuner.channels
    bus = channels * (tuner.intra_GBps if nodes <= 2 else tuner.inter_GBps)
    if algorithm == "ring":
        if p == 0:
            return min(tuner.ll_max_GBps[index], bus * 0.5)
        if p == 1:
            return min(bus * 0.92, channels * tuner.ring_ll128_GBps[index])
        return bus
    bus = min(bus * 0.92, channels * tuner.tree_GBps[index])
    if p == 0:
        return min(bus / 3.8, tuner.ll_max_GBps[index])
    if p == 1:
        return min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0),
                   channels * tuner.tree_ll128_GBps[index])
    return bus


def _latency_us(tuner: Tuner, algorithm: str, p: int, ranks: int, nodes: int) -> float:
    """tuning.cc's latency of an AllReduce (graphs' ``latencyInter`` taken as 0)."""
    per_node = ranks // nodes
    intra = NVLINK_US[algorithm][p]
    inter = NET_US["tree" if per_node == 1 else algorithm][p]
    if algorithm == "tree":
        return BASE_US["tree"][p] + 2 * ((per_node - 1) * intra
                                         + int(math.log2(nodes)) * inter)
    steps = 2 * (ranks - 1)
    if nodes > 1:
        intra = max(intra, tuner.net_overhead_us * (3 if p == 2 else 1))
    inter_steps = 2 * (nodes - 1)
    return BASE_US["ring"][p] + (steps - inter_steps) * intra + inter_steps * inter


def nccl_time_us(gpu: str, algorithm: str, protocol: str, nbytes: int, ranks: int,
                 nodes: int) -> float:
    """NCCL's predicted time of an AllReduce, microseconds (``ncclTopoGetAlgoTime``).

    Parameters
    ----------
    gpu : {"A100", "H100"}
        A key of :data:`TUNERS`.
    algorithm : {"ring", "tree"}
        NCCL_ALGO.
    protocol : {"LL", "LL128", "Simple"}
        NCCL_PROTO.
    nbytes : int
        Bytes per rank.
    ranks, nodes : int
        Communicator size and node count (``ranks`` a multiple of ``nodes``).

    Returns
    -------
    float
        Microseconds.

    Raises
    ------
    ValueError
        Naming the parameter, for an unknown GPU, algorithm or protocol.

    Examples
    --------
    >>> round(nccl_time_us("A100", "ring", "LL", 8, 8, 1), 1)
    15.0
    """
    for name, value, allowed in (("gpu", gpu, TUNERS), ("algorithm", algorithm, BASE_US),
                                 ("protocol", protocol, PROTOCOLS)):
        if value not in allowed:
            raise ValueError(f"{name}={value!r} is not allowed; it must be one of "
                             f"{list(allowed)}")
    tuner, p = TUNERS[gpu], PROTOCOLS.index(protocol)
    bw = _bus_GBps(tuner, algorithm, p, nodes) * (
        ranks / (2 * (ranks - 1)) if algorithm == "ring" else 0.5)
    lat = _latency_us(tuner, algorithm, p, ranks, nodes)
    log_size = int(math.log2(nbytes >> 6)) if nbytes >= 64 else -1
    if algorithm == "tree" and 0 <= log_size < len(TREE_CORRECTION[p]):
        bw *= TREE_CORRECTION[p][log_size]
    if algorithm == "ring" and p == 2 and nodes > 1 \
            and nbytes // (TUNERS[gpu].channels * ranks) >= 64:
        lat *= 1.4  # tuning.cc: "plateau effect of ring" (compute capability >= 8.0)
    return lat + nbytes / (1000.0 * bw)


def nccl_choice(gpu: str, nbytes: int, ranks: int, nodes: int,
                algorithms: tuple[str, ...] = ("ring", "tree"),
                protocols: tuple[str, ...] = PROTOCOLS) -> tuple[str, str]:
    """The (algorithm, protocol) NCCL runs: the least :func:`nccl_time_us`.

    Parameters
    ----------
    gpu : {"A100", "H100"}
        A key of :data:`TUNERS`.
    nbytes : int
        Bytes per rank.
    ranks, nodes : int
        Communicator size and node count.
    algorithms, protocols : tuple of str, optional
        What NCCL_ALGO and NCCL_PROTO leave (default all of Ring, Tree and the three
        protocols); ties go to the first.

    Returns
    -------
    tuple of (str, str)
        ``(algorithm, protocol)``.

    Examples
    --------
    >>> [nccl_choice("A100", n << 20, 8, 1)[1] for n in (1, 4, 64)]
    ['LL', 'LL128', 'Simple']
    """
    return min(((a, k) for a in algorithms for k in protocols),
               key=lambda pair: nccl_time_us(gpu, pair[0], pair[1], nbytes, ranks, nodes))
