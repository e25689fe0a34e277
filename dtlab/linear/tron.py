"""TRON: LIBLINEAR's truncated Newton solver, in plain Python over an array module.

The solver sees only an objective object (:class:`dtlab.linear.losses.L2Objective`)
and its vectors of ``n_features`` in that object's array module ``xp``; every
decision (accept a step, resize the trust region, stop CG) is taken on host
scalars, so with ``xp = cupy`` the data and every vector stay on the GPU and
only scalars cross to the host -- the paper's first principle.  With
``xp = cupy`` the dot products stay on the device too (0-d arrays, the CG's
step lengths computed there) and a CG iteration brings the scalars its
decisions need to the host in one copy (``ops.fetch``): one synchronisation
per CG iteration where ``float(xp.dot(...))`` made one per dot product.  The
values are the same (the same operations in the same order: the iteration
also computes, ahead of the boundary test, the residual it keeps when the
step stays inside), so the iterates are bit for bit those of host scalars.

Two globalisations, each transcribed from the LIBLINEAR release that used it:

``"trust_region"`` (TRON proper; LIBLINEAR 2.20 - 2.30, ``tron.cpp``, the base of the paper)
    Preconditioned CG (diagonal preconditioner ``M = (1 - a) I + a diag(H)``,
    ``a = 0.01``) inside the trust region ``||s||_M <= delta``, stopped when
    ``||r||_{M^-1} <= eps_cg ||g||_{M^-1}`` (``eps_cg = 0.1``) or at the
    boundary; the step is taken if ``actred > eta0 * prered``; the radius is
    updated by LIBLINEAR's rules with ``eta = (1e-4, 0.25, 0.75)`` and
    ``sigma = (0.25, 0.5, 4)``, starting from ``||g||_M`` and capped by the
    first step's length.
``"line_search"`` (LIBLINEAR >= 2.40, ``newton.cpp``, what ``liblinear-official`` 2.4x/2.5x runs)
    The same preconditioned CG without a radius, stopped by the relative
    decrease of the quadratic model (``eps_cg = 0.5``), then a backtracking
    line search (``eta = 0.01``, halving, at most 20 tries) evaluated from
    ``z + alpha X s`` without new passes over ``X``.

Both stop when ``||grad f(w)|| <= eps ||grad f(0)||``; the estimators pass
LIBLINEAR's ``eps * max(min(#pos, #neg), 1) / n_samples``.

References
----------
Lin, Weng, Keerthi, "Trust region Newton method for large-scale logistic regression", JMLR 2008.
Hsia, Chiang, Lin, "Preconditioned conjugate gradient methods in truncated Newton frameworks
for large-scale linear classification", ACML 2018.
Halloran, Rocke, "GPU-accelerated primal learning for extremely fast large-scale
classification", NeurIPS 2020 (the GPU and mixed placements of :mod:`dtlab.linear`).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .vector_ops import XpOps, with_cg_updates

# LIBLINEAR's constants (tron.cpp / newton.cpp).
ETA0, ETA1, ETA2 = 1e-4, 0.25, 0.75
SIGMA1, SIGMA2, SIGMA3 = 0.25, 0.5, 4.0
ALPHA_PCG = 0.01
LINE_SEARCH_ETA = 0.01
MAX_LINE_SEARCH = 20
METHODS = ("trust_region", "line_search")
DEFAULT_EPS_CG = {"trust_region": 0.1, "line_search": 0.5}


@dataclass
class TronResult:
    """What :func:`tron` returns.

    Attributes
    ----------
    w : xp array of shape (n_features,), float64
    fun, grad_norm, grad_norm0 : float
        Objective and gradient norm at ``w``, gradient norm at 0.
    n_iter : int
        Newton iterations (CG solves; with the trust region, rejected steps count too, as
        LIBLINEAR prints them).
    n_cg : int
        CG iterations, i.e. Hessian-vector products, in all.
    converged : bool
        ``grad_norm <= eps * grad_norm0``.
    message : str
        Why the solver stopped.
    history : dict of str -> list
        Per iteration (row 0 is the start): ``iter``, ``objective``, ``grad_norm``, ``delta``
        (trust-region radius; NaN for the line search), ``step_size``, ``cg_iter``,
        ``accepted``, ``seconds`` and the cumulative seconds ``t_Xw``, ``t_XTu``, ``t_Hv``.
    """

    w: Any
    fun: float
    grad_norm: float
    grad_norm0: float
    n_iter: int
    n_cg: int
    converged: bool
    message: str
    history: dict = field(default_factory=dict)


class _Recorder:
    def __init__(self, objective, verbose: bool, log: Callable[[str], Any]):
        self.obj, self.verbose, self.log = objective, verbose, log
        self.start = time.perf_counter()
        self.history = {k: [] for k in ("iter", "objective", "grad_norm", "delta", "step_size", "cg_iter",
                                         "accepted", "seconds", "t_Xw", "t_XTu", "t_Hv")}

    def add(self, it, f, gnorm, delta, step, cg, accepted):
        h, sec = self.history, self.obj.seconds
        for key, value in (("iter", it), ("objective", f), ("grad_norm", gnorm), ("delta", delta),
                           ("step_size", step), ("cg_iter", cg), ("accepted", accepted),
                           ("seconds", time.perf_counter() - self.start), ("t_Xw", sec["Xw"]),
                           ("t_XTu", sec["XTu"]), ("t_Hv", sec["Hv"])):
            h[key].append(value)

    def say(self, text: str):
        if self.verbose:
            self.log(text)


def tron(objective: Any, w0: Any = None, *, eps: float = 0.1, eps_cg: float | None = None, max_iter: int = 1000,
         method: str = "trust_region", verbose: bool = False, log: Callable[[str], Any] = print) -> TronResult:
    """Minimise a twice-differentiable convex objective by truncated Newton with preconditioned CG.

    Parameters
    ----------
    objective : object with ``xp``, ``n_features``, ``fun(w)``, ``grad(w)``, ``hv(s)``, ``diag()``
        and, for the line search, ``line_prepare``, ``line_fun``, ``line_accept`` (see
        :class:`~dtlab.linear.losses.L2Objective`); ``grad(w)`` is called only at the point of the
        last ``fun`` call.
    w0 : xp array of shape (n_features,), optional
        Starting point (default zeros, as LIBLINEAR).
    eps : float > 0
        Stop when ``||g|| <= eps * ||g(0)||``.
    eps_cg : float, optional
        CG tolerance (default 0.1 for the trust region, 0.5 for the line search, as LIBLINEAR).
    max_iter : int
        Most accepted Newton steps (LIBLINEAR: 1000).
    method : {"trust_region", "line_search"}
    verbose : bool
        Print one LIBLINEAR-style line per iteration through ``log``.

    Returns
    -------
    TronResult
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    eps_cg = DEFAULT_EPS_CG[method] if eps_cg is None else float(eps_cg)
    xp, n = objective.xp, objective.n_features
    ops = getattr(objective, "ops", None) or XpOps(xp)
    ops = with_cg_updates(ops, xp)
    if hasattr(objective, "regularizer_first"):  # LIBLINEAR <= 2.3x summed w.w / 2 first, >= 2.40 last
        objective.regularizer_first = method == "trust_region"
    rec = _Recorder(objective, verbose, log)
    with _solving(objective):
        return _solve(objective, ops, xp, n, w0, eps, eps_cg, max_iter, method, rec)


def _solve(objective, ops, xp, n, w0, eps, eps_cg, max_iter, method, rec) -> TronResult:
    zero = xp.zeros(n)
    # The stopping test is relative to the gradient at w = 0 (LIBLINEAR computes it first).
    f0 = objective.fun(zero)
    g = objective.grad(zero)
    gnorm0 = ops.norm(g)
    if w0 is None:
        w, f, gnorm = zero, f0, gnorm0
    else:
        w = xp.array(w0, dtype=float, copy=True)
        f = objective.fun(w)
        g = objective.grad(w)
        gnorm = ops.norm(g)
    if not math.isfinite(f) or not math.isfinite(gnorm):
        raise FloatingPointError(f"the objective or its gradient is not finite at the start (f = {f}, "
                                 f"|g| = {gnorm}); the feature values are too large, scale them")
    rec.say(f"init f {f:5.3e} |g| {gnorm:5.3e}")
    # The Hessian diagonal is largest at the start (every row weighs most there): an overflow shows now.
    if not bool(xp.isfinite(objective.diag()).all()):
        raise FloatingPointError("the Hessian diagonal overflows (sums of squared feature values exceed the "
                                 "float64 range); the feature values are too large, scale them")
    run = _trust_region if method == "trust_region" else _line_search
    return run(objective, ops, w, f, g, gnorm, gnorm0, eps, eps_cg, max_iter, rec)


def _solving(objective):
    """The objective's scope of one solve (``objective.solving()``, where its outputs may reuse buffers)."""
    scope = getattr(objective, "solving", None)
    return scope() if scope is not None else contextlib.nullcontext()


def _trust_region(obj, ops, w, f, g, gnorm, gnorm0, eps, eps_cg, max_iter, rec) -> TronResult:
    M = ops.preconditioner(obj.diag(), ALPHA_PCG)
    delta = math.sqrt(ops.fetch(ops.uMv(g, M, g))[0])
    rec.add(0, f, gnorm, delta, math.nan, 0, True)
    converged = gnorm <= eps * gnorm0
    message = "converged" if converged else "max_iter reached"
    n_accepted, n_lines, n_cg, delta_adjusted = 1, 0, 0, False
    w_spare = None  # the iterate's second vector: the trial point goes there (where ops write in place)
    while n_accepted <= max_iter and not converged:
        s, r, cg_iter, reach_boundary = _trpcg(obj, ops, delta, g, M, eps_cg)
        n_cg += cg_iter
        n_lines += 1
        w_new = ops.axpy(1.0, s, w, out=w_spare)  # w + s (1.0 s is s)
        gs, sr, sMs = ops.fetch(ops.dot(g, s), ops.dot(s, r), ops.uMv(s, M, s))
        prered = -0.5 * (gs - sr)
        fnew = obj.fun(w_new)
        if not math.isfinite(fnew):  # an overflowing trial point is a bad step: shrink, never accept
            fnew = math.inf
        actred = f - fnew
        sMnorm = math.sqrt(sMs)
        if n_accepted == 1 and not delta_adjusted:
            delta = min(delta, sMnorm)
            delta_adjusted = True
        alpha = SIGMA3 if fnew - f - gs <= 0 else max(SIGMA1, -0.5 * (gs / (fnew - f - gs)))
        if actred < ETA0 * prered:
            delta = min(alpha * sMnorm, SIGMA2 * delta)
        elif actred < ETA1 * prered:
            delta = max(SIGMA1 * delta, min(alpha * sMnorm, SIGMA2 * delta))
        elif actred < ETA2 * prered:
            delta = max(SIGMA1 * delta, min(alpha * sMnorm, SIGMA3 * delta))
        elif reach_boundary:
            delta = SIGMA3 * delta
        else:
            delta = max(delta, min(alpha * sMnorm, SIGMA3 * delta))
        rec.say(f"iter {n_accepted:2d} act {actred:5.3e} pre {prered:5.3e} delta {delta:5.3e} f {f:5.3e} "
                f"|g| {gnorm:5.3e} CG {cg_iter:3d}")
        accepted = actred > ETA0 * prered
        if accepted:
            n_accepted += 1
            w, f, w_spare = w_new, fnew, w
            g = obj.grad(w)
            M = ops.preconditioner(obj.diag(), ALPHA_PCG)
            gnorm = ops.norm(g)
        else:
            w_spare = w_new
        rec.add(n_lines, f, gnorm, delta, 1.0 if accepted else 0.0, cg_iter, accepted)
        if accepted and gnorm <= eps * gnorm0:
            converged, message = True, "converged"
            break
        if f < -1.0e32:
            message = "f < -1e32"
            break
        if prered <= 0:
            message = "prered <= 0"
            break
        if abs(actred) <= 1.0e-12 * abs(f) and abs(prered) <= 1.0e-12 * abs(f):
            message = "actred and prered too small"
            break
    if message != "converged" and not converged:
        rec.say(f"WARNING: {message}")
    return TronResult(w, f, gnorm, gnorm0, n_lines, n_cg, converged, message, rec.history)


def _cg_start(obj, ops, g, M):
    """The start of both CG variants: ``s = 0``, residual ``r = -g``, preconditioned ``z = d = r / M``, ``z.r``
    (a scalar of ``xp``) and ``z.r`` on the host."""
    s, r, z, d, zTr = ops.cg_start(g, M)
    return s, r, z, d, zTr, ops.fetch(zTr)[0]


def _trpcg(obj, ops, delta, g, M, eps_cg):
    """Preconditioned CG for ``H s = -g`` inside ``||s||_M <= delta`` (LIBLINEAR 2.30's ``trpcg``).

    Each iteration computes its step, the residual and ``z.r`` it keeps when the step stays inside, and the
    step's ``M``-norm, then fetches the three scalars it decides on in one copy."""
    n = obj.n_features
    s, r, z, d, zTr, zTr_host = _cg_start(obj, ops, g, M)
    cgtol = eps_cg * math.sqrt(zTr_host)
    cg_iter, max_cg_iter, reach_boundary, spare = 0, max(n, 5), False, None
    while cg_iter < max_cg_iter:
        if math.sqrt(zTr_host) <= cgtol:
            break
        cg_iter += 1
        Hd = obj.hv(d)
        alpha = zTr / ops.dot(d, Hd)
        # s + alpha d, the residual r - alpha Hd if the step stays inside (unused at the boundary), z = r / M
        s_new, r_new, z_new, znewTrnew, sMs = ops.tr_trial(alpha, d, Hd, s, r, M, spare)
        sMs, znewTrnew_host = ops.fetch(sMs, znewTrnew)
        if math.sqrt(sMs) > delta:
            # Back to the previous s (as LIBLINEAR: s - alpha d, not the old vector), then to the boundary along
            # d: the positive root of ||s + t d||_M = delta.  (y - a x is y + (-a) x: the same bits.)
            reach_boundary = True
            s = ops.axpy(-alpha, d, s_new, out=s_new)
            sMd, sMs, dMd = ops.fetch(ops.uMv(s, M, d), ops.uMv(s, M, s), ops.uMv(d, M, d))
            dsq = delta * delta
            rad = math.sqrt(sMd * sMd + dMd * (dsq - sMs))
            alpha = (dsq - sMs) / (sMd + rad) if sMd >= 0 else (rad - sMd) / dMd
            s = ops.axpy(alpha, d, s, out=s)
            r = ops.axpy(-alpha, Hd, r, out=r)
            break
        spare = (s, r, z)  # the vectors the step replaces: the next trial may write into them
        s, r, z = s_new, r_new, z_new
        d = ops.cg_direction(znewTrnew, zTr, d, z)
        zTr, zTr_host = znewTrnew, znewTrnew_host
    return s, r, cg_iter, reach_boundary


def _line_search(obj, ops, w, f, g, gnorm, gnorm0, eps, eps_cg, max_iter, rec) -> TronResult:
    rec.add(0, f, gnorm, math.nan, math.nan, 0, True)
    converged = gnorm <= eps * gnorm0
    message = "converged" if converged else "max_iter reached"
    it, n_cg = 1, 0
    while it <= max_iter and not converged:
        M = ops.preconditioner(obj.diag(), ALPHA_PCG)
        s, cg_iter = _pcg(obj, ops, g, M, eps_cg, rec)
        n_cg += cg_iter
        fold = f
        wTs, sTs = obj.line_prepare(w, s)
        gTs = ops.seq_dot(s, g)  # host floats: the line search's tests use them at once
        alpha = 1.0
        for _ in range(MAX_LINE_SEARCH):
            f = obj.line_fun(alpha, wTs, sTs)
            if f - fold <= LINE_SEARCH_ETA * alpha * gTs:
                break
            alpha *= 0.5
        else:
            f, message = fold, "line search fails"
            rec.say("WARNING: line search fails")
            break
        obj.line_accept(alpha, wTs, sTs)
        w = ops.axpy(alpha, s, w, out=w)  # in place where the ops write in place
        g = obj.grad(w)
        gnorm = ops.norm(g)
        rec.say(f"iter {it:2d} f {f:5.3e} |g| {gnorm:5.3e} CG {cg_iter:3d} step_size {alpha:4.2e}")
        rec.add(it, f, gnorm, math.nan, alpha, cg_iter, True)
        if gnorm <= eps * gnorm0:
            converged, message = True, "converged"
            break
        if f < -1.0e32:
            message = "f < -1e32"
            break
        if abs(fold - f) <= 1.0e-12 * abs(f):
            message = "actred too small"
            break
        it += 1
    n_iter = len(rec.history["iter"]) - 1
    if not converged:
        rec.say(f"WARNING: {message}")
    return TronResult(w, f, gnorm, gnorm0, n_iter, n_cg, converged, message, rec.history)


def _pcg(obj, ops, g, M, eps_cg, rec):
    """Preconditioned CG stopped by the quadratic model's relative decrease (LIBLINEAR >= 2.40's ``pcg``).

    Each iteration computes its step and the next direction's ``z.r`` ahead of its two tests and fetches the
    three scalars they need in one copy (a step that fails the first test is dropped unused)."""
    n = obj.n_features
    s, r, z, d, zTr, zTr_host = _cg_start(obj, ops, g, M)
    cgtol = min(eps_cg, math.sqrt(math.sqrt(zTr_host)))
    cg_iter, max_cg_iter, Q, spare = 0, max(n, 5), 0.0, None
    while cg_iter < max_cg_iter:
        cg_iter += 1
        Hd = obj.hv(d)
        dHd = ops.dot(d, Hd)
        alpha = zTr / ops.floor(dHd)  # the quotient is used only when dHd > 1e-16, where the floor is dHd
        s_new, r_new, z_new, newQ, znewTrnew = ops.cg_trial(alpha, d, Hd, s, r, g, M, spare)
        dHd, newQ, znewTrnew_host = ops.fetch(dHd, newQ, znewTrnew)
        if dHd <= 1.0e-16:  # avoid 0/0 in alpha
            break
        spare = (s, r, z)  # the vectors the step replaces: the next trial may write into them
        s, r = s_new, r_new
        Qdiff = newQ - Q
        if newQ <= 0 and Qdiff <= 0:
            if cg_iter * Qdiff >= cgtol * newQ:
                break
        else:
            rec.say("WARNING: quadratic approximation > 0 or increasing in CG")
            break
        Q = newQ
        z = z_new
        d = ops.cg_direction(znewTrnew, zTr, d, z)
        zTr, zTr_host = znewTrnew, znewTrnew_host
    return s, cg_iter
