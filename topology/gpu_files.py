"""The ``[gpu]`` table of topology files: a :class:`~topology.GpuModel` as TOML.

::

    [gpu]
    reduce = "3.35 TB/s"              # GPU reduction throughput, bytes reduced per second
    launch = "0 us"                   # optional: host launch per call (default 0)
    launch_per_gpu = "2.1 us"         # optional: per GPU after the first of a process
    gpus_per_process = 1              # optional (nccl-tests -g)
    default_protocol = "Simple"       # optional (default the last protocol)

    [[gpu.protocols]]                 # one per protocol
    name = "LL"
    bandwidth_fraction = 0.37
    call = "6.6 us"                   # setup per call with this protocol

    [[gpu.links]]                     # one per link kind of the topology
    kind = "nvlink"
    efficiency = 0.87                 # achievable fraction of the line rate
    latency = { LL = "0.3 us", LL128 = "0.95 us", Simple = "1.7 us" }   # per link crossed
    protocol_fraction = { LL128 = 0.55 }   # optional: a protocol's fraction on this kind

To change one figure of a preset, ``topology.save`` it and edit the file.
"""

from __future__ import annotations

from typing import Any

from .errors import TopologyError
from .gpu import GpuModel, LinkFigures, Protocol
from .units import format_quantity, parse

__all__ = ["gpu_from_dict", "gpu_to_dict"]

_GPU_KEYS = {"reduce": True, "launch": False, "launch_per_gpu": False,
             "gpus_per_process": False, "default_protocol": False, "protocols": True,
             "links": True}
_PROTOCOL_KEYS = {"name": True, "bandwidth_fraction": True, "call": True}
_FIGURE_KEYS = {"kind": True, "efficiency": True, "latency": True, "protocol_fraction": False}


def _table(value: Any, allowed: dict[str, bool], where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TopologyError(f"{where} = {value!r} is not allowed; it must be a table")
    for key in value:
        if key not in allowed:
            raise TopologyError(f"{where}: unknown key {key!r} (= {value[key]!r}); allowed "
                                f"keys: {', '.join(allowed)}")
    for key, required in allowed.items():
        if required and key not in value:
            raise TopologyError(f"{where}: the key {key!r} is missing")
    return value


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise TopologyError(f"{where} = {value!r} is not allowed; it must be a non-empty "
                            "array of tables")
    return value


def _protocol(table: Any, where: str) -> Protocol:
    table = _table(table, _PROTOCOL_KEYS, where)
    return Protocol(table["name"], table["bandwidth_fraction"],
                    parse(table["call"], "latency", f"{where}.call"))


def _figures(table: Any, where: str) -> LinkFigures:
    table = _table(table, _FIGURE_KEYS, where)
    latency = table["latency"]
    if not isinstance(latency, dict):
        raise TopologyError(f"{where}.latency = {latency!r} is not allowed; it must be a "
                            "table of protocol = latency")
    fractions = table.get("protocol_fraction", {})
    if not isinstance(fractions, dict):
        raise TopologyError(f"{where}.protocol_fraction = {fractions!r} is not allowed; it "
                            "must be a table of protocol = fraction")
    return LinkFigures(table["kind"], table["efficiency"],
                       tuple((name, parse(value, "latency", f"{where}.latency.{name}"))
                             for name, value in latency.items()),
                       tuple(fractions.items()))


def gpu_from_dict(table: Any) -> GpuModel:
    """Build a GPU model from a file's ``[gpu]`` table.

    Parameters
    ----------
    table : dict
        The parsed table.

    Returns
    -------
    GpuModel

    Raises
    ------
    TopologyError
        Naming the key and value: unknown or missing keys, values without a valid unit or
        out of range (see :class:`~topology.GpuModel`).
    """
    table = _table(table, _GPU_KEYS, "gpu")
    protocols = tuple(_protocol(t, f"gpu.protocols[{i}]")
                      for i, t in enumerate(_array(table["protocols"], "gpu.protocols")))
    links = tuple(_figures(t, f"gpu.links[{i}]")
                  for i, t in enumerate(_array(table["links"], "gpu.links")))
    return GpuModel(protocols, links,
                    reduce_Bps=parse(table["reduce"], "bandwidth", "gpu.reduce"),
                    launch_s=parse(table.get("launch", 0.0), "latency", "gpu.launch"),
                    launch_per_gpu_s=parse(table.get("launch_per_gpu", 0.0), "latency",
                                           "gpu.launch_per_gpu"),
                    gpus_per_process=table.get("gpus_per_process", 1),
                    default_protocol=table.get("default_protocol", ""))


def gpu_to_dict(model: GpuModel) -> dict[str, Any]:
    """Return the ``[gpu]`` table :func:`gpu_from_dict` turns back into ``model``.

    Parameters
    ----------
    model : GpuModel
        The figures to describe.

    Returns
    -------
    dict[str, Any]
        Quantities as strings with units where one reproduces them exactly.
    """
    return {
        "reduce": format_quantity(model.reduce_Bps, "bandwidth"),
        "launch": format_quantity(model.launch_s, "latency"),
        "launch_per_gpu": format_quantity(model.launch_per_gpu_s, "latency"),
        "gpus_per_process": model.gpus_per_process,
        "default_protocol": model.default_protocol,
        "protocols": [{"name": p.name, "bandwidth_fraction": p.bandwidth_fraction,
                       "call": format_quantity(p.call_s, "latency")} for p in model.protocols],
        "links": [{"kind": f.kind, "efficiency": f.efficiency,
                   "latency": {name: format_quantity(s, "latency") for name, s in f.latency_s},
                   **({"protocol_fraction": dict(f.protocol_fraction)}
                      if f.protocol_fraction else {})}
                  for f in model.links],
    }
