"""The GPU terms of a topology, as the simulator and the closed forms read them.

A topology with a :class:`topology.GpuModel` (``topology.gpu``) is played, for a given
protocol and algorithm, on its *effective* topology: the same devices and routes, every
link's bandwidth its line rate times the kind's achievable fraction times the protocol's
fraction (on that kind), every link's latency the kind's per-link latency under the
protocol, and the reduction cost one over the GPU's reduction throughput.  The fixed cost
of the call (launch and protocol setup) delays every rank's start.  An algorithm with
figures of its own in the model (:class:`topology.AlgorithmFigures`, e.g. the tree's in
the DGX presets) is played with those in place of the model's
(:meth:`topology.GpuModel.link_terms`, :meth:`~topology.GpuModel.call_s`); the
simulator learns the algorithm from the schedule (:attr:`collectives.Schedule.algorithm`),
the closed forms from their ``algorithm`` argument.  Such figures are tuning.cc's before
its cap on LL, so under LL every link of such an algorithm carries what that cap leaves
in NCCL's own model (``llMaxBws``, by GPU on one node and by host CPU across nodes:
:func:`simulator.nccl_tuner.ll_share`; the tree's LL across two A100 nodes 0.39 of it).

Every message pays its route's latency on top of its bytes over the route's rate, less
what the transport's FIFO hides (:func:`hidden_latency`; the effective topology's
``slot_bytes``: the protocol's :attr:`topology.Protocol.slot_bytes` times the NCCL
channels, :attr:`topology.GpuModel.channels`, that each simulated channel stands for,
whose slots move side by side).  On a route through a link whose kind NCCL's channels
cross out of step (:attr:`topology.LinkFigures.in_step` False; the effective topology's
``out_of_step``, :func:`route_shares`), the latency hides behind all but one of those
channels' shares of the message.

A link at a NIC whose kind has a flow rate (:attr:`topology.LinkFigures.flow_Bps`)
carries at most its flows times that rate (:func:`nic_flows`: NCCL's channels on the NIC,
each a connection, times the queue pairs of a connection).  The channels and queue pairs
are settings of the run, not figures of the machine: :func:`with_settings` reads them
from NCCL's environment variables (:data:`SETTINGS`).

Both engines and the closed forms read the same effective topology and add the same
call cost, so they agree with the GPU terms on exactly as they do without them; a
topology without a GPU model (``flat``, host models, files without ``[gpu]``) is played
as it is.
"""

from __future__ import annotations

import dataclasses
import functools
from operator import attrgetter
from typing import Any, Mapping

import numpy as np

from collectives.registry import names
from topology import GpuModel, Link, Topology
from topology.channels import nics_per_node
from topology.errors import TopologyError
from topology.order import node_groups

from .nccl_tuner import ALGORITHMS, ll_share, tuner_kind

__all__ = ["SETTINGS", "protocols", "resolve_protocol", "gpu_terms", "link_figures",
           "hidden_latency", "route_shares", "link_shares", "nic_flows", "with_settings",
           "line_figures", "link_kinds", "flow_caps"]

#: NCCL's environment variables the model prices -> (the GpuModel field, bounds, how:
#: a lower or upper bound of the channels, or the value).
#: NCCL docs (user-guide/docs/env.html): NCCL_MIN_CTAS / NCCL_MAX_CTAS (since 2.17; the
#: older NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS) bound the CTAs of a kernel, one CTA per
#: channel, up to MAXCHANNELS (64, src/include/device.h); NCCL_IB_QPS_PER_CONNECTION
#: (default 1, at most NCCL_IB_MAX_QPS 128, src/transport/net_ib) opens that many queue
#: pairs per connection, "useful on multi-level fabrics which need multiple queue pairs to
#: have good routing entropy"; with NCCL_IB_SPLIT_DATA_ON_QPS=0 (the default in
#: src/transport/net_ib) messages go to them in turn, with 1 each is split over all of
#: them, so either way every queue pair carries its share of a connection's data
SETTINGS: dict[str, tuple[str, int, int, str]] = {
    "NCCL_MIN_CTAS": ("channels", 1, 64, "min"),
    "NCCL_MIN_NCHANNELS": ("channels", 1, 64, "min"),
    "NCCL_MAX_CTAS": ("channels", 1, 64, "max"),
    "NCCL_MAX_NCHANNELS": ("channels", 1, 64, "max"),
    "NCCL_IB_QPS_PER_CONNECTION": ("qps_per_connection", 1, 128, "set"),
}


def protocols(topology: Topology) -> tuple[str | None, ...]:
    """The protocols a call on ``topology`` may use.

    Parameters
    ----------
    topology : topology.Topology
        The machine.

    Returns
    -------
    tuple of (str or None)
        The GPU model's protocol names, or ``(None,)`` without a GPU model.

    Examples
    --------
    >>> import topology
    >>> protocols(topology.dgx_h100()), protocols(topology.flat(2, 1e-6, 1e-9))
    (('LL', 'LL128', 'Simple'), (None,))
    """
    model = getattr(topology, "gpu", None)
    return (None,) if model is None else model.protocol_names


def resolve_protocol(topology: Topology, protocol: str | None) -> str | None:
    """``protocol``, or the model's default when None; None without a GPU model.

    Parameters
    ----------
    topology : topology.Topology
        The machine.
    protocol : str or None
        A protocol of ``topology.gpu``, or None.

    Returns
    -------
    str or None

    Raises
    ------
    ValueError
        If ``protocol`` is given on a topology without a GPU model, or is not one of its
        protocols.
    """
    model = getattr(topology, "gpu", None)
    if model is None:
        if protocol is not None:
            raise ValueError(f"protocol={protocol!r} is not allowed on topology "
                             f"{topology.name!r}: it has no GPU model; it must be None")
        return None
    if protocol is None:
        return model.default_protocol
    return model.protocol(protocol).name


def gpu_terms(topology: Topology, protocol: str | None = None, algorithm: str | None = None,
              channels: int = 1) -> tuple[Topology, float]:
    """The effective topology of ``topology`` under ``protocol`` and the cost per call.

    Parameters
    ----------
    topology : topology.Topology
        The machine.
    protocol : str or None, optional
        A protocol of ``topology.gpu`` (default: its default protocol).
    algorithm : str or None, optional
        The algorithm that runs: its figures of ``topology.gpu`` where it has some
        (default None: the model's own figures).
    channels : int, optional
        The channels the schedule runs (default 1): each stands for
        ``max(1, topology.gpu.channels / channels)`` of NCCL's, so its slot is as many
        of the protocol's, and a message on a route through a link kind crossed out of
        step is as many shares (the effective topology's ``out_of_step``).

    Returns
    -------
    tuple of (Topology, float)
        ``(topology, 0.0)`` without a GPU model; otherwise the effective topology (no GPU
        model of its own) and the call's fixed cost in seconds.

    Raises
    ------
    ValueError
        As :func:`resolve_protocol`.

    Examples
    --------
    >>> import topology
    >>> machine, call_s = gpu_terms(topology.dgx_h100(), "Simple")
    >>> round(1 / machine.beta(0, 1) / 1e9, 1), round(machine.alpha(0, 1) * 1e6, 2)
    (391.5, 3.4)
    >>> round(call_s * 1e6, 2)
    8.4
    >>> two = topology.dgx_h100(2)  # GPU 0 to GPU 8, over the network, under LL:
    >>> [round(gpu_terms(two, "LL", a)[0].alpha(0, 8) * 1e6, 2) for a in ("ring", "tree")]
    [3.7, 6.0]
    """
    terms = _terms(topology, protocol, algorithm, channels)
    if terms is None:
        return topology, 0.0
    protocol, algorithm, slot, shares, call_s = terms
    return _effective(topology, protocol, algorithm, slot, _out_of_step(topology.gpu, shares)), \
        call_s


def _check_figures(model: Any) -> None:
    """Raise TopologyError if ``model`` has figures for an algorithm that is not registered."""
    known = names()
    for figures in model.algorithms:
        if figures.algorithm not in known:
            raise TopologyError(f"gpu.algorithms: algorithm = {figures.algorithm!r} is not "
                                f"allowed; it must be one of {', '.join(known)}")


def _terms(topology: Any, protocol: str | None, algorithm: str | None,
           channels: int) -> tuple[str, str | None, float | None, float, float] | None:
    """The resolved protocol, the algorithm whose figures apply (None: the model's), the
    slot bytes, the NCCL channels a simulated channel stands for and the call's cost;
    None without a GPU model."""
    protocol = resolve_protocol(topology, protocol)
    if protocol is None:
        return None
    model = topology.gpu
    _check_figures(model)
    own = model.algorithm_figures(algorithm)
    algorithm = None if own is None else own.algorithm
    shares = max(1.0, model.channels / channels)
    slot = model.protocol(protocol).slot_bytes
    if slot is not None:
        slot *= shares
    return protocol, algorithm, slot, shares, model.call_s(protocol, algorithm)


def _out_of_step(model: Any, shares: float) -> tuple[tuple[str, float], ...]:
    """``(kind, shares)`` for every link kind of ``model`` its channels cross out of step."""
    return tuple((f.kind, shares) for f in model.links if not f.in_step)


def link_figures(topology: Any, protocol: str | None = None, algorithm: str | None = None,
                 channels: int = 1) -> tuple[np.ndarray, np.ndarray, float | None,
                                             np.ndarray | None, float, float]:
    """Every link's latency and bandwidth on the effective topology of :func:`gpu_terms`,
    without building it (the analytic model reads only these).

    Parameters
    ----------
    topology, protocol, algorithm, channels
        As :func:`gpu_terms`.

    Returns
    -------
    tuple
        Latency (s) and bandwidth (B/s) per link (arrays indexed like
        ``topology.links``), the FIFO slot in bytes (or None), the shares per link
        (:func:`link_shares` of the effective topology, or None: all 1), seconds per
        byte reduced, and
        the call's fixed cost in seconds.

    Raises
    ------
    ValueError
        As :func:`resolve_protocol`.
    """
    terms = _terms(topology, protocol, algorithm, channels)
    if terms is None:
        latency, bandwidth = line_figures(topology)
        return latency, bandwidth, getattr(topology, "slot_bytes", None), \
            link_shares(topology, getattr(topology, "out_of_step", ())), \
            float(topology.gamma_s_per_byte), 0.0
    protocol, algorithm, slot, shares, call_s = terms
    latency, bandwidth = _scaled(topology, protocol, algorithm)
    return latency, bandwidth, slot, link_shares(topology, _out_of_step(topology.gpu, shares)), \
        1.0 / topology.gpu.reduce_Bps, call_s


@functools.lru_cache(maxsize=16)
def link_shares(topology: Any, out_of_step: tuple[tuple[str, float], ...]) -> np.ndarray | None:
    """Per link of ``topology``, the shares of a message on it (1 where its kind is not in
    ``out_of_step``; see :func:`route_shares`).

    Parameters
    ----------
    topology : Topology
        The machine.
    out_of_step : tuple of (str, float)
        ``(link kind, shares)`` (:attr:`topology.Topology.out_of_step`).

    Returns
    -------
    numpy.ndarray or None
        Indexed like ``topology.links``; None when ``out_of_step`` is empty (every link 1).
    """
    if not out_of_step:
        return None
    kinds, index = link_kinds(topology)
    per_kind = dict(out_of_step)
    return np.array([per_kind.get(kind, 1.0) for kind in kinds])[index]


def route_shares(topology: Any, links: Any) -> float:
    """The shares of a message over ``links`` of ``topology``: the most of any link's
    (:attr:`topology.Topology.out_of_step`; 1 where none is crossed out of step), the
    ``shares`` argument of :func:`hidden_latency`.

    Parameters
    ----------
    topology : Topology
        The (effective) machine.
    links : sequence of int
        The route's link indices.

    Returns
    -------
    float

    Examples
    --------
    >>> import topology
    >>> two = gpu_terms(topology.dgx_h100(2), "LL128", channels=8)[0]
    >>> route_shares(two, two.route(0, 1)), route_shares(two, two.route(0, 8))
    (1.0, 2.0)
    """
    out_of_step = getattr(topology, "out_of_step", ())
    if not out_of_step:
        return 1.0
    per_kind = dict(out_of_step)
    return max((per_kind.get(topology.links[i].kind, 1.0) for i in links), default=1.0)


@functools.lru_cache(maxsize=16)
def line_figures(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Every link's latency and line rate on ``topology`` (cached; not to be written to).

    Returns
    -------
    tuple of numpy.ndarray
        Seconds and bytes per second, indexed like ``topology.links``.
    """
    links = topology.links
    return (np.fromiter(map(attrgetter("latency_s"), links), dtype=float, count=len(links)),
            np.fromiter(map(attrgetter("bandwidth_Bps"), links), dtype=float,
                        count=len(links)))


@functools.lru_cache(maxsize=16)
def link_kinds(topology: Topology) -> tuple[tuple[str, ...], np.ndarray]:
    """The link kinds of ``topology`` and every link's index among them (cached; not to
    be written to).

    Returns
    -------
    tuple
        The kinds, sorted, and per link (indexed like ``topology.links``) its kind's
        index among them.
    """
    every = list(map(attrgetter("kind"), topology.links))
    kinds = tuple(sorted(set(every)))
    index = {kind: k for k, kind in enumerate(kinds)}
    return kinds, np.fromiter(map(index.__getitem__, every), dtype=np.int64, count=len(every))


@functools.lru_cache(maxsize=64)
def _scaled(topology: Topology, protocol: str,
            algorithm: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Every link's latency and bandwidth under ``protocol`` (and ``algorithm``'s figures),
    a link at a NIC at most its flows times its kind's flow rate."""
    model = topology.gpu
    assert model is not None  # a protocol resolved: the machine has a GPU model
    kinds, index = link_kinds(topology)
    figures = [model.link_terms(kind, protocol, algorithm) for kind in kinds]
    latency = np.array([f[0] for f in figures])[index]
    line = line_figures(topology)[1]
    fraction = np.array([f[1] for f in figures])[index]
    efficiency = np.array([model.figures(kind).efficiency for kind in kinds])[index]
    cap = flow_caps(topology)
    # the protocol's share of what the link reaches: its efficiency, or its flows' rate
    return latency, np.minimum(line * efficiency, cap) * (fraction / efficiency) \
        * _ll_capped(topology, protocol, algorithm)


def _ll_capped(topology: Topology, protocol: str, algorithm: str | None) -> float:
    """What NCCL's cap on LL's bandwidth (tuning.cc ``llMaxBws``) leaves of an algorithm
    whose figures are tuning.cc's own uncapped ones (its :class:`topology.AlgorithmFigures`,
    e.g. the tree's x0.92/3.8 under LL), on a machine of a GPU kind NCCL's tables know
    (:func:`simulator.nccl_tuner.ll_share`); 1 for anything else.  The model's own figures
    (the Ring's) hold the cap already: their LL fraction is llMaxBw over what Simple
    reaches on one node (:mod:`topology.gpu_presets`)."""
    kind = tuner_kind(topology)
    if protocol != "LL" or algorithm not in ALGORITHMS or kind is None:
        return 1.0
    return ll_share(kind, algorithm, topology.nranks, len(node_groups(topology)))


@functools.lru_cache(maxsize=16)
def flow_caps(topology: Topology) -> np.ndarray:
    """Per link, the most its flows carry, before a protocol's share of it
    (:func:`link_figures`): a link at a NIC at most the NIC's flows (:func:`nic_flows`)
    times its kind's flow rate.

    Parameters
    ----------
    topology : Topology
        The machine.

    Returns
    -------
    numpy.ndarray
        Bytes per second, indexed like ``topology.links`` (cached; not to be written to):
        infinite where no flow rate applies (every link on one node or without a GPU
        model).

    Examples
    --------
    >>> import topology
    >>> two = topology.dgx_h100(2)
    >>> caps = flow_caps(two)
    >>> round(float(caps[two.route(0, 8)[1]]) / 1e9, 1), float(caps[two.route(0, 1)[0]])
    (40.4, inf)
    """
    model = getattr(topology, "gpu", None)
    flows = nic_flows(topology)
    if model is None or not flows:
        return np.full(len(topology.links), np.inf)
    caps = {f.kind: flows * f.flow_Bps for f in model.links if f.flow_Bps is not None}
    kinds, index = link_kinds(topology)
    out = np.array([caps.get(kind, np.inf) for kind in kinds])[index]
    nics = {d.id for d in topology.devices if d.kind == "nic"}
    capped = np.flatnonzero(np.isfinite(out))  # only where a link meets a NIC
    links = topology.links
    out[[i for i in capped.tolist() if not nics & {links[i].src, links[i].dst}]] = np.inf
    return out


def nic_flows(topology: Any) -> int:
    """The flows one NIC of ``topology`` carries each way: NCCL's channels on it (each a
    connection to the next node) times the queue pairs of a connection.

    NCCL runs a channel's rings and trees across the nodes on one NIC, the channels spread
    evenly over the NICs of a node (nccl-model-facts.md: 16 channels over 8 NICs on DGX
    H100); a ring moves in lock step, so the NIC with the fewest channels sets the pace:
    ``max(1, channels // NICs)`` connections.

    Parameters
    ----------
    topology : Topology
        The machine (with a GPU model).

    Returns
    -------
    int
        0 on one node or without a GPU model.

    Examples
    --------
    >>> import topology
    >>> nic_flows(topology.dgx_h100(2)), nic_flows(topology.dgx_h100(1))
    (2, 0)
    """
    model = getattr(topology, "gpu", None)
    nics = nics_per_node(topology)
    if model is None or not nics:
        return 0
    return max(1, model.channels // nics) * model.qps_per_connection


def with_settings(model: GpuModel, settings: Mapping[str, str]) -> GpuModel:
    """``model`` run with NCCL's environment ``settings`` (those of :data:`SETTINGS`; the
    others are not priced and left out).

    Parameters
    ----------
    model : topology.GpuModel
        The machine's figures, its ``channels`` NCCL's own count.
    settings : mapping of str to str
        ``NCCL_X -> value`` as the run was given them.

    Returns
    -------
    topology.GpuModel
        With ``channels`` raised to ``NCCL_MIN_CTAS`` and lowered to ``NCCL_MAX_CTAS``
        (NCCL clamps its channel count between them) and ``qps_per_connection``.

    Raises
    ------
    ValueError
        Naming the setting and value when it is not a whole number in NCCL's range.

    Examples
    --------
    >>> import topology
    >>> tuned = with_settings(topology.DGX_H100_GPU, {"NCCL_MIN_CTAS": "24",
    ...                                               "NCCL_IB_QPS_PER_CONNECTION": "2"})
    >>> tuned.channels, tuned.qps_per_connection
    (24, 2)
    """
    channels, qps = model.channels, model.qps_per_connection
    low_ctas, high_ctas = 1, 64
    for name, value in settings.items():
        if name not in SETTINGS:
            continue
        _, low, high, how = SETTINGS[name]
        text = str(value).strip()
        if not text.isdigit() or not low <= int(text) <= high:
            raise ValueError(f"{name}={value!r} is not allowed; it must be a whole number "
                             f"from {low} to {high}")
        if how == "min":
            low_ctas = max(low_ctas, int(text))
        elif how == "max":
            high_ctas = min(high_ctas, int(text))
        else:
            qps = int(text)
    return dataclasses.replace(model, channels=min(max(channels, low_ctas), high_ctas),
                               qps_per_connection=qps)


def hidden_latency(latency_s: Any, nbytes: Any, rate_Bps: Any, slot_bytes: float | None,
                   shares: Any = 1.0) -> Any:
    """The latency a message of ``nbytes`` still pays once its FIFO slots hide the rest.

    NCCL moves a step's data through a FIFO of ``NCCL_STEPS`` slots of ``s`` bytes each
    (:attr:`topology.Protocol.slot_bytes`), and a receiver forwards slot ``j`` of step
    ``k + 1`` as soon as slot ``j`` of step ``k`` has arrived.  With ``T(k, j)`` the time
    slot ``j`` of step ``k`` has left its sender, ``T(k, j) = max(T(k, j - 1),
    T(k - 1, j) + lat) + s / r`` over a route of latency ``lat`` and rate ``r``: the link
    stays busy iff ``lat <= (J - 1) s / r`` for a message of ``J`` slots.  A message of
    ``b`` bytes therefore takes ``max(b / r, lat + min(b, s) / r)``, i.e. it pays
    ``b / r`` plus the effective latency ``max(0, lat - max(0, b - s) / r)``: the full
    latency up to one slot, none once the bytes past the first slot outlast it.

    A message that stands for ``shares`` channels' messages crossing out of step (each
    of ``b / shares`` bytes, its own FIFO's slots ``s / shares``) ends when the link has
    carried all of them, ``b / r``, and no sooner than one of them alone could,
    ``lat + min(b, s) / (shares r)``: the unit the latency waits for is one share.

    Parameters
    ----------
    latency_s : float or numpy.ndarray
        The route's latency, seconds.
    nbytes : int, float or numpy.ndarray
        The message's bytes.
    rate_Bps : float or numpy.ndarray
        The route's bottleneck rate (nominal, not a share of it), bytes per second.
    slot_bytes : float or None
        Bytes of one slot; None: no slots, the full latency.
    shares : float or numpy.ndarray, optional
        The out-of-step channels' messages the message stands for (>= 1; default 1:
        in step, or one channel).

    Returns
    -------
    float or numpy.ndarray
        Seconds, ``latency_s`` when ``nbytes <= slot_bytes``.

    Examples
    --------
    >>> hidden_latency(10e-6, 1 << 19, 1e9, 1 << 19)  # one slot: all of it
    1e-05
    >>> round(hidden_latency(10e-6, (1 << 19) + 4000, 1e9, 1 << 19) * 1e6, 6)  # 4 us hidden
    6.0
    >>> hidden_latency(10e-6, 1 << 22, 1e9, 1 << 19), hidden_latency(10e-6, 1 << 22, 1e9, None)
    (0.0, 1e-05)
    >>> round(hidden_latency(10e-6, 8000, 1e9, 1 << 19, shares=4) * 1e6, 6)  # 6 us hidden
    4.0
    """
    if slot_bytes is None:
        return latency_s
    if any(isinstance(x, np.ndarray) for x in (latency_s, nbytes, rate_Bps, shares)):
        unit = np.minimum(nbytes, slot_bytes) / shares
        return np.maximum(0.0, latency_s - np.maximum(0.0, nbytes - unit) / rate_Bps)
    unit = min(nbytes, slot_bytes) / shares
    return max(0.0, latency_s - max(0.0, nbytes - unit) / rate_Bps)


@functools.lru_cache(maxsize=64)
def _effective(topology: Topology, protocol: str, algorithm: str | None,
               slot_bytes: float | None, out_of_step: tuple[tuple[str, float], ...]) -> Topology:
    """The links of ``topology`` at what ``protocol`` reaches on them under
    ``algorithm`` (None: the model's own figures), with FIFO slots of ``slot_bytes``
    and the link kinds crossed ``out_of_step`` (cached)."""
    model = topology.gpu
    assert model is not None, "gpu_terms asks only for a topology with a GPU model"
    latency, bandwidth = _scaled(topology, protocol, algorithm)
    links = tuple(Link(link.src, link.dst, float(latency[i]), float(bandwidth[i]), link.kind)
                  for i, link in enumerate(topology.links))
    name = protocol if algorithm is None else f"{protocol}, {algorithm}"
    return Topology(f"{topology.name}[{name}]", topology.devices, links,
                    topology.placement, 1.0 / model.reduce_Bps,
                    topology.overhead_s_per_message, slot_bytes=slot_bytes,
                    fabric=topology.fabric, out_of_step=out_of_step)
