"""Kernels of dtlab.greedy against plain reference implementations."""

import numpy as np
import pytest

from dtlab.greedy import _draws, _node_rules
from dtlab.greedy._scans_cpu import SCANS
from dtlab.greedy.builder import as_float32_features, sklearn_seed
from dtlab.splits import presort, scan_prefix
from dtlab.testing import random_sorted_segment

#: The trailing arguments of scan_prefix for the greedy trees: no missing rows, no min_child_weight, first on ties.
NO_MISSING = (0.0, 0.0, False, 0.0, False)
#: The greedy scans, compiled without and with weights.
UNWEIGHTED, WEIGHTED = SCANS["unweighted"], SCANS["weighted"]


def _incremental(xs, ys, msl, ws=None):
    """The incremental scan of a node without missing values: (best, left size)."""
    m = len(xs)
    best, k, left = (UNWEIGHTED if ws is None else WEIGHTED)["scan_incremental"](
        xs, ys, ws, m, m, msl, _node_rules.FEATURE_THRESHOLD)
    assert not left
    return best, k


def _xorshift_reference(seed, count):
    """scikit-learn's our_rand_r, written with numpy uint32 arithmetic."""
    state = np.uint32(seed)
    out = []
    with np.errstate(over="ignore"):
        for _ in range(count):
            if state == 0:
                state = np.uint32(1)
            state ^= np.uint32(state << np.uint32(13))
            state ^= np.uint32(state >> np.uint32(17))
            state ^= np.uint32(state << np.uint32(5))
            out.append(int(state % np.uint32(2**31)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**31 - 2])
def test_rand_int_is_sklearn_xorshift(seed):
    expected = _xorshift_reference(seed, 50)
    state = np.array([seed], dtype=np.int64)
    got = [_draws._rand_int(0, 2**31, state) for _ in range(50)]
    assert got == expected
    # the plain function (used by the CUDA host loop) is the same generator
    state = np.array([seed], dtype=np.int64)
    assert [_draws.rand_int(3, 10, state) for _ in range(20)] == [3 + v % 7 for v in expected[:20]]


def test_sklearn_seed_is_first_randint_draw():
    assert sklearn_seed(7) == np.random.RandomState(7).randint(0, _node_rules.RAND_R_MAX)
    rs = np.random.RandomState(3)
    assert sklearn_seed(rs) == np.random.RandomState(3).randint(0, _node_rules.RAND_R_MAX)


def test_presort_is_stable_value_then_row_order(rng):
    X = rng.integers(-3, 4, size=(200, 3)).astype(np.float64)
    X[::7, 0] = -0.0
    X[:, 2] = rng.normal(size=200)
    X32 = as_float32_features(X)
    rows = presort(np.ascontiguousarray(X32.T))
    for f in range(3):
        expected = np.lexsort((np.arange(200), X32[:, f]))
        np.testing.assert_array_equal(rows[f], expected)


def _reference_best_split(xs, ys, msl):
    """Best proxy B_L^2/n_L + B_R^2/n_R over valid positions, computed plainly."""
    m = len(xs)
    best, best_nl = -np.inf, -1
    for nl in range(1, m):
        if nl < msl or m - nl < msl or xs[nl] <= xs[nl - 1] + _node_rules.FEATURE_THRESHOLD:
            continue
        bl, br = ys[:nl].sum(), ys[nl:].sum()
        p = bl * bl / nl + br * br / (m - nl)
        if p > best:
            best, best_nl = p, nl
    return best, best_nl


@pytest.mark.parametrize("msl", [1, 3])
def test_mse_scans_agree_with_reference(rng, msl):
    for trial in range(20):
        m = int(rng.integers(2, 60))
        xs = np.sort(rng.integers(0, 8, m).astype(np.float32) if trial % 2 else rng.random(m).astype(np.float32))
        ys = rng.normal(size=m)
        thr = _node_rules.FEATURE_THRESHOLD
        vec = scan_prefix(xs, ys, None, 0, m, msl, 0.0, thr, np.empty(m), None, *NO_MISSING)
        inc = _incremental(xs, ys, msl)
        assert vec == inc  # same sums in the same order: bit for bit
        assert _incremental(xs, ys, msl, np.ones(m)) == inc  # unit weights: the weighted scan, to the bit
        ref = _reference_best_split(xs, ys, msl)
        assert vec[1] == ref[1]
        if ref[1] > 0:
            assert vec[0] == pytest.approx(ref[0], rel=1e-12)


@pytest.mark.parametrize("msl", [1, 3])
def test_prefix_scan_with_unit_hessian_is_the_regression_scan(rng, msl):
    thr = _node_rules.FEATURE_THRESHOLD
    for trial in range(20):
        n, s, e, xs = random_sorted_segment(rng, trial)
        g = rng.normal(size=n)
        unit = scan_prefix(xs, g, None, s, e, msl, 0.0, thr, np.empty(n), None, *NO_MISSING)
        ones = scan_prefix(xs, g, np.ones(n), s, e, msl, 0.0, thr, np.empty(n), np.empty(n), *NO_MISSING)
        inc = _incremental(xs[s:e], g[s:e], msl)
        assert unit == ones == inc  # bit for bit


def test_rules_compiled_equal_plain_and_child_rule_is_sklearns(rng):
    for _ in range(300):
        max_depth = int(rng.integers(0, 5))
        msl = int(rng.integers(1, 4))
        mss = _node_rules.min_split(int(rng.integers(2, 8)), msl)
        depth = int(rng.integers(0, 5))
        m = int(rng.integers(1, 20))
        nl = int(rng.integers(1, m + 1))
        imp, imp_l, imp_r = rng.choice([0.0, 1e-17, 0.1, 0.5, 2.0], size=3)
        for name, args in [("is_leaf", (depth, m, imp, max_depth, mss, msl)),
                           ("keeps_split", (1000, m, nl, imp, imp_l, imp_r)),
                           ("improvement", (1000, m, nl, imp, imp_l, imp_r)),
                           ("child_can_split", (depth, nl, m - nl, imp_l, imp_r, max_depth, mss, msl))]:
            rule = getattr(_node_rules, name)
            assert rule(*args) == rule.py_func(*args)
        # the test the grower used before it was written with is_leaf
        expected = depth + 1 < max_depth and ((nl >= mss and imp_l > _node_rules.EPSILON) or
                                              (m - nl >= mss and imp_r > _node_rules.EPSILON))
        assert _node_rules.child_can_split(depth, nl, m - nl, imp_l, imp_r, max_depth, mss, msl) == expected


def test_naive_scan_finds_same_position(rng):
    for _ in range(20):
        m = int(rng.integers(2, 40))
        x = rng.random(m).astype(np.float32)
        y = rng.normal(size=m)
        samples = np.arange(m, dtype=np.int64)
        xs = np.sort(x)
        naive = UNWEIGHTED["scan_naive"](xs, x, y, None, samples, 0, m, m, 1, _node_rules.FEATURE_THRESHOLD)[:2]
        assert WEIGHTED["scan_naive"](xs, x, y, np.ones(m), samples, 0, m, m, 1,
                                      _node_rules.FEATURE_THRESHOLD)[:2] == naive
        order = np.argsort(x, kind="stable")
        ref = _reference_best_split(xs, y[order], 1)
        assert naive[1] == ref[1]
        assert naive[0] == pytest.approx(ref[0], rel=1e-12)


def test_feature_threshold_merges_close_values():
    xs = np.array([0.0, 5e-8, 1.0, 1.0, 2.0], dtype=np.float32)
    ys = np.array([0.0, 10.0, 0.0, 0.0, 0.0])
    best, nl = _incremental(xs, ys, 1)
    assert nl != 1  # 0 and 5e-8 are one value: no threshold between them
    assert nl == 2


def test_gini_scan_matches_plain_gini(rng):
    for _ in range(10):
        m = int(rng.integers(2, 50))
        xs = np.sort(rng.integers(0, 6, m)).astype(np.float32)
        ys = rng.integers(0, 3, m).astype(np.int32)
        scratch = [np.zeros(3) for _ in range(3)]
        best, nl, _, _, _ = UNWEIGHTED["scan_classes"](xs, ys, None, 0, m, m, 1, _node_rules.FEATURE_THRESHOLD,
                                                        _node_rules.GINI, *scratch)
        assert WEIGHTED["scan_classes"](xs, ys, np.ones(m), 0, m, m, 1, _node_rules.FEATURE_THRESHOLD,
                                        _node_rules.GINI, *scratch)[:2] == (best, nl)
        ref_best, ref_nl = -np.inf, -1
        for k in range(1, m):
            if xs[k] <= xs[k - 1]:
                continue
            cl, cr = np.bincount(ys[:k], minlength=3), np.bincount(ys[k:], minlength=3)
            p = -(m - k) * (1 - (cr ** 2).sum() / (m - k) ** 2) - k * (1 - (cl ** 2).sum() / k ** 2)
            if p > ref_best:
                ref_best, ref_nl = p, k
        assert nl == ref_nl
        if nl > 0:
            assert best == pytest.approx(ref_best, rel=1e-12)


def test_select_feature_compiled_equals_plain():
    rng = np.random.default_rng(5)
    for trial in range(30):
        F = int(rng.integers(1, 7))
        n_known = int(rng.integers(0, F))
        args_f = dict(f_const=(rng.random(F) < 0.3).astype(np.uint8), f_score=rng.normal(size=F),
                      f_pos=np.where(rng.random(F) < 0.8, 1, -1).astype(np.int64), f_gain=rng.random(F),
                      f_ratio=rng.random(F))
        features0 = np.random.default_rng(trial).permutation(F).astype(np.int64)
        outs = []
        for fn in (_draws.select_feature, _draws._select_feature):
            features = features0.copy()
            constant = features0.copy()
            state = np.array([trial + 1], dtype=np.int64)
            best, n_total = fn(features, constant, n_known, state, args_f["f_const"], args_f["f_score"],
                               args_f["f_pos"], args_f["f_gain"], args_f["f_ratio"], _node_rules.MSE,
                               np.empty(F, np.int64))
            outs.append((best, n_total, features.tolist(), int(state[0])))
        assert outs[0] == outs[1]
        best = outs[0][0]
        if best >= 0:
            # the winner is a best-scoring non-constant feature with a valid split
            drawn = set(outs[0][2][outs[0][1]:])
            candidates = [f for f in drawn if args_f["f_pos"][f] >= 0]
            assert args_f["f_score"][best] == max(args_f["f_score"][f] for f in candidates)
