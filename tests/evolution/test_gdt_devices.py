"""GDT on devices: the CUDA evaluator (simulated), the device pool, bad input, the same tree everywhere.

Under numba's CUDA simulator every CUDA thread runs as a Python thread, so
the data here are tiny (tens of rows, a few trees) and blocks small.
"""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtlab.backend import cuda_status
from dtlab.datasets import chess3x3
from dtlab.evolution import CpuEvaluator, GDTClassifier, NumpyEvaluator, PoolEvaluator
from dtlab.evolution.individual import pack
from dtlab.evolution.testing import random_individuals
from dtlab.testing import random_data

needs_cuda = pytest.mark.skipif(not cuda_status()[0], reason=f"cuda unavailable: {cuda_status()[1]}")
# the simulator runs the hash on numpy uint64 scalars, which warn on the intended wrap-around
quiet_overflow = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


def cuda_evaluator(*args, **kwargs):
    from dtlab.evolution.evaluators.cuda import CudaEvaluator

    return CudaEvaluator(*args, **kwargs)


def evaluate(make, X, y, n_classes, batch, seed, **kwargs):
    ev = make(X, y, n_classes, **kwargs)
    try:
        return ev.evaluate(batch, seed)
    finally:
        ev.close()


# ----------------------------------------------------------------- CUDA
@needs_cuda
@quiet_overflow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_samples=st.integers(1, 30), n_classes=st.integers(1, 3), n_trees=st.integers(1, 3),
       levels=st.sampled_from([0, 3]), seed=st.integers(0, 2**32 - 1), n_devices=st.sampled_from([1, 2, 4]),
       leaf_search=st.sampled_from(["walk", "bitmask"]), dtype=st.sampled_from([np.float32, np.float64]))
def test_property_cuda_evaluator_equals_reference(n_samples, n_classes, n_trees, levels, seed, n_devices,
                                                  leaf_search, dtype):
    """Counts and dipole draws bit for bit, shared-memory and global-memory statistics, 1-4 devices."""
    rng = np.random.default_rng(seed)
    X, y = random_data(rng, n_samples, 2, n_classes, dtype=dtype, levels=levels)
    batch = pack(random_individuals(rng, X, y, n_classes, n_trees, max_depth=3))
    expected = NumpyEvaluator(X, y, n_classes).evaluate(batch, seed)
    got = evaluate(cuda_evaluator, X, y, n_classes, batch, seed, n_devices=min(n_devices, n_samples),
                   leaf_search=leaf_search)
    assert got.equals(expected)


@needs_cuda
@quiet_overflow
def test_cuda_statistics_fit_shared_memory_or_fall_back_to_global():
    """With room for every tree in shared memory, and with none, the statistics are the same."""
    rng = np.random.default_rng(1)
    X, y = random_data(rng, 40, 3, 2, levels=4)
    batch = pack(random_individuals(rng, X, y, 2, 3, max_depth=3))
    expected = NumpyEvaluator(X, y, 2).evaluate(batch, 5)
    largest = int(np.diff(batch.node_offset).max()) * 2
    for slots in (largest, 1):
        got = evaluate(cuda_evaluator, X, y, 2, batch, 5, shared_slots=slots, threads_per_block=4)
        assert got.equals(expected), slots


@needs_cuda
@quiet_overflow
def test_cuda_evaluator_reports_phases_and_leaf_search():
    rng = np.random.default_rng(2)
    X, y = random_data(rng, 24, 2, 2)
    batch = pack(random_individuals(rng, X, y, 2, 2, max_depth=2))
    ev = cuda_evaluator(X, y, 2, n_devices=2)
    try:
        ev.evaluate(batch, 1)
        assert ev.calls == 1 and ev.timings["kernel"] > 0 and set(ev.timings) == {"prepare", "transfer", "kernel",
                                                                                  "merge"}
        assert ev.leaf_search_used == ["walk", "walk"] or not ev._backend.simulated  # the simulator keeps the walk
        assert np.array_equal(ev.rows(np.array([3, 0])), X[[3, 0]].astype(np.float64))
    finally:
        ev.close()
    with pytest.raises(ValueError, match="leaf_search must be one of"):
        cuda_evaluator(X, y, 2, leaf_search="fastest")


# ----------------------------------------------------------------- pool
@pytest.mark.parametrize("n_devices", [1, 2])
def test_pool_workers_own_their_shards_and_merge_exactly(n_devices):
    rng = np.random.default_rng(3)
    X, y = random_data(rng, 3000, 3, 3)
    batch = pack(random_individuals(rng, X, y, 3, 8))
    ev = PoolEvaluator(X, y, 3, n_devices)
    try:
        assert ev.n_devices == n_devices and [b - a for a, b in ev.bounds] == [3000 // n_devices] * n_devices
        assert ev.evaluate(batch, 4).equals(NumpyEvaluator(X, y, 3).evaluate(batch, 4))
    finally:
        ev.close()


def test_more_cpu_workers_than_cores_warn():
    import os

    cores = len(os.sched_getaffinity(0))
    rng = np.random.default_rng(4)
    X, y = random_data(rng, 100, 2, 2)
    with pytest.warns(UserWarning, match=f"n_devices={cores + 1} CPU workers on a machine with {cores} cores"):
        CpuEvaluator(X, y, 2, n_devices=cores + 1).close()


def test_a_device_that_counts_wrong_is_refused():
    """A shard whose statistics do not count its rows (a silent failure) stops the evaluation."""
    from dtlab.evolution.evaluators.devices import CpuShard

    rng = np.random.default_rng(5)
    X, y = random_data(rng, 60, 2, 2)
    batch = pack(random_individuals(rng, X, y, 2, 2))
    ev = PoolEvaluator(X, y, 2, 2)
    broken = ev._pool.states[1]

    class Lossy(CpuShard):
        def evaluate(self, work):
            stats, seconds = super().evaluate(work)
            stats.counts[stats.counts > 0] -= 1  # loses rows
            return stats, seconds

    ev._pool.states[1] = Lossy(broken.Xt, broken.y, broken.start, 2)
    try:
        with pytest.raises(RuntimeError, match="cpu device 1 counted .* statistics are refused"):
            ev.evaluate(batch, 1)
    finally:
        ev.close()


# ------------------------------------------------------------ bad input
def test_backend_cuda_without_a_gpu_is_a_clear_error(monkeypatch):
    import dtlab.backend

    monkeypatch.setattr(dtlab.backend, "cuda_status", lambda: (False, "no CUDA driver or GPU was found"))
    X, y = chess3x3(50, seed=0)
    clf = GDTClassifier(backend="cuda", max_generations=1)
    with pytest.raises(RuntimeError, match="backend='cuda' is not available on this machine: no CUDA driver"):
        clf.fit(X, y)
    assert not hasattr(clf, "tree_") and not hasattr(clf, "classes_")


@needs_cuda
def test_more_gpus_than_present_name_how_many_there_are():
    from dtlab.evolution.evaluators.cuda import SIMULATED_DEVICES

    X, y = chess3x3(50, seed=0)
    clf = GDTClassifier(backend="cuda", n_devices=SIMULATED_DEVICES + 1, max_generations=1)
    with pytest.raises(ValueError, match=f"this machine has {SIMULATED_DEVICES} simulated GPUs"):
        clf.fit(X, y)
    assert not hasattr(clf, "tree_")


@needs_cuda
def test_data_too_large_for_the_gpus_fail_before_allocating(monkeypatch):
    from dtlab.evolution.evaluators import cuda as cuda_module

    monkeypatch.setattr(cuda_module.CudaEvaluator, "device_free_bytes", lambda self: [1000, 1000])
    allocated = []
    monkeypatch.setattr("dtlab.evolution.evaluators._fitness_cuda.CudaShard", lambda *a, **k: allocated.append(a))
    X, y = chess3x3(200, seed=0)  # 200 rows x 12 bytes: 2,400 bytes
    clf = GDTClassifier(backend="cuda", max_generations=1)
    with pytest.raises(MemoryError, match=r"need 0\.00 GiB .* 2 simulated GPUs.* Nothing was allocated"):
        clf.fit(X, y)
    assert not allocated and not hasattr(clf, "tree_")
    # data larger than one device's memory are spread over the devices
    monkeypatch.setattr(cuda_module.CudaEvaluator, "device_free_bytes", lambda self: [1500, 1500, 1500])
    ev = cuda_module.CudaEvaluator.__new__(cuda_module.CudaEvaluator)
    ev._backend, ev.n_samples = cuda_module.resolve_backend("cuda"), 200
    assert ev._plan(X, None) == 2


# ------------------------------------------------------------ same tree
TINY = dict(population_size=6, max_generations=4, random_state=7, init_max_depth=3)


@pytest.fixture(scope="module")
def tiny_chess():
    return chess3x3(48, noise_attrs=1, seed=2)


@pytest.fixture(scope="module")
def reference_tree(tiny_chess):
    X, y = tiny_chess
    clf = GDTClassifier(**TINY, backend="cpu", evaluator="reference").fit(X, y)
    assert clf.tree_.n_nodes > 1 and clf.history_.n_evaluated.iloc[1:].sum() > 0  # a tree worth comparing
    return clf


@pytest.mark.parametrize("n_devices", [None, 1, 2, 4])
def test_same_tree_on_cpu_for_any_number_of_workers(n_devices, tiny_chess, reference_tree):
    X, y = tiny_chess
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "n_devices=4 CPU workers", UserWarning)
        clf = GDTClassifier(**TINY, backend="cpu", n_devices=n_devices).fit(X, y)
    assert clf.tree_.equals(reference_tree.tree_)
    assert np.array_equal(clf.history_.best_fitness, reference_tree.history_.best_fitness)


@needs_cuda
@quiet_overflow
@pytest.mark.parametrize("n_devices", [1, 2, 4])
def test_same_tree_on_cuda_for_any_number_of_devices(n_devices, tiny_chess, reference_tree):
    X, y = tiny_chess
    clf = GDTClassifier(**TINY, backend="cuda", n_devices=n_devices).fit(X, y)
    assert clf.tree_.equals(reference_tree.tree_)
    assert np.array_equal(clf.history_.mean_fitness, reference_tree.history_.mean_fitness)


# ------------------------------------------------------------- real GPU
@pytest.mark.gpu
@pytest.mark.parametrize("leaf_search", ["walk", "bitmask", "auto"])
def test_cuda_evaluator_equals_the_cpu_one_on_a_real_gpu(leaf_search):
    """300,000 rows, trees up to depth 9: over 64 leaves (walked) and over the shared-memory slots (global)."""
    X, y = chess3x3(300_000, noise_attrs=4, seed=0)
    rng = np.random.default_rng(0)
    batch = pack(random_individuals(rng, X[:20_000], y[:20_000], 2, 40, max_depth=9))
    assert int(np.diff(batch.node_offset).max()) * 2 > 1024  # some tree's statistics leave shared memory
    expected = evaluate(CpuEvaluator, X, y, 2, batch, 3)
    assert evaluate(cuda_evaluator, X, y, 2, batch, 3, leaf_search=leaf_search).equals(expected)


@pytest.mark.gpu
def test_same_tree_on_a_real_gpu_as_on_the_cpu():
    X, y = chess3x3(20_000, noise_attrs=2, seed=1)
    params = dict(population_size=20, max_generations=40, random_state=0)
    cpu = GDTClassifier(**params, backend="cpu").fit(X, y)
    gpu = GDTClassifier(**params, backend="cuda").fit(X, y)
    assert gpu.tree_.equals(cpu.tree_)
    assert np.array_equal(gpu.history_.mean_fitness, cpu.history_.mean_fitness)
