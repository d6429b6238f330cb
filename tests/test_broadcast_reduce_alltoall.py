"""Broadcast, Reduce and AllToAll(v): every algorithm, rank count, count and root against
NumPy through ``verify`` and the reference interpreter; their checks; their prices."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import topology
from collectives import ArgumentMismatchError, Schedule, build_schedule, interpret, verify
from collectives.calls import binding_of, direct
from collectives.executors.buffers import Call
from collectives.executors.plan import binds_directly, get_plan
from collectives.layout import alltoall_blocks, input_range, output_range, peer_counts
from collectives.registry import names
from collectives.vcounts import agree_counts, check_vector, pack, unpack
from simulator import simulate
from simulator.analytic import price_one

from .reference import DTYPES, OPS

RANKS = (*range(1, 10), 16, 17)
_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def _counts(nranks: int) -> list[int]:
    """0, 1, ranks-1, ranks+1, a prime."""
    return sorted({0, 1, nranks - 1, nranks + 1, 97})


def _roots(nranks: int) -> list[int]:
    """First, middle, last."""
    return sorted({0, nranks // 2, nranks - 1})


def _vectors(nranks: int, count: int, dtype: str, op: str, seed: int) -> np.ndarray:
    """Every rank's vector, values that keep every reduction in range."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        low, high = (0.9, 1.1) if op == "prod" else (-1.0, 1.0)
        return rng.uniform(low, high, (nranks, count)).astype(dtype)
    bound = 3 if op == "prod" else 1000
    return rng.integers(-bound, bound + 1, (nranks, count)).astype(dtype)


def _inputs(schedule: Schedule, full: np.ndarray) -> list[np.ndarray]:
    params = schedule.param_dict
    return [full[r, slice(*input_range(schedule.collective, schedule.count, schedule.nranks,
                                         r, params))].copy() for r in range(schedule.nranks)]


def _check_reduce(outputs: list[np.ndarray], full: np.ndarray, op: str, root: int) -> None:
    """The root's output is the reduction (exact for integers, max and min; within
    rounding of a float64 reference otherwise); the others' are empty."""
    nranks, count = full.shape
    exact = full.dtype.kind != "f" or op in ("max", "min")
    reference = _UFUNC[op].reduce(full if exact else full.astype(np.float64), axis=0)
    for rank, out in enumerate(outputs):
        assert out.dtype == full.dtype and out.shape == ((count,) if rank == root else (0,))
    got = outputs[root]
    if exact:
        assert got.tobytes() == reference.astype(full.dtype).tobytes()
    else:
        scale = np.abs(full.astype(np.float64)).sum(0) if op == "sum" else np.abs(reference)
        tolerance = nranks * float(np.finfo(full.dtype).eps)
        assert np.all(np.abs(got.astype(np.float64) - reference) <= tolerance * scale + 1e-30)


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("algorithm", names(collective="broadcast"))
def test_broadcast_matches_numpy(algorithm: str, nranks: int) -> None:
    for count in _counts(nranks):
        for root in _roots(nranks):
            schedule = build_schedule("broadcast", algorithm, nranks, count, root=root)
            verify(schedule)
            for seed, dtype in enumerate(DTYPES):
                full = _vectors(nranks, count, dtype, "sum", seed)
                inputs = _inputs(schedule, full)
                assert [len(x) for x in inputs] == [count if r == root else 0
                                                    for r in range(nranks)]
                for out in interpret(schedule, inputs):
                    assert out.dtype == full.dtype and out.tobytes() == full[root].tobytes()


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("algorithm", names(collective="reduce"))
def test_reduce_matches_numpy(algorithm: str, nranks: int) -> None:
    for count in _counts(nranks):
        for root in _roots(nranks):
            schedule = build_schedule("reduce", algorithm, nranks, count, root=root)
            verify(schedule)
            for seed, dtype in enumerate(DTYPES):
                for op in OPS:
                    full = _vectors(nranks, count, dtype, op, seed)
                    _check_reduce(interpret(schedule, _inputs(schedule, full), op), full, op,
                                  root)


def _alltoall_case(nranks: int, counts: tuple[tuple[int, ...], ...], dtype: str, seed: int,
                   algorithm: str) -> None:
    count = max(max(row) for row in counts)
    uniform = all(c == count for row in counts for c in row)
    schedule = build_schedule("alltoall", algorithm, nranks, count,
                              **({} if uniform else {"counts": counts}))
    verify(schedule)
    rng = np.random.default_rng(seed)
    blocks = [[rng.integers(-1000, 1000, counts[i][j]).astype(dtype) for j in range(nranks)]
              for i in range(nranks)]
    empty = np.zeros(0, dtype)
    inputs = [np.concatenate([empty, *row]) for row in blocks]
    for j, out in enumerate(interpret(schedule, inputs)):
        want = np.concatenate([empty, *(blocks[i][j] for i in range(nranks))])
        assert out.dtype == want.dtype and out.tobytes() == want.tobytes(), (j, counts)


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("algorithm", names(collective="alltoall"))
def test_alltoall_matches_numpy(algorithm: str, nranks: int) -> None:
    for seed, dtype in enumerate(DTYPES):
        for count in (0, 1, 3, 7):
            _alltoall_case(nranks, peer_counts(count, nranks), dtype, seed, algorithm)


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("algorithm", ["pairwise", "linear"])
def test_alltoallv_matches_numpy(algorithm: str, nranks: int) -> None:
    """Skewed counts, zeros included (a rank that sends some peers nothing)."""
    rng = np.random.default_rng(nranks)
    for seed in range(3):
        counts = tuple(tuple(int(c) for c in row)
                       for row in rng.integers(0, 6, (nranks, nranks)) * (rng.random(
                           (nranks, nranks)) < 0.7))
        if max(max(row) for row in counts) == 0:
            continue
        _alltoall_case(nranks, counts, DTYPES[seed], seed, algorithm)


def test_alltoall_layout_sends_then_receives() -> None:
    counts = ((1, 2, 0), (3, 0, 4), (5, 6, 7))
    assert alltoall_blocks(counts, 1) == (((0, 3), (3, 3), (3, 7)), ((7, 9), (9, 9), (9, 15)))
    params = {"counts": counts}
    assert input_range("alltoall", 7, 3, 1, params) == (0, 7)
    assert output_range("alltoall", 7, 3, 1, params) == (7, 15)
    schedule = build_schedule("alltoall", "pairwise", 3, 7, counts=[list(r) for r in counts])
    assert schedule.elements == 29 and schedule.count == 7  # rank 2: 18 sent, 11 received
    assert Schedule.from_json(schedule.to_json()) == schedule
    assert Schedule.from_json(schedule.to_json()).elements == 29


def test_links_of_equal_profiles_are_found_from_their_lists() -> None:
    """A link's profile (its block, then its classes and counts) found from its list
    (``simulator.analytic.arrays._list_labels``): equal labels where, and only where,
    the lists are equal, whatever their lengths."""
    from simulator.analytic.arrays import _list_labels
    rng = np.random.default_rng(23)
    for _ in range(50):
        lists = int(rng.integers(1, 40))
        head = rng.integers(0, 3, lists)
        owner = np.repeat(np.arange(lists), rng.integers(0, 4, lists))
        item = rng.integers(0, 3, len(owner))
        label, first = _list_labels(head, owner, item)
        told = [(int(head[i]), *item[owner == i].tolist()) for i in range(lists)]
        assert sorted(set(label.tolist())) == list(range(len(set(told))))
        assert all((label[i] == label[j]) == (told[i] == told[j])
                   for i in range(lists) for j in range(lists))
        assert [int(first[k]) for k in label] == [told.index(one) for one in told]


def _direct(plan, call, send, recv, work):
    """:func:`collectives.calls.direct` with the binding a bound call decides once."""
    return direct(plan, call, send, recv, work, binding_of(plan, call))


def test_alltoall_and_reduce_run_on_the_callers_buffers() -> None:
    float32 = np.dtype("float32")
    send, recv, work = np.ones(12, float32), np.zeros(12, float32), np.zeros(24, float32)
    call = Call("alltoall", np, float32, 12, 4, send, recv, recv)
    for algorithm in names(collective="alltoall"):
        plan = get_plan("alltoall", algorithm, 3, 1, 4, float32, {})
        assert binds_directly(plan) == "both"
        assert _direct(plan, call, send, recv, work) == (send, recv)
        assert _direct(plan, call, None, recv, work) == ()  # in place: through the copies
        whole = np.zeros(18, float32)
        assert _direct(plan, call, whole[:12], whole[6:], work) == ()  # overlapping
        assert _direct(plan, replace(call, vector=((), (), (), (), ())), send, recv, work) == ()
    leaf = get_plan("reduce", "binomial", 4, 3, 8, float32, {"root": 0})  # sends only
    root = get_plan("reduce", "binomial", 4, 0, 8, float32, {"root": 0})
    mine = send[:8]
    call = Call("reduce", np, float32, 8, 8, mine, None, None)
    bound = _direct(leaf, call, mine, None, work)  # off the root: no output, work's own range
    assert bound[0] is mine and bound[1].base is work
    assert bound[1].size == leaf.output.stop - leaf.output.start
    out = recv[:8]  # at the root: the input copied into the output, the plan run on it
    assert binds_directly(root) == "output"
    assert _direct(root, call, mine, out, work) == (None, out)
    assert _direct(root, call, mine, None, work) == ()  # an inner rank: no output of its own
    assert binds_directly(get_plan("allreduce", "ring", 4, 0, 8, float32, {})) == ""


@pytest.mark.parametrize("call, error, message", [
    (lambda: build_schedule("broadcast", "chain", 4, 8, root=4), ValueError,
     r"root=4 is not allowed; it must be an integer in \[0, 3\] \(a rank of the 4\)"),
    (lambda: build_schedule("reduce", "binomial", 4, 8, root=-1), ValueError, r"root=-1"),
    (lambda: build_schedule("broadcast", "rabenseifner", 4, 8), ValueError,
     r"algorithm 'rabenseifner' does not run broadcast; it runs \['reduce'\]"),
    (lambda: build_schedule("allreduce", "pairwise", 4, 8), ValueError,
     r"algorithm 'pairwise' does not run allreduce"),
    (lambda: build_schedule("alltoall", "ring", 4, 8), ValueError,
     r"algorithm 'ring' does not run alltoall"),
    (lambda: build_schedule("broadcast", "chain", 4, 8, channels=2), ValueError,
     r"channels=2 is not allowed; algorithm 'chain' runs on one channel"),
    (lambda: build_schedule("broadcast", "binomial", 4, 8, order=(1, 0, 2, 3)), TypeError,
     r"parameter 'order' is not taken by algorithm 'binomial'"),
    (lambda: build_schedule("alltoall", "bruck_alltoall", 2, 2, counts=((1, 2), (2, 2))),
     ValueError,
     r"counts= with unequal entries is not allowed with algorithm 'bruck_alltoall'"),
    (lambda: build_schedule("alltoall", "pairwise", 2, 3, counts=((1, 2), (2, 2))), ValueError,
     r"count=3 is not allowed with counts=: an AllToAllv's count is the largest of its "
     r"counts, here 2"),
    (lambda: build_schedule("alltoall", "pairwise", 2, 2, counts=((1, 2),)), ValueError,
     r"counts has 1 rows; with 2 ranks it must have 2"),
    (lambda: build_schedule("alltoall", "linear", 2, 2, counts=((1, 2), (2, -1))),
     ValueError, r"counts\[1\]\[1\]=-1 is not allowed"),
])
def test_bad_arguments_name_the_parameter(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_vector_arguments_are_checked_against_the_buffer() -> None:
    check_vector("send", [1, 2], [0, 1], 2, 3)
    with pytest.raises(ValueError, match=r"sendcounts\[1\] = 2 at sdispls\[1\] = 2 ends at 4, "
                                         r"past the 3 elements of the send buffer"):
        check_vector("send", [1, 2], [0, 2], 2, 3)
    with pytest.raises(ValueError, match=r"rdispls has 1 entries; it must have one per rank"):
        check_vector("recv", [1, 2], [0], 2, 3)
    with pytest.raises(ValueError, match=r"recvcounts\[0\] = -1 is not allowed"):
        check_vector("recv", [-1, 2], [0, 0], 2, 3)
    check_vector("send", [2, 2], [0, 0], 2, 2)  # sends may read the same elements twice


def _everyone(sends: list[tuple[int, ...]], recvs: list[tuple[int, ...]]):
    """An allgather over ranks that gave ``(sends[r], recvs[r])`` (what the transport's
    returns), for :func:`agree_counts`, which is given it as an argument."""
    return lambda mine: list(zip(sends, recvs))


def test_counts_agree_into_the_matrix_or_every_rank_raises_alike() -> None:
    sends = [(0, 2, 1), (3, 0, 0), (1, 1, 1)]
    recvs = [(0, 3, 1), (2, 0, 1), (1, 0, 1)]
    for rank in range(3):
        assert agree_counts(_everyone(sends, recvs), rank, sends[rank], recvs[rank]) == \
            tuple(sends)
    recvs[2] = (1, 1, 1)  # rank 2 expects 1 from rank 1, which sends it none
    messages = set()
    for rank in range(3):
        with pytest.raises(ArgumentMismatchError) as raised:
            agree_counts(_everyone(sends, recvs), rank, sends[rank], recvs[rank])
        messages.add(str(raised.value).replace(" (this rank)", ""))
    assert messages == {"alltoallv: rank 2 expects 1 elements from rank 1 (recvcounts[1]), "
                        "which sends it 0 (sendcounts[2])"}


def test_pack_and_unpack_follow_the_displacements() -> None:
    counts = ((1, 2), (3, 1))
    work = np.zeros(8)
    pack(work, np.array([9.0, 7.0, 8.0, 6.0]), [3, 1], counts, 0)  # block 1 at 1, block 0 at 3
    assert work[:3].tolist() == [6.0, 7.0, 8.0]
    work[3:7] = [1.0, 2.0, 3.0, 4.0]  # received: 1 from rank 0, 3 from rank 1
    recv = np.zeros(5)
    unpack(recv, work, [4, 0], counts, 0)
    assert recv.tolist() == [2.0, 3.0, 4.0, 0.0, 1.0]


CASES = [("broadcast", "chain", {"segments": 4}), ("broadcast", "binomial", {}),
         ("broadcast", "scatter_allgather", {}), ("reduce", "chain", {"segments": 4}),
         ("reduce", "binomial", {}), ("reduce", "rabenseifner", {}),
         ("alltoall", "pairwise", {}), ("alltoall", "bruck_alltoall", {}),
         ("alltoall", "linear", {})]

@pytest.mark.parametrize("collective, algorithm, params", CASES)
def test_analytic_model_is_the_simulator_on_flat(collective: str, algorithm: str,
                                                 params: dict) -> None:
    for p in (2, 3, 4, 5, 8):
        flat = topology.default_flat(p)
        count = p * 4 * 64 * 3  # even blocks and segments
        for root in ([0, p - 1] if collective != "alltoall" else [None]):
            both = {**params, **({} if root is None else {"root": root})}
            schedule = build_schedule(collective, algorithm, p, count, **both)
            simulated = simulate(schedule, flat, trace=False).time_s
            nbytes = 4 * count * (p if collective == "alltoall" else 1)  # nccl-tests' size
            priced = price_one(collective, algorithm, flat, nbytes, **both)
            assert priced == pytest.approx(simulated, rel=1e-12), (p, root)
        assert price_one(collective, algorithm, flat, 0, **params) == \
            simulate(build_schedule(collective, algorithm, p, 0, **params), flat,
                     trace=False).time_s


@pytest.mark.parametrize("collective, algorithm", [("broadcast", "scatter_allgather"),
                                                   ("reduce", "rabenseifner")])
def test_rooted_trees_price_the_roots_window(collective: str, algorithm: str) -> None:
    """The scatter's (gather's) rounds at the root's message, blocks ``m .. min(2m, p)``
    of uneven blocks, every message sent though empty: exact at rank counts that are not
    powers of two (``default_flat(33)``, 4 MiB: +45% with every round's message ``m``
    blocks) and at uneven counts (``default_flat(4)``, 13 elements: +1.1e-4), and on
    ``dgx_h100(3)`` within 1e-5 (+20% at 64 MiB under LL)."""
    for p, counts in ((4, (1, 5, 13)), (6, (1, 7, 65537)), (33, (32, 97, 1 << 20))):
        flat = topology.default_flat(p)
        for count in counts:
            simulated = simulate(build_schedule(collective, algorithm, p, count, root=p // 2),
                                 flat, trace=False).time_s
            priced = price_one(collective, algorithm, flat, 4 * count, root=p // 2)
            assert priced == pytest.approx(simulated, rel=1e-9), (p, count)
    machine = topology.dgx_h100(3)
    simulated = simulate(build_schedule(collective, algorithm, 24, 1 << 24), machine,
                         protocol="LL", trace=False).time_s
    priced = price_one(collective, algorithm, machine, 4 << 24, protocol="LL")
    assert priced == pytest.approx(simulated, rel=1e-5)


def test_ring_hops_that_start_apart_do_not_crowd_a_spine_link_together() -> None:
    """``dgx_h100(24)``: the scatter's truncated subtrees are done rounds before the root,
    their ring hops start that much earlier, and only the hops that start together
    crowd the leaf's up link they share (:mod:`simulator.analytic.staggered`): LL at
    4 MiB was +8.1% with every hop of a link beside the slowest at every step."""
    machine = topology.dgx_h100(24)
    schedule = build_schedule("broadcast", "scatter_allgather", 192, 1 << 20)
    simulated = simulate(schedule, machine, protocol="LL", trace=False).time_s
    priced = price_one("broadcast", "scatter_allgather", machine, 4 << 20, protocol="LL")
    assert priced == pytest.approx(simulated, rel=0.01)


def test_chain_hops_crowding_a_spine_link_move_at_its_pace() -> None:
    """``dgx_h100(32)``: the chain's 31 network hops over 8 spines, up to 8 to a leaf's up
    link of 4 NICs' rate; with 64 segments of 256 MiB in flight together they move at
    that link's pace (:mod:`simulator.analytic.crowded`), which the chain's closed form
    (every hop alone) had at -17%."""
    machine = topology.dgx_h100(32)
    schedule = build_schedule("broadcast", "chain", 256, 1 << 26, segments=64)
    simulated = simulate(schedule, machine, protocol="Simple", trace=False).time_s
    priced = price_one("broadcast", "chain", machine, 1 << 28, protocol="Simple", segments=64)
    assert priced == pytest.approx(simulated, rel=0.02)


def test_chain_hops_whose_bytes_bunch_are_played() -> None:
    """``dgx_h100(16, nodes_per_leaf=4, spines=4)``: 3 hops to a leaf's up link of 1.24
    NICs' rate, whose bytes of a segment take about a hop's time alone: they bunch and
    the link carries less than its rate, which the fluid of
    :func:`simulator.analytic.crowded._paced` missed (-5.0%); played
    (:mod:`simulator.analytic.coupled`), exact."""
    machine = topology.dgx_h100(16, nodes_per_leaf=4, spines=4)
    schedule = build_schedule("broadcast", "chain", 128, 1 << 22, segments=64)
    simulated = simulate(schedule, machine, protocol="Simple", trace=False).time_s
    priced = price_one("broadcast", "chain", machine, 1 << 24, protocol="Simple", segments=64)
    assert priced == pytest.approx(simulated, rel=1e-3)


def test_chain_that_never_fills_is_played_past_the_played_load() -> None:
    """``dgx_h100(64)``, 32 segments of 512 KiB: the crowded link's bytes of a segment
    take 1.65 of a hop's time alone, above :data:`simulator.analytic.coupled.PLAYED_LOAD`,
    but the chain ends before its first segment's reach (71 segments) would fill it,
    where the fluid's one pace was -1.2%: played (``UNFILLED``), exact."""
    machine = topology.dgx_h100(64)
    schedule = build_schedule("broadcast", "chain", 512, 1 << 22, segments=32)
    simulated = simulate(schedule, machine, protocol="LL", trace=False).time_s
    priced = price_one("broadcast", "chain", machine, 1 << 24, protocol="LL", segments=32)
    assert priced == pytest.approx(simulated, rel=1e-6)


def test_chain_segments_past_the_play_lie_on_the_line_of_two_plays(monkeypatch) -> None:
    """``dgx_h100(128)`` Broadcast LL 64 MiB, 1,023 segments, 125 members: priced on the
    line through two plays past the first segment's reach (``PACE_WINDOWS``), within
    0.5% of the play of every segment (+0.2% over the simulator); the fluid it had
    before was -7.6%."""
    from simulator.analytic import coupled

    machine = topology.dgx_h100(128)
    lined = price_one("broadcast", "chain", machine, 1 << 26, protocol="LL")
    monkeypatch.setattr(coupled, "PACE_WINDOWS", (16, 1 << 20))
    monkeypatch.setattr(coupled, "COUPLED_PLAY", 1 << 30)
    whole = price_one("broadcast", "chain", machine, 1 << 26, protocol="LL")
    assert lined == pytest.approx(whole, rel=5e-3)


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_chain_prices_each_segment_at_its_size(collective: str) -> None:
    """Segments of unequal sizes, empty ones (sent: they cost their latency) and more
    than the chain's ranks: the later segments priced at their own sizes, not the
    first's (at 2 ranks, 4 segments, 1 element: +3e-4 over the simulator)."""
    for p in (2, 3, 5):
        flat = topology.default_flat(p)
        for segments, root in ((4, 0), (3, p - 1), (8, p // 2)):
            for count in (1, 2, 7, 97):
                params = {"root": root, "segments": segments}
                simulated = simulate(build_schedule(collective, "chain", p, count, **params),
                                     flat, trace=False).time_s
                priced = price_one(collective, "chain", flat, 4 * count, **params)
                assert priced == pytest.approx(simulated, rel=1e-9), (p, params, count)


def test_open_mpi_rules_name_coll_tuned_ids() -> None:
    """Open MPI's COLLTYPE ids and its coll/tuned algorithm ids for our algorithms, read
    back by the rules reader."""
    from simulator.export import ompi_algorithm, read_ompi_rules, to_ompi_rules
    from simulator.selection import tuning_table

    ids = {(c, a): ompi_algorithm(c, a) for c in ("broadcast", "reduce", "alltoall")
           for a in names(collective=c)}
    assert ids == {("broadcast", "chain"): 3, ("broadcast", "binomial"): 6,
                   ("broadcast", "scatter_allgather"): 9, ("reduce", "chain"): 3,
                   ("reduce", "binomial"): 5, ("reduce", "rabenseifner"): 7,
                   ("alltoall", "pairwise"): 2, ("alltoall", "bruck_alltoall"): 3,
                   ("alltoall", "linear"): 1}
    flat = topology.default_flat(8)
    tables = [tuning_table(c, flat, method="closed_form")
              for c in ("broadcast", "reduce", "alltoall")]
    rules = read_ompi_rules(to_ompi_rules(tables))
    assert sorted(rules) == [3, 7, 11]
    for table, collective_id in zip(tables, (7, 11, 3)):
        chosen = {ompi_algorithm(table.collective, *table.candidates[r.index])
                  for r in table.ranges}
        assert {rule[1] for rule in rules[collective_id][8]} == chosen


def test_nccl_tuner_csv_has_broadcast_and_reduce_rows_of_ring_only() -> None:
    """NCCL's model ranks Ring only for Broadcast and Reduce, with ``nRanks`` steps
    (tuning.cc): their rows name ring, cover every size, and read back."""
    from simulator.export import nccl_ranges, read_nccl_csv, to_nccl_csv
    from simulator.nccl_tuner import nccl_time_us

    assert nccl_time_us("H100", "nvls", "Simple", 1 << 20, 8, 1, "broadcast") == float("inf")
    def per_byte(collective: str) -> float:  # the bandwidth term: nRanks / nsteps
        return nccl_time_us("H100", "ring", "Simple", 2 << 28, 8, 1, collective) - \
            nccl_time_us("H100", "ring", "Simple", 1 << 28, 8, 1, collective)

    assert per_byte("broadcast") / per_byte("allgather") == pytest.approx(8 / 7, rel=1e-12)
    assert per_byte("reduce") == pytest.approx(per_byte("broadcast"), rel=1e-12)
    machine = topology.dgx_h100(2)
    for collective in ("broadcast", "reduce"):
        lines = nccl_ranges(collective, machine)
        assert {line.algorithm for line in lines} == {"ring"}
        assert lines[0].min_bytes == 0 and all(a.max_bytes + 1 == b.min_bytes
                                               for a, b in zip(lines, lines[1:]))
    rows = read_nccl_csv(to_nccl_csv(machine, ("broadcast", "reduce")))
    assert {row["coll"] for row in rows} == {"broadcast", "reduce"}


def test_tags_tell_the_six_collectives_apart() -> None:
    from collectives.executors.guard import TagCodec
    from collectives.schedule import COLLECTIVES
    codec = TagCodec(2**31 - 1)
    bases = {c: codec.base(c, 8, "float32", "sum", "ring", ()) for c in COLLECTIVES}
    assert len(set(bases.values())) == len(COLLECTIVES)
    assert codec.differences(bases["broadcast"], bases["alltoall"]) == [
        "collective: broadcast here, alltoall at the sender"]


def test_auto_takes_mpichs_defaults_through_choose() -> None:
    from collectives import auto
    assert auto.choose("broadcast", 1 << 20, 8) == ("scatter_allgather", {})
    assert auto.choose("broadcast", 1 << 20, 4) == ("binomial", {})
    assert auto.choose("reduce", 4096, 1) == ("rabenseifner", {})
    assert auto.choose("alltoall", 64, 8) == ("bruck_alltoall", {})
    assert auto.choose("alltoall", 64, 4) == ("linear", {})
    assert auto.choose("alltoall", 1 << 16, 4) == ("pairwise", {})


def test_nccl_alltoall_posts_the_blocks_mpi_alltoall_takes() -> None:
    """NCCL's AllToAll(v) baseline (grouped ncclSend/ncclRecv) sends and receives at MPI's
    counts and displacements: equal blocks in rank order, or an AllToAllv's as given."""
    from collectives.executors.buffers import Call
    from collectives.executors.nccl import _displacements
    block = Call("alltoall", np, np.dtype("float32"), 3, 3, None, None, None)
    assert _displacements(block, 4) == ([3] * 4, [0, 3, 6, 9], [3] * 4, [0, 3, 6, 9])
    assert _displacements(replace(block, count=0), 2) == ([0, 0], [0, 0], [0, 0], [0, 0])
    vector = ([1, 0, 2], [0, 5, 1], [2, 2, 0], [4, 0, 9], ((0, 0, 0),) * 3)
    uneven = Call("alltoallv", np, np.dtype("float32"), 2, 2, None, None, None, 0, vector)
    assert _displacements(uneven, 3) == tuple(vector[:4])


@pytest.mark.parametrize("algorithm", ["pairwise", "linear"])
def test_alltoall_far_distances_bucketed(algorithm: str) -> None:
    """Past the near distances, pairwise's and linear's descriptions hold a bounded number
    of rounds (classes) standing for every distance (2,048 DGX nodes: 16,383 distances,
    3.5 GB to price when listed), exact on a flat machine."""
    from collectives.algorithms import pairwise
    from collectives.traffic import describe
    from simulator.analytic.pricing import _merged
    rounds = describe("alltoall", algorithm, 1 << 14)
    classes = [m for r in rounds for m in r.messages]
    listed = 2 * pairwise.NEAR_DISTANCES + pairwise.FAR_BUCKETS
    assert len(classes) == listed
    one = np.ones(1, dtype=np.int64)
    stood_for = sum(r.repeat * int(m.elements(one)[0]) for r in rounds for m in r.messages)
    assert stood_for == (1 << 14) - 1
    describe.cache_clear()
    _merged.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pairwise, "NEAR_DISTANCES", 2)
            patch.setattr(pairwise, "FAR_BUCKETS", 3)
            flat = topology.default_flat(13)
            assert sum(len(r.messages) for r in describe("alltoall", algorithm, 13)) == 7
            for count in (1, 97):
                simulated = simulate(build_schedule("alltoall", algorithm, 13, count), flat,
                                     trace=False).time_s
                priced = price_one("alltoall", algorithm, flat, 4 * count * 13)
                assert priced == pytest.approx(simulated, rel=1e-12), count
    finally:
        describe.cache_clear()
        _merged.cache_clear()
