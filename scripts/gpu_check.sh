#!/usr/bin/env bash
# Run the GPU executor tests on a machine with CUDA GPUs: CuPy buffers over MPI (CUDA-aware
# or staged through pinned host memory, whichever the MPI library calls for) at 1, 3 and 4
# ranks sharing the GPUs, and NCCL with one rank per GPU (up to 4).
# Needs cupy-cuda12x (and its NCCL) installed: `pip install -e ".[gpu,test]"` where PyPI is
# reachable; the script does not download anything.
set -euo pipefail
cd "$(dirname "$0")/.."
nvidia-smi -L
python - <<'PY'
import cupy
from cupy.cuda import nccl
from mpi4py import MPI
from collectives.executors.mpi import cuda_aware
print("cupy", cupy.__version__, "| gpus", cupy.cuda.runtime.getDeviceCount(),
      "| nccl", nccl.get_version(), "| MPI CUDA-aware:", cuda_aware())
PY
python -m pytest tests/test_executors_gpu.py -m gpu -p no:randomly -n 0 -v -rs --durations=5 "$@"
