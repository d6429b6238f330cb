#!/usr/bin/env bash
# One prepared device check for the GPU paths (issue 18), under 8 minutes on a machine with
# one or more NVIDIA GPUs, CuPy and NCCL from the registry wheels, and the pip Open MPI:
#   1. versions: GPUs, CuPy, CUDA runtime and driver, NCCL, MPI, and MPI's CUDA-awareness;
#   2. the GPU tests (tests/test_executors_gpu.py): CuPy over MPI at 2-4 ranks, the direct
#      path on managed memory, NCCL with one rank per GPU (or several where NCCL allows);
#   3. stream order: inputs made ready late on a non-blocking stream, every algorithm and
#      collective, over NCCL at 2 and 4 ranks and over MPI at 2 ranks;
#   4. time per call, 8 B to 256 MiB, native NCCL and each algorithm as a ratio to it.
# Install first (the script downloads nothing): pip install -e ".[gpu-cuda12,test]" (or
# gpu-cuda13 on CUDA 13). NCCL_MULTI_RANK_GPU_ENABLE=1 lets NCCL (>= 2.30) put several
# ranks on one GPU, so a 1-GPU machine also runs NCCL at 2 and 4 ranks.
#
# GPU_CHECK_STANDIN=1 runs steps 3 and 4 on NumPy buffers over MPI instead: it tests this
# script's plumbing on a machine without a GPU and is never a GPU result.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
STANDIN="${GPU_CHECK_STANDIN:-0}"
status=0
step() {  # step SECONDS LABEL COMMAND...: run with a time limit, report, remember failures
    local limit=$1 label=$2; shift 2
    echo "=== $label"
    local start=$SECONDS
    timeout "$limit" "$@"
    local rc=$?
    echo "=== $label: exit $rc after $((SECONDS - start)) s"
    [ "$rc" = 0 ] || status=1
}

if [ "$STANDIN" = 1 ]; then
    echo "### STAND-IN RUN (GPU_CHECK_STANDIN=1): NumPy over MPI, no GPU; not a GPU result"
    XP=(--xp numpy --transport mpi); NCCL_XP=(--xp numpy --transport mpi); MAX=$((1 << 20))
else
    nvidia-smi -L || status=1
    XP=(--xp cupy --transport mpi); NCCL_XP=(--xp cupy --transport nccl); MAX=$((256 << 20))
fi

step 30 "versions" python - "$STANDIN" <<'PY'
import sys
from mpi4py import MPI
import mpi4py
print("mpi4py", mpi4py.__version__, "|", MPI.Get_library_version().splitlines()[0])
from collectives.executors.mpi import cuda_aware
print("MPI CUDA-aware:", cuda_aware())
if sys.argv[1] != "1":
    import cupy
    from cupy.cuda import nccl, runtime
    print("cupy", cupy.__version__, "| CUDA runtime", runtime.runtimeGetVersion(),
          "| driver", runtime.driverGetVersion(), "| GPUs", runtime.getDeviceCount())
    print("NCCL available:", nccl.available,
          "| version", nccl.get_version() if nccl.available else None)
PY

GPUS=$(python -c "import cupy; print(cupy.cuda.runtime.getDeviceCount())" 2>/dev/null || echo 0)
NCCL_RANKS="2 4"
if [ "$STANDIN" != 1 ] && [ "${NCCL_MULTI_RANK_GPU_ENABLE:-0}" != 1 ]; then
    NCCL_RANKS=""
    for n in 2 4; do [ "$GPUS" -ge "$n" ] && NCCL_RANKS="$NCCL_RANKS $n"; done
    [ -n "$NCCL_RANKS" ] || echo "### NCCL steps skipped: $GPUS GPU(s) and NCCL_MULTI_RANK_GPU_ENABLE unset"
fi

if [ "$STANDIN" = 1 ]; then
    echo "=== GPU tests: not run (no GPU; they skip without CuPy and a GPU)"
else
    step 200 "GPU tests" python -m pytest tests/test_executors_gpu.py -m gpu \
        -p no:cacheprovider -n 0 -v -rs --durations=5
fi
for n in $NCCL_RANKS; do
    step 40 "stream order, ${NCCL_XP[*]}, $n ranks" mpirun -n "$n" python -m mpi4py tests/mpi_workers/stream_order.py "${NCCL_XP[@]}"
done
step 40 "stream order, ${XP[*]}, 2 ranks" mpirun -n 2 python -m mpi4py tests/mpi_workers/stream_order.py "${XP[@]}"
for n in $NCCL_RANKS; do
    step 60 "time per call, ${NCCL_XP[*]}, $n ranks" mpirun -n "$n" python -m mpi4py benchmarks/bench_gpu.py "${NCCL_XP[@]}" --max-bytes "$MAX"
done
echo "### gpu_check: $([ $status = 0 ] && echo PASSED || echo FAILED)$([ "$STANDIN" = 1 ] && echo ' (stand-in, no GPU)')"
exit $status
