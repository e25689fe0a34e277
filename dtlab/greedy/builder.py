"""Grow a greedy tree: input preparation, presorting, CPU / CUDA dispatch.

The algorithm layer between the estimators (:mod:`dtlab.greedy.regressor`,
:mod:`dtlab.greedy.classifier`) and the kernels (the CPU grower
:mod:`._grower_cpu` with :mod:`dtlab.splits.presort`, :mod:`._scans_cpu`, :mod:`._draws` and
:mod:`._node_rules`; the CUDA grower :mod:`._grower_cuda` with the kernels of :mod:`._scans_cuda`).
It reproduces scikit-learn's conventions where they decide the tree: X is cast
to float32 (scikit-learn does the same, so thresholds are midpoints of float32
values), ``-0.0`` counts as ``0.0``, and the random state is turned into the
seed of scikit-learn's xorshift generator, so that ties between features are
broken the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backend import Backend, resolve_backend
from ..splits import attribute_lists
from ..trees import FlatTree
from . import _node_rules
from ._grower_cpu import _grow
from ._node_rules import CRITERIA, GAIN_RATIO, METHODS, RAND_R_MAX, VECTORIZED

#: ``max_depth=None`` means this depth (scikit-learn uses the int32 maximum too).
UNLIMITED_DEPTH = int(np.iinfo(np.int32).max)


@dataclass
class GrownTree:
    """A grown tree and the per-node statistics the estimators keep.

    Attributes
    ----------
    tree : FlatTree
        Nodes in depth-first preorder (scikit-learn's node order).
    impurity : ndarray of shape (n_nodes,), float64
        MSE (regression), Gini or entropy in bits (classification) of each node.
    n_node_samples : ndarray of shape (n_nodes,), int64
        Training rows of each node (rows of weight 0 not counted, as in scikit-learn).
    weighted_n_node_samples : ndarray of shape (n_nodes,), float64
        Their total weight (the row count without sample weights).
    """

    tree: FlatTree
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray


def sklearn_seed(random_state: Any) -> int:
    """The xorshift seed scikit-learn's splitter draws from ``random_state``.

    ``check_random_state(random_state).randint(0, RAND_R_MAX)``, the first draw
    scikit-learn makes when it fits a tree; an int or ``None`` (the global
    numpy generator) or a ``RandomState`` as in scikit-learn.
    """
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(0, RAND_R_MAX))


def as_float32_features(X: np.ndarray) -> np.ndarray:
    """float32 copy of X, each feature contiguous (Fortran order), ``-0.0`` replaced by ``0.0``.

    scikit-learn compares float32 values; ``-0.0 == 0.0`` there, and mapping both
    to ``+0.0`` keeps the (value, row) sort order well defined.  Fortran order
    makes ``X32.T`` the (n_features, n_samples) layout the kernels read, without
    another copy.
    """
    X = np.asarray(X)
    X32 = np.empty(X.shape, dtype=np.float32, order="F")
    X32[...] = X
    X32 += np.float32(0.0)
    return X32


def build_greedy_tree(X32: np.ndarray, y: np.ndarray, *, task: str, criterion: str, method: str = "vectorized",
                      max_depth: int | None = None, min_samples_split: int = 2, min_samples_leaf: int = 1,
                      random_state: Any = None, backend: str | Backend = "auto",
                      classes: np.ndarray | None = None, sample_weight: np.ndarray | None = None) -> GrownTree:
    """Grow one greedy tree.

    Parameters
    ----------
    X32 : ndarray of shape (n_samples, n_features), float32, no inf
        From :func:`as_float32_features`; NaN marks a missing value (every split
        learns where the missing rows go, as scikit-learn's trees do: see
        :mod:`._missing_cpu`).
    y : ndarray of shape (n_samples,)
        float64 targets (regression) or int32 class codes ``0..n_classes-1``.
    task : {"regression", "classification"}
    criterion : {"squared_error", "gini", "entropy", "gain_ratio"}
    method : {"naive", "incremental", "vectorized"}
        Split search (regression); classification uses "vectorized".
    max_depth : int >= 0 or None
    min_samples_split, min_samples_leaf : int >= 1
    random_state : int, RandomState or None
        Breaks ties between features exactly as scikit-learn's ``random_state``.
    backend : {"auto", "cpu", "cuda"} or Backend
    classes : ndarray of shape (n_classes,), optional
        Labels stored in the FlatTree (classification).
    sample_weight : ndarray of shape (n_samples,), float64, finite and >= 0, optional
        Weights of the rows (the scans' weighted variant, :mod:`._weights`, on the CPU and on CUDA):
        rows of weight 0 are left out (scikit-learn's splitter skips them too);
        weights that are all 1 grow the unweighted tree by the unweighted variant.
        ``criterion="gain_ratio"`` takes them as C4.5 does (fractional cases:
        gain and split information from weighted counts), on the CPU.

    Returns
    -------
    GrownTree
    """
    n_features = X32.shape[1]
    crit = CRITERIA[criterion]
    meth = METHODS[method]
    if task == "classification" and meth != VECTORIZED:
        raise ValueError(f"method={method!r} is a regression search; classification uses 'vectorized'")
    if task == "classification":
        n_outputs = int(len(classes)) if classes is not None else int(y.max()) + 1
        y = np.ascontiguousarray(y, dtype=np.int32)
    else:
        n_outputs = 1
        y = np.ascontiguousarray(y, dtype=np.float64)
    depth = UNLIMITED_DEPTH if max_depth is None else int(max_depth)
    seed = sklearn_seed(random_state)
    be = resolve_backend(backend, X32)
    w = None
    if sample_weight is not None and not np.all(sample_weight == 1.0):
        keep = sample_weight > 0.0
        X32, y, w = X32[keep], y[keep], np.ascontiguousarray(sample_weight[keep], dtype=np.float64)
    missing = bool(np.isnan(X32).any())
    if missing and be.is_cuda:
        raise ValueError("backend='cuda' does not take missing values (NaN) in X yet: the CUDA split search has "
                         "no missing-value scans (the CPU's, which learn a direction per split as scikit-learn "
                         "does, are in dtlab.greedy._scans_cpu); use backend='cpu', or impute X. NaN at "
                         "predict time works on both backends")
    if missing and crit == GAIN_RATIO:
        raise ValueError("criterion='gain_ratio' does not take missing values (NaN) in X: C4.5 spreads such rows "
                         "over both children by weight, which is not implemented; use criterion='gini' or "
                         "'entropy' (each split learns a direction for missing values) or impute X first")
    XT = np.ascontiguousarray(X32.T)
    parallel_min_work = _node_rules.PARALLEL_MIN_WORK  # looked up per fit, so that a test can lower it
    if be.is_cuda:
        from ._grower_cuda import grow_cuda

        arrays = grow_cuda(XT, y, crit, n_outputs, depth, min_samples_split, min_samples_leaf, seed, be, w)
    elif meth == VECTORIZED:
        rows, vals, ylist = attribute_lists(XT, y)
        arrays = _grow(meth, crit, n_features, n_outputs, np.empty((n_features, 1), np.float32), y, w, rows, vals,
                       ylist, depth, min_samples_split, min_samples_leaf, seed, parallel_min_work)
    else:
        rows = np.empty((1, 1), dtype=np.int32)
        vals = np.empty((1, 1), dtype=np.float32)
        ylist = np.empty((1, 1), dtype=y.dtype)
        arrays = _grow(meth, crit, n_features, n_outputs, XT, y, w, rows, vals, ylist, depth,
                       min_samples_split, min_samples_leaf, seed, parallel_min_work)
    feature, threshold, left, right, value, impurity, n_node, missing, weighted_n = arrays
    tree = FlatTree(feature=feature, threshold=threshold, left=left, right=right, value=value,
                    n_features=n_features, task=task, classes=classes if task == "classification" else None,
                    missing_left=missing.astype(bool),
                    metadata={"source": f"dtlab.greedy ({criterion}, {method}, {be.name})"})
    return GrownTree(tree, impurity, n_node, weighted_n)
