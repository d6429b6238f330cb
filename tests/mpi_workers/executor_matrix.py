"""Run the executor test matrix on every rank; rank 0 prints one ``SUMMARY {json}`` line.

Run under ``mpirun -n P python -m mpi4py executor_matrix.py [--xp numpy|cupy]
[--transport mpi|nccl]``.  Every case runs one collective and compares this rank's result
bitwise with :func:`collectives.interpret` on the same schedule and, where the inputs
make every reduction order exact (small integers), with the native collective of the
same transport.  Digests of every rank's results are gathered to rank 0, which checks
that ranks holding the same result hold the same bytes.  Failures are collected, not
raised, so the summary lists them all; errors that are meant to be raised are checked
after the matrix.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import collectives
from collectives import BLOCK_COLLECTIVES, build_schedule, interpret
from collectives.executors import transport_for
from collectives.executors.compiled import supports
from collectives.exchange_calls import ALLTOALLV_ALGORITHMS
from collectives.ops import ALL_DTYPES, ALL_OPS, DTYPES, OP_KINDS, OPS
from collectives.registry import names

SIZES_ALLREDUCE = lambda p: (0, 1, p - 1 if p > 2 else 2, 2 * p + 1, 1031)  # noqa: E731
SIZES_PART = (0, 1, 3, 130)
MODES = ("out", "none", "inplace")


@dataclass(frozen=True)
class Case:
    """One collective call: ``n`` is the allreduce count or the per-rank block."""

    collective: str
    algorithm: str
    n: int
    dtype: str
    op: str
    mode: str
    exact: bool = True
    params: tuple[tuple[str, Any], ...] = field(default=())
    mpi_op: bool = False  # pass mpi4py's MPI.Op object instead of the op's name
    awkward: bool = False  # signed zeros and NaNs with each rank's own payload (floats)


#: byte-swapped dtypes a user can pass: the schedules run them, MPI's own collective cannot
SWAPPED = (">f4", ">i8", ">c16")


def extra_cases(nranks: int) -> list[Case]:
    """Every (dtype, op) MPI defines beyond the core DTYPES x OPS, byte-swapped dtypes and
    mpi4py's ``MPI.Op`` objects; the algorithm rotates so each meets every dtype kind."""
    pairs = [(dtype, op) for dtype in (*ALL_DTYPES, *SWAPPED) for op in ALL_OPS
             if np.dtype(dtype).kind in OP_KINDS[op] and not (dtype in DTYPES and op in OPS)]
    out = []
    reducing, gathering = (names(composed=False, collective=c) for c in ("allreduce", "allgather"))
    for i, (dtype, op) in enumerate(pairs):
        algorithm = reducing[i % len(reducing)]
        out += [Case("allreduce", algorithm, 2 * nranks + 3, dtype, op, "out"),
                Case("reduce_scatter", algorithm, 3, dtype, op, "out")]
    for i, dtype in enumerate(d for d in (*ALL_DTYPES, *SWAPPED) if d not in DTYPES):
        out.append(Case("allgather", gathering[i % len(gathering)], 5, dtype, "sum", "out"))
    for i, op in enumerate(ALL_OPS):
        out.append(Case("allreduce", reducing[i % len(reducing)], 7, "int32", op, "out",
                        mpi_op=True))
    return out


def nccl_cases() -> list[Case]:
    """NCCL's ``avg`` (ncclAvg), which MPI has not: every algorithm and NCCL's own, integers
    (exact: summed, then divided) and floats (premultiplied: NCCL's own not bitwise)."""
    return [Case(collective, algorithm, 7, dtype, "avg", "out",
                 exact=dtype == "int32" or algorithm != "native")
            for collective in ("allreduce", "reduce_scatter")
            for algorithm in (*names(composed=False, collective=collective), "native")
            for dtype in ("int32", "float32")]


def doubling_cases(nranks: int) -> list[Case]:
    """Recursive doubling (rhd ``doubling=True``, AllReduce only): the sizes and modes, every
    DTYPES x OPS, channels, and inputs on which ``max``, ``min`` and even ``sum`` are not
    bitwise commutative (the float sums through the compiled walk's swapped loop, max and
    min through the Python walk's)."""
    doubling = (("doubling", True),)
    out = [Case("allreduce", "rhd", n, "float32", "sum", MODES[i % 3], params=doubling)
           for i, n in enumerate(SIZES_ALLREDUCE(nranks))]
    out += [Case("allreduce", "rhd", 2 * nranks + 3, dtype, op, "out", params=doubling)
            for dtype in DTYPES for op in OPS]
    out += [Case("allreduce", "rhd", 257, dtype, op, "out", exact=False, params=doubling,
                 awkward=True) for dtype in ("float32", "float64") for op in ("sum", "max", "min")]
    return out + [Case("allreduce", "rhd", 50, "float64", "sum", "out",
                       params=(("channels", 2), *doubling))]


def cases(nranks: int, xp: str = "numpy", transport: str = "mpi") -> list[Case]:
    """Return the matrix for ``nranks`` ranks on ``xp`` buffers over ``transport`` (the
    pytest side counts it too); NumPy's adds :func:`extra_cases`, NCCL's
    :func:`nccl_cases`."""
    algorithms = (*collectives.ALGORITHMS, "native")
    out = []
    for algorithm in algorithms:
        served = [c for c in BLOCK_COLLECTIVES
                  if algorithm == "native" or algorithm in names(collective=c)]
        for collective in served:
            sizes = SIZES_ALLREDUCE(nranks) if collective == "allreduce" else SIZES_PART
            for i, n in enumerate(sizes):
                out.append(Case(collective, algorithm, n, "float32", "sum", MODES[i % 3]))
            if collective == "allgather":
                continue
            n = 2 * nranks + 3 if collective == "allreduce" else 3
            out += [Case(collective, algorithm, n, dtype, op, "out")
                    for dtype in DTYPES for op in OPS]
            if algorithm != "native":
                out += [Case(collective, algorithm, 257, dtype, "sum", "out", exact=False)
                        for dtype in ("float32", "float64")]
        if algorithm == "native":
            continue
        identity, reverse = tuple(range(nranks)), tuple(reversed(range(nranks)))
        variants = [(("order", reverse),), (("channels", 2),),
                    (("channels", 3), ("order", (identity, reverse, identity[1:] + identity[:1])))]
        if "segments" in collectives.algorithm_params(algorithm):
            variants.append((("segments", 3),))
        out += [Case(collective, algorithm, n, "float64", "sum", "out", params=variant)
                for collective in served for variant in variants for n in (2, 50)]
    if nranks % 2 == 0:  # hier (every inner algorithm) and tree, two ranks per node
        out += [Case(collective, "hier", n, "float64", "sum", "out",
                     params=(("channels", channels), ("inner", inner), ("ranks_per_node", 2)))
                for collective in BLOCK_COLLECTIVES for inner in ("ring", "tree", "rhd")
                for channels, n in ((1, 50), (2, 3))]
        out += [Case(collective, "tree", n, "float64", "sum", "out",  # trees over nodes of 2
                     params=(("channels", channels), ("ranks_per_node", 2), ("segments", 3)))
                for collective in BLOCK_COLLECTIVES for channels, n in ((1, 50), (2, 3))]
    return (out + doubling_cases(nranks) + (extra_cases(nranks) if xp == "numpy" else [])
            + (nccl_cases() if transport == "nccl" else []))


def native_comparable(case: Case) -> bool:
    """Whether the case's result is compared with MPI's own collective (exact inputs, and a
    dtype MPI has a datatype for)."""
    return case.exact and np.dtype(case.dtype).isnative


def bits(array: np.ndarray) -> bytes:
    """The bytes that hold ``array``'s values: a long double's padding bytes are left out."""
    dtype = array.dtype
    if dtype.kind in "fc" and np.dtype(dtype.name) in (np.dtype(np.longdouble),
                                                      np.dtype(np.clongdouble)):
        if np.finfo(np.longdouble).nmant == 63 and np.dtype(np.longdouble).itemsize == 16:
            return np.ascontiguousarray(array).view(np.uint8).reshape(-1, 16)[:, :10].tobytes()
    return array.tobytes()


def expected_runs(matrix: list[Case], path: str) -> dict[str, int]:
    """Runs per transport path the matrix makes: schedules on ``path`` ("persistent", "direct", "staged"
    or "nccl"), and native collectives (the native cases and the exact comparisons)."""
    ours = sum(case.algorithm != "native" for case in matrix)
    native = sum(case.algorithm == "native" or native_comparable(case) for case in matrix)
    return {path: ours, "native": native}


def agrees(case: Case, got: np.ndarray, want: np.ndarray, gpu: bool) -> bool:
    """Whether ``got`` holds the bits of the interpreter's ``want``.  On awkward floats
    the ranks' digests still compare every bit, but against NumPy: where the compiled walk
    sums or multiplies, which of two NaNs survives is the loop's (NumPy's own SIMD and
    scalar loops keep different ones), so NaNs need only stand where ``want`` has them;
    on a GPU (which gives NaNs no payload, and whose max and min order signed zeros as
    its kernels do) every other element need only equal ``want``'s in value."""
    if got.dtype != want.dtype:
        return False
    if not case.awkward or not (gpu or supports(got.dtype, case.op)):
        return bits(got) == bits(want)
    nan = np.isnan(want)
    if not (np.isnan(got) == nan).all():
        return False
    return bool((got[~nan] == want[~nan]).all()) if gpu else bits(got[~nan]) == bits(want[~nan])


def inputs(case: Case, nranks: int) -> list[np.ndarray]:
    """Every rank's input, the same on every rank (so each can run the interpreter)."""
    whole = case.n if case.collective == "allreduce" else case.n * nranks
    size = case.n if case.collective == "allgather" else whole
    dtype = np.dtype(case.dtype)
    data = []
    for rank in range(nranks):
        rng = np.random.default_rng([case.n, rank, len(case.collective),
                                     zlib.crc32(case.dtype.encode())])
        if case.awkward:
            values = rng.choice(np.array([0.0, -0.0, 1.5, -2.0], dtype), size)
            bits_type = np.dtype(f"u{dtype.itemsize}")
            nan = (np.array(np.nan, dtype).view(bits_type) | bits_type.type(rank + 1)).view(dtype)
            values[rng.random(size) < 0.3] = nan
            data.append(values)
        elif not case.exact:
            data.append(rng.standard_normal(size).astype(dtype))
        elif case.op == "prod":
            data.append(rng.choice(np.array([1, 2, 1], dtype), size))
        elif dtype.kind == "b":
            data.append(rng.integers(0, 2, size).astype(dtype))
        else:
            low = -3 if dtype.kind in "ifc" else 0
            values = rng.integers(low, 5, size).astype(dtype)
            if dtype.kind == "c":
                values += 1j * rng.integers(low, 5, size)
            data.append(values)
    return data


def expected(case: Case, nranks: int, data: list[np.ndarray]) -> list[np.ndarray]:
    """The interpreter's outputs (ring's for native, whose own order is unknown)."""
    algorithm = "ring" if case.algorithm == "native" else case.algorithm
    whole = case.n if case.collective == "allreduce" else case.n * nranks
    schedule = build_schedule(case.collective, algorithm, nranks, whole, **dict(case.params))
    return interpret(schedule, data, case.op)


def call(case: Case, xp: Any, comm: Any, mine: np.ndarray, nranks: int,
         algorithm: str | None = None) -> np.ndarray:
    """Run the case's collective on this rank's input; return the result on the host."""
    from mpi4py import MPI
    function = getattr(collectives, case.collective)
    kwargs = dict(case.params) if algorithm is None else {}
    if case.collective != "allgather":
        kwargs["op"] = getattr(MPI, case.op.upper()) if case.mpi_op else case.op
    send = xp.asarray(mine)
    out_size = {"allreduce": case.n, "reduce_scatter": case.n,
                "allgather": case.n * nranks}[case.collective]
    mode = case.mode if algorithm is None else "out"
    if mode == "none":
        result = function(send, comm=comm, algorithm=algorithm or case.algorithm, **kwargs)
    elif mode == "inplace":
        if case.collective == "allgather":
            buf = xp.zeros(out_size, case.dtype)
            rank = comm.rank if hasattr(comm, "rank") else comm.Get_rank()
            buf[rank * case.n:(rank + 1) * case.n] = send
        else:
            buf = send.copy()
        result = function(collectives.IN_PLACE, buf, comm=comm, algorithm=case.algorithm, **kwargs)
    else:
        recv = xp.full(out_size, 7, case.dtype)
        result = function(send, recv, comm=comm, algorithm=algorithm or case.algorithm, **kwargs)
        if result is not recv:
            raise AssertionError("the call did not return recvbuf")
    if bits(np.ascontiguousarray(xp.asnumpy(send) if xp is not np else send)) != bits(mine):
        raise AssertionError("the call modified sendbuf")
    result = result.get() if xp is not np else result
    return np.ascontiguousarray(result).reshape(-1)


def run_matrix(xp: Any, comm: Any, rank: int, nranks: int,
               matrix: list[Case]) -> tuple[list[str], list[str]]:
    """Run every case; return failure messages and per-case result digests."""
    failures, digests = [], []
    for case in matrix:
        data = inputs(case, nranks)
        try:
            got = call(case, xp, comm, data[rank], nranks)
            want = expected(case, nranks, data)[rank]
            if not agrees(case, got, want, xp is not np):
                if case.algorithm != "native" or case.exact:
                    failures.append(f"rank {rank} {case}: {got[:8]} != interpret {want[:8]}")
            if native_comparable(case) and case.algorithm != "native":
                native = call(case, xp, comm, data[rank], nranks, algorithm="native")
                if bits(native) != bits(got):
                    failures.append(f"rank {rank} {case}: {got[:8]} != native {native[:8]}")
            shared = case.collective != "reduce_scatter"
            digests.append(hashlib.sha1(bits(got)).hexdigest() if shared else "")
        except Exception as error:  # a failing case is reported, the rest still run
            failures.append(f"rank {rank} {case}: {type(error).__name__}: {error}")
            digests.append(f"error on rank {rank}")
    return failures, digests


def expect_error(failures: list[str], kind: type, text: str, function: Any, *args: Any,
                 **kwargs: Any) -> None:
    """Record a failure unless ``function(*args, **kwargs)`` raises ``kind`` mentioning ``text``."""
    try:
        function(*args, **kwargs)
    except kind as error:
        if text not in str(error):
            failures.append(f"{kind.__name__} without {text!r}: {error}")
        return
    except Exception as error:
        failures.append(f"expected {kind.__name__} ({text}), got {type(error).__name__}: {error}")
        return
    failures.append(f"expected {kind.__name__} ({text}), nothing was raised")


def run_errors(xp: Any, comm: Any, rank: int, nranks: int) -> list[str]:
    """Bad input raises before communication; ``check=True`` catches disagreeing ranks."""
    failures: list[str] = []
    x = xp.ones(8, "float32")
    ar = collectives.allreduce
    expect_error(failures, ValueError, "algorithm='bogus'", ar, x, comm=comm, algorithm="bogus")
    if not hasattr(comm, "nccl"):  # NCCL has avg (ncclAvg); MPI refuses it
        expect_error(failures, ValueError, "op 'avg'", ar, x, comm=comm, op="avg")
    if xp is np:
        from mpi4py import MPI
        user_op = MPI.Op.Create(lambda a, b, t: None, commute=True)
        expect_error(failures, ValueError, "MPI.SUM", ar, x, comm=comm, op=user_op)
        user_op.Free()
    expect_error(failures, ValueError, "not contiguous", ar, xp.ones(16, "float32")[::2], comm=comm)
    expect_error(failures, ValueError, "recvbuf has 5 elements", ar, x, xp.ones(5, "float32"),
                 comm=comm)
    expect_error(failures, TypeError, "recvbuf has float64", ar, x, xp.ones(8, "float64"), comm=comm)
    if xp is np:  # CuPy refuses both dtypes when the array is made (_dtype.pyx)
        expect_error(failures, TypeError, "datetime64[s]", ar, xp.zeros(8, "datetime64[s]"),
                     comm=comm)
        expect_error(failures, TypeError, "native byte order", ar, xp.ones(8, ">f4"),
                     comm=comm, algorithm="native")
    expect_error(failures, TypeError, "op 'bxor' is not defined for dtype float32", ar, x,
                 comm=comm, op="bxor")
    expect_error(failures, TypeError, "op 'max' is not defined for dtype complex64", ar,
                 xp.ones(8, "complex64"), comm=comm, op="max")
    expect_error(failures, TypeError, "list", ar, [1.0, 2.0], comm=comm)
    expect_error(failures, TypeError, "'segments'", ar, x, comm=comm, algorithm="ring", segments=2)
    expect_error(failures, ValueError, "IN_PLACE", ar, collectives.IN_PLACE, comm=comm)
    expect_error(failures, ValueError, "channels=0", ar, x, comm=comm, algorithm="ring",
                 channels=0)
    expect_error(failures, ValueError, "needs ranks_per_node", ar, x, comm=comm,
                 algorithm="hier")
    if nranks > 1:
        expect_error(failures, ValueError, "unequal size", ar, x, comm=comm, algorithm="hier",
                     ranks_per_node=nranks + 1)
    os.environ["COLLSIM_MAX_NCHANNELS"] = "0"
    collectives.release()  # a variable changed counts from the next release on
    expect_error(failures, ValueError, "COLLSIM_MAX_NCHANNELS='0'", ar, x, comm=comm,
                 algorithm="ring", channels=2)
    del os.environ["COLLSIM_MAX_NCHANNELS"]
    whole = xp.ones(16, "float32")
    expect_error(failures, ValueError, "overlap", ar, whole[:8], whole[4:12], comm=comm)
    expect_error(failures, ValueError, "sendbuf has", collectives.reduce_scatter,
                 xp.ones(3 * nranks, "float32"), xp.ones(2, "float32"), comm=comm)
    expect_error(failures, ValueError, "recvbuf has", collectives.allgather,
                 xp.ones(3, "float32"), xp.ones(3 * nranks + 1, "float32"), comm=comm)
    if xp is not np:
        expect_error(failures, TypeError, "numpy array", ar, x, np.ones(8, "float32"), comm=comm)
    os.environ["COLLSIM_ALGO"] = "bogus"
    collectives.release()
    expect_error(failures, ValueError, "COLLSIM_ALGO='bogus'", ar, x, comm=comm)
    del os.environ["COLLSIM_ALGO"]
    if nranks > 1:
        mismatched = xp.ones(4 + (rank == 1), "float32")
        expect_error(failures, collectives.ArgumentMismatchError, "count differs", ar, mismatched,
                     comm=comm, algorithm="ring", check=True)
        os.environ["COLLSIM_CHECK"] = "1"
        collectives.release()
        expect_error(failures, collectives.ArgumentMismatchError, "algorithm differs", ar, x,
                     comm=comm, algorithm="ring" if rank else "rhd")
        del os.environ["COLLSIM_CHECK"]
        collectives.release()
    return failures


def run_isolation(xp: Any, comm: Any, rank: int, nranks: int, transport: Any) -> list[str]:
    """A user message in flight on the user's communicator, collectives on a split one and
    on the world, and ``COLLSIM_ALGO`` forcing native: nothing mixes, forcing is obeyed."""
    from mpi4py import MPI
    failures: list[str] = []
    world = MPI.COMM_WORLD
    x = xp.arange(10, dtype="float64") + rank
    pending = None
    if nranks > 1 and rank == 0:
        pending = world.Isend(np.full(10, -1.0), dest=1, tag=0)
    sub = world.Split(rank % 2, rank)
    sub_sum = collectives.allreduce(x, comm=comm if hasattr(comm, "nccl") else sub,
                                    algorithm="ring")
    world_sum = collectives.allreduce(x, comm=comm, algorithm="ring")
    if nranks > 1 and rank == 1:
        mail = np.empty(10)
        world.Recv(mail, source=0, tag=0)
        if not (mail == -1).all():
            failures.append(f"user message corrupted: {mail}")
    if pending is not None:
        pending.Wait()
    ranks = range(nranks) if hasattr(comm, "nccl") else range(rank % 2, nranks, 2)
    host = lambda a: a.get() if xp is not np else a  # noqa: E731
    if not np.array_equal(host(sub_sum), np.arange(10.0) * len(ranks) + sum(ranks)):
        failures.append(f"rank {rank}: split allreduce gave {host(sub_sum)}")
    if not np.array_equal(host(world_sum), np.arange(10.0) * nranks + sum(range(nranks))):
        failures.append(f"rank {rank}: world allreduce gave {host(world_sum)}")
    before = transport.runs["native"]
    os.environ["COLLSIM_ALGO"] = "native"
    collectives.release()
    collectives.allreduce(x, comm=comm, algorithm="ring")
    del os.environ["COLLSIM_ALGO"]
    collectives.release()
    if transport.runs["native"] != before + 1:
        failures.append("COLLSIM_ALGO=native did not run the native collective")
    sub.Free()
    return failures


def run_tuned_auto(xp: Any, comm: Any, nranks: int, transport: Any) -> list[str]:
    """``auto`` reading a tuning table runs what the table names, ``native`` included, and
    falls back to a schedule for a dtype MPI has no datatype for."""
    from collectives.tuning import Rule, Tuning
    failures: list[str] = []
    table = Tuning.from_rules([Rule("allreduce", nranks, 4, 0, 64, "native"),
                               Rule("allreduce", nranks, 4, 65, 1 << 40, "tree",
                                    (("segments", 2),))], "matrix")
    collectives.auto.use_tuning(table)
    try:
        expected_sum = np.arange(40.0) * nranks
        small = "native" if nranks > 1 else "schedule"  # one rank: auto copies (ring)
        for size, dtype, path in ((16, "float32", small), (40, "float32", "schedule"),
                                  (16, ">f4", "schedule")):
            before = dict(transport.runs)
            got = collectives.allreduce(xp.asarray(np.arange(size, dtype=dtype)), comm=comm)
            ran = "native" if transport.runs["native"] > before.get("native", 0) else "schedule"
            got = got.get() if xp is not np else got
            if ran != path or not np.array_equal(got, expected_sum[:size]):
                failures.append(f"tuned auto, {size} x {dtype}: ran {ran} (table: {path}), "
                                f"got {got[:4]}")
        want = ("tree", {"segments": 2}) if nranks > 1 else ("ring", {})
        if collectives.auto.choose("allreduce", 160, nranks, 4) != want:
            failures.append(f"auto chose {collectives.auto.choose('allreduce', 160, nranks, 4)}")
    finally:
        collectives.auto.use_tuning(None)
    return failures


def run_call_cache(comm: Any, nranks: int, transport: Any) -> list[str]:
    """A repeated call skips the checks it passed (:mod:`collectives.calls`), but not those
    that depend on where the buffers are, nor a changed flag, tuning table, or environment
    (from the next :func:`collectives.release` on)."""
    from collectives.tuning import Rule, Tuning
    failures: list[str] = []
    memory, recv = np.zeros(10), np.zeros(4)
    for _ in range(2):  # the second call finds the first one's checks
        collectives.allreduce(memory[0:4], memory[5:9], comm=comm, algorithm="ring")
    expect_error(failures, ValueError, "overlap", collectives.allreduce, memory[0:4],
                 memory[2:6], comm=comm, algorithm="ring")
    recv.flags.writeable = False
    expect_error(failures, ValueError, "read-only", collectives.allreduce, memory[0:4], recv,
                 comm=comm, algorithm="ring")
    recv.flags.writeable = True
    for change in ("COLLSIM_ALGO", "use_tuning")[:2 if nranks > 1 else 1]:  # 1 rank: ring
        collectives.allreduce(memory[0:4], recv, comm=comm)
        before = transport.runs["native"]
        if change == "COLLSIM_ALGO":
            os.environ["COLLSIM_ALGO"] = "native"
            collectives.release()  # a variable changed counts from the next release on
        else:
            collectives.auto.use_tuning(Tuning.from_rules(
                [Rule("allreduce", nranks, 8, 0, 1 << 40, "native")], "cache"))
        collectives.allreduce(memory[0:4], recv, comm=comm)
        os.environ.pop("COLLSIM_ALGO", None)
        collectives.release()
        collectives.auto.use_tuning(None)
        if transport.runs["native"] != before + 1:
            failures.append(f"after {change}, the repeated call did not run native")
    return failures + run_repeats(comm, nranks)


def run_repeats(comm: Any, nranks: int) -> list[str]:
    """Calls repeated with another dtype or shape (another key) each give their own result,
    and a repeated in-place ReduceScatter returns its first block."""
    failures: list[str] = []
    rank = comm.Get_rank()
    for algorithm, check in (("native", None), ("native", False), ("ring", None),
                             ("ring", True)):
        for dtype, shape in (("float64", (4,)), ("float32", (4,)), ("float32", (2, 2)),
                             ("int64", (2, 2))):
            for round_ in (1, 2):
                mine = np.arange(4, dtype=dtype).reshape(shape) * round_
                got = collectives.allreduce(mine, np.empty(shape, dtype), comm=comm,
                                            algorithm=algorithm, check=check)
                if got.dtype != dtype or got.shape != shape or \
                        not np.array_equal(got, mine * nranks):
                    failures.append(f"repeated {algorithm} check {check} {dtype} {shape}, "
                                    f"round {round_}: got {got!r}")
        for round_ in (1, 2):
            whole = np.arange(2 * nranks, dtype="float64") * round_
            got = collectives.reduce_scatter(collectives.IN_PLACE, whole.copy(), comm=comm,
                                             algorithm=algorithm, check=check)
            if not np.array_equal(got, whole[2 * rank:2 * rank + 2] * nranks):
                failures.append(f"repeated in-place reduce_scatter {algorithm} check {check}, "
                                f"round {round_}: got {got!r}")
    return failures


def run_handles(comm: Any, rank: int, nranks: int) -> list[str]:
    """Persistent handles (``allreduce_init`` etc.), out of place and in place, run twice on
    new contents of the same buffers, give the bytes the plain call gives; a freed one raises.
    ``check=False`` (native without hellos, bound once in a handle) gives the same bytes."""
    failures: list[str] = []
    for collective in BLOCK_COLLECTIVES:
        part = 3
        whole = part if collective == "allreduce" else part * nranks
        size = part if collective == "allgather" else whole
        for algorithm, check in (("ring", None), ("rhd", None), ("native", None),
                                 ("native", False), ("auto", None), ("auto", False)):
            for in_place in (False, True):
                send = np.zeros(size, "float64")
                recv = np.zeros(whole if collective == "allgather" or in_place else part)
                start = rank * part if collective == "allgather" and in_place else 0
                init = getattr(collectives, f"{collective}_init")
                handle = init(collectives.IN_PLACE if in_place else send, recv, comm=comm,
                              algorithm=algorithm, check=check)
                for round_ in (1, 2):
                    mine = np.arange(size, dtype="float64") * round_ + rank
                    (recv[start:start + size] if in_place else send)[...] = mine
                    got = handle().copy()
                    want = getattr(collectives, collective)(mine, comm=comm, algorithm=algorithm,
                                                            check=check)
                    if bits(got) != bits(want):
                        failures.append(f"rank {rank} {collective}_init {algorithm} check "
                                        f"{check} in place {in_place}, round {round_}: {got} "
                                        f"!= {want}")
                handle.free()
                expect_error(failures, ValueError, "freed", handle)
    return failures


def run_posted(comm: Any, rank: int, nranks: int) -> list[str]:
    """The walk CuPy buffers take (:func:`~collectives.executors.walk.walk` posting
    non-blocking requests per step, :class:`~collectives.executors.walk.Posted`), run here
    on NumPy buffers with no staging, gives the bytes the persistent walk gives."""
    from mpi4py import MPI

    from collectives.executors.guard import CallContext, signed_plan
    from collectives.executors.plan import get_plan
    from collectives.executors.walk import Posted, walk
    failures: list[str] = []
    transport = transport_for(comm)
    count = 3 * nranks + 1
    for algorithm in names(collective="allreduce", composed=False):
        plan = get_plan("allreduce", algorithm, nranks, rank, count, np.dtype("float64"), {})
        work = np.arange(count, dtype="float64") * (rank + 1)
        want = collectives.allreduce(work, comm=comm, algorithm=algorithm)
        scratch = np.empty(plan.scratch_count)
        signed = signed_plan(plan, "sum", transport.guard.codec)
        transport.agree(plan, signed, "sum")
        posting = Posted(MPI, transport.comm, plan, (work.view(np.uint8), scratch.view(np.uint8)),
                         work, scratch, np.add)
        walk(transport.guard, CallContext(plan, signed, "sum", (work, scratch)), posting, None)
        if bits(work) != bits(want):
            failures.append(f"rank {rank} {algorithm}: the posted walk gave {work[:4]}, the "
                            f"persistent one {want[:4]}")
    return failures


def exchange_cases(nranks: int) -> list[tuple[str, str, int, str, str, int]]:
    """Broadcast, Reduce and AllToAll calls: ``(collective, algorithm, count, dtype, op,
    root)``, every algorithm and MPI's own at two of the counts 0, 1 and a prime (a
    block's for AllToAll) in turn, int32 and float64 in turn, the root (first, middle,
    last) and Reduce's op in turn; the pytest side counts them too."""
    roots = sorted({0, nranks // 2, nranks - 1})
    out = []
    for collective in ("broadcast", "reduce", "alltoall"):
        for j, algorithm in enumerate((*names(collective=collective), "native")):
            for i, count in enumerate(((0, 1, 97) * 2)[j % 3:j % 3 + 2]):
                root = roots[(i + j) % len(roots)] if collective != "alltoall" else 0
                op = ("sum", "max", "prod", "min")[(i + j) % 4] if collective == "reduce" \
                    else "sum"
                out.append((collective, algorithm, count, ("int32", "float64")[(i + j) % 2],
                            op, root))
    return out


def exchange_count(nranks: int) -> int:
    """The exchange calls :func:`run_exchange` makes and checks (and
    :func:`run_exchange_handles` makes handles for): every case, and one AllToAllv per
    algorithm."""
    return len(exchange_cases(nranks)) + len(ALLTOALLV_ALGORITHMS)


def _exchange_inputs(collective: str, count: int, dtype: str, nranks: int,
                     round_: int = 0) -> list[np.ndarray]:
    """Every rank's input, small integers (every reduction order exact), shifted by
    ``round_`` (a handle's later runs)."""
    size = count * nranks if collective == "alltoall" else count
    return [(np.random.default_rng([count, r, len(collective)]).integers(-3, 5, size)
             + round_).astype(dtype) for r in range(nranks)]


def _exchange_args(xp: Any, rank: int, nranks: int, case: tuple,
                   round_: int = 0) -> tuple[Any, Any]:
    """This rank's ``(send, recv)`` for a case: a Broadcast's buffer (the root's input,
    sevens elsewhere) with ``recv`` None, else the input and an output of nines (None off
    a Reduce's root)."""
    collective, _, count, dtype, _, root = case
    mine = xp.asarray(_exchange_inputs(collective, count, dtype, nranks, round_)[rank])
    if collective == "broadcast" and rank == root:
        return mine, None
    if collective == "broadcast":
        return xp.full(count, 7, dtype), None
    mine_out = collective == "alltoall" or rank == root
    return mine, (xp.full(mine.size, 9, dtype) if mine_out else None)


def _exchange_one(xp: Any, comm: Any, rank: int, nranks: int, case: tuple,
                  round_: int = 0) -> Any:
    collective, algorithm, count, dtype, op, root = case
    send, recv = _exchange_args(xp, rank, nranks, case, round_)
    if collective == "broadcast":
        return collectives.broadcast(send, root=root, comm=comm, algorithm=algorithm)
    if collective == "reduce":
        return collectives.reduce(send, recv, root=root, op=op, comm=comm, algorithm=algorithm)
    return collectives.alltoall(send, recv, comm=comm, algorithm=algorithm)


def _exchange_init(comm: Any, rank: int, nranks: int, case: tuple) -> tuple[Any, Any]:
    """A persistent handle for a case, and its input buffer (refilled between runs)."""
    collective, algorithm, count, dtype, op, root = case
    send, recv = _exchange_args(np, rank, nranks, case)
    if collective == "broadcast":
        return collectives.broadcast_init(send, root=root, comm=comm, algorithm=algorithm), send
    if collective == "reduce":
        return collectives.reduce_init(send, recv, root=root, op=op, comm=comm,
                                       algorithm=algorithm), send
    return collectives.alltoall_init(send, recv, comm=comm, algorithm=algorithm), send


def _exchange_expected(rank: int, nranks: int, case: tuple, round_: int = 0) -> np.ndarray | None:
    collective, algorithm, count, dtype, op, root = case
    data = _exchange_inputs(collective, count, dtype, nranks, round_)
    if collective == "reduce" and rank != root:
        return None
    name = "binomial" if algorithm == "native" else algorithm
    name = "pairwise" if algorithm == "native" and collective == "alltoall" else name
    schedule = build_schedule(collective, name, nranks, count,
                              **({} if collective == "alltoall" else {"root": root}))
    inputs = [d if collective != "broadcast" or r == root else d[:0] for r, d in enumerate(data)]
    return interpret(schedule, inputs, op)[rank]


def _skewed(nranks: int, seed: int) -> np.ndarray:
    """An AllToAllv's counts, ``counts[i][j]`` from rank ``i`` to ``j``: a few heavy pairs,
    some empty (a MoE dispatch's shape)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 9, (nranks, nranks)) * (rng.random((nranks, nranks)) < 0.6)


def _host(array: Any) -> np.ndarray | None:
    """A result on the host (None stays None)."""
    return None if array is None else np.asarray(array.get() if hasattr(array, "get") else array)


def _check(failures: list[str], label: str, got: Any, want: np.ndarray | None) -> None:
    """Record a failure unless ``got`` holds ``want``'s bytes (or both are None)."""
    got = _host(got)
    if (got is None) != (want is None) or (want is not None and bits(got) != bits(want)):
        failures.append(f"{label}: {got} != {want}")


def _alltoallv_layout(nranks: int, rank: int, seed: int) -> tuple:
    """A skewed AllToAllv (:func:`_skewed`) with a gap before every block: this rank's
    ``(sends, sdispls, recvs, rdispls, send)`` and the result it must receive."""
    counts = _skewed(nranks, seed)
    sends, recvs = counts[rank], counts[:, rank]
    sdispls = np.cumsum(sends + 1) - sends - 1  # one element of gap before each block
    rdispls = np.cumsum(recvs + 2) - recvs - 2
    send = np.arange(sends.sum() + nranks, dtype="float32") + 100 * rank
    want = np.full(recvs.sum() + 2 * nranks, -1, "float32")
    for i in range(nranks):
        theirs = np.cumsum(counts[i] + 1) - counts[i] - 1
        block = (np.arange(counts[i].sum() + nranks, dtype="float32") + 100 * i)[
            theirs[rank]:theirs[rank] + counts[i][rank]]
        want[rdispls[i]:rdispls[i] + counts[i][rank]] = block
    return [sends.tolist(), sdispls.tolist(), recvs.tolist(), rdispls.tolist()], send, want


def run_exchange(xp: Any, comm: Any, rank: int, nranks: int) -> tuple[list[str], int]:
    """Every :func:`exchange_cases` call bitwise against the interpreter and against the
    transport's own (MPI_Bcast, MPI_Reduce, MPI_Alltoall; ncclBroadcast, ncclReduce,
    grouped ncclSend/ncclRecv); AllToAllv with skewed counts and gapped displacements
    against the interpreter and the transport's own; disagreeing counts raise on every
    rank, a bad root before any communication.  Returns the failures and the number of
    calls that returned (the cases and one AllToAllv per algorithm)."""
    failures: list[str] = []
    ran = 0
    for case in exchange_cases(nranks):
        try:
            _check(failures, f"rank {rank} {case}", _exchange_one(xp, comm, rank, nranks, case),
                   _exchange_expected(rank, nranks, case))
            ran += 1
        except Exception as error:
            failures.append(f"rank {rank} {case}: {type(error).__name__}: {error}")
    (sends, sdispls, recvs, rdispls), send, want = _alltoallv_layout(nranks, rank, 0)
    for algorithm in ALLTOALLV_ALGORITHMS:
        recv = xp.full(want.size, -1, "float32")
        collectives.alltoallv(xp.asarray(send), sends, sdispls, recv, recvs, rdispls, comm=comm,
                              algorithm=algorithm)
        _check(failures, f"rank {rank} alltoallv {algorithm}", recv, want)
        ran += 1
    for algorithm in names(collective="alltoall"):  # overlapping buffers: through the copies
        memory = xp.arange(3 * nranks, dtype="int64") + 100 * rank
        got = collectives.alltoall(memory[:2 * nranks], memory[nranks:], comm=comm,
                                   algorithm=algorithm)
        _check(failures, f"rank {rank} alltoall {algorithm} overlapping", got,
               np.array([100 * j + 2 * rank + k for j in range(nranks) for k in (0, 1)]))
    if nranks > 1:
        spaced = [2 * i for i in range(nranks)]  # rank 1 expects 2 from rank 0, sent 1
        expect_error(failures, collectives.ArgumentMismatchError,
                     "alltoallv: rank 1 expects 2 elements from rank 0", collectives.alltoallv,
                     xp.ones(nranks, "float32"), [1] * nranks, list(range(nranks)),
                     xp.ones(2 * nranks, "float32"), [1 + (rank == 1 and i == 0)
                                                       for i in range(nranks)],
                     spaced, comm=comm)
    expect_error(failures, ValueError, f"root={nranks} is not allowed", collectives.broadcast,
                 xp.ones(4), root=nranks, comm=comm, algorithm="binomial")
    return failures, ran


def run_exchange_handles(comm: Any, rank: int, nranks: int) -> tuple[list[str], int]:
    """A persistent handle (``broadcast_init``, ``reduce_init``, ``alltoall_init``,
    ``alltoallv_init``) for every :func:`exchange_cases` call, run on new contents of its
    buffers, gives the interpreter's bytes each time and the plain call's with MPI's own;
    a freed one raises.  Returns the failures and the number of handles that ran twice."""
    failures: list[str] = []
    ran = 0
    for case in exchange_cases(nranks):
        collective, _, count, dtype, op, root = case
        try:
            handle, send = _exchange_init(comm, rank, nranks, case)
            label = f"rank {rank} {collective}_init {case}"
            for round_ in (1, 2):
                if collective != "broadcast" or rank == root:
                    send[...] = _exchange_inputs(collective, count, dtype, nranks, round_)[rank]
                got = handle()
                got = None if got is None else got.copy()
                _check(failures, f"{label} round {round_}", got,
                       _exchange_expected(rank, nranks, case, round_))
                native = _exchange_one(np, comm, rank, nranks, (collective, "native",
                                                                *case[2:]), round_)
                _check(failures, f"{label} round {round_} against native", got, _host(native))
            handle.free()
            ran += 1
            expect_error(failures, ValueError, "freed", handle)
        except Exception as error:
            failures.append(f"rank {rank} {collective}_init {case}: {type(error).__name__}: "
                            f"{error}")
    (sends, sdispls, recvs, rdispls), send, want = _alltoallv_layout(nranks, rank, 1)
    for algorithm in ALLTOALLV_ALGORITHMS:
        buffer, recv = np.zeros_like(send), np.full(want.size, -1, "float32")
        handle = collectives.alltoallv_init(buffer, sends, sdispls, recv, recvs, rdispls,
                                            comm=comm, algorithm=algorithm)
        for round_ in (1, 2):  # the gaps keep their -1s; every element sent is >= 0
            buffer[...] = send + round_
            _check(failures, f"rank {rank} alltoallv_init {algorithm} round {round_}",
                   handle().copy(), np.where(want == -1, want, want + round_))
        handle.free()
        ran += 1
    for algorithm in names(collective="alltoall"):  # buffers held by the handle alone
        handle = collectives.alltoall_init(np.arange(2 * nranks) + 100 * rank,
                                           np.zeros(2 * nranks, "int64"), comm=comm,
                                           algorithm=algorithm)
        gc.collect()
        litter = [np.full(2 * nranks, -5) for _ in range(64)]  # reuses freed memory
        _check(failures, f"rank {rank} alltoall_init {algorithm} of temporaries",
               handle().copy(), np.array([100 * j + 2 * rank + k for j in range(nranks)
                                          for k in (0, 1)]))
        del litter
        handle.free()
    return failures, ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xp", choices=("numpy", "cupy"), default="numpy")
    parser.add_argument("--transport", choices=("mpi", "nccl"), default="mpi")
    parser.add_argument("--managed", action="store_true",
                        help="CuPy arrays in managed memory (host-readable: MPI's direct "
                             "path works without CUDA-aware MPI, with COLLSIM_MPI_CUDA_AWARE=1)")
    args = parser.parse_args()
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    rank, nranks = world.Get_rank(), world.Get_size()
    if args.xp == "cupy":
        import cupy as xp
        xp.cuda.Device(int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
                       % xp.cuda.runtime.getDeviceCount()).use()
        if args.managed:
            xp.cuda.set_allocator(xp.cuda.MemoryPool(xp.cuda.malloc_managed).malloc)
    else:
        xp = np
    comm = collectives.NcclComm(world) if args.transport == "nccl" else world
    transport = transport_for(comm)
    matrix = cases(nranks, args.xp, args.transport)
    failures, digests = run_matrix(xp, comm, rank, nranks, matrix)
    runs = dict(transport.runs)
    walks = transport.persistent.walks() if args.transport == "mpi" and xp is np else None
    handles = 0
    failures += run_errors(xp, comm, rank, nranks)
    failures += run_isolation(xp, comm, rank, nranks, transport)
    if xp is np:
        failures += run_tuned_auto(xp, comm, nranks, transport)
    if args.transport == "mpi" and xp is np:
        failures += run_call_cache(comm, nranks, transport)
        failures += run_handles(comm, rank, nranks)
        failures += run_posted(comm, rank, nranks)
        handle_failures, handles = run_exchange_handles(comm, rank, nranks)
        failures += handle_failures
    exchange_failures, exchanges = run_exchange(xp, comm, rank, nranks)
    failures += exchange_failures
    all_failures = world.gather(failures, root=0)
    all_digests = world.gather(digests, root=0)
    if rank == 0:
        merged = [f for per_rank in all_failures for f in per_rank]
        for index, case in enumerate(matrix):
            column = {d[index] for d in all_digests}
            if case.collective != "reduce_scatter" and len(column) != 1:
                merged.append(f"{case}: ranks hold different bytes")
        from collectives.executors.mpi import cuda_aware
        summary = {"transport": transport.name, "xp": args.xp, "managed": args.managed,
                   "nranks": nranks,
                   "cases": len(matrix), "runs": runs, "walks": walks,
                   "exchange_cases": exchanges,
                   "exchange_handles": handles,
                   "failures": merged[:30],
                   "failure_count": len(merged),
                   "cuda_aware": cuda_aware() if args.xp == "cupy" else None}
        print("SUMMARY " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
