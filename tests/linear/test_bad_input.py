"""Bad input: a clear error or a well-defined model, never a NaN model."""

import numpy as np
import pytest
import scipy.sparse

from dtlab.linear import TronLinearSVC, TronLogisticRegression

ESTIMATORS = [TronLogisticRegression, TronLinearSVC]


@pytest.fixture
def Xy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    return X, np.where(X[:, 0] > 0, 1, -1)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_one_class(cls, Xy):
    X, _ = Xy
    with pytest.raises(ValueError, match="only one class"):
        cls().fit(X, np.ones(60))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_more_than_two_classes_and_a_continuous_target(cls, Xy):
    X, _ = Xy
    est = cls().fit(X, np.arange(60) % 3)  # one against the rest per class (tests/linear/test_multiclass.py)
    assert est.coef_.shape == (3, 5) and list(est.classes_) == [0, 1, 2]
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        cls().fit(X, np.linspace(0, 1, 60))


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf(cls, bad, Xy):
    X, y = Xy
    Xb = X.copy()
    Xb[3, 2] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        cls().fit(Xb, y)
    with pytest.raises(ValueError, match="NaN or inf"):
        cls().fit(scipy.sparse.csr_matrix(Xb), y)
    yb = y.astype(float)
    yb[0] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        cls().fit(X, yb)
    est = cls().fit(X, y)
    with pytest.raises(ValueError, match="NaN or inf"):
        est.predict(Xb)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("C", [0, -1.0, 0.0])
def test_non_positive_C(cls, C, Xy):
    with pytest.raises(ValueError, match="C must be > 0"):
        cls(C=C).fit(*Xy)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("params, error", [
    (dict(C=np.nan), TypeError), (dict(C="1"), TypeError), (dict(tol=0.0), ValueError), (dict(tol=-1), ValueError),
    (dict(max_iter=0), ValueError), (dict(max_iter=2.5), TypeError), (dict(solver="lbfgs"), ValueError),
    (dict(backend="gpu"), ValueError), (dict(placement="host"), ValueError), (dict(n_jobs=0), ValueError),
    (dict(fit_intercept="yes"), TypeError), (dict(device_memory=-5), ValueError),
    (dict(placement="mixed", backend="cpu"), ValueError)])
def test_bad_parameters(cls, params, error, Xy):
    with pytest.raises(error):
        cls(**params).fit(*Xy)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_shapes_that_do_not_match(cls, Xy):
    X, y = Xy
    with pytest.raises(ValueError, match="X has 60 rows but y has 59"):
        cls().fit(X, y[:-1])
    with pytest.raises(ValueError, match="2D"):
        cls().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="0 feature"):
        cls().fit(np.empty((60, 0)), y)
    with pytest.raises(ValueError, match="y must be 1-D"):
        cls().fit(X, np.stack([y, y, y], axis=1))
    est = cls().fit(X, y)
    with pytest.raises(ValueError, match="X has 4 features, but .* is expecting 5"):
        est.predict(X[:, :4])
    with pytest.raises(ValueError, match="requires y"):
        cls().fit(X, None)


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_empty_rows_and_columns_are_allowed(cls, fit_intercept, Xy):
    X, y = Xy
    X = X.copy()
    X[:, 1] = 0.0      # an empty column: its weight is exactly 0 (the regulariser alone)
    X[10:20] = 0.0     # empty rows: a constant loss term (with y they push only the intercept)
    for Xin in (X, scipy.sparse.csr_matrix(X)):
        est = cls(fit_intercept=fit_intercept).fit(Xin, y)
        assert np.all(np.isfinite(est.coef_)) and np.isfinite(est.objective_)
        assert est.coef_[0, 1] == 0.0
    all_empty = cls(fit_intercept=fit_intercept).fit(scipy.sparse.csr_matrix((60, 5)), y)
    np.testing.assert_array_equal(all_empty.coef_, 0.0)
    assert np.isfinite(all_empty.objective_)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_huge_values_give_a_finite_model_or_a_clear_error(cls, Xy):
    X, y = Xy
    est = cls().fit(X * 1e100, y)  # large but representable: a finite model
    assert np.all(np.isfinite(est.coef_)) and np.isfinite(est.objective_)
    for scale in (1e160, 1e300):  # squares overflow float64
        for Xin in (X * scale, scipy.sparse.csr_matrix(X * scale)):
            with np.errstate(over="ignore"), pytest.raises(FloatingPointError, match="scale them"):
                cls().fit(Xin, y)


def test_a_single_row_per_class_and_duplicates():
    X = scipy.sparse.csr_matrix((np.array([1.0, 2.0, 3.0]), (np.array([0, 0, 1]), np.array([0, 0, 1]))),
                                shape=(2, 2))  # duplicate entries at (0, 0): summed, as scipy does
    for cls in ESTIMATORS:
        est = cls(C=1.0).fit(X, ["a", "b"])
        assert np.all(np.isfinite(est.coef_))
        assert list(est.predict(X.toarray())) == ["a", "b"]
