"""Sample weights in the greedy trees: the few places a row's weight enters a scan or a node statistic, each a
plain function in two variants, bound by name when the scans are compiled (:func:`dtlab._jit.compile_functions`).

The greedy scans rank candidates by sums of ``g = w y`` and ``h = w`` on each side (scikit-learn's weighted
criteria, :mod:`._scans_cpu`); without weights every ``h`` is 1 and ``H`` is a row count.  The scans, the node
statistics (:mod:`._stats`), the CPU grower (:mod:`._grower_cpu`) and the CUDA scans (:mod:`._scans_cuda`) are
written once in terms of the names below and compiled twice:

``UNWEIGHTED``
    a row weighs 1: a side's weight is its exact row count, ``w y`` is ``y`` itself, nothing stores or sums a
    weight (those statements compile to nothing), the prefix-sum ranking gets no hessians (``None``: it uses
    the positions), and a row moving left moves its class counts and Gini's sums of squared counts by one and
    ``2 n + 1`` (exact integers);
``WEIGHTED``
    a row weighs ``w[r]``: sides weigh their running sums of weights, ``w y`` is rounded on its own (``mul``:
    a plain product on the CPU, ``dmul_rn`` on a device, never fused into a sum), and Gini's squared counts are
    summed afresh per candidate as scikit-learn's ``ClassificationCriterion`` does (the running update is exact
    for integer counts only).

With unit weights both variants compute the same numbers (sums of ones are exact row counts, ``1 * y == y``), so
the unweighted variant is the weighted scan with ``h = 1``, only without the work.  Every function is a device
function in :mod:`dtlab._jit`'s sense (scalars and array elements, no allocation), so that the CUDA kernels
compile them too (they add their own two, reading a weight through the row ids and summing a chunk's weights:
:data:`._scans_cuda.CUDA_VARIANTS`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._jit import compile_functions


def multiply(a, b):
    """``a * b``: the CPU's ``mul`` (a device binds ``dmul_rn``, which is never contracted into an FMA)."""
    return a * b


# ---- a row weighs 1
def unit_weight(w, r):
    """The weight of row (or position) ``r``: 1."""
    return 1.0


def unit_target(wi, v):
    """``w * y`` of a row of weight 1: ``y``."""
    return v


def row_count(w_sum, n):
    """The weight of ``n`` rows: ``n`` (the running sum of ones is not kept)."""
    return np.float64(n)


def no_store(buf, i, value):
    """Nothing to store: a node's weights are never gathered."""


def no_hessians(hbuf):
    """No hessians for :func:`dtlab.splits.rank_prefix`: every one is 1, H is the position."""
    return None


def move_counted_row(cnt_l, cnt_r, cnt_tot, c, wi, sq_l, sq_r):
    """A row of class ``c`` moves left: its counts and Gini's sums of squared counts move by one
    (``(n + 1)^2 = n^2 + 2 n + 1``, exact for integer counts); returns the sums."""
    sq_l += 2.0 * cnt_l[c] + 1.0
    cnt_l[c] += 1.0
    sq_r -= 2.0 * cnt_r[c] - 1.0
    cnt_r[c] -= 1.0
    return sq_l, sq_r


def running_squares(sq_l, sq_r, cnt_l, cnt_r):
    """The sums of squared counts at a candidate: the running ones."""
    return sq_l, sq_r


# ---- a row weighs w[r]
def row_weight(w, r):
    return w[r]


def weighted_target(wi, v):
    return mul(wi, v)  # noqa: F821 -- bound by compile_functions


def weight_sum(w_sum, n):
    return w_sum


def store(buf, i, value):
    buf[i] = value


def hessians(hbuf):
    return hbuf


def move_weighted_row(cnt_l, cnt_r, cnt_tot, c, wi, sq_l, sq_r):
    """The row's weight moves left; the right side's count is total minus left (scikit-learn's), the sums of
    squares wait for the candidate (:func:`summed_squares`)."""
    cnt_l[c] += wi
    cnt_r[c] = cnt_tot[c] - cnt_l[c]
    return sq_l, sq_r


def summed_squares(sq_l, sq_r, cnt_l, cnt_r):
    """The sums of squared weighted counts summed afresh, in class order (scikit-learn's arithmetic)."""
    sq_l = 0.0
    sq_r = 0.0
    for c in range(cnt_l.shape[0]):
        sq_l += cnt_l[c] * cnt_l[c]
        sq_r += cnt_r[c] * cnt_r[c]
    return sq_l, sq_r


#: Name bound in the scans -> its plain function, per variant.
UNWEIGHTED = {"weight_of": unit_weight, "weighted": unit_target, "side_weight": row_count, "keep": no_store,
              "hessians": no_hessians, "move_row": move_counted_row, "candidate_squares": running_squares}
WEIGHTED = {"weight_of": row_weight, "weighted": weighted_target, "side_weight": weight_sum, "keep": store,
            "hessians": hessians, "move_row": move_weighted_row, "candidate_squares": summed_squares}
VARIANTS = {"unweighted": UNWEIGHTED, "weighted": WEIGHTED}


def compile_weights(variant: str, jit: Callable, mul: Callable) -> dict:
    """The functions of ``variant`` compiled with ``jit``, by the names the scans call them (``mul``: the
    compiled product the weighted targets are rounded with)."""
    plain = VARIANTS[variant]
    compiled = compile_functions(plain.values(), jit, {"mul": mul})
    return {name: compiled[fn.__name__] for name, fn in plain.items()}
