"""The one tree walk: its variants, compiled for the CPU and (simulated) CUDA, against a plain reference."""

import numpy as np
import pytest

from dtlab._jit import compile_functions, rebind
from dtlab.testing import assert_same_on_backends, random_data, random_sklearn_trees
from dtlab.trees import FlatTree
from dtlab.trees.walk import compile_walks, cpu_walks


def _reference_leaf(x, tree):
    """Independent plain walk of one row: NaN follows missing_left."""
    node = 0
    while tree.left[node] != -1:
        v = x[tree.feature[node]]
        if np.isnan(v):
            node = tree.left[node] if tree.missing_left[node] else tree.right[node]
        else:
            node = tree.left[node] if v <= tree.threshold[node] else tree.right[node]
    return node


@pytest.fixture(scope="module")
def tree_and_data():
    rng = np.random.default_rng(3)
    X, y = random_data(rng, 300, 4, 2, dtype=np.float64, levels=6)
    tree = FlatTree.from_sklearn(random_sklearn_trees(rng, X, y, 1, max_depths=(None,))[0])
    tree.missing_left[:] = rng.random(tree.n_nodes) < 0.5
    X[rng.random(X.shape) < 0.1] = np.nan  # missing values take both default directions
    return tree, X


def test_row_and_column_walks_agree_with_the_reference(tree_and_data):
    tree, X = tree_and_data
    walks = cpu_walks()
    arrays = (tree.feature, tree.threshold, tree.left, tree.right, tree.missing_left)
    Xt = np.ascontiguousarray(X.T)
    for row in range(X.shape[0]):
        expected = _reference_leaf(X[row], tree)
        assert walks["find_leaf"](X, row, 0, *arrays) == expected
        assert walks["find_leaf_columns"](Xt, row, 0, *arrays) == expected


def test_plain_python_walk_equals_compiled(tree_and_data):
    tree, X = tree_and_data
    plain = compile_walks(lambda fn: fn)["find_leaf"]
    arrays = (tree.feature, tree.threshold, tree.left, tree.right, tree.missing_left)
    assert [plain(X, r, 0, *arrays) for r in range(50)] == [cpu_walks()["find_leaf"](X, r, 0, *arrays)
                                                             for r in range(50)]


def test_record_margins_keeps_the_nearest_values_on_each_side(tree_and_data):
    tree, X = tree_and_data
    X = np.nan_to_num(X, nan=2.5)
    below = np.full(tree.n_nodes, -np.inf)
    above = np.full(tree.n_nodes, np.inf)
    margins = cpu_walks()["record_margins"]
    for row in range(X.shape[0]):
        margins(X, row, tree.feature, tree.threshold, tree.left, tree.right, tree.missing_left, below, above)
    for node in np.flatnonzero(tree.left != -1):
        reached = [r for r in range(X.shape[0]) if node in _path(X[r], tree)]
        values = X[reached, tree.feature[node]]
        went_left = values <= tree.threshold[node]
        assert below[node] == (values[went_left].max() if went_left.any() else -np.inf)
        assert above[node] == (values[~went_left].min() if (~went_left).any() else np.inf)


def _path(x, tree):
    node, path = 0, [0]
    while tree.left[node] != -1:
        node = tree.left[node] if x[tree.feature[node]] <= tree.threshold[node] else tree.right[node]
        path.append(node)
    return path


def test_apply_is_the_same_on_every_backend(tree_and_data):
    tree, X = tree_and_data
    expected = np.array([_reference_leaf(x, tree) for x in X[:64]])
    got = assert_same_on_backends(lambda backend: tree.apply(X[:64], backend=backend))
    assert np.array_equal(got, expected)


def _caller():
    return _bound_helper()  # noqa: F821 -- a global name bound per variant


def test_variants_of_one_function_get_distinct_cache_names():
    caller = _caller
    a = compile_functions([caller], lambda fn: fn, {"_bound_helper": lambda: 1}, variant="one")["_caller"]
    b = compile_functions([caller], lambda fn: fn, {"_bound_helper": lambda: 2}, variant="two")["_caller"]
    assert (a(), b()) == (1, 2)
    assert a.__qualname__ != b.__qualname__ and a.__qualname__.endswith("__one")
    assert rebind(caller, {}).__qualname__ == caller.__qualname__
