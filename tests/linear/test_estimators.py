"""TronLogisticRegression and TronLinearSVC: scikit-learn conventions, labels, attributes, threads."""

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator

from dtlab.linear import TronLinearSVC, TronLogisticRegression

ESTIMATORS = [TronLogisticRegression, TronLinearSVC]


#: Without the intercept (``fit_intercept=False``, LIBLINEAR's ``-B -1``) a model through the origin cannot put
#: the 87% of scikit-learn's centred blobs into the class weighted 1000 that check_class_weight_classifiers
#: asks for, whatever the weights.
THROUGH_THE_ORIGIN_FAILS = {"check_class_weight_classifiers": "fit_intercept=False (LIBLINEAR's -B -1): a model "
                            "through the origin splits centred data in half whatever the class weights"}


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_check_estimator(cls):
    """scikit-learn's estimator checks all pass with the defaults (the intercept, as scikit-learn's), the
    class-weight check included (array-API input is skipped by scikit-learn itself here;
    tests/test_sklearn_checks.py runs it)."""
    check_estimator(cls(backend="cpu"))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_check_estimator_without_intercept(cls):
    """Through the origin (LIBLINEAR's default model) every check passes but the class-weight one, which
    fails for the reason above."""
    results = check_estimator(cls(backend="cpu", fit_intercept=False), on_fail=None,
                              expected_failed_checks=THROUGH_THE_ORIGIN_FAILS)
    not_passed = [(r["check_name"], r["status"]) for r in results if r["status"] not in ("passed", "skipped")]
    assert not_passed == [("check_class_weight_classifiers", "xfail")]


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("labels", [(-1, 1), (0, 1), ("no", "yes"), (False, True), (3.5, -2.0)])
def test_labels_of_any_two_values(cls, labels, small_problem):
    X, y_pm = small_problem
    y = np.where(y_pm > 0, labels[1], labels[0]) if not isinstance(labels[0], str) else \
        np.where(y_pm > 0, labels[1], labels[0]).astype(object)
    est = cls(C=2.0, backend="cpu").fit(X, y)
    ref = cls(C=2.0, backend="cpu").fit(X, y_pm)
    assert list(est.classes_) == sorted(labels)
    positive = sorted(labels)[1]
    sign = 1.0 if positive == labels[1] else -1.0  # +1 is always the larger label
    np.testing.assert_allclose(est.coef_, sign * ref.coef_, rtol=1e-12, atol=1e-14)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-12)
    assert set(est.predict(X)) <= set(labels)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_attributes_and_shapes(cls, small_problem):
    X, y = small_problem
    est = cls(C=1.0, backend="cpu", n_jobs=1).fit(X, y)
    assert est.coef_.shape == (1, X.shape[1]) and est.coef_.dtype == np.float64
    assert est.intercept_.shape == (1,) and est.intercept_[0] != 0.0
    assert isinstance(est.n_iter_, int) and est.n_iter_ >= 1 and est.n_cg_iter_ >= est.n_iter_
    assert est.converged_ and est.n_features_in_ == X.shape[1]
    assert est.backend_ == "cpu" and est.n_threads_ == 1
    assert est.placement_["placement"] == "host" and est.placement_["format"] == "csr"
    h = est.history_
    assert {"objective", "grad_norm", "delta", "t_Xw", "t_XTu", "t_Hv"} <= set(h)
    assert len(h["objective"]) == est.n_iter_ + 1 and h["objective"][-1] == est.objective_
    np.testing.assert_allclose(est.decision_function(X), X @ est.coef_[0] + est.intercept_[0], rtol=1e-12)
    without = cls(C=1.0, fit_intercept=False, backend="cpu").fit(X, y)
    assert without.intercept_[0] == 0.0
    assert cls().fit_intercept is True  # the default, as scikit-learn's


def test_predict_proba_and_score(small_problem):
    X, y = small_problem
    est = TronLogisticRegression(C=1.0, backend="cpu").fit(X, y)
    proba = est.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.classes_[proba.argmax(axis=1)], est.predict(X))
    np.testing.assert_allclose(np.exp(est.predict_log_proba(X)), proba, rtol=1e-12)
    assert est.score(X, y) > 0.8
    assert not hasattr(TronLinearSVC(), "predict_proba")


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_dense_and_sparse_input_agree(cls, small_problem):
    X, y = small_problem
    sparse = cls(backend="cpu").fit(X, y)
    for Xin in (X.toarray(), scipy.sparse.csc_matrix(X), scipy.sparse.coo_array(X), X.toarray().tolist()):
        est = cls(backend="cpu").fit(Xin, y)
        assert est.objective_ == pytest.approx(sparse.objective_, rel=1e-12)
        np.testing.assert_allclose(est.predict(Xin), sparse.predict(X))


def test_truly_dense_data_uses_blas(small_problem):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 12))
    y = np.where(X @ rng.standard_normal(12) > 0, 1, -1)
    est = TronLogisticRegression(backend="cpu").fit(X, y)
    assert est.placement_["format"] == "dense"
    csr = TronLogisticRegression(backend="cpu").fit(scipy.sparse.csr_matrix(X), y)
    assert est.objective_ == pytest.approx(csr.objective_, rel=1e-9)


def test_threads_give_the_same_model(small_problem, monkeypatch):

    from dtlab.linear import _products_cpu

    monkeypatch.setattr(_products_cpu, "PARALLEL_MIN_WORK", 0)
    X, y = small_problem
    one = TronLinearSVC(n_jobs=1, backend="cpu").fit(X, y)
    two = TronLinearSVC(n_jobs=2, backend="cpu").fit(X, y)
    assert two.n_threads_ == min(2, __import__("numba").config.NUMBA_NUM_THREADS)
    assert one.objective_ == pytest.approx(two.objective_, rel=1e-12)
    assert __import__("numba").get_num_threads() == __import__("numba").config.NUMBA_NUM_THREADS  # restored


def test_solvers_and_convergence_warning(small_problem):
    X, y = small_problem
    tron = TronLogisticRegression(C=10.0, tol=1e-6, backend="cpu").fit(X, y)
    newton = TronLogisticRegression(C=10.0, tol=1e-6, solver="newton", backend="cpu").fit(X, y)
    assert tron.objective_ == pytest.approx(newton.objective_, rel=1e-8)
    assert np.isnan(newton.history_["delta"]).all() and np.isfinite(tron.history_["delta"]).all()
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        TronLogisticRegression(C=10.0, tol=1e-10, max_iter=1, backend="cpu").fit(X, y)


def test_verbose_prints_liblinear_style_lines(small_problem, capsys):
    X, y = small_problem
    TronLinearSVC(verbose=1, backend="cpu").fit(X, y)
    out = capsys.readouterr().out
    assert out.startswith("init f ") and "iter  1 act " in out


def test_clone_and_params():
    est = TronLinearSVC(C=3.0, tol=0.01, fit_intercept=False, n_jobs=1, placement="auto")
    params = clone(est).get_params()
    assert params["C"] == 3.0 and params["tol"] == 0.01 and params["fit_intercept"] is False
    assert {"max_iter", "backend", "n_jobs", "verbose", "solver", "placement", "device_memory"} <= set(params)


def test_import_needs_neither_cupy_nor_numba_cuda():
    code = ("import sys, dtlab.linear, workbench.linear.experiments\n"
            "print('numba.cuda' in sys.modules, 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "NUMBA_ENABLE_CUDASIM": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_cuda_without_a_gpu_is_a_clear_error():
    code = ("import numpy as np\nfrom dtlab.backend import cuda_status\nfrom dtlab.linear import TronLinearSVC\n"
            "if cuda_status()[0]: print('HAS-GPU')\nelse:\n"
            "    try:\n        TronLinearSVC(backend='cuda').fit(np.eye(4), [0, 1, 0, 1])\n"
            "    except RuntimeError as e: print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "NUMBA_ENABLE_CUDASIM": "0"}).stdout
    if "HAS-GPU" in out:
        pytest.skip("a real GPU is present")
    assert "ERR backend='cuda' is not available" in out
