"""The plots of ``boosting_dask`` (workbench/boosting/dask_plots.py) from made-up results: what each draws, measured
points filled and modelled ones open."""

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from dtlab.distributed.dask_executor import alive_workers
from workbench.boosting import dask_plots as P


def scaling_result() -> dict:
    """``dask_scaling``'s result: hist and exact measured on 1 and 2 workers, modelled on 4, 8 and 16."""
    def method(per_tree_ms, modelled_ms, error, level_bytes):
        return {"measured": [{"workers": w, "seconds": t * 40e-3, "work_seconds": t * 30e-3, "per_tree": t * 1e-3,
                              "round_seconds": [0.01], "level_bytes": b}
                             for w, t, b in zip((1, 2), per_tree_ms, level_bytes)],
                "fit_error": error, "model": {"compute_1": 1.0, "a": 0.1, "b": 0.01},
                "modelled": [{"workers": w, "per_tree": t * 1e-3} for w, t in zip((4, 8, 16), modelled_ms)]}

    return {"rows": 60_000, "n_features": 28, "n_estimators": 10, "max_depth": 6,
            "split_methods": {"hist": method((120, 70), (45, 35, 32), 0.03, ([64e3, 128e3], [70e3, 140e3, 280e3])),
                              "exact": method((900, 480), (260, 150, 95), 0.0, ([8e3], [15e3, 15e3, 15e3]))}}


def peers_result() -> dict:
    runs = {"dtlab hist": [2.21, 2.38, 2.72], "dtlab exact": [27.0, 27.7, 28.1],
            "xgboost.dask hist": [3.00, 3.15, 3.54], "lightgbm.dask": [2.76, 3.11, 3.33]}
    return {"rows": 100_000, "n_features": 28, "n_workers": 2, "threads_per_worker": 1, "repeats": 3,
            "params": {"n_estimators": 20, "max_depth": 6, "learning_rate": 0.3, "max_bins": 256},
            "runs": {k: {"seconds": s, "median": float(np.median(s)), "auc": 0.9925 + i * 1e-4}
                     for i, (k, s) in enumerate(runs.items())}}


def lines_by_label(ax) -> dict:
    return {line.get_label(): line for line in ax.get_lines()}


def is_filled(line) -> bool:
    return to_rgba(line.get_markerfacecolor()) == to_rgba(line.get_color())


def is_open(line) -> bool:
    face = line.get_markerfacecolor()
    return isinstance(face, str) and face == "none" and to_rgba(line.get_markeredgecolor()) == to_rgba(line.get_color())


def test_scaling_plot_fills_the_measured_points_and_leaves_the_modelled_open():
    result = scaling_result()
    fig = P.plot_dask_scaling(result)
    ax = fig.axes[0]
    lines = lines_by_label(ax)
    assert len(lines) == 4
    for i, (method, r) in enumerate(result["split_methods"].items()):
        measured = lines[f"dtlab {method} (measured)"]
        modelled = lines[f"dtlab {method} (modelled; error at measured points {r['fit_error']:.0%})"]
        assert measured.get_marker() == modelled.get_marker() == "o"
        assert to_rgba(measured.get_color()) == to_rgba(modelled.get_color()) == to_rgba(f"C{i}")
        assert is_filled(measured) and not is_open(measured) and measured.get_linestyle() == "-"
        assert is_open(modelled) and not is_filled(modelled) and modelled.get_linestyle() == "--"
        # measured: the measured points in ms; modelled: from the last measured point on
        np.testing.assert_allclose(measured.get_xdata(), [1, 2])
        np.testing.assert_allclose(measured.get_ydata(), [m["per_tree"] * 1e3 for m in r["measured"]])
        np.testing.assert_allclose(modelled.get_xdata(), [2, 4, 8, 16])
        np.testing.assert_allclose(modelled.get_ydata(),
                                   [r["measured"][-1]["per_tree"] * 1e3] + [m["per_tree"] * 1e3 for m in r["modelled"]])
    assert "dtlab hist (modelled; error at measured points 3%)" in lines
    assert "dtlab exact (modelled; error at measured points 0%)" in lines
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_ylabel() == "ms per tree (log)" and "60,000 x 28 rows, depth 6" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(lines)


def test_vs_peers_plot_bars_spreads_and_aucs():
    result = peers_result()
    fig = P.plot_dask_vs_peers(result)
    ax = fig.axes[0]
    runs = result["runs"]
    bars = ax.patches
    assert [round(b.get_width(), 9) for b in bars] == [round(r["median"], 9) for r in runs.values()]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(runs)
    labels = [t.get_text() for t in ax.texts]
    assert labels == [f" AUC {r['auc']:.4f}" for r in runs.values()]
    # each AUC written just past its slowest run, the error bar spanning fastest to slowest
    for text, r in zip(ax.texts, runs.values()):
        assert text.xy[0] == pytest.approx(max(r["seconds"]))
    (segments,) = [c for c in ax.collections if len(c.get_segments()) == len(runs)]
    for seg, r in zip(segments.get_segments(), runs.values()):
        assert sorted(seg[:, 0]) == pytest.approx([min(r["seconds"]), max(r["seconds"])])
    assert ax.get_xlim()[1] == pytest.approx(max(max(r["seconds"]) for r in runs.values()) * 1.45)
    assert "LocalCluster 2 processes x 1 thread" in ax.get_title()


def test_level_bytes_plot_draws_the_most_workers_measured():
    result = scaling_result()
    ax = P.plot_level_bytes(result).axes[0]
    lines = ax.get_lines()
    assert len(lines) == 2 and ax.get_yscale() == "log"
    for line, r in zip(lines, result["split_methods"].values()):
        np.testing.assert_allclose(line.get_ydata(), r["measured"][-1]["level_bytes"])
        np.testing.assert_allclose(line.get_xdata(), range(len(r["measured"][-1]["level_bytes"])))
        assert is_filled(line) and line.get_label().endswith(", 2 workers")


def test_the_three_panels_and_the_scaling_caption():
    fig = P.dask_figures(peers_result(), scaling_result())
    assert len(fig.axes) == 3
    assert fig.axes[0].patches and len(fig.axes[1].get_lines()) == 4 and len(fig.axes[2].get_lines()) == 2
    text = P.dask_captions({"vs_peers": peers_result(), "scaling": scaling_result()})["boosting_dask"]
    assert "Goal" not in text  # no goal computed, none stated
    assert "hist: 120 ms/tree on 1, 70 ms/tree on 2 measured; 45 on 4, 35 on 8, 32 on 16 modelled" in text
    assert "error at the measured points 3%" in text and "exact: 900 ms/tree on 1" in text


def test_the_tiny_exchanges_reach_one_split():
    from workbench.boosting import dask_lesson as D

    table = D.hist_exchange(parts=2)
    assert len(table) == 8  # 2 features x 4 values
    for e in table:  # the workers' histograms add up to the whole data's
        rows = D.TINY_X[:, e["feature"]] == e["bin"]
        assert e["G"] == pytest.approx(e["G part 0"] + e["G part 1"]) == pytest.approx((0.5 - D.TINY_Y[rows]).sum())
        assert e["H"] == pytest.approx(0.25 * rows.sum())
    best = D.best_of_histogram(table)
    exact = D.exact_exchange(workers=2)
    assert [p["features"] for p in exact["proposals"]] == [[0], [1]]
    assert (best["feature"], best["threshold"]) == (exact["best"]["feature"], exact["best"]["threshold"]) == (0, 1.5)
    assert best["gain"] == pytest.approx(exact["best"]["gain"]) == pytest.approx(13 / 6)
    assert exact["sides"] == [1, 1, 0, 0, 1, 1, 0, 0] and exact["side_bytes"] == 1
    one = D.exact_exchange(workers=1)
    assert len(one["proposals"]) == 1 and one["best"]["feature"] == 0


def test_cluster_probes_plot_one_line_per_start_and_measured_points_filled():
    probes = [{"workers": w, "threads": 1, "rows": 400, "seconds": 0.1 * w, "per_tree_ms": 50.0 / w,
               "work_seconds": 0.05, "loop": "collective", "test_loss": [0.6, 0.5, 0.45]} for w in (2, 1, 2)]
    fig = P.plot_cluster_probes(probes)
    ax1, ax2 = fig.axes
    assert len(ax1.get_lines()) == 3 and "start 2: 1 worker x 1 thread" in [line.get_label() for line in ax1.lines]
    points = [line for line in ax2.get_lines() if line.get_marker() == "o"]
    assert len(points) == 1 and len(points[0].get_xdata()) == 3 and is_filled(points[0])
    (joined,) = [line for line in ax2.get_lines() if line.get_marker() in ("None", "", None)]
    np.testing.assert_allclose(joined.get_xdata(), [1, 2])  # the latest start of each size
    np.testing.assert_allclose(joined.get_ydata(), [50.0, 25.0])


def test_dask_lesson_figure_and_levels_that_sent_nothing():
    result = scaling_result()
    result["split_methods"]["exact"]["measured"][-1]["level_bytes"] = [0.0, 15e3, 15e3]
    fig = P.plot_dask_lesson(result)
    ax1, ax2 = fig.axes
    assert len(ax1.get_lines()) == 4 and "beyond 2: modelled" in ax1.get_xlabel()
    exact = [line for line in ax2.get_lines() if line.get_label().startswith("exact")][0]
    np.testing.assert_allclose(exact.get_xdata(), [1, 2])  # depth 0 sent nothing: no point on the log axis


def test_cluster_lesson_reads_the_live_client_and_the_model_does_not_depend_on_the_cluster():
    from workbench.boosting import dask_lesson as D

    cluster = D.ClusterLesson(probe_rows=400, probe_trees=3, max_depth=3, processes=False, dashboard=False)
    try:
        assert cluster.client is None
        first = cluster.start(1, 1)
        old = cluster.client
        tiny = D.tiny_on_cluster(cluster.client, "exact")
        assert tiny["cluster"] == tiny["one process"] and tiny["cluster"]["feature"] == 0
        second = cluster.start(2, 1)
        assert cluster.client is not old and len(alive_workers(cluster.client)) == 2
        assert (first["workers"], second["workers"]) == (1, 2) and len(cluster.probes) == 2
        np.testing.assert_allclose(first["test_loss"], second["test_loss"], atol=1e-5)
        assert all(p["per_tree_ms"] > 0 and len(p["test_loss"]) == 3 for p in cluster.probes)
        assert cluster.dashboard_link is None  # started without a dashboard
    finally:
        cluster.close()
    assert cluster.client is None
