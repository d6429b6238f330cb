"""Where the compiled engine's time goes, instruction by instruction, with Linux ``perf``.

``perf`` cannot name Numba's code (it is loaded at run time), and this host's virtual
CPUs count no cache misses, so sampling the CPU clock is what is left: a load that misses
the caches shows as the samples of the instruction after it.  Two steps::

    perf record -e cpu-clock -F 1999 -o perf.data \\
        python benchmarks/perf_engine.py run --nodes 512 --algorithm ring --object engine.o
    python benchmarks/perf_engine.py annotate perf.data engine.o

``run`` builds an AllReduce of 1 GiB on ``dgx_h100(nodes)`` (as ``bench_simulator.py``),
flattens it and runs the compiled engine, printing the CPU seconds of each phase; then
it writes the engine's machine code (the object Numba's cache loaded) to ``--object``,
where that code was loaded beside it (``.base``), and ``/tmp/perf-<pid>.map``, which
``perf report --sort sym`` reads for the functions' names.  ``annotate`` prints the
instructions with the most samples, each with the ones before it (the function named
from the object's symbols).  The object is kept by wrapping a Numba internal
(``CPUCodeLibrary._set_compiled_object``, Numba 0.60 to 0.68).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import numba.core.codegen as codegen


def _keep_objects() -> None:
    """Make each code library loaded from Numba's cache keep its object code."""
    original = codegen.CPUCodeLibrary._set_compiled_object

    def keep(library: Any, value: bytes) -> None:
        library.kept_object = value
        original(library, value)

    setattr(codegen.CPUCodeLibrary, "_set_compiled_object", keep)


def _symbols(path: Path) -> list[tuple[int, int, str]]:
    """The code symbols of object ``path``: offset, size and name, by ``nm``."""
    listing = subprocess.run(["nm", "-S", "--defined-only", str(path)], check=True,
                             capture_output=True, text=True).stdout
    return [(int(parts[0], 16), int(parts[1], 16), parts[3])
            for parts in (line.split() for line in listing.splitlines())
            if len(parts) == 4 and parts[2] in "tT"]


def _short(name: str) -> str:
    """A mangled Numba name (``_ZN`` and length-prefixed parts) as ``module.function``."""
    if not name.startswith("_ZN"):
        return name[:60]
    parts, at = [], 3
    while (digits := re.match(r"\d+", name[at:])) is not None:
        at += len(digits.group())
        parts.append(name[at:at + int(digits.group())])
        at += int(digits.group())
    return ".".join(parts) or name[:60]


def _write_map(dispatcher: Any, path: Path) -> None:
    """Write ``dispatcher``'s object code to ``path``, its load address to ``path.base``
    and its symbols to ``perf``'s map of this process."""
    overload = next(iter(dispatcher.overloads.values()))
    library = overload.library
    path.write_bytes(getattr(library, "kept_object", None) or library._get_compiled_object())
    symbols = _symbols(path)
    entry = overload.fndesc.llvm_func_name
    base = library.get_pointer_to_function(entry) - next(
        offset for offset, _, name in symbols if name == entry)
    path.with_suffix(".base").write_text(f"{base:x}\n")
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as out:
        out.writelines(f"{base + offset:x} {size:x} {_short(name)}\n"
                       for offset, size, name in symbols)


def run(args: argparse.Namespace) -> None:
    """Build, flatten and simulate one AllReduce; write the engine's code and map."""
    _keep_objects()
    import topology
    from collectives import build_schedule
    from simulator import compiled
    from simulator.flatten import flatten
    from simulator.jit import prepare

    prepare()
    machine = topology.dgx_h100(nodes=args.nodes)
    cpu = time.process_time()
    schedule = build_schedule("allreduce", args.algorithm, machine.nranks, args.nbytes // 4,
                              channels=args.channels)
    built = time.process_time()
    flat = flatten(schedule, machine, 4)
    if flat is None:
        raise SystemExit(f"{args.algorithm} on {machine.nranks} ranks cannot complete")
    flattened = time.process_time()
    slot = getattr(machine, "slot_bytes", None)
    out = compiled.run_compiled(flat, machine.gamma_s_per_byte,
                                float(getattr(machine, "overhead_s_per_message", 0.0)), False,
                                float("inf") if slot is None else float(slot))
    ran = time.process_time()
    print(f"{args.algorithm}: build {built - cpu:.2f}, flatten {flattened - built:.2f}, "
          f"engine {ran - flattened:.2f} CPU s; {out[0] if out else 0} transfers")
    _write_map(compiled._simulate, args.object)


def annotate(args: argparse.Namespace) -> None:
    """Print the instructions of the engine's code with the most samples."""
    base = int(args.object.with_suffix(".base").read_text(), 16)
    size = args.object.stat().st_size
    addresses = subprocess.run(["perf", "script", "-i", str(args.data), "-F", "ip"],
                               check=True, capture_output=True, text=True).stdout.split()
    samples = collections.Counter(int(a, 16) - base for a in addresses
                                  if 0 <= int(a, 16) - base < size)
    print(f"{len(addresses)} samples, {sum(samples.values())} in the engine")
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(args.object)],
                             check=True, capture_output=True, text=True).stdout.splitlines()
    place = {int(m.group(1), 16): i for i, line in enumerate(listing)
             if (m := re.match(r"\s*([0-9a-f]+):", line))}
    symbols = sorted(_symbols(args.object))
    for offset, count in samples.most_common(args.top):
        function = next((_short(name) for start, length, name in reversed(symbols)
                         if start <= offset < start + length), "?")
        print(f"\n{100 * count / len(addresses):5.2f}%  {function}+{offset:x}")
        line = place.get(offset, 0)
        for text in listing[max(0, line - args.before):line + 1]:
            print(re.sub(r"<_ZN[^>]*>", "", text))


def main() -> None:
    """Parse the command line and run ``run`` or ``annotate``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    first = steps.add_parser("run", help="simulate and write the engine's code and map")
    first.add_argument("--nodes", type=int, default=512)
    first.add_argument("--nbytes", type=int, default=1 << 30)
    first.add_argument("--algorithm", default="ring")
    first.add_argument("--channels", type=int, default=1)
    first.add_argument("--object", type=Path, default=Path("engine.o"))
    second = steps.add_parser("annotate", help="the instructions with the most samples")
    second.add_argument("data", type=Path)
    second.add_argument("object", type=Path)
    second.add_argument("--top", type=int, default=12)
    second.add_argument("--before", type=int, default=8, help="instructions shown before")
    args = parser.parse_args()
    (run if args.step == "run" else annotate)(args)


if __name__ == "__main__":
    main()
