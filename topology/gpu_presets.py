"""The GPU terms of the DGX presets, each figure with where it comes from.

One set of figures per machine kind (A100 nodes, H100 nodes), whatever the node count.
"tuning.cc" is NCCL's own cost model, src/graph/tuning.cc (NCCL 2.30.7; the Ampere and
Hopper rows unchanged since 2.28); "fitted" marks a figure chosen so that the model meets
published measurements, with the measurements named.  ``simulator/data/nccl-tests/`` holds the
published curves and ``simulator/data/nccl-model-facts.md`` the constants quoted here.

Protocols (tuning.cc): NCCL's model is ``baseLat + steps * hwLat + bytes / bw``:

* ``LL``: baseLat (Ring) 6.6 us; bandwidth 0.5x, capped on one node at llMaxBw
  (141 GB/s Hopper, 87.7 GB/s Ampere): the cap binds, and against what Ring Simple
  reaches on the same nodes (370 GB/s, ~240 GB/s) it is 0.36-0.38 of it: 0.37.
* ``LL128``: baseLat 14.0 us; bandwidth 0.92x (on A100 NVLink 0.60x, fitted: see
  ``DGX_A100_GPU``; a link kind may set a protocol's fraction, ``protocol_fraction``).
* ``Simple``: baseLat 8.4 us; the full achievable bandwidth.

Each protocol's FIFO slot (``slot_bytes``, the data of one of a connection's
``NCCL_STEPS`` = 8 slots: 32 KiB LL, 562.5 KiB LL128, 512 KiB Simple, from NCCL's default
buffer sizes; see the constants below): a message longer than a slot hides its route's
latency behind its data (:func:`simulator.gpu.hidden_latency`).  Each of NCCL's channels
(``channels``: 24 on an A100 node, 16 on H100) has its own FIFO to every peer.

Links, per link crossed (the simulator sums a route's links; a hop GPU -> NVSwitch -> GPU
crosses two ``nvlink`` links, a network hop GPU -> NIC -> leaf -> NIC -> GPU two ``pcie``
and two ``ib`` links, so each carries half of a hop's figure):

* ``nvlink``: tuning.cc hwLat NVLink Ring {LL, LL128, Simple} = {0.6, 1.9, 3.4} us per hop.
* ``ib``: tuning.cc hwLat network Ring {2.7, 4.0, 14.0} us per hop.
* ``pcie`` (GPU <-> NIC): the network's per-message post overhead, x3 for Simple, per hop
  (tuning.cc, ``getNetOverhead``: 1 us on an Intel x86 host, 2 us on an AMD one): 2 us on
  the A100 nodes (DGX A100: 2x AMD EPYC 7742; OCI BM.GPU4.8: 2x AMD EPYC 7542), 1 us on
  the H100 nodes (DGX H100: 2x Intel Xeon Platinum 8480C; vendor datasheets).

Channels in and out of step (:attr:`topology.LinkFigures.in_step`): over NVLink a
channel's step is its own SM's stores, and the channels of a node move side by side (the
one-node curves, every size NCCL ran the ring: a step pays its latency and then all of
its channels' bytes).  Over the network a channel's step is a message its proxy posts
once that channel's GPU work has filled it (src/transport/net.cc,
``sendProxyProgress``: each channel's connection, a "sub", posts, transmits and
completes its own steps, one ``isend`` a step) and the NIC serves its connections'
messages as they come, so the channels of a NIC drift out of step and one channel's
latency passes while the others' bytes fill the link: ``ib`` is out of step.  The
published rings across nodes say which (``benchmarks/bench_pipelining.py``): a step of
the 1,024-GPU ring (h100_128node_ring_ll128) takes 9.5 us at 1 GiB and 9.9 us at 2 GiB,
twice the bytes: the latency of a route through a spine (9 us under LL128 here) and a
channel's share of the bytes (0.7 and 1.5 us), where in step the preset charged
9 + 2.9 and 9 + 5.8 us (+26%, +50% for the curve); the 2-node ring
(h100_2node_ring_nccl2.26) lies between the two from 16 to 128 MiB.  Against it:
h100_8node_tuned from 16 to 512 MiB (more channels than h100_8node_default, so more of
the latency hidden, where it measured 10-35% slower than h100_8node_default).

The tree (:data:`TREE`) has figures of its own in tuning.cc, in place of the Ring's above;
every other algorithm (ring, rhd, pipeline) runs on the Ring's, tuning.cc having none for
them.  Left out, with the reason:

* the per-channel caps (``perChMaxTreeBws``, ``perChMaxTreeLL128Bws``): the simulator has
  no per-channel rate; the Ring's are left out alike.  (The cap on LL, ``llMaxBw``, the
  simulator applies to the tree as tuning.cc does: :mod:`simulator.gpu`; the Ring's LL
  fraction above holds it on one node, and no published curve runs Ring LL across nodes.)
  Measured and not taken: NCCL's per-call channel reduction (src/enqueue.cc,
  ``topoGetAlgoInfo``) with every rate scaled by the channels in use (tuning.cc,
  ``ncclTopoGetAlgoTime``: ``bw / nChannels * info->nChannels``) brings
  a100_2node_roce_default from 17.4% to 15.3% geomean (before the tree's cap on LL) and
  h100_1node_dgx_default_nvls from 14.8% to 12.0%, but a100_1node_nccl2.19.3_g8 from
  10.8% to 13.6% (its ring LL
  from 64 to 256 KiB, on 2-8 of 24 channels, 11-37% too slow: one LL channel moves far
  more than 1/24 of the node's LL rate);
* the x0.85 of ``maxTreePattern == NCCL_TOPO_PATTERN_TREE``: NCCL's search takes that
  pattern only for nodes of one GPU (src/graph/search.cc, ``ngpus == 1``), which no preset
  has; on DGX nodes it finds the balanced tree;
* ``treeCorrectionFactor`` (0.4-1.0 of the bandwidth by size, ``ncclTopoGetAlgoTime``):
  NCCL's fit of its own closed form to its trees ("Trees are not perfectly sticking to
  the model for medium sizes"), a form that has no pipeline; the simulator plays the
  tree's pipeline (segments, depth, contention), the part of that error that describes
  the machine, so the factor would count it twice.
"""

from __future__ import annotations

from .gpu import AlgorithmFigures, GpuModel, LinkFigures, Protocol

__all__ = ["DGX_A100_GPU", "DGX_H100_GPU", "PROTOCOLS", "TREE"]

#: NCCL_STEPS, src/include/device.h: the slots of every connection's FIFO
_NCCL_STEPS = 8
# the data of one slot: the protocol's default buffer (src/init.cc DEFAULT_LL_BUFFSIZE,
# DEFAULT_LL128_BUFFSIZE, DEFAULT_BUFFSIZE, with the per-thread figures of
# src/include/device.h) over NCCL_STEPS, less the protocol's flags
#: LL: 8 lines/thread x 512 threads x 16 B lines (NCCL_LL_LINES_PER_THREAD,
#: NCCL_LL_MAX_NTHREADS, union ncclLLFifoLine), of which each line carries 8 B of data
_LL_SLOT_BYTES = 8 * 512 * 16 // 2
#: LL128: 120 words/thread x 640 threads x 8 B (NCCL_LL128_ELEMS_PER_THREAD,
#: NCCL_LL128_MAX_NTHREADS), 15 of every 16 words data (NCCL_LL128_DATAELEMS)
_LL128_SLOT_BYTES = 120 * 640 * 8 * 15 // 16
#: Simple: DEFAULT_BUFFSIZE (1 << 22, 4 MiB), all of it data
_SIMPLE_SLOT_BYTES = (1 << 22) // _NCCL_STEPS

#: tuning.cc baseLat (Ring) and bandwidth factors; LL's fraction from llMaxBw (see above)
PROTOCOLS = (Protocol("LL", 0.37, 6.6e-6, _LL_SLOT_BYTES),
             Protocol("LL128", 0.92, 14.0e-6, _LL128_SLOT_BYTES),
             Protocol("Simple", 1.0, 8.4e-6, _SIMPLE_SLOT_BYTES))


def _by_protocol(values: tuple[float, float, float]) -> tuple[tuple[str, float], ...]:
    """``{LL, LL128, Simple}`` figures as ``(protocol, value)`` pairs."""
    return tuple(zip((p.name for p in PROTOCOLS), values))


def _per_link(kind: str, efficiency: float, latency_s: tuple[float, float, float],
              protocol_fraction: tuple[tuple[str, float], ...] = (),
              flow_Bps: float | None = None, in_step: bool = True) -> LinkFigures:
    """Figures of ``kind`` with per-link {LL, LL128, Simple} latencies."""
    return LinkFigures(kind, efficiency, _by_protocol(latency_s), protocol_fraction, flow_Bps,
                       in_step)


_NVLINK_S = (0.3e-6, 0.95e-6, 1.7e-6)  # tuning.cc hwLat NVLink Ring 0.6, 1.9, 3.4 us, halved
_IB_S = (1.35e-6, 2.0e-6, 7.0e-6)  # tuning.cc hwLat network Ring 2.7, 4.0, 14.0 us, halved
# tuning.cc getNetOverhead per hop, x3 for Simple, halved: 1 us on an Intel x86 host, 2 us on AMD
_PCIE_INTEL_S = (0.5e-6, 0.5e-6, 1.5e-6)
_PCIE_AMD_S = (1.0e-6, 1.0e-6, 3.0e-6)


#: tuning.cc (NCCL 2.30.7) figures of Tree, for the tree algorithm (see the module docstring)
TREE = AlgorithmFigures(
    "tree",
    # baseLatencies Tree {6.8, 14.0, 8.4} us (Ring 6.6, 14.0, 8.4)
    call_s=_by_protocol((6.8e-6, 14.0e-6, 8.4e-6)),
    # Tree AllReduce busBw x0.92 for every protocol, then LL x1/3.8 and LL128 x120/128 on
    # more than one node (x7/9 on one; trees run over nodes): 0.92/3.8, 0.92 x 120/128, 0.92
    bandwidth_fraction=_by_protocol((0.92 / 3.8, 0.92 * 120 / 128, 0.92)),
    latency_s=(
        # hwLat NVLink Tree {0.6, 1.25, 4.0} us per hop, halved (Ring 0.6, 1.9, 3.4)
        ("nvlink", _by_protocol((0.3e-6, 0.625e-6, 2.0e-6))),
        # hwLat NET Tree {5.0, 8.5, 14.0} us per hop, halved (Ring 2.7, 4.0, 14.0); the
        # network post overhead (pcie) is the Ring's
        ("ib", _by_protocol((2.5e-6, 4.25e-6, 7.0e-6))),
    ),
)

#: 8x A100 SXM4 on NVLink3/NVSwitch, HDR 200 Gb/s NICs
DGX_A100_GPU = GpuModel(
    PROTOCOLS,
    (
        # fitted over every size >= 64 MiB of the three one-node A100 curves (12 sizes,
        # a100_1node_dgx, _nccl2.16.2, _nccl2.19.3_g8; mean log error 0, geomean error
        # 7.3%): 0.745 x 300 GB/s (0.76, geomean 6.6%, before FIFO slots hid the step
        # latency from 128 MiB).  The curves disagree there: one process per GPU
        # (2.16.2) reaches 204-232 GB/s busbw from 64 MiB, the two -g 8 curves 175-202 up
        # to 512 MiB (and 231 at 1 GiB), 9-21% slower at the same sizes, so no figure
        # meets both to better than ~6%.  (Fitted to >= 1 GiB alone it was 0.81.)
        # LL128 on NVLink, fitted: where NCCL's model runs Ring LL128 on one A100 node
        # (4-16 MiB), both curves with those sizes (a100_1node_dgx, _nccl2.19.3_g8, the
        # only A100 curves with LL128 on NVLink alone) add a steady ~76-80 GB/s algbw
        # (~135 GB/s busbw) per byte from 1 to 16 MiB, far below NCCL's 0.92 x Simple:
        # 0.59 of this kind's rate over those 6 sizes (mean log error 0), at 0.76; 0.60 at
        # 0.745, the same rate.  Over the network the NIC moves LL128's buffers as it
        # moves Simple's, at tuning.cc's 0.92.
        _per_link("nvlink", 0.745, _NVLINK_S, (("LL128", 0.60),)),
        # GPU <-> NIC, PCIe Gen4 x16 (31.5 GB/s) is never the bottleneck ahead of a 25 GB/s
        # NIC; the post overhead of the DGX A100's AMD EPYC hosts
        _per_link("pcie", 1.0, _PCIE_AMD_S),
        # ~20-23.7 GB/s per HDR NIC measured (nccl#320; 189.6 GB/s Ring busbw over 8 NICs,
        # a100_2node_ring): 0.92 x 25 GB/s
        _per_link("ib", 0.92, _IB_S, in_step=False),
    ),
    # A100 SXM4 80GB HBM2e: 2,039 GB/s (NVIDIA A100 datasheet); 40GB: 1,555 GB/s
    reduce_Bps=2.0e12,
    # fitted: small AllReduce takes ~18-25 us on 8x A100 with one process per GPU
    # (nccl-model-facts.md), 36 us on 2x8 (a100_2node_roce_default, 8 B); NCCL's model
    # (baseLat + hops) gives ~15 us on 8 and ~31 us on 2x8: 5 us more per call
    launch_s=5e-6,
    # fitted: one process driving 8 A100s (-g 8) takes 34.8-37 us up to 64 KiB
    # (a100_1node_nccl2.19.3_g8), 15 us more than one process per GPU: 2.1 us per extra GPU
    launch_per_gpu_s=2.1e-6,
    algorithms=(TREE,),
    # NCCL's log on one 8x A100 node, "Channel 23/24" (nccl-tests#100); across nodes it
    # runs 16 (a channel per NIC, doubled; nccl-model-facts.md): the one-node figure
    channels=24,
    nccl_kind="A100",
)

#: 8x H100 SXM on NVLink4/NVSwitch, NDR 400 Gb/s NICs
DGX_H100_GPU = GpuModel(
    PROTOCOLS,
    (
        # fitted to a maintainer's statement: "effective NVLink bandwidth of 370GB/s"
        # Ring AllReduce busbw (nccl-tests#212; 368.8 in nccl-tests#309, 370 in nccl#2140);
        # with the reduction term below: 0.87 x 450 GB/s
        _per_link("nvlink", 0.87, _NVLINK_S),
        # GPU <-> NIC, PCIe Gen5 x16 (63 GB/s) is never the bottleneck ahead of a 50 GB/s
        # NIC; the post overhead of the DGX H100's Intel Xeon hosts
        _per_link("pcie", 1.0, _PCIE_INTEL_S),
        # fitted to the multi-node H100 curves whose NICs carry enough flows (below): Ring
        # busbw at >= 1 GiB is 393 GB/s on 2 nodes (h100_2node_ring), 391 on 8
        # (h100_8node_tuned), 368 on 128 under LL128 (h100_128node_ring_ll128, 16 GiB):
        # ~49 GB/s per NIC over 8 NICs, 0.98 x 50 GB/s (46-48 measured alone,
        # nccl-tests#290, #319).
        # flow: fitted to the one curve whose NICs carry 2 flows each (NCCL's 16 channels
        # over 8 NICs, one queue pair per connection), h100_8node_default: 319-321 GB/s Ring
        # busbw at >= 2 GiB, 40.4 GB/s per NIC, 20.2 GB/s a flow; the curves above carry 6
        # (NCCL_MIN_CTAS=24, NCCL_IB_QPS_PER_CONNECTION=2) and 4 (NCCL_MIN_NCHANNELS=32)
        # and reach the NIC's 0.98 (NCCL's docs: several queue pairs give a multi-level
        # fabric routing entropy)
        _per_link("ib", 0.98, _IB_S, flow_Bps=20.2e9, in_step=False),
    ),
    # H100 SXM HBM3: 3.35 TB/s (NVIDIA H100 datasheet)
    reduce_Bps=3.35e12,
    # small AllReduce on 8x H100 takes 13-17 us (h100_1node_dgx_default_nvls up to 2 KiB),
    # NCCL's own model (baseLat 6.6 + 14 x 0.6 us) 15 us: nothing more per call
    launch_s=0.0,
    # taken from the A100 fit (a host-side cost, no -g 8 curve of H100 is published here)
    launch_per_gpu_s=2.1e-6,
    algorithms=(TREE,),
    # 16 on one node (18 NVLinks x 20.6 GB/s over 16) and across nodes (a channel per
    # NIC, doubled): nccl-model-facts.md, simulator/nccl_tuner.py
    channels=16,
    nccl_kind="H100",
)
