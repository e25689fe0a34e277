"""scikit-learn's estimator checks for the greedy estimators: every one passes, none is expected to fail.

Both estimators take NaN (a direction learned per split, as scikit-learn's own trees) and say so in their
tags (``allow_nan``); inf is refused at fit and predict (tests/greedy/test_greedy_missing.py).
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor


@parametrize_with_checks([DecisionTreeRegressor(backend="cpu"), DecisionTreeClassifier(backend="cpu")])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_tags_say_nan_is_allowed():
    for est in (DecisionTreeRegressor(), DecisionTreeClassifier()):
        assert est.__sklearn_tags__().input_tags.allow_nan
