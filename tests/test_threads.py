"""One ``n_jobs`` and ``backend`` contract: the helpers, and every estimator's n_jobs reaching its kernels."""

import numba
import numpy as np
import pytest

from dtlab.backend import resolve_backend, resolve_threads, thread_scope
from dtlab.datasets import chess3x3

MOST = numba.config.NUMBA_NUM_THREADS


def test_resolve_threads_follows_scikit_learn_over_numbas_threads():
    assert resolve_threads(1) == 1
    assert resolve_threads(-1) == MOST
    assert resolve_threads(10 * MOST) == MOST
    assert resolve_threads(-MOST - 5) == 1  # all but too many: still one
    with thread_scope(1):
        assert resolve_threads(None) == 1  # None follows an enclosing scope (numba's current setting)
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_jobs"):
            resolve_threads(bad)


def test_thread_scope_restores_numbas_setting_even_on_an_error():
    before = numba.get_num_threads()
    with pytest.raises(RuntimeError):
        with thread_scope(1) as n:
            assert n == 1 and numba.get_num_threads() == 1
            raise RuntimeError("boom")
    assert numba.get_num_threads() == before


def test_auto_means_the_cpu_for_work_without_a_cuda_path():
    assert resolve_backend("auto", has_cuda=False).name == "cpu"
    assert resolve_backend("cuda", has_cuda=False).name == "cuda"  # an explicit choice is the caller's to refuse


def _estimators():
    from dtlab.boosting import GBDTClassifier
    from dtlab.evolution import GDTClassifier
    from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
    from dtlab.linear import TronLogisticRegression

    # (name, factory(n_jobs), where fit's kernels are called from, where predict's are)
    return [
        ("greedy regressor", lambda n: DecisionTreeRegressor(max_depth=3, n_jobs=n, backend="cpu"),
         ("dtlab.greedy.builder", "_grow"), ("dtlab.trees.leaves", "_apply_cpu")),
        ("greedy classifier", lambda n: DecisionTreeClassifier(max_depth=3, n_jobs=n, backend="cpu"),
         ("dtlab.greedy.builder", "_grow"), ("dtlab.trees.leaves", "_apply_cpu")),
        ("GDT", lambda n: GDTClassifier(max_generations=3, population_size=6, n_jobs=n, backend="cpu",
                                        random_state=0),
         ("dtlab.evolution.evaluators.cpu.CpuEvaluator", "evaluate"), ("dtlab.trees.leaves", "_apply_cpu")),
        ("GBDT", lambda n: GBDTClassifier(n_estimators=3, max_depth=3, n_jobs=n, backend="cpu"),
         ("dtlab.boosting.exact.ExactSearch", "find"), ("dtlab.inference.forest.Forest", "raw_sum")),
        ("TRON", lambda n: TronLogisticRegression(n_jobs=n, backend="cpu"),
         ("dtlab.linear._fitting", "tron"), None),
    ]


def _spy(monkeypatch, where, seen):
    """Wrap ``where`` (a module or class attribute) to record numba's thread count whenever it is called."""
    import importlib

    path, attr = where
    try:
        owner = importlib.import_module(path)
    except ModuleNotFoundError:
        module, cls = path.rsplit(".", 1)
        owner = getattr(importlib.import_module(module), cls)
    inner = getattr(owner, attr)

    def spied(*args, **kwargs):
        seen.append(numba.get_num_threads())
        return inner(*args, **kwargs)

    monkeypatch.setattr(owner, attr, spied)


@pytest.mark.parametrize("case", range(5), ids=[c[0] for c in _estimators()])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_every_estimators_n_jobs_reaches_its_kernels(monkeypatch, case, n_jobs):
    if n_jobs > MOST:
        pytest.skip(f"numba has {MOST} thread(s) here")
    name, make, fit_at, predict_at = _estimators()[case]
    X, y = chess3x3(300, seed=1)
    fit_seen, predict_seen = [], []
    _spy(monkeypatch, fit_at, fit_seen)
    if predict_at is not None:
        _spy(monkeypatch, predict_at, predict_seen)
    before = numba.get_num_threads()
    with thread_scope(-1):  # whatever the caller's setting, the estimator's n_jobs decides
        est = make(n_jobs).fit(X, y)
        assert fit_seen and set(fit_seen) == {n_jobs}, f"{name} fit ran its kernels on {set(fit_seen)} threads"
        predict_seen.clear()
        est.predict(X)
        if predict_at is not None:
            assert predict_seen and set(predict_seen) == {n_jobs}, f"{name} predict: {set(predict_seen)} threads"
        assert numba.get_num_threads() == MOST  # restored after fit and predict
    assert numba.get_num_threads() == before


def test_forest_predict_n_jobs_reaches_its_kernels(monkeypatch):
    from dtlab.inference import Forest
    from dtlab.testing import random_grid_tree

    rng = np.random.default_rng(0)
    forest = Forest([random_grid_tree(rng, 3, 4, np.linspace(-1, 1, 5)) for _ in range(3)])
    seen = []
    _spy(monkeypatch, ("dtlab.inference.forest.Forest", "raw_sum"), seen)
    from dtlab.inference._predict_cpu import PARALLEL_MIN_TREE_ROWS

    # a batch past the small-batch path (which walks on one thread and never opens a thread scope)
    X = rng.normal(size=(PARALLEL_MIN_TREE_ROWS // 3 + 1, 3))
    with thread_scope(-1):
        forest.predict(X, method="traversal", n_jobs=1)
    assert seen == [1]
    with pytest.raises(ValueError, match="n_jobs"):
        forest.predict(X, n_jobs=0)
