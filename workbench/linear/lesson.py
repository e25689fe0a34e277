"""The computations of notebook 03 as a lesson: TRON stepped on a 2-feature problem, the bytes a GPU port
moves over PCIe per Newton iteration, and the convergence and threads panel.

* :func:`tiny_problem` / :func:`plain_tron`: a small plain-NumPy TRON (Lin, Weng and Keerthi's trust-region
  Newton method, Euclidean trust region, no preconditioner) on a logistic problem of two features, recording
  every conjugate-gradient iterate, the step clipped at the trust-region boundary, the Newton point and the
  radius update of each outer iteration; the notebook draws it and checks that it reaches the minimiser of
  :class:`dtlab.linear.TronLogisticRegression`.
* :func:`pcie_bytes`: a model (not a measurement) of the bytes that cross PCIe per outer iteration for a
  naive GPU port that copies ``X`` for every product, for ``X`` resident but LIBLINEAR's vectors moved per
  product, for the paper's design (``X`` and every vector on the device, scalars only) and for dtlab's
  ``placement="mixed"`` (one ``n_features`` vector each way per product).
* :func:`convergence_and_threads`: the predict-then-run panel's experiment: gradient norm and objective gap
  per Newton iteration of dtlab and LIBLINEAR on synthetic sparse data, and fit time against threads.

Only the library's public API is used (:mod:`dtlab.linear`, :mod:`dtlab.linear.synthetic`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

# LIBLINEAR's trust-region constants (tron.cpp): acceptance and radius-update thresholds, radius factors.
ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0

#: Bytes per number crossing PCIe: float64 values and vectors, int32 column indices, int64 row pointers.
VALUE_BYTES, INDEX_BYTES, POINTER_BYTES = 8, 4, 8
#: Seconds one copy between host and device costs whatever its size (launch and synchronisation), stated.
COPY_LATENCY_S = 10e-6
#: The designs :func:`pcie_bytes` models, in the order they are drawn.
DESIGNS = ("naive: X copied per product", "X resident, vectors per product", "dtlab mixed: feature vectors",
           "paper's design: scalars only")


# ------------------------------------------------------------------ the tiny problem
def tiny_problem(n_samples: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A logistic problem of two correlated features (elongated contours), labels from a noisy line.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), float64 in {-1, +1}
    """
    rng = np.random.default_rng(seed)
    cov = np.array([[1.0, 0.7], [0.7, 1.0]])
    X = rng.multivariate_normal(np.zeros(2), cov, size=n_samples)
    margin = X @ np.array([2.0, -1.0]) + 0.8 * rng.logistic(size=n_samples)
    y = np.where(margin > 0, 1.0, -1.0)
    return X, y


def logistic_objective(w: np.ndarray, X: np.ndarray, y: np.ndarray, C: float) -> float:
    """``f(w) = 1/2 w.w + C sum_i log(1 + exp(-y_i x_i.w))`` (the paper's Eq. 1 with the logistic loss)."""
    return float(0.5 * w @ w + C * np.logaddexp(0.0, -y * (X @ w)).sum())


def logistic_gradient_hessian(w: np.ndarray, X: np.ndarray, y: np.ndarray, C: float) -> tuple[np.ndarray,
                                                                                               np.ndarray]:
    """``(grad f(w), Hessian)``: ``w + C X^T ((sigma - 1) y)`` and ``I + C X^T D X``, ``D = sigma (1 - sigma)``
    with ``sigma = 1 / (1 + exp(-y X w))`` (the paper's Table 1).  The Hessian is formed here only because it
    is 2 x 2; TRON itself needs only its products with vectors."""
    sigma = 1.0 / (1.0 + np.exp(-y * (X @ w)))
    grad = w + C * X.T @ ((sigma - 1.0) * y)
    hessian = np.eye(X.shape[1]) + C * (X.T * (sigma * (1.0 - sigma))) @ X
    return grad, hessian


def _to_boundary(s: np.ndarray, d: np.ndarray, delta: float) -> float:
    """The ``tau >= 0`` with ``||s + tau d|| = delta`` (``||s|| <= delta``): the positive root of a quadratic."""
    sd, ss, dd = s @ d, s @ s, d @ d
    rad = np.sqrt(sd * sd + dd * (delta * delta - ss))
    return (delta * delta - ss) / (sd + rad) if sd >= 0 else (rad - sd) / dd


def truncated_cg(grad: np.ndarray, hessian: np.ndarray, delta: float, eps_cg: float = 0.1):
    """CG for ``H s = -g`` from ``s = 0``, stopped when ``||r|| <= eps_cg ||g||`` or clipped at ``||s|| = delta``.

    Returns
    -------
    path : list of ndarray (2,)
        Every CG iterate, ``0`` first; the last is the step taken (on the boundary when clipped).
    clipped : bool
        The step was stopped at the trust-region boundary.
    hv_products : int
        Hessian-vector products used (one per CG iteration).
    """
    s = np.zeros_like(grad)
    r = -grad
    d = r.copy()
    path, products = [s.copy()], 0
    tol = eps_cg * np.linalg.norm(grad)
    while np.linalg.norm(r) > tol and products < 10 * len(grad):
        Hd = hessian @ d  # TRON's only use of the Hessian: one product with a vector per CG iteration
        products += 1
        alpha = (r @ r) / (d @ Hd)
        if np.linalg.norm(s + alpha * d) > delta:  # the full CG step leaves the region: stop on its boundary
            s = s + _to_boundary(s, d, delta) * d
            path.append(s.copy())
            return path, True, products
        s = s + alpha * d
        r_new = r - alpha * Hd
        d = r_new + (r_new @ r_new) / (r @ r) * d
        r = r_new
        path.append(s.copy())
    return path, False, products


def plain_tron(X: np.ndarray, y: np.ndarray, C: float = 1.0, *, w0: Sequence[float] | None = None,
               delta0: float | None = None, eps: float = 1e-6, eps_cg: float = 0.1,
               max_iter: int = 50) -> list[dict[str, Any]]:
    """TRON on the logistic loss, one record per outer iteration (the paper's Algorithm 1, LIBLINEAR's rules).

    ``w0`` is the start (None: 0, as LIBLINEAR); ``delta0`` the first radius (None: LIBLINEAR's ``||grad f(w0)||``,
    then capped by the first step's length).  Stops when ``||grad f(w)|| <= eps ||grad f(0)||``.

    Returns
    -------
    list of dict, one per outer iteration: ``iteration``, ``w`` (the point the step starts from), ``f``,
    ``grad_norm``, ``delta`` (the radius the step was confined to), ``cg_path`` (CG iterates ``w + s_k``),
    ``step`` (``s``), ``clipped``, ``hv_products``, ``newton_point`` (``w - H^-1 g``), ``predicted``
    (model decrease ``-(g.s + s.H s / 2)``), ``actual`` (``f(w) - f(w + s)``), ``ratio``, ``accepted``,
    ``new_delta``, ``radius`` ("grows", "shrinks" or "stays"); the last record's ``w_end`` is the solution.
    """
    g0 = np.linalg.norm(logistic_gradient_hessian(np.zeros(X.shape[1]), X, y, C)[0])  # the stopping test's scale
    w = np.zeros(X.shape[1]) if w0 is None else np.array(w0, dtype=np.float64)
    f = logistic_objective(w, X, y, C)
    g, H = logistic_gradient_hessian(w, X, y, C)
    delta = float(np.linalg.norm(g)) if delta0 is None else float(delta0)
    records: list[dict[str, Any]] = []
    for it in range(1, max_iter + 1):
        if np.linalg.norm(g) <= eps * g0:
            break
        path, clipped, products = truncated_cg(g, H, delta, eps_cg)
        s = path[-1]
        predicted = -(g @ s + 0.5 * s @ H @ s)
        f_new = logistic_objective(w + s, X, y, C)
        actual = f - f_new
        snorm = np.linalg.norm(s)
        if it == 1 and delta0 is None:
            delta = min(delta, snorm)  # LIBLINEAR caps the first radius by the first step's length
        gs = g @ s
        alpha = SIGMA3 if f_new - f - gs <= 0 else max(SIGMA1, -0.5 * gs / (f_new - f - gs))
        # LIBLINEAR's radius update: shrink when the model predicted badly, grow when it was good
        if actual < ETA0 * predicted:
            new_delta = min(alpha * snorm, SIGMA2 * delta)
        elif actual < ETA1 * predicted:
            new_delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA2 * delta))
        elif actual < ETA2 * predicted:
            new_delta = max(SIGMA1 * delta, min(alpha * snorm, SIGMA3 * delta))
        elif clipped:  # a good step stopped by the boundary: the region was too small (LIBLINEAR >= 2.20)
            new_delta = SIGMA3 * delta
        else:
            new_delta = max(delta, min(alpha * snorm, SIGMA3 * delta))
        accepted = actual > ETA0 * predicted
        records.append({"iteration": it, "w": w.copy(), "f": f, "grad_norm": float(np.linalg.norm(g)),
                        "delta": float(delta), "cg_path": [w + p for p in path], "step": s.copy(),
                        "clipped": clipped, "hv_products": products,
                        "newton_point": w - np.linalg.solve(H, g), "predicted": float(predicted),
                        "actual": float(actual), "ratio": float(actual / predicted), "accepted": bool(accepted),
                        "new_delta": float(new_delta), "radius": ("grows" if new_delta > delta * (1 + 1e-12) else
                                                                  "shrinks" if new_delta < delta * (1 - 1e-12)
                                                                  else "stays")})
        delta = new_delta
        if accepted:
            w = w + s
            f = f_new
            g, H = logistic_gradient_hessian(w, X, y, C)
    if records:
        records[-1]["w_end"] = w.copy()
        records[-1]["grad_norm_end"] = float(np.linalg.norm(g))
    return records


def tron_table(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per outer iteration, the columns a reader follows by hand (for a pandas DataFrame)."""
    return [{"iteration": r["iteration"], "w": f"({r['w'][0]:+.3f}, {r['w'][1]:+.3f})", "f(w)": r["f"],
             "||grad||": r["grad_norm"], "radius": r["delta"], "CG steps": r["hv_products"],
             "clipped at radius": r["clipped"], "actual / predicted": r["ratio"],
             "step": "accepted" if r["accepted"] else "rejected", "new radius": r["new_delta"],
             "radius change": r["radius"]} for r in records]


def view_box(record: dict[str, Any], margin: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` corners (each (2,)) of a square around one outer iteration's start, CG path and
    Newton point; the trust region's circle fits in when it is not much larger than they are (else an arc
    shows), so that small late steps stay readable."""
    pts = np.array(record["cg_path"] + [record["newton_point"], record["w"]])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre, half = (lo + hi) / 2, max((hi - lo).max() / 2, 1e-3)
    if record["delta"] <= 2 * half:  # the circle as a whole, around w
        lo, hi = np.minimum(lo, record["w"] - record["delta"]), np.maximum(hi, record["w"] + record["delta"])
        centre, half = (lo + hi) / 2, (hi - lo).max() / 2
    half *= 1 + margin
    return centre - half, centre + half


def contour_grid(X: np.ndarray, y: np.ndarray, C: float, lower: Sequence[float], upper: Sequence[float],
                 n: int = 60) -> dict[str, np.ndarray]:
    """The logistic objective on an ``n x n`` grid of the box ``lower .. upper``: ``w1``, ``w2`` (n,), ``f``
    (n, n) with ``f[i, j] = f((w1[j], w2[i]))``."""
    w1, w2 = np.linspace(lower[0], upper[0], n), np.linspace(lower[1], upper[1], n)
    W1, W2 = np.meshgrid(w1, w2)
    margins = (np.stack([W1.ravel(), W2.ravel()], axis=1) @ X.T) * y  # (n*n, rows): y_i x_i.w per grid point
    f = 0.5 * (W1.ravel() ** 2 + W2.ravel() ** 2) + C * np.logaddexp(0.0, -margins).sum(axis=1)
    return {"w1": w1, "w2": w2, "f": f.reshape(n, n)}


def contour_grids(X: np.ndarray, y: np.ndarray, C: float, records: Sequence[dict[str, Any]],
                  n: int = 60) -> list[dict[str, np.ndarray]]:
    """For each outer iteration its :func:`view_box` and :func:`contour_grid` in it (``lower``, ``upper``,
    ``w1``, ``w2``, ``f``): what :func:`workbench.linear.plots.plot_tiny_tron` draws."""
    out = []
    for record in records:
        lower, upper = view_box(record)
        out.append({"lower": lower, "upper": upper, **contour_grid(X, y, C, lower, upper, n)})
    return out


# ------------------------------------------------------------------ bytes over PCIe
def pcie_bytes(n_rows: int, n_features: int, nnz: int, cg_steps: float, design: str) -> float:
    """Bytes over PCIe in one outer (Newton) iteration of TRON on the logistic loss, by a stated model.

    One outer iteration makes ``1 + 1 + 2 * cg_steps`` sparse matrix-vector products: ``z = X w`` at the
    trial point, ``X^T u`` for the gradient (with the Hessian diagonal), and ``X v`` then ``X^T (D X v)``
    per CG step.  Scalars (8 bytes) decide the step in every design: 5 per outer iteration, 3 per CG step.

    Parameters
    ----------
    n_rows, n_features, nnz : int
        The shape and the non-zeros of ``X`` (CSR: 8-byte values, 4-byte indices, 8-byte row pointers).
    cg_steps : float
        CG iterations per outer iteration.
    design : one of :data:`DESIGNS`
        ``naive``: every product copies ``X``, its input vector to the device and its output back;
        ``X resident``: ``X`` stays, LIBLINEAR's vectors (``w``, ``z``, ``u``, ``D``, ``v``, results) cross
        per product (the host scales ``X v`` by ``D``); ``dtlab mixed``: some rows on the device, the solver's
        vectors on the host: ``w`` or ``v`` down and one ``n_features`` partial result up per product (two
        for the gradient: the gradient and the Hessian diagonal), whatever the share of rows on the device;
        ``paper's design``: everything on the device, scalars only.

    Returns
    -------
    float : bytes per outer iteration
    """
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    scalars = VALUE_BYTES * (5 + 3 * cg_steps)
    products = 2 + 2 * cg_steps
    rows_vec, feat_vec = VALUE_BYTES * n_rows, VALUE_BYTES * n_features
    x_bytes = (VALUE_BYTES + INDEX_BYTES) * nnz + POINTER_BYTES * (n_rows + 1)
    # every product moves its input down and its output up: X w (w down, z up), X^T u (u down, g up), and per
    # CG step X v (v down, X v up) and X^T (D X v) (D X v down, the product up)
    vectors = products * (feat_vec + rows_vec)
    if design.startswith("naive"):
        return products * x_bytes + vectors + scalars
    if design.startswith("X resident"):
        return vectors + scalars
    if design.startswith("dtlab mixed"):
        # fun: w down; grad: the gradient's and the diagonal's partial sums up; per CG step: v down, H v's up
        return 3 * feat_vec + cg_steps * 2 * feat_vec + scalars
    return scalars


def pcie_copies(cg_steps: float, design: str) -> float:
    """Host-device copies per outer iteration under the model of :func:`pcie_bytes`: three per product for
    the naive port (X, input, output), two with X resident, two per product and one for the diagonal in the
    mixed placement, and for the paper's design one fetch of scalars per CG step and three per outer step."""
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {DESIGNS}, got {design!r}")
    products = 2 + 2 * cg_steps
    if design.startswith("naive"):
        return 3 * products
    if design.startswith("X resident"):
        return 2 * products
    if design.startswith("dtlab mixed"):
        return 2 + 2 * cg_steps + 3  # w down and two partial sums up; v down, H v up per CG step; scalars
    return 3 + cg_steps


def pcie_table(n_rows: Sequence[int], n_features: int, nnz_per_row: float, cg_steps: float, gb_per_s: float,
               copy_latency_s: float = COPY_LATENCY_S) -> list[dict[str, Any]]:
    """:func:`pcie_bytes` of every design for each row count (``nnz = nnz_per_row * rows``), with the
    transfer time in milliseconds: bytes at ``gb_per_s`` (10^9 bytes per second) plus
    ``copy_latency_s`` per copy (:func:`pcie_copies`)."""
    out = []
    for rows in n_rows:
        nnz = int(round(nnz_per_row * rows))
        for design in DESIGNS:
            b = pcie_bytes(int(rows), n_features, nnz, cg_steps, design)
            copies = pcie_copies(cg_steps, design)
            out.append({"rows": int(rows), "nnz": nnz, "design": design, "bytes": b, "copies": copies,
                        "ms": 1e3 * (b / (gb_per_s * 1e9) + copies * copy_latency_s)})
    return out


# ------------------------------------------------------------------ the predict-then-run panel
def panel_data(n_samples: int, noise: float, n_features: int = 20_000, nnz_per_row: float = 12.0,
               seed: int = 0):
    """The panel's synthetic sparse data: power-law features, labels from a planted model whose margin gets
    logistic noise of scale ``noise`` (0: separable).  Returns ``(X, y)`` (CSR, float64 +-1)."""
    from dtlab.linear.synthetic import make_sparse_classification

    return make_sparse_classification(n_samples, n_features, nnz_per_row, noise=noise, seed=seed)


def convergence_and_threads(n_samples: int, noise: float, threads: int, *, C: float = 4.0, eps: float = 0.001,
                            repeats: int = 3, seed: int = 0) -> dict[str, Any]:
    """The panel's experiment: per Newton iteration the objective gap and gradient norm of dtlab (trust
    region and line search, one thread) and LIBLINEAR's log, and the fit time of dtlab on 1..``threads``
    threads against single-thread LIBLINEAR (``-c C -e 0.1``, alternating runs, medians).

    Returns
    -------
    dict with ``convergence`` (see :func:`workbench.linear.experiments.convergence`), ``timing`` (rows of
    :func:`workbench.linear.experiments.time_against_liblinear`), ``n_samples``, ``noise``, ``nnz``,
    ``threads``.
    """
    from workbench.linear import experiments as E

    X, y = panel_data(n_samples, noise, seed=seed)
    conv = E.convergence(X, y, loss="logistic", C=C, eps=eps)
    timing = E.time_against_liblinear(X, y, "logistic", C=C, eps=E.PAPER_EPS, threads=range(1, threads + 1),
                                      solvers=("tron",), repeats=repeats)
    return {"convergence": conv, "timing": timing, "n_samples": n_samples, "noise": noise, "nnz": int(X.nnz),
            "threads": threads}
