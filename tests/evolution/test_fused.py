"""The whole-generation compiled call (dtlab.evolution.fused) and the batch preparation match what they replace."""

import copy
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from dtlab.datasets import chess3x3
from dtlab.evolution import GDTClassifier
from dtlab.evolution.algorithm import next_generation
from dtlab.evolution.evaluators.base import BatchWork
from dtlab.evolution.evaluators.draws import tree_salts
from dtlab.evolution.individual import pack
from dtlab.evolution.testing import random_individuals
from dtlab.trees import PackedForest
from dtlab.trees.bitmask import forest_masks, round_thresholds_down
from tests.evolution.test_gdt_compiled import _context, _start, assert_same_state

SEEDED_RUNS = Path(__file__).with_name("data") / "seeded_runs.json"


class _Unfused:
    """The same evaluator without ``serial_data``: the loop then breeds, evaluates and stores in separate calls."""

    def __init__(self, inner):
        self.inner, self.n_samples, self.n_classes = inner, inner.n_samples, inner.n_classes

    def evaluate(self, forest, seed):
        return self.inner.evaluate(forest, seed)

    def rows(self, row_ids):
        return self.inner.rows(row_ids)


@pytest.mark.parametrize("data, params", [
    (chess3x3(700, 2, seed=1), dict(population_size=24)),
    (chess3x3(500, 1, seed=2), dict(population_size=18, n_elite=3, local_pruning=1.0, crossover_probability=0.7)),
    (chess3x3(300, 0, seed=3), dict(population_size=10, local_pruning=0.0, alpha=0.0)),
])
def test_fused_generation_is_the_evaluator_path(data, params):
    fused, evaluator, p, X = _start(*data, 11, **params)
    assert evaluator.serial_data(p.population_size) is not None  # the fused path is the one taken
    split = copy.deepcopy(fused)
    ctx_f, ctx_s = _context(fused, evaluator, p, X), _context(split, evaluator, p, X)
    unfused = _Unfused(evaluator)
    for _ in range(30):
        assert next_generation(fused, evaluator, p, ctx_f) == next_generation(split, unfused, p, ctx_s)
        assert_same_state(fused, split)


def _fingerprint(clf) -> list:
    h = hashlib.sha256()
    t = clf.tree_
    for a in (t.feature, t.threshold, t.left, t.right, t.value):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(clf.history_.drop(columns=["seconds", "elapsed_s"]).to_numpy(np.float64).tobytes())
    return [h.hexdigest()[:16], int(t.n_nodes), float(clf.best_fitness_), len(clf.front_)]


def test_seeded_runs_give_the_trees_and_histories_recorded_before_the_fused_loop():
    """Fits recorded with the code before this loop (main at e4ad1d9): same trees, histories and fronts, bit for bit."""
    recorded = json.loads(SEEDED_RUNS.read_text())
    cases = ((600, 2, 150, {}), (3000, 1, 60, {"n_elite": 2, "local_pruning": 1.0}),
             (800, 0, 80, {"population_size": 20, "crossover_probability": 0.6}))
    for n, noise, gens, extra in cases:
        X, y = chess3x3(n, noise, seed=1)
        for seed in range(3):
            clf = GDTClassifier(random_state=seed, max_generations=gens, max_stagnation=10**6, **extra).fit(X, y)
            assert _fingerprint(clf) == recorded[f"{n}-{noise}-{gens}-{sorted(extra.items())}-{seed}"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_preparation_is_the_numpy_one(dtype):
    rng = np.random.default_rng(0)
    X, y = chess3x3(400, 3, seed=0)
    forest = pack(random_individuals(rng, X, y.astype(np.int32), 2, 12, max_depth=7))
    # thresholds beyond float32's range and between two float32 values
    thr = forest.threshold.copy()
    thr[::3] = rng.normal(size=thr[::3].shape) * 1e39
    thr[1::3] = np.float64(np.float32(0.1)) + 1e-12
    forest = PackedForest(forest.node_offset, forest.feature, thr, forest.left, forest.right, forest.missing_left)
    work = BatchWork.prepare(forest, 12345, 5, dtype)
    masks = forest_masks(forest, dtype)
    for name in ("masked", "test_offset", "test_feature", "test_threshold", "test_mask", "leaf_offset", "leaf_node"):
        a, b = getattr(work.masks, name), getattr(masks, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    expected = round_thresholds_down(forest.threshold, dtype)
    assert work.threshold.dtype == expected.dtype and np.array_equal(work.threshold, expected, equal_nan=True)
    assert np.array_equal(work.salts, tree_salts(np.uint64(12345), forest.n_trees))


def test_malformed_forest_still_gets_the_validators_message():
    X, y = chess3x3(300, 2, seed=0)
    forest = pack(random_individuals(np.random.default_rng(1), X, y.astype(np.int32), 2, 6, max_depth=3))
    bad = forest.feature.copy()
    bad[forest.left != -1] = 9
    with pytest.raises(ValueError, match=r"feature indices must lie in \[0, 4\)"):
        BatchWork.prepare(PackedForest(forest.node_offset, bad, forest.threshold, forest.left, forest.right,
                                       forest.missing_left), 1, 4, np.float32)
