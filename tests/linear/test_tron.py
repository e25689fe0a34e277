"""The solver on its own: a quadratic with a known minimiser, both globalisations, stopping and history."""

import sys

import numpy as np
import pytest
import scipy.optimize

from dtlab.linear import LOSSES, L2Objective
from dtlab.linear._row_blocks import NumbaCsrRows

tron_module = sys.modules["dtlab.linear.tron"]
tron = tron_module.tron


class Quadratic:
    """f(w) = 1/2 w.A w - b.w, with the objective protocol (no ``ops``: the solver's xp fallback)."""

    xp = np

    def __init__(self, A, b):
        self.A, self.b, self.n_features = A, b, len(b)
        self.seconds = {"Xw": 0.0, "XTu": 0.0, "Hv": 0.0}

    def fun(self, w):
        self.w = w
        return float(0.5 * w @ self.A @ w - self.b @ w)

    def grad(self, w):
        return self.A @ w - self.b

    def hv(self, s):
        return self.A @ s

    def diag(self):
        return np.diag(self.A).copy()

    def line_prepare(self, w, s):
        self.s = s
        return float(w @ s), float(s @ s)

    def line_fun(self, alpha, wTs, sTs):
        return self.fun(self.w + alpha * self.s)

    def line_accept(self, alpha, wTs, sTs):
        pass


@pytest.fixture
def quadratic():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((12, 12))
    return Quadratic(M @ M.T + np.eye(12), rng.standard_normal(12))


@pytest.mark.parametrize("method", ["trust_region", "line_search"])
def test_quadratic_minimiser(method, quadratic):
    res = tron(quadratic, eps=1e-6, method=method)
    assert res.converged and res.message == "converged", res.message
    assert res.grad_norm <= 1e-6 * res.grad_norm0
    np.testing.assert_allclose(res.w, np.linalg.solve(quadratic.A, quadratic.b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_both_globalisations_reach_the_optimum(loss, small_problem):
    X, y = small_problem

    def objective():
        return L2Objective([LOSSES[loss](NumbaCsrRows(X), y, 3.0)], np)

    ref = objective()
    best = scipy.optimize.minimize(lambda w: ref.fun(w), np.zeros(X.shape[1]),
                                   jac=lambda w: (ref.fun(w), ref.grad(w))[1], method="L-BFGS-B",
                                   options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10_000})
    for method in ("trust_region", "line_search"):
        res = tron(objective(), eps=1e-8, method=method)
        assert res.converged
        assert res.fun == pytest.approx(best.fun, rel=1e-9)
        assert res.fun <= best.fun + 1e-9 * abs(best.fun)


def test_history_and_counts(small_problem):
    X, y = small_problem
    res = tron(L2Objective([LOSSES["logistic"](NumbaCsrRows(X), y, 3.0)], np), eps=1e-6)
    h = res.history
    assert len(h["iter"]) == res.n_iter + 1 and h["iter"][0] == 0
    assert sum(h["cg_iter"]) == res.n_cg
    assert h["grad_norm"][0] == res.grad_norm0 and h["grad_norm"][-1] == res.grad_norm
    accepted = np.array(h["accepted"])
    assert np.all(np.diff(np.array(h["objective"])[accepted]) <= 0)  # accepted steps never increase f
    assert all(np.isfinite(h["delta"]))
    assert np.all(np.diff(h["t_Hv"]) >= 0)


def test_max_iter_and_start_point(small_problem):
    X, y = small_problem
    make = lambda: L2Objective([LOSSES["logistic"](NumbaCsrRows(X), y, 3.0)], np)  # noqa: E731
    res = tron(make(), eps=1e-12, max_iter=1)
    assert not res.converged and res.message == "max_iter reached"
    assert sum(res.history["accepted"][1:]) == 1
    full = tron(make(), eps=1e-8)
    warm = tron(make(), w0=full.w, eps=1e-8)
    assert warm.n_iter == 0 and warm.converged and warm.fun == pytest.approx(full.fun, rel=1e-14)


def test_verbose_lines_like_liblinear(small_problem, capsys):
    X, y = small_problem
    lines = []
    tron(L2Objective([LOSSES["squared_hinge"](NumbaCsrRows(X), y, 1.0)], np), eps=0.01, verbose=True,
         log=lines.append)
    assert lines[0].startswith("init f ") and lines[1].startswith("iter  1 act ")
    tron(L2Objective([LOSSES["squared_hinge"](NumbaCsrRows(X), y, 1.0)], np), eps=0.01, method="line_search",
         verbose=True)
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("iter  1 f ") and "step_size" in out[1]


def test_bad_method_and_non_finite_start(quadratic):
    with pytest.raises(ValueError, match="method must be one of"):
        tron(quadratic, method="bfgs")
    quadratic.b = np.full(12, np.inf)
    with np.errstate(invalid="ignore"), pytest.raises(FloatingPointError, match="not finite"):
        tron(quadratic)


def test_constants_are_liblinears():
    assert (tron_module.ETA0, tron_module.ETA1, tron_module.ETA2) == (1e-4, 0.25, 0.75)
    assert (tron_module.SIGMA1, tron_module.SIGMA2, tron_module.SIGMA3) == (0.25, 0.5, 4.0)
    assert tron_module.DEFAULT_EPS_CG == {"trust_region": 0.1, "line_search": 0.5}
