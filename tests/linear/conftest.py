"""Fixtures of the linear tests."""

import numpy as np
import pytest


@pytest.fixture
def small_problem():
    """A small sparse problem with an empty row and an empty column (both allowed)."""
    import scipy.sparse

    rng = np.random.default_rng(3)
    X = scipy.sparse.random(300, 40, density=0.15, random_state=4, format="csr")
    X = X.tolil()
    X[5, :] = 0
    X[:, 7] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    w = rng.standard_normal(40)
    y = np.where(X @ w + 0.3 * rng.standard_normal(300) > 0, 1.0, -1.0)
    return X, y
