"""The compiled engine's first run: Numba compiles it once, visibly, and its cache keeps it.

The functions of :mod:`simulator.flatten` and :mod:`simulator.compiled` are compiled by
:func:`njit_once`.  Those that Python calls are compiled with ``cache=True`` (the
functions they call are linked into them): the machine code lands next to the sources
(or in ``NUMBA_CACHE_DIR``) and later processes load it in a fraction of a second.  The
functions only compiled code calls are compiled by :class:`LinkedCompiler` to LLVM IR for
their callers, without machine code of their own; those Python calls, by
:class:`EntryCompiler`, which makes the functions linked into them their own, as a
linker's link-time optimisation does.  They allocate arrays with :func:`empty` and
:func:`zeros` and take the least and most of two numbers with :func:`smaller` and
:func:`larger`, which compile nothing of their own.  The first compiled simulation after
an install (or after the sources change) compiles them, which takes some 10 s of CPU;
:func:`prepare` does that before the user's schedule is read, with a line on stderr
saying so and another with the time it took, so that it is never a silent pause inside
a call.
"""

from __future__ import annotations

import operator
import sys
import time
from typing import Any, Callable, TextIO

from llvmlite.binding import Linkage
from numba import _dynfunc  # type: ignore[attr-defined]  # a C module without stubs
from numba import njit, types
from numba.core import cgutils
from numba.core.caching import NullCache
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import register_pass
from numba.core.registry import CPUDispatcher
from numba.core.typed_passes import NativeLowering
# Numba types ``a[i]`` and ``a[i] = x`` by trying the templates registered for
# ``operator.getitem`` and ``setitem`` in the order they were registered, each tried twice.
# ``numba.np.arrayobj`` imports the string types, whose overloads registered before the
# arrays' own templates made every subscript of the engine try seven overloads first:
# 31,000 failed tries, a fifth of a cold compile.  Registering the arrays' first (as a
# process that compiles before importing this module does) tries them first; the types
# inferred are the same, since none of those overloads accepts an array.
from numba.core.typing import arraydecl  # noqa: F401  # registers before arrayobj's imports
from numba.core.typing.npydecl import parse_dtype, parse_shape
from numba.cpython.builtins import do_minmax
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl, _parse_shape

from collectives.gcpause import gc_paused

__all__ = ["EntryCompiler", "LinkedCompiler", "empty", "larger", "njit_once", "prepare",
           "smaller", "uncached", "zeros"]

_prepared = False


class _LinkedLibrary(JITCodeLibrary):
    """The code of a function that only compiled code calls, kept as LLVM IR for its
    callers.

    Finalizing it only links in the code of the functions it calls.  Numba's library
    also optimises that module and makes machine code of it, which nothing runs: each
    caller links the module into its own and optimises and compiles it there again.
    Those two steps cost about a fifth of a cold start.  The caller's optimisation now
    meets its callees as their function passes left them (not optimised twice and
    rewritten by the code generator first): its machine code differs, its results and
    speed do not.
    """

    def finalize(self) -> None:
        """Link in the code of the functions it calls; nothing can be added after."""
        self._raise_if_finalized()
        inits = getattr(self, "_reload_init", None)  # what to run when loaded (not in 0.60)
        for library in dict.fromkeys(self._linking_libraries):  # once each, in order
            if inits is not None:
                inits.update(library._reload_init)
            self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._finalized = True


@register_pass(mutates_CFG=True, analysis_only=False)
class _LinkedLowering(NativeLowering):
    """Numba's lowering into a :class:`_LinkedLibrary`, with no machine code."""

    _name = "collsim_linked_lowering"

    def run_pass(self, state: Any) -> bool:
        """Lower ``state``'s function to LLVM IR and register it for its callers.

        Numba's own pass makes machine code and registers the function under its
        Python wrapper; this one registers it under a stand-in at address 0, which
        Python never calls (the function has no wrapper: ``no_cpython_wrapper``).
        """
        state.library = _LinkedLibrary(state.targetctx.codegen(), state.func_id.func_qualname)
        state.flags.no_compile = True  # Numba's lowering stops before machine code
        super().run_pass(state)
        lowered = state["cr"]
        fndesc = lowered.fndesc
        entry = _dynfunc.make_function(fndesc.lookup_module(), fndesc.qualname.split(".")[-1],
                                       "linked into compiled callers only", 0, lowered.env,
                                       (state.library,))
        state.targetctx.insert_user_function(entry, fndesc, [state.library])
        state["cr"] = lowered._replace(cfunc=entry)
        return True


class _EntryLibrary(JITCodeLibrary):
    """The code of a function that Python calls, the functions it calls made its own.

    Numba links a callee into its caller with ``linkonce_odr`` linkage, which says that
    the callee might be called from outside the module.  LLVM then keeps every callee
    that it does not inline whole, with all its parameters, and gives a callee with one
    call no bonus for inlining it.  Numba passes an array as 7 to 9 words, so a call of
    the engine's event helpers (a dozen arrays each) copied a hundred words, and
    :class:`LinkedCompiler`'s callees, not optimised before they are linked in, looked
    too large to inline: calls took half of the 1,024-rank ring's events.  Here only
    the function's own symbols (its code and its wrappers) stay visible, as a linker's
    link-time optimisation leaves them, so that the module's optimisation inlines a
    callee called once and drops the words a callee does not read.
    """

    def _optimize_final_module(self) -> None:
        """Make the linked-in functions internal, then optimise as Numba does."""
        for function in self._final_module.functions:
            if not function.is_declaration and function.linkage == Linkage.linkonce_odr:
                function.linkage = Linkage.internal
        super()._optimize_final_module()


@register_pass(mutates_CFG=True, analysis_only=False)
class _EntryLowering(NativeLowering):
    """Numba's lowering into an :class:`_EntryLibrary`."""

    _name = "collsim_entry_lowering"

    def run_pass(self, state: Any) -> bool:
        """Lower ``state``'s function into an :class:`_EntryLibrary`, cacheable as
        Numba's own library is."""
        state.library = _EntryLibrary(state.targetctx.codegen(), state.func_id.func_qualname)
        state.library.enable_object_caching()
        return bool(super().run_pass(state))


def _lowering_with(state: Any, lowering: type) -> list[Any]:
    """Numba's nopython pipeline for ``state``, lowering with ``lowering``."""
    pipeline = DefaultPassBuilder.define_nopython_pipeline(state)
    pipeline.passes = [(lowering if cls is NativeLowering else cls, what)
                       for cls, what in pipeline.passes]
    pipeline.finalize()
    return [pipeline]


class LinkedCompiler(CompilerBase):
    """Numba's nopython pipeline, lowering with :class:`_LinkedLowering`: for functions
    that only compiled code calls (``njit(pipeline_class=LinkedCompiler,
    no_cpython_wrapper=True)``)."""

    def define_pipelines(self) -> list[Any]:
        """The passes: Numba's, with :class:`_LinkedLowering` for its lowering."""
        return _lowering_with(self.state, _LinkedLowering)


class EntryCompiler(CompilerBase):
    """Numba's nopython pipeline, lowering with :class:`_EntryLowering`: for the functions
    Python calls that link in :class:`LinkedCompiler`'s (``njit(pipeline_class=EntryCompiler,
    cache=True)``)."""

    def define_pipelines(self) -> list[Any]:
        """The passes: Numba's, with :class:`_EntryLowering` for its lowering."""
        return _lowering_with(self.state, _EntryLowering)


def njit_once(*, entry: bool = False, **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """Numba's ``njit(**options)``, compiled once per types of the arguments, cached if
    ``entry``.

    Numba compiles a function called from compiled code once per *literal* argument: each
    constant passed (``_push(..., _SHARE, 0, 0)``) and each constant a variable holds
    while its type is being inferred made a copy of the function, its callees linked in,
    which cost seconds of a cold start.  The decorated function's calls are typed with the
    constants' plain types instead (``int64``), so that one copy serves every call.

    A function only compiled code calls is compiled without the wrappers through which
    Python and C would call it, and is not cached: its caller links its code in, and the
    caller's cache keeps it.  Its wrappers and its own cache entry were never used and
    cost about a seventh of a cold start.  It is compiled to LLVM IR only
    (:class:`LinkedCompiler`): its callers make the machine code.  A function Python
    calls makes what it links in its own (:class:`EntryCompiler`), so that LLVM inlines a
    helper called once and passes a helper only the words of its arrays that it reads.

    Parameters
    ----------
    entry : bool, optional
        Whether Python calls the function: it is compiled with its wrapper and cached.
    **options
        Numba's other options (``_nrt=False``: compile without reference counting, which
        numba's type hints do not list).

    Returns
    -------
    callable
        The decorator.
    """
    compiler: dict[str, Any] = {"pipeline_class": EntryCompiler} if entry else {
        "no_cpython_wrapper": True, "no_cfunc_wrapper": True, "pipeline_class": LinkedCompiler}

    def compile_once(function: Callable[..., Any]) -> Any:
        dispatcher = njit(cache=entry, **options, **compiler)(function)
        template = dispatcher.get_call_template
        dispatcher.get_call_template = lambda args, kws: template(
            tuple(types.unliteral(arg) for arg in args), kws)
        return dispatcher
    return compile_once


def _allocation(shape: Any, dtype: Any, zero: bool) -> tuple[Any, Any]:
    """The signature and code of a new C-ordered array of ``shape`` (an integer or a
    tuple of them) and ``dtype`` (a NumPy type or dtype), zeroed if ``zero``: what
    Numba's ``np.empty`` and ``np.zeros`` lower to, without their functions."""
    array = types.Array(parse_dtype(dtype), parse_shape(shape), "C")

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        shapes = _parse_shape(context, builder, signature.args[0], args[0])
        new = _empty_nd_impl(context, builder, array, shapes)
        if zero:
            cgutils.memset(builder, new.data, builder.mul(new.itemsize, new.nitems), 0)
        return new._getvalue()
    return array(shape, dtype), codegen


@intrinsic
def empty(typingctx: Any, shape: Any, dtype: Any) -> tuple[Any, Any]:
    """``np.empty(shape, dtype)`` in compiled code, lowered where it is called.

    Numba compiles ``np.empty``, ``np.zeros`` and ``np.full`` as functions of their own,
    once per shape type, dtype and caller's options (``_nrt``, wrappers), each with its
    own machine code: the engine made 29 of them, a tenth of a cold start.  An
    intrinsic is typed and lowered in its caller, compiling nothing.
    """
    return _allocation(shape, dtype, False)


@intrinsic
def zeros(typingctx: Any, shape: Any, dtype: Any) -> tuple[Any, Any]:
    """``np.zeros(shape, dtype)`` in compiled code, lowered where it is called (see
    :func:`empty`)."""
    return _allocation(shape, dtype, True)


def _chosen(typingctx: Any, a: Any, b: Any,
            beats: Callable[[Any, Any], bool]) -> tuple[Any, Any] | None:
    """The signature and code of ``b if beats(b, a) else a`` in the type both unify to:
    Numba's own ``min`` and ``max`` of two numbers (which keep ``a`` where ``b`` is NaN,
    as Python's do); None (no match) unless both are numbers."""
    both = typingctx.unify_types(a, b)
    if not isinstance(both, types.Number):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return do_minmax(context, builder, list(signature.args), list(args), beats)
    return both(a, b), codegen


@intrinsic
def smaller(typingctx: Any, a: Any, b: Any) -> tuple[Any, Any] | None:
    """``min(a, b)`` of two numbers in compiled code, lowered where it is called.

    Numba compiles ``min`` and ``max`` as functions of their own, once per argument
    types and caller's options (``_nrt``): the engine made 8 of them, each with its own
    machine code.  The same comparison and select, lowered in the caller, compile
    nothing.
    """
    return _chosen(typingctx, a, b, operator.lt)


@intrinsic
def larger(typingctx: Any, a: Any, b: Any) -> tuple[Any, Any] | None:
    """``max(a, b)`` of two numbers in compiled code, lowered where it is called (see
    :func:`smaller`)."""
    return _chosen(typingctx, a, b, operator.gt)


def _cached(dispatcher: Any) -> bool:
    """Whether Numba's cache holds machine code of ``dispatcher`` for its current source
    (a function that is not cached counts as held: its callers' code holds it)."""
    try:
        cache = dispatcher._cache
        return isinstance(cache, NullCache) or bool(cache._cache_file._load_index())
    except (AttributeError, OSError):  # another Numba's internals: assume it is
        return True


def uncached() -> list[str]:
    """Return the names of the engine's functions that Numba's cache does not hold.

    Returns
    -------
    list of str
        Empty when every function loads from the cache.
    """
    from . import compiled, flatten

    return [f"{module.__name__}.{name}" for module in (flatten, compiled)
            for name, value in vars(module).items()
            if isinstance(value, CPUDispatcher) and not _cached(value)]


def _warm_up() -> None:
    """Run a small schedule through every compiled function (the types of any other run)."""
    import topology
    from collectives import build_schedule

    from .compiled import run_compiled
    from .flatten import flatten

    schedule = build_schedule("allreduce", "tree", 4, 64, segments=2)  # read from lanes
    machine = topology.flat(4, 1e-6, 1e-9)
    assert flatten(schedule, machine, 4, dense_pairs=0) is not None  # pairs by sorting
    flat = flatten(schedule, machine, 4)
    assert flat is not None
    run_compiled(flat, 1e-10, 0.0, False)


def prepare(stream: TextIO | None = None) -> float | None:
    """Compile (or load) the compiled engine now, once per process.

    Parameters
    ----------
    stream : text file or None, optional
        Where to say that it compiles, when Numba's cache does not hold the engine
        (default ``sys.stderr``).

    Returns
    -------
    float or None
        The seconds compiling took, or None when the engine was loaded from the cache or
        prepared before in this process.
    """
    global _prepared
    if _prepared:
        return None
    cold = uncached()
    out = sys.stderr if stream is None else stream
    if cold:
        print(f"collsim: compiling the simulator's engine with Numba ({len(cold)} functions; "
              "once: the cache keeps it for later runs)...", file=out, flush=True)
    start = time.perf_counter()
    with gc_paused():  # Numba's compiler makes millions of objects; collecting them cost ~10%
        _warm_up()
    _prepared = True
    if not cold:
        return None
    seconds = time.perf_counter() - start
    print(f"collsim: compiled the simulator's engine in {seconds:.1f} s", file=out, flush=True)
    return seconds
