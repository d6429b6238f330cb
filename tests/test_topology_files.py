"""Topology files: units, every validation error, save/load round trips."""

import math

import pytest

import topology
from topology import TopologyError
from topology.units import format_quantity, parse

GOOD = """
name = "pair"
placement = ["a", "b"]
gamma = "0.05 ns/B"

[[devices]]
id = "a"
kind = "gpu"

[[devices]]
id = "b"
kind = "gpu"

[[devices]]
id = "sw"
kind = "pcie_switch"

[[links]]
src = "a"
dst = "sw"
latency = "500 ns"
bandwidth = "200 Gb/s"
kind = "pcie"
duplex = true

[[links]]
src = "b"
dst = "sw"
latency = "1.5e-6 s"
bandwidth = "300 GB/s"
duplex = true
"""


@pytest.mark.parametrize("text, quantity, expected", [
    ("300 GB/s", "bandwidth", 300e9), ("200 Gb/s", "bandwidth", 25e9),
    ("1 GiB/s", "bandwidth", 2.0**30), ("8 b/s", "bandwidth", 1.0), ("5e9 B/s", "bandwidth", 5e9),
    ("1.5 us", "latency", 1.5e-6), ("500 ns", "latency", 5e-7), ("2ms", "latency", 2e-3),
    (" 1e-6 s ", "latency", 1e-6), ("0.02 ns/B", "gamma", 2e-11), ("3 s", "latency", 3.0),
])
def test_units_parse(text, quantity, expected):
    assert parse(text, quantity, "k") == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("number", [450e9, 25e9, 31.50769230769231e9, 1.5e-6, 3.3e-7, 1 / 3,
                                    7e-12, 123456789.123])
@pytest.mark.parametrize("quantity", ["latency", "bandwidth", "gamma"])
def test_units_format_parses_back_exactly(number, quantity):
    shown = format_quantity(number, quantity)
    assert parse(shown, quantity, "k") == number


def test_load_good_file(tmp_path):
    path = tmp_path / "pair.toml"
    path.write_text(GOOD)
    t = topology.load(path)
    assert t.name == "pair" and t.nranks == 2 and len(t.links) == 4
    assert t.gamma_s_per_byte == pytest.approx(5e-11)
    assert t.overhead_s_per_message == 0.0
    with_overhead = topology.loads(GOOD.replace('gamma = "0.05 ns/B"', 'overhead = "2.5 us"'))
    assert with_overhead.overhead_s_per_message == pytest.approx(2.5e-6)
    assert t.hops(0, 1) == 2
    assert t.alpha(0, 1) == pytest.approx(2e-6)
    assert t.beta(0, 1) == pytest.approx(1 / 25e9)  # the 200 Gb/s link is the bottleneck
    assert t.links[2].kind == "link"  # default kind


def _edit(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


BAD = [
    (_edit('gamma = "0.05 ns/B"', 'gama = 1'), "unknown key 'gama'"),
    (_edit('kind = "pcie_switch"', 'kind = "pcie_switch"\nports = 4'),
     r"devices\[2\]: unknown key 'ports'"),
    (_edit('kind = "pcie"', 'knd = "pcie"'), r"links\[0\]: unknown key 'knd'"),
    (_edit('bandwidth = "200 Gb/s"', 'bandwidth = "0 Gb/s"'),
     r"links\[0\].bandwidth = '0 Gb/s' is not allowed; it must be > 0"),
    (_edit('bandwidth = "300 GB/s"', 'bandwidth = "-3e9 B/s"'), r"links\[1\].bandwidth = '-3e9 B/s'"),
    (_edit('latency = "500 ns"', 'latency = "0 ns"'), r"links\[0\].latency = '0 ns'"),
    (_edit('latency = "1.5e-6 s"', 'latency = "-1.5 us"'), r"links\[1\].latency = '-1.5 us'"),
    (_edit('latency = "1.5e-6 s"', 'latency = 1.5e-6'),
     r"links\[1\].latency = 1.5e-06 has no unit; write it as a string with one, e.g. '1.5e-06 s'"),
    (_edit('bandwidth = "300 GB/s"', 'bandwidth = 450'),
     r"links\[1\].bandwidth = 450 has no unit; .*allowed units: B/s, KB/s"),
    (_edit('placement = ["a", "b"]', 'placement = ["a", "a"]'),
     r"placement\[1\] = 'a' is also placement\[0\]; each rank needs its own device"),
    (_edit('placement = ["a", "b"]', 'placement = ["a", "sw"]'),
     r"placement\[1\] = 'sw' is a device of kind 'pcie_switch', which only forwards"),
    (_edit('latency = "500 ns"', 'latency = "500 parsec"'), "unknown unit 'parsec'"),
    (_edit('bandwidth = "200 Gb/s"', 'bandwidth = "fast"'), r"links\[0\].bandwidth = 'fast'"),
    (_edit('latency = "500 ns"', 'latency = "inf s"'), r"links\[0\].latency = 'inf s'"),
    (_edit('id = "sw"', 'id = "a"'), r"devices\[2\].id = 'a' duplicates devices\[0\].id"),
    (_edit('dst = "sw"', 'dst = "switch"'), r"links\[0\].dst = 'switch' names no device"),
    (_edit('src = "b"', 'src = "c"'), r"links\[1\].src = 'c' names no device"),
    (_edit('dst = "sw"', 'dst = "a"'), r"links\[0\].dst = 'a' is its src"),
    (_edit('placement = ["a", "b"]', 'placement = ["a", "c"]'),
     r"placement\[1\] = 'c' names no device"),
    (_edit('bandwidth = "300 GB/s"\nduplex = true', 'bandwidth = "300 GB/s"'),
     r"placement\[0\] = 'a' cannot reach placement\[1\] = 'b'"),
    (_edit('duplex = true', 'duplex = "yes"'), r"links\[0\].duplex = 'yes'"),
    (_edit('placement = ["a", "b"]', ''), "the key 'placement' is missing"),
    (_edit('placement = ["a", "b"]', 'placement = []'), r"placement = \(\) is not allowed"),
    (_edit('gamma = "0.05 ns/B"', 'gamma = "-1 ns/B"'), "gamma = '-1 ns/B' is not allowed"),
    (_edit('gamma = "0.05 ns/B"', 'gamma = 0'), "gamma = 0 has no unit"),
    (_edit('gamma = "0.05 ns/B"', 'overhead = "-1 us"'), "overhead = '-1 us' is not allowed"),
    (_edit('gamma = "0.05 ns/B"', 'overhead = "3 GB/s"'), "overhead"),
    (_edit('id = "a"', 'id = ""'), r"devices\[0\].id = '' is not allowed"),
    ("name = [", "not valid TOML"),
]


@pytest.mark.parametrize("text, message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_validation_errors_name_key_and_value(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(TopologyError, match=message) as error:
        topology.load(path)
    assert str(error.value).startswith(str(path))
    assert isinstance(error.value, ValueError)


def test_unreachable_across_a_switch():
    """b reaches a only through GPU c, and GPUs never forward traffic."""
    d = topology.Device
    with pytest.raises(TopologyError, match=r"placement\[1\] = 'b' cannot reach placement\[0\]"):
        topology.Topology("t", (d("a", "gpu"), d("b", "gpu"), d("c", "gpu")),
                          (topology.Link("a", "b", 1e-6, 1e9, "x"),
                           topology.Link("b", "c", 1e-6, 1e9, "x"),
                           topology.Link("c", "a", 1e-6, 1e9, "x")), ("a", "b"))


@pytest.mark.parametrize("field, value, message", [
    ("latency_s", 0.0, r"links\[0\].latency_s = 0.0"),
    ("bandwidth_Bps", math.inf, r"links\[0\].bandwidth_Bps = inf"),
    ("dst", "z", r"links\[0\].dst = 'z' names no device"),
])
def test_model_validation(field, value, message):
    d = topology.Device
    link = {"src": "a", "dst": "b", "latency_s": 1e-6, "bandwidth_Bps": 1e9, "kind": "x",
            field: value}
    with pytest.raises(TopologyError, match=message):
        topology.Topology("t", (d("a", "gpu"), d("b", "gpu")),
                          (topology.Link(**link), topology.Link("b", "a", 1e-6, 1e9, "x")),
                          ("a", "b"))


@pytest.mark.parametrize("make", [
    lambda: topology.flat(5, 2.5e-6, 1 / 12.5e9),
    lambda: topology.dgx_a100(2),
    lambda: topology.dgx_h100(3, oversubscription=3.0, nodes_per_leaf=2, spines=3),
    lambda: topology.pcie_node(6, gpus_per_switch=3),
])
def test_save_load_round_trip(tmp_path, make):
    original = make()
    original = topology.Topology(original.name, original.devices, original.links,
                                 original.placement, gamma_s_per_byte=1 / 37e9,
                                 overhead_s_per_message=3.5e-6)
    path = tmp_path / "t.toml"
    topology.save(original, path, comment="a comment\nover two lines")
    assert path.read_text().startswith("# a comment\n# over two lines\n")
    loaded = topology.load(path)
    assert loaded == original
    pairs = [(a, b) for a in range(original.nranks) for b in range(original.nranks)]
    assert [loaded.route(a, b) for a, b in pairs] == [original.route(a, b) for a, b in pairs]


def test_a_mesh_machine_is_written_as_a_mesh_table() -> None:
    text = topology.dumps(topology.mesh(1024, 5e-6, 4e-11))
    assert "[mesh]" in text and "[[links]]" not in text and len(text) < 100_000  # O(nranks)
    assert 'latency = "5 us"' in text and 'bandwidth = "25 GB/s"' in text
    assert topology.loads(text) == topology.mesh(1024, 5e-6, 4e-11)


def test_a_flat_machine_round_trips_with_its_ports() -> None:
    original = topology.flat(64, 5e-6, 4e-11)
    text = topology.dumps(original)
    assert text.count("src = ") == 128 and text.count('latency = "2.5 us"') == 128
    loaded = topology.loads(text)
    assert loaded == original and loaded.alpha(3, 60) == 5e-6
    assert [loaded.route(0, b) for b in range(64)] == [original.route(0, b) for b in range(64)]


MESH = """
placement = ["a", "b"]
devices = [{id = "a", kind = "gpu"}, {id = "b", kind = "gpu"}]
[mesh]
devices = ["a", "b"]
latency = "1 us"
bandwidth = "10 GB/s"
"""


@pytest.mark.parametrize("text, message", [
    (MESH.replace('devices = ["a", "b"]', 'devices = ["a", "c"]'),
     r"mesh.devices\[1\] = 'c' names no device"),
    (MESH.replace('devices = ["a", "b"]', 'devices = ["a", "a"]'), "lists a device twice"),
    (MESH.replace('latency = "1 us"', 'latency = "0 us"'), "mesh.latency = '0 us'"),
    (MESH.replace('bandwidth = "10 GB/s"', 'bandwidth = "10 GB/s"\nports = 2'),
     "mesh: unknown key 'ports'"),
    (MESH + '[[links]]\nsrc = "a"\ndst = "b"\nlatency = 1e-6\nbandwidth = 1e9\n',
     "the keys 'links' and 'mesh' exclude each other"),
    (MESH.split("[mesh]")[0], "the key 'links' is missing"),
])
def test_mesh_tables_are_checked(text: str, message: str) -> None:
    assert topology.loads(MESH).links == topology.FullMesh(("a", "b"), 1e-6, 1e10, "link")
    with pytest.raises(TopologyError, match=message):
        topology.loads(text)


def _gpu_file(tmp_path, algorithms: str) -> str:
    """A DGX H100 file with ``algorithms`` in place of its ``[[gpu.algorithms]]`` tables."""
    text = topology.dumps(topology.dgx_h100(1))
    head, _, rest = text.partition("[[gpu.algorithms]]")
    tail = rest[rest.index("\n[", 1):] if "\n[" in rest else ""
    path = tmp_path / "h100.toml"
    path.write_text(head + algorithms + tail)
    return str(path)


def test_gpu_algorithm_figures_name_a_known_algorithm(tmp_path):
    from collectives.registry import names
    from simulator.analytic import price_one

    machine = topology.load(_gpu_file(tmp_path, '[[gpu.algorithms]]\nname = "butterfly"\n'))
    with pytest.raises(TopologyError) as error:  # the simulator knows the algorithms
        price_one("allreduce", "ring", machine, 1024)
    assert str(error.value) == ("gpu.algorithms: algorithm = 'butterfly' is not allowed; it "
                                f"must be one of {', '.join(names())}")
    with pytest.raises(TopologyError, match="algorithm = 'Ring!' is not allowed; it must be "
                                            "an algorithm's name"):
        topology.load(_gpu_file(tmp_path, '[[gpu.algorithms]]\nname = "Ring!"\n'))
    with pytest.raises(TopologyError, match=r"gpu.algorithms\[0\]: algorithm = 7 is not"):
        topology.load(_gpu_file(tmp_path, "[[gpu.algorithms]]\nname = 7\n"))
    text = topology.dumps(topology.dgx_h100(1)).replace('default_protocol = "Simple"',
                                                        'default_protocol = "Fast"')
    with pytest.raises(TopologyError, match="gpu.default_protocol = 'Fast' is not allowed; "
                                            "it must be one of gpu.protocols' names: LL, "):
        topology.loads(text)


def test_files_that_are_not_utf8_or_nest_too_deeply_are_one_error_naming_the_file(tmp_path):
    latin = tmp_path / "latin.toml"
    latin.write_bytes(GOOD.replace('"pcie"', '"pcie caf\xe9"').encode("latin-1"))
    with pytest.raises(TopologyError) as error:
        topology.load(latin)
    assert str(error.value).startswith(f"{latin}: not UTF-8 text: byte 0xe9 at offset ")
    nested = tmp_path / "nested.toml"
    nested.write_text("placement = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(TopologyError) as error:
        topology.load(nested)
    assert str(error.value) == f"{nested}: not a topology: arrays or tables nested too deeply"
