"""Real-GPU checks of the linear technique (``make gpu-check``): cupy arrays, cuSPARSE products, the mixed split."""

import numpy as np
import pytest

from dtlab.datasets import load_a9a
from dtlab.linear import TronLinearSVC, TronLogisticRegression
from dtlab.linear.placement import build_objective, device_bytes

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("cls", [TronLogisticRegression, TronLinearSVC])
@pytest.mark.parametrize("dense", [False, True])
def test_gpu_and_mix_agree_with_the_cpu(cls, dense):
    d = load_a9a()
    X = d.X.toarray() if dense else d.X
    cpu = cls(C=4.0, tol=0.1, backend="cpu").fit(X, d.y)
    gpu = cls(C=4.0, tol=0.1, backend="cuda").fit(X, d.y)
    mix = cls(C=4.0, tol=0.1, backend="cuda", placement="mixed", device_memory=device_bytes(X, cls._loss) // 2)
    mix.fit(X, d.y)
    assert gpu.placement_["placement"] == "device" and mix.placement_["placement"] == "mixed"
    for est in (gpu, mix):
        assert est.objective_ == pytest.approx(cpu.objective_, rel=1e-6)
        assert abs(est.n_iter_ - cpu.n_iter_) <= 1
        assert isinstance(est.coef_, np.ndarray)


def test_rows_and_vectors_live_on_the_device():
    import cupy

    from dtlab.backend import resolve_backend

    d = load_a9a()
    y = np.where(d.y > 0, 1.0, -1.0)
    obj, info = build_objective(d.X, y, 4.0, "squared_hinge", resolve_backend("cuda"), "device")
    w = cupy.zeros(d.X.shape[1])
    obj.fun(w)
    g = obj.grad(w)
    part = obj.parts[0]
    assert type(part.block.X).__module__.startswith("cupyx") and isinstance(part.z, cupy.ndarray)
    assert type(part.active.X).__module__.startswith("cupyx")  # X_I formed on the device
    assert isinstance(g, cupy.ndarray) and isinstance(obj.hv(g), cupy.ndarray)
