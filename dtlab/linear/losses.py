"""Losses of L2-regularised linear classification: function objects over ``xp`` arrays.

``f(w) = 1/2 w.w + C sum_i loss(y_i x_i.w)`` with y in {-1, +1}:

``"logistic"``       ``loss(t) = log(1 + exp(-t))``           (LIBLINEAR ``-s 0``)
``"squared_hinge"``  ``loss(t) = max(0, 1 - t)^2``             (LIBLINEAR ``-s 2``, the L2-SVM)

A loss object serves one *row block* (:mod:`._row_blocks`): the rows one memory
holds.  :class:`L2Objective` adds ``1/2 w.w`` to the sum over blocks and is
what the solver (:func:`dtlab.linear.tron`) sees: ``fun``, ``grad``, ``hv``,
``diag`` (the Hessian diagonal of LIBLINEAR's preconditioner) and the line
search of the Newton variant.  The formulas and the order of work follow
LIBLINEAR's ``linear.cpp``:

* ``fun(w)`` computes and keeps ``z = X w`` (the first of the paper's three
  matrix-vector products);
* ``grad(w)`` reuses that ``z`` (``w`` is always the point of the last
  ``fun`` call) and fixes what the Hessian needs until the next ``grad``: the
  logistic weights ``D = sigma (1 - sigma)``, or the L2-SVM active set
  ``I = {i : 1 - y_i z_i > 0}`` and ``X_I``;
* ``hv(s) = s + X_I.T (c * (X_I s))`` never forms the Hessian.

On a GPU block everything per row (``z``, ``D``, ``I``, ``X_I``) stays on the
device; what leaves a block is one scalar (the loss) or one vector of
``n_features`` (moved only in the mixed placement).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator, Sequence

import numba
import numpy as np

from ..backend import to_host
from . import _products_cpu
from ._row_blocks import NumbaCsrRows
from .vector_ops import XpOps


def _convert(array: Any, xp: Any) -> Any:
    """``array`` in module ``xp`` (numpy: to the host; cupy: to the current device)."""
    return np.asarray(to_host(array)) if xp is np else xp.asarray(array)


class _BlockLoss:
    """Shared state of a loss on one row block: labels ±1, C, and the kept ``z = X w``.

    On a :class:`~._row_blocks.NumbaCsrRows` block (``fused``) the row-wise work
    runs in the numba kernels of :mod:`._products_cpu`, in LIBLINEAR's order of
    operations; elsewhere it is ``xp`` array expressions.
    """

    name = ""
    _kind = -1

    def __init__(self, block: Any, y: Any, C: float):
        self.block, self.xp, self.C = block, block.xp, float(C)
        self.y = y
        self.fused = isinstance(block, NumbaCsrRows)
        self.z = None
        self.zs = None

    def _outs(self, out) -> tuple:
        """The output vectors to pass a block's product: ``out`` on a fused block, none elsewhere."""
        return out if self.fused and out is not None else ()

    def _row_kernels(self):
        """Row-loop kernels and their chunk count; a row costs an exp and a log, about ten products' worth."""
        k = _products_cpu.kernels(10 * len(self.y))
        return k, (max(1, min(numba.get_num_threads(), len(self.y))) if k is _products_cpu.PARALLEL else 1)

    def value(self, w, init: float = 0.0):
        """``init +`` the loss sum at ``w`` (a 0-d ``xp`` array or a float); keeps ``z = X w``."""
        if self.fused and not w.any():  # TRON's start: X 0 is +0.0 in every row, no pass over X needed
            self.z = np.zeros(self.block.n_rows)
        else:
            self.z = self.block.matvec(w)
        if self.fused:
            k, n_chunks = self._row_kernels()
            return k["_loss_value"](self.z, self.z, 0.0, self.y, self.C, float(init), self._kind, n_chunks)
        return init + self._loss_sum(self.z)

    def line_prepare(self, s):
        self.zs = self.block.matvec(s)

    def line_value(self, alpha: float):
        if self.fused:
            k, n_chunks = self._row_kernels()
            return k["_loss_value"](self.z, self.zs, float(alpha), self.y, self.C, 0.0, self._kind, n_chunks)
        return self._loss_sum(self.zs * alpha + self.z)

    def line_accept(self, alpha: float):
        self.z = self.z + alpha * self.zs


class LogisticLoss(_BlockLoss):
    """``C log(1 + exp(-y z))`` on one row block."""

    name = "logistic"
    _kind = 0

    def _loss_sum(self, z):
        return self.C * self.xp.sum(self.xp.logaddexp(0.0, -self.y * z))

    def prepare_hessian(self):
        """Gradient weights ``u = C (sigma - 1) y`` and Hessian weights ``D = sigma (1 - sigma)`` at the kept ``z``."""
        xp, y, z = self.xp, self.y, self.z
        if self.fused:
            self.u, self.D, self.cd = np.empty_like(z), np.empty_like(z), np.empty_like(z)
            self._row_kernels()[0]["_logistic_terms"](z, y, self.C, self.u, self.D, self.cd)
        else:
            t = -y * z
            e = xp.exp(-xp.abs(t))  # sigma without overflow: exp of a non-positive number only
            sig = xp.where(t <= 0, 1.0 / (1.0 + e), e / (1.0 + e))
            self.D = sig * (1.0 - sig)
            self.cd = self.C * self.D
            self.u = self.C * (sig - 1.0) * y

    def grad_part(self, diag_init: float = 0.0, out=None):
        """``X.T u``; the Hessian diagonal (plus ``diag_init``) is made in the same pass and kept (``out``: the
        two vectors to write them into, on a fused block)."""
        g, self.diag = self.block.rmatvec_sq(self.u, self.C, self.D, diag_init, *self._outs(out))
        return g

    def hv_part(self, s, out=None):
        return self.block.hv(self.cd, s, *self._outs(out))


class SquaredHingeLoss(_BlockLoss):
    """``C max(0, 1 - y z)^2`` on one row block; its Hessian lives on the active rows ``I``."""

    name = "squared_hinge"
    _kind = 1

    def _loss_sum(self, z):
        d = self.xp.maximum(1.0 - self.y * z, 0.0)
        return self.C * self.xp.dot(d, d)

    def prepare_hessian(self):
        """Active set ``I``, ``X_I`` (a view, or a gather in the block's memory) and the weights on it."""
        xp, y, z = self.xp, self.y, self.z
        if self.fused:
            rows, u = np.empty(len(z), dtype=np.int64), np.empty_like(z)
            m = _products_cpu._squared_hinge_active(z, y, self.C, rows, u)
            rows, self.u = rows[:m], u[:m]
        else:
            yz = y * z
            rows = xp.nonzero(yz < 1.0)[0]
            self.u = self.C * y[rows] * (yz[rows] - 1.0)
        self.active = self.block.restrict(rows)
        # LIBLINEAR's H s = s + 2 X_I.T (C X_I s): scaling by 2 is exact, so 2C per row changes no bit.
        self.twos = xp.full(len(rows), 2.0)
        self.cd = self.C * self.twos

    def grad_part(self, diag_init: float = 0.0, out=None):
        """``2 X_I.T u``; the Hessian diagonal (plus ``diag_init``) is made in the same pass and kept."""
        g, self.diag = self.active.rmatvec_sq(self.u, self.C, self.twos, diag_init, *self._outs(out))
        g *= 2.0  # 2.0 * g, in place
        return g

    def hv_part(self, s, out=None):
        return self.active.hv(self.cd, s, *self._outs(out))


#: Strategy registry: loss name -> per-block loss class.
LOSSES = {"logistic": LogisticLoss, "squared_hinge": SquaredHingeLoss}


class LiblinearVectorOps:
    """The same reductions on the host in the order of LIBLINEAR's BLAS (:mod:`._products_cpu`).

    Parameters
    ----------
    reuse : bool
        Write the solver's vectors into buffers of this object that outlive one call: the CG's seven vectors
        (taken again by each ``cg_start``), the preconditioner (valid until the next ``preconditioner``), and
        the ``out`` the solver offers ``axpy`` (its iterate, updated in place).  For objectives that keep no
        reference to a vector the solver gives them (:class:`L2Objective`); without it (an objective that
        records its messages, such as the Dask one) every such vector is new, as XpOps' are.  An allocation
        of ``n_features`` float64 is fresh pages for glibc from 128 KiB up, so this saves their page faults
        (on RCV1's 47,236 features, about 0.1 ms per vector).
    """

    dot = staticmethod(_products_cpu.ddot)
    seq_dot = staticmethod(_products_cpu.seq_dot)
    norm = staticmethod(_products_cpu.dnrm2)
    uMv = staticmethod(_products_cpu.uTMv)

    def __init__(self, reuse: bool = False):
        self.reuse = reuse
        self._cg: list | None = None
        self._spare = None
        self._M = None

    @staticmethod
    def fetch(*values) -> tuple:
        """The scalars are host floats already."""
        return values

    @staticmethod
    def floor(value: float, tiny: float = 1e-300) -> float:
        return max(value, tiny)

    # CG's vector updates (XpOps's, fused in :mod:`._products_cpu`; the same values)
    def cg_start(self, g, M):
        n = g.shape[0]
        if self.reuse:
            if self._cg is None or self._cg[0].shape[0] != n:
                self._cg = [np.empty(n) for _ in range(7)]
            s, r, z, d = self._cg[:4]
            self._spare = tuple(self._cg[4:])  # the first trial's outputs; the caller's spares after
        else:
            s, r, z, d = (np.empty(n) for _ in range(4))
        return s, r, z, d, _products_cpu.cg_start(g, M, s, r, z, d)

    def _trial_outputs(self, s, spare):
        if spare is None:
            spare, self._spare = self._spare, None
        return spare if spare is not None else tuple(np.empty_like(s) for _ in range(3))

    def cg_trial(self, alpha, d, Hd, s, r, g, M, spare=None):
        s_new, r_new, z_new = self._trial_outputs(s, spare)
        newQ, zTr = _products_cpu.cg_trial(alpha, d, Hd, s, r, g, M, s_new, r_new, z_new)
        return s_new, r_new, z_new, newQ, zTr

    def tr_trial(self, alpha, d, Hd, s, r, M, spare=None):
        s_new, r_new, z_new = self._trial_outputs(s, spare)
        zTr, sMs = _products_cpu.tr_trial(alpha, d, Hd, s, r, M, s_new, r_new, z_new)
        return s_new, r_new, z_new, zTr, sMs

    @staticmethod
    def cg_direction(zTr_new, zTr, d, z):
        _products_cpu.cg_direction(zTr_new / zTr, d, z)
        return d

    def axpy(self, a, x, y, out=None):
        """``y + a x``, written into ``out`` with ``reuse`` (``y - a x`` is ``axpy(-a, x, y)``: the same bits)."""
        out = out if self.reuse and out is not None else np.empty_like(y)
        _products_cpu.axpy(float(a), x, y, out)
        return out

    def preconditioner(self, diag, a):
        if self.reuse:
            if self._M is None or self._M.shape[0] != diag.shape[0]:
                self._M = np.empty(diag.shape[0])
            out = self._M
        else:
            out = np.empty(diag.shape[0])
        _products_cpu.affine(1 - a, a, diag, out)
        return out


class L2Objective:
    """``f(w) = 1/2 w.w + sum over row blocks of the loss``, in the solver's array module.

    Parameters
    ----------
    parts : sequence of block losses (:data:`LOSSES` instances)
        One per row block; blocks in another memory than ``xp`` (the GPU share
        of the mixed placement, seen from the host) get ``w`` / ``s`` moved to
        them and send back one ``n_features`` vector per product.
    xp : module
        Array module of the solver's vectors (w, g, s, ...).
    sync : bool
        Wait for a device after each product so that the timings are true
        (the solver reads a scalar right after each product anyway).

    Attributes
    ----------
    ops : XpOps or LiblinearVectorOps
        Dot products and norms for the solver; on the host in LIBLINEAR's order.
    regularizer_first : bool
        Sum ``w.w / 2`` before the losses (LIBLINEAR <= 2.3x) or after (>= 2.40); set by the solver.
    seconds : dict of str -> float
        Cumulative time of ``"Xw"`` (``z = X w`` and the loss), ``"XTu"``
        (the gradient ``X.T u``, with the Hessian weights and diagonal) and
        ``"Hv"`` (Hessian-vector products): the paper's three products.
    """

    def __init__(self, parts: Sequence[Any], xp: Any, sync: bool = True):
        self.parts = list(parts)
        self.xp = xp
        self.n_features = self.parts[0].block.n_features
        self.sync = sync
        # The solver's vectors may be rewritten in place: this objective keeps none of those it is given.
        self.ops = LiblinearVectorOps(reuse=True) if xp is np else XpOps(xp)
        self.regularizer_first = False
        self.seconds = {"Xw": 0.0, "XTu": 0.0, "Hv": 0.0}
        self.wTw = 0.0
        self._out = None

    @contextlib.contextmanager
    def solving(self) -> Iterator[None]:
        """The scope of one solve (:func:`~dtlab.linear.tron.tron` enters it): on one fused host block,
        :meth:`grad` (with :meth:`diag`) and :meth:`hv` write into vectors of their own, each valid until the
        next call of the same method -- what the solver needs, and no fresh ``n_features`` pages per product.
        Outside it every call returns new vectors."""
        one = len(self.parts) == 1 and self.parts[0].fused
        self._out = {} if one else None
        try:
            yield
        finally:
            self._out = None

    def _buffers(self, key: str, count: int):
        """The solve's ``count`` output vectors of ``key`` (None outside :meth:`solving` or with several blocks)."""
        if self._out is None:
            return None
        bufs = self._out.get(key)
        if bufs is None:
            bufs = self._out[key] = tuple(np.empty(self.n_features) for _ in range(count))
        return bufs

    def _to(self, part, v):
        return v if part.xp is self.xp else _convert(v, part.xp)

    def _plus(self, v, vectors):
        """``v +`` the sum of the blocks' ``vectors``; one block's own fresh vector is added to in place
        (``v + x`` and ``x + v`` are the same bits), so the solver's hot loop makes no temporary."""
        if len(self.parts) == 1 and self.parts[0].xp is self.xp:
            out = vectors[0]
            out += v
            return out
        return v + self._sum_vectors(vectors)

    def _sum_vectors(self, vectors):
        total = None
        for part, v in zip(self.parts, vectors):
            v = v if part.xp is self.xp else _convert(v, self.xp)
            total = v if total is None else total + v
        return total

    def _wait(self):
        if self.sync:
            for part in self.parts:
                if part.xp is not np:
                    part.xp.cuda.get_current_stream().synchronize()

    def fun(self, w) -> float:
        start = time.perf_counter()
        # Device blocks first: their kernels are launched asynchronously and overlap the host blocks.
        self.wTw = self.ops.seq_dot(w, w)
        if self.regularizer_first and len(self.parts) == 1:
            f = float(self.parts[0].value(self._to(self.parts[0], w), init=self.wTw / 2.0))
        else:
            losses = [part.value(self._to(part, w)) for part in self.parts]
            f = sum(float(v) for v in losses) + 0.5 * self.wTw
        self.seconds["Xw"] += time.perf_counter() - start
        return f

    def grad(self, w):
        """Gradient at ``w``, the point of the last :meth:`fun` call (the diagonal is made alongside)."""
        start = time.perf_counter()
        for part in self.parts:
            part.prepare_hessian()
        # LIBLINEAR starts the diagonal's sums from 1; with several blocks the 1 is added once, after.
        diag_init = 1.0 if len(self.parts) == 1 else 0.0
        out = self._buffers("grad", 2)
        g = self._plus(w, [part.grad_part(diag_init, out) for part in self.parts])
        self._wait()
        self.seconds["XTu"] += time.perf_counter() - start
        return g

    def hv(self, s):
        start = time.perf_counter()
        bufs = self._buffers("hv", 1)
        out = self._plus(s, [part.hv_part(self._to(part, s), bufs) for part in self.parts])
        self._wait()
        self.seconds["Hv"] += time.perf_counter() - start
        return out

    def diag(self):
        """Diagonal of the Hessian at the last :meth:`grad` point, shape (n_features,) (made by :meth:`grad`)."""
        out = self._sum_vectors([part.diag for part in self.parts])
        return out if len(self.parts) == 1 else 1.0 + out

    # Line search of LIBLINEAR >= 2.40: f(w + a s) from z + a X s, without new passes over X.
    def line_prepare(self, w, s) -> tuple[float, float]:
        start = time.perf_counter()
        for part in self.parts:
            part.line_prepare(self._to(part, s))
        self.seconds["Xw"] += time.perf_counter() - start
        return self.ops.seq_dot(s, w), self.ops.seq_dot(s, s)

    def line_fun(self, alpha: float, wTs: float, sTs: float) -> float:
        start = time.perf_counter()
        loss = sum(float(part.line_value(alpha)) for part in self.parts)
        self.seconds["Xw"] += time.perf_counter() - start
        return loss + (alpha * alpha * sTs + self.wTw) / 2.0 + alpha * wTs

    def line_accept(self, alpha: float, wTs: float, sTs: float) -> None:
        for part in self.parts:
            part.line_accept(alpha)
        self.wTw += alpha * alpha * sTs + 2 * alpha * wTs
