"""`make gpu-check` fails loudly where no real GPU is usable (skipped GPU tests prove nothing)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dtlab.backend import cuda_status

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_fails_without_a_gpu(tmp_path):
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path), NUMBA_ENABLE_CUDASIM="0")
    probe = subprocess.run([sys.executable, "-c", "from numba import cuda; print(cuda.is_available())"],
                           capture_output=True, text=True, env=env, timeout=120)
    if probe.stdout.strip() == "True" and cuda_status()[0]:
        pytest.skip("a real GPU is present: gpu-check would run")
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh")], capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "no usable CUDA GPU here" in run.stderr
    assert not any(tmp_path.iterdir())  # nothing was measured or written


def test_gpu_check_dry_run_records_and_models_every_launch(tmp_path):
    """The kernel step of gpu-check, without a GPU: the inference workload runs under the simulator, every
    launch is recorded and priced by the H200 model, nothing is called measured."""
    import json

    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path), DRY_RUN="1", ONLY="inference")
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh")], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "nothing measured" in run.stdout
    doc = json.loads((tmp_path / "kernels_dry_run.json").read_text())
    names = {r["kernel"] for r in doc["kernels"]}
    assert {"inference.traverse", "inference.bitmask", "inference.sum_leaves", "inference.quickscorer",
            "trees.apply"} <= names
    assert all(r["measured_s"] is None and r["modelled_s"] > 0 for r in doc["kernels"])
