#!/usr/bin/env bash
# Real-GPU checks, for a machine with a CUDA GPU (see ../shared/GPU.md):
# the -m gpu tests first (fail fast), then the GPU benchmarks.
# Results (JSON + figures) go to $OUT if set (the device tool's output folder), else figures/gpu/.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-figures/gpu}"
py="${PYTHON:-python3}"  # the GPU machine's python3 has numba, numba-cuda and cupy
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "nvidia-smi not found"
} | tee "$out/device.txt"
NUMBA_ENABLE_CUDASIM=0 "$py" -m pytest -m gpu -x -q -p no:cacheprovider tests 2>&1 | tee "$out/gpu_tests.txt"
"$py" -m dtlab bench --gpu --out "$out" 2>&1 | tee "$out/gpu_bench.txt"
