"""The vector operations TRON's solver asks of an objective (``objective.ops``): reductions and CG's updates.

:class:`XpOps` serves any array module (with cupy, dot products stay 0-d device
arrays until ``fetch``); :class:`dtlab.linear.losses.LiblinearVectorOps` serves
the host in LIBLINEAR's order of additions, with the CG updates fused.
"""

from __future__ import annotations

import math


class XpOps:
    """Reductions for objectives that bring none (``objective.ops``), in the array module ``xp``.

    ``dot`` and ``uMv`` return scalars of ``xp`` (with cupy: 0-d device arrays, no synchronisation);
    ``fetch`` brings several of them to the host in one copy; ``seq_dot`` and ``norm`` return host floats.
    """

    def __init__(self, xp):
        self.xp = xp

    def dot(self, u, v):
        return self.xp.dot(u, v)

    def seq_dot(self, u, v) -> float:
        return float(self.xp.dot(u, v))

    def norm(self, v) -> float:
        return math.sqrt(float(self.xp.dot(v, v)))

    def uMv(self, u, M, v):
        return self.xp.dot(u * M, v)

    def floor(self, value, tiny: float = 1e-300):
        """``max(value, tiny)`` without a copy to the host (a divisor whose quotient may go unused)."""
        return self.xp.maximum(value, tiny)

    def fetch(self, *values) -> tuple:
        """Host floats of ``values`` (scalars of ``xp``): one copy for all of them."""
        if self.xp.__name__ == "numpy":
            return tuple(float(v) for v in values)
        return tuple(float(v) for v in self.xp.stack([self.xp.asarray(v, dtype=float) for v in values]).get())

    # CG's vector updates: new arrays here; the host's ops (losses.LiblinearVectorOps) fuse them in place
    def cg_start(self, g, M):
        """``s = 0``, ``r = -g``, ``z = d = r / M`` and ``z.r``."""
        s = self.xp.zeros(g.shape[0])
        r = -g
        z = r / M
        return s, r, z, z.copy(), self.dot(z, r)

    def cg_trial(self, alpha, d, Hd, s, r, g, M, spare=None):
        """The step's ``s + alpha d``, ``r - alpha Hd``, ``z = r / M``, quadratic model and ``z.r`` (``spare``:
        vectors an implementation may write them into)."""
        s_new = s + alpha * d
        r_new = r - alpha * Hd
        newQ = -0.5 * (self.dot(s_new, r_new) - self.dot(s_new, g))
        z_new = r_new / M
        return s_new, r_new, z_new, newQ, self.dot(z_new, r_new)

    def cg_direction(self, zTr_new, zTr, d, z):
        """The next direction ``(zTr_new / zTr) d + z`` (possibly ``d`` updated in place)."""
        return (zTr_new / zTr) * d + z

    def tr_trial(self, alpha, d, Hd, s, r, M, spare=None):
        """The trust-region CG's step ``s + alpha d``, residual ``r - alpha Hd``, ``z = r / M``, ``z.r`` and the
        step's ``s.M.s`` (``spare``: vectors an implementation may write the three vectors into)."""
        s_new = s + alpha * d
        r_new = r - alpha * Hd
        z_new = r_new / M
        return s_new, r_new, z_new, self.dot(z_new, r_new), self.uMv(s_new, M, s_new)

    def axpy(self, a, x, y, out=None):
        """``y + a x`` (``out``: a vector an implementation may write it into, ``y`` itself included)."""
        # 1.0 x is x (a host float only: comparing a device scalar would synchronise)
        return y + x if type(a) is float and a == 1.0 else y + a * x

    def preconditioner(self, diag, a):
        """LIBLINEAR's ``(1 - a) + a diag`` (an implementation may write into a vector of its own, valid until
        the next call)."""
        return (1 - a) + a * diag


class _WithCgUpdates(XpOps):
    """An objective's own reductions with :class:`XpOps`' CG updates (for ``ops`` that bring none)."""

    def __init__(self, ops, xp):
        super().__init__(xp)
        for name in ("dot", "seq_dot", "norm", "uMv", "floor", "fetch"):
            if hasattr(ops, name):
                setattr(self, name, getattr(ops, name))


def with_cg_updates(ops, xp):
    """``ops``, or where it brings no CG updates, ``ops`` with :class:`XpOps`' ones."""
    return ops if hasattr(ops, "cg_trial") else _WithCgUpdates(ops, xp)
