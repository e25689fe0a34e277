"""TRON on a LocalCluster on loopback: the single-process objective and iterations for 1, 2 and 3 workers."""

import numpy as np
import pytest
import scipy.sparse

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from dtlab.distributed.cluster import local_cluster  # noqa: E402
from dtlab.distributed.dask_executor import alive_workers  # noqa: E402
from dtlab.linear import TronLinearSVC, TronLogisticRegression  # noqa: E402
from dtlab.linear.synthetic import make_sparse_classification  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")


@pytest.fixture(scope="module", params=[1, 2, 3], ids=lambda n: f"{n}workers")
def client(request):
    with local_cluster(n_workers=request.param, processes=False) as c:
        yield c


@pytest.fixture(scope="module")
def sparse_data():
    X, y = make_sparse_classification(n_samples=3_000, n_features=400, nnz_per_row=8.0, seed=3)
    return X, np.where(y > 0, "spam", "ham")


@pytest.mark.parametrize("estimator", [TronLogisticRegression, TronLinearSVC])
@pytest.mark.parametrize("solver", ["tron", "newton"])
def test_same_objective_and_iterations_as_one_process(client, sparse_data, estimator, solver):
    X, y = sparse_data
    params = dict(C=4.0, solver=solver, tol=0.01, fit_intercept=True)
    local = estimator(**params, n_jobs=1).fit(X, y)
    dist = estimator(**params, executor=client).fit(X, y)
    assert dist.n_iter_ == local.n_iter_ and dist.n_cg_iter_ == local.n_cg_iter_
    assert abs(dist.objective_ - local.objective_) <= 1e-10 * abs(local.objective_)
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-5, atol=1e-8 * np.abs(local.coef_).max())
    assert list(dist.classes_) == ["ham", "spam"]
    assert dist.placement_["placement"] == "dask"
    assert len(dist.placement_["workers"]) == len(alive_workers(client))
    np.testing.assert_array_equal(dist.predict(X), local.predict(X))


def test_dask_arrays_of_csr_and_dense_chunks(client, sparse_data):
    X, y = sparse_data
    y_pm = np.where(y == "spam", 1, 0)
    local = TronLogisticRegression(C=2.0, n_jobs=1).fit(X, y_pm)
    csr = scipy.sparse.csr_matrix(X)
    blocks = [da.from_delayed(_delayed_block(csr[a:a + 700]), shape=(min(700, X.shape[0] - a), X.shape[1]),
                              dtype=np.float64, meta=csr[:0]) for a in range(0, X.shape[0], 700)]
    Xd = da.concatenate(blocks, axis=0)
    yd = da.from_array(y_pm, chunks=500)  # not aligned with X's chunks: rechunked to them
    on_csr = TronLogisticRegression(C=2.0, executor=client).fit(Xd, yd)
    dense = da.from_array(X.toarray(), chunks=(1000, 200))  # two column chunks, merged per row block
    on_dense = TronLogisticRegression(C=2.0, executor=client).fit(dense, da.from_array(y_pm, chunks=1000))
    for fit in (on_csr, on_dense):
        assert fit.n_iter_ == local.n_iter_
        assert abs(fit.objective_ - local.objective_) <= 1e-10 * abs(local.objective_)


def _delayed_block(block):
    import dask

    return dask.delayed(lambda: block)()


def test_bad_input_on_dask_is_a_clear_error(client):
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="only one class"):
        TronLogisticRegression(executor=client).fit(X, np.ones(50))
    for estimator in (TronLogisticRegression, TronLinearSVC):  # what one process does and a Dask fit does not
        with pytest.raises(ValueError, match=r"a Dask fit trains two classes only \(one-vs-rest runs in one "
                                             r"process, executor='local'\): y has 3 classes"):
            estimator(executor=client).fit(X, np.arange(50) % 3)
        with pytest.raises(ValueError, match="class_weight is not supported with a Dask executor"):
            estimator(executor=client, class_weight="balanced").fit(X, np.arange(50) % 2)
        with pytest.raises(ValueError, match="class_weight is not supported with a Dask executor"):
            estimator(executor=client, class_weight={0: 1.0, 1: 3.0}).fit(da.from_array(X), np.arange(50) % 2)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        TronLogisticRegression(executor=client).fit(bad, np.arange(50) % 2)
    with pytest.raises(ValueError, match="executor='dask'"):
        TronLogisticRegression().fit(da.from_array(X), np.arange(50) % 2)
    with pytest.raises(ValueError, match="CPU kernels"):
        TronLogisticRegression(executor=client, backend="cuda").fit(X, np.arange(50) % 2)
