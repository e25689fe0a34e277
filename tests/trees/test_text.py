"""export_text of a FlatTree: scikit-learn's text, character for character, on trees imported from scikit-learn."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.tree import export_text as sk_export_text

from dtlab.trees import FlatTree
from dtlab.trees.text import export_text


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    return X, y


@pytest.mark.parametrize("kwargs", [{}, dict(max_depth=2), dict(decimals=4, spacing=2), dict(show_weights=True),
                                    dict(feature_names=["age", "bmi", "hba1c"], max_depth=1)])
def test_classifier_text_is_sklearns(data, kwargs):
    X, y = data
    sk = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    assert export_text(FlatTree.from_sklearn(sk), **kwargs) == sk_export_text(sk, **kwargs)


def test_class_names_and_regression_text_are_sklearns(data):
    X, y = data
    sk = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, np.array(["a", "b", "c"])[y])
    assert export_text(FlatTree.from_sklearn(sk)) == sk_export_text(sk)
    assert export_text(FlatTree.from_sklearn(sk), class_names=["x", "y", "z"]) == \
        sk_export_text(sk, class_names=["x", "y", "z"])
    reg = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, X[:, 0] * 2 + y)
    assert export_text(FlatTree.from_sklearn(reg), max_depth=2) == sk_export_text(reg, max_depth=2)


def test_wrong_names_are_clear_errors(data):
    X, y = data
    tree = FlatTree.from_sklearn(DecisionTreeClassifier(max_depth=2).fit(X, y))
    with pytest.raises(ValueError, match="feature_names must contain 3 elements, got 2"):
        export_text(tree, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="class_names must contain 3 elements"):
        export_text(tree, class_names=["a"])
