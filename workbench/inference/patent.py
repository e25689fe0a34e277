"""The example of JP5863426B2 (Fig. 1): a balanced tree of 16 leaves and the row that reaches class 9.

The patent prints identifiers with the leftmost leaf first and numbers the
classes from the right (the leftmost leaf is class 15), so the row that goes
left, right, right, left reaches the 7th leaf from the left, "00000010 00000000",
class 9.
"""

from __future__ import annotations

import numpy as np

from dtlab.trees import FlatTree


def patent_example() -> tuple[FlatTree, np.ndarray]:
    """The Fig. 1 tree (node at level d tests ``x[d] <= 0``; leaf k from the left predicts 15 - k) and its row.

    Returns
    -------
    tree : FlatTree, 15 decision nodes in heap order, 16 leaves
    x : ndarray (4,), float64, the row going left, right, right, left
    """
    n = 31
    feature = np.full(n, -1)
    left = np.full(n, -1)
    right = np.full(n, -1)
    value = np.zeros(n)
    for node in range(15):
        feature[node] = int(np.log2(node + 1))  # the level
        left[node], right[node] = 2 * node + 1, 2 * node + 2
    for k, node in enumerate(range(15, 31)):
        value[node] = 15 - k
    tree = FlatTree(feature=feature, threshold=np.zeros(n), left=left, right=right, value=value, n_features=4,
                    task="regression")
    return tree, np.array([-1.0, 1.0, 1.0, -1.0])
