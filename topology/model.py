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

import math
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .errors import TopologyError
from .gpu import GpuModel

__all__ = ["Device", "Link", "Topology", "NON_TRANSIT_KINDS"]

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
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{key} = {value!r} is not allowed; it must be a number")
    if not (math.isfinite(value) and value > 0):
        raise TopologyError(f"{key} = {value!r} is not allowed; it must be finite and > 0")
    return float(value)


@dataclass(frozen=True)
class Topology:
    """Devices, directed links and the placement of ranks on devices.

    Parameters
    ----------
    name : str
        A label (the preset or the file it came from).
    devices : tuple of Device
        Unique ids.
    links : tuple of Link
        Each between two known devices; ``route`` returns indices into this tuple.
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
    links: tuple[Link, ...]
    placement: tuple[str, ...]
    gamma_s_per_byte: float = 0.0
    overhead_s_per_message: float = 0.0
    gpu: GpuModel | None = None

    def __post_init__(self) -> None:
        for field in ("devices", "links", "placement"):
            object.__setattr__(self, field, tuple(getattr(self, field)))
        if not isinstance(self.name, str):
            raise TypeError(f"name = {self.name!r} is not allowed; it must be a string")
        for field in ("gamma_s_per_byte", "overhead_s_per_message"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not (math.isfinite(value) and value >= 0):
                raise TopologyError(f"{field} = {value!r} is not allowed; "
                                    "it must be a finite number >= 0")
        index = self._check_devices()
        self._check_links(index)
        self._check_placement(index)
        self._check_gpu()
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_router", _Router(self, index))
        self._router.check_reachable()

    def __hash__(self) -> int:
        return hash((self.name, len(self.devices), len(self.links), self.placement))

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        # pickle the fields only; the route cache is rebuilt on the other side
        return Topology, (self.name, self.devices, self.links, self.placement,
                          self.gamma_s_per_byte, self.overhead_s_per_message, self.gpu)

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
                raise TypeError(f"devices[{i}] = {device!r} is not allowed; it must be a Device")
            if not device.id or not isinstance(device.id, str):
                raise TopologyError(f"devices[{i}].id = {device.id!r} is not allowed; "
                                    "it must be a non-empty string")
            if not device.kind or not isinstance(device.kind, str):
                raise TopologyError(f"devices[{i}].kind = {device.kind!r} is not allowed; "
                                    "it must be a non-empty string")
            if device.id in index:
                raise TopologyError(f"devices[{i}].id = {device.id!r} duplicates "
                                    f"devices[{index[device.id]}].id; ids must be unique")
            index[device.id] = i
        return index

    def _check_links(self, index: dict[str, int]) -> None:
        if all(type(link) is Link and link.src in index and link.dst in index
               and link.src != link.dst and type(link.latency_s) is float
               and type(link.bandwidth_Bps) is float
               and 0 < link.latency_s < math.inf and 0 < link.bandwidth_Bps < math.inf
               for link in self.links):
            return  # the common case, checked in one pass; otherwise find the culprit
        for i, link in enumerate(self.links):
            if not isinstance(link, Link):
                raise TypeError(f"links[{i}] = {link!r} is not allowed; it must be a Link")
            for end in ("src", "dst"):
                if getattr(link, end) not in index:
                    raise TopologyError(f"links[{i}].{end} = {getattr(link, end)!r} names no "
                                        "device; it must be the id of one of devices")
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
                raise TopologyError(f"placement[{rank}] = {device!r} names no device; it must "
                                    "be the id of one of devices")

    @property
    def nranks(self) -> int:
        """Number of ranks (the length of ``placement``)."""
        return len(self.placement)

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
        if isinstance(rank, bool) or not isinstance(rank, int) \
                or not 0 <= rank < len(self.placement):
            raise ValueError(f"{name}={rank!r} is not allowed; it must be an int in "
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
