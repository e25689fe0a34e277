"""The tour: Chess3x3, a scikit-learn tree imported as a FlatTree, predictions on every backend."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..backend import cuda_status, resolve_backend
from ..datasets import chess3x3
from ..trees import FlatTree
from .registry import RunContext, register_figure


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
