"""Discrete-event simulation of a schedule on a topology, built on SimPy.

The simulator reads a :class:`~collectives.schedule.Schedule` exactly as the executors
run it and never looks at which algorithm produced it:

* every rank walks its steps in order; a step's operations are posted together and the
  rank moves on when all of them are done (:mod:`collectives.progress`);
* the k-th send from rank ``a`` to rank ``b`` matches the k-th receive at ``b`` from
  ``a``; the transfer starts once both the send's step and the receive's step have been
  posted (rendezvous, as in :mod:`collectives.progress`);
* a transfer injects its bytes into every link of its route at the rate it gets; links
  shared by concurrent transfers share their bandwidth max-min fairly (progressive
  filling, recomputed once per instant at which transfers sharing links start or end,
  for the flows joined to them through links that can limit them: a link whose flows'
  route bottlenecks sum to no more than its bandwidth never does, so a transfer whose
  links are all like that runs at its route's bottleneck without any recomputation);
  the last byte arrives the route's latency (sum of its links' latencies) after it was
  injected, less what the transport's FIFO slots hide on a topology with ``slot_bytes``
  (a GPU model's effective topology): :func:`simulator.gpu.hidden_latency` of the
  message's bytes at its route's bottleneck bandwidth;
* both the send and the receive are done when the data has arrived, except that a
  receive with ``reduce=True`` then reduces it at the receiving rank for ``gamma``
  seconds per byte; reductions of different receives do not wait for each other (a
  GPU reduces them on different thread blocks; the closed forms assume the same);
* local copies are free;
* with a per-message CPU overhead ``o`` (``topology.overhead_s_per_message``, LogGP's
  ``o``; 0 by default and on every preset) a rank spends ``o`` on each message it sends,
  before the message can start, and ``o`` on each message it receives, after it
  arrived and before it is reduced or the receive is done; a rank's overheads run one
  after another (one CPU per rank; ranks that share cores show it as a larger ``o``).

On a contention-free topology (:func:`topology.mesh`) a transfer of ``n`` bytes takes
``alpha + n * beta`` and the simulation reproduces the closed forms of
:func:`simulator.cost`; on :func:`topology.flat` a rank's concurrent messages share its
port.

This module is the reference engine.  :mod:`simulator.compiled` runs the same events,
in the same order and with the same arithmetic, compiled with Numba, for schedules of
millions of transfers (``engine="compiled"``, and ``"auto"`` from
:data:`COMPILED_FROM_OPERATIONS` operations); the tests hold the two to the identical
result.

SimPy supplies the clock and the event queue; events are bare timeouts with callbacks
(no process per rank), one per distinct instant at which something happens (transfers
ending together share it), and a transfer whose rate changes reschedules its end, the
stale end being ignored.  Messages are matched online as steps are posted, so the simulation
costs one pass over the schedule; a schedule that does not complete is then diagnosed by
:func:`collectives.progress.match` and :func:`collectives.progress.completion_order`.
"""

from __future__ import annotations

from dataclasses import dataclass
from reprlib import repr as brief
from typing import Any, Callable, NamedTuple, cast

import heapq

import numpy as np
import simpy
from simpy.events import Timeout

from topology.checks import check_int, check_number
from topology.model import Topology

from collectives.errors import DeadlockError, ScheduleError
from collectives.gcpause import gc_paused
from collectives.progress import completion_order, match
from collectives.schedule import Recv, Schedule, Send
from collectives.verify import StepCheck, verify_while_read
from collectives.verify import verify as check_schedule

from .gpu import gpu_terms, hidden_latency, route_shares

#: the most ranks a simulation plays (every message is an event: ring's AllReduce on
#: 4096 ranks is 33 million of them)
MAX_SIMULATED_RANKS = 4096

__all__ = ["Transfer", "SimulationResult", "simulate", "ENGINES", "MAX_SIMULATED_RANKS",
           "COMPILED_FROM_OPERATIONS"]

#: ``engine=`` choices of :func:`simulate`
ENGINES = ("auto", "events", "compiled")
#: with ``engine="auto"``, schedules of at least this many operations (all ranks together;
#: for a schedule with lanes, lane entries) run compiled: below it the event engine takes
#: about a second or less, and loading (or, the first time, compiling) the Numba code
#: would cost more than it saves
COMPILED_FROM_OPERATIONS = 1 << 18
#: ranks of a schedule sampled to estimate whether it holds that many operations
SAMPLED_RANKS = 32


class Transfer(NamedTuple):
    """One message as simulated: posted by both ends at ``start_s``, arrived at ``end_s``."""

    start_s: float
    end_s: float
    src: int
    dst: int
    nbytes: int
    links: tuple[int, ...]


@dataclass(frozen=True)
class SimulationResult:
    """What :func:`simulate` measured.

    Attributes
    ----------
    time_s : float
        When the last rank finished its last step (0 for an empty schedule).
    rank_finish_s : tuple of float
        When each rank finished its last step.
    link_bytes : tuple of int
        Bytes that crossed each link of the topology (indexed like ``topology.links``).
    link_busy_s : tuple of float
        Seconds during which each link carried at least one transfer's bytes.
    transfers : tuple of Transfer
        Every transfer, in order of arrival (empty unless simulated with ``trace=True``).
    transfer_count : int
        Number of transfers simulated (also when the trace is off).
    nbytes : int
        Bytes of the full vector (``schedule.count * dtype_size``).

    The repr is a one-line summary; the fields hold every figure.
    """

    time_s: float
    rank_finish_s: tuple[float, ...]
    link_bytes: tuple[int, ...]
    link_busy_s: tuple[float, ...]
    transfers: tuple[Transfer, ...]
    transfer_count: int
    nbytes: int

    def __repr__(self) -> str:
        used = sum(1 for b in self.link_bytes if b)
        trace = "traced" if self.transfers else "not traced"
        busiest = max(self.link_busy_s, default=0.0)
        return (f"SimulationResult(time_s={self.time_s:.6g}, {len(self.rank_finish_s)} ranks, "
                f"{self.transfer_count} transfers ({trace}), nbytes={self.nbytes}, "
                f"{used} of {len(self.link_bytes)} links used, busiest {busiest:.6g} s)")


class _Flow:
    """A transfer in flight: its route, and its progress at the current rate."""

    __slots__ = ("src", "dst", "nbytes", "reduce", "links", "latency", "cap", "shares",
                 "start", "remaining", "rate", "last", "version", "active")

    def __init__(self, src: int, dst: int, nbytes: int, reduce: bool,
                 route: tuple[tuple[int, ...], float, float, float], start: float) -> None:
        self.src, self.dst, self.nbytes, self.reduce = src, dst, nbytes, reduce
        self.links, self.latency, self.cap, self.shares = route
        self.start = start
        self.remaining = float(nbytes)
        self.rate = 0.0
        self.last = start
        self.version = 0
        self.active = False


def _cap_of(flow: _Flow) -> float:
    return flow.cap


class _Engine:
    """State of one simulation: ranks' progress, pending messages, flows on links."""

    def __init__(self, schedule: Schedule, topology: Any, dtype_size: int, gamma: float,
                 trace: bool) -> None:
        p = schedule.nranks
        self.schedule, self.topology = schedule, topology
        self.dtype_size, self.gamma, self.trace = dtype_size, gamma, trace
        self.env = simpy.Environment()
        self.steps = [schedule.steps(r) for r in range(p)]
        self.current = [0] * p
        self.pending = [0] * p
        self.finish = [0.0] * p
        # message (src -> dst, k-th) waits under the key k * p**2 + src * p + dst
        self.sent: dict[int, int] = {}
        self.received: dict[int, int] = {}
        self.send_waiting: dict[int, int] = {}
        self.recv_waiting: dict[int, tuple[int, bool]] = {}
        # route from src to dst under the key src * p + dst
        self.routes: dict[int, tuple[tuple[int, ...], float, float, float]] = {}
        self.bandwidth = list(topology.bandwidths_Bps)
        nlinks = len(self.bandwidth)
        self.link_flows: list[dict[_Flow, None]] = [{} for _ in range(nlinks)]
        # the caps of the flows on each link, summed: a link whose flows' caps sum to no
        # more than its bandwidth never limits them, and is left out of sharing
        self.link_load = [0.0] * nlinks
        self.link_bytes = [0] * nlinks
        self.link_busy = [0.0] * nlinks
        self.link_since = [0.0] * nlinks
        self.transfers: list[Transfer] = []
        self.transfer_count = 0
        self.dirty: dict[_Flow, None] = {}
        self.share_pending = False
        self.agenda: dict[float, list[tuple[Callable[[Any], None], Any]]] = {}
        self.overhead = float(getattr(topology, "overhead_s_per_message", 0.0))
        self.slot = getattr(topology, "slot_bytes", None)
        self.cpu_free = [0.0] * p  # when each rank's CPU is done with its overheads
        self.send_ready: dict[int, float] = {}  # with an overhead: when a waiting send may go
        self.now = 0.0  # the clock, as of the instant being processed
        self._on_instant = self._instant

    # ranks -------------------------------------------------------------------------
    def post(self, rank: int) -> None:
        """Post ``rank``'s current step; move past steps that have nothing to wait for."""
        steps = self.steps[rank]
        p = self.schedule.nranks
        pairs = p * p
        sent, received = self.sent, self.received
        send_waiting, recv_waiting = self.send_waiting, self.recv_waiting
        overhead, start_transfer = self.overhead, self.start_transfer
        while True:
            index = self.current[rank]
            if index == len(steps):
                self.finish[rank] = self.now
                return
            pending = 0
            for op in steps[index].ops:
                if type(op) is Send:
                    pending += 1
                    pair = rank * p + op.peer
                    k = sent.get(pair, 0)
                    sent[pair] = k + 1
                    length = op.stop - op.start
                    partner = recv_waiting.pop(k * pairs + pair, None)
                    ready = self.spend(rank) if overhead else 0.0
                    if partner is None:
                        send_waiting[k * pairs + pair] = length
                        if overhead:
                            self.send_ready[k * pairs + pair] = ready
                    elif partner[0] != length:
                        self.mismatch(rank, index, op, k, partner[0])
                    elif overhead:
                        self.start_at(ready, rank, op.peer, length, partner[1])
                    else:
                        start_transfer(rank, op.peer, length, partner[1])
                elif type(op) is Recv:
                    pending += 1
                    pair = op.peer * p + rank
                    k = received.get(pair, 0)
                    received[pair] = k + 1
                    length = op.stop - op.start
                    posted = send_waiting.pop(k * pairs + pair, None)
                    if posted is None:
                        recv_waiting[k * pairs + pair] = (length, op.reduce)
                    elif posted != length:
                        self.mismatch(rank, index, op, k, posted)
                    elif overhead:
                        self.start_at(self.send_ready.pop(k * pairs + pair), op.peer, rank,
                                      length, op.reduce)
                    else:
                        start_transfer(op.peer, rank, length, op.reduce)
            if pending:
                self.pending[rank] = pending
                return
            self.current[rank] = index + 1

    @staticmethod
    def mismatch(rank: int, index: int, op: Send | Recv, k: int, other: int) -> None:
        """Raise for a matched message whose two ends differ in length."""
        src, dst = (rank, op.peer) if isinstance(op, Send) else (op.peer, rank)
        raise ScheduleError(f"rank {rank} step {index}: {op} has length {op.stop - op.start} "
                            f"but message {k} from {src} to {dst} has length {other} at the "
                            "other end")

    def op_done(self, rank: int) -> None:
        """One operation of ``rank``'s current step is done; advance when all are."""
        pending = self.pending
        pending[rank] -= 1
        if not pending[rank]:
            self.current[rank] += 1
            self.post(rank)

    # per-message overhead --------------------------------------------------------
    def spend(self, rank: int) -> float:
        """Charge ``rank`` one message's overhead from now or when its CPU is free;
        return when it is done."""
        done = self.cpu_free[rank] = max(self.cpu_free[rank], self.now) + self.overhead
        return done

    def start_at(self, when: float, src: int, dst: int, length: int, reduce: bool) -> None:
        """Start the transfer at ``when`` (the sender's overhead done), or now if later."""
        delay = when - self.now
        if delay > 0:
            self.at(delay, self._start, (src, dst, length, reduce))
        else:
            self.start_transfer(src, dst, length, reduce)

    def _start(self, message: tuple[int, int, int, bool]) -> None:
        self.start_transfer(*message)

    def receive_done(self, flow: _Flow) -> None:
        """The receiver's overhead for ``flow`` is done: reduce, or complete the receive."""
        cost = self.gamma * flow.nbytes if flow.reduce else 0.0
        if cost:
            self.at(cost, self.op_done, flow.dst)
        else:
            self.op_done(flow.dst)

    # transfers ---------------------------------------------------------------------
    def route(self, src: int, dst: int) -> tuple[tuple[int, ...], float, float, float]:
        """Links, latency, bottleneck bandwidth and shares (:func:`simulator.gpu.route_shares`)
        from ``src`` to ``dst`` (cached)."""
        key = src * self.schedule.nranks + dst
        found = self.routes.get(key)
        if found is None:
            links = tuple(self.topology.route(src, dst))
            cap = min((self.bandwidth[link] for link in links), default=float("inf"))
            found = self.routes[key] = (links, float(self.topology.alpha(src, dst)), cap,
                                        route_shares(self.topology, links))
        return found

    def start_transfer(self, src: int, dst: int, length: int, reduce: bool) -> None:
        """Start moving ``length`` elements from ``src`` to ``dst``."""
        now = self.now
        route = self.routes.get(src * self.schedule.nranks + dst) or self.route(src, dst)
        flow = _Flow(src, dst, length * self.dtype_size, reduce, route, now)
        self.transfer_count += 1
        if not flow.nbytes or not flow.links:
            self.inject_done(flow)
            return
        free = True
        flow.active = True
        link_flows, link_bytes, link_since = self.link_flows, self.link_bytes, self.link_since
        load, bandwidth = self.link_load, self.bandwidth
        nbytes, cap = flow.nbytes, flow.cap
        for link in flow.links:
            flows = link_flows[link]
            if not flows:
                link_since[link] = now
                load[link] = cap
            else:
                load[link] += cap
                if load[link] > bandwidth[link]:
                    free = False
            flows[flow] = None
            link_bytes[link] += nbytes
        if free:  # every link of the route can carry every flow on it at full speed
            flow.rate, flow.version = cap, 1
            self.at(flow.remaining / cap, self.flow_end, (flow, 1))
        else:
            self.dirty[flow] = None
            self.request_share()

    def set_rate(self, flow: _Flow, rate: float) -> None:
        """Give ``flow`` a new rate from now on and schedule its end at that rate."""
        now = self.now
        if flow.rate:
            flow.remaining = max(flow.remaining - flow.rate * (now - flow.last), 0.0)
        flow.last, flow.rate = now, rate
        flow.version += 1
        if rate > 0:  # a zero share (rounding) waits for the next recomputation
            self.at(flow.remaining / rate, self.flow_end, (flow, flow.version))

    def request_share(self) -> None:
        """Recompute the dirty flows' rates once, after everything else at this instant."""
        if not self.share_pending:
            self.share_pending = True
            self.at(0.0, self.share_dirty, None)

    def share_dirty(self, _: None) -> None:
        """Recompute the rates of the flows that starts and ends made dirty."""
        self.share_pending = False
        seeds = tuple(flow for flow in self.dirty if flow.active)
        self.dirty.clear()
        if seeds:
            self.share(seeds)

    def share(self, seeds: tuple[_Flow, ...]) -> None:
        """Recompute max-min fair rates of the flows connected to ``seeds`` through
        binding links.

        Each flow is also capped at its route's bottleneck bandwidth, which every link
        implies; a link whose flows' caps sum to no more than its bandwidth then never
        limits them, so it neither joins flows into one component nor takes part in the
        progressive filling.
        """
        component = dict.fromkeys(seeds)
        stack = list(seeds)
        seen: set[int] = set()
        links: list[int] = []
        link_flows, load, bandwidth = self.link_flows, self.link_load, self.bandwidth
        while stack:
            for link in stack.pop().links:
                if link not in seen:
                    seen.add(link)
                    flows = link_flows[link]
                    if len(flows) > 1 and load[link] > bandwidth[link]:
                        links.append(link)
                        for other in flows:
                            if other not in component:
                                component[other] = None
                                stack.append(other)
        capacity = {link: bandwidth[link] for link in links}
        unfixed = {link: len(link_flows[link]) for link in links}
        rates: dict[_Flow, float] = {}
        # progressive filling: fix the flows of the link with the smallest fair share,
        # or the flow with the smallest cap if that is smaller still; fixing flows only
        # raises the other links' shares, so stale heap entries are lazy
        heap = [(capacity[link] / unfixed[link], link) for link in links]
        heapq.heapify(heap)
        by_cap = sorted(component, key=_cap_of)
        next_cap = 0
        while True:
            while heap:
                fair, bottleneck = heap[0]
                left = unfixed[bottleneck]
                if not left:
                    heapq.heappop(heap)
                elif capacity[bottleneck] / left != fair:
                    heapq.heapreplace(heap, (capacity[bottleneck] / left, bottleneck))
                else:
                    break
            while next_cap < len(by_cap) and by_cap[next_cap] in rates:
                next_cap += 1
            fixed: tuple[_Flow, ...]
            if next_cap < len(by_cap) and (not heap or by_cap[next_cap].cap < heap[0][0]):
                fixed, fair = (by_cap[next_cap],), by_cap[next_cap].cap
            elif heap:
                fair, bottleneck = heapq.heappop(heap)
                fixed = tuple(flow for flow in link_flows[bottleneck] if flow not in rates)
            else:
                break
            for flow in fixed:
                rates[flow] = fair
                for link in flow.links:
                    if link in capacity:
                        capacity[link] = max(capacity[link] - fair, 0.0)
                        unfixed[link] -= 1
        for flow, rate in rates.items():
            if rate != flow.rate:
                self.set_rate(flow, rate)

    def flow_end(self, token: tuple[_Flow, int]) -> None:
        """The flow's last byte left, unless its rate changed since ``token`` was made."""
        flow, version = token
        if version != flow.version:
            return
        now = self.now
        flow.active = False
        shared = False
        link_flows, load, bandwidth = self.link_flows, self.link_load, self.bandwidth
        for link in flow.links:
            flows = link_flows[link]
            del flows[flow]
            if not flows:
                self.link_busy[link] += now - self.link_since[link]
                load[link] = 0.0
            else:
                if load[link] > bandwidth[link]:  # the flows left may speed up
                    self.dirty.update(flows)
                    shared = True
                load[link] -= flow.cap
        if shared:
            self.request_share()
        self.inject_done(flow)

    def inject_done(self, flow: _Flow) -> None:
        """The last byte left the sender: it arrives after the route's latency (what of
        it the FIFO slots do not hide)."""
        latency = hidden_latency(flow.latency, flow.nbytes, flow.cap, self.slot, flow.shares)
        if latency:
            self.at(latency, self.arrive, flow)
        else:
            self.arrive(flow)

    def arrive(self, flow: _Flow) -> None:
        """Complete the send; complete the receive, or reduce first."""
        now = self.now
        if self.trace:
            self.transfers.append(Transfer(flow.start, now, flow.src, flow.dst, flow.nbytes,
                                           flow.links))
        self.op_done(flow.src)
        if self.overhead:
            self.at(self.spend(flow.dst) - now, self.receive_done, flow)
            return
        cost = self.gamma * flow.nbytes if flow.reduce else 0.0
        if not cost:
            self.op_done(flow.dst)
            return
        self.at(cost, self.op_done, flow.dst)

    # events ------------------------------------------------------------------------
    def at(self, delay: float, callback: Callable[[Any], None], argument: Any) -> None:
        """Call ``callback(argument)`` after ``delay``; one SimPy event per instant.

        Symmetric schedules finish many transfers at the same instant; they share one
        timeout and run in the order they were scheduled, as SimPy would run theirs.
        """
        when = self.now + delay
        calls = self.agenda.get(when)
        if calls is None:
            calls = self.agenda[when] = []
            Timeout(self.env, delay, when).callbacks.append(self._on_instant)
        calls.append((callback, argument))

    def _instant(self, event: Timeout) -> None:
        self.now = when = cast(float, event.value)  # the instant the Timeout was made for
        for callback, argument in self.agenda.pop(when):
            callback(argument)

    # run ---------------------------------------------------------------------------
    def run(self) -> SimulationResult:
        """Post every rank's first step, run to completion and collect the result."""
        for rank in range(self.schedule.nranks):
            self.post(rank)
        self.env.run()
        self.check_complete()
        return SimulationResult(
            time_s=max(self.finish, default=0.0), rank_finish_s=tuple(self.finish),
            link_bytes=tuple(self.link_bytes), link_busy_s=tuple(self.link_busy),
            transfers=tuple(self.transfers), transfer_count=self.transfer_count,
            nbytes=self.schedule.count * self.dtype_size)

    def check_complete(self) -> None:
        """Raise the precise schedule error when some rank did not finish."""
        stuck = [r for r, steps in enumerate(self.steps) if self.current[r] < len(steps)]
        if not stuck:
            return
        completion_order(self.schedule, match(self.schedule))
        raise DeadlockError(f"simulation stopped with {len(stuck)} rank(s) unfinished, "
                            f"e.g. rank {stuck[0]} at step {self.current[stuck[0]]}")


def _check(schedule: Schedule, topology: Any, dtype_size: Any, gamma: Any, engine: Any) -> float:
    if schedule.nranks > topology.nranks:
        raise ValueError(f"schedule.nranks={schedule.nranks} is not allowed on topology "
                         f"{topology.name!r}: it places {topology.nranks} ranks")
    check_int(dtype_size, "dtype_size", 1)
    if engine not in ENGINES:
        raise ValueError(f"engine={brief(engine)} is not allowed; choose one of "
                         f"{', '.join(ENGINES)}")
    gamma = topology.gamma_s_per_byte if gamma is None else gamma
    return check_number(gamma, "gamma", note=" (seconds per byte reduced)")


def _compiled(schedule: Schedule, topology: Any, dtype_size: int, gamma: float,
              trace: bool, check: StepCheck | None = None) -> SimulationResult | None:
    """Run :mod:`simulator.compiled`, the schedule checked by ``check`` as it is read
    (:func:`simulator.flatten.flatten`); None when the schedule cannot complete (the event
    engine then raises the precise error)."""
    from .compiled import run_compiled
    from .flatten import flatten
    from .jit import prepare

    prepare()  # the first time after an install: compiles, and says so on stderr
    flat = flatten(schedule, topology, dtype_size, check=check)
    if flat is None:
        return None
    overhead = float(getattr(topology, "overhead_s_per_message", 0.0))
    slot = getattr(topology, "slot_bytes", None)
    out = run_compiled(flat, gamma, overhead, trace, float("inf") if slot is None else float(slot))
    if out is None:
        return None
    count, finish, link_bytes, link_busy, times = out
    transfers: tuple[Transfer, ...] = ()
    if times is not None:
        order, start, arrival = times
        hops = [tuple(flat.route_links[a:b].tolist())
                for a, b in zip(flat.route_ptr[:-1].tolist(), flat.route_ptr[1:].tolist())]
        route = flat.message_route.tolist()
        nbytes = (flat.message >> 1).tolist()
        src, dst = flat.route_ranks[:, 0].tolist(), flat.route_ranks[:, 1].tolist()
        start, arrival = start.tolist(), arrival.tolist()
        transfers = tuple(Transfer(start[t], arrival[t], src[route[t]], dst[route[t]],
                                   nbytes[t], hops[route[t]]) for t in order.tolist())
    finish = finish.tolist()
    return SimulationResult(
        time_s=max(finish, default=0.0), rank_finish_s=tuple(finish),
        link_bytes=tuple(link_bytes.tolist()), link_busy_s=tuple(link_busy.tolist()),
        transfers=transfers, transfer_count=count, nbytes=schedule.count * dtype_size)


def _has_operations(schedule: Schedule, least: int) -> bool:
    """Whether ranks hold at least ``least`` operations; for a schedule with lanes, lane
    entries (gaps included), which does not build the operations.  On many ranks an even
    sample of :data:`SAMPLED_RANKS` ranks that holds ``least`` at the whole schedule's
    scale answers alone: a composed schedule's lanes are built anew at each read (1,024
    ranks of 8-channel rhd: 1.9 CPU s to count 820 ranks' entries, the sample's 0.1 s).
    Otherwise ranks are counted in order until ``least``."""
    if schedule.nranks > SAMPLED_RANKS:
        sample = np.linspace(0, schedule.nranks - 1, SAMPLED_RANKS).astype(int).tolist()
        held = sum(_operations(schedule, rank) for rank in sample)
        if held * schedule.nranks >= least * SAMPLED_RANKS:
            return True
    seen = 0
    for rank in range(schedule.nranks):
        seen += _operations(schedule, rank)
        if seen >= least:
            return True
    return False


def _operations(schedule: Schedule, rank: int) -> int:
    """``rank``'s operations, or its lane entries where the schedule has lanes (counted
    in its lanes as columns where it gives them)."""
    columns = None if schedule.lane_columns is None else schedule.lane_columns(rank)
    if columns is not None:
        return int(columns.entries.sum())
    if schedule.lanes is not None:
        return sum(min(len(lane.starts), len(lane.stops)) for lane in schedule.lanes(rank))
    return sum(len(step.ops) for step in schedule.steps(rank))


def simulate(schedule: Schedule, topology: Topology, dtype_size: int = 4,
             gamma: float | None = None, trace: bool = False,
             engine: str = "auto", protocol: str | None = None,
             verify: bool = True) -> SimulationResult:
    """Play ``schedule`` on ``topology`` and return when each rank finishes.

    Parameters
    ----------
    schedule : Schedule
        Any schedule (from :func:`collectives.build_schedule` or hand-made).
    topology : topology.Topology
        The machine; rank ``r`` of the schedule runs on the topology's rank ``r``.
    dtype_size : int, optional
        Bytes per element (default 4, float32).
    gamma : float, optional
        Seconds per byte a receiving rank spends reducing; defaults to
        ``topology.gamma_s_per_byte``, or with a GPU model to ``1 / topology.gpu.reduce_Bps``.
    trace : bool, optional
        Keep every :class:`Transfer` in the result, e.g. to draw a timeline
        (:func:`simulator.timeline.plot_timeline`); default False: the result holds
        times and per-link totals only.
    engine : {"auto", "events", "compiled"}, optional
        ``"events"``: this module's SimPy engine, the reference; ``"compiled"``: the same
        events compiled with Numba (:mod:`simulator.compiled`), for schedules of millions
        of transfers; ``"auto"`` (default): compiled from
        :data:`COMPILED_FROM_OPERATIONS` operations.  Both give the same result.
    protocol : str, optional
        On a topology with a GPU model (``topology.gpu``), the protocol to play
        (default the model's ``default_protocol``): the schedule runs on the effective
        topology of :func:`simulator.gpu.gpu_terms` for it and the schedule's algorithm
        and channels, and every time is delayed by the call's fixed cost.  Must be None
        on a topology without a GPU model.
    verify : bool, optional
        Check the schedule (:func:`collectives.verify`: the same verdict and error), as
        every executor's schedule is; default True.  On the compiled engine the check
        shares the engine's reading of every rank and its matching
        (:func:`collectives.verify.verify_while_read`).  False plays the schedule as it
        is (what a schedule that :func:`collectives.build_schedule` made, and the tests
        verify, can skip).

    Returns
    -------
    SimulationResult

    Raises
    ------
    TypeError
        For a ``schedule`` or ``topology`` of another type.
    ValueError
        For a schedule with more ranks than the topology places, or than
        :data:`MAX_SIMULATED_RANKS`, a bad ``dtype_size``, a negative ``gamma``, an
        unknown ``engine`` or ``protocol``.
    ScheduleError, DeadlockError
        For a schedule that cannot complete (unmatched or mismatched messages, deadlock),
        or, with ``verify``, that :func:`collectives.verify` rejects.

    Examples
    --------
    >>> import topology
    >>> from collectives import build_schedule
    >>> s = build_schedule("allgather", "ring", 4, 1024)
    >>> r = simulate(s, topology.flat(4, alpha=1e-6, beta=1e-9))
    >>> round(r.time_s * 1e6, 3)  # 3 steps of 1 us + 1 KiB at 1 GB/s
    6.072
    >>> simulate(s, topology.flat(4, alpha=1e-6, beta=1e-9), engine="compiled") == r
    True
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a collectives Schedule, not {type(schedule).__name__}")
    check_int(schedule.nranks, "schedule.nranks", 1, MAX_SIMULATED_RANKS,
              note=" (the events of every message are played: build a smaller schedule, or "
                   "price it with simulator.select's closed forms)")
    if not hasattr(topology, "placement") or not hasattr(topology, "gamma_s_per_byte"):
        raise TypeError(f"topology={brief(topology)} is not allowed; pass a topology.Topology "
                        f"(e.g. topology.flat(4), topology.dgx_h100())")
    try:
        topology, call_s = gpu_terms(topology, protocol, schedule.algorithm,
                                     dict(schedule.params).get("channels", 1))
        gamma = _check(schedule, topology, dtype_size, gamma, engine)
    except ValueError:
        if verify:  # the schedule's error first
            check_schedule(schedule)
        raise
    result = _play(schedule, topology, dtype_size, gamma, trace, engine, verify)
    return _delayed(result, call_s) if call_s else result


def _play(schedule: Schedule, topology: Any, dtype_size: int, gamma: float, trace: bool,
          engine: str, verify: bool) -> SimulationResult:
    """Check the schedule if ``verify`` and run the chosen engine (see :func:`simulate`).
    For the compiled engine the check shares its work
    (:func:`collectives.verify.verify_while_read`): each rank's steps are checked on the
    engine's reading of them, and its matching and its play (a rendezvous per message)
    stand for the check's; where the engine gives up (unmatched messages, a deadlock),
    :func:`collectives.verify` runs on its own and raises the error."""
    with gc_paused():  # millions of short-lived flows and events: no cycles, nothing to collect
        if engine == "auto":
            engine = "compiled" if _has_operations(schedule, COMPILED_FROM_OPERATIONS) \
                else "events"
        if engine == "compiled":
            check = verify_while_read(schedule) if verify else None
            result = _compiled(schedule, topology, dtype_size, gamma, trace, check)
            if result is not None:
                return result
        if verify:
            check_schedule(schedule)
        return _Engine(schedule, topology, dtype_size, gamma, trace).run()


def _delayed(result: SimulationResult, delay_s: float) -> SimulationResult:
    """``result`` with every rank starting ``delay_s`` later (the call's fixed cost)."""
    return SimulationResult(
        time_s=result.time_s + delay_s,
        rank_finish_s=tuple(t + delay_s for t in result.rank_finish_s),
        link_bytes=result.link_bytes, link_busy_s=result.link_busy_s,
        transfers=tuple(t._replace(start_s=t.start_s + delay_s, end_s=t.end_s + delay_s)
                        for t in result.transfers),
        transfer_count=result.transfer_count, nbytes=result.nbytes)
