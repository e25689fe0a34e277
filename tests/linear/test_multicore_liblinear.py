"""The whole-machine LIBLINEAR of the benchmarks: liblinear-multicore (``make peers`` builds it into
``.peers/liblinear-multicore``; ``make test`` builds it first), run as the benchmark runs it -- in a process of its
own (:class:`workbench.linear.peers.Liblinear` with ``threads``) -- on a small problem, against single-core LIBLINEAR
(``liblinear-official``) and dtlab's own solver.

The multi-core release splits the sums of the objective, gradient and Hessian products over threads: other
orders of additions than the single-core one, so the two agree to rounding, not bit for bit.  dtlab's line-search
Newton on one thread retraces single-core LIBLINEAR (tests/linear/test_vs_liblinear.py).
"""

import numpy as np
import pytest

from dtlab.linear import TronLinearSVC, TronLogisticRegression
from dtlab.linear.synthetic import make_sparse_classification
from workbench.linear.peers import Liblinear, objective_value

pytest.importorskip("liblinear")

ESTIMATORS = {"logistic": TronLogisticRegression, "squared_hinge": TronLinearSVC}
C, EPS = 4.0, 0.01


@pytest.fixture(scope="module")
def problem():
    return make_sparse_classification(3_000, 400, nnz_per_row=8, seed=2)


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("loss", list(ESTIMATORS))
def test_multicore_liblinear_solves_what_single_core_liblinear_and_dtlab_solve(liblinear_multicore_built, problem,
                                                                              loss, bias):
    X, y = problem
    single = Liblinear(X, y, bias).fit(loss, C, EPS)
    with Liblinear(X, y, bias, threads=2) as multi_core:
        multi = multi_core.fit(loss, C, EPS)
        assert multi_core.seconds(loss, C, EPS) > 0  # the benchmark's timed call
        assert multi_core.worker.proc.poll() is None  # its own process, still serving
    assert multi_core.worker.proc.poll() is not None  # ended by the context manager
    assert multi.version == single.version >= 250  # 2.50, the release make peers pins
    # it ran: its own log of Newton iterations, parsed as single-core LIBLINEAR's
    assert multi.n_iter >= 2 and len(multi.objective_per_iter) == multi.n_iter
    assert abs(multi.n_iter - single.n_iter) <= 1
    assert multi.objective == pytest.approx(objective_value(X, multi_core.y_pm, multi.coef, multi.intercept, C, loss))
    assert multi.objective == pytest.approx(single.objective, rel=1e-9)
    np.testing.assert_allclose(multi.coef, single.coef, rtol=1e-6, atol=1e-9)
    assert multi.intercept == pytest.approx(single.intercept, rel=1e-6, abs=1e-9)
    assert (multi.intercept != 0.0) == bias
    # dtlab's TRON objective (the line-search Newton of LIBLINEAR 2.4x, one thread) at the same -c and -e
    est = ESTIMATORS[loss](C=C, tol=EPS, fit_intercept=bias, solver="newton", backend="cpu", n_jobs=1).fit(X, y)
    assert float(est.objective_) == pytest.approx(multi.objective, rel=1e-9)
    np.testing.assert_allclose(est.coef_.ravel(), multi.coef, rtol=1e-6, atol=1e-9)
    assert float(est.intercept_[0]) == pytest.approx(multi.intercept, rel=1e-6, abs=1e-9)


def test_the_multicore_options_are_its_own(liblinear_multicore_built, problem):
    """``-m threads`` is liblinear-multicore's option: single-core LIBLINEAR refuses it, so the process the
    benchmark starts runs the multi-core build, not the venv's LIBLINEAR."""
    from liblinear import liblinear as official

    with pytest.raises(ValueError, match="Wrong options"):
        official.parameter("-s 0 -m 2")
    X, y = problem
    with Liblinear(X, y, threads=2) as multi_core:
        assert multi_core._options("logistic", C, EPS).endswith(" -m 2")
        assert multi_core.fit("logistic", C, EPS).n_iter >= 1
