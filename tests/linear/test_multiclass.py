"""One-vs-rest TRON and class weights against LIBLINEAR itself (``-s 0`` / ``-s 2``, ``-wi``).

LIBLINEAR trains one problem per class for more than two classes (its rows grouped by class, the class's own
rows weighted by ``-wi``, the rest by ``C``); dtlab does the same, so on one thread with the line-search solver
the weights are LIBLINEAR's to rounding.  With ``-wi`` on two classes each side gets its own weight; the
positive and negative rows are then summed as two blocks (the kernels take one C per block), an order of
additions that differs from LIBLINEAR's by rounding only.
"""

import functools

import numpy as np
import pytest
import scipy.sparse
from sklearn.datasets import load_digits, load_iris

from dtlab.linear import TronLinearSVC, TronLogisticRegression
from dtlab.linear._fitting import binary_problems, liblinear_class_order
from workbench.linear.peers import objective_value

ESTIMATORS = {"logistic": TronLogisticRegression, "squared_hinge": TronLinearSVC}
FLAGS = {"logistic": 0, "squared_hinge": 2}


@functools.lru_cache(maxsize=None)
def dataset(name):
    if name == "iris":
        d = load_iris()
        return scipy.sparse.csr_matrix(d.data), d.target
    if name == "digits":
        d = load_digits()
        return scipy.sparse.csr_matrix(d.data / 16.0), d.target
    rng = np.random.default_rng(5)  # sparse, 4 classes, labels not in first-seen order
    X = scipy.sparse.random(500, 60, density=0.1, random_state=6, format="csr")
    scores = X @ rng.standard_normal((60, 4)) + 0.2 * rng.standard_normal((500, 4))
    return X, np.array([7, 2, 5, 3])[scores.argmax(axis=1)]


def liblinear(X, y, loss, C, eps, bias=False, weights=None):
    """LIBLINEAR's weights per class, rows in sorted-label order: (coef (K, d), intercept (K,))."""
    from liblinear.liblinearutil import train

    options = f"-s {FLAGS[loss]} -c {C!r} -e {eps!r} -q" + (" -B 1" if bias else "")
    for label, w in (weights or {}).items():
        options += f" -w{label} {w!r}"
    model = train(np.asarray(y, dtype=np.float64), scipy.sparse.csr_matrix(X), options)
    labels = model.get_labels()
    n_features = X.shape[1]
    coef, intercept = [], []
    for label in sorted(labels):
        k = labels.index(label)
        coef.append([model.get_decfun_coef(j + 1, k) for j in range(n_features)])
        intercept.append(model.get_decfun_bias(k) if bias else 0.0)
    return np.array(coef), np.array(intercept)


def test_row_order_and_problems_are_liblinears():
    codes = np.array([2, 0, 2, 1, 0, 1])  # first seen: 2, 0, 1
    np.testing.assert_array_equal(liblinear_class_order(codes, 3), [0, 2, 1, 4, 3, 5])
    problems = list(binary_problems(codes, 3, 4.0, np.array([1.0, 2.0, 0.5])))
    assert [p[1] for p in problems] == [(4.0, 4.0), (8.0, 4.0), (2.0, 4.0)]  # -wi weighs the class's own rows
    np.testing.assert_array_equal(problems[1][0], np.where(codes == 1, 1.0, -1.0))
    (y, costs, order), = binary_problems(np.array([1, 0, 1]), 2, 4.0, np.array([3.0, 0.5]))
    assert costs == (2.0, 12.0) and order is None and list(y) == [1.0, -1.0, 1.0]


@pytest.mark.parametrize("loss", list(ESTIMATORS))
@pytest.mark.parametrize("name", ["iris", "digits", "sparse4"])
@pytest.mark.parametrize("bias", [False, True])
def test_one_vs_rest_weights_are_liblinears(loss, name, bias):
    pytest.importorskip("liblinear")
    X, y = dataset(name)
    coef, intercept = liblinear(X, y, loss, 4.0, 0.01, bias)
    est = ESTIMATORS[loss](C=4.0, tol=0.01, fit_intercept=bias, solver="newton", backend="cpu", n_jobs=1).fit(X, y)
    classes = np.unique(y)
    np.testing.assert_array_equal(est.classes_, classes)
    assert est.coef_.shape == (len(classes), X.shape[1]) and est.intercept_.shape == (len(classes),)
    np.testing.assert_allclose(est.coef_, coef, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.intercept_, intercept, rtol=1e-9, atol=1e-12)
    assert est.objective_.shape == (len(classes),) and len(est.history_) == len(classes)
    # LIBLINEAR's predict: the largest decision value
    np.testing.assert_array_equal(est.predict(X), classes[np.argmax(X @ coef.T + intercept, axis=1)])


@pytest.mark.parametrize("loss", list(ESTIMATORS))
def test_trust_region_threads_and_gpu_path_reach_liblinears_optimum(loss, monkeypatch):
    """Other solvers and orders of additions, converged tightly: each one-vs-rest objective within 1e-6 of
    LIBLINEAR's (at -e 1e-4 the stopping points themselves differ by up to 1e-5 on this set)."""
    pytest.importorskip("liblinear")

    from dtlab.linear import _products_cpu

    monkeypatch.setattr(_products_cpu, "PARALLEL_MIN_WORK", 0)
    X, y = dataset("digits")
    coef, _ = liblinear(X, y, loss, 4.0, 1e-7)
    f_ref = np.array([objective_value(X, np.where(y == c, 1.0, -1.0), w, 0.0, 4.0, loss)
                      for c, w in zip(np.unique(y), coef)])
    for kw in (dict(solver="tron", backend="cpu", n_jobs=2), dict(solver="newton", backend="cuda"),
               dict(solver="newton", backend="cpu", n_jobs=1, X=X.toarray())):
        Xin = kw.pop("X", X)
        est = ESTIMATORS[loss](C=4.0, tol=1e-7, fit_intercept=False, **kw).fit(Xin, y)  # LIBLINEAR without -B
        np.testing.assert_allclose(est.objective_, f_ref, rtol=1e-6)


@pytest.mark.parametrize("loss", list(ESTIMATORS))
@pytest.mark.parametrize("name", ["sparse4", "binary"])
def test_class_weights_are_liblinears(loss, name):
    pytest.importorskip("liblinear")
    X, y = dataset("sparse4")
    if name == "binary":
        y = np.where(y == 7, 1, 0)
        weights = {0: 0.5, 1: 3.0}
    else:
        weights = {2: 3.0, 5: 0.25}
    coef, intercept = liblinear(X, y, loss, 2.0, 1e-5, True, weights)
    est = ESTIMATORS[loss](C=2.0, tol=1e-5, fit_intercept=True, solver="newton", class_weight=weights,
                           backend="cpu", n_jobs=1).fit(X, y)
    if name == "binary":  # LIBLINEAR decides for its first label (1 here); dtlab for classes_[1] = 1 too
        coef, intercept = coef[1:], intercept[1:]
    np.testing.assert_allclose(est.coef_, coef, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(est.intercept_, intercept, rtol=1e-5, atol=1e-7)
    unweighted = ESTIMATORS[loss](C=2.0, tol=1e-5, fit_intercept=True, solver="newton").fit(X, y)
    assert not np.allclose(unweighted.coef_, est.coef_, rtol=1e-3)  # the weights changed the model
    gpu = ESTIMATORS[loss](C=2.0, tol=1e-5, fit_intercept=True, solver="newton", class_weight=weights,
                           backend="cuda").fit(X, y)
    np.testing.assert_allclose(gpu.coef_, est.coef_, rtol=1e-5, atol=1e-7)


def test_balanced_class_weight_is_sklearns_formula():
    X, y = dataset("sparse4")
    counts = {c: np.count_nonzero(y == c) for c in np.unique(y)}
    explicit = {c: len(y) / (4 * n) for c, n in counts.items()}
    a = TronLinearSVC(class_weight="balanced", backend="cpu").fit(X, y)
    b = TronLinearSVC(class_weight=explicit, backend="cpu").fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("bad, error", [({9: 1.0}, "not in y"), ({2: -1.0}, "must be >"), ({2: np.nan}, "finite"),
                                        ("auto", "must be None, 'balanced' or a dict")])
def test_bad_class_weight(bad, error):
    X, y = dataset("sparse4")
    with pytest.raises((ValueError, TypeError), match=error):
        TronLogisticRegression(class_weight=bad).fit(X, y)


def test_multiclass_probabilities_decisions_and_labels():
    X, y = dataset("iris")
    labels = np.array(["setosa", "versicolor", "virginica"], dtype=object)[y]
    est = TronLogisticRegression(C=10.0, backend="cpu").fit(X, labels)
    d = est.decision_function(X)
    assert d.shape == (150, 3)
    np.testing.assert_allclose(d, X @ est.coef_.T + est.intercept_, rtol=1e-12)
    proba = est.predict_proba(X)
    sig = 1.0 / (1.0 + np.exp(-d))
    np.testing.assert_allclose(proba, sig / sig.sum(axis=1, keepdims=True), rtol=1e-12)  # LIBLINEAR's rule
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), proba, rtol=1e-12)
    assert list(est.predict(X[:3])) == ["setosa"] * 3 and est.score(X, labels) > 0.9
    np.testing.assert_array_equal(est.predict(X), est.classes_[proba.argmax(axis=1)])
