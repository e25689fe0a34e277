"""Boosting experiments and plots on tiny inputs (the producers' logic, not their timings)."""

import numpy as np
import pytest

from dtlab.boosting.datasets import synthetic
from workbench.boosting import bench, plots
from workbench.boosting import experiments as E
from workbench.catalog import TECHNIQUES, load_all
from workbench.registry import BENCHMARKS, FIGURES
from workbench.timing import threads_for


def test_producers_are_registered():
    load_all()
    assert "boosting" in TECHNIQUES
    assert "boosting_vs_peers" in BENCHMARKS and "boosting_worker_scaling" in FIGURES
    assert BENCHMARKS["boosting_vs_peers"].technique == "boosting"


def test_synthetic_is_learnable_and_holes_are_nan():
    X, y = synthetic(2_000, 8, missing=0.1, seed=1)
    assert X.shape == (2_000, 8) and X.dtype == np.float32 and 0.05 < np.isnan(X).mean() < 0.15
    assert 0.3 < y.mean() < 0.7


def test_time_per_tree_and_comparisons_state_threads():
    X, y = synthetic(600, 5, seed=0)
    models = {}
    rows = E.time_per_tree(X[:400], y[:400], X[400:], y[400:], n_trees=3, max_depth=3, repeats=5, models=models)
    assert {r["contender"] for r in rows} == set(E.CONTENDERS)
    assert all(r["threads"] == threads_for(r["mode"]) and r["seconds"] > 0 and 0.5 < r["auc"] <= 1 for r in rows)
    assert all(len(r["times"]) == 5 and min(r["times"]) <= r["seconds"] <= max(r["times"]) for r in rows)
    comps = E.comparisons_of(rows, dataset="tiny", n_samples=400)
    assert len(comps) == 8 and all(c["threads"]["dtlab"] == c["threads"]["peer"] for c in comps)
    assert all(c["runs"] == 5 and c["speedup_spread"][0] <= c["speedup"] <= c["speedup_spread"][1] for c in comps)
    fig = plots.plot_time_per_tree({"tiny": rows})
    assert fig.axes[0].get_yscale() == "log"
    # the same base score on both sides: dtlab exact grows XGBoost exact's trees
    agreement = bench.exact_agreement(models, X[:400])
    assert set(agreement) == {"per_core", "whole_machine"}
    for a in agreement.values():
        assert a["same_trees"] == a["n_trees"] == 3 and a["max_probability_difference"] < 1e-5
        assert a["base_score_xgboost"] == pytest.approx(float(np.mean(y[:400])))
    goals = bench.goals_of(comps, E.GOALS)
    assert len(goals) == 4 and all(set(g) >= {"met", "worst_time_ratio", "off_by", "same_auc"} for g in goals.values())
    caption = plots.peer_captions({"comparisons": comps, "goals": goals, "exact_agreement": {"tiny": agreement},
                                   "n_trees": 3, "max_depth": 3, "learning_rate": 0.3,
                                   "load_average_before": [1.0, 1.0, 1.0]})["boosting_time_per_tree"]
    assert "depth 3, 3 trees" in caption and "over 5 runs" in caption and "400 training rows" in caption
    assert "3 of 3 trees equal" in caption and "Goals: tiny: dtlab exact / XGBoost exact time <= 0.25" in caption


def test_goals_count_only_when_the_whole_spread_meets_them():
    base = dict(dtlab="dtlab hist", peer_name="LightGBM", dataset="d", auc_dtlab=0.9, auc_peer=0.9)
    entry = E.comparison("LightGBM fit", "per_core", None, None, 1, 1, dtlab_times=[1.0, 1.0, 1.0, 1.0, 1.0],
                         peer_times=[1.2, 1.2, 1.2, 1.2, 0.95], **base)
    assert entry["speedup"] == pytest.approx(1.2)  # the median meets the goal, one round does not
    goal = next(iter(bench.goals_of([entry], E.GOALS).values()))
    assert not goal["met"] and goal["off_by"] == pytest.approx(1 / 0.95 - 1.0)
    entry["auc_peer"] = 0.95  # faster in every round but not at equal AUC
    entry["speedup_spread"] = [1.1, 1.3]
    assert not next(iter(bench.goals_of([entry], E.GOALS).values()))["met"]
    # with the means over splits, those decide: a lower single split does not miss, a lower mean does
    entry.update(auc_dtlab_mean=0.9010, auc_peer_mean=0.9025)
    assert next(iter(bench.goals_of([entry], E.GOALS).values()))["met"]
    entry.update(auc_peer_mean=0.9035)
    assert not next(iter(bench.goals_of([entry], E.GOALS).values()))["same_auc"]
    entry.update(auc_dtlab_mean=0.95)  # better by more than the tolerance: still at least as accurate
    assert next(iter(bench.goals_of([entry], E.GOALS).values()))["same_auc"]


def test_mean_auc_over_splits_is_seeded_and_averages_single_splits():
    from sklearn.metrics import roc_auc_score

    from dtlab.boosting.datasets import holdout_split

    X, y = synthetic(800, 5, seed=3)
    names = ("dtlab hist", "scikit-learn HGB")
    mean = E.mean_auc_over_splits(X, y, names, n_splits=3, take=600, n_trees=3, max_depth=3)
    assert mean == E.mean_auc_over_splits(X, y, names, n_splits=3, take=600, n_trees=3, max_depth=3)
    singles = []
    for seed in range(3):  # the same draws by hand, dtlab hist alone
        rows = np.random.default_rng(seed).permutation(800)[:600]
        Xtr, ytr, Xte, yte = holdout_split(X[rows], y[rows])
        singles.append(roc_auc_score(yte, E.contender("dtlab hist", 3, 3, 1)(Xtr, ytr).predict_proba(Xte)[:, 1]))
    assert mean["dtlab hist"] == pytest.approx(np.mean(singles)) and 0.5 < mean["scikit-learn HGB"] <= 1


def test_heldout_set_and_selection_from_the_environment(monkeypatch):
    X, y = bench.heldout(300)
    assert X.shape == (400, bench.HELDOUT["n_features"]) and X.dtype == np.float32 and set(np.unique(y)) == {0, 1}
    monkeypatch.setenv("DTLAB_MODES", "per_core")
    assert bench.selected("DTLAB_MODES", E.MODES) == ("per_core",)
    monkeypatch.setenv("DTLAB_MODES", "per_core,sometimes")
    with pytest.raises(ValueError, match="unknown"):
        bench.selected("DTLAB_MODES", E.MODES)


def test_worker_scaling_rows():
    X, y = synthetic(500, 4, seed=0)
    rows = E.worker_scaling(X, y, workers=(1, 2), n_trees=2, max_depth=3, repeats=1)
    assert [(r["split_method"], r["workers"]) for r in rows] == [("exact", 1), ("exact", 2), ("hist", 1), ("hist", 2)]
    assert rows[0]["speedup"] == 1.0
    fig = plots.plot_worker_scaling(rows)
    assert fig.axes[0].get_xlabel().startswith("workers")
    assert "exact" in plots.scaling_captions({"rows": rows, "n_samples": 500})["boosting_worker_scaling"]


def test_sort_timing_rows_and_plot():
    rows = E.sort_timing(sizes=(100, 1000), workers=(1, 2), repeats=1)
    assert {(r["sort"], r["workers"]) for r in rows} == {("radix", 1), ("radix", 2), ("numpy packed keys", 1),
                                                          ("numpy argsort stable", 1)}
    assert all(r["seconds"] > 0 for r in rows)
    assert plots.plot_sort_timing(rows).axes[0].get_xscale() == "log"
    assert "1,000" in plots.sort_captions({"rows": rows, "library_sort": "numpy"})["boosting_sort"]


def test_gpu_contenders_fit_the_cpu_models_and_are_compared_under_the_simulator():
    """The GPU run's code path on the CUDA simulator: dtlab's CUDA fits give the CPU fits' predictions."""
    X, y = synthetic(160, 3, seed=0)
    # the histogram search only: the exact one takes 15 s per tiny fit on the simulator (tested in test_exact_cuda)
    rows = E.time_per_tree(X[:120], y[:120], X[120:], y[120:], n_trees=2, max_depth=2, modes=("whole_machine",),
                           contenders=("dtlab hist (GPU)", "dtlab hist"), repeats=1, warmup_rows=40)
    auc = {r["contender"]: r["auc"] for r in rows}
    assert auc["dtlab hist (GPU)"] == auc["dtlab hist"]
    assert E.contender("dtlab exact (GPU)", 1, 1, 1)(X[:20], y[:20]).backend_ == "cuda"
    comps = E.gpu_comparisons(rows, "simulated GPU", dataset="synthetic", n_samples=120)
    assert [(c["dtlab"], c["peer_name"]) for c in comps] == [E.GPU_PAIRS[1]]  # no GPU XGBoost among the rows
    assert all(c["speedup"] > 0 and c["device"] == "simulated GPU" for c in comps)
    sorts = E.sort_timing(sizes=(100, 1000), workers=(1,), repeats=1,
                          device_sort=("stand-in device sort", lambda x: lambda: np.argsort(x, kind="stable")))
    assert {(r["sort"], r["workers"]) for r in sorts if r["sort"].startswith("stand-in")} == {
        ("stand-in device sort", 0)}
    captions = plots.gpu_captions({"status": "measured", "device": "simulated GPU", "comparisons": comps,
                                   "sort_rows": sorts, "xgboost_installed": False})
    assert "120 rows" in captions["boosting_gpu_time_per_tree"]
    assert "no GPU peer ran" in captions["boosting_gpu_time_per_tree"]
    sort_caption = captions["boosting_gpu_sort"]
    assert "stand-in device sort " in sort_caption and "stand-in device sort (" not in sort_caption
    assert "radix (1 thread)" in sort_caption


def test_gpu_benchmark_is_pending_on_the_simulator_and_gpu_contenders_are_checked():
    from workbench.registry import RunContext

    load_all()
    result = BENCHMARKS["boosting_gpu"].fn(RunContext(backend="cuda", technique="boosting"))
    assert result["status"] == "pending" and "no real GPU" in result["reason"]
    assert plots.gpu_captions(result)["boosting_gpu"].startswith("GPU numbers pending: no real GPU")
    with pytest.raises(ValueError, match="unknown contender"):
        E.contender("XGBoost exact (GPU)", 2, 2, 1)  # XGBoost has no exact method on the GPU
    assert set(E.gpu_contenders()) <= set(E.GPU_CONTENDERS) and "dtlab exact (GPU)" in E.gpu_contenders()


def test_intensity_paper_model_and_counts():
    from workbench.boosting.intensity import counted, intensity_of_fit, paper_model

    assert paper_model(1.0, 0.9)["intensity"] == pytest.approx(0.1288, abs=5e-4)  # the paper's number
    c = counted({"scanned": 10, "ranked": 10, "partitioned": 0})
    assert c["flops"] == 140 and c["bytes"] == 680
    X, y = synthetic(600, 4, seed=0)
    out = intensity_of_fit(X, y, n_trees=2, max_depth=3)
    assert out["nnz"] == 2400 and out["n_split"] > 0 and out["seconds_per_round"] > 0
    assert 0 < out["dtlab"]["intensity"] < 1 and out["copy_bytes_per_second"] > 0
    assert plots.plot_intensity(out).axes[0].get_ylabel() == "flops per byte"
    assert "Eq. 4-6" in plots.intensity_captions(out)["boosting_intensity"]


def test_the_stepped_exact_search_is_the_librarys_root_split():
    from workbench.boosting import lesson as L

    steps = L.exact_steps()
    assert [s["x"] for s in steps] == sorted(s["x"] for s in steps)  # sorted once, missing rows left out
    assert len(steps) == int((~np.isnan(L.TINY_X)).sum())
    # prefix sums of g = 0.5 - y, h = 0.25 along the sorted rows
    assert steps[-1]["H_L"] == pytest.approx(0.25 * len(steps))
    assert steps[1]["G_L"] == pytest.approx(1.0) and np.isnan(steps[-1]["threshold"])
    best, library = L.best_split(steps), L.library_root()
    assert (best["threshold"], best["missing_left"]) == (library["threshold"], library["missing_left"]) == (2.5, True)
    assert best["gain"] == pytest.approx(library["gain"], abs=1e-5) == pytest.approx(13 / 6)
    # a histogram's edges are a subset of the candidates: at an edge the same gain, never a better best
    hist = L.hist_steps(edges=(2.5, 5.5))
    at_edge = {s["threshold"]: s["gain (missing left)"] for s in steps}
    assert hist[0]["gain (missing left)"] == pytest.approx(at_edge[2.5])
    assert [h["rows"] for h in hist] == [2, 2, 2, 2] and hist[-1]["bin"] == "missing"
    assert L.best_split(L.hist_steps(edges=(4.0, 6.5)))["gain"] < best["gain"]
    # min_child_weight rules out candidates whose side is too light
    assert np.isnan(L.exact_steps(min_child_weight=0.5)[0]["gain (missing right)"])


def test_convergence_curves_and_label_noise():
    from workbench.boosting import lesson as L

    y = np.zeros(10_000, dtype=np.int32)
    assert 0.25 < L.flip_labels(y, 0.3).mean() < 0.35 and L.flip_labels(y, 0.0).sum() == 0
    result = L.convergence(300, 0.1, rounds=4, max_depth=2, test_rows=200, pool_rows=1_000)
    assert set(result["curves"]) == {"exact", "hist"}
    for c in result["curves"].values():
        assert len(c["train"]) == len(c["test"]) == 4 and 1 <= c["best_round"] <= 4
        assert c["train"][-1] < c["train"][0]
    fig = plots.plot_convergence(result)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 6 and "300 training rows, 10% of the labels" in fig.axes[0].get_title()
    assert all(line.get_markerfacecolor() != "none" for line in lines)  # every point measured: filled
    with pytest.raises(ValueError, match="pool"):
        L.convergence(2_000, 0.0, pool_rows=1_000)


def test_row_ladder_and_crossover_rows():
    from workbench.boosting import lesson as L

    assert L.row_ladder(20_000) == [1_000, 2_000, 5_000, 10_000, 20_000]
    assert L.row_ladder(30_000)[-2:] == [20_000, 30_000]

    def points(exact, hist, sizes=(1_000, 2_000, 5_000, 10_000)):
        return [{"method": m, "device": "CPU", "workers": 1, "rows": n, "ms_per_tree": t, "source": "measured"}
                for m, ts in (("exact", exact), ("hist", hist)) for n, t in zip(sizes, ts)]

    between = L.crossover_rows(points([5, 10, 25, 50], [10, 12, 15, 20]))
    assert between["where"] == "between" and 2_000 < between["rows"] < 5_000
    assert L.crossover_rows(points([5, 10, 25, 50], [4, 5, 6, 7])) == {"rows": None, "where": "below"}
    assert L.crossover_rows(points([5, 10, 25, 50], [6, 12, 30, 60])) == {"rows": None, "where": "above"}
    # a dip of hist below exact followed by exact ahead again is no crossover
    assert L.crossover_rows(points([5, 10, 25, 50], [4, 12, 15, 60]))["where"] == "above"


def test_crossover_measures_workers_and_models_beyond_the_cores(monkeypatch):
    from workbench.boosting import lesson as L

    monkeypatch.setattr(L, "machine_threads", lambda: 2)
    result = L.crossover(2_000, 0, 3, n_trees=1, max_depth=2, gpu=False)
    pts = result["points"]
    measured = {(p["method"], p["workers"], p["rows"]) for p in pts if p["source"] == "measured"}
    assert measured == {(m, w, n) for m in ("exact", "hist") for w in (1, 2) for n in (1_000, 2_000)}
    modelled = [p for p in pts if p["source"] == "modelled"]
    assert {(p["method"], p["workers"], p["rows"]) for p in modelled} == {("exact", 3, 2_000), ("hist", 3, 2_000)}
    assert result["n_features"] == L.SIGNAL_FEATURES and set(result["crossover"]) == {1, 2}
    start = result["parallel_from_rows"]  # the first row count at which the library uses the workers
    assert start * result["n_features"] >= result["parallel_min_work"] > (start - 1) * result["n_features"]
    recorded = {"rows": [{"split_method": m, "workers": w, "speedup": float(w)} for m in ("exact", "hist")
                         for w in (1, 2)], "n_samples": 40_000}
    fig = plots.plot_crossover(result, recorded)
    ax1, ax2, ax3 = fig.axes
    assert ax1.get_xscale() == "log" and len(ax2.get_lines()) == 4  # exact, hist, 1x and the ideal line
    by_label = {line.get_label(): line for line in ax3.get_lines()}
    model = by_label["exact (modelled: Amdahl fit)"]
    assert model.get_markerfacecolor() == "none" and model.get_linestyle() == "--"  # modelled: open, dashed
    assert by_label["exact (measured)"].get_markerfacecolor() != "none"
    assert list(model.get_xdata()) == [2, 3] and "static figure (40,000 rows" in " ".join(by_label)


def test_recorded_worker_scaling_reads_results_json(tmp_path):
    from workbench.boosting import lesson as L

    path = tmp_path / "results.json"
    assert L.recorded_worker_scaling(path) is None
    path.write_text('{"figures": {"boosting_worker_scaling": {"results": {"rows": [{"split_method": "exact", '
                    '"workers": 1, "speedup": 1.0}], "n_samples": 40000, "load_average": [1.2, 1.2, 1.1]}, '
                    '"run": {"commit": "abc1234"}}}}')
    got = L.recorded_worker_scaling(path)
    assert got["n_samples"] == 40_000 and got["commit"] == "abc1234" and len(got["rows"]) == 1
    assert plots.plot_tiny_search(L.exact_steps(), L.hist_steps()).axes[0].get_lines()
