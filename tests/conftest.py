"""Test setup: numba's CUDA simulator unless a real-GPU run asks otherwise.

``NUMBA_ENABLE_CUDASIM`` must be set before numba.cuda is first imported, so
it is set here at import time.  A real-GPU run sets ``NUMBA_ENABLE_CUDASIM=0``
(see ``make gpu-check``) and then ``-m gpu`` tests run on the device.
"""

import os

import numpy as np
import pytest

from dtlab.backend import cuda_status, enable_cuda_simulator

if os.environ.get("NUMBA_ENABLE_CUDASIM", "1") == "1":
    enable_cuda_simulator()

BACKENDS = ["cpu", "cuda"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Run a test on the CPU and on CUDA (simulated unless a real GPU run)."""
    if request.param == "cuda" and not cuda_status()[0]:
        pytest.skip(f"cuda backend unavailable: {cuda_status()[1]}")
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def pytest_collection_modifyitems(config, items):
    real_gpu = os.environ.get("NUMBA_ENABLE_CUDASIM") == "0" and cuda_status()[0]
    if real_gpu:
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (NUMBA_ENABLE_CUDASIM=0)")
    for item in items:
        # the marker, not item.keywords: keywords hold every parent's name, so a checkout in a folder named
        # "gpu" would skip the whole suite
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
