"""scikit-learn's random feature order: the xorshift generator and the feature draws.

Ties between features are broken by the order in which scikit-learn's
``BestSplitter`` draws them (a Fisher-Yates shuffle driven by its own xorshift32
generator, ``our_rand_r``), so the greedy growers replay both exactly.  Each
function is written once as plain Python and compiled with ``numba.njit``: the
numba grower calls the compiled one, the CUDA host loop and the tests may call
either (the plain one calls the compiled generator, so both draw the same
numbers).
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT
from ._node_rules import GAIN_RATIO, RAND_R_MAX


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


_rand_int = numba.njit(rand_int, **NJIT)


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


_select_feature = numba.njit(select_feature, **NJIT)
