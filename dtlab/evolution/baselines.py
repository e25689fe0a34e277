"""Table 4, honestly: GDT against the baselines a user would actually run, on the same splits, several seeds.

The paper's Table 4 compares GDT with a greedy top-down inducer.  Against an
unpruned greedy tree any small tree looks good, and GDT's defaults
(:mod:`dtlab.evolution.defaults`) were chosen while looking at Chess3x3, HIGGS
and diabetes.  So here every baseline gets its strongest usual form, tuned by
cross-validation on the training rows only, and one dataset (a9a, UCI Adult)
played no part in choosing GDT's defaults:

* ``CART (unpruned)``: scikit-learn's tree with default settings (the former comparison);
* ``CART + CCP (CV)``: minimal cost-complexity pruning, ``ccp_alpha`` chosen by
  cross-validation among the quantiles of ``cost_complexity_pruning_path``;
* ``CART depth/leaf (CV)``: ``max_depth`` and ``min_samples_leaf`` chosen by cross-validation;
* ``C4.5-style (dtlab)``: :class:`dtlab.greedy.DecisionTreeClassifier` with gain
  ratio and pessimistic pruning (the paper's baseline family);
* ``STreeD depth 3`` / ``depth 4``: optimal trees of bounded depth (the
  ``pystreed`` package, when installed), fitted in a child process with a time
  limit; a fit stopped by the limit is recorded as not proven optimal.

GDT runs with its defaults: only the stopping rules change with the scale.
Experiment code: the estimator never imports it.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from ..datasets import chess3x3, load_a9a, load_diabetes_prediction, load_higgs, train_test_split

__all__ = ["ALL_METHODS", "HELD_OUT", "baseline_comparison", "baseline_summary", "cart_comparison", "cart_summary",
           "load_split"]

#: Datasets that played no part in choosing GDT's defaults.
HELD_OUT = ("a9a",)

ALL_METHODS = ("GDT", "CART (unpruned)", "CART + CCP (CV)", "CART depth/leaf (CV)", "C4.5-style (dtlab)",
               "STreeD depth 3", "STreeD depth 4")

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


def _streed_fit(X_train, y_train, X_test, depth: int, time_limit: float) -> dict:
    """Fit STreeD in this (child) process; class codes 0..k-1 (its solver crashes on -1/+1 float labels)."""
    from pystreed import STreeDClassifier

    classes, codes = np.unique(y_train, return_inverse=True)
    start = time.perf_counter()
    model = STreeDClassifier(max_depth=depth, time_limit=time_limit, random_seed=0).fit(X_train, codes)
    seconds = time.perf_counter() - start
    leaves = int(model.get_n_leaves())
    return {"n_leaves": leaves, "n_nodes": 2 * leaves - 1, "fit_seconds": seconds,
            "proven_optimal": bool(model.fit_result.is_optimal()),
            "train_pred": classes[model.predict(X_train)], "test_pred": classes[model.predict(X_test)]}


def _sklearn_models(seed: int, X, y, cv: int, n_alphas: int) -> dict[str, Any]:
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.tree import DecisionTreeClassifier

    folds = StratifiedKFold(cv, shuffle=True, random_state=seed)
    alphas = DecisionTreeClassifier(random_state=seed).cost_complexity_pruning_path(X, y).ccp_alphas[:-1]
    candidates = np.unique(np.quantile(alphas, np.linspace(0, 1, n_alphas))) if alphas.size else [0.0]
    return {"CART (unpruned)": DecisionTreeClassifier(random_state=seed),
            "CART + CCP (CV)": GridSearchCV(DecisionTreeClassifier(random_state=seed), {"ccp_alpha": candidates},
                                            cv=folds),
            "CART depth/leaf (CV)": GridSearchCV(DecisionTreeClassifier(random_state=seed), DEPTH_GRID, cv=folds)}


def _size(model, method: str) -> tuple[int, int, dict]:
    best = getattr(model, "best_estimator_", None)
    if best is not None:
        chosen = {k: float(v) if isinstance(v, np.floating) else v for k, v in model.best_params_.items()}
        return int(best.tree_.node_count), int(best.get_n_leaves()), chosen
    if method.startswith("CART"):
        return int(model.tree_.node_count), int(model.get_n_leaves()), {}
    return int(model.tree_.n_nodes), int(model.tree_.n_leaves), {}


def baseline_comparison(datasets: Sequence[str] = ("chess3x3", "higgs", "diabetes", "a9a"),
                        seeds: Sequence[int] = (0,), n_samples: int | None = None,
                        methods: Sequence[str] = ALL_METHODS, cv: int = 3, n_alphas: int = 20,
                        streed_time_limit: float = 60.0, **gdt_params: Any):
    """Every method on the same splits of every dataset for every seed.

    Parameters
    ----------
    datasets : names for :func:`load_split`
    seeds : split, tuning and generator seeds
    n_samples : rows kept of each dataset (None: all)
    methods : subset of :data:`ALL_METHODS`
    cv : folds of the cross-validation on the training rows
    n_alphas : candidate ``ccp_alpha`` values (quantiles of the pruning path)
    streed_time_limit : seconds per STreeD fit
    **gdt_params : GDTClassifier stopping rules and backend (its defaults otherwise)

    Returns
    -------
    table : DataFrame, one row per (dataset, seed, method): ``n_nodes, n_leaves, train_accuracy,
        test_accuracy, fit_seconds, n_train, threads, params`` (what CV chose), ``proven_optimal``
        (STreeD), ``held_out``.
    skipped : dict ``{method: reason}`` for methods that could not run here (e.g. pystreed missing).
    """
    import numba
    import pandas as pd

    from ..greedy import DecisionTreeClassifier as GreedyTree
    from . import GDTClassifier

    unknown = set(methods) - set(ALL_METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose among {ALL_METHODS}")
    skipped: dict[str, str] = {}
    streed = [m for m in methods if m.startswith("STreeD")]
    if streed:
        try:
            import pystreed  # noqa: F401
        except Exception as exc:  # ImportError, or a broken optional dependency (scikit-survival)
            for m in streed:
                skipped[m] = f"pystreed is not installed here ({type(exc).__name__}); pip install 'dtlab[peers]'"
            streed = []
    rows = []
    pool = _child_pool() if streed else None
    try:
        for name in datasets:
            for seed in seeds:
                X_train, X_test, y_train, y_test = load_split(name, n_samples, seed)
                models: dict[str, Any] = {}
                if "GDT" in methods:
                    models["GDT"] = GDTClassifier(**{"random_state": seed, **gdt_params})
                models.update({k: v for k, v in _sklearn_models(seed, X_train, y_train, cv, n_alphas).items()
                               if k in methods})
                if "C4.5-style (dtlab)" in methods:
                    models["C4.5-style (dtlab)"] = GreedyTree(criterion="gain_ratio", pruning="pessimistic",
                                                              backend="cpu")
                base = {"dataset": name, "seed": seed, "n_train": int(X_train.shape[0]), "held_out": name in HELD_OUT}
                for method, model in models.items():
                    start = time.perf_counter()
                    model.fit(X_train, y_train)
                    seconds = time.perf_counter() - start
                    n_nodes, n_leaves, chosen = _size(model, method)
                    rows.append({**base, "method": method, "n_nodes": n_nodes, "n_leaves": n_leaves,
                                 "train_accuracy": float(model.score(X_train, y_train)),
                                 "test_accuracy": float(model.score(X_test, y_test)), "fit_seconds": seconds,
                                 "threads": numba.get_num_threads() if method == "GDT" else 1,
                                 "params": repr(chosen) if chosen else "", "proven_optimal": None})
                for method in streed:
                    pool, fit = _run_in_child(pool, _streed_fit, X_train, y_train, X_test, int(method[-1]),
                                              streed_time_limit)
                    if isinstance(fit, str):
                        skipped[method] = fit
                        continue
                    rows.append({**base, "method": method, "n_nodes": fit["n_nodes"], "n_leaves": fit["n_leaves"],
                                 "train_accuracy": float(np.mean(fit["train_pred"] == y_train)),
                                 "test_accuracy": float(np.mean(fit["test_pred"] == y_test)),
                                 "fit_seconds": fit["fit_seconds"], "threads": 1,
                                 "params": f"time limit {streed_time_limit:g} s, 5 quantile thresholds per "
                                           "feature (pystreed's default binarisation)",
                                 "proven_optimal": fit["proven_optimal"]})
    finally:
        if pool is not None:
            pool.shutdown()
    return pd.DataFrame(rows), skipped


def _child_pool():
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    return ProcessPoolExecutor(1, mp_context=get_context("spawn"))


def _run_in_child(pool, fn, *args):
    """``fn(*args)`` in the child process; a crash becomes a reason string and a fresh pool."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return pool, pool.submit(fn, *args).result()
    except BrokenProcessPool:
        pool.shutdown()
        return _child_pool(), "the solver's process crashed"


def baseline_summary(table):
    """Mean over seeds per (dataset, method), and who is on the accuracy-size Pareto front of each dataset.

    Returns
    -------
    DataFrame with ``dataset, method, seeds, n_nodes, n_leaves, test_accuracy, test_accuracy_std,
    fit_seconds, held_out, pareto``.
    """
    import pandas as pd

    from .device_plots import pareto_front

    grouped = table.groupby(["dataset", "method"], sort=False)
    summary = grouped.agg(seeds=("seed", "nunique"), n_nodes=("n_nodes", "mean"), n_leaves=("n_leaves", "mean"),
                          test_accuracy=("test_accuracy", "mean"), test_accuracy_std=("test_accuracy", "std"),
                          fit_seconds=("fit_seconds", "mean"), held_out=("held_out", "first")).reset_index()
    summary["test_accuracy_std"] = summary.test_accuracy_std.fillna(0.0)
    summary["pareto"] = False
    for name in dict.fromkeys(summary.dataset):
        idx = summary.index[summary.dataset == name]
        points = list(zip(summary.loc[idx, "n_nodes"], summary.loc[idx, "test_accuracy"]))
        summary.loc[idx[pareto_front(points)], "pareto"] = True
    return pd.DataFrame(summary)


def cart_comparison(datasets: Sequence[str] = ("chess3x3", "higgs", "diabetes"), seeds: Sequence[int] = (0,),
                    n_samples: int | None = None, **gdt_params: Any):
    """GDT against scikit-learn's unpruned CART on the same splits (the former Table 4 analogue).

    :func:`baseline_comparison` with two methods; ``method`` is ``"GDT"`` or
    ``"CART"``.  Kept for the convergence notebook; prefer the full comparison.
    """
    table, _ = baseline_comparison(datasets, seeds, n_samples, methods=("GDT", "CART (unpruned)"), **gdt_params)
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
