#!/usr/bin/env bash
# Real-GPU checks, for a machine with a CUDA GPU (see ../shared/GPU.md), one prepared run under 8 minutes:
#   1. the -m gpu tests (fail fast),
#   2. every kernel measured (CUDA events) against its H200 model (python -m workbench.gpu_check),
#   3. the GPU benchmarks (evolution_gpu: the H200 target; boosting_gpu).
# It uses what the machine has: its python3 with numba-cuda and its cupy (cupy-cuda12x or cupy-cuda13x: the lent H200
# machine has 13); nothing is installed. Each step has a time limit (TESTS_S, KERNELS_S, BENCH_S seconds).
# Results (JSON + figures) go to $OUT if set (the device tool's output folder), else figures/gpu/.
# Fails (exit 2) with a message on a machine where no real GPU is usable: skipped tests prove nothing.
# DRY_RUN=1 runs step 2 under numba's simulator on tiny inputs (no GPU, nothing measured): the script's own test;
# ONLY="inference boosting" limits step 2 to those workloads.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-figures/gpu}"
py="${PYTHON:-python3}"  # the GPU machine's python3 has numba, numba-cuda and cupy
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg
if [ "${DRY_RUN:-0}" = 1 ]; then
  mkdir -p "$out"
  NUMBA_ENABLE_CUDASIM=1 timeout "${KERNELS_S:-300}" "$py" -m workbench.gpu_check --dry-run --out "$out" \
    ${ONLY:+--only $ONLY}
  exit 0
fi
export NUMBA_ENABLE_CUDASIM=0
if ! why=$("$py" -c "from dtlab.backend import cuda_status; ok, why = cuda_status(); print(why); raise SystemExit(0 if ok else 1)"); then
  echo "make gpu-check: no usable CUDA GPU here: ${why}" >&2
  echo "make gpu-check runs the real-GPU tests and benchmarks; on a machine without a GPU run 'make test'" >&2
  exit 2
fi
mkdir -p "$out"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || echo "nvidia-smi not found"
  "$py" -c "import cupy, numba; from numba import cuda; print('cupy', cupy.__version__, '(CUDA runtime',
cupy.cuda.runtime.runtimeGetVersion(), ') numba', numba.__version__, 'device cc', cuda.get_current_device().compute_capability)"
} | tee "$out/device.txt"
timeout "${TESTS_S:-180}" "$py" -m pytest -m gpu -x -q -p no:cacheprovider tests 2>&1 | tee "$out/gpu_tests.txt"
timeout "${KERNELS_S:-90}" "$py" -m workbench.gpu_check --out "$out" ${ONLY:+--only $ONLY} 2>&1 \
  | tee "$out/gpu_kernels.txt"
# the two GPU benchmarks first, by name: the whole registry (CPU peers included) would not fit the step's limit
timeout "${BENCH_S:-180}" "$py" -m workbench bench --gpu --only evolution_gpu --only boosting_gpu --out "$out" 2>&1 \
  | tee "$out/gpu_bench.txt"
