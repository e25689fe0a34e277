"""Test setup: numba's CUDA simulator unless a real-GPU run asks otherwise; peers required under ``make test``.

``NUMBA_ENABLE_CUDASIM`` must be set before numba.cuda is first imported, so
it is set here at import time.  A real-GPU run sets ``NUMBA_ENABLE_CUDASIM=0``
(see ``make gpu-check``) and then ``-m gpu`` tests run on the device.

Tests that compare with a peer library import it with ``pytest.importorskip``,
so plain ``pytest`` on a machine without the peer skips them.  ``make test``
(and so CI) sets ``DTLAB_REQUIRE_PEERS=1``: then a test or a test module
skipped because a peer of :data:`PEERS` cannot be imported fails instead, so a
broken install cannot pass the suite by skipping its comparisons.
"""

import os
import re

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


#: The peer libraries of the comparisons (the ``dev`` extra installs them all); see the module docstring.
PEERS = ("xgboost", "lightgbm", "liblinear", "dask", "distributed", "pystreed")
REQUIRE_PEERS = "DTLAB_REQUIRE_PEERS"
_IMPORTORSKIP = re.compile(r"could not import '([\w.]+)'")


def missing_peer(reason: str) -> str | None:
    """The peer named by an ``importorskip`` skip reason (``"could not import 'xgboost': ..."``), else None."""
    found = _IMPORTORSKIP.search(reason)
    if found and found.group(1).split(".")[0] in PEERS:
        return found.group(1)
    return None


def _fail_when_a_peer_is_missing(report) -> None:
    if not report.skipped or os.environ.get(REQUIRE_PEERS) != "1":
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    peer = missing_peer(reason)
    if peer is not None:
        report.outcome = "failed"
        report.longrepr = (f"{REQUIRE_PEERS}=1 (make test): the peer {peer!r} is required, not skipped. {reason}. "
                           "Install the dev extra: pip install -e '.[dev]'")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_when_a_peer_is_missing(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a module-level importorskip skips the whole module at collection
    _fail_when_a_peer_is_missing(outcome.get_result())
