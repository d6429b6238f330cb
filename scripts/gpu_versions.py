"""Print what the GPU check runs on as a markdown table (scripts/gpu_check.sh, step 1).

``python3 scripts/gpu_versions.py [1]``: with ``1`` (a stand-in run) only Python, NumPy and
MPI are asked about.  A line that cannot be answered says why instead of failing.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from typing import Callable


def gpu() -> str:
    """The GPUs, their memory and the driver, as ``nvidia-smi`` reports them."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True,
                         check=True, timeout=20).stdout
    return "; ".join(line.strip() for line in out.splitlines() if line.strip())


def cuda() -> str:
    """CUDA runtime and driver versions, from CuPy."""
    from cupy.cuda import runtime
    return (f"runtime {runtime.runtimeGetVersion()}, driver {runtime.driverGetVersion()}, "
            f"{runtime.getDeviceCount()} device(s)")


def cupy_version() -> str:
    """CuPy, and whether it has bfloat16 (through ml_dtypes)."""
    import cupy
    try:
        import ml_dtypes
        cupy.zeros(1, ml_dtypes.bfloat16)
        bfloat16 = f"bfloat16 (ml_dtypes {ml_dtypes.__version__})"
    except (ImportError, TypeError, ValueError) as error:
        bfloat16 = f"no bfloat16 ({type(error).__name__})"
    return f"{cupy.__version__}, {bfloat16}"


def nccl() -> str:
    """NCCL's version, CuPy's build of it, and how many ranks may drive one GPU."""
    from cupy.cuda import nccl as lib
    from collectives.executors.nccl import SHARED_GPU_ENV, ranks_per_gpu
    if not lib.available:
        return "not available to CuPy"
    version = lib.get_version()
    shared = os.environ.get(SHARED_GPU_ENV)
    return (f"{version} (CuPy built with {lib.get_build_version()}); ranks per GPU: "
            f"{ranks_per_gpu(shared, version)} ({SHARED_GPU_ENV}={shared})")


def mpi() -> str:
    """mpi4py and the MPI library it loaded."""
    import mpi4py
    from mpi4py import MPI
    return f"mpi4py {mpi4py.__version__}, {MPI.Get_library_version().splitlines()[0].strip()}"


def cuda_aware() -> str:
    """What the MPI executor decides about CUDA device buffers."""
    from collectives.executors.mpi import cuda_aware as ask
    answer = ask()
    return {True: "yes (direct path)", False: "no (staged path)",
            None: "unknown (staged path)"}[answer]


def rows(standin: bool) -> list[tuple[str, Callable[[], str]]]:
    """(label, question) per line of the table."""
    out = [("Python", platform.python_version), ("NumPy", lambda: __import__("numpy").__version__)]
    if not standin:
        out += [("GPU", gpu), ("CUDA", cuda), ("CuPy", cupy_version), ("NCCL", nccl)]
    return out + [("MPI", mpi), ("MPI CUDA-aware", cuda_aware)]


def main() -> None:
    standin = sys.argv[1:] == ["1"]
    print("| item | version |\n|---|---|")
    for label, ask in rows(standin):
        try:
            answer = ask()
        except Exception as error:  # noqa: BLE001 - the table says what could not be asked
            answer = f"unknown: {type(error).__name__}: {error}"
        print(f"| {label} | {answer.replace('|', '/')} |", flush=True)


if __name__ == "__main__":
    main()
