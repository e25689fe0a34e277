"""Producers, plots and the widget of the linear technique, at tiny sizes."""

import json

import numpy as np
import pytest

import dtlab.widgets as W
from dtlab.experiments.catalog import load_all
from dtlab.experiments.registry import BENCHMARKS, FIGURES, RunContext
from dtlab.linear import experiments as E
from dtlab.linear import plots
from dtlab.linear.synthetic import make_sparse_classification

pytest.importorskip("liblinear")


@pytest.fixture
def tiny(monkeypatch):
    """Every dataset of the producers replaced by small synthetic data."""
    data = {"a9a": (2_000, 120), "w8a": (3_000, 300), "synthetic": (4_000, 800), "rcv1_small": (500, 900)}

    def load(name, scale="small", seed=0):
        n, d = data[name]
        return make_sparse_classification(n, d, nnz_per_row=8, seed=seed)

    monkeypatch.setattr(E, "load", load)


def test_producers_are_registered():
    load_all()
    assert {"linear_convergence", "linear_speedup"} <= set(FIGURES)
    assert "linear_vs_liblinear" in BENCHMARKS
    assert all(FIGURES[n].technique == "linear" for n in ("linear_convergence", "linear_speedup"))


def test_figure_producers(tiny, tmp_path):
    ctx = RunContext(out_dir=tmp_path)
    conv = E._convergence_figure(ctx)
    assert set(conv) == {"logistic", "squared_hinge"}
    speed = E._speedup_figure(ctx)
    names = sorted(p.name for p in tmp_path.iterdir())
    for stem in ("linear_convergence_logistic", "linear_convergence_squared_hinge", "linear_speedup_threads",
                 "linear_time_split"):
        assert f"{stem}.png" in names and f"{stem}.svg" in names
    rows = speed["rows"]
    assert {r["dataset"] for r in rows} == {"a9a", "w8a", "synthetic"}
    assert all(r["seconds"] > 0 for r in rows)
    json.dumps(speed)  # results.json-ready


def test_benchmark_producer(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(E, "paired_times", lambda fns, repeats=5, warmup=1: [
        [_timed(f) for _ in range(2)] for f in fns])
    out = E._benchmark(RunContext(out_dir=tmp_path))
    for key in ("linear_a9a_lr", "linear_w8a_l2svm", "linear_synthetic_lr", "linear_synthetic_l2svm"):
        entry = out[key]
        assert entry["peer_threads"] == 1
        for solver in ("tron", "newton"):
            s = entry[solver]
            assert s["time_ratio_per_core"] > 0 and s["time_ratio_whole_machine"] > 0
            assert s["threads_whole_machine"] == E.n_cores()
        assert abs(entry["newton"]["objective_rel_diff"]) < 1e-9  # the line search retraces LIBLINEAR
    assert isinstance(out["goal_met_cpu_newton"], bool) and isinstance(out["goal_met_cpu_tron_min"], bool)
    json.dumps(out)


def _timed(fn):
    import time

    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def test_convergence_data_and_plot():
    X, y = make_sparse_classification(3_000, 400, nnz_per_row=6, seed=1)
    data = E.convergence(X, y, eps=1e-3)
    assert len(data["runs"]) == 2 and data["liblinear"]["n_iter"] >= 1
    for run in data["runs"].values():
        assert run["objective"][-1] >= data["f_star"] * (1 - 1e-12)
        assert np.all(np.diff(run["objective"]) <= 0)
    plots.plot_convergence(data)


def test_widget_comparison_and_density_slider():
    slider = W.density_slider(1e-3)
    assert slider.value == pytest.approx(1e-3)
    with pytest.raises(ValueError):
        W.density_slider(0.5, max_exp=-1)
    rows = E.synthetic_comparison(2_000, 5e-3, n_features=1_000, repeats=1)
    assert rows[0]["solver"] == "liblinear" and len(rows) == 2
    assert 0 < rows[1]["density"] <= 5e-3
    fig = plots.plot_comparison(rows)
    assert fig.axes[0].get_xlabel() == "training time (s)"
    box = W.panel(lambda n_samples, density: None, n_samples=W.dataset_size_slider(2_000, 3, 4),
                  density=slider)
    assert len(box.children) == 2
