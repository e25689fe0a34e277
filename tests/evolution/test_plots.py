"""GDT plots and captions take data (frames, recorded results) and label threads."""

import pytest

from dtlab.evolution import experiments as exp
from dtlab.evolution import plots


@pytest.fixture(scope="module")
def history():
    return exp.chess_runs(n_samples=(300,), noise_attrs=(0, 1), seeds=(0,), n_test=300, max_generations=4,
                          population_size=6)[1]


def test_convergence_plots(history):
    for metric in ("best_fitness", "best_size"):
        fig = plots.plot_convergence(history, metric, ideal_nodes=17)
        ax = fig.axes[0]
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel() and ax.get_legend() is not None
        assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in plots.plot_convergence(history, "best_size", ideal_nodes=17).axes[0]
              .get_legend().get_texts()]
    assert "ideal tree (17 nodes)" in labels
    with pytest.raises(ValueError, match="no column"):
        plots.plot_convergence(history, "nope")


def test_cart_comparison_plot_labels_threads():
    table = exp.cart_comparison(datasets=("chess3x3",), n_samples=400, max_generations=3, population_size=6)
    fig = plots.plot_cart_comparison(table)
    assert all(ax.get_ylabel() for ax in fig.axes) and fig.axes[0].get_legend() is not None  # one legend for both
    assert fig.axes[1].get_ylim()[1] == 100  # an accuracy axis stops at 100 %
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "CART (1 thread)" in labels and any(label.startswith("GDT (") for label in labels)


def test_throughput_plot_labels_modes_and_threads():
    import pandas as pd

    table = pd.DataFrame([{"method": m, "mode": mode, "threads": t, "tree_rows_per_s": r, "n_trees": 5,
                           "n_samples": 100}
                          for m, r in (("dtlab-cpu", 1e8), ("numpy", 1e6))
                          for mode, t in (("per_core", 1), ("whole_machine", 2 if m != "numpy" else 1))])
    fig = plots.plot_throughput(table)
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("throughput") and "threads" in ax.get_title()
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"per core", "whole machine"}
    assert " 2 threads" in [t.get_text() for t in ax.texts]


def test_captions_read_the_recorded_numbers():
    runs = [{"n_samples": 100, "noise_attrs": k, "seed": 0, "ideal": k == 0, "first_ideal_generation": g}
            for k, g in ((0, 40), (2, -1))]
    text = plots.convergence_captions({"runs": runs, "ideal_nodes": 17})
    assert "1 of 2 runs ended with the ideal 17-node tree" in text["evolution_convergence_size"]
    assert "100 objects, 0 noise: generation 40; 100 objects, 2 noise: never" in text["evolution_convergence_size"]
    comparisons = [{"peer": "NumPy reference", "mode": mode, "threads": {"dtlab": t, "peer": 1}, "speedup": s,
                    "n_trees": 5, "n_samples": 100, **({"peer_note": "no threads"} if t > 1 else {})}
                   for mode, t, s in (("per_core", 1, 30.0), ("whole_machine", 2, 60.0))]
    text = plots.throughput_captions({"comparisons": comparisons})["evolution_evaluator_throughput"]
    assert ("against the NumPy reference, 30x per core (dtlab 1 thread, peer 1 thread), 60x whole machine "
            "(dtlab 2 threads, peer 1 thread) (no threads)") in text


def test_device_plots_mark_modelled_values_and_phases():
    import pandas as pd

    curves = pd.DataFrame([{"n_samples": n, "n_devices": d, "speedup": s, "source": src}
                           for n in (1000, 10000) for d, s, src in ((1, 1.0, "measured"), (2, 1.8, "measured"),
                                                                    (2, 1.9, "modelled"), (4, 3.5, "modelled"))])
    labels = [t.get_text() for t in plots.plot_device_scaling(curves).axes[0].get_legend().get_texts()]
    assert "4 CPU workers (modelled)" in labels and "2 CPU workers (measured)" in labels
    breakdown = pd.DataFrame([{"evaluator": "CPU workers x1", "n_samples": 100, "generations": 3,
                               **dict.fromkeys(plots.PHASE_LABELS if hasattr(plots, "PHASE_LABELS") else
                                               ["host_operators", "prepare", "transfer", "kernel", "merge",
                                                "dispatch"], 0.001)}])
    ax = plots.plot_generation_breakdown(breakdown).axes[0]
    assert ax.get_ylabel() == "milliseconds per generation" and len(ax.get_legend().get_texts()) == 6
    assert plots.pareto_front([(17, 0.99), (23, 0.99), (5, 0.7), (100, 0.995)]) == [2, 0, 3]
