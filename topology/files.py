"""Topology files (TOML): ``load`` reads what users write, ``save`` writes what ``load`` reads.

A file::

    name = "two GPUs on a PCIe switch"
    placement = ["gpu0", "gpu1"]      # placement[rank] = device id, one rank per device
    gamma = "0.02 ns/B"               # optional: reduction cost per byte
    overhead = "5 us"                 # optional: CPU time per message at each end (LogGP o)
    # optional: a [gpu] table, the GPU terms (topology.gpu_files)

    [[devices]]
    id = "gpu0"
    kind = "gpu"
    # ... one [[devices]] per device

    [[links]]
    src = "gpu0"
    dst = "sw"
    latency = "0.5 us"                # s, ms, us, ns; the unit is required
    bandwidth = "31.5 GB/s"           # B/s, GB/s, Gb/s, GiB/s, ...; the unit is required
    kind = "pcie"                     # optional, default "link"
    duplex = true                     # optional: the same link dst -> src too

or, instead of ``[[links]]``, one link for every ordered pair of some devices (what
:func:`topology.flat` writes)::

    [mesh]
    devices = ["r0", "r1", "r2"]
    latency = "2 us"
    bandwidth = "10 GB/s"
    kind = "flat"                     # optional, default "link"

Every error names the key (``links[3].bandwidth``) and the value at fault.  Ranks sit on
devices that compute, one rank per device: a rank placed on a switch (a device whose kind
is one of :data:`SWITCH_KINDS` or ends in ``switch``), or two ranks on one device, is
rejected (the simulator would have them exchange messages over no link).
"""

from __future__ import annotations

import sys
from pathlib import Path
from reprlib import repr as brief
from typing import Any

import tomli_w

from .errors import TopologyError
from .gpu_files import gpu_from_dict, gpu_to_dict
from .model import Device, FullMesh, Link, Topology
from .tables import check_keys
from .units import format_quantity, parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["SWITCH_KINDS", "check_placement", "load", "save", "loads", "dumps", "from_dict",
           "to_dict", "read_text"]

#: device kinds that only forward traffic and cannot host a rank (besides ``*switch``)
SWITCH_KINDS: frozenset[str] = frozenset({"switch", "nvswitch", "pcie_switch", "ib_leaf",
                                          "ib_spine", "leaf", "spine"})

_TOP_KEYS = {"name": False, "placement": True, "devices": True, "links": False, "mesh": False,
             "gamma": False, "overhead": False, "gpu": False}
_DEVICE_KEYS = {"id": True, "kind": True}
_LINK_KEYS = {"src": True, "dst": True, "latency": True, "bandwidth": True, "kind": False,
              "duplex": False}
_MESH_KEYS = {"devices": True, "latency": True, "bandwidth": True, "kind": False}


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise TopologyError(f"{key} = {brief(value)} is not allowed; it must be a non-empty "
                            "string")
    return value


def _list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise TopologyError(f"{key} = {brief(value)} is not allowed; it must be an array")
    return value


def _positive(value: Any, quantity: str, key: str) -> float:
    number = parse(value, quantity, key)
    if number <= 0:
        raise TopologyError(f"{key} = {brief(value)} is not allowed; it must be > 0")
    return number


def _devices(tables: list[Any]) -> tuple[Device, ...]:
    seen: dict[str, int] = {}
    devices = []
    for i, table in enumerate(tables):
        table = check_keys(table, _DEVICE_KEYS, f"devices[{i}]")
        device_id = _string(table["id"], f"devices[{i}].id")
        if device_id in seen:
            raise TopologyError(f"devices[{i}].id = {device_id!r} duplicates "
                                f"devices[{seen[device_id]}].id; ids must be unique")
        seen[device_id] = i
        devices.append(Device(device_id, _string(table["kind"], f"devices[{i}].kind")))
    return tuple(devices)


def _links(tables: list[Any], ids: set[str]) -> tuple[Link, ...]:
    links: list[Link] = []
    for i, table in enumerate(tables):
        where = f"links[{i}]"
        table = check_keys(table, _LINK_KEYS, where)
        ends = [_string(table[end], f"{where}.{end}") for end in ("src", "dst")]
        for end, device in zip(("src", "dst"), ends):
            if device not in ids:
                raise TopologyError(f"{where}.{end} = {device!r} names no device; it must be "
                                    "the id of one of devices")
        if ends[0] == ends[1]:
            raise TopologyError(f"{where}.dst = {ends[1]!r} is its src; a link must join two "
                                "different devices")
        latency = _positive(table["latency"], "latency", f"{where}.latency")
        bandwidth = _positive(table["bandwidth"], "bandwidth", f"{where}.bandwidth")
        kind = _string(table.get("kind", "link"), f"{where}.kind")
        duplex = table.get("duplex", False)
        if not isinstance(duplex, bool):
            raise TopologyError(f"{where}.duplex = {duplex!r} is not allowed; it must be "
                                "true or false")
        links.append(Link(ends[0], ends[1], latency, bandwidth, kind))
        if duplex:
            links.append(Link(ends[1], ends[0], latency, bandwidth, kind))
    return tuple(links)


def check_placement(devices: tuple[Device, ...], placement: tuple[str, ...]) -> None:
    """Raise unless every rank sits on its own device that is not a switch.

    Parameters
    ----------
    devices : tuple of Device
        The topology's devices.
    placement : tuple of str
        ``placement[rank]`` is a device id (unknown ids are left to :class:`Topology`).

    Raises
    ------
    TopologyError
        Naming the rank and device: two ranks on one device, or a rank on a switch.

    Examples
    --------
    >>> from topology.model import Device
    >>> check_placement((Device("a", "gpu"), Device("b", "gpu")), ("a", "a"))
    Traceback (most recent call last):
    ...
    topology.errors.TopologyError: placement[1] = 'a' is also placement[0]; ...
    """
    kinds = {device.id: device.kind for device in devices}
    first: dict[str, int] = {}
    for rank, device in enumerate(placement):
        kind = kinds.get(device, "")
        if kind in SWITCH_KINDS or kind.endswith("switch"):
            raise TopologyError(f"placement[{rank}] = {device!r} is a device of kind {kind!r}, "
                                f"which only forwards traffic; place ranks on devices that "
                                f"compute (e.g. kind 'gpu' or 'cpu')")
        if device in first:
            raise TopologyError(f"placement[{rank}] = {device!r} is also placement"
                                f"[{first[device]}]; each rank needs its own device (give "
                                f"each rank a device, joined by a link with the shared "
                                f"device's bandwidth)")
        first[device] = rank


def _quantity(document: dict[str, Any], key: str, quantity: str) -> float:
    """Return the optional non-negative ``document[key]`` in base units (0 when absent)."""
    if key not in document:
        return 0.0
    number = parse(document[key], quantity, key)
    if number < 0:
        raise TopologyError(f"{key} = {document[key]!r} is not allowed; it must be >= 0")
    return number


def _mesh(table: Any, ids: set[str]) -> FullMesh:
    table = check_keys(table, _MESH_KEYS, "mesh")
    members = _list(table["devices"], "mesh.devices")
    for i, device in enumerate(members):
        if _string(device, f"mesh.devices[{i}]") not in ids:
            raise TopologyError(f"mesh.devices[{i}] = {device!r} names no device; it must be "
                                "the id of one of devices")
    if len(set(members)) != len(members):
        raise TopologyError("mesh.devices lists a device twice; each must appear once")
    return FullMesh(tuple(members), _positive(table["latency"], "latency", "mesh.latency"),
                    _positive(table["bandwidth"], "bandwidth", "mesh.bandwidth"),
                    _string(table.get("kind", "link"), "mesh.kind"))


def _any_links(document: dict[str, Any], ids: set[str]) -> tuple[Link, ...] | FullMesh:
    """The document's ``links`` or its ``mesh``: exactly one of them."""
    if ("links" in document) == ("mesh" in document):
        raise TopologyError("the key 'links' is missing" if "links" not in document else
                            "the keys 'links' and 'mesh' exclude each other; give one")
    if "mesh" in document:
        return _mesh(document["mesh"], ids)
    return _links(_list(document["links"], "links"), ids)


def from_dict(document: dict[str, Any], default_name: str = "topology") -> Topology:
    """Build a topology from a parsed file (the dict ``tomllib`` returns).

    Parameters
    ----------
    document : dict[str, Any]
        The parsed file.
    default_name : str, optional
        The topology's name when ``document`` has no ``name``.

    Returns
    -------
    Topology
        The model the document describes.

    Raises
    ------
    TopologyError
        Naming the key and value: unknown or missing keys, wrong types, values without a
        valid unit (bare numbers included), zero or negative latency or bandwidth,
        duplicate device ids, links to unknown devices, ranks placed on unknown devices, on
        switches, on a device another rank has, or unable to reach each other.
    """
    check_keys(document, _TOP_KEYS, "the top level")
    devices = _devices(_list(document["devices"], "devices"))
    links = _any_links(document, {d.id for d in devices})
    placement = tuple(_string(device, f"placement[{rank}]")
                      for rank, device in enumerate(_list(document["placement"], "placement")))
    check_placement(devices, placement)
    gamma = _quantity(document, "gamma", "gamma")
    overhead = _quantity(document, "overhead", "latency")
    name = _string(document.get("name", default_name), "name")
    gpu = gpu_from_dict(document["gpu"]) if "gpu" in document else None
    return Topology(name, devices, links, placement, gamma, overhead, gpu)


def to_dict(topology: Topology) -> dict[str, Any]:
    """Return the document :func:`from_dict` turns back into ``topology``.

    Parameters
    ----------
    topology : Topology
        The model to describe.

    Returns
    -------
    dict[str, Any]
        Quantities as strings with units; ``gamma`` and ``overhead`` only when non-zero,
        ``gpu`` only with a GPU model; every link listed one way (no ``duplex``), or a
        ``mesh`` table for a :class:`~topology.model.FullMesh`.
    """
    document: dict[str, Any] = {"name": topology.name, "placement": list(topology.placement)}
    if topology.gamma_s_per_byte:
        document["gamma"] = format_quantity(topology.gamma_s_per_byte, "gamma")
    if topology.overhead_s_per_message:
        document["overhead"] = format_quantity(topology.overhead_s_per_message, "latency")
    if topology.gpu is not None:
        document["gpu"] = gpu_to_dict(topology.gpu)
    document["devices"] = [{"id": d.id, "kind": d.kind} for d in topology.devices]
    if isinstance(topology.links, FullMesh):
        mesh = topology.links
        document["mesh"] = {"devices": list(mesh.ids),
                            "latency": format_quantity(mesh.latency_s, "latency"),
                            "bandwidth": format_quantity(mesh.bandwidth_Bps, "bandwidth"),
                            "kind": mesh.kind}
        return document
    document["links"] = [
        {"src": link.src, "dst": link.dst,
         "latency": format_quantity(link.latency_s, "latency"),
         "bandwidth": format_quantity(link.bandwidth_Bps, "bandwidth"), "kind": link.kind}
        for link in topology.links]
    return document


def loads(text: str, default_name: str = "topology") -> Topology:
    """Parse TOML ``text`` into a topology (see :func:`from_dict`).

    Parameters
    ----------
    text : str
        The file's contents.
    default_name : str, optional
        The topology's name when the text has no ``name``.

    Returns
    -------
    Topology
        The model the text describes.

    Raises
    ------
    TopologyError
        When ``text`` is not valid TOML or :func:`from_dict` rejects it.
    """
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise TopologyError(f"not valid TOML: {error}") from None
    except RecursionError:  # tomllib reads nested arrays and tables recursively
        raise TopologyError("not a topology: arrays or tables nested too deeply") from None
    return from_dict(document, default_name)


def dumps(topology: Topology, comment: str | None = None) -> str:
    """Return ``topology`` as TOML, with ``comment`` as ``#`` lines at the top.

    Parameters
    ----------
    topology : Topology
        The model to write.
    comment : str or None, optional
        Text for the header, one ``#`` line per line; None for no header.

    Returns
    -------
    str
        TOML that :func:`loads` reads back equal.
    """
    header = "".join(f"# {line}".rstrip() + "\n" for line in (comment or "").splitlines())
    return header + tomli_w.dumps(to_dict(topology))


def load(path: str | Path) -> Topology:
    """Read a topology file; errors start with the path.

    Parameters
    ----------
    path : str or Path
        The TOML file (UTF-8); its stem is the name when the file has none.

    Returns
    -------
    Topology
        The model the file describes.

    Raises
    ------
    TopologyError
        As :func:`loads`, or for a file that is not UTF-8 (:func:`read_text`), with the
        path prefixed to the message.
    OSError
        When the file cannot be read.

    Examples
    --------
    >>> import tempfile, os, topology
    >>> path = os.path.join(tempfile.mkdtemp(), "h100.toml")
    >>> topology.save(topology.dgx_h100(1), path)
    >>> topology.load(path) == topology.dgx_h100(1)
    True
    """
    path = Path(path)
    try:
        return loads(read_text(path), default_name=path.stem)
    except TopologyError as error:
        raise TopologyError(f"{path}: {error}") from None


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``.

    Parameters
    ----------
    path : Path
        The file.

    Returns
    -------
    str

    Raises
    ------
    TopologyError
        When the file is not UTF-8, naming the first byte that is not and where it is.
    OSError
        When the file cannot be read.
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TopologyError(f"not UTF-8 text: byte 0x{data[error.start]:02x} at offset "
                            f"{error.start} ({error.reason}); save the file as UTF-8") from None


def save(topology: Topology, path: str | Path, comment: str | None = None) -> None:
    """Write ``topology`` to ``path`` as TOML that :func:`load` reads back equal.

    Parameters
    ----------
    topology : Topology
        The model to write.
    path : str or Path
        Destination file (UTF-8); overwritten.
    comment : str or None, optional
        Header text, written as ``#`` lines (see :func:`dumps`).
    """
    Path(path).write_text(dumps(topology, comment), encoding="utf-8")
