"""The evaluator throughput measurement: same leaves as scikit-learn, both thread settings, stated threads."""

import numpy as np

from dtlab.datasets import chess3x3
from dtlab.evolution.individual import to_flat_tree
from workbench.evolution import throughput as tp
from workbench.timing import threads_for


def test_sklearn_tree_with_the_same_nodes_finds_the_same_leaves():
    X, y = chess3x3(3000, noise_attrs=1, seed=0)
    population = tp.evolved_population(X, y, generations=3, seed=0, population_size=6)
    for ind in population:
        sk = tp.to_sklearn_tree(ind, X.shape[1], 2)
        assert np.array_equal(sk.apply(X), to_flat_tree(ind, X.shape[1]).apply(X, backend="cpu"))


def test_evaluator_throughput_per_core_and_whole_machine():
    table, comparisons = tp.evaluator_throughput(n_samples=3000, population_generations=2, repeats=1,
                                                 numpy_repeats=1)
    assert set(zip(table.method, table["mode"])) == {(m, mode) for m in ("dtlab-cpu", "sklearn-apply", "numpy")
                                                     for mode in ("per_core", "whole_machine")}
    assert (table.tree_rows_per_s > 0).all()
    assert (table[table.method == "numpy"].threads == 1).all()
    assert (0 <= table.bitmask_trees).all() and (table.bitmask_trees <= table.n_trees).all()
    assert [(e["peer"].split()[0], e["mode"]) for e in comparisons] == [
        ("NumPy", "per_core"), ("scikit-learn", "per_core"), ("NumPy", "whole_machine"),
        ("scikit-learn", "whole_machine")]
    for e in comparisons:
        assert e["threads"]["dtlab"] == threads_for(e["mode"])
        if e["peer"].startswith("scikit-learn"):
            assert e["threads"]["peer"] == e["threads"]["dtlab"]  # apply over row blocks in a thread pool
        else:
            assert e["threads"]["peer"] == 1
            assert ("peer_note" in e) == (e["threads"]["dtlab"] > 1)
