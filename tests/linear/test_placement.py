"""Where the rows live: the GPU code path (numpy under the simulator) and the mixed GPU + CPU split."""

import warnings

import numpy as np
import pytest

from dtlab.backend import resolve_backend
from dtlab.linear import TronLinearSVC, TronLogisticRegression
from dtlab.linear.placement import build_objective, device_bytes, rows_that_fit

pytestmark = pytest.mark.filterwarnings("error::UserWarning")


@pytest.fixture
def cuda():
    be = resolve_backend("cuda")
    if not be.simulated:
        pytest.skip("these tests run the device path with numpy under numba's simulator")
    return be


def test_device_bytes_and_rows_that_fit(small_problem):
    X, _ = small_problem
    need = device_bytes(X, "logistic")
    assert device_bytes(X, "squared_hinge") > need > device_bytes(X, "logistic", 10)
    assert rows_that_fit(X, "logistic", need) == X.shape[0]
    k = rows_that_fit(X, "logistic", need // 2)
    assert 0 < k < X.shape[0]
    assert device_bytes(X, "logistic", k) <= need // 2 < device_bytes(X, "logistic", k + 1)
    assert rows_that_fit(X, "logistic", 0) == 0


@pytest.mark.parametrize("cls", [TronLogisticRegression, TronLinearSVC])
@pytest.mark.parametrize("dense", [False, True])
def test_device_and_mixed_placements_agree_with_the_cpu(cls, dense, small_problem, cuda):
    X, y = small_problem
    X = X.toarray() if dense else X
    cpu = cls(C=3.0, tol=1e-4, backend="cpu").fit(X, y)
    gpu = cls(C=3.0, tol=1e-4, backend="cuda").fit(X, y)
    assert gpu.backend_ == "cuda" and gpu.placement_["placement"] == "device"
    budget = device_bytes(X, cls._loss) // 2
    mixed = cls(C=3.0, tol=1e-4, backend="cuda", placement="mixed", device_memory=budget).fit(X, y)
    where = mixed.placement_
    assert where["placement"] == "mixed" and 0 < where["device_rows"] < X.shape[0]
    assert where["device_rows"] + where["host_rows"] == X.shape[0]
    for est in (gpu, mixed):
        assert est.objective_ == pytest.approx(cpu.objective_, rel=1e-10)
        assert abs(est.n_iter_ - cpu.n_iter_) <= 1
        np.testing.assert_allclose(est.coef_, cpu.coef_, rtol=1e-6, atol=1e-8)


def test_auto_chooses_mixed_with_a_message_when_the_data_do_not_fit(small_problem, cuda):
    X, y = small_problem
    with pytest.warns(UserWarning, match=r"using the mixed placement, \d+ of 300 rows on the GPU"):
        est = TronLinearSVC(backend="cuda", device_memory=device_bytes(X, "squared_hinge") // 3).fit(X, y)
    assert est.placement_["placement"] == "mixed"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fits = TronLinearSVC(backend="cuda", device_memory=10 * device_bytes(X, "squared_hinge")).fit(X, y)
    assert fits.placement_["placement"] == "device"


def test_device_placement_that_does_not_fit_is_a_clear_error(small_problem, cuda):
    X, y = small_problem
    with pytest.raises(MemoryError, match="placement='mixed'"):
        TronLogisticRegression(backend="cuda", placement="device", device_memory=1000).fit(X, y)


def test_nothing_fits_runs_on_the_host(small_problem, cuda):
    X, y = small_problem
    with pytest.warns(UserWarning, match="0 of 300 rows"):
        est = TronLogisticRegression(backend="cuda", device_memory=0).fit(X, y)
    assert est.placement_["device_rows"] == 0
    assert est.objective_ == pytest.approx(TronLogisticRegression(backend="cpu").fit(X, y).objective_, rel=1e-12)


def test_svm_active_set_is_formed_in_the_block(small_problem, cuda):
    """On a device block the L2-SVM's X_I is a gather in the block's own array module."""
    X, y = small_problem
    obj, info = build_objective(X, y, 1.0, "squared_hinge", cuda, "device")
    w = np.full(X.shape[1], 0.05)
    obj.fun(w)
    obj.grad(w)
    part = obj.parts[0]
    active = np.flatnonzero(y * (X @ w) < 1)
    assert part.active.n_rows == len(active) and type(part.active.X) is type(X)
    np.testing.assert_allclose(part.active.X.toarray(), X[active].toarray())
    assert info["placement"] == "device"


def test_placement_only_with_cuda(small_problem):
    X, y = small_problem
    with pytest.raises(ValueError, match="applies to backend='cuda' only"):
        TronLogisticRegression(backend="cpu", placement="device").fit(X, y)


@pytest.mark.parametrize("cls", [TronLogisticRegression, TronLinearSVC])
def test_long_rows_read_through_the_order_give_the_copied_rows_model(cls, monkeypatch):
    """CSR rows of at least ``READ_THROUGH_ORDER_MIN_ROW_NNZ`` entries on average are read in place through
    LIBLINEAR's row order rather than copied into it: the same sums in the same order, so the same model to the
    bit, on one thread and two."""
    import scipy.sparse

    from dtlab.linear import placement

    rng = np.random.default_rng(4)
    X = scipy.sparse.random(300, 2_000, density=0.04, format="csr", random_state=rng)  # 80 entries a row
    y = np.where(X @ rng.normal(size=2_000) + 0.1 * rng.normal(size=300) > 0, 1, -1)
    assert X.nnz >= placement.READ_THROUGH_ORDER_MIN_ROW_NNZ * X.shape[0]
    for n_jobs in (1, 2):
        read_through = cls(C=2.0, backend="cpu", n_jobs=n_jobs).fit(X, y)
        with monkeypatch.context() as m:
            m.setattr(placement, "READ_THROUGH_ORDER_MIN_ROW_NNZ", 10 ** 9)
            copied = cls(C=2.0, backend="cpu", n_jobs=n_jobs).fit(X, y)
        assert np.array_equal(read_through.coef_, copied.coef_) and read_through.n_iter_ == copied.n_iter_
