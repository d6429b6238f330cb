"""What a GPU machine adds to its link graph: the cost model NCCL's own tuner has.

A :class:`GpuModel` attached to a :class:`~topology.Topology` (``topology.gpu``) says how
collectives run on GPUs rather than how fast the wires are:

* a fixed cost per collective call: the host's kernel launch (``launch_s``; a process that
  drives several GPUs launches on each in turn, ``launch_per_gpu_s`` for every GPU after
  the first) and the protocol's setup (:attr:`Protocol.call_s`, NCCL's ``baseLat``);
* protocols (:class:`Protocol`): a low-latency one (small steps, a fraction of the
  bandwidth) and a bandwidth one, each a fraction of what the links achieve, each with
  the data one slot of its FIFO holds (:attr:`Protocol.slot_bytes`: a message longer
  than a slot hides its route's latency behind its data, :func:`simulator.gpu.hidden_latency`);
* per link kind (:class:`LinkFigures`): the achievable fraction of the line rate, where a
  protocol reaches another fraction of it on that kind than elsewhere, the latency a
  message pays per link of that kind it crosses, per protocol (NCCL's per-hop
  ``hwLat`` spread over the links of a hop, and the network's per-message overhead), and
  whether NCCL's channels cross it in step (:attr:`LinkFigures.in_step`);
* per algorithm (:class:`AlgorithmFigures`), where NCCL's model gives an algorithm figures
  of its own (Tree's per-hop latencies, protocol setup and bandwidth factors): they replace
  the protocol's and the link kinds' figures when that algorithm runs; every other
  algorithm runs on the figures above;
* the GPU's reduction throughput (``reduce_Bps``, bytes reduced per second).

The simulator reads the model (:mod:`simulator.gpu`); this module only holds and checks
the figures.  More channels use more links, each with the same figures, so nothing here
depends on how many channels an algorithm runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from reprlib import repr as brief
from typing import Any

from .errors import TopologyError

__all__ = ["Protocol", "LinkFigures", "AlgorithmFigures", "GpuModel", "NCCL_KINDS"]

#: GPUs whose NCCL tuning tables are known (tuning.cc keeps its latencies and bandwidths
#: per compute capability: Ampere A100, Hopper H100)
NCCL_KINDS = ("A100", "H100")

#: what an algorithm's name looks like; this layer knows no algorithm, and the simulator
#: refuses figures for one that is not registered (:func:`simulator.gpu.gpu_terms`)
_ALGORITHM_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _fraction(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not (math.isfinite(value) and 0 < value <= 1):
        raise TopologyError(f"{key} = {value!r} is not allowed; it must be a number in (0, 1]")
    return float(value)


def _number(value: Any, key: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise TopologyError(f"{key} = {value!r} is not allowed; it must be a finite number "
                            f"{bound}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Protocol:
    """One way of moving data between GPUs (NCCL's LL, LL128, Simple).

    Parameters
    ----------
    name : str
        E.g. ``"LL"``, ``"Simple"``.
    bandwidth_fraction : float
        Fraction of every link's achievable rate the protocol reaches, in (0, 1].
    call_s : float
        Setup per collective call with this protocol, seconds (>= 0).
    slot_bytes : float or None, optional
        Data bytes one slot of the protocol's FIFO holds (> 0; NCCL: the protocol's buffer
        over ``NCCL_STEPS`` slots): a receiver forwards a slot as soon as it arrived, so a
        message longer than one slot pays less than its route's full latency
        (:func:`simulator.gpu.hidden_latency`).  None (the default): every message pays
        the full latency.
    """

    name: str
    bandwidth_fraction: float
    call_s: float
    slot_bytes: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TopologyError(f"protocol name = {self.name!r} is not allowed; it must be a "
                                "non-empty string")
        _fraction(self.bandwidth_fraction, f"protocol {self.name}.bandwidth_fraction")
        _number(self.call_s, f"protocol {self.name}.call_s")
        if self.slot_bytes is not None:
            _number(self.slot_bytes, f"protocol {self.name}.slot_bytes", positive=True)


@dataclass(frozen=True, slots=True)
class LinkFigures:
    """How GPUs use the links of one kind.

    Parameters
    ----------
    kind : str
        The :attr:`Link.kind` these figures are for (``"nvlink"``, ``"ib"``, ...).
    efficiency : float
        Achievable fraction of the line rate, in (0, 1].
    latency_s : tuple of (str, float)
        ``(protocol name, seconds)``: the latency a message pays per link of this kind it
        crosses (> 0), one entry per protocol of the model.
    protocol_fraction : tuple of (str, float), optional
        ``(protocol name, fraction in (0, 1])``: what a protocol reaches on links of this
        kind in place of its :attr:`Protocol.bandwidth_fraction` (default none: every
        protocol reaches its own fraction here).
    flow_Bps : float or None, optional
        The rate one flow (a queue pair of a network connection) reaches on a link of this
        kind at a NIC, bytes per second (> 0): such a link carries at most its flows times
        this (:func:`simulator.gpu.nic_flows`).  None (the default): no such limit.
    in_step : bool, optional
        Whether NCCL's channels cross links of this kind in step with one another (the
        default): a simulated channel that stands for several moves their messages side
        by side, so one step pays the route's latency and then all of their bytes.
        False: out of step, each channel's message pays the latency and its own bytes
        while the other channels' bytes keep the link busy, so a route through a link of
        this kind hides its latency behind all but one channel's share of a message
        (:func:`simulator.gpu.hidden_latency`).
    """

    kind: str
    efficiency: float
    latency_s: tuple[tuple[str, float], ...]
    protocol_fraction: tuple[tuple[str, float], ...] = ()
    flow_Bps: float | None = None
    in_step: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise TopologyError(f"link kind = {self.kind!r} is not allowed; it must be a "
                                "non-empty string")
        _fraction(self.efficiency, f"links {self.kind}.efficiency")
        object.__setattr__(self, "latency_s", tuple(tuple(pair) for pair in self.latency_s))
        for name, seconds in self.latency_s:
            _number(seconds, f"links {self.kind}.latency_s[{name!r}]", positive=True)
        object.__setattr__(self, "protocol_fraction",
                           tuple(tuple(pair) for pair in self.protocol_fraction))
        for name, fraction in self.protocol_fraction:
            _fraction(fraction, f"links {self.kind}.protocol_fraction[{name!r}]")
        if self.flow_Bps is not None:
            _number(self.flow_Bps, f"links {self.kind}.flow_Bps", positive=True)
        if not isinstance(self.in_step, bool):
            raise TopologyError(f"links {self.kind}.in_step = {brief(self.in_step)} is not "
                                "allowed; it must be True or False")

    def latency(self, protocol: str) -> float:
        """Seconds per link of this kind under ``protocol``.

        Parameters
        ----------
        protocol : str
            A protocol name of the model.

        Returns
        -------
        float
            The figure.

        Raises
        ------
        TopologyError
            If the figures have no latency for ``protocol``.
        """
        for name, seconds in self.latency_s:
            if name == protocol:
                return seconds
        raise TopologyError(f"links {self.kind}.latency_s has no entry for protocol "
                            f"{protocol!r}; it has {[n for n, _ in self.latency_s]}")


def _pairs(value: Any, key: str) -> tuple[tuple[str, Any], ...]:
    """``value`` as a tuple of ``(name, value)`` pairs (from pairs or a dict)."""
    items = value.items() if isinstance(value, dict) else value
    try:
        pairs = tuple((name, v) for name, v in items)
    except (TypeError, ValueError):
        raise TopologyError(f"{key} = {value!r} is not allowed; it must be (name, value) "
                            "pairs") from None
    if not all(isinstance(name, str) and name for name, _ in pairs):
        raise TopologyError(f"{key} = {value!r} is not allowed; names must be non-empty "
                            "strings")
    return pairs


@dataclass(frozen=True, slots=True)
class AlgorithmFigures:
    """Figures that replace the model's own when one algorithm runs.

    Every entry is optional: what it leaves out, the algorithm takes from the protocols
    and link figures of the model.

    Parameters
    ----------
    algorithm : str
        The algorithm's name as :func:`collectives.build_schedule` takes it (``"tree"``).
    call_s : tuple of (str, float), optional
        ``(protocol, seconds)``: setup per call, in place of :attr:`Protocol.call_s`.
    bandwidth_fraction : tuple of (str, float), optional
        ``(protocol, fraction in (0, 1])``: in place of :attr:`Protocol.bandwidth_fraction`
        (a link kind's :attr:`LinkFigures.protocol_fraction`, measured on that kind,
        still takes precedence on it).
    latency_s : tuple of (str, tuple of (str, float)), optional
        ``(link kind, ((protocol, seconds), ...))``: per link crossed, in place of
        :attr:`LinkFigures.latency_s` for the protocols named.
    """

    algorithm: str
    call_s: tuple[tuple[str, float], ...] = ()
    bandwidth_fraction: tuple[tuple[str, float], ...] = ()
    latency_s: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.algorithm, str) or not _ALGORITHM_NAME.fullmatch(self.algorithm):
            raise TopologyError(f"algorithm = {brief(self.algorithm)} is not allowed; it must "
                                f"be an algorithm's name (a lowercase letter, then lowercase "
                                f"letters, digits or _)")
        where = f"algorithms {self.algorithm}"
        object.__setattr__(self, "call_s", _pairs(self.call_s, f"{where}.call_s"))
        for name, seconds in self.call_s:
            _number(seconds, f"{where}.call_s[{name!r}]")
        object.__setattr__(self, "bandwidth_fraction",
                           _pairs(self.bandwidth_fraction, f"{where}.bandwidth_fraction"))
        for name, fraction in self.bandwidth_fraction:
            _fraction(fraction, f"{where}.bandwidth_fraction[{name!r}]")
        latency = tuple((kind, _pairs(per, f"{where}.latency_s[{kind!r}]"))
                        for kind, per in _pairs(self.latency_s, f"{where}.latency_s"))
        object.__setattr__(self, "latency_s", latency)
        for kind, per in latency:
            for name, seconds in per:
                _number(seconds, f"{where}.latency_s[{kind!r}][{name!r}]", positive=True)

    @property
    def protocol_names(self) -> set[str]:
        """Every protocol these figures name."""
        return ({n for n, _ in self.call_s} | {n for n, _ in self.bandwidth_fraction}
                | {n for _, per in self.latency_s for n, _ in per})


@dataclass(frozen=True)
class GpuModel:
    """The GPU terms of a machine (see the module docstring).

    Parameters
    ----------
    protocols : tuple of Protocol
        At least one, names unique; :func:`simulator.select` tries each.
    links : tuple of LinkFigures
        One per link kind of the topology it is attached to, kinds unique.
    reduce_Bps : float
        Bytes the GPU reduces per second (> 0): a received byte costs ``1 / reduce_Bps``.
    launch_s : float, optional
        Host-side cost of launching a collective, seconds (default 0).
    launch_per_gpu_s : float, optional
        Added for every GPU after the first that one process drives (default 0).
    gpus_per_process : int, optional
        GPUs one process drives (nccl-tests ``-g``; default 1).
    default_protocol : str, optional
        The protocol :func:`simulator.simulate` plays when none is given (default the
        last of ``protocols``).
    algorithms : tuple of AlgorithmFigures, optional
        Figures of algorithms that do not run on the model's own (default none).
    channels : int, optional
        Channels NCCL runs per GPU (``nChannels``; default 1), each with a FIFO of its own
        to every peer: a simulated channel that stands for several of them moves their
        slots side by side (:func:`simulator.gpu.gpu_terms`).  A setting of the run
        (``NCCL_MIN_CTAS``, ...; :func:`simulator.gpu.with_settings`).
    qps_per_connection : int, optional
        Queue pairs of every network connection (``NCCL_IB_QPS_PER_CONNECTION``; default
        1), each a flow of its own (:attr:`LinkFigures.flow_Bps`).  A setting of the run.
    nccl_kind : str, optional
        The GPU whose NCCL tuning tables apply, one of :data:`NCCL_KINDS` (the presets set
        it; figures fitted to a cluster or settings of a run keep it), or ``""`` (default):
        NCCL's own model of this machine is unknown.

    Raises
    ------
    TopologyError
        Naming the field and value: no protocols, duplicate names, kinds or algorithms, a
        link kind without a latency for some protocol, algorithm figures naming an unknown
        protocol or link kind, values out of range.
    """

    protocols: tuple[Protocol, ...]
    links: tuple[LinkFigures, ...]
    reduce_Bps: float
    launch_s: float = 0.0
    launch_per_gpu_s: float = 0.0
    gpus_per_process: int = 1
    default_protocol: str = ""
    algorithms: tuple[AlgorithmFigures, ...] = ()
    channels: int = 1
    qps_per_connection: int = 1
    nccl_kind: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "protocols", tuple(self.protocols))
        object.__setattr__(self, "links", tuple(self.links))
        object.__setattr__(self, "algorithms", tuple(self.algorithms))
        names = [p.name for p in self.protocols]
        if not names or not all(isinstance(p, Protocol) for p in self.protocols):
            raise TopologyError(f"protocols = {self.protocols!r} is not allowed; it must be "
                                "one or more Protocol")
        if len(set(names)) != len(names):
            raise TopologyError(f"protocols {names} are not allowed; names must be unique")
        kinds = [f.kind for f in self.links if isinstance(f, LinkFigures)]
        if len(kinds) != len(self.links) or len(set(kinds)) != len(kinds):
            raise TopologyError(f"links kinds {kinds} are not allowed; they must be "
                                "LinkFigures of unique kinds")
        for figures in self.links:
            for name in names:
                figures.latency(name)
            unknown = [n for n, _ in figures.protocol_fraction if n not in names]
            if unknown:
                raise TopologyError(f"links {figures.kind}.protocol_fraction names "
                                    f"{unknown}; protocols must be among {names}")
        _number(self.reduce_Bps, "reduce_Bps", positive=True)
        _number(self.launch_s, "launch_s")
        _number(self.launch_per_gpu_s, "launch_per_gpu_s")
        for key in ("gpus_per_process", "channels", "qps_per_connection"):
            g = getattr(self, key)
            if isinstance(g, bool) or not isinstance(g, int) or g < 1:
                raise TopologyError(f"{key} = {g!r} is not allowed; it must be an int >= 1")
        if self.nccl_kind not in ("", *NCCL_KINDS):
            raise TopologyError(f"nccl_kind = {brief(self.nccl_kind)} is not allowed; it must "
                                f"be one of {list(NCCL_KINDS)} or empty (NCCL's model unknown)")
        if not self.default_protocol:
            object.__setattr__(self, "default_protocol", names[-1])
        self.protocol(self.default_protocol)
        self._check_algorithms(names, kinds)

    def _check_algorithms(self, names: list[str], kinds: list[str]) -> None:
        """Raise unless the algorithm figures are unique and name known protocols, kinds."""
        algorithms = [a.algorithm for a in self.algorithms if isinstance(a, AlgorithmFigures)]
        if len(algorithms) != len(self.algorithms) or len(set(algorithms)) != len(algorithms):
            raise TopologyError(f"algorithms {algorithms} are not allowed; they must be "
                                "AlgorithmFigures of unique algorithms")
        for figures in self.algorithms:
            unknown = sorted(figures.protocol_names - set(names))
            if unknown:
                raise TopologyError(f"algorithms {figures.algorithm} names protocols "
                                    f"{unknown}; protocols must be among {names}")
            unknown = [k for k, _ in figures.latency_s if k not in kinds]
            if unknown:
                raise TopologyError(f"algorithms {figures.algorithm}.latency_s names link "
                                    f"kinds {unknown}; kinds must be among {kinds}")

    def algorithm_figures(self, algorithm: str | None) -> AlgorithmFigures | None:
        """The figures of ``algorithm``, or None where it runs on the model's own.

        Parameters
        ----------
        algorithm : str or None
            An algorithm name (None: none in particular).

        Returns
        -------
        AlgorithmFigures or None
        """
        for figures in self.algorithms:
            if figures.algorithm == algorithm:
                return figures
        return None

    def link_terms(self, kind: str, protocol: str,
                   algorithm: str | None = None) -> tuple[float, float]:
        """Latency per link of ``kind`` and the fraction of its line rate reached.

        Parameters
        ----------
        kind : str
            A link kind of the model.
        protocol : str
            One of :attr:`protocol_names`.
        algorithm : str, optional
            The algorithm that runs (its :class:`AlgorithmFigures` where it has some).

        Returns
        -------
        tuple of (float, float)
            Seconds per link crossed; efficiency times the protocol's fraction.

        Examples
        --------
        >>> m = GpuModel((Protocol("LL", 0.5, 6e-6),),
        ...              (LinkFigures("ib", 0.9, (("LL", 1e-6),)),), 2e12,
        ...              algorithms=(AlgorithmFigures("tree", latency_s=(("ib", (("LL", 2e-6),)),),
        ...                                           bandwidth_fraction=(("LL", 0.25),)),))
        >>> m.link_terms("ib", "LL"), m.link_terms("ib", "LL", "tree")
        ((1e-06, 0.45), (2e-06, 0.225))
        """
        figures = self.figures(kind)
        chosen = self.protocol(protocol)
        latency, fraction = figures.latency(protocol), chosen.bandwidth_fraction
        own = self.algorithm_figures(algorithm)
        if own is not None:
            latency = dict(dict(own.latency_s).get(kind, ())).get(protocol, latency)
            fraction = dict(own.bandwidth_fraction).get(protocol, fraction)
        fraction = dict(figures.protocol_fraction).get(protocol, fraction)
        return latency, figures.efficiency * fraction

    @property
    def protocol_names(self) -> tuple[str, ...]:
        """The protocols' names, in order."""
        return tuple(p.name for p in self.protocols)

    def protocol(self, name: str) -> Protocol:
        """The protocol called ``name``.

        Parameters
        ----------
        name : str
            One of :attr:`protocol_names`.

        Returns
        -------
        Protocol

        Raises
        ------
        ValueError
            If no protocol has that name.
        """
        for p in self.protocols:
            if p.name == name:
                return p
        raise ValueError(f"protocol={name!r} is not allowed; it must be one of "
                         f"{list(self.protocol_names)}")

    def figures(self, kind: str) -> LinkFigures:
        """The figures of links of ``kind``.

        Parameters
        ----------
        kind : str
            A link kind.

        Returns
        -------
        LinkFigures

        Raises
        ------
        TopologyError
            If the model has no figures for ``kind``.
        """
        for f in self.links:
            if f.kind == kind:
                return f
        raise TopologyError(f"the GPU model has no figures for link kind {kind!r}; it has "
                            f"{[f.kind for f in self.links]}")

    def call_s(self, protocol: str, algorithm: str | None = None) -> float:
        """Fixed cost of one collective call with ``protocol``, seconds.

        ``launch_s + (gpus_per_process - 1) * launch_per_gpu_s + protocol.call_s``, the
        last the algorithm's own where its :class:`AlgorithmFigures` give one.

        Parameters
        ----------
        protocol : str
            One of :attr:`protocol_names`.
        algorithm : str, optional
            The algorithm that runs.

        Returns
        -------
        float
            Seconds.

        Examples
        --------
        >>> m = GpuModel((Protocol("LL", 0.5, 6e-6),),
        ...              (LinkFigures("nvlink", 0.9, (("LL", 3e-7),)),), 2e12, launch_s=1e-6)
        >>> round(m.call_s("LL") * 1e6, 6)
        7.0
        """
        setup = self.protocol(protocol).call_s
        own = self.algorithm_figures(algorithm)
        if own is not None:
            setup = dict(own.call_s).get(protocol, setup)
        return self.launch_s + (self.gpus_per_process - 1) * self.launch_per_gpu_s + setup
