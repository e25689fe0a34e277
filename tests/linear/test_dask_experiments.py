"""The Dask benchmark's bookkeeping (no cluster): warm-up, alternation, the slow-contender rule, the goal."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from workbench.linear import dask_experiments as de


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = scipy.sparse.random(40, 5, density=0.5, random_state=1, format="csr")
    return X, np.where(rng.random(40) > 0.5, 1.0, -1.0)


def _recording(calls, name, w):
    def fit(max_iter=None):
        calls.append((name, max_iter))
        return w
    return fit


def test_alternate_warms_up_once_then_alternates(data):
    X, y = data
    calls = []
    w = np.zeros(5)
    runs = de._alternate({"a": _recording(calls, "a", w), "b": _recording(calls, "b", w)}, 3, X, y, 1.0)
    assert calls[:2] == [("a", 1), ("b", 1)]  # the untimed warm-up, max_iter=1
    assert calls[2:] == [("a", None), ("b", None)] * 3  # then alternating full fits
    for r in runs.values():
        assert len(r["seconds"]) == 3 and r["median"] == sorted(r["seconds"])[1]
        assert r["objective"] == pytest.approx(40 * np.log(2.0))  # w = 0: C * n * log 2


def test_slow_contender_is_timed_once_and_failures_are_reported(data, monkeypatch):
    X, y = data
    monkeypatch.setattr(de, "SLOW_S", -1.0)  # every fit counts as slow

    def broken(max_iter=None):
        raise ValueError("cannot fit this")
    calls = []
    runs = de._alternate({"slow": _recording(calls, "slow", np.zeros(5)), "broken": broken}, 4, X, y, 1.0)
    assert len(runs["slow"]["seconds"]) == 1 and calls.count(("slow", None)) == 1
    assert runs["broken"] == {"error": "ValueError: cannot fit this"}


def test_a_failure_in_a_timed_fit_keeps_its_runs_and_the_others_go_on(data):
    X, y = data
    fits = []

    def fails_on_second_timed_fit(max_iter=None):
        fits.append(max_iter)
        if len(fits) == 3:  # warm-up, one timed fit, then this one
            raise MemoryError("worker out of memory")
        return np.zeros(5)
    calls = []
    runs = de._alternate({"flaky": fails_on_second_timed_fit, "steady": _recording(calls, "steady", np.zeros(5))},
                         3, X, y, 1.0)
    assert len(runs["flaky"]["seconds"]) == 1 and runs["flaky"]["error"] == "MemoryError: worker out of memory"
    assert len(runs["steady"]["seconds"]) == 3 and len(fits) == 3  # dropped after its failure


def test_goal_needs_the_objective_and_the_whole_spread():
    peer = {"seconds": [5.0, 6.0], "median": 5.5, "objective": 10.0}
    runs = {"dtlab TRON (tol 0.1)": {"seconds": [1.0, 1.2], "median": 1.1, "objective": 10.5},
            "dtlab TRON (tol 0.01)": {"seconds": [2.0, 5.5], "median": 3.0, "objective": 9.9},
            "dask-ml LogisticRegression (lbfgs)": peer}
    verdict = de.goal({"runs": runs})["solvers"]["dask-ml LogisticRegression (lbfgs)"]
    assert verdict["dtlab"] == "dtlab TRON (tol 0.01)"  # tol 0.1 does not reach the peer's objective
    assert not verdict["met"]  # its slowest fit (5.5 s) is not under the peer's fastest (5.0 s)
    runs["dtlab TRON (tol 0.01)"]["seconds"] = [2.0, 3.0]
    assert de.goal({"runs": runs})["met"]


def test_plot_and_caption_name_every_contender_and_the_single_runs():
    from workbench.linear.dask_plots import dask_ml_captions, plot_dask_ml

    runs = {"dtlab TRON (tol 0.1)": {"seconds": [0.5, 0.7], "median": 0.6, "objective": 10.0},
            "dask-ml LogisticRegression (admm)": {"seconds": [700.0], "median": 700.0, "objective": 9.0,
                                                  "error": "KilledWorker: gone"},
            "dask-ml LogisticRegression (lbfgs)": {"error": "ValueError: no"}}
    entry = {"rows": 100, "n_features": 5, "C": 4.0, "n_workers": 2, "runs": runs}
    entry["goal"] = de.goal(entry)
    ax = plot_dask_ml({"a9a": entry}).axes[0]
    assert ax.get_xscale() == "log" and len(ax.patches) == 2  # the failed contender has no bar
    assert any(", 1 run" in t.get_text() for t in ax.texts)
    caption = dask_ml_captions({"sets": {"a9a": entry}, "repeats": 5, "slow_seconds": 60.0})["linear_dask"]
    assert "700.00 s (1 run)" in caption and "0.60 s (2 runs)" in caption and "ValueError: no" in caption
    assert "f = 9, then failed: KilledWorker: gone" in caption  # timed once, then failed
    assert "no dtlab run reached its objective" in caption  # tol 0.1 stops above the peer's objective


def test_a_budget_caps_the_named_contenders_max_iter_from_their_warm_up(data, monkeypatch):
    X, y = data
    calls = []
    clock = iter(np.arange(0.0, 1000.0, 10.0))  # every perf_counter call 10 s later: each fit "takes" 10 s
    monkeypatch.setattr(de.time, "perf_counter", lambda: next(clock))
    w = np.zeros(5)
    runs = de._alternate({"peer": _recording(calls, "peer", w), "ours": _recording(calls, "ours", w),
                          "generous": _recording(calls, "generous", w)}, 2, X, y, 1.0, budget_s=35.0,
                         default_max_iter={"peer": 100, "generous": 3})
    assert calls[:3] == [("peer", 1), ("ours", 1), ("generous", 1)]
    assert calls[3:] == [("peer", 3), ("ours", None), ("generous", None)] * 2  # 35 s / 10 s: 3 iterations
    assert runs["peer"]["max_iter"] == 3 and runs["peer"]["default_max_iter"] == 100
    assert "max_iter" not in runs["ours"] and "max_iter" not in runs["generous"]  # not named; its default is 3
    from workbench.linear.dask_plots import dask_ml_captions

    entry = {"rows": 40, "n_features": 5, "C": 1.0, "n_workers": 2, "runs": runs}
    caption = dask_ml_captions({"sets": {"s": entry}})["linear_dask"]
    assert "max_iter capped at 3 of its default 100 (a 35 s budget)" in caption
