"""Backend resolution."""

import subprocess
import sys

import numpy as np
import pytest

from dtlab.backend import Backend, cuda_status, describe, resolve_backend


def test_cpu_backend_is_numpy():
    be = resolve_backend("cpu")
    assert be.name == "cpu" and be.xp is np and not be.simulated
    assert len(be.devices()) >= 1 and all(d.kind == "cpu-worker" for d in be.devices())
    assert be.to_host(be.to_device([1, 2])).tolist() == [1, 2]


def test_auto_never_picks_the_simulator():
    # conftest turns the simulator on; auto must still mean the fast path
    assert resolve_backend("auto").name == "cpu"


def test_simulated_cuda_backend():
    be = resolve_backend("cuda")
    assert be.name == "cuda" and be.simulated and be.xp is np
    assert [d.kind for d in be.devices()] == ["simulated-gpu"]


def test_resolved_backend_passes_through():
    be = resolve_backend("cpu")
    assert resolve_backend(be) is be


def test_unknown_backend_name():
    with pytest.raises(ValueError, match="backend must be one of"):
        resolve_backend("tpu")


def test_cuda_without_gpu_names_what_is_missing():
    code = ("import os; os.environ['NUMBA_ENABLE_CUDASIM']='0'\n"
            "from dtlab.backend import resolve_backend, cuda_status\n"
            "ok, why = cuda_status()\n"
            "if ok: print('HAS-GPU')\n"
            "else:\n"
            "    try:\n        resolve_backend('cuda')\n    except RuntimeError as e: print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    if "HAS-GPU" in out:
        pytest.skip("a real GPU is present")
    assert "ERR backend='cuda' is not available" in out
    assert "numba" in out or "cupy" in out or "GPU" in out


def test_package_imports_without_cupy_or_numba_cuda():
    code = ("import sys, dtlab, dtlab.trees, dtlab.datasets, dtlab.plotting, dtlab.widgets\n"
            "print('numba.cuda' in sys.modules, 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_describe_reports_machine():
    info = describe()
    assert info["cpu_workers"] >= 1 and "numba" in info
    assert info["cuda_available"] == cuda_status()[0]


def test_backend_is_frozen():
    be = resolve_backend("cpu")
    assert isinstance(be, Backend)
    with pytest.raises(AttributeError):
        be.name = "cuda"
