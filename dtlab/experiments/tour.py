"""The tour: Chess3x3, a scikit-learn tree imported as a FlatTree, predictions on every backend."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..backend import cuda_status, resolve_backend
from ..datasets import chess3x3
from ..trees import FlatTree
from .registry import RunContext, register_benchmark, register_figure


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


@register_figure("tour", technique="foundation",
                 description="Chess3x3 board and a scikit-learn tree imported as a FlatTree, drawn")
def _tour_figures(ctx: RunContext) -> dict:
    from ..plotting import draw_tree, plot_board

    result = tour_tree(n_samples=ctx.pick(10_000, 1_000_000), max_depth=4, seed=ctx.seed,
                       backends=("cpu", "cuda"))
    ctx.savefig(plot_board(result["X"], result["y"]), "tour_chess3x3_board")
    ctx.savefig(draw_tree(result["tree"], title="scikit-learn CART (depth 4) as a FlatTree"), "tour_tree")
    return result["report"]


@register_benchmark("traversal_throughput", technique="foundation",
                    description="FlatTree traversal (numba CPU, CUDA) against scikit-learn's apply")
def _traversal_benchmark(ctx: RunContext) -> dict:
    """Rows per second of leaf lookup for one deep tree, each backend against scikit-learn in one run."""
    from sklearn.tree import DecisionTreeClassifier

    from .timing import median_seconds

    n_rows = ctx.pick(1_000_000, 20_000_000) if ctx.backend != "cuda" else ctx.pick(10_000_000, 100_000_000)
    X, y = chess3x3(n_rows, noise_attrs=8, seed=ctx.seed)
    # 20% flipped labels make a deep, bushy tree (the clean board needs only 17 nodes).
    flipped = np.random.default_rng(ctx.seed).random(100_000) < 0.2
    sk = DecisionTreeClassifier(random_state=ctx.seed, max_depth=20).fit(X[:100_000], y[:100_000] ^ flipped)
    tree = FlatTree.from_sklearn(sk)
    sk_rows = min(n_rows, 2_000_000)  # scikit-learn is single-threaded: time it on a prefix
    sklearn_s = median_seconds(lambda: sk.apply(X[:sk_rows]), repeats=3)
    report = {"n_rows": n_rows, "n_nodes": tree.n_nodes, "max_depth": tree.max_depth,
              "sklearn_rows_per_s": sk_rows / sklearn_s}
    cpu_s = median_seconds(lambda: tree.apply(X, backend="cpu"), repeats=3)
    report["cpu_rows_per_s"] = n_rows / cpu_s
    report["cpu_vs_sklearn_speedup"] = report["cpu_rows_per_s"] / report["sklearn_rows_per_s"]
    if cuda_status()[0] and not resolve_backend("cuda").simulated:
        be = resolve_backend("cuda")
        X_dev = be.xp.asarray(X)
        gpu_s = median_seconds(lambda: tree.apply(X_dev, backend="cuda"), repeats=5)
        report.update(cuda_rows_per_s=n_rows / gpu_s, cuda_vs_cpu_speedup=cpu_s / gpu_s,
                      cuda_device=be.devices()[0].name,
                      cuda_agrees_with_cpu=bool(np.array_equal(tree.apply(X_dev, backend="cuda"),
                                                               tree.apply(X, backend="cpu"))))
    return report
