"""The prefix-sum scan over (g, h) against the gain formula computed plainly."""

import numpy as np
import pytest

from dtlab.splits import scan_prefix
from dtlab.testing import random_sorted_segment

#: Values closer than this are ties (the greedy trees' FEATURE_THRESHOLD; any small float32 works here).
FEATURE_THRESHOLD = np.float32(1e-7)
#: The trailing arguments of scan_prefix for the greedy trees: no missing rows, no min_child_weight, first on ties.
NO_MISSING = (0.0, 0.0, False, 0.0, False)


def _reference_gain_scan(xs, g, h, lam, msl):
    """Best ``G_L^2/(H_L+lam) + G_R^2/(H_R+lam)`` over valid positions (the first on ties), in numpy."""
    m = len(xs)
    nl = np.arange(1, m)
    gl, hl = np.cumsum(g)[:-1], np.cumsum(h)[:-1]
    gain = gl * gl / (hl + lam) + (g.sum() - gl) ** 2 / (h.sum() - hl + lam)
    valid = (nl >= msl) & (m - nl >= msl) & (xs[1:] > xs[:-1] + FEATURE_THRESHOLD)
    if not valid.any():
        return -np.inf, -1
    gain = np.where(valid, gain, -np.inf)
    k = int(np.argmax(gain))
    return gain[k], int(nl[k])


@pytest.mark.parametrize("msl", [1, 3])
def test_prefix_scan_with_hessians_is_the_gain_formula(rng, msl):
    thr = FEATURE_THRESHOLD
    n_found = 0
    for trial in range(30):
        n, s, e, xs = random_sorted_segment(rng, trial)
        g = rng.normal(size=n)
        h = rng.uniform(0.05, 1.0, size=n)  # e.g. p (1 - p) of a logistic loss
        lam = float(rng.choice([0.0, 0.5, 3.0]))
        best, nl = scan_prefix(xs, g, h, s, e, msl, lam, thr, np.empty(n), np.empty(n), *NO_MISSING)
        ref_best, ref_nl = _reference_gain_scan(xs[s:e], g[s:e], h[s:e], lam, msl)
        assert nl == ref_nl
        if ref_nl > 0:
            n_found += 1
            assert best == pytest.approx(ref_best, rel=1e-12)
        else:
            assert best == -np.inf
    assert n_found > 10
