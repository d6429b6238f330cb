"""The ``[gpu]`` table of topology files: a :class:`~topology.GpuModel` as TOML.

::

    [gpu]
    reduce = "3.35 TB/s"              # GPU reduction throughput, bytes reduced per second
    launch = "0 us"                   # optional: host launch per call (default 0)
    launch_per_gpu = "2.1 us"         # optional: per GPU after the first of a process
    gpus_per_process = 1              # optional (nccl-tests -g)
    channels = 16                     # optional: NCCL's channels per GPU (default 1)
    qps_per_connection = 1            # optional: NCCL_IB_QPS_PER_CONNECTION (default 1)
    nccl_kind = "H100"                # optional: the GPU whose NCCL tuning tables apply
                                      # ("A100", "H100"; default none: NCCL's model unknown)
    default_protocol = "Simple"       # optional (default the last protocol)

    [[gpu.protocols]]                 # one per protocol
    name = "LL"
    bandwidth_fraction = 0.37
    call = "6.6 us"                   # setup per call with this protocol
    slot = "32 KiB"                   # optional: data of one FIFO slot (default none:
                                      # every message pays its route's full latency)

    [[gpu.links]]                     # one per link kind of the topology
    kind = "nvlink"
    efficiency = 0.87                 # achievable fraction of the line rate
    latency = { LL = "0.3 us", LL128 = "0.95 us", Simple = "1.7 us" }   # per link crossed
    protocol_fraction = { LL128 = 0.55 }   # optional: a protocol's fraction on this kind
    flow = "20 GB/s"                  # optional: one queue pair's rate at a NIC (default none)
    in_step = true                    # optional: NCCL's channels cross this kind in step
                                      # (default true; false: out of step, see LinkFigures)

    [[gpu.algorithms]]                # optional: figures of one algorithm, each key optional
    name = "tree"
    call = { LL = "6.8 us" }          # in place of the protocols' call
    bandwidth_fraction = { LL = 0.242, Simple = 0.92 }   # in place of theirs
    latency = { ib = { LL = "2.5 us" } }   # per link kind and protocol, in place of theirs

To change one figure of a preset, ``topology.save`` it and edit the file.
"""

from __future__ import annotations

from reprlib import repr as brief
from typing import Any, Callable, TypeVar

from .errors import TopologyError
from .gpu import AlgorithmFigures, GpuModel, LinkFigures, Protocol
from .tables import check_keys
from .units import format_quantity, parse

__all__ = ["gpu_from_dict", "gpu_to_dict"]

_GPU_KEYS = {"reduce": True, "launch": False, "launch_per_gpu": False,
             "gpus_per_process": False, "channels": False, "qps_per_connection": False,
             "nccl_kind": False, "default_protocol": False,
             "protocols": True, "links": True, "algorithms": False}
_PROTOCOL_KEYS = {"name": True, "bandwidth_fraction": True, "call": True, "slot": False}
_FIGURE_KEYS = {"kind": True, "efficiency": True, "latency": True, "protocol_fraction": False,
                "flow": False, "in_step": False}
_ALGORITHM_KEYS = {"name": True, "call": False, "bandwidth_fraction": False, "latency": False}

T = TypeVar("T")


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise TopologyError(f"{where} = {value!r} is not allowed; it must be a non-empty "
                            "array of tables")
    return value


def _at(where: str, build: Callable[[], T]) -> T:
    """``build()``, its errors prefixed with ``where``, the table's place in the file (the
    model's own checks name the field and the value)."""
    try:
        return build()
    except (TopologyError, ValueError, TypeError) as error:
        raise TopologyError(f"{where}: {error}") from None


def _protocol(table: Any, where: str) -> Protocol:
    table = check_keys(table, _PROTOCOL_KEYS, where)
    slot = table.get("slot")
    call = parse(table["call"], "latency", f"{where}.call")
    slot = None if slot is None else parse(slot, "size", f"{where}.slot")
    return _at(where, lambda: Protocol(table["name"], table["bandwidth_fraction"], call, slot))


def _figures(table: Any, where: str) -> LinkFigures:
    table = check_keys(table, _FIGURE_KEYS, where)
    fractions = _mapping(table.get("protocol_fraction", {}), f"{where}.protocol_fraction",
                         "protocol = fraction")
    latency = _latencies(table["latency"], f"{where}.latency")
    flow = None if "flow" not in table else parse(table["flow"], "bandwidth", f"{where}.flow")
    return _at(where, lambda: LinkFigures(table["kind"], table["efficiency"], latency,
                                          tuple(fractions.items()), flow,
                                          table.get("in_step", True)))


def _mapping(value: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TopologyError(f"{where} = {value!r} is not allowed; it must be a table of "
                            f"{what}")
    return value


def _latencies(value: Any, where: str) -> tuple[tuple[str, float], ...]:
    return tuple((name, parse(v, "latency", f"{where}.{name}"))
                 for name, v in _mapping(value, where, "protocol = latency").items())


def _algorithm(table: Any, where: str) -> AlgorithmFigures:
    table = check_keys(table, _ALGORITHM_KEYS, where)
    latency = _mapping(table.get("latency", {}), f"{where}.latency",
                       "link kind = { protocol = latency }")
    call = _latencies(table.get("call", {}), f"{where}.call")
    fractions = tuple(_mapping(table.get("bandwidth_fraction", {}),
                               f"{where}.bandwidth_fraction", "protocol = fraction").items())
    latency_s = tuple((kind, _latencies(per, f"{where}.latency.{kind}"))
                      for kind, per in latency.items())
    return _at(where, lambda: AlgorithmFigures(table["name"], call, fractions, latency_s))


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
    table = check_keys(table, _GPU_KEYS, "gpu")
    protocols = tuple(_protocol(t, f"gpu.protocols[{i}]")
                      for i, t in enumerate(_array(table["protocols"], "gpu.protocols")))
    links = tuple(_figures(t, f"gpu.links[{i}]")
                  for i, t in enumerate(_array(table["links"], "gpu.links")))
    algorithms = tuple(_algorithm(t, f"gpu.algorithms[{i}]")
                       for i, t in enumerate(_array(table["algorithms"], "gpu.algorithms")
                                             if "algorithms" in table else ()))
    default = table.get("default_protocol", "")
    names = [p.name for p in protocols]
    if default != "" and default not in names:
        raise TopologyError(f"gpu.default_protocol = {brief(default)} is not allowed; it must "
                            f"be one of gpu.protocols' names: {', '.join(names)}")
    times = {key: parse(table.get(key, 0.0), kind, f"gpu.{key}")
             for key, kind in (("reduce", "bandwidth"), ("launch", "latency"),
                               ("launch_per_gpu", "latency"))}
    return _at("gpu", lambda: GpuModel(
        protocols, links, reduce_Bps=times["reduce"], launch_s=times["launch"],
        launch_per_gpu_s=times["launch_per_gpu"],
        gpus_per_process=table.get("gpus_per_process", 1), default_protocol=default,
        algorithms=algorithms, channels=table.get("channels", 1),
        qps_per_connection=table.get("qps_per_connection", 1),
        nccl_kind=table.get("nccl_kind", "")))


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
        "channels": model.channels,
        "qps_per_connection": model.qps_per_connection,
        **({"nccl_kind": model.nccl_kind} if model.nccl_kind else {}),
        "default_protocol": model.default_protocol,
        "protocols": [{"name": p.name, "bandwidth_fraction": p.bandwidth_fraction,
                       "call": format_quantity(p.call_s, "latency"),
                       **({} if p.slot_bytes is None
                          else {"slot": format_quantity(p.slot_bytes, "size")})}
                      for p in model.protocols],
        "links": [{"kind": f.kind, "efficiency": f.efficiency,
                   "latency": {name: format_quantity(s, "latency") for name, s in f.latency_s},
                   **({"protocol_fraction": dict(f.protocol_fraction)}
                      if f.protocol_fraction else {}),
                   **({} if f.flow_Bps is None
                      else {"flow": format_quantity(f.flow_Bps, "bandwidth")}),
                   **({} if f.in_step else {"in_step": False})}
                  for f in model.links],
        **({"algorithms": [_algorithm_dict(a) for a in model.algorithms]}
           if model.algorithms else {}),
    }


def _algorithm_dict(figures: AlgorithmFigures) -> dict[str, Any]:
    """The ``[[gpu.algorithms]]`` table of ``figures`` (keys with no entry left out)."""
    table = {"call": {n: format_quantity(s, "latency") for n, s in figures.call_s},
             "bandwidth_fraction": dict(figures.bandwidth_fraction),
             "latency": {kind: {n: format_quantity(s, "latency") for n, s in per}
                         for kind, per in figures.latency_s}}
    return {"name": figures.algorithm, **{k: v for k, v in table.items() if v}}
