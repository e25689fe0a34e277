"""Constants and per-node rules of the greedy growers, written once for every grower.

The CPU grower (:func:`._grower_cpu._grow`, numba) and the CUDA host grower
(:func:`._scans_cuda.grow_cuda`, Python) decide the same things at every node:
whether it is a leaf, whether its best split is kept, whether a child may split
(so that its rows must be partitioned) and where the threshold lies.  Each rule
is a plain function of scalars, compiled here with ``numba.njit``: the numba
grower calls it compiled, the Python host loop calls the same dispatcher, and
its ``py_func`` (scalars in, a scalar out, no allocation) is also a valid
``numba.cuda.jit(device=True)`` function, which is how the CUDA kernels use
:func:`split_threshold`.

All the rules are scikit-learn's (``DepthFirstTreeBuilder`` and
``BestSplitter``), so that the same ``random_state`` grows the same tree.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT

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

LN2 = float(np.log(2.0))


@numba.njit(**NJIT)
def min_split(min_samples_split, min_samples_leaf):
    """Fewest rows a node needs to be split: scikit-learn's ``max(min_samples_split, 2 * min_samples_leaf)``."""
    return max(min_samples_split, 2 * min_samples_leaf)


@numba.njit(**NJIT)
def is_leaf(depth, n_node, impurity, max_depth, min_split, min_samples_leaf):
    """scikit-learn's stopping rule: a node too deep, too small or pure is a leaf.

    Parameters
    ----------
    depth, n_node : int
        The node's depth (root 0) and number of rows.
    impurity : float
    max_depth, min_split, min_samples_leaf : int
        ``min_split`` from :func:`min_split`.

    Returns
    -------
    bool
    """
    return depth >= max_depth or n_node < min_split or n_node < 2 * min_samples_leaf or impurity <= EPSILON


@numba.njit(**NJIT)
def improvement(n_total, n_node, n_left, impurity, impurity_left, impurity_right):
    """Weighted impurity decrease of a split, scikit-learn's ``impurity_improvement``.

    Parameters
    ----------
    n_total : int
        Rows of the whole training set (the weights are fractions of it).
    n_node, n_left : int
        Rows of the node and of its left child.
    impurity, impurity_left, impurity_right : float

    Returns
    -------
    float
        ``(n_node / n_total) * (I - (n_R / n_node) I_R - (n_L / n_node) I_L)``.
    """
    n_right = n_node - n_left
    return (n_node / n_total) * (impurity - (n_right / n_node) * impurity_right - (n_left / n_node) * impurity_left)


@numba.njit(**NJIT)
def keeps_split(n_total, n_node, n_left, impurity, impurity_left, impurity_right):
    """Whether the best split is kept: its :func:`improvement` is not negative beyond rounding.

    scikit-learn makes a node whose best split does not pass this test a leaf.
    """
    return not improvement(n_total, n_node, n_left, impurity, impurity_left, impurity_right) + EPSILON < 0.0


@numba.njit(**NJIT)
def child_can_split(depth, n_left, n_right, impurity_left, impurity_right, max_depth, min_split, min_samples_leaf):
    """Whether at least one child of a split at ``depth`` is not a leaf by :func:`is_leaf`.

    When neither is, the node's rows need not be partitioned: the rows below a
    leaf are never read again.
    """
    return not (is_leaf(depth + 1, n_left, impurity_left, max_depth, min_split, min_samples_leaf)
                and is_leaf(depth + 1, n_right, impurity_right, max_depth, min_split, min_samples_leaf))


@numba.njit(**NJIT)
def split_threshold(value_left, value_right):
    """scikit-learn's threshold between two sorted float32 values: their midpoint, exact in float64."""
    return np.float64(value_left) / 2.0 + np.float64(value_right) / 2.0




@numba.njit(**NJIT)
def entropy_term(count, n):
    """``p log2 p`` for ``p = count / n`` (0 for an empty class), as scikit-learn computes it."""
    if count <= 0.0:
        return 0.0
    p = count / n
    return p * (np.log(p) / LN2)


@numba.njit(**NJIT)
def c45_gain_ratio(h_node, h_left, h_right, w_left, w_right, w_node, n_candidates):
    """C4.5 (release 8)'s MDL-corrected information gain and gain ratio of a binary split, in bits.

    Parameters
    ----------
    h_node, h_left, h_right : float
        Entropies (bits) of the node and of its two sides.
    w_left, w_right, w_node : float
        Their row counts, or with sample weights their weights (C4.5's fractional cases: its ``Items``,
        ``LowItems`` and ``ValFreq`` are sums of case weights).
    n_candidates : int
        Thresholds tried on the feature (C4.5's ``Tries``, a count of cut points, not a weight).

    Returns
    -------
    gain : float
        ``h_node - p_L h_L - p_R h_R - log2(n_candidates) / w_node``, with ``p = w_side / w_node``.
    ratio : float
        ``gain`` over the split information ``-(p_L log2 p_L + p_R log2 p_R)``.
    """
    pl = w_left / w_node
    pr = w_right / w_node
    gain = h_node - pl * h_left - pr * h_right
    gain -= np.log(n_candidates) / LN2 / w_node  # C4.5 release 8's MDL correction: ThreshCost = Log(Tries) / Items
    split_info = -(pl * np.log(pl) + pr * np.log(pr)) / LN2
    return gain, gain / split_info
