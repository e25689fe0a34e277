"""Dask arrays and DataFrames, predicted partition by partition on a LocalCluster on loopback."""

import numpy as np
import pytest

from dtlab.inference import Forest
from dtlab.testing import random_grid_tree
from tests.inference.test_methods import GRID, grid_rows

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def forest_and_rows():
    rng = np.random.default_rng(0)
    trees = [random_grid_tree(rng, 4, 5, GRID, n_outputs=3) for _ in range(4)]
    return Forest(trees), grid_rows(rng, 230, 4, np.float64)


def test_dask_array_without_a_client(forest_and_rows):
    forest, X = forest_and_rows
    got = forest.predict(da.from_array(X, chunks=(50, 2)), method="traversal")
    np.testing.assert_allclose(got.compute(scheduler="sync"), forest.predict(X, method="traversal"), rtol=1e-12)


def test_dask_array_and_dataframe_on_a_cluster(client, forest_and_rows):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    forest, X = forest_and_rows
    expected = forest.predict(X, method="bitmask")
    got = forest.predict(da.from_array(X, chunks=(40, 4)), method="bitmask")
    np.testing.assert_allclose(got.compute(), expected, rtol=1e-12)
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcd")), npartitions=3)
    out = forest.predict(frame, method="quickscorer").compute()
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12)
    assert list(out.index) == list(range(len(X)))


def test_dask_wrong_columns(forest_and_rows):
    forest, _ = forest_and_rows
    with pytest.raises(ValueError, match="shape"):
        forest.predict(da.zeros((10, 5), chunks=5))
