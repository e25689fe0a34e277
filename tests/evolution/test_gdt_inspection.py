"""GDTClassifier.export_text, plot_tree and feature_importances_ (dtlab.evolution.inspection)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

from dtlab.datasets import chess3x3  # noqa: E402
from dtlab.evolution import GDTClassifier  # noqa: E402
from dtlab.evolution.inspection import gini_importances, node_class_counts  # noqa: E402
from dtlab.trees import FlatTree  # noqa: E402
from dtlab.trees.text import export_text  # noqa: E402


@pytest.fixture(scope="module")
def chess_fit():
    """Chess3x3 with two noise attributes: only x0 and x1 carry the class."""
    X, y = chess3x3(1500, noise_attrs=2, seed=0)
    frame = pd.DataFrame(X, columns=["row", "col", "noise_a", "noise_b"])
    clf = GDTClassifier(population_size=40, max_generations=300, max_stagnation=150, random_state=0).fit(frame, y)
    return clf, frame, y


def test_importances_are_sklearns_definition_on_an_sklearn_tree():
    # the leaves' counts alone give scikit-learn's Gini importances (GDT trees keep only the leaves' counts)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] * X[:, 0] > 0.3)
    sk = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, y)
    tree = FlatTree.from_sklearn(sk)
    np.testing.assert_allclose(gini_importances(tree, 4), sk.feature_importances_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(node_class_counts(tree), tree.value, rtol=1e-12)


def test_chess_importance_lies_on_the_two_board_attributes(chess_fit):
    clf, frame, y = chess_fit
    assert clf.score(frame, y) > 0.97
    imp = clf.feature_importances_
    assert imp.shape == (4,) and imp.sum() == pytest.approx(1.0) and np.all(imp >= 0)
    assert imp[0] > 0.2 and imp[1] > 0.2  # both board attributes are tested
    assert imp[2:].sum() < 0.02  # the noise attributes (if tested at all) decrease the impurity by nearly nothing


def test_export_text_names_the_dataframe_columns(chess_fit):
    clf, frame, y = chess_fit
    text = clf.export_text()
    assert text == export_text(clf.tree_, feature_names=list(frame.columns), class_names=list(clf.classes_))
    assert "|--- row <= " in text and "class: " in text
    assert text.count("class: ") == clf.tree_.n_leaves
    np.testing.assert_array_equal(clf.feature_names_in_, frame.columns)
    assert "|--- x_0 <= " in clf.export_text(feature_names=["x_0", "x_1", "x_2", "x_3"])
    # refit on an array: the names are forgotten, generic ones are used
    X, y2 = chess3x3(300, seed=2)
    small = GDTClassifier(population_size=8, max_generations=5, random_state=0).fit(frame.to_numpy(), y)
    assert not hasattr(small, "feature_names_in_") and "feature_0" in small.export_text()


def test_plot_tree_draws_every_node(chess_fit):
    clf, _, _ = chess_fit
    fig, ax = plt.subplots()
    assert clf.plot_tree(ax=ax) is fig
    assert len(ax.texts) == clf.tree_.n_nodes
    assert any(t.get_text().startswith("row <=") for t in ax.texts)
    new = clf.plot_tree()
    assert new is not fig and len(new.axes[0].texts) == clf.tree_.n_nodes
    plt.close("all")


def test_unfitted_inspection_raises_not_fitted():
    clf = GDTClassifier()
    for call in (clf.export_text, clf.plot_tree, lambda: clf.feature_importances_):
        with pytest.raises(NotFittedError):
            call()
