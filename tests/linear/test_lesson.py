"""Notebook 03's lesson module: the plain-NumPy TRON on two features, the PCIe byte model, the panel's
experiment and the lesson's figures, on tiny inputs."""

import numpy as np
import pytest

from dtlab.linear import TronLogisticRegression
from workbench.linear import lesson as L
from workbench.linear import plots


def _numeric_gradient(w, X, y, C, h=1e-6):
    return np.array([(L.logistic_objective(w + h * e, X, y, C) - L.logistic_objective(w - h * e, X, y, C)) / (2 * h)
                     for e in np.eye(len(w))])


def test_tiny_problem_is_two_features_and_both_classes():
    X, y = L.tiny_problem(30, seed=3)
    assert X.shape == (30, 2) and X.dtype == np.float64
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert abs(np.corrcoef(X.T)[0, 1]) > 0.3  # correlated features: tilted contours


def test_gradient_and_hessian_match_finite_differences():
    X, y = L.tiny_problem(25, seed=1)
    w = np.array([0.3, -0.7])
    g, H = L.logistic_gradient_hessian(w, X, y, 2.0)
    assert np.allclose(g, _numeric_gradient(w, X, y, 2.0), atol=1e-5)
    g_numeric = np.array([(L.logistic_gradient_hessian(w + 1e-6 * e, X, y, 2.0)[0]
                           - L.logistic_gradient_hessian(w - 1e-6 * e, X, y, 2.0)[0]) / 2e-6 for e in np.eye(2)])
    assert np.allclose(H, g_numeric.T, atol=1e-4)
    assert np.all(np.linalg.eigvalsh(H) >= 1.0 - 1e-12)  # I + C X^T D X: at least the identity


def test_truncated_cg_reaches_the_newton_step_in_n_steps_or_stops_on_the_boundary():
    H = np.array([[3.0, 1.0], [1.0, 2.0]])
    g = np.array([1.0, -2.0])
    newton = -np.linalg.solve(H, g)
    path, clipped, products = L.truncated_cg(g, H, delta=10.0, eps_cg=1e-12)
    assert not clipped and products == 2 and np.allclose(path[-1], newton)
    assert np.allclose(path[0], 0.0)
    radius = 0.5 * np.linalg.norm(newton)
    path, clipped, _ = L.truncated_cg(g, H, delta=radius)
    assert clipped and np.isclose(np.linalg.norm(path[-1]), radius)
    assert all(np.linalg.norm(p) <= radius * (1 + 1e-12) for p in path)


def test_plain_tron_reaches_the_library_minimiser_from_zero_and_from_a_poor_start():
    X, y = L.tiny_problem(40, seed=0)
    library = TronLogisticRegression(C=4.0, tol=1e-10, fit_intercept=False, backend="cpu").fit(X, y).coef_[0]
    for kwargs in ({}, {"w0": (-3.0, 3.0), "delta0": 0.5}):
        records = L.plain_tron(X, y, 4.0, **kwargs)
        assert np.allclose(records[-1]["w_end"], library, rtol=1e-6, atol=1e-8)
        accepted = [r["f"] for r in records]
        assert all(b <= a for a, b in zip(accepted, accepted[1:]))  # f never rises between iterations


def test_plain_tron_records_clipping_rejection_and_radius_updates():
    X, y = L.tiny_problem(40, seed=0)
    records = L.plain_tron(X, y, 4.0, w0=(-3.0, 3.0), delta0=0.5)
    assert records[0]["clipped"] and records[0]["delta"] == 0.5
    rejected = [r for r in records if not r["accepted"]]
    assert rejected and all(r["ratio"] < L.ETA0 and r["radius"] == "shrinks" for r in rejected)
    for before, after in zip(records, records[1:]):
        assert after["delta"] == before["new_delta"]
        assert np.allclose(after["w"], before["w"] + before["step"] if before["accepted"] else before["w"])
    for r in records:
        assert np.linalg.norm(r["step"]) <= r["delta"] * (1 + 1e-9)
        g, H = L.logistic_gradient_hessian(r["w"], X, y, 4.0)
        s = r["step"]
        assert np.isclose(r["predicted"], -(g @ s + 0.5 * s @ H @ s))  # the quadratic model's decrease
        assert np.isclose(r["actual"], r["f"] - L.logistic_objective(r["w"] + s, X, y, 4.0))
        assert np.allclose(r["newton_point"], r["w"] - np.linalg.solve(H, g))
    table = L.tron_table(records)
    assert [row["iteration"] for row in table] == list(range(1, len(records) + 1))
    assert {row["step"] for row in table} == {"accepted", "rejected"}


def test_view_box_and_contour_grid():
    X, y = L.tiny_problem(20, seed=2)
    record = L.plain_tron(X, y, 1.0)[0]
    lo, hi = L.view_box(record)
    assert np.isclose(hi[0] - lo[0], hi[1] - lo[1]) and np.all(lo <= record["w"]) and np.all(record["w"] <= hi)
    grid = L.contour_grid(X, y, 1.0, lo, hi, n=7)
    assert grid["f"].shape == (7, 7)
    assert np.isclose(grid["f"][2, 5], L.logistic_objective(np.array([grid["w1"][5], grid["w2"][2]]), X, y, 1.0))


def test_pcie_bytes_by_hand_and_ordering():
    rows, features, nnz, k = 1_000, 100, 10_000, 3
    x_bytes = 12 * nnz + 8 * (rows + 1)
    products = 2 + 2 * k
    scalars = 8 * (5 + 3 * k)
    vectors = products * 8 * (rows + features)
    naive, resident, mixed, paper = (L.pcie_bytes(rows, features, nnz, k, d) for d in L.DESIGNS)
    assert naive == products * x_bytes + vectors + scalars
    assert resident == vectors + scalars
    assert mixed == 8 * features * (3 + 2 * k) + scalars
    assert paper == scalars
    assert naive > resident > mixed > paper
    # the paper's design and dtlab's mixed placement move the same bytes whatever the rows
    assert L.pcie_bytes(10 * rows, features, 10 * nnz, k, L.DESIGNS[3]) == paper
    assert L.pcie_bytes(10 * rows, features, 10 * nnz, k, L.DESIGNS[2]) == mixed
    with pytest.raises(ValueError):
        L.pcie_bytes(rows, features, nnz, k, "teleport")


def test_pcie_table_times_are_bytes_over_bandwidth_plus_latency():
    table = L.pcie_table([1_000, 10_000], 50, 5.0, 2.0, gb_per_s=10.0, copy_latency_s=1e-5)
    assert len(table) == 2 * len(L.DESIGNS)
    for r in table:
        assert r["nnz"] == 5 * r["rows"]
        assert np.isclose(r["ms"], 1e3 * (r["bytes"] / 1e10 + r["copies"] * 1e-5))
    assert L.pcie_copies(2.0, L.DESIGNS[0]) == 3 * 6 and L.pcie_copies(2.0, L.DESIGNS[3]) == 3 + 2


def test_convergence_and_threads_small():
    result = L.convergence_and_threads(1_000, 1.0, 1, repeats=1, seed=0)
    conv, timing = result["convergence"], result["timing"]
    assert result["n_samples"] == 1_000 and result["nnz"] > 0
    assert timing[0]["solver"] == "liblinear" and [r["threads"] for r in timing[1:]] == [1]
    for run in conv["runs"].values():
        assert run["grad_norm"][-1] <= conv["eps"] * conv["grad_norm0"] * 1.0001
    other = L.convergence_and_threads(500, 1.0, 1, repeats=1, seed=0)
    assert other["convergence"]["f_star"] != conv["f_star"]  # the rows change the curves' data
    fig = plots.plot_convergence_and_threads(result)
    assert len(fig.axes) == 3 and all(ax.lines for ax in fig.axes)


def test_lesson_figures_draw_curves():
    X, y = L.tiny_problem(40, seed=0)
    records = L.plain_tron(X, y, 4.0, w0=(-3.0, 3.0), delta0=0.5)
    grids = L.contour_grids(X, y, 4.0, records, n=20)
    assert len(grids) == len(records) and grids[0]["f"].shape == (20, 20)
    fig = plots.plot_tiny_tron(records, grids, minimiser=records[-1]["w_end"])
    assert sum(ax.get_visible() for ax in fig.axes) == min(len(records), 6)
    table = L.pcie_table([1_000, 10_000], 50, 5.0, 2.0, gb_per_s=10.0)
    fig = plots.plot_pcie(table, gb_per_s=10.0, copy_latency_s=1e-5, measured=[{"rows": 1_000, "ms": 1.0,
                                                                                "label": "x"}])
    assert len(fig.axes[0].lines) == len(L.DESIGNS) and len(fig.axes[1].lines) == len(L.DESIGNS) + 1
