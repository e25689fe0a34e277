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

import functools
import os
from typing import Any

import numpy as np

from .._validation import check_tree_input
from ..backend import resolve_backend, resolve_threads, thread_scope, to_host
from ..trees.model_import import to_ensemble
from . import _predict_cpu
from .layout import (
    HEAP_MAX_DEPTH,
    heap_layout,
    level_layout,
    quickscorer_layout,
    traversal_layout,
    tree_runs_layout,
    tree_shape,
)
from .lightgbm_rules import fold_input_rules

METHODS = ("auto", "traversal", "bitmask", "quickscorer")


@functools.lru_cache(maxsize=4)
def _auto_backend_is_cpu(simulator: str) -> bool:
    return resolve_backend("auto", np.empty(0)).name == "cpu"


def _auto_means_cpu() -> bool:
    """Whether ``backend="auto"`` runs a host array on the CPU (no usable GPU; asked once per simulator setting)."""
    return _auto_backend_is_cpu(os.environ.get("NUMBA_ENABLE_CUDASIM", "0"))


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

    def __init__(self, model: Any, *, combine: str = "mean"):
        self.ensemble = fold_input_rules(to_ensemble(model, combine))
        self.ensemble.validate()
        self._layouts: dict = {}
        self._plans: dict = {}
        self._serving_method: dict = {}
        self._device_layouts: dict = {}  # the layouts' device arrays, per (method, dtype, device): see _cuda_predict
        self._shape = tree_shape(self.ensemble.forest)
        # read on every small call: plain attributes, not properties
        ens = self.ensemble
        self._n_features, self._n_outputs, self._n_trees = ens.n_features, ens.n_outputs, ens.forest.n_trees
        # input rules or categorical sets: the small-batch path (thresholds only, no rules) cannot serve them
        self._has_rules = bool(ens.nan_as_zero.size or ens.zero_as_missing.size or ens.categorical is not None)

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
        if ens.categorical is not None:
            X = ens.categorical.prepare(X)  # its categories' value rules (scikit-learn's, LightGBM's)
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
        X : array-like of shape (n_samples, n_features), a dask array or a dask DataFrame
            Numeric; NaN is missing, inf an error.  float32 stays float32 (thresholds compare as in
            training), anything else is read as float64.
        method : {"auto", "traversal", "bitmask", "quickscorer"}, default="auto"
            ``"auto"``: the fastest for the forest's shape, measured once on this machine (on the cuda
            backend: on the GPU; under numba's CUDA simulator it is ``"traversal"``).
        backend : {"auto", "cpu", "cuda"}, default="auto"
        n_jobs : int or None, default=None
            CPU threads of the kernels (:func:`dtlab.backend.resolve_threads`: ``None``, numba's current
            thread count; -1, all of numba's threads); per partition for dask input.

        Returns
        -------
        raw : ndarray of shape (n_samples,) for one output, else (n_samples, n_outputs), float64
            XGBoost margins (with base score), LightGBM raw scores, scikit-learn ``predict_proba`` /
            ``predict``.  A dask input gives a dask array.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.ensemble import RandomForestRegressor
        >>> from dtlab.inference import Forest
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
        >>> forest = Forest(model)
        >>> pred = forest.predict(X[:5])
        >>> pred.shape, pred.dtype
        ((5,), dtype('float64'))
        >>> bool(np.allclose(pred, model.predict(X[:5])))
        True
        """
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if type(X) is np.ndarray and (backend == "cpu" or (backend == "auto" and _auto_means_cpu())):
            out = self._predict_small(X, method, n_jobs)
            if out is not None:
                return out
        resolve_threads(n_jobs)
        if type(X).__module__.split(".")[0] in ("dask", "dask_expr"):
            from .dask_predict import predict_dask

            return predict_dask(self, X, method, backend, n_jobs)
        be = resolve_backend(backend, X)
        if self.ensemble.categorical is not None:
            return self.finish(self._walk("sum", X, method, be, n_jobs))
        with thread_scope(n_jobs):
            if be.is_cuda:
                from ._predict_cuda_host import choose_cuda, predict_cuda

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

    def apply(self, X: Any, backend: str = "auto", n_jobs: int | None = None) -> np.ndarray:
        """The leaf each row reaches in each tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric; NaN is missing, inf an error.
        backend : {"auto", "cpu", "cuda"}, default="auto"
        n_jobs : int or None, default=None
            CPU threads (as :meth:`predict`).

        Returns
        -------
        leaves : ndarray of shape (n_samples, n_trees), int32
            Tree-local node indices (the tree's root is 0; for a dtlab GBDT tree, its node numbering).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.ensemble import RandomForestRegressor
        >>> from dtlab.inference import Forest
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
        >>> forest = Forest(model)
        >>> leaves = forest.apply(X[:5])
        >>> leaves.shape, leaves.dtype
        ((5, 5), dtype('int32'))
        """
        resolve_threads(n_jobs)
        return self._walk("leaves", X, "traversal", resolve_backend(backend, X), n_jobs)

    def _walk(self, what: str, X: Any, method: str, be, n_jobs) -> np.ndarray:
        """Sums (``what="sum"``) or leaves by the walk with categorical tests (:mod:`.categorical_walk`): the
        methods whose tables hold thresholds only (bitmask, quickscorer) cannot test a set."""
        from . import categorical_walk as categorical

        if what == "sum" and method not in ("auto", "traversal"):
            raise ValueError(f"method={method!r} tests thresholds only; this model has categorical splits: use "
                             "method='traversal' (or 'auto')")
        with thread_scope(n_jobs):
            X = self.prepare(to_host(X))
            if be.is_cuda:
                run = categorical.raw_sum_cuda if what == "sum" else categorical.leaves_cuda
                return run(self.ensemble, X, be)
            return (categorical.raw_sum if what == "sum" else categorical.leaves)(self.ensemble, X)

    def _predict_small(self, X: np.ndarray, method: str, n_jobs: Any) -> np.ndarray | None:
        """:meth:`predict` of a small batch on the CPU, or None where the general path must run.

        The serving case (a few rows per call) is bound by what a call costs
        around the walk, not by the walk: a 1-row call of 100 depth-8 trees
        walks in a few microseconds.  This path takes a C-contiguous float32 /
        float64 array with the model's number of columns and no missing-value
        rules to apply, small enough for the serial kernels
        (:data:`~dtlab.inference._predict_cpu.PARALLEL_MIN_TREE_ROWS`), so it needs no
        thread pool (``n_jobs`` is only checked), no copy and no backend
        lookup; the input checks are those of :meth:`prepare` (inf is an
        error, NaN is missing), done by one compiled scan.  The kernel and its
        arguments come from :meth:`_plan`, cached per method and dtype.
        """
        if (X.ndim != 2 or X.dtype.char not in "fd" or X.shape[1] != self._n_features or self._has_rules
                or not 0 < X.shape[0] * self._n_trees < _predict_cpu.PARALLEL_MIN_TREE_ROWS
                or not X.flags.c_contiguous):
            return None
        if n_jobs is not None:
            resolve_threads(n_jobs)  # a bad n_jobs is an error here too; one thread walks a small batch
        if _predict_cpu.has_inf(X.ravel()):
            raise ValueError("X contains inf; only finite values (and NaN for missing) are allowed")
        dtype = self.ensemble.input_dtype
        if dtype is not None and X.dtype != dtype:
            X = X.astype(dtype)
        if method == "auto":
            method = self._serving_method.get(X.dtype.char)
            if method is None:  # measured once, with the one thread the serial kernels use
                from .auto import choose

                with thread_scope(1):
                    method = self._serving_method[X.dtype.char] = choose(self, X.dtype)
        _, serial, flat, args = self._plan(method, X.dtype)
        out = np.zeros((X.shape[0], self._n_outputs), np.float64)
        serial(X.ravel() if flat else X, *args, out)
        return self.finish(out)

    def raw_sum(self, X: np.ndarray, method: str) -> np.ndarray:
        """Sum of the leaf values per row and output column on the CPU (X already prepared).

        ``method`` is one of :data:`METHODS` but ``"auto"``, or a variant of the
        traversal: ``"traversal_heap"`` (complete trees in heap order, used by
        ``"traversal"`` up to depth :data:`~dtlab.inference.layout.HEAP_MAX_DEPTH`)
        or ``"traversal_nodes"`` (child arrays, any depth).
        """
        out = np.zeros((X.shape[0], self.ensemble.n_outputs), np.float64)
        if X.shape[0] == 0:
            return out
        if X.size >= 2**32:
            raise ValueError("X has 2^32 values or more; predict it in row blocks (or as a dask array)")
        kernel, _, flat, args = self._plan(method, X.dtype)
        _predict_cpu.for_size(kernel, X.shape[0], self._n_trees)(X.ravel() if flat else X, *args, out)
        return out

    def _plan(self, method: str, dtype) -> tuple:
        """``(parallel kernel, serial twin, takes X raveled, the arguments after X)`` of ``method`` (cached).

        The arguments are the layout's arrays (and the tree columns) in the kernel's order, gathered once per
        method and dtype so that a call pays only the kernel's dispatch.
        """
        key = (method, np.dtype(dtype).name)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        if method == "traversal":  # the heap walk where padding to complete trees stays small
            method = "traversal_heap" if self.max_depth <= HEAP_MAX_DEPTH else "traversal_nodes"
        tc, nf = self.ensemble.tree_column, self.n_features
        if method == "traversal_heap":
            lay = self.layout("heap", dtype)
            name, flat = "traverse_heap", True
            args = (nf, lay.node_offset, lay.depth, lay.feature, lay.threshold, lay.nan_right, lay.leaf_offset,
                    lay.value, tc)
        elif method == "traversal_nodes":
            lay = self.layout("traversal", dtype)
            name, flat = "traverse", True
            args = (nf, lay.root, lay.depth, lay.child, lay.feature, lay.threshold, lay.nan_right, lay.value, tc)
        elif method == "bitmask":
            lay = self.layout("bitmask", dtype)
            name, flat = "bitmask", True
            args = (nf, lay.tree_level, lay.level_node, lay.base, lay.feature, lay.threshold, lay.nan_right,
                    lay.id_left, lay.id_right, lay.leaf_offset, lay.leaf_value, tc)
        elif method == "quickscorer":
            lay = self.layout("quickscorer", dtype)
            flat = False
            if lay.n_words == 1:
                name = "quickscorer_one_word"
                args = (lay.feature_offset, lay.threshold, lay.tree, lay.mask, lay.nan_offset, lay.nan_tree,
                        lay.nan_mask, lay.leaf_offset, lay.leaf_value, tc)
            else:
                name = "quickscorer"
                args = (lay.n_words, lay.feature_offset, lay.threshold, lay.tree, lay.lo, lay.count, lay.nan_offset,
                        lay.nan_tree, lay.nan_lo, lay.nan_count, lay.leaf_offset, lay.leaf_value, tc)
        else:
            raise ValueError(f"method must be one of {METHODS[1:]} (or traversal_heap, traversal_nodes), "
                             f"got {method!r}")
        kernel = getattr(_predict_cpu, name)
        plan = self._plans[key] = (kernel, _predict_cpu.SERIAL[kernel], flat, args)
        return plan

    def finish(self, summed: np.ndarray) -> np.ndarray:
        """``base + scale * summed``, squeezed to 1-D for one output."""
        ens = self.ensemble
        out = summed * ens.scale if ens.scale != 1.0 else summed
        out += ens.base
        return out[:, 0] if ens.n_outputs == 1 else out
