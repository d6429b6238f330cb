"""What NCCL itself would choose: its own cost model (src/graph/tuning.cc).

NCCL picks, per call, the (algorithm, protocol) pair with the least time in *its* model,
``latency + bytes / bandwidth``, whose figures are constants of the GPU generation and
the topology search (NCCL 2.30.7 tuning.cc; the Ampere and Hopper rows unchanged since
2.28).  What that pair then takes on the machine is another matter (the simulator's GPU
model): e.g. on 8x A100 NCCL's model ranks LL128 first from 4 to 16 MiB, at 0.92 of
Simple's bandwidth, and the published curves (``a100_1node_nccl2.19.3_g8``,
``a100_1node_dgx``) show LL128 ran there, at far less.  :func:`simulator.fidelity.predict`
therefore takes the protocol from this module and the time from the simulator.

Ranked, with tuning.cc's conditions: ``ring`` (every collective), ``tree`` (AllReduce),
``nvls`` (Hopper and later with an NVSwitch, Simple only; on several nodes only with
CollNet, which no machine here has, so one node), ``nvls_tree`` (AllReduce on several
nodes, Simple only) and ``pat`` (AllGather and ReduceScatter with one GPU per node,
Simple only).  CollNet (in-network SHARP) is not ranked: no machine here has it, and
NCCL disables it without it.  The names are the example tuner plugin's.

The graphs' figures that the topology search finds (``nChannels``, ``bwIntra``,
``bwInter``) are stated per GPU kind in :data:`TUNERS` with how the search reaches them
(src/graph/search.cc); the per-call channel count NCCL runs, :func:`nccl_channels`, is
src/enqueue.cc's.

Older releases rank with other constants, not modelled here: before 2.21 Ring LL's bus
bandwidth is a quarter of the graph's (a half since); before 2.23 Tree Simple has no base
latency and 28 us per hop on NVLink and on the network (8.4, 4.0 and 14.0 us since: 448
against 92.4 us on 2 x 8 GPUs), and Ring AllReduce counts ``2 nNodes`` network steps
(``2 (nNodes - 1)`` since).  NCCL's per-size choice therefore depends on the release a
curve ran (``a100_2node_roce_default``, 2.19.3: there Tree Simple wins over Tree LL128
only from 1 GiB, where the measured busbw jumps; here from 512 MiB).  What NCCL_MIN_CTAS
and NCCL_MAX_CTAS change is not ranked either: tuning.cc's bandwidths are the graphs'
(``graphs[a]->nChannels``), the channels a kernel runs (``comm->nChannels``) only decide
Ring Simple's plateau factor.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Tuner", "TUNERS", "ALGORITHMS", "COLLECTIVES", "nccl_choice", "nccl_time_us",
           "nccl_channels", "ll_share", "serves", "tuner_kind"]

PROTOCOLS = ("LL", "LL128", "Simple")
#: NCCL's algorithms ranked here, by the example tuner plugin's names
ALGORITHMS = ("tree", "ring", "nvls", "nvls_tree", "pat")
#: the collectives ranked here (Broadcast and Reduce: Ring only, tuning.cc)
COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce")

#: tuning.cc baseLatencies (us), {LL, LL128, Simple} (NVLS and NVLSTree 0)
BASE_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0),
           "nvls_tree": (0.0, 0.0, 0.0), "pat": (8.0, 8.0, 8.0)}
#: tuning.cc hwLatencies (us) NVLINK and NET rows, {LL, LL128, Simple}
NVLINK_US = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0),
             "nvls_tree": (0.0, 0.0, 25.0), "pat": (0.0, 0.0, 4.0)}
NET_US = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 18.0),
          "nvls_tree": (0.0, 0.0, 20.9), "pat": (0.0, 0.0, 14.0)}

#: enqueue.cc's channel reduction: comm->maxThreads (device.h NCCL_LL_MAX_NTHREADS 512,
#: NCCL_LL128_MAX_NTHREADS 640, NCCL_SIMPLE_MAX_NTHREADS 512, the default on NVLink
#: machines) and threadThresholds (comm.h NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD 8, 8, 64;
#: Ring LL's times the rank count), per protocol
_THREADS = (512, 640, 512)
_THRESHOLDS = (8, 8, 64)
#: src/transport/nvls.cc NVLS_NCHANNELS_SM90: NVLS runs 16 channels on Hopper
NVLS_CHANNELS_SM90 = 16


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
    nvls_channels : int, optional
        Channels (heads) of the NVLS graph; 0 (default): no NVLS (the search finds none
        below compute capability 9.0 or without an NVSwitch, search.cc).
    nvls_intra_GBps : float, optional
        The NVLS graph's ``bwIntra``.
    nvls_inter_GBps : tuple of float, optional
        The NVLS graph's ``bwInter`` on one node and across nodes.
    nvls_efficiency : float, optional
        tuning.cc ``nvlsEfficiency`` of the GPU generation.
    nvls_tree_GBps : tuple of float, optional
        ``perChMaxNVLSTreeBws`` for 1, 2 and more nodes.
    """

    channels: int
    intra_GBps: float
    inter_GBps: float
    ll_max_GBps: tuple[float, float, float]
    ring_ll128_GBps: tuple[float, float, float]
    tree_GBps: tuple[float, float, float]
    tree_ll128_GBps: tuple[float, float, float]
    net_overhead_us: float
    nvls_channels: int = 0
    nvls_intra_GBps: float = 0.0
    nvls_inter_GBps: tuple[float, float] = (0.0, 0.0)
    nvls_efficiency: float = 0.0
    nvls_tree_GBps: tuple[float, float, float] = (0.0, 0.0, 0.0)


#: per GPU kind.  Channels: 24 on an 8x A100 NVSwitch node (NCCL's log in nccl-tests#100,
#: "Channel 23/24"), 12 NVLinks x 20 GB/s = 240 GB/s (tuning.cc's SM80 NVLink figure) over
#: them; 8x H100: 18 NVLinks x 20.6 GB/s = 370.8 GB/s over 16.  Across nodes the search
#: finds a channel per NIC and NCCL doubles them: 16 channels over 8 NICs, HDR 25 GB/s and
#: NDR 50 GB/s each (nccl-model-facts.md).  CPUs: DGX A100 and OCI BM.GPU4.8 have AMD EPYC,
#: DGX H100 and Dell XE9680 Intel Xeon (vendor datasheets): llMaxBws and the net overhead.
#: NVLS on 8x H100 (search.cc): one head per GPU (NCCL_MAX_NVLS_ARITY 32 >= 8), 8
#: channels; each GPU's 370.8 GB/s carries the 8 channels and its own head's second share,
#: so bwIntra is the fastest sm90SpeedArrayIntra speed <= 370.8 / 9: 40 GB/s; pass 2
#: raises bwInter while it stays < 2 bwIntra: 60 GB/s (the array's top) on one node, the
#: fastest sm90SpeedArrayInter speed under an NDR NIC's 50 GB/s across nodes: 48 GB/s.
#: tuning.cc then gives NVLS AllReduce 8 x min(40 x 0.85 x 7/8 x 2, 60) = 476 GB/s
#: busbw, the ~480 GB/s measured (nccl-model-facts.md), and ranks it above Ring/LL from
#: ~1.1 MiB, where h100_1node_dgx_default_nvls says NCCL switched.
TUNERS = {
    "A100": Tuner(24, 10.0, 200.0 / 16, (87.7, 22.5, 19.0), (20.0, 20.0, 20.0),
                  (24.0, 23.6, 17.8), (20.0, 20.0, 20.0), 2.0),
    "H100": Tuner(16, 370.8 / 16, 370.8 / 16, (141.0, 39.0, 20.4), (36.7, 36.7, 36.7),
                  (38.7, 41.4, 36.0), (36.7, 36.7, 29.0), 1.0,
                  nvls_channels=8, nvls_intra_GBps=40.0, nvls_inter_GBps=(60.0, 48.0),
                  nvls_efficiency=0.85, nvls_tree_GBps=(0.0, 57.7, 45.5)),
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


def tuner_kind(topology: Any) -> str | None:
    """The key of :data:`TUNERS` whose GPU a machine has, or None.

    A machine has a kind when its GPU model names one (:attr:`topology.GpuModel.nccl_kind`:
    the DGX presets do, and figures fitted to a cluster or a run's settings keep it);
    any other model's NCCL figures are unknown here.

    Parameters
    ----------
    topology : topology.Topology
        The machine.

    Returns
    -------
    str or None

    Examples
    --------
    >>> import topology
    >>> tuner_kind(topology.dgx_h100(2)), tuner_kind(topology.flat(4, 1e-6, 1e-9))
    ('H100', None)
    """
    model = getattr(topology, "gpu", None)
    kind = getattr(model, "nccl_kind", "")
    return kind if kind in TUNERS else None


def serves(gpu: str, collective: str, algorithm: str, protocol: str, ranks: int,
           nodes: int) -> bool:
    """Whether NCCL ranks ``algorithm`` under ``protocol`` for ``collective`` at all.

    tuning.cc: Ring only for Broadcast and Reduce; Tree for AllReduce; NVLS, NVLSTree
    and PAT under Simple only; NVLS and
    NVLSTree with an NVLS graph of at least 2 channels, NVLS on one node (on several it
    needs CollNet), NVLSTree on several; PAT for AllGather and ReduceScatter with one GPU
    per node; Ring everywhere.

    Parameters
    ----------
    gpu : str
        A key of :data:`TUNERS`.
    collective : str
        One of :data:`COLLECTIVES`.
    algorithm : str
        One of :data:`ALGORITHMS`.
    protocol : str
        ``"LL"``, ``"LL128"`` or ``"Simple"``.
    ranks, nodes : int
        Communicator size and node count.

    Returns
    -------
    bool

    Examples
    --------
    >>> serves("H100", "allreduce", "nvls", "Simple", 8, 1), serves("A100", "allreduce", "nvls", "Simple", 8, 1)
    (True, False)
    """
    tuner = TUNERS[gpu]
    if algorithm == "ring":
        return True
    if collective in ("broadcast", "reduce"):  # tuning.cc: "a != NCCL_ALGO_RING) continue"
        return False
    if algorithm == "tree":
        return collective == "allreduce"
    if protocol != "Simple":
        return False
    if algorithm == "pat":
        return collective != "allreduce" and ranks == nodes and nodes > 1
    if tuner.nvls_channels < 2 or ranks == nodes:
        return False
    return nodes == 1 if algorithm == "nvls" else collective == "allreduce" and nodes > 1


def _bus_GBps(tuner: Tuner, collective: str, algorithm: str, p: int, ranks: int,
              nodes: int) -> float:
    """tuning.cc's bandwidth of (algorithm, protocol ``p``), converted to algorithm
    bandwidth where tuning.cc converts it, before the per-size factors."""
    index = min(nodes, 3) - 1
    if algorithm in ("nvls", "nvls_tree"):
        return _nvls_GBps(tuner, collective, algorithm, ranks, nodes)
    channels = tuner.channels
    bus = channels * (tuner.intra_GBps if nodes <= 2 else tuner.inter_GBps)
    if algorithm == "pat":
        return bus * 0.75  # not converted: tuning.cc converts only Ring for these
    if algorithm == "ring":
        if p == 0:
            bus = min(tuner.ll_max_GBps[index], bus * 0.5)
        elif p == 1:
            bus = min(bus * 0.92, channels * tuner.ring_ll128_GBps[index])
        return bus * ranks / _steps(collective, ranks)
    bus = min(bus * 0.92, channels * tuner.tree_GBps[index])
    if p == 0:
        bus = min(bus / 3.8, tuner.ll_max_GBps[index])
    elif p == 1:
        bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0),
                  channels * tuner.tree_ll128_GBps[index])
    return bus * 0.5


def ll_share(gpu: str, algorithm: str, ranks: int, nodes: int) -> float:
    """What NCCL's cap on LL's bus bandwidth leaves of an AllReduce's LL bandwidth in its
    own model (tuning.cc ``ncclTopoTuneModel``: ``llMaxBws``, by GPU on one node and by CPU
    across nodes).

    Parameters
    ----------
    gpu : str
        A key of :data:`TUNERS`.
    algorithm : {"ring", "tree"}
        The algorithm.
    ranks, nodes : int
        Communicator size and node count.

    Returns
    -------
    float
        tuning.cc's LL bandwidth of ``algorithm`` with the cap over the same without it,
        in (0, 1].

    Examples
    --------
    >>> [round(ll_share("A100", "tree", 8 * n, n), 3) for n in (1, 2, 4)]
    [1.0, 0.387, 0.262]
    """
    tuner = TUNERS[gpu]
    free = dataclasses.replace(tuner, ll_max_GBps=(math.inf,) * 3)
    return _bus_GBps(tuner, "allreduce", algorithm, 0, ranks, nodes) \
        / _bus_GBps(free, "allreduce", algorithm, 0, ranks, nodes)


def _nvls_GBps(tuner: Tuner, collective: str, algorithm: str, ranks: int,
               nodes: int) -> float:
    """tuning.cc's NVLS and NVLSTree bandwidth (Simple)."""
    per_node = ranks / nodes
    intra = tuner.nvls_intra_GBps * tuner.nvls_efficiency * (tuner.nvls_channels - 1) \
        / tuner.nvls_channels
    intra *= 2.0 if collective == "allreduce" else (per_node - 1) / per_node
    inter = tuner.nvls_inter_GBps[0 if nodes == 1 else 1] \
        * (2 if nodes <= 2 and algorithm == "nvls_tree" else 1)
    cap = tuner.nvls_tree_GBps[min(nodes, 3) - 1] if algorithm == "nvls_tree" else math.inf
    bus = tuner.nvls_channels * min(intra, inter, cap)
    return bus * ranks / _steps(collective, ranks) if collective == "allreduce" else bus


def _steps(collective: str, ranks: int) -> int:
    """tuning.cc's ``nsteps``: ``nRanks`` for Broadcast and Reduce."""
    if collective in ("broadcast", "reduce"):
        return ranks
    return 2 * (ranks - 1) if collective == "allreduce" else ranks - 1


def _latency_us(tuner: Tuner, collective: str, algorithm: str, p: int, ranks: int,
                nodes: int) -> float:
    """tuning.cc's latency (graphs' ``latencyInter`` taken as 0)."""
    per_node = ranks // nodes
    intra = NVLINK_US[algorithm][p]
    inter = NET_US["tree" if per_node == 1 else algorithm][p]
    base = BASE_US[algorithm][p]
    log_nodes = int(math.log2(nodes))
    if algorithm == "tree":
        return base + 2 * ((per_node - 1) * intra + log_nodes * inter)
    if algorithm == "nvls":
        return intra + (inter if nodes > 1 else 0.0)
    if algorithm == "nvls_tree":
        return base + intra + 2 * log_nodes * inter
    if algorithm == "pat":
        return base + log_nodes * inter / 3.5 + ranks * 2.8
    steps = _steps(collective, ranks)
    if nodes > 1:
        intra = max(intra, tuner.net_overhead_us * (3 if p == 2 else 1))
    inter_steps = nodes if collective in ("broadcast", "reduce") else \
        (2 if collective == "allreduce" else 1) * (nodes - 1)  # tuning.cc nInterSteps
    return base + (steps - inter_steps) * intra + inter_steps * inter


def _check(gpu: str, algorithm: str, protocol: str, collective: str) -> None:
    for name, value, allowed in (("gpu", gpu, TUNERS), ("algorithm", algorithm, ALGORITHMS),
                                 ("protocol", protocol, PROTOCOLS),
                                 ("collective", collective, COLLECTIVES)):
        if value not in allowed:
            raise ValueError(f"{name}={value!r} is not allowed; it must be one of "
                             f"{list(allowed)}")


def nccl_time_us(gpu: str, algorithm: str, protocol: str, nbytes: int, ranks: int,
                 nodes: int, collective: str = "allreduce") -> float:
    """NCCL's predicted time of a collective, microseconds (``ncclTopoGetAlgoTime``).

    Parameters
    ----------
    gpu : {"A100", "H100"}
        A key of :data:`TUNERS`.
    algorithm : str
        One of :data:`ALGORITHMS` (NCCL_ALGO).
    protocol : {"LL", "LL128", "Simple"}
        NCCL_PROTO.
    nbytes : int
        Bytes of the working buffer (NCCL's ``ncclFuncMaxSendRecvCount``: the AllReduce
        vector, the AllGather output, the ReduceScatter input).
    ranks, nodes : int
        Communicator size and node count (``ranks`` a multiple of ``nodes``).
    collective : str, optional
        One of :data:`COLLECTIVES` (default AllReduce).

    Returns
    -------
    float
        Microseconds; ``inf`` where NCCL does not rank the pair (:func:`serves`).

    Raises
    ------
    ValueError
        Naming the parameter, for an unknown GPU, algorithm, protocol or collective.

    Examples
    --------
    >>> round(nccl_time_us("A100", "ring", "LL", 8, 8, 1), 1)
    15.0
    """
    _check(gpu, algorithm, protocol, collective)
    if not serves(gpu, collective, algorithm, protocol, ranks, nodes):
        return math.inf
    tuner, p = TUNERS[gpu], PROTOCOLS.index(protocol)
    bw = _bus_GBps(tuner, collective, algorithm, p, ranks, nodes)
    lat = _latency_us(tuner, collective, algorithm, p, ranks, nodes)
    log_size = int(math.log2(nbytes >> 6)) if nbytes >= 64 else -1
    allreduce = collective == "allreduce"
    if algorithm == "tree" and 0 <= log_size < len(TREE_CORRECTION[p]):
        bw *= TREE_CORRECTION[p][log_size]
    if algorithm == "ring" and p == 2 and nodes > 1 and allreduce \
            and nbytes // (tuner.channels * ranks) >= 64:
        lat *= 1.4  # tuning.cc: "plateau effect of ring" (compute capability >= 8.0)
    return lat + nbytes / (1000.0 * bw)


def nccl_choice(gpu: str, nbytes: int, ranks: int, nodes: int,
                algorithms: tuple[str, ...] = ALGORITHMS,
                protocols: tuple[str, ...] = PROTOCOLS,
                collective: str = "allreduce") -> tuple[str, str]:
    """The (algorithm, protocol) NCCL runs: the least :func:`nccl_time_us`.

    Parameters
    ----------
    gpu : {"A100", "H100"}
        A key of :data:`TUNERS`.
    nbytes : int
        Bytes of the working buffer.
    ranks, nodes : int
        Communicator size and node count.
    algorithms, protocols : tuple of str, optional
        What NCCL_ALGO and NCCL_PROTO leave (default all of :data:`ALGORITHMS` and the
        three protocols); ties go to the first.
    collective : str, optional
        One of :data:`COLLECTIVES` (default AllReduce).

    Returns
    -------
    tuple of (str, str)
        ``(algorithm, protocol)``.

    Raises
    ------
    ValueError
        If ``algorithms`` and ``protocols`` leave NCCL nothing to run.

    Examples
    --------
    >>> [nccl_choice("A100", n << 20, 8, 1)[1] for n in (1, 4, 64)]
    ['LL', 'LL128', 'Simple']
    >>> [nccl_choice("H100", n << 20, 8, 1)[0] for n in (1, 2)]
    ['ring', 'nvls']
    """
    times = {(a, k): nccl_time_us(gpu, a, k, nbytes, ranks, nodes, collective)
             for a in algorithms for k in protocols}
    best = min(times, key=times.__getitem__)
    if math.isinf(times[best]):
        raise ValueError(f"algorithms={algorithms!r} with protocols={protocols!r} leave NCCL "
                         f"nothing to run for {collective} on {ranks} ranks of {nodes} nodes")
    return best


def nccl_channels(gpu: str, algorithm: str, protocol: str, nbytes: int, ranks: int,
                  nodes: int) -> int:
    """The channels NCCL runs a call on (src/enqueue.cc, ``topoGetAlgoInfo``).

    NVLS and NVLSTree run ``nvlsChannels`` (:data:`NVLS_CHANNELS_SM90`, at most the ring's
    channels for NVLS on several nodes); every other algorithm starts from the ring's
    channels and drops one while ``nbytes < channels * threads * threshold``.

    Parameters
    ----------
    gpu : str
        A key of :data:`TUNERS`.
    algorithm : str
        One of :data:`ALGORITHMS`.
    protocol : str
        ``"LL"``, ``"LL128"`` or ``"Simple"``.
    nbytes : int
        Bytes of the working buffer.
    ranks, nodes : int
        Communicator size and node count.

    Returns
    -------
    int

    Examples
    --------
    >>> [nccl_channels("H100", "ring", "Simple", n, 8, 1) for n in (1 << 10, 1 << 22)]
    [1, 16]
    """
    _check(gpu, algorithm, protocol, "allreduce")
    tuner = TUNERS[gpu]
    if algorithm in ("nvls", "nvls_tree"):
        return min(NVLS_CHANNELS_SM90, tuner.channels) if nodes > 1 and algorithm == "nvls" \
            else NVLS_CHANNELS_SM90
    p = PROTOCOLS.index(protocol)
    threshold = _THRESHOLDS[p] * (ranks if (algorithm, p) == ("ring", 0) else 1)
    channels = tuner.channels
    while channels >= 2 and nbytes < channels * _THREADS[p] * threshold:
        channels -= 1
    return channels
