"""GDT fitness-evaluation throughput against peers (``evolution_evaluator_throughput``), and the evolved batches
every device timing uses.

Speeds are compared per core and for the whole machine with the helpers of
:mod:`workbench.timing`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dtlab.datasets import chess3x3
from workbench.timing import (
    MODES,
    comparison,
    in_row_chunks,
    median_seconds,
    numba_threads,
    paired_medians,
    threads_for,
)

__all__ = ["NUMPY_NOTE", "evaluator_throughput", "evolved_population", "reference_evaluator", "timing_batch",
           "to_sklearn_tree"]


def evolved_population(X: np.ndarray, y: np.ndarray, generations: int = 30, seed: int = 0, **gdt_params: Any):
    """The population after ``generations`` GDT generations on ``(X, y)``: realistic trees for timing.

    Returns
    -------
    list of Individual
    """
    from dtlab.evolution import CpuEvaluator, GDTClassifier
    from dtlab.evolution.algorithm import initial_state, next_generation

    params = GDTClassifier(random_state=seed, **gdt_params)._validated_params()
    classes, y_enc = np.unique(y, return_inverse=True)
    y_enc = y_enc.astype(np.int32)  # labels as 0..k-1, as fit does
    X = np.ascontiguousarray(X, dtype=np.float32)
    evaluator = CpuEvaluator(X, y_enc, len(classes))
    state = initial_state(X, y_enc, len(classes), evaluator, params, np.random.default_rng(seed))
    ctx = operator_context(state.rng, X, evaluator, params)
    for _ in range(generations):
        next_generation(state, evaluator, params, ctx)
    evaluator.close()
    return state.population.individuals()


def operator_context(rng: np.random.Generator, X: np.ndarray, evaluator, params):
    """The :class:`~dtlab.evolution.operators.OperatorContext` GDTClassifier builds for a run on ``X``."""
    from dtlab.evolution.operators import OperatorContext

    return OperatorContext(rng=rng, fetch_rows=evaluator.rows, feature_span=np.ptp(X, axis=0).astype(np.float64),
                           n_samples=X.shape[0], variant_p=params.variant_p, max_depth=params.max_depth,
                           ranking_pressure=params.ranking_pressure, X=X)


def timing_batch(n_samples: int, noise_attrs: int = 0, seed: int = 0, generations: int = 30):
    """Chess3x3 rows and the population of a GDT run on them after ``generations`` generations, packed.

    Returns
    -------
    X : ndarray (n_samples, 2 + noise_attrs), float32
    y : ndarray (n_samples,), int32
    batch : PackedForest of the ``population_size`` (default 50) evolved trees
    population : list of Individual, the same trees
    """
    from dtlab.evolution.individual import pack

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    m = min(n_samples, 20_000)
    population = evolved_population(X[:m], y[:m], generations=generations, seed=seed)
    return X, y, pack(population), population


def to_sklearn_tree(ind, n_features: int, n_classes: int):
    """A scikit-learn ``Tree`` with exactly the structure and tests of an individual (for timing ``apply``)."""
    from sklearn.tree._tree import Tree

    n = ind.n_nodes
    nodes = np.zeros(n, dtype=[("left_child", "<i8"), ("right_child", "<i8"), ("feature", "<i8"),
                               ("threshold", "<f8"), ("impurity", "<f8"), ("n_node_samples", "<i8"),
                               ("weighted_n_node_samples", "<f8"), ("missing_go_to_left", "u1")])
    leaf = ind.left == -1
    nodes["left_child"] = ind.left
    nodes["right_child"] = ind.right
    nodes["feature"] = np.where(leaf, -2, ind.feature)
    nodes["threshold"] = np.where(leaf, -2.0, ind.threshold)
    total = np.maximum(ind.counts.sum(axis=1), 1)
    nodes["n_node_samples"] = total
    nodes["weighted_n_node_samples"] = total
    values = (ind.counts / total[:, None]).reshape(n, 1, n_classes).astype(np.float64)
    tree = Tree(n_features, np.array([n_classes], dtype=np.intp), 1)
    tree.__setstate__({"max_depth": int(ind.depths().max()), "node_count": n, "nodes": nodes, "values": values})
    return tree


def reference_evaluator(X: np.ndarray, y: np.ndarray, n_classes: int):
    """The plain NumPy reference evaluator (GDTClassifier's slow reference; the one place that names it)."""
    from dtlab.evolution import NumpyEvaluator

    return NumpyEvaluator(X, y, n_classes)


#: Why the reference's side of a whole-machine comparison runs on one thread.
NUMPY_NOTE = ("the NumPy reference evaluator has no multi-core mode: one tree at a time, "
              "NumPy's element-wise operations on one thread")


def evaluator_throughput(n_samples: int = 100_000, noise_attrs: int = 0, population_generations: int = 30,
                         repeats: int = 5, numpy_repeats: int = 2, seed: int = 0):
    """Tree-rows per second of fitness evaluation: batched numba CPU, NumPy reference, scikit-learn ``apply``.

    The trees are a real GDT population on Chess3x3 after
    ``population_generations`` generations (``population_size`` trees as the
    evolutionary loop evaluates them).  What is timed, on the same trees and
    rows, in two settings (``mode``): ``per_core``, one thread on each side,
    and ``whole_machine``, every core on each side where the method can use them:

    * ``dtlab-cpu``: :class:`~dtlab.evolution.CpuEvaluator` on the whole batch
      with 1 or all numba threads (find every row's leaf in every tree, with
      leaf bitmasks for trees of at most 64 leaves and a walk for larger ones;
      count classes per leaf, draw two objects per leaf and class, merge blocks);
    * ``numpy``: the NumPy reference evaluator, one tree at a time, one thread
      in both settings (it has no multi-core mode; timed once);
    * ``sklearn-apply``: scikit-learn ``Tree.apply`` of sklearn trees built with
      exactly the same nodes (:func:`to_sklearn_tree`), on float32 C-contiguous
      input so no conversion is timed; one thread per core, and for the whole
      machine over row blocks in a thread pool of all cores (its Cython
      releases the GIL).  ``apply`` only finds leaves (no counts, no draws),
      so the comparison favours scikit-learn per unit of work.

    Timings are medians of ``repeats`` runs after a warm-up (numba compilation
    excluded); dtlab and scikit-learn alternate.  Tree-rows = trees x rows.

    Returns
    -------
    table : DataFrame
        One row per (method, mode): ``method, mode, threads, seconds,
        tree_rows_per_s``, plus ``n_trees, n_samples, mean_nodes`` and
        ``bitmask_trees`` (how many trees the cpu evaluator ran with bitmasks).
    comparisons : list of dict
        :func:`~workbench.timing.comparison` entries of dtlab-cpu
        against each peer in each mode.
    """
    import pandas as pd

    from dtlab.evolution import CpuEvaluator
    from dtlab.evolution.individual import pack
    from dtlab.trees.bitmask import MAX_MASK_LEAVES

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    population = evolved_population(X[: min(n_samples, 20_000)], y[: min(n_samples, 20_000)],
                                    generations=population_generations, seed=seed)
    batch = pack(population)
    cpu = CpuEvaluator(X, y, 2)
    sk_trees = [to_sklearn_tree(ind, X.shape[1], 2) for ind in population]

    def sklearn_apply(rows):
        for tree in sk_trees:
            tree.apply(rows)

    timings = {}  # (method, mode) -> (seconds, threads)
    for mode in MODES:
        n = threads_for(mode)
        with numba_threads(n), in_row_chunks(sklearn_apply, X, n) as sk_run:
            t_cpu, t_sk = paired_medians([lambda: cpu.evaluate(batch, seed), sk_run], repeats=repeats)
        timings["dtlab-cpu", mode], timings["sklearn-apply", mode] = (t_cpu, n), (t_sk, n)
    ref = reference_evaluator(X, y, 2)
    t_numpy = median_seconds(lambda: ref.evaluate(batch, seed), repeats=numpy_repeats)
    for mode in MODES:
        timings["numpy", mode] = (t_numpy, 1)
    cpu.close()
    facts = dict(n_trees=batch.n_trees, n_samples=n_samples)
    comparisons = []
    for mode in MODES:
        t_cpu, n = timings["dtlab-cpu", mode]
        comparisons.append(comparison("NumPy reference evaluator", mode, t_cpu, t_numpy, n, 1,
                                      peer_note=NUMPY_NOTE if n > 1 else None, **facts))
        comparisons.append(comparison("scikit-learn Tree.apply", mode, t_cpu, timings["sklearn-apply", mode][0],
                                      n, timings["sklearn-apply", mode][1], **facts))
    work = batch.n_trees * n_samples
    table = pd.DataFrame([{"method": m, "mode": mode, "threads": t, "seconds": s, "tree_rows_per_s": work / s,
                           **facts, "mean_nodes": batch.n_nodes / batch.n_trees,
                           "bitmask_trees": sum(ind.n_leaves <= MAX_MASK_LEAVES for ind in population)}
                          for (m, mode), (s, t) in timings.items()])
    return table, comparisons
