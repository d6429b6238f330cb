"""The rail-optimized fat-tree's layout, and its routes in closed form.

:func:`topology.rail_fat_tree` lays its devices and links out in a fixed order
(:class:`RailFatTree`), so the route between two GPUs is arithmetic on their indices:
the one the breadth-first search of :class:`topology.model.Topology` finds (fewest hops,
then lowest latency, equal spines chosen by the same CRC of the endpoint ids), in a few
microseconds instead of a millisecond at 16,384 GPUs.  ``tests/test_topology_presets.py``
holds the two equal over every pair of small machines.

Layout (``N`` nodes of ``G`` GPUs, ``K`` spines, ``J`` leaf groups of ``nodes_per_leaf``):

* devices: per node ``n``, ``n{n}.nvswitch`` then ``n{n}.gpu{g}``, ``n{n}.nic{g}`` for each
  ``g``; then ``spine{k}``; then ``leaf{j}.rail{g}``;
* links: per node and GPU, six: GPU -> NVSwitch, NVSwitch -> GPU, GPU -> NIC, NIC -> GPU,
  NIC -> leaf, leaf -> NIC; then per leaf and spine two: leaf -> spine, spine -> leaf.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from .errors import TopologyError
from .model import Device, Link

__all__ = ["RailFatTree", "Figures"]

#: a link kind's latency (s) and bandwidth (B/s)
Figures = tuple[float, float]

_GPU_LINKS = 6  # per GPU: to and from the NVSwitch, the NIC, and the NIC's leaf


@dataclass(frozen=True)
class RailFatTree:
    """The shape of a rail-optimized two-level fat-tree (see the module docstring).

    Parameters
    ----------
    nodes, gpus_per_node, nodes_per_leaf, spines : int
        As :func:`topology.rail_fat_tree` (checked there).
    """

    nodes: int
    gpus_per_node: int
    nodes_per_leaf: int
    spines: int

    @property
    def groups(self) -> int:
        """Leaf groups (``ceil(nodes / nodes_per_leaf)``)."""
        return -(-self.nodes // self.nodes_per_leaf)

    def devices(self) -> tuple[Device, ...]:
        """Every device, in the layout's order."""
        out = []
        for n in range(self.nodes):
            out.append(Device(f"n{n}.nvswitch", "nvswitch"))
            for g in range(self.gpus_per_node):
                out += [Device(f"n{n}.gpu{g}", "gpu"), Device(f"n{n}.nic{g}", "nic")]
        out += [Device(f"spine{k}", "ib_spine") for k in range(self.spines)]
        out += [Device(f"leaf{j}.rail{g}", "ib_leaf")
                for j in range(self.groups) for g in range(self.gpus_per_node)]
        return tuple(out)

    def placement(self) -> tuple[str, ...]:
        """Rank ``r`` on GPU ``r % gpus_per_node`` of node ``r // gpus_per_node``."""
        return tuple(f"n{n}.gpu{g}" for n in range(self.nodes)
                     for g in range(self.gpus_per_node))

    def links(self, nvlink: Figures, pcie: Figures, ib: Figures,
              uplink: Figures) -> tuple[Link, ...]:
        """Every link, in the layout's order, with each kind's ``(latency_s, bandwidth_Bps)``
        (``uplink``: the leaf-spine links, of kind ``ib``)."""
        out = []
        for n in range(self.nodes):
            switch, leaf = f"n{n}.nvswitch", n // self.nodes_per_leaf
            for g in range(self.gpus_per_node):
                gpu, nic, rail = f"n{n}.gpu{g}", f"n{n}.nic{g}", f"leaf{leaf}.rail{g}"
                out += [Link(gpu, switch, *nvlink, "nvlink"), Link(switch, gpu, *nvlink, "nvlink"),
                        Link(gpu, nic, *pcie, "pcie"), Link(nic, gpu, *pcie, "pcie"),
                        Link(nic, rail, *ib, "ib"), Link(rail, nic, *ib, "ib")]
        for j in range(self.groups):
            for g in range(self.gpus_per_node):
                for k in range(self.spines):
                    out += [Link(f"leaf{j}.rail{g}", f"spine{k}", *uplink, "ib"),
                            Link(f"spine{k}", f"leaf{j}.rail{g}", *uplink, "ib")]
        return tuple(out)

    def check(self, devices: tuple[Device, ...], links: tuple[Link, ...],
              placement: tuple[str, ...]) -> None:
        """Raise TopologyError unless ``devices``, ``links`` and ``placement`` have this
        layout: their counts and the placement, and the ends of the links of the first
        and last GPU and of the first and last leaf-spine pair (a check, not a proof)."""
        G, K = self.gpus_per_node, self.spines
        gpus = self.nodes * G
        count = _GPU_LINKS * gpus + 2 * self.groups * G * K
        shown = [*range(_GPU_LINKS), *range(_GPU_LINKS * (gpus - 1), _GPU_LINKS * gpus),
                 _GPU_LINKS * gpus, count - 1]
        head = [f"n0.{name}" for g in range(G) for name in (f"gpu{g}", f"nic{g}")]
        tail = [f"leaf{self.groups - 1}.rail{g}" for g in range(G)]
        if len(devices) != self.nodes * (1 + 2 * G) + K + self.groups * G \
                or len(links) != count or tuple(placement) != self.placement() \
                or [d.id for d in devices[:1 + 2 * G]] != ["n0.nvswitch", *head] \
                or [d.id for d in devices[-G:]] != tail \
                or any((links[i].src, links[i].dst) != self._ends(i) for i in shown):
            raise TopologyError(f"fabric = {self!r} is not allowed; the devices, links and "
                                "placement are not laid out as it lays them out "
                                "(topology.rail_fat_tree does)")

    def _ends(self, i: int) -> tuple[str, str]:
        """The ids of the ends of link ``i``."""
        G, K = self.gpus_per_node, self.spines
        gpus = self.nodes * G
        if i >= _GPU_LINKS * gpus:
            pair, up = divmod(i - _GPU_LINKS * gpus, 2)
            (j, g), k = divmod(pair // K, G), pair % K
            leaf, spine = f"leaf{j}.rail{g}", f"spine{k}"
            return (spine, leaf) if up else (leaf, spine)
        (n, g), kind = divmod(i // _GPU_LINKS, G), i % _GPU_LINKS
        gpu, other = f"n{n}.gpu{g}", (f"n{n}.nvswitch", f"n{n}.nic{g}")[min(kind // 2, 1)]
        if kind >= 4:
            gpu, other = f"n{n}.nic{g}", f"leaf{n // self.nodes_per_leaf}.rail{g}"
        return (other, gpu) if kind % 2 else (gpu, other)

    def _gpu(self, device: int) -> tuple[int, int]:
        """Node and local index of the GPU at device index ``device``."""
        node, at = divmod(device, 1 + 2 * self.gpus_per_node)
        if at % 2 == 0 or node >= self.nodes:
            raise ValueError(f"device {device} is not a GPU of this fat-tree")
        return node, (at - 1) // 2

    def route(self, s: int, d: int) -> tuple[int, ...]:
        """The links from GPU device ``s`` to GPU device ``d`` (device indices).

        Parameters
        ----------
        s, d : int
            Indices of two GPUs in :meth:`devices`.

        Returns
        -------
        tuple of int
            Link indices into :meth:`links`: none on one GPU, through the NVSwitch in a
            node, through the rail's leaf within a leaf group on one rail, else up to the
            spine the CRC of ``"<src id>><dst id>"`` picks (as the search's tie-break).

        Raises
        ------
        ValueError
            If ``s`` or ``d`` is not a GPU.
        """
        if s == d:
            return ()
        (na, ga), (nb, gb) = self._gpu(s), self._gpu(d)
        G = self.gpus_per_node
        a, b = _GPU_LINKS * (na * G + ga), _GPU_LINKS * (nb * G + gb)
        if na == nb:
            return a, b + 1
        ja, jb = na // self.nodes_per_leaf, nb // self.nodes_per_leaf
        if ja == jb and ga == gb:
            return a + 2, a + 4, b + 5, b + 3
        k = zlib.crc32(f"n{na}.gpu{ga}>n{nb}.gpu{gb}".encode()) % self.spines
        up = _GPU_LINKS * self.nodes * G + 2 * k
        return (a + 2, a + 4, up + 2 * self.spines * (ja * G + ga),
                up + 2 * self.spines * (jb * G + gb) + 1, b + 5, b + 3)

    def routes(self, s: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The routes of many pairs of GPUs (device indices, ``s[i]`` to ``d[i]``) at once,
        as :meth:`route` gives each, in the form :meth:`topology.Topology.routes` returns
        (every pair's number of links, and their links one pair after another); a
        ValueError if a device is not a GPU."""
        G = self.gpus_per_node
        (na, ga), (nb, gb) = self._gpus(np.asarray(s)), self._gpus(np.asarray(d))
        a, b = _GPU_LINKS * (na * G + ga), _GPU_LINKS * (nb * G + gb)
        ja, jb = na // self.nodes_per_leaf, nb // self.nodes_per_leaf
        length = np.select([a == b, na == nb, (ja == jb) & (ga == gb)], [0, 2, 4], 6)
        far = np.flatnonzero(length == 6)
        up = _GPU_LINKS * self.nodes * G + 2 * self._spines(na[far], ga[far], nb[far], gb[far])
        routes = np.full((len(length), 6), -1, dtype=np.int64)
        routes[length == 2, :2] = np.stack([a, b + 1], axis=1)[length == 2]
        routes[length == 4, :4] = np.stack([a + 2, a + 4, b + 5, b + 3], axis=1)[length == 4]
        routes[far] = np.stack([a[far] + 2, a[far] + 4,
                                up + 2 * self.spines * (ja[far] * G + ga[far]),
                                up + 2 * self.spines * (jb[far] * G + gb[far]) + 1,
                                b[far] + 5, b[far] + 3], axis=1)
        return length, routes[routes >= 0]

    def _gpus(self, devices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nodes and local indices of the GPUs at ``devices`` (as :meth:`_gpu`)."""
        node, at = np.divmod(devices, 1 + 2 * self.gpus_per_node)
        if ((at % 2 == 0) | (node >= self.nodes)).any():
            raise ValueError("devices are not all GPUs of this fat-tree")
        return node, (at - 1) // 2

    def _spines(self, na: np.ndarray, ga: np.ndarray, nb: np.ndarray,
                gb: np.ndarray) -> np.ndarray:
        """The spines :meth:`route` picks between GPUs ``(na, ga)`` and ``(nb, gb)``: the
        CRC of ``"<src id>><dst id>"``, the source's part computed once per GPU."""
        G = self.gpus_per_node
        heads = [zlib.crc32(f"n{n}.gpu{g}>".encode()) for n in range(self.nodes)
                 for g in range(G)]
        tails = [f"n{n}.gpu{g}".encode() for n in range(self.nodes) for g in range(G)]
        return np.fromiter(map(zlib.crc32, map(tails.__getitem__, (nb * G + gb).tolist()),
                               map(heads.__getitem__, (na * G + ga).tolist())),
                           dtype=np.int64, count=len(na)) % self.spines
