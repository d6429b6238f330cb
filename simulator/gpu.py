"""The GPU terms of a topology, as the simulator and the closed forms read them.

A topology with a :class:`topology.GpuModel` (``topology.gpu``) is played, for a given
protocol, on its *effective* topology: the same devices and routes, every link's
bandwidth its line rate times the kind's achievable fraction times the protocol's
fraction (on that kind), every link's latency the kind's per-link latency under the protocol, and the
reduction cost one over the GPU's reduction throughput.  The fixed cost of the call
(launch and protocol setup) delays every rank's start.

Both engines and the closed forms read the same effective topology and add the same
call cost, so they agree with the GPU terms on exactly as they do without them; a
topology without a GPU model (``flat``, host models, files without ``[gpu]``) is played
as it is.
"""

from __future__ import annotations

import functools
from typing import Any

from topology import Link, Topology

__all__ = ["protocols", "resolve_protocol", "gpu_terms"]


def protocols(topology: Any) -> tuple[str | None, ...]:
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


def resolve_protocol(topology: Any, protocol: str | None) -> str | None:
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


def gpu_terms(topology: Any, protocol: str | None = None) -> tuple[Any, float]:
    """The effective topology of ``topology`` under ``protocol`` and the cost per call.

    Parameters
    ----------
    topology : topology.Topology
        The machine.
    protocol : str or None, optional
        A protocol of ``topology.gpu`` (default: its default protocol).

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
    """
    protocol = resolve_protocol(topology, protocol)
    if protocol is None:
        return topology, 0.0
    return _effective(topology, protocol), topology.gpu.call_s(protocol)


@functools.lru_cache(maxsize=32)
def _effective(topology: Topology, protocol: str) -> Topology:
    """The links of ``topology`` at what ``protocol`` reaches on them (cached)."""
    model = topology.gpu
    chosen = model.protocol(protocol)
    figures = {f.kind: (f.latency(protocol), f.efficiency * f.fraction(chosen))
               for f in model.links}
    links = tuple(Link(link.src, link.dst, figures[link.kind][0],
                       link.bandwidth_Bps * figures[link.kind][1], link.kind)
                  for link in topology.links)
    return Topology(f"{topology.name}[{protocol}]", topology.devices, links,
                    topology.placement, 1.0 / model.reduce_Bps,
                    topology.overhead_s_per_message)
