"""Named machines: the flat alpha-beta model (and the per-pair mesh), DGX nodes, rail-optimized fat-trees, PCIe nodes.

Figures and their sources (line rate = the signalling rate of the link; effective = what a
benchmark measures, lower by protocol overheads; every default below is a LINE RATE unless it
says otherwise; pass measured figures, or calibrate, to model a real machine):

* NVLink 3 on A100 SXM: 12 links x 25 GB/s per direction = 300 GB/s per direction per GPU
  (600 GB/s bidirectional). NVIDIA A100 Tensor Core GPU datasheet and architecture whitepaper.
* NVLink 4 on H100 SXM: 18 links x 25 GB/s per direction = 450 GB/s per direction per GPU
  (900 GB/s bidirectional). NVIDIA H100 Tensor Core GPU datasheet.
  Effective: nccl-tests all_reduce bus bandwidth on one DGX is about 230 GB/s (A100) and
  360-480 GB/s (H100, with NVLS) -- NVIDIA DGX BasePOD/SuperPOD reference architectures.
* NVSwitch: every GPU spreads its NVLinks over all the node's NVSwitch chips (6 on DGX A100,
  4 on DGX H100), which together are non-blocking; the model joins the chips into one
  ``nvswitch`` device with one link per GPU per direction at the GPU's full NVLink rate.
* InfiniBand HDR 200 Gb/s = 25 GB/s per direction (ConnectX-6, Quantum QM8700);
  NDR 400 Gb/s = 50 GB/s per direction (ConnectX-7, Quantum-2 QM9700). IBTA specification
  line rates; DGX A100 has 8 HDR compute NICs, DGX H100 8 NDR (one per GPU, "rail").
* PCIe: Gen4 x16 = 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction; Gen5 x16 = 63 GB/s
  (PCI-SIG base specifications 4.0 and 5.0). DGX A100 joins GPU and NIC through a Gen4 switch,
  DGX H100 through Gen5.
* Latencies are typical one-way figures, split over the links of a route:
  NVLink GPU to GPU through NVSwitch about 0.5 us (NCCL src/graph/tuning.cc ``hwLat``, NVLink
  LL 0.4-0.6 us), so 0.25 us per link; PCIe hop about 1 us (the same table, PCI LL 1.0 us),
  0.5 us per link GPU <-> NIC or GPU <-> switch; InfiniBand switch port to port about 130 ns
  (Quantum QM8700 datasheet) plus a few metres of cable (5 ns/m), 0.2 us per IB link, so a
  NIC-leaf-NIC crossing pays 0.4 us and MPI ping-pong latencies of 1-2 us result end to end.
* GPU terms: ``dgx_a100`` and ``dgx_h100`` also carry a :class:`~topology.GpuModel` (what
  collectives reach on these links: cost per call, protocols, achievable fractions,
  latencies by link kind, reduction throughput), figures and sources in
  :mod:`topology.gpu_presets`; the simulator plays the links through it.
"""

from __future__ import annotations

from reprlib import repr as brief

from .checks import check_int, check_number
from .fat_tree import RailFatTree
from .gpu import GpuModel
from .gpu_presets import DGX_A100_GPU, DGX_H100_GPU
from .model import Device, FullMesh, Link, Topology

__all__ = ["flat", "mesh", "default_flat", "rail_fat_tree", "dgx_a100", "dgx_h100", "pcie_node",
           "PRESET_NAMES", "FLAT_ALPHA_S", "FLAT_BETA_S_PER_BYTE", "DEFAULT_ALPHA_S",
           "DEFAULT_BETA_S_PER_BYTE", "DEFAULT_GAMMA_S_PER_BYTE", "preset"]

GB = 1e9  #: bytes, decimal as in datasheets
US = 1e-6  #: seconds

NVLINK3_Bps = 300 * GB  # A100 datasheet: 600 GB/s bidirectional, line rate
NVLINK4_Bps = 450 * GB  # H100 SXM datasheet: 900 GB/s bidirectional, line rate
HDR_Bps = 200e9 / 8  # InfiniBand HDR 200 Gb/s per direction, line rate
NDR_Bps = 400e9 / 8  # InfiniBand NDR 400 Gb/s per direction, line rate
PCIE4_X16_Bps = 16e9 * 16 * 128 / 130 / 8  # 31.5 GB/s per direction, line rate
PCIE5_X16_Bps = 32e9 * 16 * 128 / 130 / 8  # 63 GB/s per direction, line rate
NVLINK_LATENCY_S = 0.25 * US  # per link; GPU-NVSwitch-GPU ~0.5 us (NCCL tuning.cc hwLat)
PCIE_LATENCY_S = 0.5 * US  # per link; a PCIe hop ~1 us (NCCL tuning.cc hwLat, PCI LL)
IB_LATENCY_S = 0.2 * US  # per link; switch port to port 130 ns (QM8700) + cable
UPI_Bps = 3 * 20.8e9  # 3 UPI links x 20.8 GB/s per direction (Intel Xeon Scalable 3rd gen)
UPI_LATENCY_S = 0.1 * US  # socket to socket, typical


def _duplex(a: str, b: str, latency_s: float, bandwidth_Bps: float,
            kind: str) -> tuple[Link, Link]:
    return Link(a, b, latency_s, bandwidth_Bps, kind), Link(b, a, latency_s, bandwidth_Bps, kind)


def _alpha_beta_ranks(nranks: int, alpha: float,
                      beta: float) -> tuple[tuple[str, ...], float, float]:
    """The rank ids ``r0 ..``, alpha and the bandwidth ``1 / beta``, checked."""
    check_int(nranks, "nranks", 1)
    alpha = check_number(alpha, "alpha", positive=True)
    bandwidth = 1.0 / check_number(beta, "beta", positive=True)
    return tuple(f"r{r}" for r in range(nranks)), alpha, bandwidth


def flat(nranks: int, alpha: float, beta: float) -> Topology:
    """The textbook single-port alpha-beta machine (Thakur, Rabenseifner and Gropp, 2005).

    Each rank has one port: it sends one message and receives one at a time at the full
    rate ``1 / beta``, and messages it sends (or receives) at once share that rate
    (R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of collective communication
    operations in MPICH", IJHPCA 19(1), 2005: the cost ``alpha + n * beta`` of a message,
    one send and one receive per process at a time).  Built as a star: every rank's
    uplink into one non-blocking ``switch`` and downlink out of it, each ``alpha / 2``
    long (a route's latency is exactly ``alpha``) and ``1 / beta`` wide.  On this machine
    ring is bandwidth-optimal, as the literature states; :func:`mesh` is the machine
    where every ordered pair has a link of its own.

    Parameters
    ----------
    nranks : int
        Number of ranks (>= 1); devices ``r0 .. r{nranks-1}`` of kind ``"rank"``.
    alpha : float
        Latency of every pair, seconds (> 0).
    beta : float
        Seconds per byte of every port (> 0): the bandwidth is ``1 / beta``.

    Returns
    -------
    Topology
        ``2 * nranks`` links of kind ``"flat"``: ``r{i} -> switch`` is link ``2 * i``,
        ``switch -> r{i}`` link ``2 * i + 1``.

    Raises
    ------
    ValueError
        If ``nranks`` is not an int >= 1, or ``alpha`` or ``beta`` is not > 0.

    Examples
    --------
    >>> t = flat(4, 2e-6, 1e-10)
    >>> t.route(1, 3), t.alpha(1, 3), t.beta(1, 3)
    ((2, 7), 2e-06, 1e-10)
    """
    ids, alpha, bandwidth = _alpha_beta_ranks(nranks, alpha, beta)
    links = [link for i in ids for link in _duplex(i, "switch", alpha / 2, bandwidth, "flat")]
    devices = tuple(Device(i, "rank") for i in ids) + (Device("switch", "switch"),)
    return Topology(f"flat({nranks})", devices, tuple(links), ids)


def mesh(nranks: int, alpha: float, beta: float) -> Topology:
    """The contention-free alpha-beta model: a dedicated link for every ordered pair.

    A rank sends to any number of peers at once, each at the full rate ``1 / beta``
    (:func:`flat` is the single-port machine).  No two pairs share a link, so the
    simulator reproduces closed forms that count every message alone.  The links are a
    :class:`~topology.model.FullMesh`: four numbers, not ``nranks**2`` objects (1024
    ranks build in a few milliseconds).

    Parameters
    ----------
    nranks, alpha : int, float
        As for :func:`flat`.
    beta : float
        Seconds per byte of every pair (> 0).

    Returns
    -------
    Topology
        Named ``"mesh(nranks)"``; ``ValueError`` for the figures :func:`flat` refuses.

    Examples
    --------
    >>> t = mesh(4, 2e-6, 1e-10)
    >>> t.route(1, 3), t.alpha(1, 3), t.beta(1, 3)
    ((5,), 2e-06, 1e-10)
    """
    ids, alpha, bandwidth = _alpha_beta_ranks(nranks, alpha, beta)
    return Topology(f"mesh({nranks})", tuple(Device(i, "rank") for i in ids),
                    FullMesh(ids, alpha, bandwidth, "flat"), ids)


#: the default machine (:func:`default_flat`): MPI ranks sharing one host's memory
#: (source: ``collsim calibrate -n 4`` on this project's 2-core x86 VM, pip Open MPI 5
#: wheel, NumPy: alpha 1-6 us per pair, 4.5-13 GB/s per pair; ``a += b`` 0.02 ns/B in
#: cache, so 0.1 ns/B is taken for vectors beyond it; rounded)
DEFAULT_ALPHA_S = 3e-6
DEFAULT_BETA_S_PER_BYTE = 2e-10
DEFAULT_GAMMA_S_PER_BYTE = 1e-10


def default_flat(nranks: int) -> Topology:
    """The machine to assume when none is given: :func:`flat` with the default figures.

    :data:`DEFAULT_ALPHA_S`, :data:`DEFAULT_BETA_S_PER_BYTE` and
    :data:`DEFAULT_GAMMA_S_PER_BYTE` (see their source above), named
    ``"default flat(nranks)"``.

    Parameters
    ----------
    nranks : int
        Number of ranks (>= 1).

    Returns
    -------
    Topology
        A flat topology with a reduction cost.

    Raises
    ------
    ValueError
        If ``nranks`` is not an int >= 1.

    Examples
    --------
    >>> t = default_flat(4)
    >>> t.name, t.alpha(0, 3), t.gamma_s_per_byte
    ('default flat(4)', 3e-06, 1e-10)
    """
    base = flat(nranks, DEFAULT_ALPHA_S, DEFAULT_BETA_S_PER_BYTE)
    return Topology(f"default {base.name}", base.devices, base.links, base.placement,
                    gamma_s_per_byte=DEFAULT_GAMMA_S_PER_BYTE)


def rail_fat_tree(nodes: int = 1, *, gpus_per_node: int = 8, nvlink_Bps: float = NVLINK4_Bps,
                  nvlink_latency_s: float = NVLINK_LATENCY_S,
                  pcie_Bps: float = PCIE5_X16_Bps, pcie_latency_s: float = PCIE_LATENCY_S,
                  nic_Bps: float = NDR_Bps, ib_latency_s: float = IB_LATENCY_S,
                  nodes_per_leaf: int = 32, spines: int = 8, oversubscription: float = 1.0,
                  name: str = "rail_fat_tree",
                  gpu_model: GpuModel | None = DGX_H100_GPU) -> Topology:
    """NVSwitch nodes on a rail-optimized two-level InfiniBand fat-tree.

    Each node has ``gpus_per_node`` GPUs joined by one NVSwitch device, and one NIC per GPU
    (GPU ``g`` <-> NIC ``g`` over PCIe). NIC ``g`` of every node plugs into the leaf of rail
    ``g`` of its group of ``nodes_per_leaf`` nodes (as in a DGX SuperPOD scalable unit); every
    leaf links to every spine. Same-rail traffic within a group turns at the leaf
    (NIC-leaf-NIC); other traffic climbs to a spine, chosen per pair like ECMP.

    Parameters
    ----------
    nodes : int
        Number of nodes (>= 1). Rank ``r`` runs on GPU ``r % gpus_per_node`` of node
        ``r // gpus_per_node``.
    gpus_per_node : int
        GPUs (and NICs, and rails) per node.
    nvlink_Bps, nvlink_latency_s : float
        Per GPU, per direction: the GPU <-> NVSwitch link.
    pcie_Bps, pcie_latency_s : float
        GPU <-> NIC link, per direction.
    nic_Bps, ib_latency_s : float
        NIC <-> leaf link per direction; also the latency of each leaf <-> spine link.
    nodes_per_leaf : int
        Nodes per leaf switch (a leaf has as many down ports).
    spines : int
        Spine switches; each leaf has one up link to each.
    oversubscription : float
        A leaf's down bandwidth over its up bandwidth (1: full bisection, 2: half, ...):
        each leaf-spine link carries ``nodes_per_leaf * nic_Bps / oversubscription / spines``.
    name : str
        The topology's name.
    gpu_model : GpuModel or None
        The GPU terms (:mod:`topology.gpu`) with figures for ``nvlink``, ``pcie`` and
        ``ib`` links (default the H100 figures, as the default links are H100's), or
        None for the links alone.

    Returns
    -------
    Topology
        Devices ``n{i}.gpu{g}``, ``n{i}.nvswitch``, ``n{i}.nic{g}``, ``leaf{j}.rail{g}``,
        ``spine{k}``.
    """
    check_int(nodes, "nodes", 1)
    check_int(gpus_per_node, "gpus_per_node", 1)
    check_int(nodes_per_leaf, "nodes_per_leaf", 1)
    check_int(spines, "spines", 1)
    oversubscription = check_number(oversubscription, "oversubscription", positive=True)
    uplink_Bps = nodes_per_leaf * nic_Bps / oversubscription / spines
    shape = RailFatTree(nodes, gpus_per_node, nodes_per_leaf, spines)
    links = shape.links((nvlink_latency_s, nvlink_Bps), (pcie_latency_s, pcie_Bps),
                        (ib_latency_s, nic_Bps), (ib_latency_s, uplink_Bps))
    return Topology(name, shape.devices(), links, shape.placement(), gpu=gpu_model,
                    fabric=shape)


def dgx_a100(nodes: int = 1, *, oversubscription: float = 1.0, nodes_per_leaf: int = 20,
             spines: int = 8, gpu_model: GpuModel | None = DGX_A100_GPU) -> Topology:
    """DGX A100 nodes: 8 x A100 on NVLink 3 / NVSwitch, 8 x HDR 200 Gb/s NICs (one per GPU).

    Line rates (see the module notes): 300 GB/s per direction per GPU into the NVSwitch,
    PCIe Gen4 x16 GPU <-> NIC, 25 GB/s per NIC. ``nodes_per_leaf=20``: a DGX A100 SuperPOD
    scalable unit is 20 nodes on 8 QM8700 leaves (DGX SuperPOD reference architecture).
    More nodes are joined by :func:`rail_fat_tree`'s leaves and spines.

    Parameters
    ----------
    nodes : int, optional
        Number of nodes (>= 1); 8 ranks each.
    oversubscription : float, optional
        A leaf's down bandwidth over its up bandwidth (1: full bisection).
    nodes_per_leaf : int, optional
        Nodes per leaf switch.
    spines : int, optional
        Spine switches.
    gpu_model : GpuModel or None, optional
        The GPU terms; default the DGX figures of :mod:`topology.gpu_presets`, None for
        the links alone.

    Returns
    -------
    Topology
        See :func:`rail_fat_tree`.

    Raises
    ------
    ValueError
        If a count or figure is out of range (see :func:`rail_fat_tree`).
    """
    return rail_fat_tree(nodes, gpus_per_node=8, nvlink_Bps=NVLINK3_Bps,
                         pcie_Bps=PCIE4_X16_Bps, nic_Bps=HDR_Bps,
                         nodes_per_leaf=nodes_per_leaf, spines=spines,
                         oversubscription=oversubscription, name=f"dgx_a100({nodes})",
                         gpu_model=gpu_model)


def dgx_h100(nodes: int = 1, *, oversubscription: float = 1.0, nodes_per_leaf: int = 32,
             spines: int = 8, gpu_model: GpuModel | None = DGX_H100_GPU) -> Topology:
    """DGX H100 nodes: 8 x H100 on NVLink 4 / NVSwitch, 8 x NDR 400 Gb/s NICs (one per GPU).

    Line rates (see the module notes): 450 GB/s per direction per GPU into the NVSwitch,
    PCIe Gen5 x16 GPU <-> NIC, 50 GB/s per NIC. ``nodes_per_leaf=32``: a DGX H100 SuperPOD
    scalable unit is 32 nodes on 8 QM9700 leaves (DGX SuperPOD reference architecture).

    Parameters
    ----------
    nodes : int, optional
        Number of nodes (>= 1); 8 ranks each.
    oversubscription : float, optional
        A leaf's down bandwidth over its up bandwidth (1: full bisection).
    nodes_per_leaf : int, optional
        Nodes per leaf switch.
    spines : int, optional
        Spine switches.
    gpu_model : GpuModel or None, optional
        The GPU terms; default the DGX figures of :mod:`topology.gpu_presets`, None for
        the links alone.

    Returns
    -------
    Topology
        See :func:`rail_fat_tree`.

    Raises
    ------
    ValueError
        If a count or figure is out of range (see :func:`rail_fat_tree`).

    Examples
    --------
    >>> t = dgx_h100(2)
    >>> t.hops(0, 1), t.hops(0, 8), t.hops(0, 9)
    (2, 4, 6)
    >>> round(1 / t.beta(0, 1) / 1e9), round(1 / t.beta(0, 8) / 1e9)
    (450, 50)
    """
    return rail_fat_tree(nodes, gpus_per_node=8, nvlink_Bps=NVLINK4_Bps,
                         pcie_Bps=PCIE5_X16_Bps, nic_Bps=NDR_Bps,
                         nodes_per_leaf=nodes_per_leaf, spines=spines,
                         oversubscription=oversubscription, name=f"dgx_h100({nodes})",
                         gpu_model=gpu_model)


def pcie_node(gpus: int = 8, *, gpus_per_switch: int = 2, sockets: int = 2,
              pcie_Bps: float = PCIE4_X16_Bps, pcie_latency_s: float = PCIE_LATENCY_S,
              socket_Bps: float = UPI_Bps, socket_latency_s: float = UPI_LATENCY_S) -> Topology:
    """A node whose GPUs talk over PCIe only (no NVLink), through switches and CPU sockets.

    GPUs sit in groups of ``gpus_per_switch`` under a PCIe switch; the switches are spread
    evenly over ``sockets`` CPU sockets (root complexes), joined pairwise by UPI links.
    GPUs under one switch: 2 hops; under one socket: 4 hops; across sockets: 5 hops.

    Parameters
    ----------
    gpus : int
        GPUs in the node (>= 1); rank ``r`` runs on ``gpu{r}``.
    gpus_per_switch : int
        GPUs per PCIe switch.
    sockets : int
        CPU sockets.
    pcie_Bps, pcie_latency_s : float
        Every PCIe link (GPU <-> switch, switch <-> CPU), per direction. Default Gen4 x16.
    socket_Bps, socket_latency_s : float
        The CPU <-> CPU link, per direction. Default 3 UPI links of 20.8 GB/s (line rate).
    """
    check_int(gpus, "gpus", 1)
    check_int(gpus_per_switch, "gpus_per_switch", 1)
    check_int(sockets, "sockets", 1)
    switches = -(-gpus // gpus_per_switch)
    if sockets > switches:
        raise ValueError(f"sockets={sockets} is not allowed; it must be <= the number of PCIe "
                         f"switches ({switches} for gpus={gpus}, gpus_per_switch="
                         f"{gpus_per_switch})")
    devices = [Device(f"cpu{c}", "cpu") for c in range(sockets)]
    devices += [Device(f"pcie{s}", "pcie_switch") for s in range(switches)]
    devices += [Device(f"gpu{g}", "gpu") for g in range(gpus)]
    links: list[Link] = []
    for s in range(switches):
        links += _duplex(f"pcie{s}", f"cpu{s * sockets // switches}", pcie_latency_s,
                         pcie_Bps, "pcie")
    for g in range(gpus):
        links += _duplex(f"gpu{g}", f"pcie{g // gpus_per_switch}", pcie_latency_s, pcie_Bps,
                         "pcie")
    for a in range(sockets):
        for b in range(a + 1, sockets):
            links += _duplex(f"cpu{a}", f"cpu{b}", socket_latency_s, socket_Bps, "upi")
    return Topology(f"pcie_node({gpus})", tuple(devices), tuple(links),
                    tuple(f"gpu{g}" for g in range(gpus)))


#: the command lines' ``--topology flat`` (and ``mesh``) figures unless given: the default machine's
#: (:func:`default_flat`; ``collsim bench --topology calibrate`` and ``collsim predict``
#: measure the real one)
FLAT_ALPHA_S = DEFAULT_ALPHA_S
FLAT_BETA_S_PER_BYTE = DEFAULT_BETA_S_PER_BYTE

#: the names :func:`preset` accepts (the command lines' ``--topology`` presets)
PRESET_NAMES = ("flat", "mesh", "dgx-h100", "dgx-a100", "pcie")


def preset(name: str, *, nranks: int = 8, nodes: int = 1, alpha: float = FLAT_ALPHA_S,
           beta: float = FLAT_BETA_S_PER_BYTE) -> Topology:
    """The machine a command line's ``--topology NAME`` means.

    Parameters
    ----------
    name : {"flat", "mesh", "dgx-h100", "dgx-a100", "pcie"}
        The preset (:data:`PRESET_NAMES`).
    nranks : int
        Ranks of ``flat`` and ``mesh`` (ignored by the others).
    nodes : int
        Nodes of a DGX preset (ignored by the others).
    alpha, beta : float
        Latency (s) and seconds per byte of ``flat`` and ``mesh`` (ignored by the others).

    Returns
    -------
    Topology
        :func:`flat`, :func:`mesh`, :func:`dgx_h100`, :func:`dgx_a100` or :func:`pcie_node`
        (default size).

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`PRESET_NAMES`, or a constructor rejects the figures.

    Examples
    --------
    >>> preset("dgx-h100", nodes=2).nranks
    16
    >>> preset("flat", nranks=4).name
    'flat(4)'
    """
    if name == "flat":
        return flat(nranks, alpha, beta)
    if name == "mesh":
        return mesh(nranks, alpha, beta)
    if name == "dgx-h100":
        return dgx_h100(nodes=nodes)
    if name == "dgx-a100":
        return dgx_a100(nodes=nodes)
    if name == "pcie":
        return pcie_node()
    raise ValueError(f"name={brief(name)} is not a preset; it must be one of "
                     f"{', '.join(PRESET_NAMES)}")
