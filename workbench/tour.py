"""The tour of the foundation (slug ``tour``): Chess3x3, a scikit-learn tree as a FlatTree, its traversal."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dtlab.backend import cuda_status, resolve_backend
from dtlab.datasets import chess3x3
from dtlab.trees import FlatTree
from workbench.registry import RunContext, register_benchmark, register_figure
from workbench.text import MODE_WORDS, by_mode, comparison_phrase
from workbench.timing import (
    MODES,
    comparison,
    in_row_chunks,
    median_seconds,
    numba_threads,
    paired_medians,
    ratio_keys,
    threads_for,
)


def tour_tree(n_samples: int = 10_000, noise_attrs: int = 0, max_depth: int | None = 4, seed: int = 0,
              backends: tuple[str, ...] = ("cpu", "cuda")) -> dict[str, Any]:
    """Fit a scikit-learn tree on Chess3x3, import it as a FlatTree, predict with each backend.

    Parameters
    ----------
    n_samples, noise_attrs : int
        Size of the Chess3x3 draw.
    max_depth : int or None
        Depth limit of the scikit-learn tree (None: grow until pure).
    backends : tuple of str
        Backends to predict with; an unavailable one is reported, not raised.

    Returns
    -------
    dict with ``X``, ``y``, ``sklearn_tree``, ``tree`` (FlatTree) and ``report``
    (per backend: whether leaves equal scikit-learn's ``apply`` and the seconds taken).
    """
    from sklearn.tree import DecisionTreeClassifier

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    sk = DecisionTreeClassifier(max_depth=max_depth, random_state=seed).fit(X, y)
    tree = FlatTree.from_sklearn(sk)
    expected = sk.apply(X)
    report: dict[str, Any] = {"n_samples": n_samples, "noise_attrs": noise_attrs, "n_nodes": tree.n_nodes,
                              "train_accuracy": float((tree.predict(X, backend="cpu") == y).mean())}
    for name in backends:
        available = name == "cpu" or cuda_status()[0]
        if not available:
            report[name] = {"available": False, "why": cuda_status()[1]}
            continue
        be = resolve_backend(name)
        # The simulator runs one Python thread per CUDA thread: keep its input tiny.
        rows = slice(0, 512) if be.simulated else slice(None)
        start = time.perf_counter()
        leaves = tree.apply(X[rows], backend=name)
        seconds = time.perf_counter() - start
        report[name] = {"available": True, "simulated": be.simulated, "rows": int(leaves.shape[0]),
                        "agrees_with_sklearn": bool(np.array_equal(leaves, expected[rows])), "seconds": seconds}
    return {"X": X, "y": y, "sklearn_tree": sk, "tree": tree, "report": report}


def flat_table(tree: FlatTree, max_nodes: int = 12):
    """The first ``max_nodes`` nodes of a FlatTree as its arrays: one row per node (struct of arrays, read across).

    Columns ``node, feature, threshold, left, right`` (``-1``: a leaf), ``class counts`` and ``depth``.
    """
    import pandas as pd

    n = min(tree.n_nodes, max_nodes)
    depth = tree.node_depths()
    return pd.DataFrame({"node": np.arange(n), "feature": tree.feature[:n],
                         "threshold": np.where(tree.left[:n] != -1, tree.threshold[:n].round(4), np.nan),
                         "left": tree.left[:n], "right": tree.right[:n],
                         "class counts": [" / ".join(f"{v:g}" for v in tree.value[i]) for i in range(n)],
                         "depth": depth[:n]}).set_index("node")


def walk_table(tree: FlatTree, x: np.ndarray):
    """One row's walk from the root to its leaf, step by step: the loop every backend compiles.

    Each step reads ``feature[node]`` and ``threshold[node]``, compares the row's value, and moves to
    ``left[node]`` or ``right[node]``; at a leaf (``left == -1``) the walk ends.  Returns a DataFrame with
    ``step, node, test, value, goes`` (``"left"``, ``"right"`` or ``"leaf: class c"``) and ``next``.
    """
    import pandas as pd

    x = np.asarray(x, float)
    node, rows = 0, []
    while True:
        f = int(tree.feature[node])
        if tree.left[node] == -1:
            rows.append({"node": node, "test": "leaf", "value": "",
                         "goes": f"leaf: class {int(np.argmax(tree.value[node]))}", "next": -1})
            break
        left = bool(x[f] <= tree.threshold[node])
        nxt = int(tree.left[node] if left else tree.right[node])
        rows.append({"node": node, "test": f"x{f} <= {tree.threshold[node]:.4g}", "value": f"{float(x[f]):.4g}",
                     "goes": "left" if left else "right", "next": nxt})
        node = nxt
    table = pd.DataFrame(rows)
    table.index = pd.RangeIndex(1, len(table) + 1, name="step")
    return table


def backend_table(report: dict[str, Any]):
    """``tour_tree``'s report as a table: per backend whether it ran, where, on how many rows, and whether every
    leaf equals scikit-learn's ``apply``."""
    import pandas as pd

    rows = []
    for name in ("cpu", "cuda"):
        r = report.get(name)
        if r is None:
            continue
        if not r["available"]:
            rows.append({"backend": name, "ran on": f"not available: {r['why']}", "rows checked": 0,
                         "same leaf as scikit-learn": None, "seconds": np.nan})
            continue
        where = "numba's CUDA simulator" if r.get("simulated") else ("GPU" if name == "cuda" else "CPU (numba)")
        rows.append({"backend": name, "ran on": where, "rows checked": r["rows"],
                     "same leaf as scikit-learn": r["agrees_with_sklearn"], "seconds": round(r["seconds"], 4)})
    return pd.DataFrame(rows).set_index("backend")


def cart_depth_curves(n_samples: int = 5_000, noise_attrs: int = 0, max_depth: int = 8, n_test: int = 20_000,
                      seed: int = 0):
    """Greedy CART on Chess3x3 at every depth limit ``1..max_depth``: nodes, training and test accuracy.

    One scikit-learn tree is grown to ``max_depth``; its top ``d`` levels are the tree CART grows with
    ``max_depth=d`` (a greedy split at a node does not depend on how deep the tree may grow, up to ties
    between equally good tests), so one fit gives every depth.  ``noise_attr_tests`` counts the tests on
    noise attributes (any attribute beyond the first two).

    Returns
    -------
    DataFrame with ``depth, n_nodes, train_accuracy, test_accuracy, noise_attr_tests, n_samples, noise_attrs``.
    """
    import pandas as pd
    from sklearn.tree import DecisionTreeClassifier

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    X_test, y_test = chess3x3(n_test, noise_attrs, seed=10_000 + seed)
    sk = DecisionTreeClassifier(max_depth=max_depth, random_state=seed).fit(X, y)
    t = sk.tree_
    depth = np.zeros(t.node_count, int)
    for node in range(t.node_count):  # children come after their parent in scikit-learn's arrays
        for child in (t.children_left[node], t.children_right[node]):
            if child != -1:
                depth[child] = depth[node] + 1
    majority = sk.classes_[np.argmax(t.value[:, 0, :], axis=1)]

    def accuracy(Xs, ys, d):
        path = sk.decision_path(Xs)  # root to leaf, node ids ascending along a path
        length = np.diff(path.indptr)
        node = path.indices[path.indptr[:-1] + np.minimum(d, length - 1)]
        return float((majority[node] == ys).mean())

    rows = []
    for d in range(1, max_depth + 1):
        inner = (depth < d) & (t.children_left != -1)
        rows.append({"depth": d, "n_nodes": int((depth <= d).sum()), "train_accuracy": accuracy(X, y, d),
                     "test_accuracy": accuracy(X_test, y_test, d),
                     "noise_attr_tests": int((t.feature[inner] >= 2).sum()),
                     "n_samples": n_samples, "noise_attrs": noise_attrs})
    return pd.DataFrame(rows)


def plot_cart_depth(table, ideal_nodes: int = 17, title: str | None = None):
    """``cart_depth_curves``' table: accuracy against the depth limit (left) and nodes against it (right).

    Measured values, filled markers; the ideal Chess3x3 tree (depth 4, ``ideal_nodes`` nodes, every object
    right) drawn for reference.
    """
    from dtlab.plotting import new_figure

    fig, (ax_acc, ax_size) = new_figure(1, 2, figsize=(10.0, 4.0))
    ax_acc.plot(table.depth, 100 * table.train_accuracy, "o-", color="C0", label="training rows")
    ax_acc.plot(table.depth, 100 * table.test_accuracy, "s-", color="C1", label="fresh test rows")
    ax_acc.scatter([4], [100], marker="*", s=120, color="k", zorder=3, label="the ideal tree (depth 4)")
    ax_acc.set(xlabel="depth limit", ylabel="accuracy (%)", title="accuracy against depth")
    ax_size.plot(table.depth, table.n_nodes, "o-", color="C2", label="CART's nodes")
    ax_size.scatter([4], [ideal_nodes], marker="*", s=120, color="k", zorder=3,
                    label=f"the ideal tree ({ideal_nodes} nodes)")
    noisy = table[table.noise_attr_tests > 0]
    if len(noisy):
        ax_size.plot(noisy.depth, noisy.n_nodes, "x", color="C3", ms=9, mew=2, ls="none",
                     label="tests on noise attributes present")
    ax_size.set(xlabel="depth limit", ylabel="tree size (nodes)", title="size against depth")
    ax_size.set_ylim(bottom=0)
    for ax in (ax_acc, ax_size):
        ax.set_xticks(table.depth)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7.5, loc="lower right" if ax is ax_acc else "upper left")
    n, k = int(table.n_samples.iloc[0]), int(table.noise_attrs.iloc[0])
    fig.suptitle(title or f"Greedy CART on Chess3x3: {n:,} rows, {k} noise attribute{'s' if k != 1 else ''}")
    return fig


def _tour_captions(results: dict[str, Any]) -> dict[str, str]:
    agree = [name for name in ("cpu", "cuda") if results.get(name, {}).get("agrees_with_sklearn")]
    return {
        "tour_chess3x3_board": ("The Chess3x3 board of the GDT paper: two uniform attributes, borders at 1/3 and 2/3, "
                                "five cells of one class and four of the other."),
        "tour_tree": (f"A scikit-learn CART tree ({results['n_nodes']} nodes, {results['n_samples']:,} rows) imported "
                      f"as a FlatTree and drawn; traversal on {' and '.join(agree) or 'no backend'} found the same "
                      f"leaf as scikit-learn's apply for every row checked."),
    }


def _traversal_captions(results: dict[str, Any]) -> dict[str, str]:
    modes = by_mode(results["comparisons"])
    return {"tour_traversal_throughput": (
        f"Leaf lookup in one tree of {results['n_nodes']:,} nodes (depth {results['max_depth']}) for "
        f"{results['n_rows']:,} rows: dtlab's numba traversal against scikit-learn's apply, "
        + ", ".join(comparison_phrase(modes[m]) for m in MODE_WORDS) + ".")}


@register_figure("tour", technique="tour",
                 description="Chess3x3 board and a scikit-learn tree imported as a FlatTree, drawn",
                 captions=_tour_captions)
def _tour_figures(ctx: RunContext) -> dict:
    from dtlab.plotting import draw_tree, plot_board

    result = tour_tree(n_samples=ctx.pick(10_000, 1_000_000), max_depth=4, seed=ctx.seed,
                       backends=("cpu", "cuda"))
    ctx.savefig(plot_board(result["X"], result["y"]), "tour_chess3x3_board")
    ctx.savefig(draw_tree(result["tree"], title="scikit-learn CART (depth 4) as a FlatTree"), "tour_tree")
    return result["report"]


def deep_tree(n_rows: int = 1_000_000, seed: int = 0):
    """Chess3x3 rows with 8 noise attributes and a deep scikit-learn tree fitted to 20%-flipped labels.

    The clean board needs only 17 nodes; flipped labels make a deep, bushy
    tree.  Returns ``(X, sklearn_tree, flat_tree)``; ``X`` is float32, so
    scikit-learn's ``apply`` converts nothing.
    """
    from sklearn.tree import DecisionTreeClassifier

    X, y = chess3x3(n_rows, noise_attrs=8, seed=seed)
    fit_rows = min(n_rows, 100_000)
    flipped = np.random.default_rng(seed).random(fit_rows) < 0.2
    sk = DecisionTreeClassifier(random_state=seed, max_depth=20).fit(X[:fit_rows], y[:fit_rows] ^ flipped)
    return X, sk, FlatTree.from_sklearn(sk)


def traversal_throughput(X: np.ndarray, sk: Any, tree: FlatTree, repeats: int = 5) -> dict[str, Any]:
    """Leaf lookup of one tree: dtlab's CPU traversal against scikit-learn's ``apply`` on the same rows.

    Per core: one numba thread against scikit-learn's one.  Whole machine:
    every numba thread against scikit-learn's ``apply`` over row blocks in a
    thread pool of as many threads (its Cython releases the GIL).

    Returns
    -------
    dict with ``n_rows, n_nodes, max_depth``, ``comparisons`` (two
    :func:`~workbench.timing.comparison` entries), ``speedup_per_core``
    and ``speedup_whole_machine``.
    """
    comparisons = []
    for mode in MODES:
        n = threads_for(mode)
        with numba_threads(n), in_row_chunks(sk.apply, X, n) as sk_run:
            t_ours, t_sk = paired_medians([lambda: tree.apply(X, backend="cpu"), sk_run], repeats=repeats)
        comparisons.append(comparison("scikit-learn DecisionTreeClassifier.apply", mode, t_ours, t_sk, n, n,
                                      n_rows=int(X.shape[0])))
    return {"n_rows": int(X.shape[0]), "n_nodes": tree.n_nodes, "max_depth": tree.max_depth,
            "comparisons": comparisons, **ratio_keys(comparisons, "speedup")}


@register_benchmark("tour_traversal_throughput", technique="tour",
                    description="FlatTree traversal (numba CPU, CUDA) against scikit-learn's apply, per core and "
                                "whole machine", captions=_traversal_captions)
def _traversal_benchmark(ctx: RunContext) -> dict:
    """Rows per second of leaf lookup for one deep tree, each backend against scikit-learn in one run."""
    n_rows = ctx.pick(1_000_000, 20_000_000) if ctx.backend != "cuda" else ctx.pick(10_000_000, 100_000_000)
    X, sk, tree = deep_tree(n_rows, seed=ctx.seed)
    report = traversal_throughput(X, sk, tree, repeats=ctx.pick(5, 7))
    if cuda_status()[0] and not resolve_backend("cuda").simulated:
        be = resolve_backend("cuda")
        X_dev = be.xp.asarray(X)
        gpu_s = median_seconds(lambda: tree.apply(X_dev, backend="cuda"), repeats=5)
        cpu = by_mode(report["comparisons"])["whole_machine"]
        report.update(cuda_rows_per_s=n_rows / gpu_s, cuda_device=be.devices()[0].name,
                      cuda_vs_cpu_whole_machine=cpu["dtlab_seconds"] / gpu_s,
                      cuda_vs_cpu_threads={"cuda": "one GPU", "cpu": cpu["threads"]["dtlab"]},
                      cuda_agrees_with_cpu=bool(np.array_equal(tree.apply(X_dev, backend="cuda"),
                                                               tree.apply(X, backend="cpu"))))
    return report
