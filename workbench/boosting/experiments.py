"""Experiments with gradient boosting: time per tree against the boosting libraries, worker scaling.

The swGBDT paper timed its exact GBDT against XGBoost and LightGBM per tree
(its Fig. 7/8) and scaled it over core groups (Fig. 9).  Here the same runs,
depth 6 and 40 trees, on synthetic data like the issue's (28 features, AUC
about 0.99) and on the HIGGS subset: dtlab's exact and histogram searches
against XGBoost ``exact`` and ``hist``, LightGBM and scikit-learn's
HistGradientBoosting, each per core (one thread on both sides) and for the
whole machine (all cores on both sides).  Every timing alternates the
contenders so they see the same load of a shared machine; medians are kept.

Threads on a busy 2-core machine: numba's OpenMP layer (libgomp) lets an idle
worker spin before it sleeps, and between the parallel kernels of a level the
spinning worker competes with the main thread: on a loaded machine the
histogram search on two threads can take several times as long per tree as
on one, unless ``GOMP_SPINCOUNT=0`` (or ``OMP_WAIT_POLICY=passive``, or
numba's ``workqueue`` layer) is in the environment.  Whole-machine numbers
taken without such a setting measure that contention as much as the method;
the measured ones are in ``figures/results.json``.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable

import numpy as np

from dtlab.boosting.datasets import as_csc_without_missing, holdout_split, synthetic
from dtlab.boosting.estimators import GBDTClassifier
from workbench.boosting import plots
from workbench.boosting.bench import GOAL, GOALS
from workbench.registry import RunContext, register_benchmark, register_figure
from workbench.timing import (
    MIN_RUNS,
    MODES,
    comparison,
    load_average,
    machine_threads,
    numba_threads,
    paired_times,
    threads_for,
)

#: The issue's timings on a 2-core machine, 500,000 x 28 synthetic rows, depth 6, 40 trees, 2 threads each (s).
ISSUE_REFERENCE_SECONDS = {"XGBoost exact": 60.6, "XGBoost approx": 26.8, "XGBoost hist": 2.8, "LightGBM": 2.6,
                           "scikit-learn HGB": 3.0}
#: Rows of the synthetic benchmark by scale (the issue's size is the paper scale).
SYNTHETIC_ROWS = {"small": 20_000, "paper": 500_000}
CONTENDERS = ("dtlab exact", "dtlab hist", "XGBoost exact", "XGBoost hist", "LightGBM", "scikit-learn HGB")
#: The histogram contenders, whose test AUC the benchmark also averages over seeded splits (dtlab exact and
#: XGBoost exact grow the same trees: one split decides theirs).
HIST_CONTENDERS = ("dtlab hist", "LightGBM", "XGBoost hist", "scikit-learn HGB")
#: The GPU benchmark (``boosting_gpu``, measured where a real GPU is): dtlab on the GPU against dtlab on every
#: core and against XGBoost's GPU histogram method (XGBoost has no exact method on the GPU), when installed.
GPU_SUFFIX = " (GPU)"
GPU_CONTENDERS = ("dtlab exact" + GPU_SUFFIX, "dtlab hist" + GPU_SUFFIX, "dtlab exact", "dtlab hist",
                  "XGBoost hist" + GPU_SUFFIX)
#: Rows of the GPU run by scale: the issue's size at the default scale.
GPU_ROWS = {"small": 500_000, "paper": 2_000_000}


def contender(name: str, n_trees: int, max_depth: int, n_threads: int) -> Callable[[Any, Any], Any]:
    """``fit(X, y) -> model with predict_proba`` for one contender at ``n_threads`` (host) threads.

    A name ending in :data:`GPU_SUFFIX` runs on the GPU: dtlab with ``backend="cuda"``, XGBoost with
    ``device="cuda"``.
    """
    common = dict(n_estimators=n_trees, max_depth=max_depth, learning_rate=0.3)
    on_gpu = name.endswith(GPU_SUFFIX)
    base = name.removesuffix(GPU_SUFFIX)
    if base in ("dtlab exact", "dtlab hist"):
        method, backend = base.split()[1], "cuda" if on_gpu else "cpu"

        def fit(X, y):
            with numba_threads(n_threads):
                return GBDTClassifier(**common, split_method=method, n_jobs=n_threads, backend=backend).fit(X, y)
        return fit
    if base == "XGBoost hist" or (base == "XGBoost exact" and not on_gpu):
        import xgboost as xgb

        device = {"device": "cuda"} if on_gpu else {}
        # dtlab, LightGBM (boost_from_average) and HGB start from the training rows' positive share; XGBoost
        # is given the same, so exact against exact compares the same model (XGBoost 3 would fit its own)
        return lambda X, y: xgb.XGBClassifier(**common, tree_method=base.split()[1], n_jobs=n_threads,
                                              base_score=float(np.mean(y)), max_bin=256, **device).fit(X, y)
    if name == "LightGBM":
        import lightgbm as lgb

        # depth-6 trees have at most 64 leaves; LightGBM grows leaf-wise to num_leaves
        return lambda X, y: lgb.LGBMClassifier(**common, num_leaves=2 ** max_depth, n_jobs=n_threads,
                                               min_child_samples=1, min_child_weight=1.0, reg_lambda=1.0,
                                               max_bin=255, verbose=-1).fit(X, y)
    if name == "scikit-learn HGB":
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits

        def fit(X, y):
            with threadpool_limits(limits=n_threads, user_api="openmp"):
                return HistGradientBoostingClassifier(max_iter=n_trees, max_depth=max_depth, learning_rate=0.3,
                                                      max_leaf_nodes=None, min_samples_leaf=1, l2_regularization=1.0,
                                                      early_stopping=False).fit(X, y)
        return fit
    raise ValueError(f"unknown contender {name!r}; choose from {CONTENDERS + GPU_CONTENDERS}")


def mean_auc_over_splits(X: np.ndarray, y: np.ndarray, names: tuple[str, ...], n_splits: int,
                         take: int | None = None, n_trees: int = 40, max_depth: int = 6) -> dict[str, float]:
    """Each contender's test AUC averaged over ``n_splits`` seeded shuffled 75/25 splits of ``take`` rows of
    ``(X, y)`` (seeds 0, 1, ...; all rows for None), one thread each: the accuracy the goals compare, which one
    split cannot decide.

    Returns
    -------
    dict: contender name -> mean AUC
    """
    from sklearn.metrics import roc_auc_score

    fits = [contender(n, n_trees, max_depth, 1) for n in names]
    aucs = []
    for seed in range(n_splits):
        rows = np.random.default_rng(seed).permutation(X.shape[0])[:take]
        Xtr, ytr, Xte, yte = holdout_split(X[rows], y[rows])
        aucs.append([roc_auc_score(yte, fit(Xtr, ytr).predict_proba(Xte)[:, 1]) for fit in fits])
    return {n: float(v) for n, v in zip(names, np.mean(aucs, axis=0))}


def time_per_tree(X, y, X_test, y_test, *, n_trees: int = 40, max_depth: int = 6, modes=MODES,
                  contenders=CONTENDERS, repeats: int = MIN_RUNS, warmup_rows: int = 70_000,
                  models: dict | None = None) -> list[dict[str, Any]]:
    """Median seconds per tree of every contender per mode, timed in alternation; test AUC of each.

    Each contender is first fitted once on the first ``warmup_rows`` rows, untimed: compilation and
    first-call costs stay out of the timing (enough rows that dtlab's parallel kernels are compiled too),
    without a full-size warm-up fit (XGBoost exact takes minutes on 500,000 rows).  ``models``, where
    given, receives each contender's last fitted model per mode (``{(contender, mode): model}``).

    Returns
    -------
    list of dict: ``contender, mode, threads, seconds`` (whole fit, median), ``times`` (every run, in the
    order the contenders alternated), ``seconds_per_tree``, ``auc``
    """
    from sklearn.metrics import roc_auc_score

    rows = []
    for mode in modes:
        n_threads = threads_for(mode)
        fits = [contender(c, n_trees, max_depth, n_threads) for c in contenders]
        fitted: dict[str, Any] = {}

        def timed(c, fit, fitted=fitted):
            return lambda: fitted.__setitem__(c, fit(X, y))

        for fit in fits:
            fit(X[:warmup_rows], y[:warmup_rows])
        times = paired_times([timed(c, f) for c, f in zip(contenders, fits)], repeats=repeats, warmup=0)
        for c, t in zip(contenders, times):
            seconds = float(np.median(t))
            auc = float(roc_auc_score(y_test, fitted[c].predict_proba(X_test)[:, 1]))
            rows.append(dict(contender=c, mode=mode, threads=n_threads, seconds=seconds, times=list(t),
                             seconds_per_tree=seconds / n_trees, auc=auc))
            if models is not None:
                models[(c, mode)] = fitted[c]
    return rows


#: The CPU benchmark's comparisons: (dtlab contender, peer contender).
PAIRS = (("dtlab exact", "XGBoost exact"), ("dtlab hist", "LightGBM"), ("dtlab hist", "XGBoost hist"),
         ("dtlab hist", "scikit-learn HGB"))


def comparisons_of(rows: list[dict[str, Any]], pairs=PAIRS, modes=MODES, **extra: Any) -> list[dict[str, Any]]:
    """Comparison entries of the ``pairs`` present in ``rows`` (from :func:`time_per_tree`), per mode: by
    default dtlab exact against XGBoost exact, dtlab hist against the histogram libraries.  Rows of at least
    :data:`~workbench.timing.MIN_RUNS` runs give the spread of the ratio over the rounds."""
    out = []
    for mode in modes:
        at = {r["contender"]: r for r in rows if r["mode"] == mode}
        for ours, peer in pairs:
            if ours in at and peer in at:
                a, b = at[ours], at[peer]
                runs = ({"dtlab_times": a["times"], "peer_times": b["times"]}
                        if len(a.get("times", ())) >= MIN_RUNS else {})
                out.append(comparison(f"{peer} fit ({ours.removeprefix('dtlab ')} vs {peer})", mode,
                                      a["seconds"], b["seconds"], a["threads"], b["threads"], dtlab=ours,
                                      peer_name=peer, auc_dtlab=a["auc"], auc_peer=b["auc"], **runs, **extra))
    return out


def worker_scaling(X, y, *, workers=(1, 2), n_trees: int = 10, max_depth: int = 6, repeats: int = 3):
    """Seconds per tree of dtlab's exact and hist searches with 1..k feature-parallel workers (threads).

    Returns
    -------
    list of dict: ``split_method, workers, seconds_per_tree, speedup`` (over one worker)
    """
    rows = []
    for method in ("exact", "hist"):
        fits = []
        for w in workers:
            def fit(w=w, method=method):
                with numba_threads(w):
                    GBDTClassifier(n_estimators=n_trees, max_depth=max_depth, split_method=method, n_jobs=w,
                                   backend="cpu").fit(X, y)
            fits.append(fit)
        times = [float(np.median(t)) for t in paired_times(fits, repeats=repeats, warmup=1)]
        for w, t in zip(workers, times):
            rows.append(dict(split_method=method, workers=int(w), seconds_per_tree=t / n_trees,
                             speedup=times[0] / t))
    return rows


def exact_vs_hist(rows: int, features: int, missing: float, workers: int, *, sparse: bool = False,
                  n_trees: int = 10, max_depth: int = 6, seed: int = 0) -> dict[str, Any]:
    """Milliseconds per tree of the exact and histogram searches on synthetic data, for the notebook's widgets.

    ``missing`` is the share of entries left out: NaN in a dense array, or (``sparse=True``) entries absent
    from a scipy CSC matrix, which the fit reads without densifying.  One fit each, compiled beforehand.
    """
    X, y = synthetic(rows, features, missing=missing, seed=seed)
    if sparse:
        X = as_csc_without_missing(X)
    out: dict[str, Any] = {"rows": rows, "features": features, "missing": missing, "workers": workers,
                           "input": "CSC sparse" if sparse else "dense (NaN)"}
    for method in ("exact", "hist"):
        fit = contender(f"dtlab {method}", n_trees, max_depth, workers)
        fit(X[:200], y[:200])  # compilation stays out of the timing
        start = time.perf_counter()
        fit(X, y)
        out[f"{method} ms/tree"] = (time.perf_counter() - start) / n_trees * 1e3
    return out


@register_benchmark("boosting_vs_peers", technique="boosting",
                    description="GBDT exact and hist against XGBoost (exact, hist), LightGBM and scikit-learn "
                                "HGB: time per tree, depth 6, 40 trees, on the synthetic rows, the HIGGS subset and "
                                "a held-out make_classification set, per core and whole machine, from the same base "
                                "score",
                    captions=plots.peer_captions, goal=GOAL)
def _peers_benchmark(ctx: RunContext) -> dict:
    from dtlab.datasets import load_higgs
    from workbench.boosting.bench import (
        AUC_TOLERANCE,
        HELDOUT,
        HELDOUT_ROWS,
        MEAN_AUC_SPLITS,
        exact_agreement,
        goals_of,
        heldout,
        selected,
    )

    n_trees, max_depth = 40, 6
    makers = {"synthetic": lambda: synthetic(int(ctx.pick(SYNTHETIC_ROWS["small"], SYNTHETIC_ROWS["paper"]) / 0.75),
                                             seed=ctx.seed),
              "higgs": lambda: (lambda d: (d.X.astype(np.float32), d.y))(load_higgs()),
              "heldout": lambda: heldout(ctx.pick(HELDOUT_ROWS["small"], HELDOUT_ROWS["paper"]))}
    contenders = selected("DTLAB_BOOSTING_CONTENDERS", CONTENDERS)
    modes = selected("DTLAB_MODES", MODES)
    out: dict[str, Any] = {"load_average_before": load_average(), "n_trees": n_trees, "max_depth": max_depth,
                           "learning_rate": 0.3, "issue_reference_seconds": ISSUE_REFERENCE_SECONDS,
                           "heldout_settings": HELDOUT, "contenders": list(contenders), "modes": list(modes),
                           "goal_limits": {f"{a} / {b}": v for (a, b), v in GOALS.items()},
                           "auc_tolerance": AUC_TOLERANCE}
    frames, comps, agreement, mean_auc = {}, [], {}, {}
    for name in selected("DTLAB_BOOSTING_SETS", tuple(makers)):
        X, y = makers[name]()
        Xtr, ytr, Xte, yte = holdout_split(X, y)
        start = time.perf_counter()
        models: dict = {}
        rows = time_per_tree(Xtr, ytr, Xte, yte, n_trees=n_trees, max_depth=max_depth, modes=modes,
                             contenders=contenders, repeats=MIN_RUNS, models=models)
        frames[name] = rows
        comps += comparisons_of(rows, modes=modes, dataset=name, n_samples=int(Xtr.shape[0]),
                                n_features=int(X.shape[1]))
        agreement[name] = exact_agreement(models, Xtr)
        n_splits, take = MEAN_AUC_SPLITS[name]
        hist_names = tuple(c for c in contenders if c in HIST_CONTENDERS)
        if "dtlab hist" in hist_names:
            mean_auc[name] = mean_auc_over_splits(X, y, hist_names, n_splits, take, n_trees, max_depth)
            for c in comps:
                if c["dataset"] == name and c["peer_name"] in mean_auc[name] and c["dtlab"] == "dtlab hist":
                    c.update(auc_dtlab_mean=mean_auc[name]["dtlab hist"], auc_peer_mean=mean_auc[name][c["peer_name"]])
        out[f"{name}_seconds"] = time.perf_counter() - start
    out.update(timings=frames, comparisons=comps, exact_agreement=agreement, mean_auc_over_splits=mean_auc,
               mean_auc_splits={k: list(v) for k, v in MEAN_AUC_SPLITS.items()}, load_average_after=load_average())
    for c in comps:
        key = f"{c['dataset']}_{c['dtlab'].split()[1]}_vs_{c['peer_name'].replace(' ', '_')}_{c['mode']}"
        out[f"speedup_{key}"] = c["speedup"]
    out["goals"] = goals_of(comps, GOALS)
    ctx.savefig(plots.plot_time_per_tree(frames), "boosting_time_per_tree")
    return out


@register_figure("boosting_worker_scaling", technique="boosting",
                 description="Feature-parallel scaling of the exact and histogram searches with worker threads "
                             "(the paper's Fig. 9 analogue)",
                 captions=plots.scaling_captions)
def _scaling_figure(ctx: RunContext) -> dict:
    X, y = synthetic(ctx.pick(40_000, 500_000), seed=ctx.seed)
    workers = tuple(range(1, machine_threads() + 1))
    rows = worker_scaling(X, y, workers=workers, repeats=ctx.pick(3, 5))
    ctx.savefig(plots.plot_worker_scaling(rows), "boosting_worker_scaling")
    return {"rows": rows, "n_samples": int(X.shape[0]), "load_average": load_average()}


def sort_timing(sizes=(10_000, 100_000, 1_000_000), workers=(1, 2), repeats: int = 5, seed: int = 0,
                device_sort: tuple[str, Callable[[np.ndarray], Callable[[], Any]]] | None = None):
    """The sort step alone: the radix sort (per worker count), the packed-key numpy sort and
    ``np.argsort(kind="stable")`` on float32 normal values, medians timed in alternation.

    ``device_sort`` adds a GPU sort as ``(name, prepare)``: ``prepare(x)`` puts the keys on the device
    (untimed) and returns the call to time, which sorts there and waits for the device
    (:func:`cupy_argsort`).

    Returns
    -------
    list of dict: ``sort, workers, n, seconds`` (``workers`` 0 for the device sort)
    """
    from dtlab.splits import numpy_argsort, radix_argsort

    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        x = rng.normal(size=n).astype(np.float32)
        fns = [lambda w=w, x=x: radix_argsort(x, w) for w in workers]
        fns += [lambda x=x: numpy_argsort(x), lambda x=x: np.argsort(x, kind="stable")]
        names = [("radix", w) for w in workers] + [("numpy packed keys", 1), ("numpy argsort stable", 1)]
        if device_sort is not None:
            fns.append(device_sort[1](x))
            names.append((device_sort[0], 0))
        times = paired_times(fns, repeats=repeats, warmup=1)
        for (name, w), t in zip(names, times):
            rows.append(dict(sort=name, workers=int(w), n=int(n), seconds=float(np.median(t))))
    return rows


def cupy_argsort() -> tuple[str, Callable[[np.ndarray], Callable[[], Any]]]:
    """``sort_timing``'s ``device_sort`` for ``cupy.argsort`` (stable, as the presort needs): keys copied to
    the GPU beforehand, the timed call sorts and synchronises."""
    import cupy

    def prepare(x: np.ndarray) -> Callable[[], Any]:
        on_device = cupy.asarray(x)

        def sort() -> None:
            cupy.argsort(on_device)
            cupy.cuda.get_current_stream().synchronize()
        return sort
    return "cupy argsort (GPU)", prepare


@register_figure("boosting_sort", technique="boosting",
                 description="The sort step alone: radix sort (segments in parallel, pairwise merges) against "
                             "numpy's sorts, against the number of keys",
                 captions=plots.sort_captions)
def _sort_figure(ctx: RunContext) -> dict:
    rows = sort_timing(sizes=ctx.pick((10_000, 100_000, 1_000_000), (10_000, 100_000, 1_000_000, 10_000_000)),
                       workers=tuple(range(1, machine_threads() + 1)), repeats=ctx.pick(5, 9))
    ctx.savefig(plots.plot_sort_timing(rows), "boosting_sort")
    from dtlab.splits import DEFAULT_SORT

    return {"rows": rows, "library_sort": DEFAULT_SORT, "load_average": load_average()}


@register_figure("boosting_intensity", technique="boosting",
                 description="Arithmetic intensity of the exact search: the paper's roofline estimate (Eq. 4-6) "
                             "next to dtlab's counted bytes and flops and the memory speed they reach",
                 captions=plots.intensity_captions)
def _intensity_figure(ctx: RunContext) -> dict:
    from workbench.boosting.intensity import intensity_of_fit

    X, y = synthetic(ctx.pick(40_000, 500_000), seed=ctx.seed)
    result = intensity_of_fit(X, y, n_trees=ctx.pick(5, 20))
    ctx.savefig(plots.plot_intensity(result), "boosting_intensity")
    return {**result, "load_average": load_average()}


#: The GPU run's comparisons: (dtlab contender, peer contender).
GPU_PAIRS = (("dtlab exact" + GPU_SUFFIX, "dtlab exact"), ("dtlab hist" + GPU_SUFFIX, "dtlab hist"),
             ("dtlab hist" + GPU_SUFFIX, "XGBoost hist" + GPU_SUFFIX))


def gpu_contenders() -> tuple[str, ...]:
    """:data:`GPU_CONTENDERS` less XGBoost where it is not installed (the GPU machine may lack it)."""
    import importlib.util

    has_xgboost = importlib.util.find_spec("xgboost") is not None
    return tuple(c for c in GPU_CONTENDERS if has_xgboost or not c.startswith("XGBoost"))


def gpu_comparisons(rows: list[dict[str, Any]], device: str, **extra: Any) -> list[dict[str, Any]]:
    """:func:`comparisons_of` for :data:`GPU_PAIRS` in mode ``whole_machine``: the CPU side runs on every
    core, the GPU side's host on as many threads."""
    return comparisons_of(rows, GPU_PAIRS, ("whole_machine",), device=device, **extra)


#: What the GPU benchmark measures, stated while its numbers are pending.
GPU_TARGET = ("time per tree (depth 6, 40 trees, 500,000 x 28 synthetic rows) of dtlab exact and hist on the GPU "
              "against dtlab on every core and XGBoost hist with device='cuda'; the sort step with cupy.argsort")


@register_benchmark("boosting_gpu", technique="boosting",
                    description="GBDT exact and hist on a real GPU against dtlab on every core and XGBoost "
                                "device='cuda' (when installed), and cupy.argsort against the CPU sorts; pending "
                                "without a GPU", captions=plots.gpu_captions)
def _gpu_benchmark(ctx: RunContext) -> dict:
    from dtlab.backend import cuda_status, real_gpu_available, resolve_backend

    if not real_gpu_available():
        why = cuda_status()[1] or "only numba's CUDA simulator is enabled"
        return {"status": "pending", "reason": f"no real GPU on the machine that ran this ({why}); run "
                                               "`make gpu-check` on a GPU machine", "target": GPU_TARGET}
    device = resolve_backend("cuda").devices()[0].name
    X, y = synthetic(int(ctx.pick(GPU_ROWS["small"], GPU_ROWS["paper"]) / 0.75), seed=ctx.seed)
    Xtr, ytr, Xte, yte = holdout_split(X, y)
    contenders = gpu_contenders()
    start = time.perf_counter()
    rows = time_per_tree(Xtr, ytr, Xte, yte, modes=("whole_machine",), contenders=contenders, repeats=3)
    comps = gpu_comparisons(rows, device, dataset="synthetic", n_samples=int(Xtr.shape[0]),
                            n_features=int(X.shape[1]))
    seconds = time.perf_counter() - start
    sorts = sort_timing(sizes=ctx.pick((10 ** 5, 10 ** 6, 10 ** 7), (10 ** 5, 10 ** 6, 10 ** 7, 10 ** 8)),
                        workers=(machine_threads(),), repeats=5, seed=ctx.seed, device_sort=cupy_argsort())
    ctx.savefig(plots.plot_time_per_tree({f"synthetic, {device}": rows}), "boosting_gpu_time_per_tree")
    ctx.savefig(plots.plot_sort_timing(sorts), "boosting_gpu_sort")
    return {"status": "measured", "device": device, "n_trees": 40, "max_depth": 6, "contenders": list(contenders),
            "xgboost_installed": any(c.startswith("XGBoost") for c in contenders), "timings": {"synthetic": rows},
            "comparisons": comps, "synthetic_seconds": seconds, "sort_rows": sorts,
            **{"speedup_" + _slug(f"{c['dtlab']} vs {c['peer_name']}"): c["speedup"] for c in comps}}


def _slug(text: str) -> str:
    """``"dtlab hist (GPU) vs XGBoost"`` -> ``"dtlab_hist_gpu_vs_xgboost"``: a results.json key."""
    return re.sub(r"\W+", "_", text).strip("_").lower()
