"""GDT on Chess3x3: convergence runs (the paper's Fig. 11 and 12), live curves, and what counts as the ideal tree.

Analogues of Jurczuk, Czajkowski, Kretowski (Applied Intelligence 2021):
best fitness and best tree size per generation for several numbers of objects
and noise attributes (:func:`chess_runs`, and :func:`live_convergence` whose
curves grow while the run goes), and the summaries the quality benchmark
reports.  Every function returns pandas DataFrames.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from dtlab.datasets import chess3x3

__all__ = ["IDEAL_LEAVES", "IDEAL_NODES", "IDEAL_TRAIN_ACCURACY", "chess_runs", "chess_summary", "ideal_table",
           "is_ideal_chess_tree", "live_convergence", "reached_ideal"]

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

    Interrupting the kernel stops the whole sweep, not just the run it lands in
    (GDT keeps that run's best tree): the tables hold the runs so far, the last
    with ``stop_reason`` ``"interrupted"``.

    Returns
    -------
    runs : DataFrame, one row per run
        ``n_samples, noise_attrs, seed, n_nodes, n_leaves, ideal, train_accuracy,
        test_accuracy, generations, first_ideal_generation`` (first generation
        whose best tree is ideal by :func:`reached_ideal`; -1 if never), ``seconds_to_ideal``
        (GDT's elapsed time then), ``fit_seconds`` (whole ``fit``, including
        compilation on a cold cache), ``threads`` (numba's), ``stop_reason``.
    history : DataFrame
        The runs' ``history_`` rows with ``n_samples, noise_attrs, seed`` columns.
    """
    import numba
    import pandas as pd

    from dtlab.evolution import GDTClassifier

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
                             "fit_seconds": fit_seconds, "threads": numba.get_num_threads(),
                             "stop_reason": clf.stop_reason_})
                histories.append(h.assign(n_samples=n, noise_attrs=noise, seed=seed))
                if clf.stop_reason_ == "interrupted":  # GDT swallowed the Ctrl-C; the sweep must not go on
                    return pd.DataFrame(runs), pd.concat(histories, ignore_index=True)
    return pd.DataFrame(runs), pd.concat(histories, ignore_index=True)


def live_convergence(n_samples: Sequence[int] = (10_000,), noise_attrs: Sequence[int] = (0,),
                     seeds: Sequence[int] = (0, 1, 2, 3, 4), on_update: Callable[[Any], Any] | None = None,
                     every: int = 25, **gdt_params: Any):
    """Convergence runs whose history is handed to ``on_update`` while they go (Fig. 11 / 12, live).

    Parameters
    ----------
    n_samples, noise_attrs, seeds : sequences of int
        The grid, as in :func:`chess_runs` (the paper averages 5 seeds or more).
    on_update : callable, optional
        ``on_update(history)`` with the history so far (a DataFrame with the
        columns of :func:`chess_runs`' history) every ``every`` generations and
        at the end of each run -- e.g. a live figure
        (:func:`workbench.widgets.live_figure`).
    **gdt_params
        Passed to GDTClassifier (e.g. ``max_generations``).

    Returns
    -------
    DataFrame : the whole history.

    Raises
    ------
    KeyboardInterrupt
        When the kernel is interrupted, after ``on_update`` has been handed the
        history so far: the sweep stops, and a panel (:func:`workbench.widgets.run_panel`)
        reports the interruption instead of a finished run.
    """
    import pandas as pd

    from dtlab.evolution import GDTClassifier

    records: list[dict] = []

    def show() -> None:
        if on_update is not None and records:
            on_update(pd.DataFrame(records))

    for n in n_samples:
        for noise in noise_attrs:
            for seed in seeds:
                X, y = chess3x3(n, noise, seed=seed)

                def callback(generation: int, record: dict, n=n, noise=noise, seed=seed) -> bool:
                    records.append({**record, "n_samples": n, "noise_attrs": noise, "seed": seed})
                    if generation % every == 0:
                        show()
                    return False

                clf = GDTClassifier(**{"random_state": seed, **gdt_params, "callback": callback}).fit(X, y)
                first = clf.history_.iloc[0].to_dict()  # generation 0 is recorded before any callback
                records.insert(len(records) - clf.n_generations_, {**first, "n_samples": n, "noise_attrs": noise,
                                                                    "seed": seed})
                show()
                if clf.stop_reason_ == "interrupted":  # GDT kept its best tree and returned; pass the Ctrl-C on
                    raise KeyboardInterrupt(f"GDT interrupted after {clf.n_generations_} generations")
    return pd.DataFrame(records)


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


# ------------------------------------------------------------- summaries
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


def ideal_table(runs, max_generations: int | None = None):
    """When the ideal tree first appeared, per number of objects (rows) and of noise attributes (columns), as text.

    ``first_ideal_generation`` is -1 for a run that never reached the ideal
    tree, so it must not be averaged: each cell reads "generation 57" (one
    run), "generations 40-90, median 57 (3 of 3 runs)", "generation 57 (1 of 2
    runs; 1 never within 300)" or "never within 300 (0 of 2 runs)".

    Parameters
    ----------
    runs : DataFrame from :func:`chess_runs`
    max_generations : the runs' generation limit, for the "never within" wording (omitted when None)
    """
    within = f" within {max_generations:,}" if max_generations is not None else ""

    def cell(part) -> str:
        hit = part[part >= 0]
        n, k = len(part), len(hit)
        if k == 0:
            return f"never{within}" + (f" (0 of {n} runs)" if n > 1 else "")
        if k == 1:
            text = f"generation {int(hit.iloc[0])}"
        else:
            text = f"generations {int(hit.min())}-{int(hit.max())}, median {hit.median():g}"
        if k < n:
            return f"{text} ({k} of {n} runs; {n - k} never{within})"
        return text + (f" ({k} of {n} runs)" if n > 1 else "")

    table = runs.groupby(["n_samples", "noise_attrs"]).first_ideal_generation.apply(cell).unstack("noise_attrs")
    table.index = [f"{n:,} objects" for n in table.index]
    table.columns = [f"{k} noise attribute" + ("" if k == 1 else "s") for k in table.columns]
    return table
