"""Histogram split search: bins, histogram kernel against numpy, subtraction, and the same trees as exact
search where every distinct value has its own bin."""

import numpy as np
import pytest

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from dtlab.boosting.grower import ColumnData
from dtlab.boosting.hist import HistSearch, bin_edges


def test_bin_edges_put_each_few_distinct_value_in_its_own_bin(rng):
    x = rng.choice(np.array([-1.5, 0.0, 2.0, 7.25], np.float32), size=200)
    cuts = bin_edges(x, 256)
    np.testing.assert_array_equal(cuts, np.array([-0.75, 1.0, 4.625], np.float32))
    bins = np.searchsorted(cuts, x, side="right")
    for b, v in enumerate([-1.5, 0.0, 2.0, 7.25]):
        assert (bins[x == np.float32(v)] == b).all()


def test_bin_edges_are_quantiles_for_many_values(rng):
    x = rng.normal(size=10_000).astype(np.float32)
    cuts = bin_edges(x, 16)
    assert cuts.shape[0] <= 14 and (np.diff(cuts) > 0).all()
    counts = np.bincount(np.searchsorted(cuts, x, side="right"))
    assert counts.min() > 0.5 * counts.mean()  # roughly equal-count bins


@pytest.mark.parametrize("n_workers", [1, 2])
def test_histograms_and_subtraction_against_numpy(rng, n_workers):
    n, d = 300, 4
    X = rng.integers(0, 20, size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < 0.2] = np.nan
    search = HistSearch(ColumnData.from_input(X), n_workers, 32)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.1, 1, size=n).astype(np.float32)
    search.start_tree(g, h)

    def reference(rows):
        hg = np.zeros((d, 32))
        for f in range(d):
            np.add.at(hg[f], search.bins[rows, f], g[rows].astype(np.float64))
        return hg

    best_f, best, thr, left = search.find(1, np.array([g.sum(dtype=np.float64)]), np.array([h.sum(dtype=np.float64)]),
                                          np.array([n]), 1.0, 0.0)
    np.testing.assert_allclose(search.hg[0], reference(np.arange(n)), rtol=1e-12, atol=1e-12)
    assert best_f[0] >= 0
    search.split(np.array([0]), best_f.astype(np.int64), thr, left, None, None)
    column = X[:, best_f[0]]
    goes_left = np.where(np.isnan(column), left[0], column < thr[0])  # the tree's test
    rows_left, rows_right = np.flatnonzero(goes_left), np.flatnonzero(~goes_left)
    # the children's segments of the row order: a stable partition (row order kept)
    np.testing.assert_array_equal(search.nseg, [0, rows_left.size, n])
    np.testing.assert_array_equal(search.order[:rows_left.size], rows_left)
    np.testing.assert_array_equal(search.order[rows_left.size:], rows_right)
    sums = [g[rows].sum(dtype=np.float64) for rows in (rows_left, rows_right)]
    hsums = [h[rows].sum(dtype=np.float64) for rows in (rows_left, rows_right)]
    search.find(2, np.array(sums), np.array(hsums), np.array([rows_left.size, rows_right.size]), 1.0, 0.0)
    np.testing.assert_allclose(search.hg[0], reference(rows_left), atol=1e-9)
    np.testing.assert_allclose(search.hg[1], reference(rows_right), atol=1e-9)  # one of them by subtraction


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_hist_with_a_bin_per_value_grows_the_exact_trees(rng, missing):
    """With fewer distinct values than bins the candidates are the exact search's: the same trees."""
    n, d = 800, 4
    X = (rng.integers(0, 40, size=(n, d)) * 0.25).astype(np.float32)
    y = (np.sin(X[:, 0]) + X[:, 1] * 0.1 + rng.normal(size=n) * 0.2).astype(np.float32)
    X[rng.random((n, d)) < missing] = np.nan
    kw = dict(n_estimators=6, max_depth=4, base_score=0.0)
    exact = GBDTRegressor(split_method="exact", **kw).fit(X, y)
    hist = GBDTRegressor(split_method="hist", **kw).fit(X, y)
    for a, b in zip(exact.trees_, hist.trees_):
        # the same features; a threshold may sit elsewhere in a gap of values that no row of the node holds
        # (an empty bin: the same split of the rows)
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.missing_left, b.missing_left)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(exact.predict(X), hist.predict(X), atol=1e-5)


def test_hist_accuracy_close_to_exact_on_continuous_data(rng):
    from sklearn.metrics import roc_auc_score

    n = 3000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] ** 2 - 1 + 0.5 * rng.normal(size=n) > 0).astype(int)
    tr = np.arange(n) < 2000
    auc = {}
    for method in ("exact", "hist"):
        m = GBDTClassifier(n_estimators=20, max_depth=4, split_method=method, max_bins=64).fit(X[tr], y[tr])
        auc[method] = roc_auc_score(y[~tr], m.predict_proba(X[~tr])[:, 1])
    assert abs(auc["exact"] - auc["hist"]) < 0.01


@pytest.mark.parametrize("n_chunks,parallel", [(1, False), (3, False), (3, True), (7, True)])
def test_split_rows_is_the_stable_partition_whatever_the_chunks(rng, n_chunks, parallel):
    from dtlab.boosting._rows_cpu import _split_rows

    n, d, miss_bin = 500, 3, 15
    bins = rng.integers(0, 16, size=(n, d)).astype(np.uint8)  # bin 15: missing
    order = rng.permutation(n).astype(np.int32)
    nseg = np.array([0, 120, 120, 300, n], np.int64)  # four nodes, the second empty
    split_k = np.array([0, 1, 3], np.int64)  # node 2 stops splitting
    split_f = np.array([2, 0, 1], np.int64)
    split_bin = np.array([6, 3, 10], np.int64)
    split_left = np.array([True, False, False])
    order_out = np.full(n, -1, np.int32)
    marked = np.full(n, 9, np.uint8)  # each row's side, at its position in the parent's order
    new_seg = np.zeros(2 * split_k.size + 1, np.int64)
    np.cumsum(nseg[split_k + 1] - nseg[split_k], out=new_seg[2::2])
    columns = np.ascontiguousarray(bins.T)  # the bins by feature, as the split reads them
    _split_rows(n_chunks, parallel, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin,
                order_out, new_seg, marked)
    for j, (k, f, b, ml) in enumerate(zip(split_k, split_f, split_bin, split_left)):
        rows = order[nseg[k]:nseg[k + 1]]
        v = bins[rows, f]
        goes_left = np.where(v == miss_bin, ml, v <= b)
        np.testing.assert_array_equal(marked[nseg[k]:nseg[k + 1]], goes_left.astype(np.uint8))
        expected = np.concatenate([rows[goes_left], rows[~goes_left]])  # each side in the parent's order
        np.testing.assert_array_equal(order_out[new_seg[2 * j]:new_seg[2 * j + 2]], expected)
        assert new_seg[2 * j + 1] - new_seg[2 * j] == goes_left.sum()


def test_one_pass_split_is_the_two_pass_split_with_the_childrens_sums(rng):
    """The serial split (rows and the children's sums in one pass) against the parallel kernel's two passes
    and the segment sums, bit for bit, and the sums against a plain loop in row order."""
    from dtlab.boosting._rows_cpu import _segment_sums, _split_rows, _split_rows_summed

    n, d, miss_bin = 600, 3, 15
    bins = rng.integers(0, 16, size=(n, d)).astype(np.uint8)
    columns = np.ascontiguousarray(bins.T)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.1, 1.0, size=n).astype(np.float32)
    order = rng.permutation(n).astype(np.int32)
    nseg = np.array([0, 150, 150, 320, 400, n], np.int64)  # five nodes, the second empty
    split_k = np.array([0, 1, 3, 4], np.int64)  # node 2 stops splitting
    split_f = np.array([2, 0, 1, 0], np.int64)
    split_bin = np.array([6, 3, 15, -1], np.int64)  # node 3: every present value left; node 4: none
    split_left = np.array([True, False, False, True])
    new_seg = np.zeros(2 * split_k.size + 1, np.int64)
    np.cumsum(nseg[split_k + 1] - nseg[split_k], out=new_seg[2::2])
    two_seg, one_seg = new_seg.copy(), new_seg.copy()
    two_pass, one_pass = np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    _split_rows(1, False, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, two_pass, two_seg,
                np.empty(n, np.uint8))
    sums = _split_rows_summed(columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, one_pass,
                              one_seg, g, h, np.empty(n, np.int32))
    np.testing.assert_array_equal(one_seg, two_seg)
    np.testing.assert_array_equal(one_pass[:one_seg[-1]], two_pass[:two_seg[-1]])
    for ours, theirs in zip(sums, _segment_sums(two_pass, two_seg, g, h)):
        np.testing.assert_array_equal(ours, theirs)
    for c in range(2 * split_k.size):
        rows = one_pass[one_seg[c]:one_seg[c + 1]]
        total_g = total_h = 0.0
        for r in rows:  # the children's rows in the parent's order, added one by one
            total_g += float(g[r])
            total_h += float(h[r])
        assert (sums[0][c], sums[1][c], sums[2][c]) == (total_g, total_h, rows.size)


@pytest.mark.parametrize("n_workers", [1, 2])
def test_bins_are_the_number_of_cuts_at_or_below_each_value(rng, n_workers):
    n = 3_000
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 5, size=n), np.round(rng.normal(size=n), 1),
                         np.full(n, 2.5)]).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    search = HistSearch(ColumnData.from_input(X), n_workers, 64)
    for f in range(X.shape[1]):
        x = X[:, f]
        cuts = bin_edges(x[~np.isnan(x)], 64)
        np.testing.assert_array_equal(search.cuts[f], cuts)
        expected = np.where(np.isnan(x), 63, np.searchsorted(cuts, np.nan_to_num(x), side="right"))
        np.testing.assert_array_equal(search.bins[:, f], expected)


@pytest.mark.parametrize("n_cuts", [0, 1, 7, 254])
def test_bin_values_is_the_number_of_cuts_at_or_below_each_value(rng, n_cuts):
    from dtlab.boosting._hist_cpu import _bin_values, padded_cuts

    values = np.concatenate([rng.normal(size=2000), rng.integers(-3, 4, 500), [0.0, -0.0, 1e30, -1e30]])
    values = values.astype(np.float32)
    cuts = np.unique(rng.choice(values, n_cuts, replace=False)) if n_cuts else np.empty(0, np.float32)
    values = np.concatenate([values, cuts])  # values equal to a cut go right of it
    rows = rng.permutation(values.shape[0]).astype(np.int32)
    out = np.full(values.shape[0], 255, np.uint8)
    _bin_values(values, rows, padded_cuts(cuts.astype(np.float32)), out)
    expected = np.empty_like(out)
    expected[rows] = np.searchsorted(cuts, values, side="right")
    assert np.array_equal(out, expected)


def test_radix_sort_sorts_float_keys_as_np_sort(rng):
    from dtlab.boosting.dask.bins import _keys_into, _radix_sort, float32_keys

    values = np.concatenate([rng.normal(size=3001), [0.0, -0.0, -5.0, 5.0, np.inf, -np.inf] * 3]).astype(np.float32)
    keys = np.empty(values.shape[0], np.uint32)
    _keys_into(values, keys)
    assert np.array_equal(keys, float32_keys(values))  # the one-pass kernel makes the same keys
    expected = np.sort(keys)
    _radix_sort(keys, np.empty_like(keys))
    assert np.array_equal(keys, expected)


@pytest.mark.parametrize("missing_left", [True, False])
def test_equal_gains_keep_xgboost_hists_bin(missing_left):
    """Bins 1 and 2 empty: splits after bins 0, 1 and 2 have the same gain.  XGBoost hist scans "missing right"
    from the lowest bin up and "missing left" from the highest bin down, keeping the first of equal gains in
    each: the lowest of the tied bins when the missing rows go right, the highest when they go left."""
    from dtlab.boosting._hist_cpu import _best_bin_split

    g_miss = -5.0 if missing_left else 5.0  # with the negative bin 0, or with the positive bins 3 and 4
    hg = np.array([-5.0, 0.0, 0.0, 5.0, 5.0, 0.0, g_miss])  # 5 present bins, one unused, the missing bin
    hh = np.array([5.0, 0.0, 0.0, 5.0, 5.0, 0.0, 5.0])
    bufs = np.empty((3, hg.shape[0]))
    gain, last_left, left = _best_bin_split(hg, hh, 5, hg.sum(), hh.sum(), True, 1.0, 1.0,
                                            np.arange(hg.shape[0], dtype=np.float32), *bufs)
    assert gain > 0 and left == missing_left
    assert last_left == (2 if missing_left else 0)
    # no missing value in the feature: one scan, XGBoost's forward one (the lowest of the tied bins)
    hg[-1] = hh[-1] = 0.0
    gain, last_left, _ = _best_bin_split(hg, hh, 5, hg.sum(), hh.sum(), False, 1.0, 1.0,
                                         np.arange(hg.shape[0], dtype=np.float32), *bufs)
    assert gain > 0 and last_left == 0
