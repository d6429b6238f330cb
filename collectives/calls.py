"""The one call path: a checked call bound once to what it runs, then run as often as asked.

The first call of a shape checks it in full (:func:`collectives.api.check_call`) and
builds a :class:`BoundCall` from what the checks decided (:class:`Prepared`): the
agreement across ranks where asked, the transport's walk of the rank's plan
(:meth:`~.executors.transport.Transport.walker`) or its library's own collective
(:meth:`~.executors.transport.Transport.native_runner`), and the input's and output's
layout around it.  Every call runs through one: the first call, a repeated one the call
cache finds, and a persistent handle (:mod:`collectives.handles`), which holds one bound
to its buffers (:meth:`BoundCall.hold`).

The call cache (:attr:`~.executors.runtime.Runtime.calls`) keeps a bound call under the
facts its checks depend on (:func:`key`): the collective, the communicator, the op and
algorithm named, ``check``, each buffer's shape, dtype and flags, and the tuning
parameters (None for a call it does not cover: CuPy buffers, a stream, a parameter that is
not a bool, int, str or None, such as ``order``, ``recvbuf=None``, an ``mpi4py.MPI.Op``).
What depends on where the buffers are (their overlap) is checked on every call.  A new
``auto`` table or predictor forgets the cache
(:meth:`~.executors.runtime.Runtime.forget_decisions`).  The variables of
:data:`WATCHED_ENV` are read (through ``os.environ``) when a call is checked in full, and a
bound call keeps what they said, as NCCL reads its variables when a communicator is
created: a call reads no variable, and a variable changed while the program runs counts
from :func:`collectives.release` on, which forgets every bound call.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np

from .executors.buffers import IN_PLACE, Call, check_overlap, lay_input, take_block, workspace
from .executors.check import agree
from .executors.guard import signed_plan
from .executors.persistent import HeldPlan, Views
from .executors.plan import Plan, binds_directly
from .executors.runtime import RUNTIME
from .executors.transport import Transport
from .ops import NCCL_ONLY_OPS, average_input, average_output
from .schedule import BLOCK_COLLECTIVES
from .vcounts import pack, packed_views, unpack, unpacked_views

__all__ = ["WATCHED_ENV", "CALLS_KEPT", "Prepared", "BoundCall", "lay_exchange",
           "take_exchange", "held_exchange", "binding_of", "direct", "key", "lookup",
           "remember"]

#: the environment variables that decide what a call runs (:mod:`collectives.api`,
#: :mod:`collectives.executors.check`, :mod:`collectives.auto`, :mod:`collectives.nchannels`)
WATCHED_ENV = ("COLLSIM_ALGO", "COLLSIM_CHECK", "COLLSIM_TUNING", "COLLSIM_MIN_NCHANNELS",
               "COLLSIM_MAX_NCHANNELS")

#: bound calls kept per process (the oldest dropped first)
CALLS_KEPT = 256

_NDARRAY = np.ndarray
#: the types of parameter values a key covers (each value is keyed with its type: a call
#: with ``doubling=1`` is checked in full, not taken for one with ``doubling=True``)
_SCALARS = frozenset({bool, int, str, type(None)})
#: ``np.may_share_memory`` without its ``__array_function__`` dispatch (half its cost), which
#: changes nothing for the exact ``numpy.ndarray`` buffers :func:`key` covers
_may_share_memory = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a checked call decided, to bind (:class:`BoundCall`).

    Attributes
    ----------
    comm : Any
        The communicator passed (kept so that its ``id`` in the key stays its own).
    transport : Transport
        The transport it resolved to.
    shape : Call
        The call laid out, without its buffers: collective, array module, dtype, count
        and part.
    op, algorithm : str
        The reduction, and the algorithm resolved (``native`` or a schedule's name).
    in_place : bool
        Whether the input is taken from ``recvbuf``.
    plan : Plan or None
        The rank's plan (None for ``native``).
    signature : tuple or None
        What the ranks agree on (:func:`~.executors.check.signature`): before each call
        when ``check`` is on, once per shape over an ``NcclComm`` (``once``); else None.
    once : bool
        Agree on ``signature`` once per communicator (:meth:`~.executors.nccl.NcclComm.
        agree_once`), not before each call.
    signed : bool
        Whether ``native`` exchanges hellos first (False for ``check=False``).
    """

    comm: Any
    transport: Transport
    shape: Call
    op: str
    algorithm: str
    in_place: bool
    plan: Plan | None
    signature: tuple | None
    once: bool
    signed: bool


class BoundCall:
    """A checked call bound to what it runs.

    What every call still does is check where the buffers are (their overlap) and, with
    ``check`` on, agree across ranks; the rest was decided once, in ``prepared``: the
    library's own collective, or the input laid into the working buffer, the transport's
    walk of the plan, and the output taken from it (NCCL's ``avg`` scaled around the walk
    as NCCL scales it).

    Parameters
    ----------
    prepared : Prepared
        What the full check decided.

    Attributes
    ----------
    prepared : Prepared
        As given (it keeps the communicator, whose ``id`` is in the key, alive).
    guard : Guard or NcclComm
        What says whether the transport still works (its ``broken``): :func:`lookup` gives
        up the bound call once it broke.
    """

    __slots__ = ("prepared", "guard", "_xp", "_cut", "_agree", "_native", "_plan", "_walk",
                 "_scatter", "_average", "_size", "_exchange", "_direct")

    def __init__(self, prepared: Prepared) -> None:
        transport, plan, shape = prepared.transport, prepared.plan, prepared.shape
        self.prepared, self.guard, self._plan = prepared, getattr(transport, "guard", transport), \
            plan
        self._xp, self._size = shape.xp, transport.size
        self._scatter = shape.collective == "reduce_scatter"
        #: a Broadcast, Reduce or AllToAll(v): the plan works on a buffer of its own
        #: (:func:`lay_exchange`), which the input's and output's overlap cannot harm
        self._exchange = shape.collective not in BLOCK_COLLECTIVES
        #: how the plan may run on the caller's buffers themselves (:func:`direct`)
        self._direct = binding_of(plan, shape) if self._exchange and plan is not None else ""
        #: the result is recvbuf's first block (an in-place ReduceScatter), else recvbuf
        self._cut = shape.part if prepared.in_place and self._scatter else None
        self._agree: Callable[[], Any] | None = None
        if prepared.once:  # an NcclComm's
            nccl: Any = transport
            self._agree = partial(nccl.agree_once, prepared.signature)
        elif prepared.signature is not None:
            self._agree = partial(agree, prepared.signature, transport.allgather_object)
        self._average = prepared.op in NCCL_ONLY_OPS and shape.collective != "allgather"
        if plan is None:
            self._native = transport.native_runner(shape, prepared.op, prepared.signed)
        else:
            self._walk = transport.walker(plan, prepared.op, shape.xp)

    def __call__(self, sendbuf: Any, recvbuf: Any) -> Any:
        """Run the call on NumPy buffers of the kind :func:`key` described.

        Parameters
        ----------
        sendbuf, recvbuf : numpy.ndarray
            As passed to the public collective (``sendbuf`` unused in place).

        Returns
        -------
        numpy.ndarray
            What the public collective returns.

        Raises
        ------
        ValueError
            If the buffers overlap in memory.
        ArgumentMismatchError, CommunicatorBrokenError
            As the public collective.
        """
        recv = recvbuf if recvbuf.ndim == 1 else recvbuf.reshape(-1)
        send = None
        if not self.prepared.in_place:
            send = sendbuf if sendbuf.ndim == 1 else sendbuf.reshape(-1)
            if _may_share_memory(send, recv) and not self._exchange:
                check_overlap(np, send, recv)  # raises
        self.run(send, recv, None)
        return recvbuf if self._cut is None else recv[:self._cut]

    def first(self, call: Call, stream: Any) -> Any:
        """Run the call on the buffers its full check laid out (a first call, or one the
        cache does not cover), after checking that the transport still works.

        Parameters
        ----------
        call : Call
            The checked call's buffers.
        stream : cupy.cuda.Stream or None
            The stream for CuPy buffers.

        Returns
        -------
        array
            What the public collective returns.
        """
        self.prepared.transport.check_usable()
        self.run(call.send, call.recv, stream)
        return call.result

    def run(self, send: Any, recv: Any, stream: Any) -> None:
        """Agree where asked, then run the library's collective or the plan.

        Parameters
        ----------
        send : array or None
            The input, flat (None in place).
        recv : array
            The output, flat.
        stream : cupy.cuda.Stream or None
            The stream for CuPy buffers.
        """
        if self._agree is not None:
            self._agree()
        plan = self._plan
        if plan is None:
            self._native(send, recv, stream)
            return
        xp, shape = self._xp, self.prepared.shape
        if self._exchange:
            if self._direct:
                work = workspace(np, shape.dtype, plan.count, "exchange-work")
                bound = direct(plan, shape, send, recv, work, self._direct)
                if bound:
                    if bound[0] is None:
                        np.copyto(recv, send)
                    self._walk(work, bound[0], None, bound[1])
                    return
            work = lay_exchange(plan, shape, send, recv, stream)
            if self._average:  # a Reduce's avg over an NcclComm
                average_input(xp, work, self._size)
            self._walk(work, None, stream)
            take_exchange(plan, shape, work, recv)
            if self._average and recv is not None:
                average_output(xp, recv, self._size)
            return
        work = lay_input(xp, shape.collective, shape.dtype, shape.count, send, recv,
                         plan.input, stream)
        if self._average:
            average_input(xp, work, self._size)
        self._walk(work, send, stream)
        if self._scatter:
            take_block(recv, work, plan.output, shape.part)
        if self._average:
            average_output(xp, recv if self._cut is None else recv[:self._cut], self._size)

    def hold(self, call: Call) -> HeldPlan | Callable[[], Any]:
        """Bind this call to ``call``'s buffers for good, as a persistent handle holds it
        (NumPy buffers over MPI).

        A handle for a schedule owns its scratch (and, for an out-of-place ReduceScatter,
        its working buffer) and its persistent requests (:class:`~.executors.persistent.
        HeldPlan`); one for ``native`` calls MPI's own collective after its hellos, or,
        unsigned, mpi4py's method bound to the buffers.  Collective, as the handle's
        creation is: ranks agree on a schedule here.

        Parameters
        ----------
        call : Call
            The checked call's buffers.

        Returns
        -------
        HeldPlan or callable
            A schedule's held plan (its ``run`` runs it, its ``free`` frees its requests),
            or the native collective bound to the buffers; the handle checks that the
            transport still works before each call.
        """
        prepared, plan = self.prepared, self._plan
        transport: Any = prepared.transport
        if plan is None:
            if not prepared.signed:
                return transport.native_call(call, prepared.op)
            return partial(self._native, call.send, call.recv, None)
        return HeldPlan(transport, plan, signed_plan(plan, prepared.op, transport.guard.codec),
                        prepared.op, call, held_exchange(plan, call) if self._exchange else None)


def lay_exchange(plan: Plan, shape: Call, send: Any, recv: Any, stream: Any = None) -> Any:
    """The working buffer of a Broadcast, Reduce or AllToAll(v), holding the input (``recv``
    for a Broadcast, in place) at the plan's input range, or an AllToAllv's blocks packed
    (:func:`~.vcounts.pack`).

    A Broadcast works on its buffer itself (in place: its input and output are the whole
    of it, so nothing is copied).  The others' buffer is the workspace's
    (:func:`~.executors.buffers.workspace`), so that calls of one shape reuse it (and, over
    MPI on NumPy buffers, the requests bound to it); the rest of it is not cleared: a
    schedule writes every element of its output range.

    Parameters
    ----------
    plan : Plan
        The rank's plan.
    shape : Call
        The call (its array module, and its ``vector`` for an AllToAllv).
    send, recv : array or None
        The input (None in place) and the output (None off a Reduce's root), flat.
    stream : cupy.cuda.Stream, optional
        The stream of CuPy buffers (current while the call runs).

    Returns
    -------
    array
        The working buffer, ``plan.count`` elements.
    """
    if shape.collective == "broadcast":
        return recv
    work = workspace(shape.xp, shape.dtype, plan.count, "exchange-work", stream)
    if shape.vector is not None:
        pack(work, send, shape.vector[1], shape.vector[4], plan.rank)
    else:
        source: Any = recv if send is None else send
        work[plan.input] = source[:plan.input.stop - plan.input.start]
    return work


def held_exchange(plan: Plan, call: Call
                  ) -> tuple[np.ndarray, Views, Views, tuple[np.ndarray, ...]]:
    """A persistent handle's own working buffer for a Broadcast, Reduce or AllToAll(v), and
    the copies around each run: the input into it, the output out of it (an AllToAllv's
    blocks one by one, as :func:`lay_exchange` and :func:`take_exchange` copy them); where
    the plan runs on the handle's buffers themselves (:func:`direct`), none, or the input
    into the output (a Reduce's root).

    Parameters
    ----------
    plan : Plan
        The rank's plan.
    call : Call
        The handle's buffers, NumPy, laid out.

    Returns
    -------
    work : numpy.ndarray
        Zeros, ``plan.count`` elements (a Broadcast's buffer itself, with no copies).
    before, after : tuple of (numpy.ndarray, numpy.ndarray)
        ``(source, destination)`` views, copied before and after each walk.
    direct : tuple of numpy.ndarray
        The input and output the plan is bound to directly, else empty.
    """
    if call.collective == "broadcast":
        return call.recv, (), (), ()
    work = np.zeros(plan.count, call.dtype)
    bound = direct(plan, call, call.send, call.recv, work, binding_of(plan, call))
    if bound:
        return work, ((call.send, call.recv),) if bound[0] is None else (), (), bound
    if call.vector is not None:
        _, sdispls, _, rdispls, counts = call.vector
        return (work, packed_views(work, call.send, sdispls, counts, plan.rank),
                unpacked_views(call.recv, work, rdispls, counts, plan.rank), ())
    source = call.recv if call.send is None else call.send
    size = plan.input.stop - plan.input.start
    before = ((source[:size], work[plan.input]),) if size else ()
    has_output = call.recv is not None and plan.output.stop > plan.output.start
    return work, before, ((work[plan.output], call.recv),) if has_output else (), ()


def binding_of(plan: Plan, shape: Call) -> str:
    """How a Reduce's or AllToAll's plan may run on the caller's buffers themselves
    (:func:`~.executors.plan.binds_directly`): only on NumPy buffers over MPI, never for an
    AllToAllv (packed blocks) or a Broadcast (in place already); ``""`` where not."""
    if shape.xp is not np or shape.vector is not None or shape.collective == "broadcast":
        return ""
    return binds_directly(plan)


def direct(plan: Plan, shape: Call, send: Any, recv: Any, work: Any,
           how: str) -> tuple[Any, ...]:
    """The input and output a Reduce's or AllToAll's plan runs on directly, sparing copies
    into and out of its working buffer, or nothing.

    On NumPy buffers over MPI, out of place with buffers that do not overlap, a plan that
    :func:`~.executors.plan.binds_directly` reads its input range from ``send`` and
    writes its output range into ``recv`` (``"both"``; off a Reduce's root, where there is
    no output, into ``work``'s own output range), or, where its input and output are one
    range (a Reduce's root, ``"output"``), runs on ``recv`` once the caller copied ``send``
    into it.  At 64 MiB on 2 ranks the two copies took 32 of the 36 ms by which a
    pairwise AllToAll trailed ``MPI_Alltoall`` (16 ms a copy, measured on this 2-core
    machine under load).

    Parameters
    ----------
    plan : Plan
        The rank's plan.
    shape : Call
        The call.
    send, recv : numpy.ndarray or None
        The input (None in place) and the output (None off a Reduce's root), flat.
    work : numpy.ndarray
        The working buffer the rest of the plan runs on.
    how : str
        :func:`binding_of` the plan and call, decided once per bound call or handle.

    Returns
    -------
    tuple
        ``(send, output)``; ``(None, recv)`` where ``send`` is to be copied into ``recv``
        first; or empty.
    """
    if not how or send is None or recv is not None and np.may_share_memory(send, recv):
        return ()
    if how == "both":
        return send, work[plan.output] if recv is None else recv
    return () if recv is None else (None, recv)


def take_exchange(plan: Plan, shape: Call, work: Any, recv: Any) -> None:
    """Copy the result of a Broadcast, Reduce or AllToAll(v) from ``work`` into ``recv``
    (nothing off a Reduce's root), an AllToAllv's blocks unpacked (:func:`~.vcounts.unpack`).

    Parameters
    ----------
    plan, shape, recv
        As for :func:`lay_exchange`.
    work : array
        The working buffer the plan ran on.
    """
    if shape.vector is not None:
        unpack(recv, work, shape.vector[3], shape.vector[4], plan.rank)
    elif recv is not None and work is not recv:  # a Broadcast's result is in place
        recv[...] = work[plan.output]


def key(collective: str, sendbuf: Any, recvbuf: Any, comm: Any, op: Any, algorithm: Any,
        check: bool | None, stream: Any, params: dict[str, Any]) -> tuple | None:
    """Return the facts a call's checks depend on, or None when the call is not covered.

    Parameters
    ----------
    collective, sendbuf, recvbuf, comm, op, algorithm, check, stream, params
        As passed to the public collective.

    Returns
    -------
    tuple or None
        Hashable; equal for calls whose checks and decisions are the same.
    """
    if stream is not None or type(recvbuf) is not _NDARRAY \
            or type(op) is not str or type(algorithm) is not str \
            or not (check is None or type(check) is bool):
        return None
    tuning = _params_key(params) if params else ()
    if tuning is None:
        return None
    if sendbuf is IN_PLACE or sendbuf is recvbuf:
        shape = dtype = flags = None
    elif type(sendbuf) is _NDARRAY:
        shape, dtype, flags = sendbuf.shape, sendbuf.dtype, sendbuf.flags.num
    else:
        return None
    return (collective, id(comm), op, algorithm, check, shape, dtype, flags, recvbuf.shape,
            recvbuf.dtype, recvbuf.flags.num, tuning)


def _params_key(params: dict[str, Any]) -> tuple | None:
    """``(name, type, value)`` of every parameter, sorted; None if a value is not one of
    :data:`_SCALARS`."""
    out = []
    for name, value in sorted(params.items()):
        if type(value) not in _SCALARS:
            return None
        out.append((name, type(value), value))
    return tuple(out)


#: ``RUNTIME.calls`` (one look-up less per call)
_calls = RUNTIME.calls


def lookup(facts: tuple | None) -> BoundCall | None:
    """Return the bound call for ``facts`` if its transport can still run it.

    Parameters
    ----------
    facts : tuple or None
        From :func:`key`.

    Returns
    -------
    BoundCall or None
        None on a miss, or when the transport was closed or failed since (the caller then
        checks the call in full, which says why).
    """
    if facts is None:
        return None
    found = _calls.get(facts)
    if found is None or found.guard.broken is not None:
        return None
    return found


def remember(facts: tuple | None, bound: BoundCall) -> None:
    """Keep ``bound`` under ``facts`` (nothing when ``facts`` is None or the call is not on
    NumPy buffers over MPI).

    Parameters
    ----------
    facts : tuple or None
        From :func:`key`, taken before the call was checked.
    bound : BoundCall
        The call the check bound.
    """
    prepared = bound.prepared
    if facts is None or prepared.transport.name != "mpi" or prepared.shape.xp is not np:
        return
    calls = RUNTIME.calls
    calls[facts] = bound
    if len(calls) > CALLS_KEPT:
        del calls[next(iter(calls))]
