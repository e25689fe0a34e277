"""CPU kernels of the greedy top-down inducers, and the depth-first grower.

The whole tree is grown inside one numba function (:func:`_grow`) so that a
deep tree (the unlimited-depth regression tree on the 100,000-row diabetes
data has ~150,000 nodes) costs no Python per node.  The grower mirrors
scikit-learn's ``DepthFirstTreeBuilder`` + ``BestSplitter`` step by step --
node order, stopping rules, the split-position rules (``FEATURE_THRESHOLD``,
midpoint thresholds of float32 values), the impurity formulas and even the
xorshift feature permutation that breaks ties -- so that the same
``random_state`` grows the same tree (bit for bit whenever the sums involved
are exact, e.g. integer targets or class counts).

Three ways of finding the best split of a node on one feature, after the
"SIMD decision tree" university project (a C regression tree with variance
reduction, trained on the Kaggle diabetes prediction data):

``NAIVE``
    sort the node's values, then for every candidate threshold recompute both
    sides' squared error from scratch with a pass over the node (O(n^2)).
``INCREMENTAL``
    sort the node's values, then move one row at a time from the right side to
    the left and update the running sums B (of y) and A (of y^2), the project's
    ``B_S`` and ``A_S``: each side's squared error ``A - B^2 / n`` is O(1),
    so a feature costs O(n log n) for the sort plus O(n) for the scan.
``VECTORIZED``
    presort every feature once at the root (attribute lists as in SLIQ /
    SPRINT), keep each node a contiguous segment of every list by stable
    partitioning after each split, and evaluate all candidate positions of a
    segment at once from prefix sums -- branch-free loops that LLVM turns into
    SIMD code -- in parallel over features (``prange``) for large nodes.

Because ``SSE_L + SSE_R = A_S - B_L^2 / n_L - B_R^2 / n_R`` and ``A_S`` does
not depend on the split, the incremental and vectorised scans rank candidates
by scikit-learn's proxy ``B_L^2 / n_L + B_R^2 / n_R``; both accumulate B in the
same (value, row) order, so they agree bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np

#: Two float32 feature values closer than this are one value (scikit-learn's rule).
FEATURE_THRESHOLD = np.float32(1e-7)
#: Impurities below this count as zero (scikit-learn's ``EPSILON``).
EPSILON = float(np.finfo(np.float64).eps)
#: Upper bound of scikit-learn's ``our_rand_r`` draws.
RAND_R_MAX = 2147483647

# Criteria and methods are passed to the kernels as small ints.
MSE, GINI, ENTROPY, GAIN_RATIO = 0, 1, 2, 3
CRITERIA = {"squared_error": MSE, "gini": GINI, "entropy": ENTROPY, "gain_ratio": GAIN_RATIO}
NAIVE, INCREMENTAL, VECTORIZED = 0, 1, 2
METHODS = {"naive": NAIVE, "incremental": INCREMENTAL, "vectorized": VECTORIZED}

#: A node whose ``n_node_samples * n_features`` reaches this is scanned and
#: partitioned in parallel over features (``prange``); below it a parallel
#: region costs more than it saves -- on a machine shared with other work a
#: region can wait a whole scheduler time slice for a free core.
PARALLEL_MIN_WORK = 1_000_000

_LN2 = float(np.log(2.0))
# error_model="numpy": a float division by zero gives inf instead of raising,
# so divisions carry no per-element check and loops over them vectorise (no
# kernel here divides by zero: every side of a candidate split is non-empty).
_NJIT = dict(cache=True, nogil=True, error_model="numpy")


# ------------------------------------------------------------------ random
def rand_int(low, high, state):
    """scikit-learn's ``rand_int``: a xorshift32 draw in ``[low, high)``.

    Parameters
    ----------
    low, high : int
    state : int64 array of shape (1,)
        The generator state (a uint32 held in an int64), updated in place.
    """
    s = state[0]
    if s == 0:
        s = 1
    s ^= (s << 13) & 0xFFFFFFFF
    s ^= s >> 17
    s ^= (s << 5) & 0xFFFFFFFF
    state[0] = s
    return low + (s % (RAND_R_MAX + 1)) % (high - low)


_rand_int = numba.njit(rand_int, **_NJIT)


# ------------------------------------------------------- split selection
def select_feature(features, constant_features, n_known, state, f_const, f_score, f_pos,
                   f_gain, f_ratio, criterion, visit):
    """Draw the features of a node in scikit-learn's order and pick the best split.

    Replays the Fisher-Yates loop of scikit-learn's ``node_split_best`` with
    ``max_features = n_features``: known-constant features are drawn and
    skipped, newly constant ones are moved to the constant block, and among the
    others the first one (in draw order) with the highest score wins.  That
    order only matters for ties, but it is what makes a tie go the way
    scikit-learn's does.

    Parameters
    ----------
    features, constant_features : int64 arrays of shape (n_features,)
        The splitter's persistent permutation and constant-feature record,
        updated in place exactly as scikit-learn updates them.
    n_known : int
        Number of features known (from ancestors) to be constant.
    state : int64 array of shape (1,)
    f_const : uint8 array (n_features,)
        Whether each not-known-constant feature is constant in the node.
    f_score, f_gain, f_ratio : float64 arrays (n_features,)
        Per feature: best criterion score (larger is better), and for
        ``GAIN_RATIO`` the MDL-corrected information gain and gain ratio.
    f_pos : int64 array (n_features,)
        Left size of each feature's best split, -1 if it has no valid split.
    criterion : int
    visit : int64 scratch array (n_features,)

    Returns
    -------
    best_feature : int (-1: no valid split)
    n_total_constants : int
        Constant features known to the children.
    """
    n_features = features.shape[0]
    f_i = n_features
    n_visited = 0
    n_found = 0
    n_drawn = 0
    n_total = n_known
    best_f = -1
    best_score = -np.inf
    n_valid = 0
    while f_i > n_total and (n_visited < n_features or n_visited <= n_found + n_drawn):
        n_visited += 1
        f_j = _rand_int(n_drawn, f_i - n_found, state)
        if f_j < n_known:
            tmp = features[n_drawn]
            features[n_drawn] = features[f_j]
            features[f_j] = tmp
            n_drawn += 1
            continue
        f_j += n_found
        f = features[f_j]
        if f_const[f]:
            tmp = features[f_j]
            features[f_j] = features[n_total]
            features[n_total] = tmp
            n_found += 1
            n_total += 1
            continue
        f_i -= 1
        tmp = features[f_i]
        features[f_i] = features[f_j]
        features[f_j] = tmp
        if f_pos[f] < 0:
            continue
        if criterion == GAIN_RATIO:
            if f_gain[f] > 0.0:
                visit[n_valid] = f
                n_valid += 1
        elif f_score[f] > best_score:
            best_score = f_score[f]
            best_f = f
    if criterion == GAIN_RATIO and n_valid > 0:
        # C4.5 / Weka J48: the best gain ratio among the attributes whose
        # (MDL-corrected) gain is at least the average gain, less 1e-3.
        mean_gain = 0.0
        for k in range(n_valid):
            mean_gain += f_gain[visit[k]]
        mean_gain /= n_valid
        best_ratio = -np.inf
        for k in range(n_valid):
            f = visit[k]
            if f_gain[f] >= mean_gain - 1e-3 and f_ratio[f] > best_ratio:
                best_ratio = f_ratio[f]
                best_f = f
    for k in range(n_known):
        features[k] = constant_features[k]
    for k in range(n_known, n_known + n_found):
        constant_features[k] = features[k]
    return best_f, n_total


_select_feature = numba.njit(select_feature, **_NJIT)


# ------------------------------------------------------ regression scans
@numba.njit(**_NJIT)
def _scan_mse_prefix(xs, ys, s, e, msl, thr, buf):
    """Vectorised scan of one sorted segment: prefix sums, then every position at once.

    Parameters
    ----------
    xs : float32 array, sorted on ``[s, e)``
    ys : float64 array, the targets in the same order
    msl : int, min_samples_leaf
    thr : float32, FEATURE_THRESHOLD
    buf : float64 scratch of length >= e - s

    Returns
    -------
    best : float64, the best proxy ``B_L^2/n_L + B_R^2/n_R`` (-inf if none)
    n_left : int, left size of the best split (-1 if none)
    """
    m = e - s
    acc = 0.0
    for i in range(m):  # B_S of every prefix: the running sum as one scan
        acc += ys[s + i]
        buf[i] = acc
    total = acc
    lo = max(msl, 1)
    hi = m - msl
    if lo > hi:
        return -np.inf, -1
    # every position at once, in place (position nl reads buf[nl - 1] and
    # overwrites it).  Views that start at index 0 and no branches (ties get
    # -inf through a select) let LLVM vectorise the loop, divisions included.
    count = hi - lo + 1
    left_sums = buf[lo - 1: hi]
    x_before = xs[s + lo - 1: s + hi]
    x_after = xs[s + lo: s + hi + 1]
    fm = np.float64(m)
    for k in range(count):
        nl = np.float64(lo + k)
        sl = left_sums[k]
        sr = total - sl
        proxy = sl * sl / nl + sr * sr / (fm - nl)
        left_sums[k] = proxy if x_after[k] > x_before[k] + thr else -np.inf
    best = -np.inf
    best_k = -1
    for k in range(count):
        if left_sums[k] > best:
            best = left_sums[k]
            best_k = k
    if best_k < 0:
        return -np.inf, -1
    return best, lo + best_k


@numba.njit(**_NJIT)
def _scan_mse_incremental(xs, ys, s, e, msl, thr):
    """One row at a time: update B (and A) as each row moves to the left side.

    Same result as :func:`_scan_mse_prefix`, bit for bit (same sums in the
    same order), written as the project wrote it: a loop with a branch per row.
    """
    m = e - s
    total = 0.0
    for i in range(m):
        total += ys[s + i]
    b_left = 0.0
    a_left = 0.0  # A_S of the left side: gives its squared error a_left - b_left**2 / n_left
    best = -np.inf
    best_nl = -1
    for nl in range(1, m):
        y = ys[s + nl - 1]
        b_left += y
        a_left += y * y
        if nl < msl:
            continue
        if m - nl < msl:
            break
        if xs[s + nl] <= xs[s + nl - 1] + thr:
            continue  # a tie: no threshold between equal values
        b_right = total - b_left
        # SSE_L + SSE_R = A_S - (B_L^2/n_L + B_R^2/n_R): A_S is the same for every
        # split, so the largest bracket is the smallest squared error.
        proxy = b_left * b_left / nl + b_right * b_right / (m - nl)
        if proxy > best:
            best = proxy
            best_nl = nl
    return best, best_nl


@numba.njit(**_NJIT)
def _scan_mse_naive(xs, X_f, y, samples, s, e, msl, thr):
    """Recompute both sides' sums for every candidate threshold (O(n^2)).

    ``xs`` holds the node's sorted values of the feature.  For each candidate
    the node's rows are walked in row order and split by value, and both sides'
    ``n``, ``B = sum y`` and ``A = sum y^2`` -- hence their variances
    ``A/n - (B/n)^2`` -- are recomputed from scratch.  Candidates are ranked
    by ``B_L^2/n_L + B_R^2/n_R`` (``SSE_L + SSE_R = A_S`` minus it), the
    quantity the other scans rank by, so that all three agree whenever the sums
    are exact.
    """
    m = e - s
    best = -np.inf
    best_nl = -1
    for nl in range(max(msl, 1), m - msl + 1):
        if xs[nl] <= xs[nl - 1] + thr:
            continue
        cut = xs[nl - 1]
        n_l = 0
        b_l = 0.0
        a_l = 0.0
        b_r = 0.0
        a_r = 0.0
        for i in range(s, e):
            r = samples[i]
            v = y[r]
            if X_f[r] <= cut:
                n_l += 1
                b_l += v
                a_l += v * v
            else:
                b_r += v
                a_r += v * v
        n_r = m - n_l
        # variance of each side: a/n - (b/n)^2; the split with the smallest
        # n_l var_l + n_r var_r = (a_l + a_r) - (b_l^2/n_l + b_r^2/n_r) wins
        proxy = b_l * b_l / n_l + b_r * b_r / n_r
        if proxy > best:
            best = proxy
            best_nl = nl
    return best, best_nl


# --------------------------------------------------- classification scan
@numba.njit(**_NJIT)
def _entropy_term(count, n):
    """``p log2 p`` for ``p = count / n`` (0 for an empty class), as scikit-learn computes it."""
    if count <= 0.0:
        return 0.0
    p = count / n
    return p * (np.log(p) / _LN2)


@numba.njit(**_NJIT)
def _scan_classes(xs, ys, s, e, msl, thr, criterion, cnt_l, cnt_r):
    """Scan one sorted segment for a classification criterion.

    Class counts move one row at a time; the Gini score uses the running sums of
    squared counts (exact integers, so the score equals scikit-learn's to the
    last bit).  Scores are scikit-learn's proxies ``-n_L I_L - n_R I_R``.

    Returns
    -------
    best : float64
    n_left : int (-1 if no valid split)
    gain : float64
        MDL-corrected information gain (bits) of the best split (``GAIN_RATIO``).
    ratio : float64
        Its gain ratio (``GAIN_RATIO``).
    """
    m = e - s
    n_classes = cnt_l.shape[0]
    for c in range(n_classes):
        cnt_l[c] = 0.0
        cnt_r[c] = 0.0
    for i in range(s, e):
        cnt_r[int(ys[i])] += 1.0
    sq_l = 0.0
    sq_r = 0.0
    h_node = 0.0
    for c in range(n_classes):
        sq_r += cnt_r[c] * cnt_r[c]
        h_node -= _entropy_term(cnt_r[c], float(m))
    best = -np.inf
    best_nl = -1
    best_hl = 0.0
    best_hr = 0.0
    n_candidates = 0
    for nl in range(1, m):
        c = int(ys[s + nl - 1])
        sq_l += 2.0 * cnt_l[c] + 1.0
        cnt_l[c] += 1.0
        sq_r -= 2.0 * cnt_r[c] - 1.0
        cnt_r[c] -= 1.0
        if nl < msl:
            continue
        if m - nl < msl:
            break
        if xs[s + nl] <= xs[s + nl - 1] + thr:
            continue
        n_candidates += 1
        fl = float(nl)
        fr = float(m - nl)
        if criterion == GINI:
            proxy = -fr * (1.0 - sq_r / (fr * fr)) - fl * (1.0 - sq_l / (fl * fl))
            if proxy > best:
                best = proxy
                best_nl = nl
        else:
            h_l = 0.0
            h_r = 0.0
            for k in range(n_classes):
                h_l -= _entropy_term(cnt_l[k], fl)
                h_r -= _entropy_term(cnt_r[k], fr)
            proxy = -fr * h_r - fl * h_l
            if proxy > best:
                best = proxy
                best_nl = nl
                best_hl = h_l
                best_hr = h_r
    gain = 0.0
    ratio = 0.0
    if criterion == GAIN_RATIO and best_nl > 0:
        pl = best_nl / m
        pr = (m - best_nl) / m
        gain = h_node - pl * best_hl - pr * best_hr
        gain -= np.log(n_candidates) / _LN2 / m  # C4.5 release 8's MDL correction
        split_info = -(pl * np.log(pl) + pr * np.log(pr)) / _LN2
        ratio = gain / split_info
    return best, best_nl, gain, ratio


# ------------------------------------------------------ per-feature scans
@numba.njit(**_NJIT)
def _scan_presorted_feature(f, slot, criterion, vals, ylist, s, e, msl, thr, buf, cnt,
                            f_const, f_score, f_pos, f_thr, f_gain, f_ratio):
    """Best split of feature ``f`` on the node ``[s, e)``; scratch row ``slot`` of ``buf`` / ``cnt``."""
    if vals[f, e - 1] <= vals[f, s] + thr:
        f_const[f] = 1
        return
    f_const[f] = 0
    gain = 0.0
    ratio = 0.0
    if criterion == MSE:
        best, nl = _scan_mse_prefix(vals[f], ylist[f], s, e, msl, thr, buf[slot])
    else:
        best, nl, gain, ratio = _scan_classes(vals[f], ylist[f], s, e, msl, thr, criterion,
                                              cnt[slot, 0], cnt[slot, 1])
    f_score[f] = best
    f_pos[f] = nl
    f_gain[f] = gain
    f_ratio[f] = ratio
    if nl > 0:
        # midpoint of two float32 values, exact in float64 (scikit-learn's threshold)
        f_thr[f] = np.float64(vals[f, s + nl - 1]) / 2.0 + np.float64(vals[f, s + nl]) / 2.0


@numba.njit(parallel=True, **_NJIT)
def _scan_presorted_parallel(active, n_active, criterion, vals, ylist, s, e, msl, thr, buf, cnt,
                             f_const, f_score, f_pos, f_thr, f_gain, f_ratio):
    for k in numba.prange(n_active):
        _scan_presorted_feature(active[k], k, criterion, vals, ylist, s, e, msl, thr, buf, cnt,
                                f_const, f_score, f_pos, f_thr, f_gain, f_ratio)


@numba.njit(**_NJIT)
def _scan_sorting_feature(f, method, XT, y, samples, s, e, msl, thr, f_const, f_score, f_pos, f_thr):
    """Naive / incremental: gather the node's values of feature ``f`` and sort them."""
    m = e - s
    xb = np.empty(m, dtype=np.float32)
    for i in range(m):
        xb[i] = XT[f, samples[s + i]]
    lo = xb[0]
    hi = xb[0]
    for i in range(1, m):
        lo = min(lo, xb[i])
        hi = max(hi, xb[i])
    if hi <= lo + thr:
        f_const[f] = 1
        return
    f_const[f] = 0
    # stable sort of rows kept in row order: (value, row) order, as the presorted lists
    order = np.argsort(xb, kind="mergesort")
    xs = np.empty(m, dtype=np.float32)
    for i in range(m):
        xs[i] = xb[order[i]]
    if method == INCREMENTAL:
        ys = np.empty(m, dtype=np.float64)
        for i in range(m):
            ys[i] = y[samples[s + order[i]]]
        best, nl = _scan_mse_incremental(xs, ys, 0, m, msl, thr)
    else:
        best, nl = _scan_mse_naive(xs, XT[f], y, samples, s, e, msl, thr)
    f_score[f] = best
    f_pos[f] = nl
    if nl > 0:
        f_thr[f] = np.float64(xs[nl - 1]) / 2.0 + np.float64(xs[nl]) / 2.0


# ----------------------------------------------------------- partitioning
@numba.njit(**_NJIT)
def _partition_feature(g, slot, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y):
    """Stable partition of feature ``g``'s segment: left rows first, order kept.

    Branch-free: every entry is written both to the next left slot (``w <= i``,
    already read) and to the next right slot of the buffer, and the flag moves
    one of the two cursors.  Which rows go left looks random from any other
    feature's order, so a branch here would be mispredicted half the time.
    """
    w = s
    t = 0
    for i in range(s, e):
        r = rows[g, i]
        v = vals[g, i]
        yv = ylist[g, i]
        left = goes_left[r]
        rows[g, w] = r
        vals[g, w] = v
        ylist[g, w] = yv
        tmp_rows[slot, t] = r
        tmp_vals[slot, t] = v
        tmp_y[slot, t] = yv
        w += left
        t += 1 - left
    for i in range(t):
        rows[g, w + i] = tmp_rows[slot, i]
        vals[g, w + i] = tmp_vals[slot, i]
        ylist[g, w + i] = tmp_y[slot, i]


@numba.njit(parallel=True, **_NJIT)
def _partition_parallel(active, n_active, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y):
    for k in numba.prange(n_active):
        _partition_feature(active[k], k, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y)


# ------------------------------------------------------------ node stats
@numba.njit(**_NJIT)
def _reg_stats(ys, s, e):
    """Sum, sum of squares and scikit-learn's MSE impurity of ``ys[s:e]``.

    A node whose targets are all equal gets impurity exactly 0 (scikit-learn's
    ``sq/n - mean^2`` can leave rounding noise above ``EPSILON`` there, and then
    splits a pure node with a zero-gain split).
    """
    n = e - s
    b = 0.0
    a = 0.0
    lo = ys[s]
    hi = ys[s]
    for i in range(s, e):
        v = ys[i]
        b += v
        a += v * v
        lo = min(lo, v)
        hi = max(hi, v)
    imp = a / n - (b / n) * (b / n)
    if lo == hi:
        imp = 0.0
    return b, imp


@numba.njit(**_NJIT)
def _class_stats(ys, s, e, criterion, counts):
    """Class counts of ``ys[s:e]`` into ``counts`` and the Gini / entropy impurity."""
    for c in range(counts.shape[0]):
        counts[c] = 0.0
    for i in range(s, e):
        counts[int(ys[i])] += 1.0
    return _class_impurity(counts, float(e - s), criterion)


@numba.njit(**_NJIT)
def _class_impurity(counts, n, criterion):
    """Gini ``1 - sum p^2`` or entropy ``-sum p log2 p`` of class counts over ``n`` rows."""
    if criterion == GINI:
        sq = 0.0
        for c in range(counts.shape[0]):
            sq += counts[c] * counts[c]
        return 1.0 - sq / (n * n)
    h = 0.0
    for c in range(counts.shape[0]):
        h -= _entropy_term(counts[c], n)
    return h


# ------------------------------------------------------------ growable arrays
@numba.njit(**_NJIT)
def _grow_1d(a, size):
    """A copy of 1-D ``a`` in a larger array of length ``size`` (the tail uninitialised)."""
    b = np.empty(size, dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(**_NJIT)
def _grow_2d(a, size):
    """A copy of 2-D ``a`` in a larger array of ``size`` rows (the tail uninitialised)."""
    b = np.empty((size, a.shape[1]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


# ------------------------------------------------------------------ grower
@numba.njit(inline="always", **_NJIT)
def _push_node(st_int, st_imp, slot, start, end, depth, parent, is_left, n_known, impurity):
    """Write a pending node into stack slot ``slot``: its rows ``start:end``, depth, parent,
    side, known-constant feature count and impurity (read back in this order by the grower)."""
    st_int[slot, 0] = start
    st_int[slot, 1] = end
    st_int[slot, 2] = depth
    st_int[slot, 3] = parent
    st_int[slot, 4] = is_left
    st_int[slot, 5] = n_known
    st_imp[slot] = impurity


@numba.njit(**_NJIT)
def _grow(method, criterion, n_features, n_outputs, XT, y, rows, vals, ylist, max_depth,
          min_samples_split, min_samples_leaf, seed, parallel_min_work):
    """Grow a tree depth first, node by node as scikit-learn does.

    Parameters
    ----------
    method : int, NAIVE / INCREMENTAL / VECTORIZED
    criterion : int, MSE / GINI / ENTROPY / GAIN_RATIO
    n_features : int
    n_outputs : int, 1 (regression) or n_classes
    XT : float32 array (n_features, n_samples), the features one per row
        (naive / incremental; unused by VECTORIZED)
    y : float64 (regression) or int32 class codes (classification), (n_samples,)
    rows : int32 (n_features, n_samples); vals : float32; ylist : like y
        Presorted attribute lists, partitioned in place (VECTORIZED; empty otherwise).
    max_depth, min_samples_split, min_samples_leaf : int
    seed : int, initial state of scikit-learn's xorshift generator
    parallel_min_work : int, see :data:`PARALLEL_MIN_WORK`

    Returns
    -------
    feature, left, right : int32 (n_nodes,)
    threshold : float64 (n_nodes,)
    value : float64 (n_nodes, n_outputs), mean (regression) or class counts
    impurity : float64 (n_nodes,)
    n_node_samples : int64 (n_nodes,)
    missing_left : uint8 (n_nodes,)
    """
    n = y.shape[0]
    F = n_features
    thr = FEATURE_THRESHOLD
    msl = min_samples_leaf
    mss = max(min_samples_split, 2 * msl)
    state = np.empty(1, dtype=np.int64)
    state[0] = seed
    features = np.arange(F).astype(np.int64)
    constant_features = np.empty(F, dtype=np.int64)
    visit = np.empty(F, dtype=np.int64)
    active = np.empty(F, dtype=np.int64)
    f_const = np.zeros(F, dtype=np.uint8)
    f_score = np.empty(F, dtype=np.float64)
    f_pos = np.empty(F, dtype=np.int64)
    f_thr = np.empty(F, dtype=np.float64)
    f_gain = np.zeros(F, dtype=np.float64)
    f_ratio = np.zeros(F, dtype=np.float64)
    is_reg = criterion == MSE
    presorted = method == VECTORIZED
    # scratch rows: one per feature for parallel scans, row 0 otherwise (rows
    # that are never written are never touched, so they cost no memory)
    m_buf = n + 1 if presorted else 1
    buf = np.empty((F if presorted and is_reg else 1, m_buf), dtype=np.float64)
    cnt = np.zeros((F if presorted and not is_reg else 1, 2, n_outputs), dtype=np.float64)
    goes_left = np.zeros(n, dtype=np.uint8)
    tmp_rows = np.empty((F if presorted else 1, m_buf), dtype=rows.dtype)
    tmp_vals = np.empty((F if presorted else 1, m_buf), dtype=vals.dtype)
    tmp_y = np.empty((F if presorted else 1, m_buf), dtype=ylist.dtype)
    samples = np.arange(n).astype(np.int64) if not presorted else np.empty(1, dtype=np.int64)
    samp_tmp = np.empty(n if not presorted else 1, dtype=np.int64)
    child_counts = np.empty(n_outputs, dtype=np.float64)
    sorted_y = np.empty(n if not presorted else 1, dtype=y.dtype)

    # output arrays, grown by doubling
    cap = 1023
    o_feature = np.empty(cap, dtype=np.int32)
    o_threshold = np.empty(cap, dtype=np.float64)
    o_left = np.empty(cap, dtype=np.int32)
    o_right = np.empty(cap, dtype=np.int32)
    o_value = np.empty((cap, n_outputs), dtype=np.float64)
    o_impurity = np.empty(cap, dtype=np.float64)
    o_n = np.empty(cap, dtype=np.int64)
    o_missing = np.empty(cap, dtype=np.uint8)

    # stack of pending nodes: start, end, depth, parent, is_left, n_constant_features
    s_cap = 64
    st_int = np.empty((s_cap, 6), dtype=np.int64)
    st_imp = np.empty(s_cap, dtype=np.float64)
    st_val = np.empty((s_cap, n_outputs), dtype=np.float64)

    # root statistics, rows in row order (as scikit-learn's first node_impurity)
    if is_reg:
        b, imp = _reg_stats(y, 0, n)
        st_val[0, 0] = b / n
    else:
        imp = _class_stats(y, 0, n, criterion, child_counts)
        st_val[0] = child_counts
    _push_node(st_int, st_imp, 0, 0, n, 0, -1, 0, 0, imp)
    sp = 1
    n_nodes = 0
    while sp > 0:
        sp -= 1
        start = st_int[sp, 0]
        end = st_int[sp, 1]
        depth = st_int[sp, 2]
        parent = st_int[sp, 3]
        is_left = st_int[sp, 4]
        n_known = st_int[sp, 5]
        imp = st_imp[sp]
        m = end - start
        if n_nodes == cap:
            cap = 2 * cap + 1
            o_feature = _grow_1d(o_feature, cap)
            o_threshold = _grow_1d(o_threshold, cap)
            o_left = _grow_1d(o_left, cap)
            o_right = _grow_1d(o_right, cap)
            o_value = _grow_2d(o_value, cap)
            o_impurity = _grow_1d(o_impurity, cap)
            o_n = _grow_1d(o_n, cap)
            o_missing = _grow_1d(o_missing, cap)
        node = n_nodes
        n_nodes += 1
        if parent >= 0:
            if is_left:
                o_left[parent] = node
            else:
                o_right[parent] = node
        o_value[node] = st_val[sp]
        o_impurity[node] = imp
        o_n[node] = m
        o_feature[node] = -1
        o_threshold[node] = 0.0
        o_left[node] = -1
        o_right[node] = -1
        o_missing[node] = 1

        is_leaf = depth >= max_depth or m < mss or m < 2 * msl or imp <= EPSILON
        if is_leaf:
            continue

        # ---- per-feature best splits, for every feature not known to be constant
        n_active = F - n_known
        for k in range(n_active):
            active[k] = features[n_known + k]
        if presorted:
            if m * n_active >= parallel_min_work and n_active > 1:
                _scan_presorted_parallel(active, n_active, criterion, vals, ylist, start, end, msl, thr,
                                         buf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio)
            else:
                for k in range(n_active):
                    _scan_presorted_feature(active[k], 0, criterion, vals, ylist, start, end, msl, thr,
                                            buf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio)
        else:
            for k in range(n_active):
                _scan_sorting_feature(active[k], method, XT, y, samples, start, end, msl, thr,
                                      f_const, f_score, f_pos, f_thr)

        best_f, n_total = _select_feature(features, constant_features, n_known, state, f_const, f_score,
                                          f_pos, f_gain, f_ratio, criterion, visit)
        if best_f < 0:
            continue
        nl = f_pos[best_f]
        nr = m - nl
        mid = start + nl

        # ---- children statistics, from the chosen feature in (value, row) order
        if presorted:
            ys_sorted = ylist[best_f]
            c0 = start
        else:
            xb = np.empty(m, dtype=np.float32)
            for i in range(m):
                xb[i] = XT[best_f, samples[start + i]]
            order = np.argsort(xb, kind="mergesort")
            for i in range(m):
                sorted_y[i] = y[samples[start + order[i]]]
            ys_sorted = sorted_y
            c0 = 0
        if sp + 2 > s_cap:
            s_cap = 2 * s_cap
            st_int = _grow_2d(st_int, s_cap)
            st_imp = _grow_1d(st_imp, s_cap)
            st_val = _grow_2d(st_val, s_cap)
        # right child goes below the left on the stack: the left is grown first
        r_slot = sp
        l_slot = sp + 1
        if is_reg:
            b_l, imp_l = _reg_stats(ys_sorted, c0, c0 + nl)
            b_r, imp_r = _reg_stats(ys_sorted, c0 + nl, c0 + m)
            st_val[l_slot, 0] = b_l / nl
            st_val[r_slot, 0] = b_r / nr
        else:
            imp_l = _class_stats(ys_sorted, c0, c0 + nl, criterion, child_counts)
            st_val[l_slot] = child_counts
            imp_r = _class_stats(ys_sorted, c0 + nl, c0 + m, criterion, child_counts)
            st_val[r_slot] = child_counts
        improvement = (m / n) * (imp - (nr / m) * imp_r - (nl / m) * imp_l)
        if improvement + EPSILON < 0.0:
            continue

        o_feature[node] = best_f
        o_threshold[node] = f_thr[best_f]
        o_missing[node] = 1 if nl > nr else 0

        # ---- partition the node's rows: left rows first in every list, unless
        # neither child can split (the lists below a leaf are never read again)
        child_splits = depth + 1 < max_depth and ((nl >= mss and imp_l > EPSILON) or
                                                   (nr >= mss and imp_r > EPSILON))
        if presorted and child_splits:
            for i in range(start, end):
                goes_left[rows[best_f, i]] = 1 if i < mid else 0
            n_part = 0
            for k in range(n_total, F):
                if features[k] != best_f:
                    active[n_part] = features[k]
                    n_part += 1
            if m * n_part >= parallel_min_work and n_part > 1:
                _partition_parallel(active, n_part, rows, vals, ylist, start, end, goes_left,
                                    tmp_rows, tmp_vals, tmp_y)
            else:
                for k in range(n_part):
                    _partition_feature(active[k], 0, rows, vals, ylist, start, end, goes_left,
                                       tmp_rows, tmp_vals, tmp_y)
        elif not presorted and child_splits:
            cut = f_thr[best_f]
            w = start
            t = 0
            for i in range(start, end):
                r = samples[i]
                if XT[best_f, r] <= cut:
                    samples[w] = r
                    w += 1
                else:
                    samp_tmp[t] = r
                    t += 1
            for i in range(t):
                samples[w + i] = samp_tmp[i]

        _push_node(st_int, st_imp, r_slot, mid, end, depth + 1, node, 0, n_total, imp_r)
        _push_node(st_int, st_imp, l_slot, start, mid, depth + 1, node, 1, n_total, imp_l)
        sp += 2

    return (o_feature[:n_nodes].copy(), o_threshold[:n_nodes].copy(), o_left[:n_nodes].copy(),
            o_right[:n_nodes].copy(), o_value[:n_nodes].copy(), o_impurity[:n_nodes].copy(),
            o_n[:n_nodes].copy(), o_missing[:n_nodes].copy())


# --------------------------------------------------------------- presort
@numba.njit(**_NJIT)
def _gather_lists(XT, y, rows, vals, ylist):
    """Fill the value and target lists from the sorted row lists (serial: memory bound)."""
    for f in range(rows.shape[0]):
        for i in range(rows.shape[1]):
            r = rows[f, i]
            vals[f, i] = XT[f, r]
            ylist[f, i] = y[r]
