"""Evaluators and kernels of GDT against the plain references."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtlab.datasets import shard
from dtlab.evolution import EVALUATORS, CpuEvaluator, LeafStats, NumpyEvaluator, merge_stats, resolve_evaluator
from dtlab.evolution._operators_cpu import _propagate_up
from dtlab.evolution.evaluators._fitness_cpu import ROW_CHUNK, _evaluate_range_parallel, _splitmix64
from dtlab.evolution.evaluators.draws import EMPTY_HASH, compile_row_functions, splitmix64, tree_salts
from dtlab.evolution.individual import apply_stats, pack, to_flat_tree
from dtlab.evolution.testing import random_individuals as random_trees
from dtlab.testing import random_data
from dtlab.trees import PackedForest, apply_reference
from dtlab.trees.bitmask import forest_masks


def brute_force_stats(X, y, n_classes, batch, seed, row_offset=0):
    """Statistics straight from the definition: leaf by FlatTree traversal, draw by sorting all keys."""
    stats = LeafStats.empty(batch.n_nodes, n_classes)
    rows = np.arange(row_offset, row_offset + X.shape[0])
    row_hash = splitmix64(np.uint64(seed) ^ rows.astype(np.uint64))
    for t in range(batch.n_trees):
        a, b = batch.node_offset[t], batch.node_offset[t + 1]
        local_left = np.where(batch.left[a:b] >= 0, batch.left[a:b] - a, -1)
        local_right = np.where(batch.right[a:b] >= 0, batch.right[a:b] - a, -1)
        from dtlab.trees import FlatTree

        tree = FlatTree(feature=np.where(local_left >= 0, batch.feature[a:b], -1), threshold=batch.threshold[a:b],
                        left=local_left, right=local_right, value=np.zeros((b - a, 1)), n_features=X.shape[1])
        leaf = apply_reference(tree, X) + a
        h = row_hash ^ tree_salts(seed, batch.n_trees)[t]
        for node in np.unique(leaf):
            for c in range(n_classes):
                members = np.flatnonzero((leaf == node) & (y == c))
                stats.counts[node, c] = members.size
                keys = sorted(zip(h[members].tolist(), rows[members].tolist()))[:2]
                for s, (hv, r) in enumerate(keys):
                    stats.cand_hash[node, c, s] = hv
                    stats.cand_row[node, c, s] = r
    return stats


def test_splitmix64_numba_matches_numpy():
    x = np.array([0, 1, 2, 2**63, 2**64 - 1, 123456789], dtype=np.uint64)
    expected = splitmix64(x)
    got = np.array([_splitmix64(v) for v in x], dtype=np.uint64)
    assert np.array_equal(got, expected)
    # known first output of SplitMix64 seeded with 0 (Vigna's reference implementation)
    assert int(expected[0]) == 0xE220A8397B1DCDAF
    assert len(np.unique(expected)) == len(x)


def test_compile_row_functions_gives_every_function():
    import numba

    compiled = compile_row_functions(numba.njit)
    assert set(compiled) == {"splitmix64", "key_less", "insert_candidate", "find_leaf", "accumulate_row"}
    assert compiled["key_less"](np.uint64(1), 5, np.uint64(2), 0)
    assert compiled["key_less"](np.uint64(9), 5, EMPTY_HASH, -1)  # an empty slot sorts last
    assert not compiled["key_less"](np.uint64(3), 5, np.uint64(3), 4)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_numpy_reference_matches_definition(n_classes):
    rng = np.random.default_rng(0)
    X, y = random_data(rng, 300, 3, n_classes, levels=6)
    trees = random_trees(rng, X, y, n_classes, 6)
    batch = pack(trees)
    got = NumpyEvaluator(X, y, n_classes).evaluate(batch, 7)
    assert got.equals(brute_force_stats(X, y, n_classes, batch, 7))


@pytest.mark.filterwarnings("ignore:n_devices=3 CPU workers:UserWarning")  # more workers than a 2-core machine has
@pytest.mark.parametrize("n_devices", [None, 1, 2, 3])
def test_cpu_evaluator_matches_numpy_reference(n_devices):
    rng = np.random.default_rng(1)
    X, y = random_data(rng, 2000, 4, 3)
    trees = random_trees(rng, X, y, 3, 12)
    batch = pack(trees)
    expected = NumpyEvaluator(X, y, 3).evaluate(batch, 99)
    evaluator = CpuEvaluator(X, y, 3, n_devices=n_devices)
    try:
        got = evaluator.evaluate(batch, 99)
    finally:
        evaluator.close()
    assert got.equals(expected)
    # every leaf's counts add up to the data, per tree
    for t in range(batch.n_trees):
        a, b = batch.node_offset[t], batch.node_offset[t + 1]
        assert np.array_equal(got.counts[a:b].sum(axis=0), np.bincount(y, minlength=3))


def test_result_does_not_depend_on_the_number_of_blocks():
    """Several row chunks per block, trees with and without leaf bitmasks (over 64 leaves), ties on thresholds."""
    rng = np.random.default_rng(2)
    X, y = random_data(rng, 2 * ROW_CHUNK + 555, 3, 2, levels=50)
    trees = random_trees(rng, X, y, 2, 6, max_depth=9)
    batch = pack(trees)
    n_leaves = [int((t.left == -1).sum()) for t in trees]
    assert min(n_leaves) <= 64 < max(n_leaves), n_leaves
    expected = NumpyEvaluator(X, y, 2).evaluate(batch, 3)
    results = []
    for n_blocks in (1, 2, 7, 64):
        stats = LeafStats.empty(batch.n_nodes, 2)
        masks = forest_masks(batch, X.dtype)
        _evaluate_range_parallel(np.ascontiguousarray(X.T), y, np.int64(0), np.int64(X.shape[0]), np.int64(0),
                                 np.uint64(3),
                                 batch.node_offset, batch.feature, batch.threshold, batch.left, batch.right,
                                 batch.missing_left, tree_salts(3, batch.n_trees), masks.masked, masks.test_offset,
                                 masks.test_feature, masks.test_threshold, masks.test_mask, masks.leaf_offset,
                                 masks.leaf_node, n_blocks, stats.counts, stats.cand_hash, stats.cand_row)
        results.append(stats)
    assert all(r.equals(expected) for r in results)


@pytest.mark.parametrize("n_shards", [2, 3, 5])
def test_merging_shard_stats_equals_whole(n_shards):
    rng = np.random.default_rng(3)
    X, y = random_data(rng, 500, 3, 3, levels=4)
    batch = pack(random_trees(rng, X, y, 3, 8))
    whole = NumpyEvaluator(X, y, 3).evaluate(batch, 11)
    parts = [NumpyEvaluator(p.X, p.y, 3, row_offset=p.start).evaluate(batch, 11) for p in shard(X, y, n_shards)]
    assert merge_stats(parts).equals(whole)
    assert merge_stats(parts[::-1]).equals(whole)  # order of parts does not matter


def test_drawn_rows_lie_in_their_leaf_and_class():
    rng = np.random.default_rng(4)
    X, y = random_data(rng, 800, 2, 2)
    trees = random_trees(rng, X, y, 2, 4)
    batch = pack(trees)
    stats = CpuEvaluator(X, y, 2).evaluate(batch, 5)
    for t, ind in enumerate(trees):
        a = batch.node_offset[t]
        leaf = apply_reference(to_flat_tree(ind, 2), X) + a
        for node in range(a, batch.node_offset[t + 1]):
            for c in range(2):
                drawn = stats.cand_row[node, c]
                assert (drawn >= 0).sum() == min(2, stats.counts[node, c])
                for r in drawn[drawn >= 0]:
                    assert leaf[r] == node and y[r] == c
                if (drawn >= 0).all():
                    assert drawn[0] != drawn[1]


def test_draw_changes_with_seed_but_not_with_row_order_of_processing():
    rng = np.random.default_rng(5)
    X, y = random_data(rng, 400, 2, 2)
    trees = random_trees(rng, X, y, 2, 3)
    ev = CpuEvaluator(X, y, 2)
    a = ev.evaluate(pack(trees), 1)
    b = ev.evaluate(pack(trees), 2)
    assert np.array_equal(a.counts, b.counts)
    assert not np.array_equal(a.cand_row, b.cand_row)


def test_propagate_up_gives_subtree_statistics():
    rng = np.random.default_rng(6)
    X, y = random_data(rng, 600, 3, 2)
    trees = random_trees(rng, X, y, 2, 5, max_depth=4)
    batch = pack(trees)
    stats = CpuEvaluator(X, y, 2).evaluate(batch, 8)
    _propagate_up(batch.left, batch.right, stats.counts, stats.cand_hash, stats.cand_row)
    whole = brute_force_stats(X, y, 2, pack([t.__class__.leaf(2) for t in trees]), 8)
    for t in range(batch.n_trees):
        root = batch.node_offset[t]
        # a tree's root sees every row: same draw as a one-leaf tree with the same salt
        assert np.array_equal(stats.counts[root], whole.counts[t])
        assert np.array_equal(stats.cand_row[root], whole.cand_row[t])


def test_apply_stats_sets_accuracy_and_fitness():
    rng = np.random.default_rng(7)
    X, y = random_data(rng, 500, 2, 2)
    trees = random_trees(rng, X, y, 2, 4)
    batch = pack(trees)
    apply_stats(trees, batch, CpuEvaluator(X, y, 2).evaluate(batch, 1), X.shape[0], alpha=0.01)
    for ind in trees:
        flat = to_flat_tree(ind, 2)
        accuracy = np.mean(flat.predict(X) == y)
        assert ind.evaluated
        assert ind.accuracy == pytest.approx(accuracy)
        assert ind.fitness == pytest.approx(accuracy - 0.01 * (ind.n_nodes - 1))


@pytest.mark.filterwarnings("ignore:n_devices=3 CPU workers:UserWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_samples=st.integers(1, 60), n_features=st.integers(1, 3), n_classes=st.integers(1, 3),
       n_trees=st.integers(1, 4), levels=st.sampled_from([0, 2, 5]), seed=st.integers(0, 2**32 - 1),
       n_devices=st.integers(1, 3), dtype=st.sampled_from([np.float32, np.float64]))
def test_property_cpu_kernel_equals_reference(n_samples, n_features, n_classes, n_trees, levels, seed, n_devices,
                                              dtype):
    rng = np.random.default_rng(seed)
    X, y = random_data(rng, n_samples, n_features, n_classes, dtype=dtype, levels=levels)
    batch = pack(random_trees(rng, X, y, n_classes, n_trees))
    expected = brute_force_stats(X, y, n_classes, batch, seed)
    assert NumpyEvaluator(X, y, n_classes).evaluate(batch, seed).equals(expected)
    ev = CpuEvaluator(X, y, n_classes, n_devices=n_devices)
    try:
        assert ev.evaluate(batch, seed).equals(expected)
    finally:
        ev.close()
    if n_samples >= 2:
        parts = [NumpyEvaluator(p.X, p.y, n_classes, row_offset=p.start).evaluate(batch, seed)
                 for p in shard(X, y, 2)]
        assert merge_stats(parts).equals(expected)


def test_malformed_batch_is_refused_before_the_kernel():
    rng = np.random.default_rng(8)
    X, y = random_data(rng, 50, 2, 2)
    good = pack(random_trees(rng, X, y, 2, 2, max_depth=3))
    ev = CpuEvaluator(X, y, 2)
    bad_feature = good.feature.copy()
    bad_feature[good.left != -1] = 5
    bad_child = good.left.copy()
    bad_child[0] = 0 if good.left[0] != -1 else -1
    bad_child_right = good.right.copy()
    if good.left[0] != -1:
        bad_child_right[0] = 0
    nan_threshold = np.where(good.left != -1, np.nan, good.threshold)
    ml = good.missing_left
    cases = [
        PackedForest(good.node_offset, bad_feature, good.threshold, good.left, good.right, ml),
        PackedForest(good.node_offset, good.feature, nan_threshold, good.left, good.right, ml),
        PackedForest(good.node_offset[:-1], good.feature, good.threshold, good.left, good.right, ml),
        PackedForest(good.node_offset, good.feature, good.threshold, good.left, bad_child_right, ml),
        PackedForest(good.node_offset, good.feature, good.threshold, good.left, good.right, ml[:-1]),
    ]
    for batch in cases:
        with pytest.raises(ValueError):
            ev.evaluate(batch, 1)


def test_evaluator_data_is_validated():
    X = np.array([[0.0], [np.nan]])
    with pytest.raises(ValueError, match="NaN"):
        CpuEvaluator(X, np.array([0, 1]), 2)
    with pytest.raises(ValueError, match="class codes"):
        CpuEvaluator(np.zeros((2, 1)), np.array([0, 2]), 2)


def test_registry_and_resolution():
    assert {("cpu", "batched"), ("cpu", "reference")} <= set(EVALUATORS)
    assert resolve_evaluator("auto") in EVALUATORS
    assert resolve_evaluator("cpu", "reference") == ("cpu", "reference")
    with pytest.raises(ValueError, match="no GDT evaluator"):
        resolve_evaluator("numpy")  # the former name of the reference evaluator is gone
    if ("cuda", "batched") not in EVALUATORS:
        with pytest.raises(ValueError, match=r"available: \[\"backend='cpu', evaluator='batched'\""):
            resolve_evaluator("cuda")
    with pytest.raises(ValueError, match="no GDT evaluator"):
        resolve_evaluator("tpu")
    with pytest.raises(ValueError, match="evaluator must be one of"):
        resolve_evaluator("cpu", "fastest")


def test_tree_batch_alias_is_gone():
    import dtlab.evolution

    assert not hasattr(dtlab.evolution, "TreeBatch")  # dtlab.trees.PackedForest is the one name


def test_registering_an_evaluator_makes_it_selectable():
    from dtlab.evolution import register_evaluator
    from dtlab.evolution.evaluators import EVALUATORS as table

    register_evaluator("test-double", NumpyEvaluator)
    try:
        assert resolve_evaluator("test-double") == ("test-double", "batched")
    finally:
        table.pop(("test-double", "batched"))


def _row_functions_on_cuda(n_rows: int, seed: int) -> None:
    """Run the per-row functions compiled with numba.cuda.jit(device=True) in a one-thread kernel and
    compare with the NumPy reference (a GPU evaluator reuses them unchanged)."""
    from dtlab.backend import cuda_status

    if not cuda_status()[0]:
        pytest.skip(f"cuda unavailable: {cuda_status()[1]}")
    from numba import cuda

    rows = compile_row_functions(cuda.jit(device=True))
    accumulate, mix = rows["accumulate_row"], rows["splitmix64"]

    @cuda.jit
    def kernel(X, y, seed, node_offset, feature, threshold, left, right, missing_left, salt, counts, cand_hash,
               cand_row):
        # launched with one thread: the accumulators are private, as a block's copy would be
        for row in range(X.shape[0]):
            rh = mix(seed ^ np.uint64(row))
            accumulate(X, y, row, np.int64(row), rh, node_offset, feature, threshold, left, right, missing_left,
                       salt, counts, cand_hash, cand_row)

    rng = np.random.default_rng(seed)
    X, y = random_data(rng, n_rows, 2, 2, levels=5)
    batch = pack(random_trees(rng, X, y, 2, 3, max_depth=3))
    stats = LeafStats.empty(batch.n_nodes, 2)
    kernel[1, 1](X, y, np.uint64(21), batch.node_offset, batch.feature, batch.threshold, batch.left, batch.right,
                 batch.missing_left, tree_salts(21, batch.n_trees), stats.counts, stats.cand_hash, stats.cand_row)
    assert stats.equals(NumpyEvaluator(X, y, 2).evaluate(batch, 21))


# the simulator runs the device functions in Python on numpy uint64 scalars, which warn on the
# (intended, modulo 2**64) wrap-around of the hash
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_row_functions_compile_as_cuda_device_functions():
    _row_functions_on_cuda(40, 9)


@pytest.mark.gpu
def test_row_functions_on_a_real_gpu():
    _row_functions_on_cuda(5000, 10)
