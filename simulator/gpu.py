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
the closed forms from their ``algorithm`` argument.

Every message pays its route's latency on top of its bytes over the route's rate, less
what the transport's FIFO hides (:func:`hidden_latency`; the effective topology's
``slot_bytes``: the protocol's :attr:`topology.Protocol.slot_bytes` times the NCCL
channels, :attr:`topology.GpuModel.channels`, that each simulated channel stands for,
whose slots move side by side).

Both engines and the closed forms read the same effective topology and add the same
call cost, so they agree with the GPU terms on exactly as they do without them; a
topology without a GPU model (``flat``, host models, files without ``[gpu]``) is played
as it is.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from collectives.registry import names
from topology import Link, Topology
from topology.errors import TopologyError

__all__ = ["protocols", "resolve_protocol", "gpu_terms", "link_figures", "hidden_latency"]


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
        of the protocol's.

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
    protocol, algorithm, slot, call_s = terms
    return _effective(topology, protocol, algorithm, slot), call_s


def _check_figures(model: Any) -> None:
    """Raise TopologyError if ``model`` has figures for an algorithm that is not registered."""
    known = names()
    for figures in model.algorithms:
        if figures.algorithm not in known:
            raise TopologyError(f"gpu.algorithms: algorithm = {figures.algorithm!r} is not "
                                f"allowed; it must be one of {', '.join(known)}")


def _terms(topology: Any, protocol: str | None, algorithm: str | None,
           channels: int) -> tuple[str, str | None, float | None, float] | None:
    """The resolved protocol, the algorithm whose figures apply (None: the model's), the
    slot bytes and the call's cost; None without a GPU model."""
    protocol = resolve_protocol(topology, protocol)
    if protocol is None:
        return None
    model = topology.gpu
    _check_figures(model)
    own = model.algorithm_figures(algorithm)
    algorithm = None if own is None else own.algorithm
    slot = model.protocol(protocol).slot_bytes
    if slot is not None:
        slot *= max(1.0, model.channels / channels)
    return protocol, algorithm, slot, model.call_s(protocol, algorithm)


def link_figures(topology: Any, protocol: str | None = None, algorithm: str | None = None,
                 channels: int = 1) -> tuple[np.ndarray, np.ndarray, float | None, float, float]:
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
        ``topology.links``), the FIFO slot in bytes (or None), seconds per byte reduced,
        and the call's fixed cost in seconds.

    Raises
    ------
    ValueError
        As :func:`resolve_protocol`.
    """
    terms = _terms(topology, protocol, algorithm, channels)
    if terms is None:
        latency, bandwidth = _line(topology)
        return latency, bandwidth, getattr(topology, "slot_bytes", None), \
            float(topology.gamma_s_per_byte), 0.0
    protocol, algorithm, slot, call_s = terms
    latency, bandwidth = _scaled(topology, protocol, algorithm)
    return latency, bandwidth, slot, 1.0 / topology.gpu.reduce_Bps, call_s


@functools.lru_cache(maxsize=16)
def _line(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Every link's latency and line rate."""
    return (np.array([link.latency_s for link in topology.links]),
            np.array(topology.bandwidths_Bps, dtype=float))


@functools.lru_cache(maxsize=16)
def _kinds(topology: Topology) -> tuple[tuple[str, ...], np.ndarray]:
    """The link kinds of ``topology`` and every link's index among them."""
    kinds = tuple(sorted({link.kind for link in topology.links}))
    index = {kind: k for k, kind in enumerate(kinds)}
    return kinds, np.array([index[link.kind] for link in topology.links], dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _scaled(topology: Topology, protocol: str,
            algorithm: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Every link's latency and bandwidth under ``protocol`` (and ``algorithm``'s figures)."""
    model = topology.gpu
    assert model is not None  # a protocol resolved: the machine has a GPU model
    kinds, index = _kinds(topology)
    figures = [model.link_terms(kind, protocol, algorithm) for kind in kinds]
    latency = np.array([f[0] for f in figures])[index]
    return latency, _line(topology)[1] * np.array([f[1] for f in figures])[index]


def hidden_latency(latency_s: Any, nbytes: Any, rate_Bps: Any, slot_bytes: float | None) -> Any:
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
    """
    if slot_bytes is None:
        return latency_s
    if isinstance(latency_s, np.ndarray) or isinstance(nbytes, np.ndarray) \
            or isinstance(rate_Bps, np.ndarray):
        return np.maximum(0.0, latency_s - np.maximum(0.0, nbytes - slot_bytes) / rate_Bps)
    return max(0.0, latency_s - max(0.0, nbytes - slot_bytes) / rate_Bps)


@functools.lru_cache(maxsize=64)
def _effective(topology: Topology, protocol: str, algorithm: str | None,
               slot_bytes: float | None) -> Topology:
    """The links of ``topology`` at what ``protocol`` reaches on them under
    ``algorithm`` (None: the model's own figures), with FIFO slots of ``slot_bytes``
    (cached)."""
    model = topology.gpu
    assert model is not None, "gpu_terms asks only for a topology with a GPU model"
    figures = {f.kind: model.link_terms(f.kind, protocol, algorithm) for f in model.links}
    links = tuple(Link(link.src, link.dst, figures[link.kind][0],
                       link.bandwidth_Bps * figures[link.kind][1], link.kind)
                  for link in topology.links)
    name = protocol if algorithm is None else f"{protocol}, {algorithm}"
    return Topology(f"{topology.name}[{name}]", topology.devices, links,
                    topology.placement, 1.0 / model.reduce_Bps,
                    topology.overhead_s_per_message, slot_bytes=slot_bytes,
                    fabric=topology.fabric)
