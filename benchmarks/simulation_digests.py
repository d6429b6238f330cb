"""Digests of simulation results, to show that a change to the simulator changes no result.

Run ``python benchmarks/simulation_digests.py record before.json`` on the old code, then
``python benchmarks/simulation_digests.py compare before.json`` on the new: it exits 1 and
lists the cases whose result changed (predicted time, every rank's finish, every link's
bytes and busy time, the transfer count, and for the smaller cases the traced transfers),
bit for bit.  The cases cover every algorithm (``hier`` on several nodes) x 1, 2 and 8
channels x 8 B to 1 GiB on ``flat`` (with and without a per-message overhead) and on
``dgx_h100`` of 1, 2 and 4 nodes (also oversubscribed, so that links are shared) under
each of its protocols, AllReduce throughout and ReduceScatter and AllGather on one
topology; the compiled engine everywhere, the event engine up to 1 MiB (about 2 minutes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from typing import Any, Iterator

from schedule_digests import record_or_compare  # this script's folder

import topology
from collectives import BLOCK_COLLECTIVES, COMPOSED, build_schedule
from collectives.registry import names
from simulator import simulate
from simulator.channel_choice import hier_ranks_per_node, schedule_params
from simulator.gpu import protocols

SIZES = (8, 1 << 10, 1 << 20, 1 << 26, 1 << 30)
CHANNELS = (1, 2, 8)
#: the event engine plays cases up to this many bytes (it is the slow reference)
EVENTS_UP_TO = 1 << 20
#: the traced transfers are digested up to this many bytes
TRACED_UP_TO = 1 << 20


def machines() -> dict[str, Any]:
    """The topologies, by name."""
    flat = topology.flat(13, alpha=2e-6, beta=1e-10)
    return {"flat13": flat,
            "flat13-overhead": dataclasses.replace(flat, overhead_s_per_message=5e-7),
            "h100x1": topology.dgx_h100(1),
            "h100x2": topology.dgx_h100(2),
            "h100x4": topology.dgx_h100(4),
            "h100x4-oversubscribed": topology.dgx_h100(4, oversubscription=4.0,
                                                        nodes_per_leaf=2)}


def cases() -> Iterator[tuple[str, str, str, int, int, str | None]]:
    """Yield ``(machine, collective, algorithm, channels, nbytes, protocol)``."""
    for name, machine in machines().items():
        collectives = BLOCK_COLLECTIVES if name == "h100x2" else ("allreduce",)
        for collective in collectives:
            for algorithm in names(collective=collective):
                if algorithm in COMPOSED and (
                        collective != "allreduce"
                        or hier_ranks_per_node(machine, machine.nranks) is None):
                    continue
                for channels in CHANNELS:
                    for nbytes in SIZES:
                        for protocol in protocols(machine):
                            yield name, collective, algorithm, channels, nbytes, protocol


def _schedule(machine: Any, collective: str, algorithm: str, channels: int, nbytes: int) -> Any:
    params: dict[str, Any] = {"channels": channels}
    if algorithm in COMPOSED:
        params["ranks_per_node"] = hier_ranks_per_node(machine, machine.nranks)
    else:
        params = schedule_params(algorithm, tuple(params.items()), machine)
    return build_schedule(collective, algorithm, machine.nranks, nbytes // 4, **params)


def _digest(result: Any) -> str:
    fields = (result.time_s, result.rank_finish_s, result.link_bytes, result.link_busy_s,
              result.transfer_count, result.transfers)
    text = repr(tuple(tuple(float.hex(x) if isinstance(x, float) else x for x in field)
                      if isinstance(field, tuple) else field for field in fields))
    return hashlib.sha256(text.encode()).hexdigest()


def digests() -> dict[str, str]:
    """Return each case's predicted time and a digest of its whole result, per engine."""
    out = {}
    tables = machines()
    for name, collective, algorithm, channels, nbytes, protocol in cases():
        machine = tables[name]
        schedule = _schedule(machine, collective, algorithm, channels, nbytes)
        engines = ("compiled", "events") if nbytes <= EVENTS_UP_TO else ("compiled",)
        for engine in engines:
            result = simulate(schedule, machine, trace=nbytes <= TRACED_UP_TO, engine=engine,
                              protocol=protocol)
            key = f"{name}/{collective}/{algorithm}/{channels}/{nbytes}/{protocol}/{engine}"
            out[key] = f"{result.time_s.hex()} {_digest(result)}"
    return out


def main() -> int:
    """Record or compare the digests; return the exit status."""
    return record_or_compare(__doc__.splitlines()[0], digests)

if __name__ == "__main__":
    sys.exit(main())
