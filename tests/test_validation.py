"""Shared input validation."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

from dtlab._validation import check_int, check_real, check_X, check_y, sorted_labels_and_codes


def test_check_X_accepts_and_converts():
    out = check_X([[1, 2], [3, 4]])
    assert out.dtype == np.float32 and out.flags.c_contiguous


@pytest.mark.parametrize("X, error, message", [
    (np.zeros(3), ValueError, "2-D"),
    (np.zeros((0, 2)), ValueError, "at least 1"),
    (np.zeros((2, 0)), ValueError, "no columns"),
    (np.array([[np.nan, 1.0]]), ValueError, "NaN"),
    (np.array([["a", "b"]]), TypeError, "numeric"),
    (pd.DataFrame({"a": [1.0], "b": ["x"]}), TypeError, "non-numeric columns"),
    (scipy.sparse.eye(2), TypeError, "sparse"),
])
def test_check_X_rejects(X, error, message):
    with pytest.raises(error, match=message):
        check_X(X)


def test_check_X_nan_allowed_but_not_inf():
    assert np.isnan(check_X([[np.nan]], allow_nan=True)).all()
    with pytest.raises(ValueError, match="inf"):
        check_X([[np.inf]], allow_nan=True)


def test_check_y():
    assert check_y([1, 2], 2).tolist() == [1, 2]
    with pytest.raises(ValueError, match="must match"):
        check_y([1, 2, 3], 2)
    with pytest.raises(ValueError, match="NaN"):
        check_y([1.0, np.nan], 2, numeric=True)
    with pytest.raises(TypeError, match="numeric"):
        check_y(["a", "b"], 2, numeric=True)


def test_scalar_checks():
    assert check_int(3, "k", low=1) == 3
    with pytest.raises(TypeError):
        check_int(True, "k")
    with pytest.raises(ValueError, match=">= 1"):
        check_int(0, "k", low=1)
    with pytest.raises(ValueError):
        check_real(-0.1, "alpha", low=0)
    with pytest.raises(TypeError):
        check_real(float("nan"), "alpha")


@pytest.mark.parametrize("y", [
    np.array([1, -1, 1, 0, 7, -1]),
    np.array([0.0, -0.0, 2.5, 2.5, -3.0]),  # -0.0 and 0.0 are one label
    np.array([True, False, True]),
    np.array([3, 3, 3], dtype=np.uint8),
    np.array([2**62, -(2**62), 2**62]),  # int64 beyond float64's exact integers
    np.array(["b", "a", "b"]),
    np.array(["b", "a", "b"], dtype=object),
    np.array([], dtype=np.float64),
])
def test_sorted_labels_and_codes_is_np_unique(y):
    classes, codes = sorted_labels_and_codes(y)
    want_classes, want_codes = np.unique(y, return_inverse=True)
    assert classes.dtype == want_classes.dtype
    np.testing.assert_array_equal(classes, want_classes)
    np.testing.assert_array_equal(codes, want_codes)
    np.testing.assert_array_equal(classes[codes], y)


def test_sorted_labels_and_codes_with_many_classes_or_nan_is_np_unique():
    rng = np.random.default_rng(0)
    for y in (rng.integers(0, 40, 500), np.array([1.0, np.nan, 0.0, 1.0]), rng.random(100)):
        classes, codes = sorted_labels_and_codes(y, max_passes=8)
        want_classes, want_codes = np.unique(y, return_inverse=True)
        np.testing.assert_array_equal(classes, want_classes)
        np.testing.assert_array_equal(codes, want_codes)
