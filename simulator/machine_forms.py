"""Closed forms on a machine: channels, ``hier``, and every message's route.

:func:`simulator.cost` prices a uniform network (one alpha, one beta).  On a machine the
algorithm's messages take different routes, and channels or groups that run together
share links.  :func:`machine_cost` reads both from the topology:

* **Orders and groups.**  The candidate runs over the orders the simulated tables use
  (:func:`simulator.channel_choice.schedule_params`): ``C`` channels each carry
  ``ceil(count / C)`` elements over their own order.  ``hier`` is the sum of its phases
  (:mod:`collectives.algorithms.hier`), each a flat algorithm run by every node (intra)
  or by the ranks of every local rank (inter) side by side, ``C`` channels each.
* **Concurrent messages.**  An algorithm's messages are grouped into those that are in
  flight together: every hop of a ring or chain, every edge of both trees (each way),
  the exchanges of one mask of rhd, halving-doubling or recursive doubling (and its fold
  pairs).  The group's messages of every
  channel and every group of ranks load the links of their routes
  (:meth:`topology.Topology.route`); an ordered pair counts once per channel.
* **Pair figures.**  A message from ``u`` to ``v`` (positions in its order) pays its
  route's latency (less what the protocol's FIFO slots hide of it, by the message's
  bytes at the route's nominal bottleneck rate: :func:`simulator.gpu.hidden_latency`) and, per byte, the largest over the route's links of (messages on
  the link) / (link bandwidth): a link shared by ``k`` messages gives each ``1/k`` of it
  (NVLink ports of a GPU that several channels cross, a NIC two rings use).  Each
  position pair takes the largest figures over the channels and groups.
* **Forms.**  The forms of :mod:`simulator.cost` read these pair figures: rhd, the
  tree AllGather and the trees over nodes (``ranks_per_node`` as
  :func:`schedule_params` gives the tree on several nodes) message by message, the
  tree AllReduce and ReduceScatter over all ranks round by round (the slowest pair of
  each round), ring and pipeline with the largest latency and the largest seconds per
  byte of their hops.

**Latency.**  Without a GPU model (line rates) every step pays its slowest hop's latency,
as :func:`simulator.simulate` plays a send that completes when its data has arrived.
Under a GPU model NCCL pipelines a step's latency behind the data (tuning.cc charges
the network latency on ``2 nNodes`` of a ring's ``2(p-1)`` steps): ``pipelined=True``
(the default there) charges the latency of every hop along the longest path one piece
of data travels (ring and chain: ``p - 1`` or ``2(p - 1)`` consecutive hops; tree: up
from the deepest rank and back down), and per step only the bandwidth.  rhd is unchanged
(each exchange waits for the data of the one before).  Either way each hop's latency is
what the protocol's FIFO slots leave of it for the message it carries (a ring's block, a
segment), as the simulator charges it.

On :func:`topology.flat` every pair has the same figures and the forms are the exact
ones of :func:`simulator.cost` (channels over one order load every link ``C`` times).  On
a machine they are an estimate: max-min sharing gives a message more than its equal
share when another is held back elsewhere, rounds in which only fast links carry data
are charged as fast but a ring's or chain's steps all as its slowest hop, and channels
and phases do not start together.
"""

from __future__ import annotations

import functools
import importlib
from itertools import groupby
from reprlib import repr as brief
from typing import Any, Sequence

import numpy as np

from topology.checks import check_int
from topology.model import Topology

from collectives.build import ALGORITHMS, COMPOSED, algorithm_params
from collectives.schedule import COLLECTIVES

from .channel_choice import schedule_params
from .cost import _ceil_div, _rhd, _ring, _tree, _tree_edges
from .gpu import gpu_terms, hidden_latency

__all__ = ["PairHops", "machine_cost", "machine_costs"]

Pairs = tuple[tuple[int, int], ...]
Orders = tuple[tuple[int, ...], ...]


class _Flows:
    """Every order's route of every position pair, as arrays over flows and route links.

    Parameters
    ----------
    machine : topology.Topology
        The machine.
    orders : tuple of tuple of int
        Real rank of every position, one order per channel (and group of ranks).
    pairs : tuple of (int, int)
        Position pairs.
    """

    def __init__(self, machine: Any, orders: Orders, pairs: Pairs) -> None:
        q = len(orders[0])
        flow_key: list[int] = []
        flow_lat: list[float] = []
        flow_rate: list[float] = []
        entry_flow: list[int] = []
        entry_link: list[int] = []
        ids: dict[int, int] = {}
        for order in orders:
            for u, v in pairs:
                route = machine.route(order[u], order[v])
                entry_flow += [len(flow_key)] * len(route)
                entry_link += [ids.setdefault(i, len(ids)) for i in route]
                flow_key.append(u * q + v)
                flow_lat.append(sum((machine.links[i].latency_s for i in route), 0.0))
                flow_rate.append(min((machine.links[i].bandwidth_Bps for i in route),
                                     default=np.inf))
        self.q, self.slot_bytes = q, getattr(machine, "slot_bytes", None)
        self.key, self.latency_s = np.array(flow_key, dtype=np.int64), np.array(flow_lat)
        self.entry_flow = np.array(entry_flow, dtype=np.int64)
        self.entry_link = np.array(entry_link, dtype=np.int64)
        self.bandwidth = np.array([machine.links[i].bandwidth_Bps for i in ids])
        # every pair's slowest nominal route over the orders, for hidden_latency
        self.pair_key, index = np.unique(self.key, return_inverse=True)
        self.pair_rate = np.full(len(self.pair_key), np.inf)
        np.minimum.at(self.pair_rate, index, np.array(flow_rate))

    def hidden(self, keys: np.ndarray, latency_s: np.ndarray, nbytes: Any) -> np.ndarray:
        """``latency_s`` of messages of ``nbytes`` between the pairs ``keys``, less what the
        FIFO slots hide (:func:`simulator.gpu.hidden_latency`)."""
        if self.slot_bytes is None or not len(self.pair_key):
            return latency_s
        index = np.minimum(np.searchsorted(self.pair_key, keys), len(self.pair_key) - 1)
        return hidden_latency(latency_s, nbytes, self.pair_rate[index], self.slot_bytes)

    def figures(self, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keys ``u * q + v`` of the ``active`` pairs (sorted), and of each its largest
        latency and loaded seconds per byte over the orders, with those pairs in flight."""
        on = np.isin(self.key, active)
        entries = on[self.entry_flow]
        links = self.entry_link[entries]
        load = np.bincount(links, minlength=len(self.bandwidth))
        spb = np.zeros(len(self.key))
        np.maximum.at(spb, self.entry_flow[entries], load[links] / self.bandwidth[links])
        keys, index = np.unique(self.key[on], return_inverse=True)
        lat, per_byte = np.zeros(len(keys)), np.zeros(len(keys))
        np.maximum.at(lat, index, self.latency_s[on])
        np.maximum.at(per_byte, index, spb[on])
        return keys, lat, per_byte


class PairHops:
    """Latency and loaded seconds per byte of the ordered pairs of positions.

    Parameters
    ----------
    flows : _Flows
        The routes of every pair the algorithm uses, in every order.
    figures : tuple of numpy.ndarray
        Sorted keys ``u * q + v`` of the pairs, and their latency (s) and seconds per byte
        (:meth:`_Flows.figures`).
    latency : bool, optional
        False to price the bytes alone (latency 0: see ``pipelined``).
    """

    uniform = False

    def __init__(self, flows: _Flows, figures: tuple[np.ndarray, np.ndarray, np.ndarray],
                 latency: bool = True) -> None:
        self.flows, self.latency = flows, latency
        self.keys, self.latency_s, self.s_per_byte = figures
        self._during: dict[bytes, PairHops] = {}
        self._runs: dict[tuple[int, float, int], tuple[Any, list]] = {}
        self._bytes_only: PairHops | None = None

    def __repr__(self) -> str:
        return (f"PairHops({len(self.keys)} pairs of {self.flows.q} positions, latency <= "
                f"{self.latency_s.max(initial=0) * 1e6:.3g} us)")

    def pairs(self, src: np.ndarray, dst: np.ndarray,
              nbytes: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Latency (s) and seconds per byte of each message ``src[i] -> dst[i]`` (0 and 0
        for a pair the algorithm does not use); with ``nbytes`` (the messages' bytes),
        the latency the FIFO slots leave (:meth:`_Flows.hidden`)."""
        wanted = np.asarray(src) * self.flows.q + np.asarray(dst)
        index = np.minimum(np.searchsorted(self.keys, wanted), max(len(self.keys) - 1, 0))
        if not len(self.keys):
            return np.zeros(len(wanted)), np.zeros(len(wanted))
        known = self.keys[index] == wanted
        lat = np.where(known & self.latency, self.latency_s[index], 0.0)
        if nbytes is not None:
            lat = self.flows.hidden(wanted, lat, nbytes)
        return lat, np.where(known, self.s_per_byte[index], 0.0)

    def during(self, src: np.ndarray, dst: np.ndarray) -> PairHops:
        """The figures while only the messages ``src[i] -> dst[i]`` are in flight."""
        active = np.unique(np.asarray(src) * self.flows.q + np.asarray(dst))
        key = active.tobytes()
        if key not in self._during:
            self._during[key] = PairHops(self.flows, self.flows.figures(active), self.latency)
        return self._during[key]

    def run_figures(self, runs: Sequence[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
                    gamma: float, s: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The rounds of :func:`_lanes_rounds` as ``(rounds, latency, seconds per
        segment byte)`` of their distinct messages (the round's messages in flight, of
        ``s`` bytes a segment), rounds with the same messages' figures counted together."""
        key = (id(runs), gamma, s)
        if key not in self._runs:
            merged: dict[bytes, list] = {}
            for rounds, src, dst, units in runs:
                lat, spb = self.during(src, dst).pairs(src, dst, np.abs(units) * s)
                figures = np.unique(np.stack([lat, np.abs(units) * (spb + (units < 0) * gamma)]),
                                    axis=1)
                entry = merged.setdefault(figures.tobytes(), [0, figures])
                entry[0] += rounds
            self._runs[key] = (runs, [(n, f[0], f[1]) for n, f in merged.values()])
        return self._runs[key][1]

    def without_latency(self) -> PairHops:
        """The same figures with latency 0 (made once)."""
        if self._bytes_only is None:
            self._bytes_only = PairHops(self.flows, (self.keys, self.latency_s, self.s_per_byte),
                                        latency=False)
        return self._bytes_only

    def largest(self, pairs: Pairs, nbytes: int) -> tuple[float, float]:
        """The largest latency of messages of ``nbytes`` and the largest seconds per byte
        over ``pairs``."""
        if not pairs:
            return 0.0, 0.0
        src, dst = np.array(pairs).T
        lat, spb = self.pairs(src, dst, nbytes)
        return float(lat.max()), float(spb.max())


@functools.lru_cache(maxsize=256)
def _groups(collective: str, algorithm: str, q: int, size: int | None = None) -> tuple[Pairs, ...]:
    """The algorithm's ordered position pairs on ``q`` ranks, in groups in flight together
    (``size``: the tree's ranks per node, None for trees over all ranks)."""
    if q < 2:
        return ()
    if algorithm == "ring":
        return (tuple((v, (v + 1) % q) for v in range(q)),)
    if algorithm == "pipeline":
        return (tuple(p for v in range(q - 1) for p in ((v, v + 1), (v + 1, v))),)
    if algorithm == "tree":
        child, parent = _tree_edges(q, size)[:2]
        return (tuple(sorted({*zip(child.tolist(), parent.tolist()),
                              *zip(parent.tolist(), child.tolist())})),)
    core = 1 << (q.bit_length() - 1)
    first = [i - (-i * (q - core) // core) for i in range(core + 1)]  # rhd._Fold.first
    survivor = [first[i + 1] - 1 for i in range(core)]
    masks = [1 << k for k in range(core.bit_length() - 1)]
    fold = tuple(p for i in range(core) if first[i + 1] - first[i] == 2
                 for p in ((first[i], survivor[i]), (survivor[i], first[i])))
    return tuple(tuple((survivor[i], survivor[i ^ m]) for i in range(core))
                 for m in masks) + ((fold,) if fold else ())


@functools.lru_cache(maxsize=1024)
def _hops(machine: Any, orders: Orders, groups: tuple[Pairs, ...]) -> PairHops:
    """:class:`PairHops` of ``groups`` (each in flight on its own) over ``orders``."""
    flows = _Flows(machine, orders, tuple(sorted({p for group in groups for p in group})))
    parts = [flows.figures(np.array([u * flows.q + v for u, v in group], dtype=np.int64))
             for group in groups] or [(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))]
    keys, lat, spb = (np.concatenate(column) for column in zip(*parts))
    order = np.argsort(keys, kind="stable")
    return PairHops(flows, (keys[order], lat[order], spb[order]))


def _chain(latency: np.ndarray, hops: int) -> float:
    """Largest sum of ``hops`` consecutive entries of the cyclic sequence ``latency``."""
    if hops <= 0 or not len(latency):
        return 0.0
    laps, rest = divmod(hops, len(latency))
    cyclic = np.concatenate([[0.0], np.cumsum(np.concatenate([latency, latency]))])
    window = cyclic[rest:rest + len(latency)] - cyclic[:len(latency)]
    return float(laps * latency.sum() + window.max())


def _tree_path(q: int, hops: PairHops, size: int | None, nbytes: int) -> float:
    """Latency of segments of ``nbytes`` up from the deepest rank to the root and back
    down, the larger tree's (``size``: ranks per node of trees over nodes, or None)."""
    child, parent, depth = _tree_edges(q, size)[:3]
    lat_up, lat_down = (hops.pairs(child, parent, nbytes)[0],
                        hops.pairs(parent, child, nbytes)[0])
    tree = np.repeat([0, 1], len(child) // 2)
    worst = 0.0
    for t in (0, 1):
        up, down = np.zeros(q), np.zeros(q)
        for i in sorted(np.flatnonzero(tree == t), key=lambda e: depth[e]):
            up[child[i]] = up[parent[i]] + lat_up[i]
            down[child[i]] = down[parent[i]] + lat_down[i]
        worst = max(worst, float(up.max() + down.max()))
    return worst


@functools.lru_cache(maxsize=256)
def _lanes_rounds(collective: str, algorithm: str, q: int,
                  segments: int) -> tuple[tuple[int, np.ndarray, np.ndarray, np.ndarray], ...]:
    """The messages of ``algorithm``'s lanes, round by round, in runs of equal rounds.

    Returns ``(rounds, src, dst, units)`` per run: ``units`` is each message's size in
    segments, negative where the receiver reduces it.
    """
    from collectives.layout import block
    from collectives.schedule import new_recv

    module = importlib.import_module(f"collectives.algorithms.{algorithm}")
    count = 2 * segments * (1 if collective == "allreduce" else q)  # 2 elements a segment
    blocks = tuple(block(count, q, r) for r in range(q))
    rows = []
    for v in range(q):
        for lane in module.rank_lanes(collective, v, q, count, blocks, segments=segments):
            if lane.make is not new_recv:
                continue
            sign = -1 if lane.flags and lane.flags[0] else 1
            rows += [(lane.first_round + i, lane.peer, v, sign * (b - a) // 2)
                     for i, (a, b) in enumerate(zip(lane.starts, lane.stops)) if a is not None]
    rows.sort()
    runs: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
    for _, same in groupby(rows, key=lambda row: row[0]):
        src, dst, units = (np.array(c, dtype=np.int64) for c in zip(*[r[1:] for r in same]))
        if runs and all(np.array_equal(x, y) for x, y in zip(runs[-1][1:], (src, dst, units))):
            runs[-1] = (runs[-1][0] + 1, *runs[-1][1:])
        else:
            runs.append((1, src, dst, units))
    return tuple(runs)


def _rounds_cost(runs: Sequence[tuple[int, np.ndarray, np.ndarray, np.ndarray]], s: int,
                 g: float, hops: PairHops) -> float:
    """Sum over lock-step rounds of each round's slowest message (``s`` bytes a segment),
    the messages of a round in flight together."""
    return sum(rounds * float((lat + s * slope).max())
               for rounds, lat, slope in hops.run_figures(runs, g, s))


def _form(collective: str, algorithm: str, q: int, count: int, ds: int, hops: PairHops,
          gamma: float, params: dict[str, Any], pipelined: bool,
          piece: int | None = None) -> float:
    """One channel of ``algorithm`` on ``q`` positions priced by ``hops`` (``piece``: the
    channel's vector lies in the buffer in runs of at most so many bytes)."""
    if q < 2:
        return 0.0
    module = importlib.import_module(f"collectives.algorithms.{algorithm}")
    resolved = module.resolve_params(collective, q, count, **params)
    if algorithm == "rhd":
        return _rhd(collective, q, count, ds, 0.0, 0.0, gamma, hops, piece, **resolved)
    if algorithm == "tree":
        if not pipelined:
            return _tree(collective, q, count, ds, 0.0, 0.0, gamma, hops=hops, piece=piece,
                         **resolved)
        segment = _ceil_div(_ceil_div(count, 2), resolved["segments"]) * ds
        return _tree(collective, q, count, ds, 0.0, 0.0, gamma, hops=hops.without_latency(),
                     piece=piece, **resolved) + _tree_path(
                         q, hops, resolved.get("ranks_per_node"), segment)
    if algorithm == "pipeline":
        segments = resolved["segments"]
        parts = segments * (1 if collective == "allreduce" else q)
        s = _ceil_div(count, parts) * ds
        runs = _lanes_rounds(collective, algorithm, q, segments)
        if not pipelined:
            return _rounds_cost(runs, s, gamma, hops)
        return _rounds_cost(runs, s, gamma, hops.without_latency()) + _path(
            collective, algorithm, q, hops, s)
    (pairs,) = _groups(collective, algorithm, q)
    big = _ceil_div(count, q) * ds
    a, b = hops.largest(pairs, big)
    if not pipelined:
        return _ring(collective, q, count, ds, a, b, gamma)
    return _ring(collective, q, count, ds, 0.0, b, gamma) + _path(collective, algorithm, q, hops,
                                                                big)


def _path(collective: str, algorithm: str, q: int, hops: PairHops, nbytes: int) -> float:
    """Latency of messages of ``nbytes`` along the longest path of a ring or chain (see
    the module docstring)."""
    v = np.arange(q)
    if algorithm == "ring":
        steps = (q - 1) * (2 if collective == "allreduce" else 1)
        return _chain(hops.pairs(v, (v + 1) % q, nbytes)[0], steps)
    right = float(hops.pairs(v[:-1], v[1:], nbytes)[0].sum())
    left = float(hops.pairs(v[1:], v[:-1], nbytes)[0].sum())
    return right + left if collective == "allreduce" else max(right, left)


@functools.lru_cache(maxsize=256)
def _placed(algorithm: str, channels: int, topology: Any,
            nranks: int) -> tuple[Orders, dict[str, Any]]:
    """Every channel's order and the parameters the machine adds (the tree's
    ``ranks_per_node``), as :func:`schedule_params` gives the simulated tables."""
    added = schedule_params(algorithm, (("channels", channels),), topology, nranks)
    order = added.pop("order", None)
    added.pop("channels")
    return (tuple(range(nranks)),) * channels if order is None else tuple(order), added


def _flat_cost(collective: str, algorithm: str, machine: Any, nranks: int, count: int,
               ds: int, params: dict[str, Any], pipelined: bool) -> float:
    channels = params.get("channels", 1)
    orders, added = _placed(algorithm, channels, machine, nranks)
    own = {**{k: v for k, v in params.items() if k not in ("channels", "order")}, **added}
    size = own.get("ranks_per_node")
    hops = _hops(machine, orders, _groups(collective, algorithm, nranks,
                                          size if size and size > 1 else None))
    piece = _piece(collective, _ceil_div(count, nranks), channels, ds) if channels > 1 else None
    return _form(collective, algorithm, nranks, _ceil_div(count, channels), ds, hops,
                 float(machine.gamma_s_per_byte), own, pipelined, piece)


def _piece(collective: str, block: int, channels: int, ds: int) -> int | None:
    """Bytes of the runs a ReduceScatter channel's vector lies in, when its ranks' blocks
    of ``block`` elements are not side by side in the buffer or are cut into channels
    (:func:`collectives.compose.channel_parts`); None otherwise."""
    return _ceil_div(block, channels) * ds if collective == "reduce_scatter" else None


def _hier_cost(collective: str, machine: Any, nranks: int, count: int, ds: int,
               params: dict[str, Any], pipelined: bool) -> float:
    """Sum of the phases of :mod:`collectives.algorithms.hier`, each on its groups."""
    size = params["ranks_per_node"]
    channels = params.get("channels", 1)
    inner, intra = params.get("inner", "ring"), params.get("intra", "ring")
    nodes = nranks // size
    node = tuple(tuple(range(k * size, (k + 1) * size)) for k in range(nodes))
    rail = tuple(tuple(range(local, nranks, size)) for local in range(size))
    within = (intra, node, size, count)
    across = (inner, rail, nodes, _ceil_div(count, size))
    # a ReduceScatter's blocks are those of the ranks of one local rank: apart in the buffer
    block = _ceil_div(count, nranks if collective == "reduce_scatter" else size)
    cut = channels > 1 or collective == "reduce_scatter"
    phases = {"allreduce": [("reduce_scatter", within), ("allreduce", across),
                            ("allgather", within)],
              "reduce_scatter": [("reduce_scatter", within), ("reduce_scatter", across)],
              "allgather": [("allgather", across), ("allgather", within)]}[collective]
    total = 0.0
    for phase, (algorithm, groups, q, elements) in phases:
        orders = tuple(group for group in groups for _ in range(channels))
        hops = _hops(machine, orders, _groups(phase, algorithm, q))
        piece = _piece(phase, block, channels, ds) if cut else None
        total += _form(phase, algorithm, q, _ceil_div(elements, channels), ds, hops,
                       float(machine.gamma_s_per_byte), {}, pipelined, piece)
    return total


def _check(collective: str, algorithm: str, params: dict[str, Any]) -> None:
    if collective not in COLLECTIVES:
        raise ValueError(f"collective {brief(collective)} is not supported; choose one of "
                         f"{list(COLLECTIVES)}")
    if algorithm not in ALGORITHMS + COMPOSED:
        raise ValueError(f"algorithm {brief(algorithm)} is not supported; choose one of "
                         f"{list(ALGORITHMS + COMPOSED)}")
    taken = algorithm_params(algorithm)
    unknown = sorted(set(params) - set(taken))
    if unknown:
        raise TypeError(f"parameter {unknown[0]!r} is not taken by algorithm {brief(algorithm)}; "
                        f"it takes {sorted(taken)}")
    check_int(params.get("channels", 1), "channels", 1)


def machine_costs(collective: str, algorithm: str, topology: Topology, sizes: Sequence[int],
                  nranks: int | None = None, dtype_size: int = 4, protocol: str | None = None,
                  pipelined: bool | None = None, **params: Any) -> list[float]:
    """The closed-form time of ``algorithm`` on ``topology`` at each of ``sizes``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather"}
        The collective.
    algorithm : {"ring", "tree", "rhd", "pipeline", "hier"}
        The algorithm (``hier`` needs ``ranks_per_node``).
    topology : topology.Topology
        The machine.
    sizes : sequence of int
        Bytes of the working buffer; each is rounded down to whole elements.
    nranks : int, optional
        Ranks, from rank 0 (default all of the topology's).
    dtype_size : int, optional
        Bytes per element (default 4).
    protocol : str, optional
        A protocol of ``topology.gpu`` (its default when None); None without one.  The
        machine is taken under ``algorithm``'s figures of ``topology.gpu`` where it has
        some (:func:`simulator.gpu.gpu_terms`).
    pipelined : bool, optional
        Charge latency along the data's longest path (see the module docstring); default:
        whether ``topology`` has a GPU model.
    **params
        The algorithm's parameters, ``channels`` included (``order`` is taken from the
        machine, :func:`topology.channel_orders`).

    Returns
    -------
    list of float
        Seconds, the call's fixed cost of the GPU model included.

    Raises
    ------
    ValueError, TypeError
        As :func:`simulator.gpu.resolve_protocol` and the algorithm's ``resolve_params``.

    Examples
    --------
    >>> import topology
    >>> two = topology.dgx_h100(2, gpu_model=None)
    >>> one, eight = (machine_costs("allreduce", "ring", two, [1 << 30], channels=c)[0]
    ...               for c in (1, 8))
    >>> round(one / eight)  # eight rings, each on its own NIC
    8
    """
    _check(collective, algorithm, params)
    machine, call_s = gpu_terms(topology, protocol, algorithm, params.get("channels", 1))
    nranks = machine.nranks if nranks is None else nranks
    check_int(nranks, "nranks", 1, machine.nranks,
              note=f" (the ranks topology {machine.name!r} places)")
    if pipelined is None:
        pipelined = getattr(topology, "gpu", None) is not None
    params.pop("order", None)
    out = []
    for nbytes in sizes:
        count = nbytes // dtype_size
        if algorithm == "hier":
            seconds = _hier_cost(collective, machine, nranks, count, dtype_size, params, pipelined)
        else:
            seconds = _flat_cost(collective, algorithm, machine, nranks, count, dtype_size,
                                 params, pipelined)
        out.append(call_s + seconds)
    return out


def machine_cost(collective: str, algorithm: str, topology: Topology, nbytes: int,
                 nranks: int | None = None, dtype_size: int = 4, protocol: str | None = None,
                 pipelined: bool | None = None, **params: Any) -> float:
    """:func:`machine_costs` at one size (see there for the parameters).

    Examples
    --------
    >>> import topology
    >>> flat = topology.flat(4, alpha=1e-6, beta=1e-9)
    >>> round(machine_cost("allreduce", "ring", flat, 4096) * 1e6, 4)
    12.144
    """
    check_int(nbytes, "nbytes", 0)
    return machine_costs(collective, algorithm, topology, [nbytes], nranks, dtype_size,
                         protocol, pipelined, **params)[0]
