"""The radix sort kernel: the permutation of a stable argsort, for any float32 data and worker count."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dtlab.splits import SORTS, radix_argsort
from dtlab.splits.sort import _merge, _radix_segment

floats = st.floats(allow_nan=False, width=32)


@settings(max_examples=60, deadline=None)
@given(values=arrays(np.float32, st.integers(0, 300), elements=floats),
       workers=st.integers(1, 5))
def test_radix_argsort_is_the_stable_argsort(values, workers):
    expected = np.argsort(values + np.float32(0.0), kind="stable")  # -0.0 equals 0.0
    np.testing.assert_array_equal(radix_argsort(values, workers), expected)
    np.testing.assert_array_equal(SORTS["numpy"](values), expected)
    np.testing.assert_array_equal(SORTS["auto"](values), expected)


@settings(max_examples=30, deadline=None)
@given(values=arrays(np.float32, st.integers(2, 200), elements=st.sampled_from([-1.5, 0.0, 2.0, 3.0])))
def test_many_ties_keep_row_order(values):
    order = radix_argsort(values, 3)
    for v in np.unique(values):
        rows = order[values[order] == v]
        assert (np.diff(rows) > 0).all()


def test_segment_sort_and_merge_kernels(rng):
    keys = rng.integers(0, 2**32, size=101, dtype=np.uint64).astype(np.uint32)
    keys[::5] = keys[0]
    idx = np.arange(101, dtype=np.int32)
    k, i = keys.copy(), idx.copy()
    _radix_segment(k, i, 10, 60, np.empty_like(k), np.empty_like(i))
    _radix_segment(k, i, 60, 101, np.empty_like(k), np.empty_like(i))
    out_k, out_i = np.empty_like(k), np.empty_like(i)
    _merge(k, i, 10, 60, 101, out_k, out_i)
    expected = 10 + np.argsort(keys[10:], kind="stable")
    np.testing.assert_array_equal(out_i[10:], expected)
    np.testing.assert_array_equal(out_k[10:], keys[expected])


@pytest.mark.parametrize("sort", sorted(SORTS))
def test_presort_with_either_sort_gives_the_same_lists(rng, sort):
    from dtlab.splits import presort_columns

    data = rng.integers(0, 9, size=50).astype(np.float32)
    indptr = np.array([0, 20, 20, 50])
    rows = np.concatenate([np.arange(20), np.arange(30)]).astype(np.int32)
    a = presort_columns(indptr, rows, data)
    b = presort_columns(indptr, rows, data, SORTS[sort])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_auto_sort_uses_the_radix_sort_for_long_columns(rng, monkeypatch):
    from dtlab.splits import sort as _sort

    calls = []
    monkeypatch.setattr(_sort, "RADIX_MIN_KEYS", 100)
    monkeypatch.setattr(_sort, "radix_argsort", lambda v, w=None: calls.append(len(v)) or np.argsort(v, kind="stable"))
    x = rng.normal(size=150).astype(np.float32)
    _sort.presort_argsort(x[:50])
    _sort.presort_argsort(x)
    assert calls == [150]
