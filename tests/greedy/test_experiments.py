"""Greedy experiments on tiny inputs (the producers' logic, not their timings)."""

import numba
import numpy as np
import pytest

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
from workbench.catalog import load_all
from workbench.greedy import experiments as G
from workbench.registry import BENCHMARKS, FIGURES
from workbench.timing import threads_for


def test_producers_are_registered():
    load_all()
    assert {"greedy_regression_timing", "greedy_regression_depth"} <= set(FIGURES)
    assert {"greedy_regressor_vs_sklearn", "greedy_classifier_vs_sklearn"} <= set(BENCHMARKS)
    assert all(FIGURES[n].technique == "greedy" for n in ("greedy_regression_timing", "greedy_regression_depth"))


def test_timing_vs_size(monkeypatch):
    order = []
    fit = DecisionTreeRegressor.fit

    def logged_fit(self, X, y):
        order.append((self.method, len(y), numba.get_num_threads()))
        return fit(self, X, y)

    monkeypatch.setattr(DecisionTreeRegressor, "fit", logged_fit)
    frame = G.timing_vs_size(sizes=(300, 600), naive_max_rows=300, repeats=2, max_depth=4)
    assert set(frame["method"]) == set(G.METHODS)
    naive = frame[frame["method"] == "naive"].set_index("n_samples")
    assert not naive.loc[300, "skipped"] and naive.loc[600, "skipped"] and np.isnan(naive.loc[600, "seconds"])
    done = frame[~frame["skipped"]]
    assert (done["seconds"] > 0).all() and (done["runs"] == 2).all()
    assert (done["seconds_min"] <= done["seconds"]).all() and (done["seconds"] <= done["seconds_max"]).all()
    # every method grows a tree of the same size on the same rows
    assert done.groupby("n_samples")["n_nodes"].nunique().max() == 1
    # the vectorised search on one thread and on the whole machine; every other contender on one thread
    vectorized = frame[frame.method == "vectorized"]
    assert sorted(set(vectorized["threads"])) == sorted({1, threads_for("whole_machine")})
    assert (frame.loc[frame.method != "vectorized", "threads"] == 1).all()
    assert not frame.duplicated(["n_samples", "contender"]).any()
    # alternation: the timed fits of 300 rows go round by round through every dtlab contender, each on its threads
    timed = [(m, t) for m, n, t in order if n == 300]
    contenders = [("naive", 1), ("incremental", 1)] + [("vectorized", t) for t in sorted({1, threads_for(
        "whole_machine")})]
    assert timed == contenders * 2


def test_error_vs_depth():
    frame = G.error_vs_depth(depths=(1, 2, 3, None), n_samples=2_000)
    assert list(frame.columns) == ["max_depth", "train_mse", "test_mse", "n_nodes"]
    train = frame["train_mse"].to_numpy()
    assert (np.diff(train) <= 1e-9).all()  # deeper never fits the training rows worse


def test_benchmarks_compare_per_core_and_whole_machine():
    frame, comparisons = G.regressor_vs_sklearn(depths=(3, None), n_samples=3_000, repeats=1)
    assert frame.loc[0, "same_tree"]
    assert frame.loc[1, "train_mse"] == pytest.approx(frame.loc[1, "train_mse_sklearn"], rel=1e-6)
    assert [(e["max_depth"], e["mode"]) for e in comparisons] == [
        (3, "per_core"), (3, "whole_machine"), (None, "per_core"), (None, "whole_machine")]
    for e in comparisons:
        assert e["speedup"] > 0 and e["threads"]["peer"] == 1
        assert e["threads"]["dtlab"] == threads_for(e["mode"])
        assert ("peer_note" in e) == (e["threads"]["dtlab"] > 1)
    out = G.classifier_vs_sklearn(n_samples=5_000, repeats=1)
    assert out["same_tree"] and out["speedup_per_core"] > 0 and out["speedup_whole_machine"] > 0
    assert [e["mode"] for e in out["comparisons"]] == ["per_core", "whole_machine"]


def test_tree_summary():
    summary = G.tree_summary(n_samples=1_000, max_depth=3)
    assert summary["n_nodes"] == summary["estimator"].tree_.n_nodes <= 15
    assert summary["test_mse"] > 0


def test_parallel_scans_grow_the_same_tree(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 30, size=(3_000, 5)).astype(float)
    y = rng.integers(0, 50, size=3_000).astype(float)
    yc = (X[:, 0] + rng.integers(0, 10, 3_000) > 20).astype(int)
    serial = (DecisionTreeRegressor(random_state=0).fit(X, y).tree_,
              DecisionTreeClassifier(random_state=0).fit(X, yc).tree_)
    # nodes of >= 600 rows go parallel (each parallel region is costly on a busy machine)
    from dtlab.greedy import _node_rules

    monkeypatch.setattr(_node_rules, "PARALLEL_MIN_WORK", 3_000)
    parallel = (DecisionTreeRegressor(random_state=0).fit(X, y).tree_,
                DecisionTreeClassifier(random_state=0).fit(X, yc).tree_)
    assert serial[0].equals(parallel[0]) and serial[1].equals(parallel[1])
