"""Native categorical splits against one-hot encoding: the data and the comparison the boosting notebook draws.

A category whose effect on the label follows no order of its codes is what native splits are for: a split
sends any *set* of categories left (the categories ordered by ``G/H``, the best prefix taken), so one split
separates the "positive" categories from the others, where one-hot columns need a split per category.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def categorical_data(n_samples: int, n_categories: int = 24, seed: int = 0):
    """Rows with a pandas categorical column ``city`` (effect +-1.5 per category, in no order) and a numeric ``x``.

    Returns
    -------
    frame : pandas.DataFrame of shape (n_samples, 2): ``city`` (category dtype), ``x`` float64
    y : ndarray of shape (n_samples,), int64 in {0, 1}
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    effect = rng.choice([-1.5, 1.5], size=n_categories)
    codes = rng.integers(0, n_categories, size=n_samples)
    x = rng.normal(size=n_samples)
    margin = effect[codes] + x
    y = (rng.random(n_samples) < 1.0 / (1.0 + np.exp(-2.0 * margin))).astype(np.int64)
    names = np.array([f"c{i:02d}" for i in range(n_categories)])
    frame = pd.DataFrame({"city": pd.Categorical(names[codes], categories=names), "x": x})
    return frame, y


def _log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def categorical_vs_onehot(frame, y: np.ndarray, *, rounds: tuple[int, ...] = (1, 2, 5, 10, 20), max_depth: int = 2,
                          test_share: float = 0.3, seed: int = 0) -> list[dict[str, Any]]:
    """Test log loss of histogram GBDT with native categorical splits and with one-hot columns, per round count.

    Parameters
    ----------
    frame : pandas.DataFrame with category columns
    y : ndarray of shape (n_samples,), binary labels
    rounds : tuple of int
        Numbers of trees to fit (each a separate fit).
    max_depth : int
    test_share : float in (0, 1)
        The last ``test_share`` of the rows are held out.
    seed : int

    Returns
    -------
    list of dict
        ``encoding`` ("native" | "one-hot"), ``n_trees``, ``n_features`` (columns the model saw),
        ``test_log_loss``.
    """
    import pandas as pd

    from dtlab.boosting.estimators import GBDTClassifier

    onehot = pd.get_dummies(frame, dtype=np.float64)
    n_train = int(round(len(y) * (1 - test_share)))
    rows = []
    for encoding, data, categorical in (("native", frame, "auto"), ("one-hot", onehot, None)):
        train, test = data.iloc[:n_train], data.iloc[n_train:]
        for n_trees in rounds:
            model = GBDTClassifier(n_estimators=n_trees, max_depth=max_depth, split_method="hist",
                                   categorical_features=categorical, random_state=seed, backend="cpu")
            model.fit(train, y[:n_train])
            rows.append(dict(encoding=encoding, n_trees=n_trees, n_features=data.shape[1],
                             test_log_loss=_log_loss(y[n_train:], model.predict_proba(test)[:, 1])))
    return rows
