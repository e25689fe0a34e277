"""Test setup: numba's CUDA simulator unless a real-GPU run asks otherwise; peers required under ``make test``.

``NUMBA_ENABLE_CUDASIM`` must be set before numba.cuda is first imported, so
it is set here at import time.  A real-GPU run sets ``NUMBA_ENABLE_CUDASIM=0``
(see ``make gpu-check``) and then ``-m gpu`` tests run on the device.

Tests that compare with a peer library import it with ``pytest.importorskip``,
so plain ``pytest`` on a machine without the peer skips them.  ``make test``
(and so CI) sets ``DTLAB_REQUIRE_PEERS=1``: then a test or a test module
skipped because a peer of :data:`PEERS` cannot be imported fails instead, so a
broken install cannot pass the suite by skipping its comparisons.  The peers
``make peers`` builds apart from the venv (:data:`BUILT_PEERS`, under
``.peers/``; ``make test`` builds them first) are reached through the fixtures
:func:`liblinear_multicore_built` and :func:`lleaves_python`, which skip where
the build is missing, and fail likewise under ``DTLAB_REQUIRE_PEERS=1``.
"""

import os
import re

import numpy as np
import pytest

from dtlab.backend import cuda_status, enable_cuda_simulator

if os.environ.get("NUMBA_ENABLE_CUDASIM", "1") == "1":
    enable_cuda_simulator()


#: Seconds the simulator's block manager pauses between two polls of its threads (see below).
SIMULATOR_POLL_PAUSE = 2e-5


def _poll_less_simulator() -> None:
    """numba's CUDA simulator with a block manager that pauses between polls of its threads.

    The simulator runs each CUDA thread of a block as a Python thread while its
    ``BlockManager.run`` polls them (``is_alive`` and the syncthreads flags of
    every thread) in a loop with no wait.  That loop holds the GIL most of the
    time: profiled on a boosting fit, 80% of a simulated kernel's time went to
    the polls.  This is the same loop (numba-cuda 0.30's, BSD licence) with a
    pause of :data:`SIMULATOR_POLL_PAUSE` at the end of each pass, so the
    simulated threads run; what the threads compute and the barrier semantics
    (release when every live thread waits at ``syncthreads``) are unchanged.
    """
    import time

    from numba.cuda.simulator import kernel as simulator

    def run(self, grid_point, *args):
        threads, livethreads, blockedthreads = set(), set(), set()
        for block_point in np.ndindex(*self._block_dim):
            def target():
                self._f(*args)

            t = simulator.BlockThread(target, self, grid_point, block_point, self._debug)
            t.start()
            threads.add(t)
            livethreads.add(t)
        while livethreads:
            for t in livethreads:
                if t.syncthreads_blocked:
                    blockedthreads.add(t)
                elif t.exception:
                    for t_other in threads:
                        t_other.abort = True
                        t_other.syncthreads_blocked = False
                        t_other.syncthreads_event.set()
                    raise t.exception[0].with_traceback(t.exception[1])
            if livethreads == blockedthreads:
                for t in blockedthreads:
                    t.syncthreads_blocked = False
                    t.syncthreads_event.set()
                blockedthreads = set()
            livethreads = {t for t in livethreads if t.is_alive()}
            if livethreads:
                time.sleep(SIMULATOR_POLL_PAUSE)
        for t in threads:
            if t.exception:
                raise t.exception[0].with_traceback(t.exception[1])

    simulator.BlockManager.run = run


if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    _poll_less_simulator()

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


#: The peer libraries of the comparisons (the ``dev`` extra installs them all, as does the ``peers`` extra);
#: see the module docstring.
PEERS = ("xgboost", "lightgbm", "liblinear", "dask", "distributed", "pystreed", "pycontree", "tl2cgen", "treelite")
#: The peers ``make peers`` builds under ``.peers/`` (workbench.peer_env), not importable from the venv.
BUILT_PEERS = ("liblinear-multicore", "lleaves")
REQUIRE_PEERS = "DTLAB_REQUIRE_PEERS"
_IMPORTORSKIP = re.compile(r"could not import '([\w.]+)'")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_NOT_BUILT = re.compile(r"the peer build '([\w-]+)' is missing")


def missing_peer(reason: str) -> str | None:
    """The peer named by a skip reason, else None: an ``importorskip`` one (``"could not import 'xgboost': ..."``;
    where the module imported fails on another peer missing, ``tl2cgen`` without ``treelite``, that one), or
    one of the fixtures of :data:`BUILT_PEERS` (``"the peer build 'lleaves' is missing: ..."``)."""
    built = _NOT_BUILT.search(reason)
    if built and built.group(1) in BUILT_PEERS:
        return built.group(1)
    found = _IMPORTORSKIP.search(reason)
    if not found:
        return None
    inner = _NO_MODULE.search(reason[found.end():])
    if inner and inner.group(1).split(".")[0] in PEERS and inner.group(1).split(".")[0] != found.group(1).split(".")[0]:
        return inner.group(1)
    if found.group(1).split(".")[0] in PEERS:
        return found.group(1)
    return None


def _fail_when_a_peer_is_missing(report) -> None:
    if not report.skipped or os.environ.get(REQUIRE_PEERS) != "1":
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    peer = missing_peer(reason)
    if peer is not None:
        how = ("Build it: make peers (make test does)" if peer in BUILT_PEERS
               else "Install the dev extra: pip install -e '.[dev]'")
        report.outcome = "failed"
        report.longrepr = f"{REQUIRE_PEERS}=1 (make test): the peer {peer!r} is required, not skipped. {reason}. {how}"


@pytest.fixture
def liblinear_multicore_built():
    """The folder of liblinear-multicore's ``liblinear`` package (``make peers``); skips where it is not built
    (fails under ``DTLAB_REQUIRE_PEERS=1``)."""
    from workbench.peer_env import liblinear_multicore_dir

    try:
        return liblinear_multicore_dir()
    except ModuleNotFoundError as err:
        pytest.skip(f"the peer build 'liblinear-multicore' is missing: {err}")


@pytest.fixture
def lleaves_python():
    """The python of lleaves' own venv (``.peers/lleaves``, ``make peers``); skips where it is not built (fails
    under ``DTLAB_REQUIRE_PEERS=1``)."""
    from workbench.peer_env import peer_python

    try:
        return peer_python("lleaves")
    except FileNotFoundError as err:
        pytest.skip(f"the peer build 'lleaves' is missing: {err}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_when_a_peer_is_missing(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a module-level importorskip skips the whole module at collection
    _fail_when_a_peer_is_missing(outcome.get_result())
