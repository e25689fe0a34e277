"""The stable partition of the sorted attribute lists."""

import numpy as np

from dtlab.splits.presort import _partition_feature


def test_partition_is_stable(rng):
    n, F = 50, 3
    rows = np.stack([rng.permutation(n) for _ in range(F)]).astype(np.int32)
    vals = rng.random((F, n)).astype(np.float32)
    ylist = rng.normal(size=(F, n))
    goes_left = (rng.random(n) < 0.4).astype(np.uint8)
    s, e = 10, 40
    expected = []
    for g in range(F):
        seg = np.arange(s, e)
        left = seg[goes_left[rows[g, seg]] == 1]
        right = seg[goes_left[rows[g, seg]] == 0]
        expected.append(np.concatenate([left, right]))
    r0, v0, y0 = rows.copy(), vals.copy(), ylist.copy()
    tmp_r, tmp_v, tmp_y = np.empty_like(rows), np.empty_like(vals), np.empty_like(ylist)
    for g in range(F):
        _partition_feature(g, 0, rows, vals, ylist, s, e, goes_left, tmp_r, tmp_v, tmp_y)
        np.testing.assert_array_equal(rows[g, s:e], r0[g, expected[g]])
        np.testing.assert_array_equal(vals[g, s:e], v0[g, expected[g]])
        np.testing.assert_array_equal(ylist[g, s:e], y0[g, expected[g]])
        np.testing.assert_array_equal(rows[g, :s], r0[g, :s])
