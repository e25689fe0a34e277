"""The categorical-vs-one-hot comparison and the contribution plot of the boosting notebook."""

import numpy as np
import pytest

from dtlab.boosting import GBDTClassifier
from workbench.boosting import plots
from workbench.boosting.encodings import categorical_data, categorical_vs_onehot


def test_native_categorical_splits_beat_one_hot_at_small_depth():
    frame, y = categorical_data(3000, n_categories=24, seed=0)
    assert str(frame["city"].dtype) == "category" and set(np.unique(y)) == {0, 1}
    rows = categorical_vs_onehot(frame, y, rounds=(2, 10), max_depth=2)
    loss = {(r["encoding"], r["n_trees"]): r["test_log_loss"] for r in rows}
    assert {r["n_features"] for r in rows if r["encoding"] == "one-hot"} == {25}
    # one native split separates the categories by their effect; two-level one-hot trees cannot
    assert loss["native", 2] < loss["one-hot", 2] and loss["native", 10] < loss["one-hot", 10]
    fig = plots.plot_categorical_vs_onehot(rows)
    assert [line.get_label() for line in fig.axes[0].lines] == ["native (2 columns)", "one-hot (25 columns)"]


def test_contribution_plot_draws_each_row_and_sums_to_the_margin():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 12))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    model = GBDTClassifier(n_estimators=5, max_depth=3).fit(X, y)
    contributions = model.predict(X[:3], pred_contribs=True)
    np.testing.assert_allclose(contributions.sum(axis=1), model.decision_function(X[:3]), atol=1e-5)
    names = [f"f{i}" for i in range(12)]
    fig = plots.plot_contributions(contributions, names, top=5)
    assert len(fig.axes) == 3
    for row, ax in enumerate(fig.axes):
        widths = [p.get_width() for p in ax.patches]
        assert len(widths) == 7  # five features, "other", the bias
        assert sum(widths) == pytest.approx(contributions[row].sum())
        assert f"{contributions[row].sum():+.3f}" in ax.get_title()
    with pytest.raises(ValueError, match=r"shape \(n_rows, 13\)"):
        plots.plot_contributions(contributions[:, :-1], names)
