"""Producers, plots and the widget of the linear technique, at tiny sizes."""

import json

import numpy as np
import pytest

import workbench.widgets as W
from dtlab.linear.synthetic import make_sparse_classification
from workbench.catalog import load_all
from workbench.linear import experiments as E
from workbench.linear import plots
from workbench.registry import BENCHMARKS, FIGURES, RunContext

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


def _check_benchmark(out, multicore: bool):
    assert [k for k in out if k.startswith("linear_") and k.endswith("_lr")] == [
        f"linear_{name}_lr" for name in E.DATASETS]
    for key in ("linear_a9a_lr", "linear_w8a_l2svm", "linear_rcv1_small_lr", "linear_synthetic_l2svm"):
        entry = out[key]
        assert abs(entry["newton"]["objective_rel_diff"]) < 1e-9  # the line search retraces LIBLINEAR
        assert ("multicore_seconds" in entry) == multicore
        if multicore:
            assert entry["multicore_objective"] == pytest.approx(entry["liblinear_objective"], rel=1e-9)
    for c in out["comparisons"]:
        assert c["runs"] >= 5 and c["speedup_spread"][0] <= c["speedup"] <= c["speedup_spread"][1]
        assert c["C"] == E.PAPER_C and c["eps"] == E.PAPER_EPS
        if c["mode"] == "whole_machine":
            assert ("multi-core" in c["peer"]) == multicore and ("peer_note" in c) != multicore
            assert c["threads"]["peer"] == (E.n_cores() if multicore else 1)
    assert len(out["comparisons"]) == len(E.DATASETS) * 2 * 2 * 2  # sets, losses, solvers, modes
    assert out["goal_met"] == all(g["met"] for g in out["goals"].values())
    caps = plots.benchmark_captions(out)
    assert "C = 4, eps = 0.1" in caps["linear_a9a_lr"] and "over " in caps["linear_a9a_lr"]
    assert caps["linear_goals"].startswith("Goals (")
    json.dumps(out)


def test_benchmark_producer_without_multicore_liblinear(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("DTLAB_PEERS", str(tmp_path / "none"))
    out = E._benchmark(RunContext(out_dir=tmp_path))
    assert "make peers" in out["multicore_missing"]
    _check_benchmark(out, multicore=False)


def test_benchmark_producer_with_multicore_liblinear(tiny, tmp_path, liblinear_multicore_built):
    # built by `make peers` (make test and make bench run it); missing, it fails under make test (tests/conftest.py)
    _check_benchmark(E._benchmark(RunContext(out_dir=tmp_path)), multicore=True)


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
