"""Table 4, honestly: GDT against the tuned and optimal trees a user would run, on the same splits, several seeds.

The paper's Table 4 compares GDT with a greedy top-down inducer.  Against an
unpruned greedy tree any small tree looks good, and GDT's defaults
(:mod:`dtlab.evolution.defaults`) were chosen while looking at Chess3x3, HIGGS
and diabetes.  So here every baseline gets its strongest usual form, tuned on
the training rows only, and one dataset (a9a, UCI Adult) played no part in
choosing GDT's defaults:

* ``GDT``: the defaults, the evolution's best tree;
* ``GDT front (CV)``: the same run's size-accuracy front, the size chosen by
  3-fold cross-validation on the training rows (``GDTClassifier(size_alpha="cv")``,
  :mod:`dtlab.evolution.front`), as ``ccp_alpha`` is chosen for CART;
* ``CART + CCP (CV)``: minimal cost-complexity pruning, ``ccp_alpha`` chosen by
  cross-validation among the quantiles of ``cost_complexity_pruning_path``;
* ``CART depth/leaf (CV)``: ``max_depth`` and ``min_samples_leaf`` chosen by cross-validation;
* ``C4.5-style (dtlab)``: :class:`dtlab.greedy.DecisionTreeClassifier` with gain
  ratio and pessimistic pruning (the paper's baseline family);
* ``STreeD depth 2-4`` and ``ConTree depth 2-4``: optimal trees of bounded depth
  (:mod:`.optimal_trees`), with a time limit.

``fit_seconds`` is the time to the chosen tree: the whole search (every CV
fold and candidate) included.  Experiment code: the estimator never imports it.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from dtlab.datasets import chess3x3, load_a9a, load_diabetes_prediction, load_higgs, train_test_split
from workbench.evolution.optimal_trees import OPTIMAL_METHODS, available, child_pool, fit_in_child

__all__ = ["ALL_METHODS", "HELD_OUT", "baseline_comparison", "baseline_summary", "cart_comparison", "cart_summary",
           "front_by_cv", "front_table", "load_split", "pareto_front"]

#: Datasets that played no part in choosing GDT's defaults.
HELD_OUT = ("a9a",)

ALL_METHODS = ("GDT", "GDT front (CV)", "CART + CCP (CV)", "CART depth/leaf (CV)", "C4.5-style (dtlab)",
               *OPTIMAL_METHODS, "CART (unpruned)")

#: The depth / leaf-size grid of the tuned CART.
DEPTH_GRID = {"max_depth": [2, 3, 4, 6, 8, 10, 12, None], "min_samples_leaf": [1, 5, 20, 50, 100]}


def load_split(name: str, n_samples: int | None, seed: int):
    """``(X_train, X_test, y_train, y_test)`` of a named dataset: float32 features, 25% test rows.

    ``"chess3x3"`` / ``"chess3x3+<k>"`` (k noise attributes; fresh test rows
    from another seed), ``"higgs"``, ``"diabetes"``, ``"a9a"`` (the LIBSVM
    training file, densified).  ``n_samples`` keeps a random sample of the rows
    (Chess3x3: that many training rows).
    """
    if name.startswith("chess3x3"):
        noise = int(name.split("+")[1]) if "+" in name else 0
        n = n_samples or 10_000
        X, y = chess3x3(n, noise, seed=seed)
        X_test, y_test = chess3x3(max(n // 3, 1000), noise, seed=10_000 + seed)
        return X, X_test, y, y_test
    loaders = {"higgs": load_higgs, "diabetes": lambda: load_diabetes_prediction(target="diabetes"), "a9a": load_a9a}
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; use 'chess3x3', 'chess3x3+<noise>', "
                         f"{', '.join(map(repr, loaders))}")
    data = loaders[name]()
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
    X, y = X.astype(np.float32), np.asarray(data.y)
    if n_samples is not None and n_samples < X.shape[0]:
        keep = np.sort(np.random.default_rng(seed).choice(X.shape[0], n_samples, replace=False))
        X, y = X[keep], y[keep]
    return train_test_split(X, y, test_fraction=0.25, seed=seed)


def _models(methods: Sequence[str], seed: int, X, y, cv: int, n_alphas: int, gdt_params: dict) -> dict[str, Any]:
    """The estimators of ``methods`` that run in this process, each as a user would tune it on ``(X, y)``."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.tree import DecisionTreeClassifier

    from dtlab.evolution import GDTClassifier
    from dtlab.greedy import DecisionTreeClassifier as GreedyTree

    folds = StratifiedKFold(cv, shuffle=True, random_state=seed)
    made: dict[str, Any] = {}
    if "GDT" in methods:
        made["GDT"] = GDTClassifier(**{"random_state": seed, **gdt_params})
    if "GDT front (CV)" in methods:
        made["GDT front (CV)"] = GDTClassifier(**{"random_state": seed, **gdt_params, "size_alpha": "cv",
                                                  "size_cv": cv})
    if "CART + CCP (CV)" in methods:
        # the candidates come from the training rows, as a user's cost_complexity_pruning_path does
        path = DecisionTreeClassifier(random_state=seed).cost_complexity_pruning_path(X, y).ccp_alphas[:-1]
        candidates = np.unique(np.quantile(path, np.linspace(0, 1, n_alphas))) if path.size else [0.0]
        made["CART + CCP (CV)"] = GridSearchCV(DecisionTreeClassifier(random_state=seed), {"ccp_alpha": candidates},
                                               cv=folds)
    if "CART depth/leaf (CV)" in methods:
        made["CART depth/leaf (CV)"] = GridSearchCV(DecisionTreeClassifier(random_state=seed), DEPTH_GRID, cv=folds)
    if "C4.5-style (dtlab)" in methods:
        made["C4.5-style (dtlab)"] = GreedyTree(criterion="gain_ratio", pruning="pessimistic", backend="cpu")
    if "CART (unpruned)" in methods:
        made["CART (unpruned)"] = DecisionTreeClassifier(random_state=seed)
    return made


def _size(model) -> tuple[int, int, str]:
    """Nodes, leaves and what the search chose."""
    best = getattr(model, "best_estimator_", None)
    if best is not None:
        chosen = {k: float(v) if isinstance(v, np.floating) else v for k, v in model.best_params_.items()}
        return int(best.tree_.node_count), int(best.get_n_leaves()), repr(chosen)
    if hasattr(model, "size_alpha_"):  # GDT
        chosen = "" if model.size_alpha_ is None else f"size_alpha {model.size_alpha_:.3g} (CV)"
        return int(model.tree_.n_nodes), int(model.tree_.n_leaves), chosen
    if hasattr(model.tree_, "node_count"):  # scikit-learn
        return int(model.tree_.node_count), int(model.get_n_leaves()), ""
    return int(model.tree_.n_nodes), int(model.tree_.n_leaves), ""


def front_by_cv(gdt, gdt_seconds: float, X: np.ndarray, y: np.ndarray, cv: int, seed: int) -> tuple[Any, float]:
    """``GDTClassifier(size_alpha="cv", size_cv=cv)``'s fitted model, made from the fitted defaults' run ``gdt``.

    A ``size_alpha="cv"`` fit evolves on all of ``X`` exactly as the defaults do (the same parameters and
    seed give the same run), then evolves once per fold and picks the front's tree for the best weight
    (:func:`dtlab.evolution.front.cv_size_alpha`).  So only the folds run here, and the time reported is what
    the user's one call costs: ``gdt_seconds`` plus the folds'.  Test: it equals the estimator's own fit.

    Returns
    -------
    (a copy of ``gdt`` with ``tree_``, ``size_alpha_`` and ``cv_results_`` of the CV choice, seconds)
    """
    import copy

    from dtlab.evolution.front import choose_tree, cv_size_alpha

    start = time.perf_counter()
    alpha, results = cv_size_alpha(gdt, X, y, cv, gdt.random_state)
    model = copy.copy(gdt)
    model.set_params(size_alpha="cv", size_cv=cv)
    model.tree_, model.size_alpha_, model.cv_results_ = choose_tree(gdt.front_, alpha), alpha, results
    return model, gdt_seconds + time.perf_counter() - start


def front_table(model, X_train, y_train, X_test, y_test, base: dict) -> list[dict]:
    """Every tree of a fitted GDTClassifier's front: nodes, training and test accuracy (the curve of a run)."""
    rows = []
    for tree in model.front_:
        rows.append({**base, "n_nodes": tree.n_nodes, "n_leaves": tree.n_leaves,
                     "train_accuracy": float(np.mean(tree.predict(X_train, backend="cpu") == y_train)),
                     "test_accuracy": float(np.mean(tree.predict(X_test, backend="cpu") == y_test))})
    return rows


def baseline_comparison(datasets: Sequence[str] = ("chess3x3", "higgs", "diabetes", "a9a"),
                        seeds: Sequence[int] = (0,), n_samples: int | None = None,
                        methods: Sequence[str] = ALL_METHODS, cv: int = 3, n_alphas: int = 20,
                        optimal_time_limit: float = 60.0, **gdt_params: Any):
    """Every method on the same splits of every dataset for every seed.

    Parameters
    ----------
    datasets : names for :func:`load_split`
    seeds : split, tuning and generator seeds
    n_samples : rows kept of each dataset (None: all)
    methods : subset of :data:`ALL_METHODS`
    cv : folds of every cross-validation on the training rows (CART's grids, GDT's size)
    n_alphas : candidate ``ccp_alpha`` values (quantiles of the pruning path)
    optimal_time_limit : seconds per STreeD / ConTree fit
    **gdt_params : GDTClassifier stopping rules and backend (its defaults otherwise)

    Returns
    -------
    table : DataFrame, one row per (dataset, seed, method): ``n_nodes, n_leaves, train_accuracy,
        test_accuracy, fit_seconds, n_train, threads, params`` (what the search chose), ``proven_optimal``
        (STreeD, ConTree), ``held_out``.
    skipped : dict ``{method: reason}`` for methods that could not run here (a solver not installed).
    fronts : DataFrame of the GDT runs' fronts (:func:`front_table`): ``dataset, seed, n_nodes, n_leaves,
        train_accuracy, test_accuracy``.
    """
    import numba
    import pandas as pd

    unknown = set(methods) - set(ALL_METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose among {ALL_METHODS}")
    skipped: dict[str, str] = {}
    optimal = []
    for m in (m for m in methods if m in OPTIMAL_METHODS):
        why = available(OPTIMAL_METHODS[m][0])
        if why:
            skipped[m] = why
        else:
            optimal.append(m)
    rows, fronts = [], []
    pool = child_pool() if optimal else None
    try:
        for name in datasets:
            for seed in seeds:
                X_train, X_test, y_train, y_test = load_split(name, n_samples, seed)
                base = {"dataset": name, "seed": seed, "n_train": int(X_train.shape[0]), "held_out": name in HELD_OUT}
                fitted: dict[str, tuple[Any, float]] = {}
                for method, model in _models(methods, seed, X_train, y_train, cv, n_alphas, gdt_params).items():
                    if method == "GDT front (CV)" and "GDT" in fitted:
                        model, seconds = front_by_cv(*fitted["GDT"], X_train, y_train, cv, seed)
                    else:
                        start = time.perf_counter()
                        model.fit(X_train, y_train)
                        seconds = time.perf_counter() - start
                    fitted[method] = model, seconds
                    n_nodes, n_leaves, chosen = _size(model)
                    rows.append({**base, "method": method, "n_nodes": n_nodes, "n_leaves": n_leaves,
                                 "train_accuracy": float(model.score(X_train, y_train)),
                                 "test_accuracy": float(model.score(X_test, y_test)), "fit_seconds": seconds,
                                 "threads": numba.get_num_threads() if method.startswith("GDT") else 1,
                                 "params": chosen, "proven_optimal": None})
                    if method == "GDT":
                        fronts += front_table(model, X_train, y_train, X_test, y_test, base)
                for method in optimal:
                    pool, fit = fit_in_child(pool, method, X_train, y_train, X_test, optimal_time_limit)
                    if isinstance(fit, str):
                        skipped[method] = fit
                        continue
                    rows.append({**base, "method": method, "n_nodes": fit["n_nodes"], "n_leaves": fit["n_leaves"],
                                 "train_accuracy": float(np.mean(fit["train_pred"] == y_train)),
                                 "test_accuracy": float(np.mean(fit["test_pred"] == y_test)),
                                 "fit_seconds": fit["fit_seconds"], "threads": 1, "params": fit["params"],
                                 "proven_optimal": fit["proven_optimal"]})
    finally:
        if pool is not None:
            pool.shutdown()
    return pd.DataFrame(rows), skipped, pd.DataFrame(fronts)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both size (smaller) and accuracy (larger), by size."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -np.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def baseline_summary(table):
    """Median over seeds per (dataset, method), who is on the accuracy-size front, and each GDT row's gap to it.

    Returns
    -------
    DataFrame with ``dataset, method, seeds, n_nodes, n_leaves, test_accuracy`` (medians),
    ``test_accuracy_min`` / ``test_accuracy_max`` (the spread over seeds), ``fit_seconds`` (median),
    ``held_out``, ``pareto`` and, for GDT rows, ``gap_points`` / ``gap_nodes``: how far the front's
    best point of at most the same size is ahead (accuracy points) and how many nodes the front's
    smallest point of at least the same accuracy saves (0 and 0 on the front).
    """
    import pandas as pd

    grouped = table.groupby(["dataset", "method"], sort=False)
    summary = grouped.agg(seeds=("seed", "nunique"), n_nodes=("n_nodes", "median"), n_leaves=("n_leaves", "median"),
                          test_accuracy=("test_accuracy", "median"), test_accuracy_min=("test_accuracy", "min"),
                          test_accuracy_max=("test_accuracy", "max"), fit_seconds=("fit_seconds", "median"),
                          held_out=("held_out", "first")).reset_index()
    summary["pareto"] = False
    summary["gap_points"] = np.nan
    summary["gap_nodes"] = np.nan
    for name in dict.fromkeys(summary.dataset):
        idx = summary.index[summary.dataset == name]
        points = list(zip(summary.loc[idx, "n_nodes"], summary.loc[idx, "test_accuracy"]))
        summary.loc[idx[pareto_front(points)], "pareto"] = True
        for i in idx[summary.loc[idx, "method"].str.startswith("GDT")]:
            others = summary.loc[idx[~summary.loc[idx, "method"].str.startswith("GDT")]]  # the baselines
            nodes, acc = summary.loc[i, "n_nodes"], summary.loc[i, "test_accuracy"]
            smaller = others[others.n_nodes <= nodes]
            better = others[others.test_accuracy >= acc]
            summary.loc[i, "gap_points"] = max(0.0, 100 * (smaller.test_accuracy.max() - acc)) if len(smaller) else 0.0
            summary.loc[i, "gap_nodes"] = max(0.0, nodes - better.n_nodes.min()) if len(better) else 0.0
    return pd.DataFrame(summary)


def cart_comparison(datasets: Sequence[str] = ("chess3x3", "higgs", "diabetes"), seeds: Sequence[int] = (0,),
                    n_samples: int | None = None, **gdt_params: Any):
    """GDT against scikit-learn's unpruned CART on the same splits (what a greedy tree grows unchecked).

    :func:`baseline_comparison` with two methods; ``method`` is ``"GDT"`` or
    ``"CART"``.  The notebook's first look; the tuned comparison is :func:`baseline_comparison`.
    """
    table, _, _ = baseline_comparison(datasets, seeds, n_samples, methods=("GDT", "CART (unpruned)"), **gdt_params)
    table["method"] = table.method.replace({"CART (unpruned)": "CART"})
    return table


def cart_summary(table):
    """Per dataset: mean nodes and test accuracy of GDT and CART, the node ratio and the accuracy difference."""
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
