"""A FlatTree as text, in the format of :func:`sklearn.tree.export_text`.

Written for any :class:`~dtlab.trees.FlatTree` (a GDT tree, a greedy tree, an
imported one), so that a tree reads the same whichever estimator grew it and
a user of scikit-learn recognises the layout: the same lines, character for
character, as scikit-learn prints for its own tree (tested on trees imported
from scikit-learn).
"""

from __future__ import annotations

from io import StringIO
from typing import Any, Sequence

import numpy as np


def _subtree_depth(tree, node: int) -> int:
    """Levels of the subtree under ``node`` (1 for a leaf), scikit-learn's ``_compute_depth``."""
    depth = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        depth = max(depth, d)
        if tree.left[n] >= 0:
            stack.append((int(tree.left[n]), d + 1))
            stack.append((int(tree.right[n]), d + 1))
    return depth


def export_text(tree, *, feature_names: Sequence[str] | None = None, class_names: Sequence[Any] | None = None,
                max_depth: int = 10, spacing: int = 3, decimals: int = 2, show_weights: bool = False) -> str:
    """The rules of a tree as indented text, as :func:`sklearn.tree.export_text` writes them.

    Parameters
    ----------
    tree : FlatTree
    feature_names : sequence of str of length n_features, optional
        Default ``feature_0``, ``feature_1``, ...
    class_names : sequence of length n_classes, optional
        Default ``tree.classes`` (classification).
    max_depth : int >= 0, default=10
        Levels written; deeper branches become "truncated branch of depth d".
    spacing : int >= 1, default=3
    decimals : int >= 0, default=2
    show_weights : bool, default=False
        Write each classification leaf's training class counts (weights) too.

    Returns
    -------
    str
    """
    if feature_names is not None and len(feature_names) != tree.n_features:
        raise ValueError(f"feature_names must contain {tree.n_features} elements, got {len(feature_names)}")
    names = list(feature_names) if feature_names is not None else [f"feature_{i}" for i in range(tree.n_features)]
    classification = tree.task == "classification"
    if classification:
        classes = tree.classes if tree.classes is not None else np.arange(tree.n_outputs)
        if class_names is not None:
            if len(class_names) != len(classes):
                raise ValueError(f"class_names must contain {len(classes)} elements, got {len(class_names)}")
            classes = class_names
    report = StringIO()

    def leaf(node: int, indent: str) -> None:
        value = np.asarray(tree.value[node], dtype=np.float64)
        if classification:
            text = ""
            if show_weights:
                text = "[" + ", ".join(f"{v:.{decimals}f}" for v in value) + "]"
                report.write(f"{indent} weights: {text} class: {classes[int(np.argmax(value))]}\n")
            else:
                report.write(f"{indent} class: {classes[int(np.argmax(value))]}\n")
        else:
            report.write(f"{indent} value: [" + ", ".join(f"{v:.{decimals}f}" for v in value) + "]\n")

    def recurse(node: int, depth: int) -> None:
        indent = ("|" + " " * spacing) * depth
        indent = indent[:-spacing] + "-" * spacing
        if depth <= max_depth + 1:
            if tree.left[node] >= 0:
                name = names[int(tree.feature[node])]
                threshold = f"{float(tree.threshold[node]):.{decimals}f}"
                report.write(f"{indent} {name} <= {threshold}\n")
                recurse(int(tree.left[node]), depth + 1)
                report.write(f"{indent} {name} >  {threshold}\n")
                recurse(int(tree.right[node]), depth + 1)
            else:
                leaf(node, indent)
        elif _subtree_depth(tree, node) == 1:
            leaf(node, indent)
        else:
            report.write(f"{indent} truncated branch of depth {_subtree_depth(tree, node)}\n")

    recurse(0, 1)
    return report.getvalue()
