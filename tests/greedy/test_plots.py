"""Greedy plots and captions take data (frames, recorded results) and label threads."""

import numpy as np

from workbench.greedy import plots


def _timings():
    import pandas as pd

    rows = []
    for n in (300, 600):
        for method, seconds, threads in (("naive", 0.5, 1), ("vectorized", 0.015, 1), ("vectorized", 0.01, 2),
                                         ("sklearn", 0.02, 1)):
            skipped = method == "naive" and n == 600
            t = np.nan if skipped else seconds * n / 300
            rows.append(dict(n_samples=n, method=method, threads=threads, seconds=t, seconds_min=t * 0.9,
                             seconds_max=t * 1.2, runs=0 if skipped else 5, n_nodes=np.nan if skipped else 9,
                             skipped=skipped, max_depth=None))
    return pd.DataFrame(rows)


def _comparisons():
    return [{"peer": "scikit-learn", "mode": mode, "threads": {"dtlab": t, "peer": 1}, "speedup": s,
             "max_depth": d, **({"peer_note": "one tree, one thread"} if t > 1 else {})}
            for d in (5, None) for mode, t, s in (("per_core", 1, 1.5), ("whole_machine", 2, 2.5))]


def test_timing_plot_labels_threads_and_reported_times():
    fig = plots.plot_timing_vs_size(_timings(), reported={("naive", "SIMD"): {300: 1.0, 600: 4.0}})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() and "(s)" in ax.get_ylabel() and ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"dtlab vectorized (1 thread)", "dtlab vectorized (2 threads)", "scikit-learn (1 thread)",
            "dtlab naive (1 thread)"} <= set(labels)
    assert any("reported" in label for label in labels)
    assert not any("reported" in t.get_text() for t in plots.plot_timing_vs_size(_timings()).axes[0]
                   .get_legend().get_texts())


def test_error_and_speedup_plots():
    import pandas as pd

    frame = pd.DataFrame({"max_depth": [1, 2, 3], "train_mse": [3.0, 2.0, 1.0], "test_mse": [3.0, 2.5, 2.7]})
    assert "years" in plots.plot_error_vs_depth(frame).axes[0].get_ylabel()
    fig = plots.plot_speedups(_comparisons())
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "per core: dtlab 1 thread, scikit-learn 1 thread" in labels
    assert "whole machine: dtlab 2 threads, scikit-learn 1 thread" in labels


def test_captions_read_the_recorded_numbers():
    timings = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
               for r in _timings().to_dict(orient="records")]
    text = plots.timing_captions({"timings": timings, "max_depth": None})["greedy_regression_timing"]
    assert "(predict age, fully grown)" in text and "in alternation" in text and "up to 5 rounds" in text
    assert ("At 600 rows: the vectorized search 0.03 s on 1 thread, 0.03-0.04 s; the vectorized search 0.02 s on "
            "2 threads, 0.02-0.02 s; scikit-learn 0.04 s on 1 thread, 0.04-0.05 s.") in text
    assert "Per core (1 thread each) the vectorised search fits 1.3x as fast as scikit-learn." in text
    assert "(predict age, depth 7)" in plots.timing_captions({"timings": timings, "max_depth": 7})[
        "greedy_regression_timing"]
    trees = [{"n_samples": 100, "max_depth": 5, "same_tree": True, "all_exactly_equal": True, "n_divergences": 0},
             {"n_samples": 100, "max_depth": None, "same_tree": False, "all_exactly_equal": True,
              "n_divergences": 7}]
    text = plots.regressor_speed_captions({"comparisons": _comparisons(), "trees": trees})[
        "greedy_regressor_vs_sklearn"]
    assert "depth 5: 1.5x per core (dtlab 1 thread, peer 1 thread), 2.5x whole machine" in text
    assert ("depth 5 the same tree node for node; depth unlimited 7 places where the trees part, all between "
            "splits of exactly equal gain") in text
    depth = plots.depth_captions({"best_depth": 8, "best_test_mse": 313.4, "errors": [
        {"max_depth": 15, "train_mse": 100.0, "test_mse": 400.0}]})
    assert "lowest at depth 8 (313 years^2)" in depth["greedy_regression_depth"]
