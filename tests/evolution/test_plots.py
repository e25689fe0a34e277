"""GDT plots and captions take data (frames, recorded results), mark modelled values and label threads."""

import pandas as pd
import pytest

from workbench.evolution import captions, plots
from workbench.evolution import experiments as exp


@pytest.fixture(scope="module")
def history():
    return exp.chess_runs(n_samples=(300,), noise_attrs=(0, 1), seeds=(0,), n_test=300, max_generations=4,
                          population_size=6)[1]


def test_convergence_plots(history):
    for metric in ("best_fitness", "best_size"):
        fig = plots.plot_convergence(history, metric, ideal_nodes=17)
        ax = fig.axes[0]
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel() and len(fig.legends) == 1  # below the axes
        assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in plots.plot_convergence(history, "best_size", ideal_nodes=17).legends[0]
              .get_texts()]
    assert "ideal tree (17 nodes)" in labels
    assert plots.plot_convergence(history, "best_size", ax=ax).axes[0].get_legend() is not None  # in a given axes
    with pytest.raises(ValueError, match="no column"):
        plots.plot_convergence(history, "nope")


def test_throughput_plot_labels_modes_and_threads():
    table = pd.DataFrame([{"method": m, "mode": mode, "threads": t, "tree_rows_per_s": r, "n_trees": 5,
                           "n_samples": 100}
                          for m, r in (("dtlab-cpu", 1e8), ("numpy", 1e6))
                          for mode, t in (("per_core", 1), ("whole_machine", 2 if m != "numpy" else 1))])
    ax = plots.plot_throughput(table).axes[0]
    assert ax.get_xlabel().startswith("throughput") and "threads" in ax.get_title()
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"per core", "whole machine"}
    assert " 2 threads" in [t.get_text() for t in ax.texts]


def test_captions_read_the_recorded_numbers():
    runs = [{"n_samples": 100, "noise_attrs": k, "seed": 0, "ideal": k == 0, "first_ideal_generation": g}
            for k, g in ((0, 40), (2, -1))]
    text = captions.convergence_captions({"runs": runs, "ideal_nodes": 17})
    assert "1 of 2 runs ended with the ideal 17-node tree" in text["evolution_convergence_size"]
    assert "100 objects, 0 noise: generation 40; 100 objects, 2 noise: never" in text["evolution_convergence_size"]
    comparisons = [{"peer": "NumPy reference", "mode": mode, "threads": {"dtlab": t, "peer": 1}, "speedup": s,
                    "n_trees": 5, "n_samples": 100, **({"peer_note": "no threads"} if t > 1 else {})}
                   for mode, t, s in (("per_core", 1, 30.0), ("whole_machine", 2, 60.0))]
    text = captions.throughput_captions({"comparisons": comparisons})["evolution_evaluator_throughput"]
    assert ("against the NumPy reference, 30x per core (dtlab 1 thread, peer 1 thread), 60x whole machine "
            "(dtlab 2 threads, peer 1 thread) (no threads)") in text


def _curves(model=True):
    rows = [{"n_samples": n, "n_devices": d, "speedup": s, "seconds": 1.0 / s, "source": src}
            for n in (1000, 10000) for d, s, src in ((1, 1.0, "measured"), (2, 1.8, "measured"),
                                                     (1, 1.0, "bound"), (2, 1.9, "bound"), (4, 1.9, "bound"))]
    if model:
        rows += [{"n_samples": n, "n_devices": d, "speedup": s, "seconds": 1.0 / s, "source": "modelled"}
                 for n in (1000, 10000) for d, s in ((1, 1.0), (2, 1.85), (4, 3.3))]
    return pd.DataFrame(rows)


def _breakdown():
    return pd.DataFrame([{"evaluator": f"CPU workers x{d}", "n_samples": 100, "generations": 3, "total": 0.01,
                          "host_share": 0.4, **dict.fromkeys(plots.PHASE_LABELS, 0.001)} for d in (1, 2)])


def _generation():
    return pd.DataFrame([{"n_samples": 1000, "n_devices": d, "seconds": t, "speedup": s, "source": src,
                          "host_share": 0.4, "limit": 2.5}
                         for d, t, s, src in ((1, 0.01, 1.0, "measured"), (2, 0.009, 1.1, "measured"),
                                              (1, float("nan"), 1.0, "modelled"), (2, float("nan"), 1.43, "modelled"),
                                              (4, float("nan"), 1.82, "modelled"))])


def test_device_plots_mark_measured_modelled_and_bound():
    labels = [t.get_text() for t in plots.plot_device_scaling(_curves()).axes[0].get_legend().get_texts()]
    assert {"2 CPU workers (measured)", "4 CPU workers (modelled)", "4 CPU workers (bound)"} <= set(labels)
    labels = [t.get_text() for t in plots.plot_device_scaling(_curves(model=False)).axes[0].get_legend().get_texts()]
    assert not any("modelled" in label for label in labels)
    curves = _curves()[lambda c: c.n_samples == 1000].assign(method="CPU workers")
    fig = plots.plot_device_counts(curves, _breakdown(), _generation())
    left, right = fig.axes[:2]
    assert left.get_xlabel().startswith("devices") and right.get_ylabel() == "milliseconds per generation"
    styles = {line.get_label(): (line.get_linestyle(), line.get_markerfacecolor()) for line in left.lines}
    assert styles["evaluation, CPU workers (modelled: each device its own compute, as GPUs)"] == ("--", "none")
    assert styles["evaluation, CPU workers (this machine's bound)"][0] == ":"
    measured = styles["evaluation, CPU workers (measured)"]
    assert measured[0] == "-" and measured[1] != "none"
    assert styles["whole generation (measured)"][1] != "none"
    assert styles["whole generation, Amdahl's law from its host share (modelled)"] == ("--", "none")
    assert "Amdahl's limit 1 / host share = 2.50x" in styles
    # without a generation, as before: the evaluation's curves only
    assert not any("generation" in line.get_label() for line in plots.plot_device_counts(curves).axes[0].lines)


def test_amdahl_plot_shares_and_speedups():
    phases_total = 0.001 * len(plots.PHASE_LABELS)  # _breakdown's phases, 1 ms each
    breakdown = pd.concat([_breakdown().assign(n_samples=n, devices=[1, 2], kind="CPU workers", total=phases_total)
                           for n in (100, 1000)], ignore_index=True)
    generation = pd.concat([_generation().assign(n_samples=n) for n in (100, 1000)], ignore_index=True)
    fig = plots.plot_amdahl(breakdown, generation)
    share, speed = fig.axes[:2]
    assert share.get_ylabel() == "share of a generation (%)" and len(share.get_xticklabels()) == 4
    assert "100 rows" in share.get_xticklabels()[0].get_text()
    tops = [p.get_y() + p.get_height() for p in share.patches]
    assert max(tops) == pytest.approx(100)  # every bar's phases add up to the whole generation
    labels = {line.get_label(): line.get_markerfacecolor() for line in speed.lines}
    assert labels["1,000 rows, Amdahl's law (modelled)"] == "none" and labels["1,000 rows, measured"] != "none"


def test_generation_walkthrough_plot():
    from workbench.evolution.walkthrough import one_generation

    step = one_generation(n_samples=40, seed=3)
    fig = plots.plot_generation(step)
    titles = [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 6 and titles[0].startswith("A: ") and titles[3].startswith("elite: ")
    assert "crossover" in titles[4] and "mutation" in titles[5]


def test_convergence_pair_draws_both_metrics_marks_the_ideal_and_follows_the_data(history):
    from dtlab.plotting import new_figure
    from workbench.widgets import curve_digest

    never = lambda h: h.best_size < 0  # noqa: E731
    always = lambda h: h.best_size > 0  # noqa: E731
    fig = plots.plot_convergence_pair(history[history.noise_attrs == 1], reference=history[history.noise_attrs == 0],
                                      ideal_nodes=17, ideal=always, title="t")
    fitness, size = fig.axes[:2]
    assert fitness.get_ylabel().startswith("best fitness") and size.get_ylabel() == "best tree size (nodes)"
    assert fitness.get_xscale() == size.get_xscale() == "log"
    assert len(size.collections) == 2  # the run's first ideal generation, and the legend's sample
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("the sweep, grey" in label for label in labels) and "ideal tree (17 nodes)" in labels
    assert len(plots.plot_convergence_pair(history, ideal=never).axes[1].collections) == 1
    # drawn into a live figure's one axes: the axes is replaced by the two panels
    live, ax = new_figure(figsize=(7, 4.2))
    plots.plot_convergence_pair(history[history.noise_attrs == 0], ax=ax)
    assert len(live.axes) == 2
    other, ax = new_figure(figsize=(7, 4.2))
    plots.plot_convergence_pair(history[history.noise_attrs == 1], ax=ax)
    assert curve_digest(live)[0] != curve_digest(other)[0] and curve_digest(live)[1] > 0


def test_tour_depth_plot_and_tables():
    from workbench.tour import cart_depth_curves, flat_table, plot_cart_depth, walk_table

    table = cart_depth_curves(600, noise_attrs=1, max_depth=5, n_test=600)
    assert table.depth.tolist() == [1, 2, 3, 4, 5] and (table.n_nodes.diff().dropna() >= 0).all()
    fig = plot_cart_depth(table)
    assert [ax.get_xlabel() for ax in fig.axes] == ["depth limit", "depth limit"]
    assert len(fig.axes[0].lines) == 2 and len(fig.axes[0].collections) == 1

    from sklearn.tree import DecisionTreeClassifier

    from dtlab.datasets import chess3x3
    from dtlab.trees import FlatTree

    X, y = chess3x3(500, seed=0)
    tree = FlatTree.from_sklearn(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y))
    arrays = flat_table(tree, max_nodes=5)
    assert len(arrays) == min(5, tree.n_nodes) and list(arrays.columns)[:4] == ["feature", "threshold", "left", "right"]
    walk = walk_table(tree, X[0])
    assert walk.node.iloc[-1] == tree.apply(X[:1], backend="cpu")[0] and walk.goes.iloc[-1].startswith("leaf")
    assert walk.next.iloc[:-1].tolist() == walk.node.iloc[1:].tolist()


def test_generation_breakdown_plot_shows_phases_and_the_host_share():
    ax = plots.plot_generation_breakdown(_breakdown()).axes[0]
    assert ax.get_ylabel() == "milliseconds per generation"
    assert len(ax.get_legend().get_texts()) == len(plots.PHASE_LABELS)
    assert any("host 40%" in t.get_text() for t in ax.texts)


def test_host_loop_plot_and_caption():
    case = {"n_samples": 1000, "generations": 1000, "now": {"median": 0.8, "min": 0.7, "max": 0.9},
            "baseline": {"median": 4.0, "min": 3.9, "max": 4.2}, "recorded": {"median": 4.1, "min": 4.0, "max": 4.3},
            "speedup": 5.0, "speedup_min": 4.3, "speedup_max": 6.0, "goal_seconds": 1.0, "goal": "<= 1.0 s",
            "met": True}
    results = {"cases": {"1000x1000": case}, "threads": 2, "repeats": 5,
               "baseline_source": "commit 79f2c68 in this run, alternating",
               "loop_alone": {"n_samples": 1000, "generations": 200, "speedup": 6.5}}
    ax = plots.plot_host_loop(results).axes[0]
    assert "seconds per fit" in ax.get_ylabel() and ax.get_legend() is not None
    text = captions.host_loop_captions(results)["evolution_host_loop"]
    assert ("0.80 s (0.70-0.90) against 4.00 s (3.90-4.20), 5.0x (4.3-6.0x; recorded with the exclusive lock: "
            "4.10 s); goal <= 1.0 s: met over the whole spread") in text
    assert "79f2c68" in text and "6.5x" in text


def test_baseline_plots_and_caption_state_the_gap():
    summary = pd.DataFrame([
        {"dataset": "a9a", "method": m, "seeds": 5, "n_nodes": n, "n_leaves": (n + 1) / 2, "test_accuracy": a,
         "test_accuracy_min": a - 0.01, "test_accuracy_max": a + 0.01, "fit_seconds": 1.0, "held_out": True,
         "pareto": p, "gap_points": g, "gap_nodes": gn}
        # GDT front (CV) ties with STreeD: not flagged pareto (the front keeps one of equal points), yet no
        # baseline beats it, so it stands on the front
        for m, n, a, p, g, gn in (("GDT", 29, 0.822, False, 0.5, 14), ("GDT front (CV)", 15, 0.827, False, 0, 0),
                                  ("STreeD depth 3", 15, 0.827, True, None, None))])
    fig = plots.plot_accuracy_size(summary, pd.DataFrame([{"dataset": "a9a", "seed": 0, "n_nodes": n,
                                                            "test_accuracy": a} for n, a in ((3, 0.8), (15, 0.82))]))
    assert fig.axes[0].get_title() == "a9a (held out)"
    assert plots.plot_baselines(summary).axes[1].get_ylabel() == "test accuracy (%)"
    text = captions.baseline_captions({"summary": summary.to_dict(orient="records"), "n_seeds": 5, "cv": 3,
                                       "chess_tree": {"n_samples": 100, "n_nodes": 17, "n_leaves": 9,
                                                      "ideal": True}})["evolution_vs_cart"]
    assert "GDT 29 nodes / 82.2% in 1 s, off the front: 0.5 points below a baseline no larger, 14 nodes above" in text
    assert "GDT front (CV) 15 nodes / 82.7% in 1 s, on the front" in text
