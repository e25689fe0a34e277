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
    code = ("import sys, dtlab, dtlab.trees, dtlab.datasets, dtlab.plotting, workbench.widgets\n"
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


def test_check_fits_refuses_more_than_the_host_has():
    be = resolve_backend("cpu")
    free = be.free_bytes()
    assert free is None or free > 0
    be.check_fits(1024)  # a kilobyte always fits
    if free is not None:
        with pytest.raises(MemoryError, match=r"the rows need .* GiB in host memory but only .* GiB are free"):
            be.check_fits(free * 4, "the rows")


def test_simulated_gpu_has_no_memory_limit():
    be = resolve_backend("cuda")
    assert be.free_bytes() is None
    be.check_fits(2**60)


def test_device_arrays_are_detected_in_one_place():
    from dtlab.backend import is_device_array, to_host

    class FakeCupy:  # what matters is the defining module, as for cupy.ndarray
        __module__ = "cupy._core.core"

        def get(self):
            return np.arange(3)

    assert is_device_array(FakeCupy()) and not is_device_array(np.arange(3))
    assert to_host(FakeCupy()).tolist() == [0, 1, 2]
    assert resolve_backend("cuda", FakeCupy()).name == "cuda"
    with pytest.raises(ValueError, match="cupy"):
        resolve_backend("cpu", FakeCupy())
