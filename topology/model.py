"""The topology data model: devices, directed links, a rank placement, and routes.

A topology is a directed graph. Devices are endpoints (GPUs, CPUs, ranks) and the things
between them (NVSwitches, NICs, PCIe switches, InfiniBand leaves and spines); every
:class:`Link` carries data one way with a latency in seconds and a bandwidth in bytes per
second. ``placement[rank]`` is the id of the device the rank runs on.

Routing rules
-------------
* GPUs and devices that host a rank are endpoints: a route may start or end at them but never
  passes through them (as hosts in SimGrid platforms and ASTRA-sim networks; NCCL's PXN
  forwarding through a peer GPU is a choice of the algorithm, not of the fabric).
* A route is a shortest path: fewest hops, then lowest total latency.
* Among equal paths the choice is deterministic and depends on the endpoint pair (a CRC of the
  two device ids), the way ECMP hashes flows: different pairs spread over equal spines.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from reprlib import repr as brief
from typing import TYPE_CHECKING, Any, Protocol, overload

import numpy as np

from .checks import is_int, is_number
from .errors import TopologyError
from .gpu import GpuModel

__all__ = ["Device", "Link", "FullMesh", "Fabric", "Topology", "NON_TRANSIT_KINDS"]

#: device kinds that never forward traffic (besides every device that hosts a rank)
NON_TRANSIT_KINDS: frozenset[str] = frozenset({"gpu"})

#: two route latencies closer than this (relative) are equal, so that sums taken in a
#: different order still tie
_LATENCY_RTOL = 1e-9


@dataclass(frozen=True, slots=True)
class Device:
    """A node of the topology graph.

    Parameters
    ----------
    id : str
        Unique name, e.g. ``"n0.gpu3"``.
    kind : str
        What it is: ``"gpu"``, ``"cpu"``, ``"rank"``, ``"nvswitch"``, ``"nic"``,
        ``"pcie_switch"``, ``"ib_leaf"``, ``"ib_spine"``, ...
    """

    id: str
    kind: str


@dataclass(frozen=True, slots=True)
class Link:
    """One direction of a connection: ``src`` sends to ``dst``.

    Parameters
    ----------
    src, dst : str
        Device ids.
    latency_s : float
        Time for a byte to cross the link, in seconds (> 0).
    bandwidth_Bps : float
        Bytes per second in this direction (> 0).
    kind : str
        Technology, e.g. ``"nvlink"``, ``"pcie"``, ``"ib"``, ``"flat"``, ``"measured"``.
    """

    src: str
    dst: str
    latency_s: float
    bandwidth_Bps: float
    kind: str


def _positive(value: Any, key: str) -> float:
    if not is_number(value):
        raise TypeError(f"{key} = {brief(value)} is not allowed; it must be a number")
    if not (math.isfinite(value) and value > 0):
        raise TopologyError(f"{key} = {brief(value)} is not allowed; it must be finite and > 0")
    return float(value)


@dataclass(frozen=True)
class FullMesh(Sequence[Link]):
    """A link for every ordered pair of ``ids``, all alike, held as four fields.

    The ``n * (n - 1)`` links are independent (no two pairs share one) and are listed
    source by source: link ``i`` joins ``ids[a]`` to ``ids[b]`` for the ``i``-th pair
    ``(a, b)``, ``a != b``, in the order ``(0, 1), (0, 2), ..., (1, 0), (1, 2), ...``.
    Indexing builds that :class:`Link` on demand, so a topology of 1024 ranks holds
    1024 ids instead of a million links.  Two meshes are equal when their fields are; a
    mesh is not equal to a tuple that lists the same links (as ``range`` is not to a list).

    Parameters
    ----------
    ids : tuple of str
        The devices, each joined to every other in both directions; unique.
    latency_s : float
        Latency of every link, seconds (> 0).
    bandwidth_Bps : float
        Bandwidth of every link, bytes per second (> 0).
    kind : str
        Technology of every link (``"flat"`` for :func:`topology.flat`).

    Raises
    ------
    TopologyError
        For duplicate or empty ids, a latency or bandwidth that is not finite and > 0, or
        an empty kind.

    Examples
    --------
    >>> mesh = FullMesh(("a", "b", "c"), 1e-6, 1e9, "flat")
    >>> len(mesh), mesh.position(2, 0), mesh[4]
    (6, 4, Link(src='c', dst='a', latency_s=1e-06, bandwidth_Bps=1000000000.0, kind='flat'))
    """

    ids: tuple[str, ...]
    latency_s: float
    bandwidth_Bps: float
    kind: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", tuple(self.ids))
        if len(set(self.ids)) != len(self.ids) \
                or not all(isinstance(i, str) and i for i in self.ids):
            raise TopologyError(f"mesh ids {_brief_ids(self.ids)} are not allowed; they "
                                "must be unique non-empty strings")
        object.__setattr__(self, "latency_s", _positive(self.latency_s, "mesh latency_s"))
        object.__setattr__(self, "bandwidth_Bps",
                           _positive(self.bandwidth_Bps, "mesh bandwidth_Bps"))
        if not isinstance(self.kind, str) or not self.kind:
            raise TopologyError(f"mesh kind = {brief(self.kind)} is not allowed; it must be a "
                                "non-empty string")

    def __len__(self) -> int:
        n = len(self.ids)
        return n * (n - 1)

    @overload
    def __getitem__(self, i: int) -> Link: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Link, ...]: ...

    def __getitem__(self, i: int | slice) -> Link | tuple[Link, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        size = len(self)
        if not -size <= i < size:
            raise IndexError(f"link {i} is out of range: the mesh has {size} links")
        a, b = divmod(i % size, len(self.ids) - 1)
        return self._link(a, b + (b >= a))

    def __iter__(self) -> Iterator[Link]:
        n = len(self.ids)
        return (self._link(a, b) for a in range(n) for b in range(n) if a != b)

    def __repr__(self) -> str:
        return (f"FullMesh({_brief_ids(self.ids)}: {len(self)} {self.kind!r} links "
                f"({_span([self.latency_s], 1e6, 'us')}, "
                f"{_span([self.bandwidth_Bps], 1e-9, 'GB/s')}))")

    def _link(self, a: int, b: int) -> Link:
        return Link(self.ids[a], self.ids[b], self.latency_s, self.bandwidth_Bps, self.kind)

    def position(self, a: int, b: int) -> int:
        """Index of the link from ``ids[a]`` to ``ids[b]``.

        Parameters
        ----------
        a, b : int
            Positions in :attr:`ids`, different from each other.

        Returns
        -------
        int
            The link's index in the sequence.
        """
        return a * (len(self.ids) - 1) + b - (b > a)


def _brief_ids(ids: Sequence[str]) -> str:
    """``ids`` in a glance: ``64 ids ('r0', 'r1', ..., 'r63')``."""
    shown = ", ".join(map(repr, ids)) if len(ids) <= 4 else \
        f"{ids[0]!r}, {ids[1]!r}, ..., {ids[-1]!r}"
    return f"{len(ids)} ids ({shown})"


def _span(values: Sequence[float], scale: float, unit: str) -> str:
    """``"0.25 us"``, or ``"50-200 GB/s"`` when the values differ (``scale``: per unit)."""
    low, high = min(values) * scale, max(values) * scale
    return f"{low:.3g} {unit}" if low == high else f"{low:.3g}-{high:.3g} {unit}"


def _counts(kinds: Iterable[str]) -> str:
    """``"2 nvswitch, 16 gpu"``: how many of each kind, in order of first appearance."""
    return ", ".join(f"{n} {kind}" for kind, n in Counter(kinds).items())


def _link_kinds(links: Sequence[Link]) -> str:
    """Per link kind: how many, their latency and their bandwidth (ranges when they vary)."""
    if isinstance(links, FullMesh):
        groups = {links.kind: ([links.latency_s], [links.bandwidth_Bps], len(links))}
    else:
        found: dict[str, tuple[list[float], list[float]]] = {}
        for link in links:
            latency, bandwidth = found.setdefault(link.kind, ([], []))
            latency.append(link.latency_s)
            bandwidth.append(link.bandwidth_Bps)
        groups = {kind: (lat, bw, len(lat)) for kind, (lat, bw) in found.items()}
    return ", ".join(f"{n} {kind} ({_span(lat, 1e6, 'us')}, {_span(bw, 1e-9, 'GB/s')})"
                     for kind, (lat, bw, n) in groups.items())


class Fabric(Protocol):
    """A machine's routes in closed form (:class:`topology.fat_tree.RailFatTree`): the
    routes the search of :class:`Topology` finds, computed from the devices' indices."""

    def route(self, s: int, d: int) -> tuple[int, ...]:
        """Link indices from host device ``s`` to host device ``d`` (device indices)."""

    def check(self, devices: tuple[Device, ...], links: tuple[Link, ...],
              placement: tuple[str, ...]) -> None:
        """Raise TopologyError unless the topology is laid out as the fabric lays it."""


@dataclass(frozen=True)
class Topology:
    """Devices, directed links and the placement of ranks on devices.

    Parameters
    ----------
    name : str
        A label (the preset or the file it came from).
    devices : tuple of Device
        Unique ids.
    links : tuple of Link, or FullMesh
        Each between two known devices; ``route`` returns indices into this sequence.
        A :class:`FullMesh` (as :func:`topology.flat` makes) holds a link for every
        ordered pair of its devices without building them.
    placement : tuple of str
        ``placement[rank]`` is the device id the rank runs on.
    gamma_s_per_byte : float
        Cost of reducing one byte of the incoming vector into the local one (0: free).
    overhead_s_per_message : float
        CPU time a rank spends on each message it sends or receives (LogGP's ``o``),
        serialised on that rank (0, the default: free; every preset leaves it at 0).
    gpu : GpuModel or None
        The GPU terms (:mod:`topology.gpu`: cost per call, protocols, achievable rates,
        latencies by link kind, reduction throughput), or None (the default: links as
        they are; ``flat`` and host models).  It must have figures for every link kind.
    slot_bytes : float or None
        Data bytes of one slot of the transport's FIFO (> 0): a message longer than a
        slot hides part of its route's latency behind its data
        (:func:`simulator.gpu.hidden_latency`); the effective topology of a GPU model
        carries its protocol's :attr:`~topology.Protocol.slot_bytes` here.  None (the
        default): every message pays its route's full latency.
    out_of_step : tuple of (str, float)
        ``(link kind, shares)``: a message on a route through a link of that kind stands
        for ``shares`` (>= 1) messages side by side of channels that cross it out of step
        with one another (:attr:`topology.LinkFigures.in_step`), so it hides its latency
        behind all but one share (:func:`simulator.gpu.hidden_latency`; the effective
        topology of a GPU model carries them here).  Default none.
    fabric : Fabric or None
        The routes in closed form, from the preset that laid the devices and links out
        (:class:`topology.fat_tree.RailFatTree`); the preset vouches that they are the
        search's routes and that every rank reaches every other, so neither is searched.
        None (the default): routes are searched (and cached per pair).

    Raises
    ------
    TopologyError
        Naming the key and value: duplicate device ids, links to unknown devices, links from a
        device to itself, latencies or bandwidths that are not finite and > 0, placements on
        unknown devices, or ranks that cannot reach each other.

    Examples
    --------
    >>> t = Topology("pair", (Device("a", "gpu"), Device("b", "gpu")),
    ...              (Link("a", "b", 1e-6, 1e9, "pcie"), Link("b", "a", 1e-6, 1e9, "pcie")),
    ...              ("a", "b"))
    >>> t.route(0, 1), t.alpha(0, 1), t.beta(0, 1)
    ((0,), 1e-06, 1e-09)
    """

    name: str
    devices: tuple[Device, ...]
    links: tuple[Link, ...] | FullMesh
    placement: tuple[str, ...]
    gamma_s_per_byte: float = 0.0
    overhead_s_per_message: float = 0.0
    gpu: GpuModel | None = None
    slot_bytes: float | None = None
    fabric: Fabric | None = field(default=None, compare=False)
    out_of_step: tuple[tuple[str, float], ...] = ()
    if TYPE_CHECKING:  # set by __post_init__, not fields
        _index: dict[str, int] = field(init=False)
        _router: _Router | _MeshRouter | _FabricRouter = field(init=False)

    def __post_init__(self) -> None:
        for name in ("devices", "links", "placement"):
            if not isinstance(getattr(self, name), FullMesh):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if not isinstance(self.name, str):
            raise TypeError(f"name = {brief(self.name)} is not allowed; it must be a string")
        for name in ("gamma_s_per_byte", "overhead_s_per_message"):
            value = getattr(self, name)
            if not (is_number(value) and math.isfinite(value) and value >= 0):
                raise TopologyError(f"{name} = {brief(value)} is not allowed; "
                                    "it must be a finite number >= 0")
        slot = self.slot_bytes
        if slot is not None and not (is_number(slot) and math.isfinite(slot) and slot > 0):
            raise TopologyError(f"slot_bytes = {brief(slot)} is not allowed; it must be None "
                                "or a finite number > 0")
        object.__setattr__(self, "out_of_step", tuple(tuple(p) for p in self.out_of_step))
        for pair in self.out_of_step:
            if not (len(pair) == 2 and isinstance(pair[0], str) and is_number(pair[1])
                    and math.isfinite(pair[1]) and pair[1] >= 1):
                raise TopologyError(f"out_of_step = {brief(self.out_of_step)} is not allowed; "
                                    "it must be (link kind, shares >= 1) pairs")
        index = self._check_devices()
        self._check_links(index)
        self._check_placement(index)
        self._check_gpu()
        object.__setattr__(self, "_index", index)
        if self.fabric is not None:
            if not all(callable(getattr(self.fabric, m, None)) for m in ("route", "check")):
                raise TypeError(f"fabric = {type(self.fabric).__name__} is not allowed; it "
                                "must have route(s, d) and check(devices, links, placement) "
                                "methods, or be None")
            if isinstance(self.links, FullMesh):
                raise TopologyError("fabric is not allowed with a FullMesh of links")
            self.fabric.check(self.devices, self.links, self.placement)
        router = _MeshRouter if isinstance(self.links, FullMesh) else \
            _Router if self.fabric is None else _FabricRouter
        object.__setattr__(self, "_router", router(self, index))
        self._router.check_reachable()
        # hashed once: caches keyed by a machine of 16,384 ranks look it up often
        object.__setattr__(self, "_hash", hash((self.name, len(self.devices), len(self.links),
                                                 self.placement)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]  # set once in __post_init__

    def __repr__(self) -> str:
        hosts = (self.devices[self._index[d]].kind for d in dict.fromkeys(self.placement))
        extras = "".join(f", {label}={value:.3g}" for label, value in (
            ("gamma_s_per_byte", self.gamma_s_per_byte),
            ("overhead_s_per_message", self.overhead_s_per_message),
            ("slot_bytes", self.slot_bytes)) if value)
        return (f"Topology({self.name!r}: {self.nranks} ranks on {_counts(hosts)}; "
                f"{len(self.devices)} devices: {_counts(d.kind for d in self.devices)}; "
                f"{len(self.links)} links: {_link_kinds(self.links)}{extras})")

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        # pickle the fields only; the route cache is rebuilt on the other side
        return Topology, (self.name, self.devices, self.links, self.placement,
                          self.gamma_s_per_byte, self.overhead_s_per_message, self.gpu,
                          self.slot_bytes, self.fabric, self.out_of_step)

    def _check_gpu(self) -> None:
        if self.gpu is None:
            return
        if not isinstance(self.gpu, GpuModel):
            raise TypeError(f"gpu = {type(self.gpu).__name__} is not allowed; it must be a "
                            "topology.GpuModel or None")
        for kind in dict.fromkeys(link.kind for link in self.links):
            self.gpu.figures(kind)

    def _check_devices(self) -> dict[str, int]:
        index: dict[str, int] = {}
        for i, device in enumerate(self.devices):
            if not isinstance(device, Device):
                raise TypeError(f"devices[{i}] = {brief(device)} is not allowed; it must be a "
                                "Device")
            if not device.id or not isinstance(device.id, str):
                raise TopologyError(f"devices[{i}].id = {brief(device.id)} is not allowed; "
                                    "it must be a non-empty string")
            if not device.kind or not isinstance(device.kind, str):
                raise TopologyError(f"devices[{i}].kind = {brief(device.kind)} is not allowed; "
                                    "it must be a non-empty string")
            if device.id in index:
                raise TopologyError(f"devices[{i}].id = {brief(device.id)} duplicates "
                                    f"devices[{index[device.id]}].id; ids must be unique")
            index[device.id] = i
        return index

    def _check_links(self, index: dict[str, int]) -> None:
        if isinstance(self.links, FullMesh):
            for i, device in enumerate(self.links.ids):
                if device not in index:
                    raise TopologyError(f"links.ids[{i}] = {device!r} names no device; it must "
                                        "be the id of one of devices")
            return
        if all(type(link) is Link and link.src in index and link.dst in index
               and link.src != link.dst and type(link.latency_s) is float
               and type(link.bandwidth_Bps) is float
               and 0 < link.latency_s < math.inf and 0 < link.bandwidth_Bps < math.inf
               for link in self.links):
            return  # the common case, checked in one pass; otherwise find the culprit
        for i, link in enumerate(self.links):
            if not isinstance(link, Link):
                raise TypeError(f"links[{i}] = {brief(link)} is not allowed; it must be a Link")
            for end in ("src", "dst"):
                if getattr(link, end) not in index:
                    raise TopologyError(f"links[{i}].{end} = {brief(getattr(link, end))} names "
                                        "no device; it must be the id of one of devices")
            if link.src == link.dst:
                raise TopologyError(f"links[{i}].dst = {link.dst!r} is its src; a link must "
                                    "join two different devices")
            _positive(link.latency_s, f"links[{i}].latency_s")
            _positive(link.bandwidth_Bps, f"links[{i}].bandwidth_Bps")

    def _check_placement(self, index: dict[str, int]) -> None:
        if not self.placement:
            raise TopologyError("placement = () is not allowed; it must place at least one rank")
        for rank, device in enumerate(self.placement):
            if device not in index:
                raise TopologyError(f"placement[{rank}] = {brief(device)} names no device; it "
                                    "must be the id of one of devices")

    @property
    def nranks(self) -> int:
        """Number of ranks (the length of ``placement``)."""
        return len(self.placement)

    @property
    def bandwidths_Bps(self) -> tuple[float, ...]:
        """Each link's bandwidth in bytes per second, indexed like ``links``."""
        if isinstance(self.links, FullMesh):
            return (self.links.bandwidth_Bps,) * len(self.links)
        return tuple(link.bandwidth_Bps for link in self.links)

    def device(self, rank: int) -> Device:
        """Return the device rank ``rank`` runs on.

        Parameters
        ----------
        rank : int
            A rank in ``[0, nranks)``.

        Returns
        -------
        Device
            The device ``placement[rank]`` names.

        Raises
        ------
        ValueError
            If ``rank`` is not an int in ``[0, nranks)``.
        """
        return self.devices[self._index[self.placement[self._rank(rank, "rank")]]]

    def _rank(self, rank: int, name: str) -> int:
        if not (is_int(rank) and 0 <= rank < len(self.placement)):
            raise ValueError(f"{name}={brief(rank)} is not allowed; it must be an int in "
                             f"[0, {len(self.placement)})")
        return rank

    def route(self, a: int, b: int) -> tuple[int, ...]:
        """Return the indices into ``links`` of the route from rank ``a`` to rank ``b``.

        Empty when both ranks run on the same device. Cached per pair of devices.

        Parameters
        ----------
        a : int
            Source rank.
        b : int
            Destination rank.

        Returns
        -------
        tuple of int
            Link indices, in order from ``a``'s device to ``b``'s.

        Raises
        ------
        ValueError
            If ``a`` or ``b`` is not an int in ``[0, nranks)`` (as do :meth:`alpha`,
            :meth:`beta`, :meth:`hops`, :meth:`costs` and :meth:`device`).
        """
        src = self.placement[self._rank(a, "a")]
        dst = self.placement[self._rank(b, "b")]
        return self._router.route(self._index[src], self._index[dst])

    def routes(self, a: Sequence[int], b: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The routes of many pairs of ranks, ``a[i]`` to ``b[i]``, as :meth:`route` gives
        each: at once where the fabric has them in closed form (its ``routes``, as
        :meth:`topology.fat_tree.RailFatTree.routes`), else pair by pair.

        Parameters
        ----------
        a, b : sequence of int
            Source and destination ranks, pair by pair.

        Returns
        -------
        tuple of numpy.ndarray
            Every pair's number of links, and their links one pair after another.

        Raises
        ------
        ValueError
            If a rank is not an int in ``[0, nranks)``.
        """
        src, dst = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        many = getattr(self.fabric, "routes", None)
        if many is None or not len(src):
            found = [self.route(x, y) for x, y in zip(src.tolist(), dst.tolist())]
            return (np.fromiter(map(len, found), dtype=np.int64, count=len(found)),
                    np.fromiter(itertools.chain.from_iterable(found), dtype=np.int64))
        for name, ranks in (("a", src), ("b", dst)):
            bad = ranks[(ranks < 0) | (ranks >= len(self.placement))]
            if len(bad):
                raise ValueError(f"{name} holds rank {int(bad[0])}; ranks must be in "
                                 f"[0, {len(self.placement)})")
        devices = np.fromiter((self._index[d] for d in self.placement), dtype=np.int64,
                              count=len(self.placement))
        return many(devices[src], devices[dst])

    def alpha(self, a: int, b: int) -> float:
        """Latency from rank ``a`` to rank ``b``: the sum of the route's link latencies, s.

        Parameters
        ----------
        a : int
            Source rank.
        b : int
            Destination rank.

        Returns
        -------
        float
            Seconds; 0 on the same device.
        """
        return sum((self.links[i].latency_s for i in self.route(a, b)), 0.0)

    def beta(self, a: int, b: int) -> float:
        """Seconds per byte from ``a`` to ``b``: 1 / the route's bottleneck bandwidth.

        Parameters
        ----------
        a : int
            Source rank.
        b : int
            Destination rank.

        Returns
        -------
        float
            Seconds per byte; 0 on the same device.
        """
        route = self.route(a, b)
        return 1.0 / min(self.links[i].bandwidth_Bps for i in route) if route else 0.0

    def costs(self, a: int, reverse: bool = False) -> tuple[tuple[int, float], ...]:
        """Return ``(hops, alpha)`` from rank ``a`` to every rank, in one search.

        Cheaper than one :meth:`route` per pair when only distances are needed (e.g. to
        order ranks). Unreachable pairs cannot occur (the constructor checks).

        Parameters
        ----------
        a : int
            The rank searched from (or to, with ``reverse``).
        reverse : bool, optional
            If True, from every rank to rank ``a``; default False.

        Returns
        -------
        tuple of (int, float)
            Per rank: links on the route and its latency in seconds.
        """
        found = self._router.costs(self._index[self.placement[self._rank(a, "a")]], reverse)
        return tuple(found[self._index[device]] for device in self.placement)

    def hops(self, a: int, b: int) -> int:
        """Number of links on the route from rank ``a`` to rank ``b``.

        Parameters
        ----------
        a : int
            Source rank.
        b : int
            Destination rank.

        Returns
        -------
        int
            0 on the same device.
        """
        return len(self.route(a, b))


class _Router:
    """Shortest paths (fewest hops, then lowest latency) over a topology, cached by pair.

    A route is found by a bidirectional breadth-first search (hop counts from the source and
    to the destination, grown from whichever side has the smaller frontier until they meet),
    then the lowest-latency paths through the layers of shortest paths, keeping ties. On a
    fat-tree both searches stop below the spines, so a query visits tens of devices, not all.
    """

    def __init__(self, topology: Topology, index: dict[str, int]) -> None:
        self.ids = [d.id for d in topology.devices]
        self.placement = topology.placement
        hosts = set(topology.placement)
        self.transit = [d.kind not in NON_TRANSIT_KINDS and d.id not in hosts
                        for d in topology.devices]
        self.latency = [link.latency_s for link in topology.links]
        # out[u] = {v: [link indices u -> v]} in link order
        self.out: list[dict[int, list[int]]] = [{} for _ in topology.devices]
        for i, link in enumerate(topology.links):
            into = self.out[index[link.src]]
            v = index[link.dst]
            if v in into:
                into[v].append(i)
            else:
                into[v] = [i]
        self.hosts = sorted(index[h] for h in hosts)
        self._into: list[dict[int, list[int]]] | None = None
        self.route = lru_cache(maxsize=None)(self._route)

    @property
    def into(self) -> list[dict[int, list[int]]]:
        """``into[v] = {u: [link indices u -> v]}``, built on first use."""
        if self._into is None:
            self._into = [{} for _ in self.out]
            for u, targets in enumerate(self.out):
                for v, links in targets.items():
                    self._into[v][u] = links
        return self._into

    def _route(self, s: int, d: int) -> tuple[int, ...]:
        if s == d:
            return ()
        direct = self.out[s].get(d)
        preds = self._direct(s, d, direct) if direct else self._search(s, d)
        choice = zlib.crc32(f"{self.ids[s]}>{self.ids[d]}".encode())
        path: list[int] = []
        v = d
        while v != s:
            options = sorted(preds[v])
            link, v = options[choice % len(options)]
            choice //= len(options)
            path.append(link)
        return tuple(reversed(path))

    def _direct(self, s: int, d: int, links: list[int]) -> dict[int, list[tuple[int, int]]]:
        """A one-hop route: the links straight from ``s`` to ``d`` of lowest latency."""
        best: dict[int, float] = {}
        preds: dict[int, list[tuple[int, int]]] = {}
        for link in links:
            self._relax(best, preds, d, link, s, self.latency[link])
        return preds

    def costs(self, s: int, reverse: bool) -> dict[int, tuple[int, float]]:
        """``(hops, latency)`` of the shortest route from ``s`` to every device it reaches
        (to ``s`` from every device that reaches it, with ``reverse``)."""
        adjacency = self.into if reverse else self.out
        found = {s: (0, 0.0)}
        frontier = [s]
        hops = 0
        while frontier:
            hops += 1
            level: dict[int, float] = {}
            for u in frontier:
                if u != s and not self.transit[u]:
                    continue
                for v, links in adjacency[u].items():
                    if v not in found:
                        best = found[u][1] + min(self.latency[link] for link in links)
                        level[v] = min(best, level.get(v, best))
            found.update((v, (hops, latency)) for v, latency in level.items())
            frontier = list(level)
        return found

    def _grow(self, frontier: list[int], hops: dict[int, int],
              adjacency: list[dict[int, list[int]]], origin: int) -> list[int]:
        """One breadth-first level; only the origin and transit devices are passed through."""
        level = []
        for u in frontier:
            if u != origin and not self.transit[u]:
                continue
            for v in adjacency[u]:
                if v not in hops:
                    hops[v] = hops[u] + 1
                    level.append(v)
        return level

    def _search(self, s: int, d: int) -> dict[int, list[tuple[int, int]]]:
        """Equal-latency predecessors of each device on the shortest routes from s to d."""
        ahead, behind = {s: 0}, {d: 0}  # hops from s; hops to d
        forward, backward = [s], [d]
        while forward and backward:
            if len(forward) <= len(backward):
                forward = self._grow(forward, ahead, self.out, s)
                new, other = forward, behind
            else:
                backward = self._grow(backward, behind, self.into, d)
                new, other = backward, ahead
            meets = [v for v in new if v in other and (self.transit[v] or v in (s, d))]
            if meets:
                hops = min(ahead[v] + behind[v] for v in meets)
                meets = [v for v in meets if ahead[v] + behind[v] == hops]
                return self._fastest(s, self._layers(s, d, meets, ahead, behind))
        raise TopologyError(f"device {self.ids[s]!r} cannot reach device {self.ids[d]!r}")

    def _layers(self, s: int, d: int, meets: list[int], ahead: dict[int, int],
                behind: dict[int, int]) -> list[list[int]]:
        """The devices on shortest routes, by position along the route (0: s, last: d)."""
        before, after = [meets], [[v for v in meets if v == s or self.transit[v]]]
        for _ in range(ahead[meets[0]]):  # back towards s through the forward search
            before.append(sorted({u for v in before[-1] for u in self.into[v]
                                  if ahead.get(u) == ahead[v] - 1
                                  and (u == s or self.transit[u])}))
        for _ in range(behind[meets[0]]):  # on towards d through the backward search
            after.append(sorted({w for v in after[-1] for w in self.out[v]
                                 if behind.get(w) == behind[v] - 1
                                 and (w == d or self.transit[w])}))
        return before[::-1] + after[1:]

    def _fastest(self, s: int, layers: list[list[int]]) -> dict[int, list[tuple[int, int]]]:
        """Lowest latency through consecutive layers, keeping every tied predecessor."""
        best = {s: 0.0}
        preds: dict[int, list[tuple[int, int]]] = {}
        for here, there in zip(layers, layers[1:]):
            targets = set(there)
            for u in here:
                for v, links in self.out[u].items():
                    if v in targets:
                        for link in links:
                            self._relax(best, preds, v, link, u, best[u] + self.latency[link])
        return preds

    @staticmethod
    def _relax(best: dict[int, float], preds: dict[int, list[tuple[int, int]]], v: int,
               link: int, u: int, candidate: float) -> None:
        known = best.get(v)
        if known is None or candidate < known * (1 - _LATENCY_RTOL):
            best[v] = candidate
            preds[v] = [(link, u)]
        elif candidate <= known * (1 + _LATENCY_RTOL):
            preds[v].append((link, u))

    def check_reachable(self) -> None:
        """Raise TopologyError unless every rank's device reaches every other's."""
        from ._reach import unreachable_pair

        pair = unreachable_pair(self.out, self.transit, self.hosts)
        if pair is not None:
            a, b = (self.ids[x] for x in pair)
            raise TopologyError(f"placement[{self.placement.index(a)}] = {a!r} cannot reach "
                                f"placement[{self.placement.index(b)}] = {b!r}; every rank "
                                "must reach every other")


class _FabricRouter:
    """Routes from a :class:`Fabric` (cached per pair, as the search's); distances
    (:meth:`Topology.costs`) from a search, built on first use."""

    def __init__(self, topology: Topology, index: dict[str, int]) -> None:
        assert topology.fabric is not None
        self.route = lru_cache(maxsize=1 << 20)(topology.fabric.route)
        self._topology, self._index = topology, index
        self._search: _Router | None = None

    def costs(self, s: int, reverse: bool) -> dict[int, tuple[int, float]]:
        """As :meth:`_Router.costs`."""
        if self._search is None:
            self._search = _Router(self._topology, self._index)
        return self._search.costs(s, reverse)

    def check_reachable(self) -> None:
        """Nothing to check: the fabric's preset joins every rank to every other."""


class _MeshRouter:
    """Routes over a :class:`FullMesh`: the one direct link between any two of its devices
    (the route :class:`_Router` would find, without listing a million links)."""

    def __init__(self, topology: Topology, index: dict[str, int]) -> None:
        mesh = topology.links
        assert isinstance(mesh, FullMesh)
        self.mesh = mesh
        self.ids = [d.id for d in topology.devices]
        self.placement = topology.placement
        self.at = {index[device]: a for a, device in enumerate(mesh.ids)}  # device -> position
        self.hosts = sorted({index[h] for h in topology.placement})

    def route(self, s: int, d: int) -> tuple[int, ...]:
        """The link from device ``s`` to device ``d`` (none when they are the same)."""
        if s == d:
            return ()
        if s not in self.at or d not in self.at:
            raise TopologyError(f"device {self.ids[s]!r} cannot reach device {self.ids[d]!r}")
        return (self.mesh.position(self.at[s], self.at[d]),)

    def costs(self, s: int, reverse: bool) -> dict[int, tuple[int, float]]:
        """``(hops, latency)`` from ``s`` to every device it reaches (the same both ways)."""
        found = {s: (0, 0.0)}
        if s in self.at:
            one_hop = (1, self.mesh.latency_s)
            found.update((v, one_hop) for v in self.at if v != s)
        return found

    def check_reachable(self) -> None:
        """Raise TopologyError unless every rank's device reaches every other's."""
        outside = [h for h in self.hosts if h not in self.at]
        if len(self.hosts) < 2 or not outside:
            return
        a = self.hosts[0]
        b = self.hosts[1] if a == outside[0] else outside[0]
        a_id, b_id = self.ids[a], self.ids[b]
        raise TopologyError(f"placement[{self.placement.index(a_id)}] = {a_id!r} cannot reach "
                            f"placement[{self.placement.index(b_id)}] = {b_id!r}; every rank "
                            "must reach every other")
