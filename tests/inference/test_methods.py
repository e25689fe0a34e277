"""Every method and layout against the plain references, on random unbalanced trees with ties and NaN."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtlab.inference import Forest
from dtlab.inference import reference as R
from dtlab.testing import random_grid_tree
from dtlab.trees import FlatTree

GRID = np.array([-1.5, -0.5, 0.0, 0.25, 1.0, 2.0], np.float32)
CPU_METHODS = ("traversal_heap", "traversal_nodes", "bitmask", "quickscorer")


def grid_rows(rng, n, n_features, dtype, p_nan=0.15):
    """Rows on the threshold grid (ties at every threshold), off-grid values and NaN."""
    X = rng.choice(GRID, size=(n, n_features)).astype(dtype)
    off = rng.random(X.shape) < 0.3
    X[off] = rng.normal(size=off.sum())
    X[rng.random(X.shape) < p_nan] = np.nan
    return X


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 12), n_trees=st.integers(1, 4),
       dtype=st.sampled_from([np.float32, np.float64]), p_split=st.sampled_from([0.55, 0.8, 1.0]))
def test_all_methods_equal_the_reference_walk(seed, depth, n_trees, dtype, p_split):
    rng = np.random.default_rng(seed)
    trees = [random_grid_tree(rng, 4, int(rng.integers(1, depth + 1)) if t else depth, GRID,
                              p_split=p_split if depth < 10 else 0.6) for t in range(n_trees)]
    forest = Forest(trees, combine="sum")
    X = forest.prepare(grid_rows(rng, 25, 4, dtype))
    leaves = R.leaves_traversal(forest.ensemble.forest, X)
    expected = R.raw_from_leaves(forest.ensemble, leaves)[:, 0]
    for method in CPU_METHODS:
        np.testing.assert_array_equal(forest.finish(forest.raw_sum(X, method)), expected, err_msg=method)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 9))
def test_bitmask_and_quickscorer_references_find_the_walks_leaf(seed, depth):
    rng = np.random.default_rng(seed)
    tree = random_grid_tree(rng, 3, depth, GRID, p_split=0.7)
    forest = Forest(tree).ensemble.forest
    X = grid_rows(rng, 30, 3, np.float64)
    walked = R.leaves_traversal(forest, X)
    np.testing.assert_array_equal(R.leaves_bitmask(forest, X), walked)
    np.testing.assert_array_equal(R.leaves_quickscorer(forest, X), walked)


def _chain(depth: int) -> FlatTree:
    """The most unbalanced tree: every right child a leaf, one leaf per level."""
    n = 2 * depth + 1
    feature, threshold, left, right = [-1] * n, [0.0] * n, [-1] * n, [-1] * n
    for d in range(depth):
        node = 2 * d
        feature[node], threshold[node], left[node], right[node] = 0, float(d), node + 2, node + 1
    return FlatTree(feature=feature, threshold=threshold, left=left, right=right,
                    value=np.arange(n, dtype=float), n_features=1, task="regression")


def test_unbalanced_leaf_keeps_its_bit_on_levels_below_it():
    """A leaf whose path ends at level d is in the base of every level >= d; without it the AND would be 0."""
    tree = _chain(5)
    forest = Forest(tree)
    steps = R.bitmask_steps(forest.ensemble.forest, 0, np.array([0.5]))  # goes left once, then right
    leaf = steps["leaf"]
    bit = 1 << steps["number"][leaf]
    assert tree.value[leaf, 0] == leaf and tree.left[leaf] == -1
    for level, table in enumerate(steps["levels"]):
        assert table["or"] & bit, level
        if level >= 2:  # the leaf is at depth 2: no node of these levels lies above it
            assert table["base"] & bit and not any(v & bit for v in table["selected"].values())
    without_base = -1
    for table in steps["levels"]:
        sel = 0
        for v in table["selected"].values():
            sel |= v
        without_base &= sel
    assert without_base & bit == 0  # what the patent's balanced-tree rule alone would give
    X = np.array([[x] for x in (-1.0, 0.5, 1.5, 2.5, 3.5, 4.5, np.nan)])
    expected = tree.predict(X)
    for method in CPU_METHODS:
        np.testing.assert_array_equal(forest.finish(forest.raw_sum(forest.prepare(X), method)), expected)


def test_more_than_64_leaves_use_several_words():
    rng = np.random.default_rng(3)
    tree = random_grid_tree(rng, 5, 9, np.linspace(-2, 2, 41), p_split=1.0)
    forest = Forest(tree)
    assert tree.n_leaves == 512 and forest.layout("bitmask", np.float64).n_words == 8
    X = forest.prepare(rng.normal(size=(200, 5)))
    expected = tree.predict(X)
    for method in CPU_METHODS:
        np.testing.assert_array_equal(forest.finish(forest.raw_sum(X, method)), expected, err_msg=method)


def test_patent_example_identifiers():
    """JP5863426B2 Fig. 1: 16 leaves; the row going left, right, right, left ends at the 7th leaf from the left."""
    from workbench.inference.patent import patent_example

    tree, x = patent_example()
    steps = R.bitmask_steps(Forest(tree).ensemble.forest, 0, x)
    assert R.identifier_string(steps["and"], 16) == "00000010 00000000"  # the patent's printed result
    assert R.identifier_string(steps["levels"][0]["or"], 16) == "11111111 00000000"
    assert len(steps["levels"]) == 4 and all(len(t["selected"]) == 2 ** k for k, t in enumerate(steps["levels"]))


def test_auto_picks_a_method_and_caches_it():
    from dtlab.inference import auto

    rng = np.random.default_rng(0)
    forest = Forest([random_grid_tree(rng, 4, 5, GRID) for _ in range(3)], combine="sum")
    X = grid_rows(rng, 50, 4, np.float32)
    auto.CACHE.clear()
    got = forest.predict(X, method="auto")
    assert len(auto.CACHE) == 1 and next(iter(auto.CACHE.values())) in auto.CANDIDATES
    np.testing.assert_array_equal(got, forest.predict(X, method="traversal"))


@pytest.mark.parametrize("n_rows", [0, 1, 33, 65])
def test_row_counts_around_the_block(n_rows):
    rng = np.random.default_rng(n_rows)
    trees = [random_grid_tree(rng, 4, 6, GRID) for _ in range(2)]
    forest = Forest(trees, combine="sum")
    X = grid_rows(rng, n_rows, 4, np.float64)
    expected = trees[0].predict(X) + trees[1].predict(X)
    for method in ("traversal", "bitmask", "quickscorer"):
        got = forest.predict(X, method=method)
        assert got.shape == (n_rows,)
        np.testing.assert_allclose(got, expected, rtol=1e-12)



@pytest.mark.parametrize("assignment", ["node", "nodes", "level"])
def test_cpu_thread_assignments_find_the_walks_leaf(assignment):
    from dtlab.inference.layout import tree_shape
    from workbench.inference.assignment import timed_phases

    rng = np.random.default_rng(5)
    tree = random_grid_tree(rng, 4, 8, np.linspace(-1, 1, 9), p_split=0.85)
    forest = Forest(tree)
    X = forest.prepare(grid_rows(rng, 70, 4, np.float64))
    got = timed_phases(forest, X, 0, assignment, nodes_per_task=3, repeats=1)
    walked = R.leaves_traversal(forest.ensemble.forest, X)[:, 0]
    np.testing.assert_array_equal(got["leaves"], tree_shape(forest.ensemble.forest).first_leaf[walked])
    n_tests = tree.n_leaves - 1
    assert got["n_tasks"] == {"node": n_tests, "nodes": got["n_tasks"], "level": tree.max_depth}[assignment]
