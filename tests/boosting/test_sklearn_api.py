"""scikit-learn's estimator checks for the boosting estimators."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from dtlab.boosting import GBDTClassifier, GBDTRegressor


@parametrize_with_checks([GBDTRegressor(n_estimators=5, max_depth=3, backend="cpu"),
                          GBDTClassifier(n_estimators=5, max_depth=3, backend="cpu")])
def test_sklearn_compatible(estimator, check):
    check(estimator)
