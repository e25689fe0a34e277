#!/usr/bin/env bash
# Real-GPU checks, for a machine with a CUDA GPU (see ../shared/GPU.md):
# the -m gpu tests first (fail fast), then the GPU benchmarks.
# Results (JSON + figures) go to $OUT if set (the device tool's output folder), else figures/gpu/.
# Fails (exit 2) with a message on a machine where no real GPU is usable: skipped tests prove nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-figures/gpu}"
py="${PYTHON:-python3}"  # the GPU machine's python3 has numba, numba-cuda and cupy
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg NUMBA_ENABLE_CUDASIM=0
if ! why=$("$py" -c "from dtlab.backend import cuda_status; ok, why = cuda_status(); print(why); raise SystemExit(0 if ok else 1)"); then
  echo "make gpu-check: no usable CUDA GPU here: ${why}" >&2
  echo "make gpu-check runs the real-GPU tests and benchmarks; on a machine without a GPU run 'make test'" >&2
  exit 2
fi
mkdir -p "$out"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "nvidia-smi not found"
} | tee "$out/device.txt"
"$py" -m pytest -m gpu -x -q -p no:cacheprovider tests 2>&1 | tee "$out/gpu_tests.txt"
"$py" -m dtlab bench --gpu --out "$out" 2>&1 | tee "$out/gpu_bench.txt"
