"""GDT experiments: convergence on Chess3x3, comparison with greedy CART, evaluator throughput.

Analogues of Jurczuk, Czajkowski, Kretowski (Applied Intelligence 2021):
Fig. 11 / 12 (best fitness and best tree size per generation for several
numbers of objects and noise attributes, :func:`chess_runs`), Table 4 (the
evolutionary inducer against a greedy top-down one, :func:`cart_comparison`)
and the fitness-evaluation speed that the paper's GPU work is about
(:func:`evaluator_throughput`).  Every function returns pandas DataFrames;
figure producers and benchmarks registered at the bottom call them.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from ..datasets import chess3x3, load_diabetes_prediction, load_higgs, train_test_split
from .registry import RunContext, register_benchmark, register_figure

#: Nodes and leaves of the ideal Chess3x3 tree.
IDEAL_NODES, IDEAL_LEAVES = 17, 9


def is_ideal_chess_tree(tree) -> bool:
    """Whether a tree has the ideal Chess3x3 structure: 17 nodes, 9 leaves, tests on attributes 0 and 1 only."""
    internal = tree.left != -1
    return (tree.n_nodes == IDEAL_NODES and tree.n_leaves == IDEAL_LEAVES
            and bool(np.isin(tree.feature[internal], [0, 1]).all()))


# ------------------------------------------------------------------ Chess3x3
def chess_runs(n_samples: Sequence[int] = (10_000,), noise_attrs: Sequence[int] = (0,), seeds: Sequence[int] = (0,),
               n_test: int = 100_000, stop_at_ideal: bool = False, progress: bool = False,
               **gdt_params: Any):
    """Fit :class:`~dtlab.evolution.GDTClassifier` on Chess3x3 for every (rows, noise attributes, seed).

    Parameters
    ----------
    n_samples, noise_attrs, seeds : sequences of int
        The grid.  Training data use seed ``s``, fresh test data seed ``10_000 + s``.
    n_test : int
        Rows of the test draw.
    stop_at_ideal : bool
        Stop a run at the first generation whose best tree has the ideal
        structure and at least 99.9% training accuracy (through ``callback``),
        to time "a run to the ideal tree"; otherwise the GDT stopping rules apply.
    progress : bool
        Show GDT's progress bar.
    **gdt_params
        Passed to GDTClassifier (e.g. ``max_generations``, ``backend``).

    Returns
    -------
    runs : DataFrame, one row per run
        ``n_samples, noise_attrs, seed, n_nodes, n_leaves, ideal, train_accuracy,
        test_accuracy, generations, first_ideal_generation`` (first generation
        whose best tree is ideal by :func:`reached_ideal`; -1 if never), ``seconds_to_ideal``
        (GDT's elapsed time then), ``fit_seconds`` (whole ``fit``, including
        compilation on a cold cache), ``stop_reason``.
    history : DataFrame
        The runs' ``history_`` rows with ``n_samples, noise_attrs, seed`` columns.
    """
    import pandas as pd

    from ..evolution import GDTClassifier

    runs, histories = [], []
    for n in n_samples:
        for noise in noise_attrs:
            X_test, y_test = chess3x3(n_test, noise, seed=None if n_test == 0 else 10_000 + int(seeds[0]))
            for seed in seeds:
                X, y = chess3x3(n, noise, seed=seed)
                params = dict(gdt_params)
                params.setdefault("random_state", seed)
                if stop_at_ideal:
                    params["callback"] = _stop_at_ideal
                clf = GDTClassifier(verbose=progress, **params)
                start = time.perf_counter()
                clf.fit(X, y)
                fit_seconds = time.perf_counter() - start
                h = clf.history_
                hit = h[reached_ideal(h)]
                runs.append({"n_samples": n, "noise_attrs": noise, "seed": seed, "n_nodes": clf.tree_.n_nodes,
                             "n_leaves": clf.tree_.n_leaves, "ideal": is_ideal_chess_tree(clf.tree_),
                             "train_accuracy": float(clf.score(X, y)),
                             "test_accuracy": float(clf.score(X_test, y_test)),
                             "generations": clf.n_generations_,
                             "first_ideal_generation": int(hit.generation.iloc[0]) if len(hit) else -1,
                             "seconds_to_ideal": float(hit.elapsed_s.iloc[0]) if len(hit) else float("nan"),
                             "fit_seconds": fit_seconds, "stop_reason": clf.stop_reason_})
                histories.append(h.assign(n_samples=n, noise_attrs=noise, seed=seed))
    return pd.DataFrame(runs), pd.concat(histories, ignore_index=True)


#: Training accuracy from which a 17-node, 9-leaf best tree counts as the ideal tree found.
IDEAL_TRAIN_ACCURACY = 0.999


def reached_ideal(record):
    """Whether a best tree is the ideal Chess3x3 tree: 17 nodes, 9 leaves, >= 99.9% training accuracy.

    ``record`` is a history record (dict; returns bool) or a history DataFrame
    (returns a boolean Series, one value per generation).
    """
    return ((record["best_size"] == IDEAL_NODES) & (record["best_leaves"] == IDEAL_LEAVES)
            & (record["best_accuracy"] >= IDEAL_TRAIN_ACCURACY))


def _stop_at_ideal(generation: int, record: dict) -> bool:
    return bool(reached_ideal(record))


# --------------------------------------------------------------- vs CART
def _load(name: str, n_samples: int | None, seed: int):
    """``(X_train, X_test, y_train, y_test)`` of a named dataset (25% test)."""
    if name.startswith("chess3x3"):
        # "chess3x3" or "chess3x3+10" (10 noise attributes); fresh test rows from another seed
        noise = int(name.split("+")[1]) if "+" in name else 0
        n = n_samples or 10_000
        X, y = chess3x3(n, noise, seed=seed)
        X_test, y_test = chess3x3(max(n // 3, 1000), noise, seed=10_000 + seed)
        return X, X_test, y, y_test
    if name == "higgs":
        data = load_higgs()
    elif name == "diabetes":
        data = load_diabetes_prediction(target="diabetes")
    else:
        raise ValueError(f"unknown dataset {name!r}; use 'chess3x3', 'chess3x3+<noise>', 'higgs' or 'diabetes'")
    X, y = data.X, data.y
    if n_samples is not None and n_samples < X.shape[0]:
        X, y = X[:n_samples], y[:n_samples]
    return train_test_split(X, y, test_fraction=0.25, seed=seed)


def cart_comparison(datasets: Sequence[str] = ("chess3x3", "higgs", "diabetes"), seeds: Sequence[int] = (0,),
                    n_samples: int | None = None, **gdt_params: Any):
    """GDT against scikit-learn's unpruned CART on the same splits (the paper's Table 4 analogue).

    Parameters
    ----------
    datasets : names among ``"chess3x3"``, ``"chess3x3+<k>"`` (k noise
        attributes), ``"higgs"`` (load_higgs) and ``"diabetes"``
        (load_diabetes_prediction, target "diabetes")
    seeds : split / generator seeds
    n_samples : int, optional
        Use only the first rows of a real dataset (rows of Chess3x3).
    **gdt_params
        Passed to GDTClassifier.

    Returns
    -------
    DataFrame with one row per (dataset, seed, method): ``n_nodes, n_leaves,
    train_accuracy, test_accuracy`` (fraction), ``fit_seconds``; ``method`` is
    ``"GDT"`` or ``"CART"`` (DecisionTreeClassifier with default, unpruned settings).
    """
    import pandas as pd
    from sklearn.tree import DecisionTreeClassifier

    from ..evolution import GDTClassifier

    rows = []
    for name in datasets:
        for seed in seeds:
            X_train, X_test, y_train, y_test = _load(name, n_samples, seed)
            params = dict(gdt_params)
            params.setdefault("random_state", seed)
            models = {"GDT": GDTClassifier(**params), "CART": DecisionTreeClassifier(random_state=seed)}
            for method, model in models.items():
                start = time.perf_counter()
                model.fit(X_train, y_train)
                seconds = time.perf_counter() - start
                tree = model.tree_
                n_nodes = tree.n_nodes if method == "GDT" else int(tree.node_count)
                n_leaves = tree.n_leaves if method == "GDT" else int(model.get_n_leaves())
                rows.append({"dataset": name, "seed": seed, "method": method, "n_nodes": n_nodes,
                             "n_leaves": n_leaves, "train_accuracy": float(model.score(X_train, y_train)),
                             "test_accuracy": float(model.score(X_test, y_test)), "fit_seconds": seconds,
                             "n_train": int(X_train.shape[0])})
    return pd.DataFrame(rows)


# ------------------------------------------------------------ throughput
def evolved_population(X: np.ndarray, y: np.ndarray, generations: int = 30, seed: int = 0, **gdt_params: Any):
    """The population after ``generations`` GDT generations on ``(X, y)``: realistic trees for timing.

    Returns
    -------
    list of Individual
    """
    from .._validation import encode_labels
    from ..evolution import CpuEvaluator, GDTClassifier
    from ..evolution.algorithm import initial_state, next_generation
    from ..evolution.operators import OperatorContext

    clf = GDTClassifier(random_state=seed, **gdt_params)
    params = clf._validated_params()
    classes, y_enc = encode_labels(y)
    X = np.ascontiguousarray(X, dtype=np.float32)
    evaluator = CpuEvaluator(X, y_enc, len(classes))
    rng = np.random.default_rng(seed)
    state = initial_state(X, y_enc, len(classes), evaluator, params, rng)
    ctx = OperatorContext(rng=rng, fetch_rows=evaluator.rows, feature_span=np.ptp(X, axis=0).astype(np.float64),
                          n_samples=X.shape[0], variant_p=params.variant_p, max_depth=params.max_depth,
                          ranking_pressure=params.ranking_pressure)
    for _ in range(generations):
        next_generation(state, evaluator, params, ctx)
    evaluator.close()
    return state.population


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


def evaluator_throughput(n_samples: int = 100_000, noise_attrs: int = 0, population_generations: int = 30,
                         repeats: int = 5, numpy_repeats: int = 2, seed: int = 0):
    """Tree-rows per second of fitness evaluation: batched numba CPU, NumPy reference, scikit-learn ``apply``.

    The trees are a real GDT population on Chess3x3 after
    ``population_generations`` generations (``population_size`` trees as the
    evolutionary loop evaluates them).  What is timed, on the same trees and rows:

    * ``cpu``: :class:`~dtlab.evolution.CpuEvaluator` on the whole batch, all
      numba threads (find every row's leaf in every tree, with leaf bitmasks
      for trees of at most 64 leaves and a walk for larger ones; count classes
      per leaf, draw two objects per leaf and class, merge blocks);
    * ``cpu-1thread``: the same with one numba thread, a per-core figure;
    * ``numpy``: :class:`~dtlab.evolution.NumpyEvaluator`, one tree at a time;
    * ``sklearn-apply``: scikit-learn ``Tree.apply`` of sklearn trees built with
      exactly the same nodes (:func:`to_sklearn_tree`), one call per tree, on
      float32 C-contiguous input so no conversion is timed.  ``apply`` only
      finds leaves (no counts, no draws) and runs on one thread, so the
      comparison favours scikit-learn per unit of work but not per core; the
      per-core ratio is reported too.

    Timings are medians of ``repeats`` runs after a warm-up (numba compilation
    excluded).  Tree-rows = number of trees x number of rows.

    Returns
    -------
    DataFrame with columns ``method, seconds, tree_rows_per_s, speedup_of_cpu``
    (cpu throughput / this method's), plus ``n_trees, n_samples, mean_nodes``
    and ``bitmask_trees`` (how many trees the cpu evaluator ran with bitmasks).
    """
    import numba
    import pandas as pd

    from ..evolution import CpuEvaluator, NumpyEvaluator
    from ..evolution.individual import pack
    from ..trees.bitmask import MAX_MASK_LEAVES
    from .timing import median_seconds

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    population = evolved_population(X[: min(n_samples, 20_000)], y[: min(n_samples, 20_000)],
                                    generations=population_generations, seed=seed)
    batch = pack(population)
    n_trees = batch.n_trees
    cpu = CpuEvaluator(X, y, 2)
    ref = NumpyEvaluator(X, y, 2)
    sk_trees = [to_sklearn_tree(ind, X.shape[1], 2) for ind in population]
    timings = {"cpu": median_seconds(lambda: cpu.evaluate(batch, seed), repeats=repeats)}
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        timings["cpu-1thread"] = median_seconds(lambda: cpu.evaluate(batch, seed), repeats=repeats)
    finally:
        numba.set_num_threads(threads)
    timings["numpy"] = median_seconds(lambda: ref.evaluate(batch, seed), repeats=numpy_repeats)

    def sklearn_apply():
        for tree in sk_trees:
            tree.apply(X)

    timings["sklearn-apply"] = median_seconds(sklearn_apply, repeats=repeats)
    cpu.close()
    work = n_trees * n_samples
    return pd.DataFrame([{"method": m, "seconds": s, "tree_rows_per_s": work / s,
                          "speedup_of_cpu": s / timings["cpu"], "n_trees": n_trees, "n_samples": n_samples,
                          "mean_nodes": batch.n_nodes / n_trees, "numba_threads": threads,
                          "bitmask_trees": sum(ind.n_leaves <= MAX_MASK_LEAVES for ind in population)}
                         for m, s in timings.items()])


# ------------------------------------------------------------- producers
def _gdt_backend(ctx: RunContext) -> str:
    """The run's backend when a GDT evaluator is registered for it, else ``"auto"`` (never an error)."""
    from ..evolution import EVALUATORS

    return ctx.backend if (ctx.backend, "batched") in EVALUATORS else "auto"


@register_figure("gdt_convergence", technique="gdt",
                 description="GDT best fitness and best tree size per generation on Chess3x3 "
                             "for several numbers of objects and noise attributes (paper Fig. 11 and 12)")
def _convergence_figures(ctx: RunContext) -> dict:
    from ..plotting_gdt import plot_convergence

    runs, history = chess_runs(n_samples=ctx.pick((2_000, 10_000), (10_000, 100_000)),
                               noise_attrs=ctx.pick((0, 2), (0, 2, 5, 10)), seeds=ctx.pick((0,), (0, 1, 2)),
                               n_test=ctx.pick(20_000, 100_000), max_generations=ctx.pick(600, 10_000),
                               max_stagnation=ctx.pick(600, 1_000), backend=_gdt_backend(ctx))
    ctx.savefig(plot_convergence(history, "best_fitness"), "gdt_convergence_fitness")
    ctx.savefig(plot_convergence(history, "best_size"), "gdt_convergence_size")
    return {"runs": runs.to_dict(orient="records")}


@register_figure("gdt_vs_cart", technique="gdt",
                 description="GDT against scikit-learn's greedy CART: tree size, test accuracy, fit time "
                             "(paper Table 4 analogue) and the evolved Chess3x3 tree")
def _comparison_figures(ctx: RunContext) -> dict:
    from ..evolution import GDTClassifier
    from ..plotting import draw_tree
    from ..plotting_gdt import plot_cart_comparison

    table = cart_comparison(datasets=("chess3x3", "higgs", "diabetes"), seeds=(ctx.seed,),
                            n_samples=ctx.pick(20_000, None), max_generations=ctx.pick(1_000, 10_000),
                            max_stagnation=ctx.pick(300, 1_000))
    ctx.savefig(plot_cart_comparison(table), "gdt_vs_cart")
    X, y = chess3x3(10_000, seed=ctx.seed)
    clf = GDTClassifier(max_generations=ctx.pick(2_000, 10_000), max_stagnation=ctx.pick(500, 1_000),
                        random_state=ctx.seed).fit(X, y)
    ctx.savefig(draw_tree(clf.tree_, title=f"GDT on Chess3x3 (10,000 rows): {clf.tree_.n_nodes} nodes, "
                                           f"{clf.tree_.n_leaves} leaves"), "gdt_chess_tree")
    return {"table": table.to_dict(orient="records"), "chess_tree_nodes": clf.tree_.n_nodes}


@register_benchmark("gdt_evaluator_throughput", technique="gdt",
                    description="GDT fitness evaluation: batched numba CPU evaluator vs NumPy reference vs "
                                "scikit-learn apply on the same trees (tree-rows per second)")
def _throughput_benchmark(ctx: RunContext) -> dict:
    from ..plotting_gdt import plot_throughput

    table = evaluator_throughput(n_samples=ctx.pick(100_000, 1_000_000), seed=ctx.seed)
    ctx.savefig(plot_throughput(table), "gdt_evaluator_throughput")
    by = table.set_index("method")
    return {"table": table.to_dict(orient="records"),
            "cpu_over_numpy": float(by.loc["numpy", "speedup_of_cpu"]),
            "cpu_over_sklearn_apply": float(by.loc["sklearn-apply", "speedup_of_cpu"]),
            "cpu_1thread_over_sklearn_apply": float(by.loc["sklearn-apply", "seconds"]
                                                    / by.loc["cpu-1thread", "seconds"])}


@register_benchmark("gdt_quality", technique="gdt",
                    description="GDT quality goals: ideal Chess3x3 trees (10^4, 10^5 rows, 0 and 10 noise "
                                "attributes), HIGGS and diabetes against CART, time of a 10^5-row run")
def _quality_benchmark(ctx: RunContext) -> dict:
    """The quality and speed goals, measured in one run (``paper`` scale: 5 seeds, 10^4 and 10^5 rows)."""
    seeds = ctx.pick((0, 1), (0, 1, 2, 3, 4))
    sizes = ctx.pick((10_000,), (10_000, 100_000))
    runs, _ = chess_runs(n_samples=sizes, noise_attrs=(0, 10), seeds=seeds, max_generations=20_000,
                         max_stagnation=ctx.pick(300, 1_000))
    timed, _ = chess_runs(n_samples=(100_000,), noise_attrs=(0,), seeds=(ctx.seed,), stop_at_ideal=True,
                          max_generations=10_000)
    table = cart_comparison(datasets=("higgs", "diabetes"), seeds=seeds[:ctx.pick(1, 3)],
                            max_generations=ctx.pick(1_000, 10_000), max_stagnation=ctx.pick(300, 1_000))
    return {"chess_runs": runs.to_dict(orient="records"),
            "chess_summary": chess_summary(runs).to_dict(orient="records"),
            "run_100k_to_ideal_seconds": float(timed.fit_seconds.iloc[0]),
            "run_100k_to_ideal_generations": int(timed.generations.iloc[0]),
            "real_data": cart_summary(table).to_dict(orient="records")}


def chess_summary(runs):
    """Per (rows, noise attributes): runs reaching the ideal tree, generations to it, test accuracy, fit time.

    Parameters
    ----------
    runs : DataFrame from :func:`chess_runs`

    Returns
    -------
    DataFrame with ``n_samples, noise_attrs, runs, ideal_runs, min_test_accuracy,
    first_ideal_generation_{min,median,max}, fit_seconds_{median,max}``.
    """
    import pandas as pd

    rows = []
    for (n, noise), part in runs.groupby(["n_samples", "noise_attrs"]):
        hit = part.first_ideal_generation[part.first_ideal_generation >= 0]
        rows.append({"n_samples": int(n), "noise_attrs": int(noise), "runs": len(part),
                     "ideal_runs": int((part.ideal & (part.test_accuracy >= 0.999)).sum()),
                     "min_test_accuracy": float(part.test_accuracy.min()),
                     "first_ideal_generation_min": int(hit.min()) if len(hit) else -1,
                     "first_ideal_generation_median": float(hit.median()) if len(hit) else float("nan"),
                     "first_ideal_generation_max": int(hit.max()) if len(hit) else -1,
                     "fit_seconds_median": float(part.fit_seconds.median()),
                     "fit_seconds_max": float(part.fit_seconds.max())})
    return pd.DataFrame(rows)


def cart_summary(table):
    """Per dataset: mean nodes and test accuracy of GDT and CART, the node ratio and the accuracy difference.

    Parameters
    ----------
    table : DataFrame from :func:`cart_comparison`
    """
    import pandas as pd

    mean = table.groupby(["dataset", "method"])[["n_nodes", "test_accuracy"]].mean()
    rows = []
    for name in dict.fromkeys(table.dataset):
        gdt, cart = mean.loc[(name, "GDT")], mean.loc[(name, "CART")]
        rows.append({"dataset": name, "seeds": int((table.dataset == name).sum() // 2),
                     "gdt_nodes": float(gdt.n_nodes), "cart_nodes": float(cart.n_nodes),
                     "node_ratio": float(cart.n_nodes / gdt.n_nodes),
                     "gdt_test_accuracy": float(gdt.test_accuracy), "cart_test_accuracy": float(cart.test_accuracy),
                     "accuracy_difference_points": float(100 * (gdt.test_accuracy - cart.test_accuracy))})
    return pd.DataFrame(rows)
