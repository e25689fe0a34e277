"""Categorical splits: a node that sends a set of categories left, and the walk that reads them.

A categorical node of a forest tests the integer category ``c`` of its
feature against a bitset: bit ``c`` set sends the row left.  The category of a
value ``x`` is ``int(x)`` (truncated, as XGBoost and LightGBM cast it); NaN
follows the node's ``missing_left``; a negative ``x`` or a category beyond the
node's bitset follows its ``out_left`` (where each library sends a category
it does not list: XGBoost left, LightGBM right, scikit-learn's
``HistGradientBoosting*`` and dtlab's GBDT the missing side).

:class:`CategoricalSplits` holds the sets of every categorical node of a
:class:`~dtlab.trees.packed.PackedForest` (an :class:`~dtlab.trees.ensemble.Ensemble`
carries it); :func:`descend_categorical` is :func:`dtlab.trees.walk.descend`
with that test, written once as a plain function (the rules of :mod:`dtlab._jit`)
and compiled for the CPU (:func:`cpu_functions`) and CUDA (:func:`cuda_functions`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .._jit import compile_functions, cpu_jit, cuda_device


@dataclass(frozen=True)
class CategoricalSplits:
    """The category sets of a forest's categorical nodes.

    Attributes
    ----------
    node : ndarray of shape (n_categorical,), int64
        Forest-global indices of the categorical nodes, increasing.
    offset : ndarray of shape (n_categorical + 1,), int64
        Node ``i``'s bitset is ``words[offset[i]:offset[i + 1]]`` (at least one word).
    words : ndarray of shape (n_words,), uint32
        Bit ``c % 32`` of word ``c // 32`` set: category ``c`` goes left.
    out_left : ndarray of shape (n_categorical,), bool
        Where a negative value, or a category beyond the bitset, goes.
    exact_features : ndarray of int64
        Features on which a value that is not a whole number counts as missing (scikit-learn's
        ``HistGradientBoosting*``: its encoder knows only the training categories); elsewhere the category
        of ``x`` is ``int(x)``.
    truncated_features : ndarray of int64
        Features on which a value in ``(-1, 0)`` is category 0 (LightGBM casts to int, truncating toward
        zero; elsewhere a negative value is no category, as in XGBoost).
    """

    node: np.ndarray
    offset: np.ndarray
    words: np.ndarray
    out_left: np.ndarray
    exact_features: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    truncated_features: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def from_sets(cls, node: np.ndarray, left_sets: Sequence[np.ndarray], out_left: np.ndarray,
                  known: Sequence[np.ndarray] | None = None, exact_features: Sequence[int] = (),
                  truncated_features: Sequence[int] = ()) -> "CategoricalSplits":
        """Bitsets from the categories each node sends left.

        Parameters
        ----------
        node : int array (n_categorical,), forest-global node indices (any order; sorted here)
        left_sets : sequence of int arrays, the non-negative categories going left at each node
        out_left : bool array (n_categorical,)
        known : sequence of int arrays, optional
            The categories each node's model knows: one it does not know, inside the bitset, goes the
            ``out_left`` way as the ones beyond it do (default: every category inside the bitset is known).
        exact_features, truncated_features : sequence of int
        """
        node = np.asarray(node, np.int64)
        order = np.argsort(node, kind="stable")
        offset = np.zeros(node.shape[0] + 1, np.int64)
        words = []
        for j, i in enumerate(order):
            members = np.asarray(left_sets[i], np.int64)
            seen = members if known is None else np.concatenate([members, np.asarray(known[i], np.int64)])
            if (seen < 0).any():
                raise ValueError("categories must be non-negative integers")
            n_bits = max(int(seen.max()) + 1 if seen.size else 1, 1)
            bits = np.zeros(32 * ((n_bits + 31) // 32), bool)
            if known is not None and out_left[i]:  # unknown categories inside the bitset: the out_left side
                bits[:] = True
                bits[np.asarray(known[i], np.int64)] = False
            bits[members] = True
            words.append(np.packbits(bits, bitorder="little").view(np.uint32))
            offset[j + 1] = offset[j] + words[-1].shape[0]
        return cls(node[order], offset, np.concatenate(words) if words else np.zeros(0, np.uint32),
                   np.asarray(out_left, bool)[order], np.asarray(sorted(set(int(f) for f in exact_features)), np.int64),
                   np.asarray(sorted(set(int(f) for f in truncated_features)), np.int64))

    @property
    def n_nodes(self) -> int:
        return int(self.node.shape[0])

    def left_categories(self, i: int) -> np.ndarray:
        """The categories inside node ``i``'s bitset that go left (int64, increasing)."""
        words = self.words[self.offset[i]:self.offset[i + 1]]
        return np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")).astype(np.int64)

    def prepare(self, X: np.ndarray) -> np.ndarray:
        """X with the features' value rules applied (a copy where anything changes): not a whole number on an
        ``exact_features`` column is missing, ``(-1, 0)`` on a ``truncated_features`` column is 0."""
        if not self.exact_features.size and not self.truncated_features.size:
            return X
        X = X.copy()  # never rewrite the caller's array
        for f in self.exact_features:
            col = X[:, f]
            col[col != np.round(col)] = np.nan
        for f in self.truncated_features:
            col = X[:, f]
            col[(col > -1) & (col < 0)] = 0.0
        return X

    def node_table(self, n_nodes: int) -> np.ndarray:
        """Per node of the forest, its index among the categorical nodes or -1 (int32, shape (n_nodes,))."""
        table = np.full(n_nodes, -1, np.int32)
        table[self.node] = np.arange(self.n_nodes, dtype=np.int32)
        return table

    def validate(self, forest) -> None:
        """Raise ValueError unless every categorical node is an internal node of ``forest`` with a bitset."""
        n = self.n_nodes
        if self.offset.shape != (n + 1,) or self.out_left.shape != (n,) or self.offset[0] != 0 or \
                self.offset[-1] != self.words.shape[0] or (np.diff(self.offset) < 1).any():
            raise ValueError("categorical splits: offset must start at 0, give each node >= 1 word and end at "
                             "the number of words; out_left one per node")
        if self.words.dtype != np.uint32:
            raise ValueError(f"categorical splits: words must be uint32, got {self.words.dtype}")
        if n and ((np.diff(self.node) <= 0).any() or self.node[0] < 0 or self.node[-1] >= forest.n_nodes):
            raise ValueError("categorical splits: node indices must increase and lie inside the forest")
        if n and (forest.left[self.node] == -1).any():
            raise ValueError("categorical splits: a leaf cannot be a categorical node")


def category_goes_left(x, miss_left, k, cat_offset, cat_words, cat_out_left):
    """Whether value ``x`` goes left at categorical node ``k`` (see the module docstring)."""
    if x != x:  # NaN
        return miss_left
    if x < 0:
        return cat_out_left[k]
    first = cat_offset[k]
    if x >= 32.0 * (cat_offset[k + 1] - first):
        return cat_out_left[k]
    c = int(x)
    return ((cat_words[first + c // 32] >> (c % 32)) & 1) == 1


def descend_categorical(X, row, root, feature, threshold, left, right, missing_left, cat_index, cat_offset,
                        cat_words, cat_out_left):
    """:func:`dtlab.trees.walk.descend` of row ``row`` of ``X`` (n_samples, n_features) where a node with
    ``cat_index[node] >= 0`` is the categorical node of that index; returns the leaf reached."""
    node = root
    while left[node] != -1:
        x = X[row, feature[node]]
        k = cat_index[node]
        if k >= 0:
            go_left = category_goes_left(x, missing_left[node], k, cat_offset, cat_words, cat_out_left)
        elif x <= threshold[node]:
            go_left = True
        elif x > threshold[node]:
            go_left = False
        else:  # NaN
            go_left = missing_left[node]
        node = left[node] if go_left else right[node]
    return node


def compile_categorical(jit) -> dict:
    """``category_goes_left`` and ``descend_categorical`` compiled with decorator ``jit``."""
    return compile_functions([category_goes_left, descend_categorical], jit)


@functools.lru_cache(maxsize=1)
def cpu_functions() -> dict:
    """:func:`compile_categorical` for the CPU (inlined into the callers' loops)."""
    return compile_categorical(cpu_jit(inline="always"))


@functools.lru_cache(maxsize=1)
def cuda_functions() -> dict:
    """:func:`compile_categorical` as CUDA device functions (imports numba.cuda)."""
    return compile_categorical(cuda_device())


def reference_leaves(forest, categorical: CategoricalSplits, X: np.ndarray) -> np.ndarray:
    """The leaf of every row in every tree by the plain functions run as Python (the kernels' reference).

    Returns int64 array (n_samples, n_trees) of forest-global node indices.
    """
    plain = compile_categorical(lambda fn: fn)["descend_categorical"]
    table = categorical.node_table(forest.n_nodes)
    out = np.empty((X.shape[0], forest.n_trees), np.int64)
    for row in range(X.shape[0]):
        for t in range(forest.n_trees):
            out[row, t] = plain(X, row, forest.node_offset[t], forest.feature, forest.threshold, forest.left,
                                forest.right, forest.missing_left, table, categorical.offset, categorical.words,
                                categorical.out_left)
    return out
