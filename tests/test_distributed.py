"""The foundation's device pool, shard planning and Dask executor (generic: no technique involved)."""

import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

from dtlab.distributed import DeviceError, DevicePool, plan_shards, shard_bounds


def test_shard_bounds_cover_the_rows_contiguously():
    assert shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_bounds(5, 5) == [(i, i + 1) for i in range(5)]
    with pytest.raises(ValueError, match="cannot split 3 rows into 4"):
        shard_bounds(3, 4)


def test_plan_shards_spreads_data_larger_than_one_device():
    gib = 2**30
    assert plan_shards(100, 8, [gib, gib]) == 1  # fits on one
    assert plan_shards(100, 8, [500, 500, 500]) == 2  # 800 bytes: two devices of 500
    assert plan_shards(100, 8, [None, None], n_devices=2) == 2  # unknown memory is assumed to fit
    assert plan_shards(3, 8, [None] * 4, n_devices=4) == 3  # never more shards than rows


def test_plan_shards_refuses_what_cannot_fit_before_allocating():
    with pytest.raises(MemoryError, match=r"need 0\.00 GiB of GPU memory \(1,000 rows x 8 bytes\) spread over 2 GPUs"):
        plan_shards(1000, 8, [100, 100], kind="GPU")
    with pytest.raises(MemoryError, match="ask for more devices"):
        plan_shards(1000, 8, [600, 600], n_devices=1, kind="GPU")
    with pytest.raises(ValueError, match="n_devices=3 but this machine has 2 GPUs; ask for at most 2"):
        plan_shards(10, 8, [None, None], n_devices=3, kind="GPU")


def test_device_pool_keeps_each_state_on_its_own_thread():
    pool = DevicePool(3)
    try:
        pool.start(lambda i: {"device": i, "thread": threading.get_ident()})
        out = pool.map(lambda state, k: (state["device"] * k, state["thread"] == threading.get_ident()), 10)
        assert out == [(0, True), (10, True), (20, True)]
        assert len(pool.last_seconds) == 3
    finally:
        pool.close()
    pool.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        pool.map(len)


def test_device_pool_names_the_failing_device():
    pool = DevicePool(2, serialize=True)
    pool.start(lambda i: i)

    def fail_on_one(state):
        if state == 1:
            raise ValueError("boom")
        return state

    with pytest.raises(DeviceError, match="fail_on_one failed on device 1 of 2: ValueError: boom"):
        pool.map(fail_on_one)
    pool.close()
    with pytest.raises(ValueError, match="at least one device"):
        DevicePool(0)


distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")


def _rows(Xt):
    return {"n": int(np.asarray(Xt).shape[0])}


def _count(state, k):
    return state["n"] + k


def _explode(state):
    raise ZeroDivisionError("on the worker")


def test_dask_executor_maps_over_parts_and_reports_worker_errors():
    from dtlab.distributed.dask_executor import DaskExecutor

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        ex = DaskExecutor(client, [(np.zeros(3),), (np.zeros(5),), (np.zeros(7),)], _rows)
        assert ex.map(_count, 1) == [4, 6, 8]
        assert len(set(ex.workers)) == 2 and ex.last_seconds["round"] >= ex.last_seconds["work"] >= 0
        with pytest.raises(ZeroDivisionError, match="on the worker"):  # a failing task, not a lost worker
            ex.map(_explode)
        ex.close()
        assert client.status == "running"


def _slow_count(state, k, seconds):
    time.sleep(seconds)
    return state["n"] + k


@pytest.fixture(scope="module")
def process_cluster():
    """Two worker processes (each under a nanny, which starts a new one when its worker dies) on loopback.

    The workers import this module's functions by value: the test folder need not be importable there.
    """
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, protocol="tcp",
                                      host="127.0.0.1", dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            yield client
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_a_worker_process_killed_mid_round_has_its_part_resent_and_the_round_completes(process_cluster):
    """SIGKILL to the process of the worker holding part 0 while the round runs: the round still gives every
    part's result, computed again from the host's copy of the part, well within the round's timeout."""
    from dtlab.distributed.dask_executor import DaskExecutor

    client = process_cluster
    ex = DaskExecutor(client, [(np.zeros(3),), (np.zeros(5),)], _rows, round_timeout=60)
    try:
        assert ex.map(_count, 1) == [4, 6] and ex.resent == 0
        victim = ex.workers[0]
        pid = client.run(os.getpid, workers=[victim])[victim]
        assert pid != os.getpid()  # a process of its own
        killed_at = []
        killer = threading.Timer(1.0, lambda: (os.kill(pid, signal.SIGKILL), killed_at.append(time.monotonic())))
        start = time.monotonic()
        killer.start()
        result = ex.map(_slow_count, 1, 3.0)  # each part sleeps 3 s on its worker: the kill lands mid-round
        end = time.monotonic()
        killer.join()
        assert result == [4, 6]
        assert start < killed_at[0] < end - 2.0, "the worker was not killed while the round ran"
        assert ex.resent >= 1 and ex.workers[0] != victim
        assert end - start < 30
        assert ex.map(_count, 2) == [5, 7]  # and the executor keeps working
    finally:
        ex.close()


def test_a_round_that_hangs_stops_with_a_clear_error_within_its_timeout(process_cluster):
    from dtlab.distributed.dask_executor import ClusterError, DaskExecutor

    ex = DaskExecutor(process_cluster, [(np.zeros(3),), (np.zeros(5),)], _rows, round_timeout=2.0)
    try:
        start = time.monotonic()
        with pytest.raises(ClusterError, match=r"did not finish within 2 s \(2 of 2 parts still pending"):
            ex.map(_slow_count, 0, 8.0)  # a worker stuck in its work (sleeping past the timeout)
        assert time.monotonic() - start < 6
    finally:
        ex.close()
    with pytest.raises(ValueError, match="round_timeout must be > 0"):
        DaskExecutor(process_cluster, [(np.zeros(3),)], _rows, round_timeout=0)


def test_importing_gdt_and_the_pools_pulls_in_no_cuda_cupy_or_dask():
    import subprocess
    import sys

    code = ("import sys, dtlab.distributed, dtlab.evolution, dtlab.evolution.evaluators.cuda\n"
            "print(*(m in sys.modules for m in ('numba.cuda', 'cupy', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "False"]
