"""``Forest``: one interface over every way of finding the leaves of a tree ensemble.

>>> forest = Forest(model)                       # sklearn / XGBoost / LightGBM / dtlab / FlatTree(s)
>>> raw = forest.predict(X, method="auto")       # the source library's raw prediction

Methods (:data:`METHODS`): ``"traversal"`` (a root-to-leaf walk per row, blocks
of rows in lock step), ``"bitmask"`` (the patent JP5863426B2: every decision
node evaluated, identifiers ORed per level and ANDed across levels),
``"quickscorer"`` (per feature sorted thresholds, false-node masks ANDed per
tree), and ``"auto"`` which picks the fastest for the forest's shape by a
small cached measurement (:mod:`dtlab.inference.auto`).  Backends: ``"cpu"``
(numba) and ``"cuda"`` (numba.cuda; traversal, bitmask and quickscorer, the
last one thread per row scanning each tree's tests by feature, trees of <= 4096
leaves; the device layouts stay on the GPU between calls).  ``"auto"`` on
``"cuda"`` times the methods on the GPU once per forest shape; under numba's
simulator, whose timings measure Python, it is ``"traversal"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_tree_input
from ..backend import resolve_backend, resolve_threads, thread_scope, to_host
from ..trees.model_import import to_ensemble
from . import _cpu
from .layout import (
    HEAP_MAX_DEPTH,
    heap_layout,
    level_layout,
    quickscorer_layout,
    traversal_layout,
    tree_runs_layout,
    tree_shape,
)
from .rules import fold_input_rules

METHODS = ("auto", "traversal", "bitmask", "quickscorer")


class Forest:
    """A tree ensemble ready for fast prediction.

    Parameters
    ----------
    model : any of :data:`SUPPORTED`
    combine : {"mean", "sum"}
        How FlatTrees and PackedForests combine (models from libraries carry their own rule).

    Attributes
    ----------
    ensemble : Ensemble
    n_features, n_outputs, n_trees : int
    """

    def __init__(self, model: Any, combine: str = "mean"):
        self.ensemble = fold_input_rules(to_ensemble(model, combine))
        self.ensemble.validate()
        self._layouts: dict = {}
        self._device_layouts: dict = {}  # the layouts' device arrays, per (method, dtype, device): see _cuda_predict
        self._shape = tree_shape(self.ensemble.forest)

    n_features = property(lambda self: self.ensemble.n_features)
    n_outputs = property(lambda self: self.ensemble.n_outputs)
    n_trees = property(lambda self: self.ensemble.forest.n_trees)

    @property
    def max_depth(self) -> int:
        return int(self._shape.depth.max())

    def __repr__(self) -> str:
        return (f"Forest({self.n_trees} trees, depth <= {self.max_depth}, {self.n_features} features, "
                f"{self.n_outputs} outputs, from {self.ensemble.source})")

    def layout(self, method: str, dtype) -> Any:
        """The node tables of ``method`` for inputs of ``dtype`` (built once, cached)."""
        key = (method, np.dtype(dtype).name)
        if key not in self._layouts:
            f = self.ensemble.forest
            build = {"traversal": lambda: traversal_layout(f, dtype), "heap": lambda: heap_layout(f, dtype),
                     "bitmask": lambda: level_layout(f, dtype),
                     "quickscorer": lambda: quickscorer_layout(f, dtype, self.n_features),
                     "quickscorer_runs": lambda: tree_runs_layout(f, dtype)}
            if method not in build:
                raise ValueError(f"method must be one of {METHODS}, got {method!r}")
            self._layouts[key] = build[method]()
        return self._layouts[key]

    def prepare(self, X: Any) -> np.ndarray:
        """X as the kernels read it: checked, in the source library's dtype, its missing-value rules applied."""
        ens = self.ensemble
        X = check_tree_input(X, ens.n_features)
        if ens.input_dtype is not None and X.dtype != ens.input_dtype:
            X = X.astype(ens.input_dtype)
        # Forest folded the zero band and NaN-as-0 into the trees (rules.py); LightGBM's missing_type Zero
        # still sends 0, the band and NaN the missing way
        if ens.nan_as_zero.size or ens.zero_as_missing.size:
            X = X.copy()  # never rewrite the caller's array
            for f in ens.nan_as_zero:
                col = X[:, f]
                col[np.isnan(col)] = 0.0
            band = max(ens.zero_threshold, 1e-35)
            for f in ens.zero_as_missing:
                col = X[:, f]
                col[np.abs(col) <= band] = np.nan
        return X

    def predict(self, X: Any, method: str = "auto", backend: str = "auto", n_jobs: int | None = None) -> np.ndarray:
        """The source library's raw prediction.

        Parameters
        ----------
        X : array-like (n_samples, n_features), a dask array or a dask DataFrame; NaN is missing
        method : {"auto", "traversal", "bitmask", "quickscorer"}
            ``"auto"``: the fastest for the forest's shape, measured once on this machine (on the cuda
            backend: on the GPU; under numba's CUDA simulator it is ``"traversal"``).
        backend : {"auto", "cpu", "cuda"}
        n_jobs : int or None
            CPU threads of the kernels (:func:`dtlab.backend.resolve_threads`: ``None``, numba's current
            thread count; -1, all of numba's threads); per partition for dask input.

        Returns
        -------
        ndarray (n_samples,) float64 for one output, else (n_samples, n_outputs): XGBoost margins
        (with base score), LightGBM raw scores, scikit-learn ``predict_proba`` / ``predict``.
        A dask input gives a dask array.
        """
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        resolve_threads(n_jobs)
        if type(X).__module__.split(".")[0] in ("dask", "dask_expr"):
            from .dask_predict import predict_dask

            return predict_dask(self, X, method, backend, n_jobs)
        be = resolve_backend(backend, X)
        with thread_scope(n_jobs):
            if be.is_cuda:
                from ._cuda_predict import choose_cuda, predict_cuda

                X = self.prepare(to_host(X))  # the checks and missing-value rules run on the host
                if method == "auto":  # measured on a GPU; "traversal" under the simulator (its timings mean nothing)
                    method = choose_cuda(self, X.dtype, be)
                out = predict_cuda(self, X, method, be)
            else:
                X = self.prepare(X)
                if method == "auto":
                    from .auto import choose

                    method = choose(self, X.dtype)
                out = self.raw_sum(X, method)
        return self.finish(out)

    def raw_sum(self, X: np.ndarray, method: str) -> np.ndarray:
        """Sum of the leaf values per row and output column on the CPU (X already prepared).

        ``method`` is one of :data:`METHODS` but ``"auto"``, or a variant of the
        traversal: ``"traversal_heap"`` (complete trees in heap order, used by
        ``"traversal"`` up to depth :data:`~dtlab.inference.layout.HEAP_MAX_DEPTH`)
        or ``"traversal_nodes"`` (child arrays, any depth).
        """
        ens = self.ensemble
        out = np.zeros((X.shape[0], ens.n_outputs), np.float64)
        if X.shape[0] == 0:
            return out
        tc = ens.tree_column
        if X.size >= 2**32:
            raise ValueError("X has 2^32 values or more; predict it in row blocks (or as a dask array)")
        lay = self.layout(method, X.dtype) if method in ("bitmask", "quickscorer") else None
        if method == "traversal":  # the heap walk where padding to complete trees stays small
            method = "traversal_heap" if self.max_depth <= HEAP_MAX_DEPTH else "traversal_nodes"
        n, k = X.shape[0], ens.forest.n_trees
        kernel = lambda name: _cpu.for_size(getattr(_cpu, name), n, k)  # noqa: E731
        if method == "traversal_heap":
            lay = self.layout("heap", X.dtype)
            kernel("traverse_heap")(X.ravel(), X.shape[1], lay.node_offset, lay.depth, lay.feature, lay.threshold,
                                    lay.nan_right, lay.leaf_offset, lay.value, tc, out)
        elif method == "traversal_nodes":
            lay = self.layout("traversal", X.dtype)
            kernel("traverse")(X.ravel(), X.shape[1], lay.root, lay.depth, lay.child, lay.feature, lay.threshold,
                               lay.nan_right, lay.value, tc, out)
        elif method == "bitmask":
            kernel("bitmask")(X.ravel(), X.shape[1], lay.tree_level, lay.level_node, lay.base, lay.feature,
                              lay.threshold, lay.nan_right, lay.id_left, lay.id_right, lay.leaf_offset,
                              lay.leaf_value, tc, out)
        elif lay.n_words == 1:
            kernel("quickscorer_one_word")(X, lay.feature_offset, lay.threshold, lay.tree, lay.mask, lay.nan_offset,
                                           lay.nan_tree, lay.nan_mask, lay.leaf_offset, lay.leaf_value, tc, out)
        else:
            kernel("quickscorer")(X, lay.n_words, lay.feature_offset, lay.threshold, lay.tree, lay.lo, lay.count,
                                  lay.nan_offset, lay.nan_tree, lay.nan_lo, lay.nan_count, lay.leaf_offset,
                                  lay.leaf_value, tc, out)
        return out

    def finish(self, summed: np.ndarray) -> np.ndarray:
        """``base + scale * summed``, squeezed to 1-D for one output."""
        ens = self.ensemble
        out = summed * ens.scale if ens.scale != 1.0 else summed
        out += ens.base
        return out[:, 0] if ens.n_outputs == 1 else out
