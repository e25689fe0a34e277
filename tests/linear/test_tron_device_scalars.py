"""TRON with the dot products kept on the device: one host copy per CG iteration, the same iterates."""

import numpy as np
import pytest

from dtlab.linear._row_blocks import ArrayRows
from dtlab.linear.losses import LOSSES, L2Objective
from dtlab.linear.tron import XpOps, tron


class DeviceScalar:
    """A scalar that lives on a 'device': arithmetic stays there, reading it on the host is an error."""

    def __init__(self, value):
        self.v = float(value)

    def _op(self, other, fn):
        other = other.v if isinstance(other, DeviceScalar) else other
        out = fn(self.v, other)
        return DeviceScalar(out) if np.isscalar(out) else out

    __add__ = lambda self, o: self._op(o, lambda a, b: a + b)  # noqa: E731
    __sub__ = lambda self, o: self._op(o, lambda a, b: a - b)  # noqa: E731
    __mul__ = lambda self, o: self._op(o, lambda a, b: a * b)  # noqa: E731
    __truediv__ = lambda self, o: self._op(o, lambda a, b: a / b)  # noqa: E731
    __radd__ = lambda self, o: self._op(o, lambda a, b: b + a)  # noqa: E731
    __rsub__ = lambda self, o: self._op(o, lambda a, b: b - a)  # noqa: E731
    __rmul__ = lambda self, o: self._op(o, lambda a, b: b * a)  # noqa: E731
    __rtruediv__ = lambda self, o: self._op(o, lambda a, b: b / a)  # noqa: E731
    __neg__ = lambda self: DeviceScalar(-self.v)  # noqa: E731

    def __float__(self):
        raise AssertionError("a device scalar was read on the host without fetch (an implicit synchronisation)")

    __bool__ = __lt__ = __le__ = __gt__ = __ge__ = __index__ = __float__


class CountingOps(XpOps):
    """XpOps over numpy whose dot products are device scalars; counts the copies to the host."""

    def __init__(self):
        super().__init__(np)
        self.copies = 0

    def dot(self, u, v):
        return DeviceScalar(np.dot(u, v))

    def uMv(self, u, M, v):
        return DeviceScalar(np.dot(u * M, v))

    def floor(self, value, tiny=1e-300):
        return DeviceScalar(max(value.v, tiny))

    def fetch(self, *values):
        self.copies += 1
        return tuple(v.v for v in values)

    def seq_dot(self, u, v):
        self.copies += 1
        return super().seq_dot(u, v)

    def norm(self, v):
        self.copies += 1
        return super().norm(v)


def _objective(rng, loss):
    X = rng.normal(size=(200, 12))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=200) > 0, 1.0, -1.0)
    return L2Objective([LOSSES[loss](ArrayRows(X, np), y, 1.0)], np)


@pytest.mark.parametrize("method", ["trust_region", "line_search"])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_device_scalars_give_the_same_iterates_with_one_copy_per_cg_iteration(method, loss):
    rng = np.random.default_rng(0)
    host = _objective(rng, loss)
    host.ops = XpOps(np)  # host floats: a copy (synchronisation, on a GPU) per dot product
    expected = tron(host, eps=1e-4, method=method)
    dev = _objective(np.random.default_rng(0), loss)
    dev.ops = ops = CountingOps()
    got = tron(dev, eps=1e-4, method=method)
    np.testing.assert_array_equal(got.w, expected.w)
    assert (got.fun, got.n_iter, got.n_cg) == (expected.fun, expected.n_iter, expected.n_cg)
    for key in ("objective", "grad_norm", "step_size", "cg_iter"):
        np.testing.assert_array_equal(got.history[key], expected.history[key])
    assert got.n_cg > 5
    # per CG iteration one fetch; per Newton iteration a handful (the step's scalars, |g|, the line search's)
    assert ops.copies <= got.n_cg + 6 * got.n_iter + 4, (ops.copies, got.n_cg, got.n_iter)
