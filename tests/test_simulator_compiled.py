"""The compiled engine gives the event engine's result, exactly, and the same errors."""

from __future__ import annotations

import pytest

import topology
from collectives import DeadlockError, Recv, Schedule, ScheduleError, Send, Step, \
    build_schedule
from simulator import simulate
from topology import Topology

from .reference import ALLREDUCE, SERVED, explicit_mesh

pytestmark = pytest.mark.xdist_group("compiled")  # one worker compiles (or loads) the engine

ALPHA, BETA = 1e-6, 1e-9


def _with_overhead(base: Topology, overhead: float) -> Topology:
    return Topology(base.name, base.devices, base.links, base.placement,
                    base.gamma_s_per_byte, overhead)


MACHINES = {
    "dgx_h100x2": topology.dgx_h100(nodes=2),  # NVSwitch ports and rails: contention
    "pcie": topology.pcie_node(),  # a shared PCIe tree
    "flat_with_overhead": _with_overhead(topology.flat(7, ALPHA, BETA), 3e-6),
}


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_both_engines_give_the_same_result(machine: str, collective: str) -> None:
    topo = MACHINES[machine]
    for algorithm in (a for a, c in SERVED if c == collective):
        for p in sorted({1, 2, 3, 5, topo.nranks}):
            for count in (0, 1, 1000, 1 << 20):
                schedule = build_schedule(collective, algorithm, p, count)
                events = simulate(schedule, topo, trace=True, engine="events")
                compiled = simulate(schedule, topo, trace=True, engine="compiled")
                # every time, byte and transfer, in the same order of arrival
                assert compiled == events, (algorithm, p, count)


def test_mesh_runs_compiled_as_the_explicit_full_mesh() -> None:
    mesh, explicit = topology.mesh(6, ALPHA, BETA), explicit_mesh(6, ALPHA, BETA)
    for algorithm in ALLREDUCE:
        schedule = build_schedule("allreduce", algorithm, 6, 1 << 16)
        assert simulate(schedule, mesh, trace=True, engine="compiled") == \
            simulate(schedule, explicit, trace=True, engine="compiled")


def test_many_segments_contending_on_two_nodes_agree() -> None:
    cluster = topology.dgx_h100(nodes=2)
    for algorithm in ("tree", "pipeline"):
        schedule = build_schedule("allreduce", algorithm, 16, 1 << 24, segments=64)
        events = simulate(schedule, cluster, trace=False, engine="events")
        assert simulate(schedule, cluster, trace=False, engine="compiled") == events


def test_many_pieces_of_a_message_ending_together_agree() -> None:
    # 8 channels cut each rhd message at the blocks it spans: pieces on one route that
    # end at one instant, each ending with the others still on the shared links
    cluster = topology.dgx_h100(nodes=2)
    orders = topology.channels.node_major(cluster, 8)
    for collective in ("reduce_scatter", "allgather"):
        schedule = build_schedule(collective, "rhd", 16, 1 << 16, channels=8, order=orders)
        events = simulate(schedule, cluster, trace=True, engine="events")
        assert simulate(schedule, cluster, trace=True, engine="compiled") == events


def test_flows_ending_one_by_one_on_a_shared_port_speed_up_the_rest() -> None:
    # rank 0's port carries three messages at once; each that ends leaves the port to
    # the others, which the sharing must see again after every end
    sends = [Send(peer, 0, 8 * peer) for peer in (1, 2, 3)]
    schedule = _steps([sends], *[[[Recv(0, 0, 8 * peer)]] for peer in (1, 2, 3)])
    port = topology.flat(4, ALPHA, BETA)
    events = simulate(schedule, port, trace=True, engine="events")
    # the last 32 bytes alone at the port's full rate
    assert events.transfers[2].end_s - events.transfers[1].end_s == pytest.approx(32 * BETA)
    assert simulate(schedule, port, trace=True, engine="compiled") == events


def _steps(*ranks: list[list]) -> Schedule:
    return Schedule.from_steps("allgather", "hand", 64, [[Step(tuple(ops)) for ops in r]
                                                         for r in ranks])


def test_a_schedule_that_cannot_complete_raises_the_event_engines_error() -> None:
    flat = topology.flat(2, ALPHA, BETA)
    with pytest.raises(ScheduleError, match="unmatched send"):
        simulate(_steps([[Send(1, 0, 4)]], [[]]), flat, engine="compiled")
    crossed = _steps([[Recv(1, 0, 4)], [Send(1, 0, 4)]], [[Recv(0, 0, 4)], [Send(0, 0, 4)]])
    with pytest.raises(DeadlockError):
        simulate(crossed, flat, engine="compiled")
    with pytest.raises(ScheduleError, match="length"):
        simulate(_steps([[Send(1, 0, 4)]], [[Recv(0, 0, 5)]]), flat, engine="compiled")
    with pytest.raises(ScheduleError, match="peer 5"):
        simulate(_steps([[Send(5, 0, 4)]], [[Recv(0, 0, 4)]]), flat, engine="compiled")
    with pytest.raises(ScheduleError, match=f"peer {2**40}"):  # beyond the int32 peers
        simulate(_steps([[Send(2**40, 0, 4)]], [[Recv(0, 0, 4)]]), flat, engine="compiled")


def test_an_unknown_engine_is_named() -> None:
    schedule = build_schedule("allreduce", "ring", 2, 8)
    with pytest.raises(ValueError, match="engine='gpu'.*auto, events, compiled"):
        simulate(schedule, topology.flat(2, ALPHA, BETA), engine="gpu")


def test_a_cold_cache_compiles_once_and_says_so(monkeypatch, tmp_path) -> None:
    import io
    import os
    import subprocess
    import sys

    from simulator import jit

    jit.prepare()  # compiled or loaded, in this process
    assert jit.uncached() == [] and jit.prepare() is None  # the cache holds it: silent
    said = io.StringIO()
    monkeypatch.setattr(jit, "_prepared", False)
    monkeypatch.setattr(jit, "_cached", lambda dispatcher: False)  # as after an install
    seconds = jit.prepare(said)
    lines = said.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("collsim: compiling the simulator's engine")
    assert lines[1] == f"collsim: compiled the simulator's engine in {seconds:.1f} s"
    assert jit.prepare(said) is None and len(said.getvalue().splitlines()) == 2  # once
    # a fresh cache holds none of the functions Python calls; those only compiled code
    # calls are not cached (their callers hold their code)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", "from simulator import jit; "
                          "print(*jit.uncached())"], env=env, capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert set(out.split()) == {"simulator.compiled._simulate"} | {
        f"simulator.flatten.{name}" for name in
        ("_merge", "_table_checks", "_end_keys", "_write_pairs", "_pair_messages")}


_FIRST_RUNS = """
from numba.core import event

import topology
from collectives import Recv, Schedule, Send, Step, build_schedule
from simulator import simulate
from simulator.jit import prepare


class Seen(event.Listener):
    def __init__(self):
        self.names = []

    def on_start(self, e):
        self.names.append(e.data["dispatcher"].py_func.__qualname__)

    def on_end(self, e):
        pass


class Printed(Seen):
    def on_start(self, e):
        print(e.data["dispatcher"].py_func.__qualname__)


preparing = Seen()
event.register("numba:compile", preparing)
assert prepare() is not None  # a cold cache: compiles
event.unregister("numba:compile", preparing)
names = preparing.names  # Numba's own functions are named "<function>.<locals>.impl"
for name in sorted({name for name in names if "<locals>" not in name}):
    if names.count(name) > 1:  # the engine's functions: once each
        print("twice:", name)
for name in names:  # NumPy's allocations and Python's min and max: lowered in their
    # callers (simulator.jit.empty, smaller, larger)
    if name.startswith(("ol_np_", "impl_np_", "ol_min.", "ol_max.")):
        print("compiled:", name)
event.register("numba:compile", Printed())  # what compiles from now on is printed
ring = build_schedule("allreduce", "ring", 8, 1 << 12)  # read from its lanes
steps = Schedule.from_steps("allreduce", "hand", 8, [[Step((Send(1, 0, 8),))],
                                                     [Step((Recv(0, 0, 8, True),))]])
flat = topology.flat(8, 1e-6, 1e-9)
busy = topology.Topology("busy", flat.devices, flat.links, flat.placement,
                         flat.gamma_s_per_byte, 1e-6)  # an overhead per message
for schedule in (ring, steps):
    for machine in (topology.dgx_h100(nodes=2), busy):
        for trace in (False, True):
            simulate(schedule, machine, trace=trace, engine="compiled")
"""


def test_the_first_runs_after_prepare_compile_nothing(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}  # as after an install
    out = subprocess.run([sys.executable, "-c", _FIRST_RUNS], env=env, capture_output=True,
                         text=True, check=True, timeout=300).stdout
    # prepare() compiled every function these simulations call, each once, and none of
    # NumPy's allocation functions nor Python's min and max
    assert out == ""


_SUBSCRIPTS = """
import operator

import numpy as np
from numba import njit
from numba.core.typing import templates

from simulator import jit  # as the compiled engine's first run imports it

tried = []
generic = templates._OverloadFunctionTemplate.generic


def counted(self, args, kws):
    if self.key in (operator.getitem, operator.setitem):
        tried.append(self.key)
    return generic(self, args, kws)


templates._OverloadFunctionTemplate.generic = counted


@njit
def shift(a, i):
    a[i] = a[i + 1]


shift(np.zeros(3), 0)
print(len(tried))
"""


def test_an_array_subscript_is_typed_by_the_arrays_template_first(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _SUBSCRIPTS], env=env, capture_output=True,
                         text=True, check=True, timeout=300).stdout
    # no overload of getitem or setitem (strings', lists', dicts') was tried before the
    # arrays' own template: they were 31,000 failed tries in a cold prepare()
    assert out.split() == ["0"]


_CALLS_WITH_CONSTANTS = """
from numba import njit
from simulator import compiled

@njit
def calls(HT, HE, counters, LK, LQ):
    compiled._push(HT, HE, counters, 1.0, compiled._ARRIVE, 3, 0)
    compiled._push(HT, HE, counters, 2.0, compiled._SHARE, 0, 0)
    compiled._sift_down(LK, LQ, 0, len(LK))
    compiled._sift_down(LK, LQ, 1, len(LK))

calls.compile("(float64[::1], int64[::1], int64[::1], float64[::1], int64[:, ::1])")
print(len(compiled._push.signatures), len(compiled._sift_down.signatures))
"""


def test_a_helper_is_compiled_once_whatever_constants_it_is_called_with(tmp_path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}  # cold: the helpers compile
    out = subprocess.run([sys.executable, "-c", _CALLS_WITH_CONSTANTS], env=env,
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert out.split() == ["1", "1"]  # not one copy per literal kind, argument or index


def test_smaller_and_larger_are_min_and_max_of_two_numbers() -> None:
    import numpy as np
    from numba import njit

    from simulator.jit import larger, smaller

    @njit
    def ours(a, b):
        return smaller(a, b), larger(a, b)

    @njit
    def numbas(a, b):
        return min(a, b), max(a, b)

    nan = float("nan")
    for a, b in [(1.0, 2.0), (2.0, 1.0), (nan, 1.0), (1.0, nan), (-0.0, 0.0), (0.0, -0.0),
                 (np.inf, 3.0)]:
        got, want = np.array(ours(a, b)), np.array(numbas(a, b))
        assert got.tobytes() == want.tobytes()  # NaN and the sign of zero too
    assert ours(3, 2) == (2, 3) and ours(3, 2.5) == (2.5, 3.0)  # ints, and unified to float
    assert isinstance(ours(3, 2.5)[1], float)


def test_a_linked_function_runs_in_its_caller_which_optimises_it() -> None:
    import numpy as np
    from numba import njit

    from simulator.jit import LinkedCompiler

    linked = {"pipeline_class": LinkedCompiler, "no_cpython_wrapper": True,
              "no_cfunc_wrapper": True}

    @njit(**linked)
    def double(a, i):
        return 2.0 * a[i]

    @njit(**linked)
    def total(a):
        s = 0.0
        for i in range(len(a)):
            s += double(a, i)
        return s

    @njit
    def entry(n):
        return total(np.arange(n, dtype=np.float64))

    assert entry(5) == 20.0  # 2 * (0 + 1 + 2 + 3 + 4), through both linked functions
    (own,) = total.overloads.values()
    (callee,) = double.overloads.values()
    # total's own code links double in unoptimised: it still calls it (Numba's optimisation
    # would inline it there); the caller's optimisation does that, once for both
    assert any(" call " in line and f"@{callee.fndesc.mangled_name}(" in line
               for line in str(own.library._final_module).splitlines())


def test_an_entry_makes_what_it_links_in_its_own() -> None:
    import numpy as np
    from llvmlite.binding import Linkage
    from numba import njit

    from simulator.jit import EntryCompiler, LinkedCompiler

    @njit(pipeline_class=LinkedCompiler, no_cpython_wrapper=True, no_cfunc_wrapper=True)
    def scaled(a, b, c, i):
        return a[i] * b[i] + c[i]

    @njit(pipeline_class=EntryCompiler)
    def entry(n):
        a = np.arange(n, dtype=np.float64)  # allocates: Numba's reference counting links in
        s = 0.0
        for i in range(n):
            s += scaled(a, a, a, i)
        return s

    assert entry(4) == 20.0  # 0 + 2 + 6 + 12
    (own,) = entry.overloads.values()
    defined = [f for f in own.library._final_module.functions if not f.is_declaration]
    # the entry's code and its wrappers stay visible; whatever was linked in (Numba's
    # reference counting at least: it is not inlined) is internal, not linkonce_odr
    names = (own.fndesc.llvm_func_name, own.fndesc.llvm_cpython_wrapper_name,
             own.fndesc.llvm_cfunc_wrapper_name)
    mine = {f.name: f.linkage for f in defined if f.name in names}
    linked = {f.name: f.linkage for f in defined if f.name not in mine}
    assert mine and set(mine.values()) == {Linkage.external}
    assert linked and set(linked.values()) == {Linkage.internal}


def test_a_flow_held_by_its_own_slow_link_leaves_the_shared_link_to_the_other() -> None:
    # r0 -> r2 and r1 -> r2 share the switch's link to r2; r1's own link is a quarter of
    # it, so r1 runs at its route's bottleneck and r0 gets the rest (progressive filling
    # fixes a flow by its cap before the shared link's fair share)
    ids = ("r0", "r1", "r2")
    links = tuple(topology.Link(a, b, ALPHA, 1e9 if a == "r1" else 4e9, "wire")
                  for r in ids for a, b in ((r, "s"), ("s", r)))
    star = Topology("star", tuple(topology.Device(i, "rank") for i in ids)
                    + (topology.Device("s", "switch"),), links, ids)
    schedule = _steps([[Send(2, 0, 32)]], [[Send(2, 32, 64)]],
                      [[Recv(0, 0, 32), Recv(1, 32, 64)]])
    events = simulate(schedule, star, trace=True, engine="events")
    assert simulate(schedule, star, trace=True, engine="compiled") == events
    by_source = {t.src: t.end_s for t in events.transfers}
    # r1: 128 B at 1 GB/s; r0: 128 B at 3 GB/s (its link's 4 less r1's 1); two hops each
    assert by_source[1] == pytest.approx(2 * ALPHA + 128 / 1e9)
    assert by_source[0] == pytest.approx(2 * ALPHA + 128 / 3e9)


def test_twins_in_one_slot_change_no_result() -> None:
    from simulator.compiled import run_compiled
    from simulator.flatten import flatten
    from simulator.gpu import gpu_terms

    cluster, _ = gpu_terms(topology.dgx_h100(nodes=2), "Simple", "tree", 2)
    for collective in ("reduce_scatter", "allgather"):  # a piece per rank's block: twins
        schedule = build_schedule(collective, "tree", 16, (1 << 16) + 3, channels=2)
        flat = flatten(schedule, cluster, 4)
        assert flat is not None
        both = [run_compiled(flat, 1e-12, 0.0, True, float(cluster.slot_bytes), twins=twins)
                for twins in (True, False)]
        count, finish, link_bytes, busy, (order, start, arrival) = both[0]
        assert count == both[1][0] and (order == both[1][4][0]).all()
        for mine, theirs in zip((finish, link_bytes, busy, start, arrival),
                                (*both[1][1:4], *both[1][4][1:])):
            assert mine.tobytes() == theirs.tobytes()
