"""Looking into a fitted GDT tree: text, a drawing and feature importances, on the estimator.

A mixin, so that :class:`~dtlab.evolution.GDTClassifier` gains these methods
by inheriting it and nothing else of the estimator changes.  All of them read
the fitted ``tree_`` (a :class:`~dtlab.trees.FlatTree` whose leaves hold the
training class counts) and the feature names seen in ``fit``
(``feature_names_in_``, set when X was a pandas DataFrame with string column
names, as in scikit-learn).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def node_class_counts(tree) -> np.ndarray:
    """Training class counts of every node, float64 (n_nodes, n_classes): leaves' ``value``, summed upwards.

    A GDT tree keeps the counts of its leaves (what its evaluation measured); a
    node's rows are those of the leaves under it.
    """
    counts = np.zeros((tree.n_nodes, tree.n_outputs), dtype=np.float64)
    leaves = tree.left < 0
    counts[leaves] = tree.value[leaves]
    for node in reversed(tree.preorder()):  # children before their parent
        if tree.left[node] >= 0:
            counts[node] = counts[tree.left[node]] + counts[tree.right[node]]
    return counts


def gini_importances(tree, n_features: int) -> np.ndarray:
    """Mean decrease in Gini impurity per feature, normalised to sum 1 (all 0 for a single leaf).

    Each test adds ``N_t g_t - N_l g_l - N_r g_r`` to its feature (``N``:
    training rows reaching the node, ``g``: their Gini impurity), scikit-learn's
    definition of ``feature_importances_``; float64 array (n_features,).
    """
    counts = node_class_counts(tree)
    n_rows = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = counts / n_rows[:, None]
    gini = np.where(n_rows > 0, 1.0 - np.nansum(p * p, axis=1), 0.0)
    weighted = n_rows * gini
    inner = np.flatnonzero(tree.left >= 0)
    decrease = weighted[inner] - weighted[tree.left[inner]] - weighted[tree.right[inner]]
    out = np.bincount(tree.feature[inner], weights=decrease, minlength=n_features).astype(np.float64)
    total = out.sum()
    return out / total if total > 0 else out


def remember_feature_names(estimator: Any, X: Any) -> None:
    """Set ``estimator.feature_names_in_`` (object array) from a DataFrame's string columns, or remove it."""
    columns = getattr(X, "columns", None)
    if columns is not None and len(columns) and all(isinstance(c, str) for c in columns):
        estimator.feature_names_in_ = np.asarray(list(columns), dtype=object)
    else:
        estimator.__dict__.pop("feature_names_in_", None)


class TreeInspectionMixin:
    """``export_text``, ``plot_tree`` and ``feature_importances_`` of an estimator with a fitted ``tree_``."""

    def _fitted_tree(self):
        if not hasattr(self, "tree_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first")
        return self.tree_

    def _feature_names(self, feature_names: Sequence[str] | None) -> list[str] | None:
        """Names passed in, else the DataFrame columns seen in fit (``feature_names_in_``), else None."""
        if feature_names is not None:
            return [str(name) for name in feature_names]
        names = getattr(self, "feature_names_in_", None)
        return None if names is None else [str(name) for name in names]

    def export_text(self, feature_names: Sequence[str] | None = None, *, max_depth: int = 10, spacing: int = 3,
                    decimals: int = 2, show_weights: bool = False) -> str:
        """The fitted tree's rules as text, in :func:`sklearn.tree.export_text`'s format.

        Parameters
        ----------
        feature_names : sequence of str of length n_features_in_, optional
            Default: the column names of the DataFrame the tree was fitted on,
            else ``feature_0``, ``feature_1``, ...
        max_depth, spacing, decimals, show_weights :
            As in :func:`sklearn.tree.export_text` (``show_weights``: each
            leaf's training class counts).

        Returns
        -------
        str
        """
        from ..trees.text import export_text

        return export_text(self._fitted_tree(), feature_names=self._feature_names(feature_names),
                           class_names=list(self.classes_), max_depth=max_depth, spacing=spacing,
                           decimals=decimals, show_weights=show_weights)

    def plot_tree(self, ax: Any = None, *, feature_names: Sequence[str] | None = None, max_nodes: int = 127,
                  title: str | None = None):
        """Draw the fitted tree (:func:`dtlab.plotting.draw_tree`): tests, leaf classes and training rows.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Drawn into a new figure when None.
        feature_names : sequence of str, optional
            As for :meth:`export_text`.
        max_nodes : int, default=127
            Larger trees are refused (unreadable) unless this is raised.
        title : str, optional

        Returns
        -------
        matplotlib.figure.Figure
        """
        from ..plotting import draw_tree

        return draw_tree(self._fitted_tree(), feature_names=self._feature_names(feature_names),
                         class_names=list(self.classes_), max_nodes=max_nodes, ax=ax, title=title)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Gini importance of each feature, float64 of shape (n_features_in_,), summing to 1.

        The total decrease of Gini impurity, weighted by the training rows, over
        the tests on that feature: each test adds ``N_t g_t - N_l g_l - N_r g_r``
        (``N``: training rows reaching the node and each child, ``g``: their Gini
        impurity, from the class counts the leaves hold), normalised to sum 1 --
        scikit-learn's definition for its trees.  A feature no test uses gets 0;
        a tree that is one leaf gives all zeros.
        """
        return gini_importances(self._fitted_tree(), self.n_features_in_)
