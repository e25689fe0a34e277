"""Compiled GDT operators over flat trees (numba): the host loop's kernels on single trees.

:mod:`dtlab.evolution.operators` and :mod:`dtlab.evolution.selection` are the
plain reference: readable Python over :class:`~dtlab.evolution.individual.Individual`
objects.  These functions do the same on trees stored one after another in
shared node arrays (an *arena*), draw the same numbers from the same
``numpy.random.Generator`` in the same order (numba runs NumPy's own
algorithms on the generator's state: ``random``, ``integers``, ``uniform``,
``permutation``; ``choice`` is rebuilt from its definition in :mod:`._choices`), so both give
the same trees, bit for bit (``tests/evolution/test_gdt_compiled.py`` runs them
side by side).  :mod:`dtlab.evolution.breeding` drives them for a whole generation.

Arena layout: node arrays ``feature`` (int32), ``threshold`` (float64),
``left`` (int32: the tree-local index of the left child, -1 at a leaf; the
right child is ``left + 1``), ``counts`` (int64, (n, n_classes)),
``cand_hash`` / ``cand_row`` ((n, n_classes, 2)).  A tree is ``(start, size)``:
its nodes ``start:start + size`` in breadth-first order, root first.  Operators
read trees of the arena and append the new tree at ``top``, never changing a
node below ``top``, so a tree may be shared by several population slots.
"""

from __future__ import annotations

import numba
import numpy as np

from ..trees.walk import cpu_walks
from ._choices import _choice_cdf, _choose_two, _ranked_pick
from ._sparse import cell, n_columns
from .evaluators._fitness_cpu import offer_candidate
from .evaluators.draws import EMPTY_HASH

_NJIT = dict(cache=True, nogil=True)
_record_margins = cpu_walks()["record_margins"]

#: Mutation variants of internal nodes, in the order of ``variant_p`` (as :data:`.operators.MUTATION_VARIANTS`).
PRUNE, EXCHANGE, NEW_TEST, SHIFT = 0, 1, 2, 3


# ---------------------------------------------------------------- trees in the arena
@numba.njit(**_NJIT)
def _depths(left, start, size):
    depth = np.zeros(size, np.int64)
    for node in range(size):
        child = left[start + node]
        if child != -1:
            depth[child] = depth[node] + 1
            depth[child + 1] = depth[node] + 1
    return depth


@numba.njit(**_NJIT)
def _leaf_errors(counts, start, size):
    err = np.empty(size, np.int64)
    for node in range(size):
        total = 0
        most = counts[start + node, 0]
        for c in range(counts.shape[1]):
            total += counts[start + node, c]
            most = max(most, counts[start + node, c])
        err[node] = total - most
    return err


@numba.njit(**_NJIT)
def _subtree_errors(left, counts, start, size):
    err = _leaf_errors(counts, start, size)
    for node in range(size - 1, -1, -1):
        child = left[start + node]
        if child != -1:
            err[node] = err[child] + err[child + 1]
        # a leaf keeps its own errors
    return err


@numba.njit(**_NJIT)
def _copy_node(arena, dst, src):
    feature, threshold, left, counts, cand_hash, cand_row = arena
    feature[dst] = feature[src]
    threshold[dst] = threshold[src]
    left[dst] = left[src]
    for c in range(counts.shape[1]):
        counts[dst, c] = counts[src, c]
        for s in range(2):
            cand_hash[dst, c, s] = cand_hash[src, c, s]
            cand_row[dst, c, s] = cand_row[src, c, s]


@numba.njit(**_NJIT)
def _copy_tree(arena, top, start, size):
    for node in range(size):
        _copy_node(arena, top + node, start + node)
    return top


@numba.njit(**_NJIT)
def _assemble(arena, top, start_a, size_a, start_b, size_b, redirect_from, redirect_to, redirect_to_b, leafify):
    """:func:`.individual.assemble`: a new tree at ``top``, breadth-first, from the nodes of trees A and B.

    From A's root, every node's children are followed, except that A's node
    ``redirect_from`` (tree-local; -1 for none) is replaced by node
    ``redirect_to`` of B (``redirect_to_b``) or of A, and an A node with
    ``leafify[node]`` (an empty array for none) becomes a leaf keeping its own
    statistics.  Nodes reached through B are never redirected or made leaves
    (even when B is A's tree: sources are told apart, as the reference keys them).
    Returns the new tree's size.
    """
    feature, threshold, left = arena[0], arena[1], arena[2]
    queue_node = np.empty(size_a + size_b, np.int64)
    queue_in_b = np.empty(size_a + size_b, np.bool_)
    queue_node[0], queue_in_b[0] = 0, False
    if redirect_from == 0:
        queue_node[0], queue_in_b[0] = redirect_to, redirect_to_b
    head, tail, n_internal = 0, 1, 0
    while head < tail:
        node, in_b = queue_node[head], queue_in_b[head]
        out = top + head
        head += 1
        src = (start_b if in_b else start_a) + node
        _copy_node(arena, out, src)
        child = left[src]
        if child == -1 or (not in_b and leafify.shape[0] > 0 and leafify[node]):
            feature[out] = -1
            threshold[out] = 0.0
            left[out] = -1
            continue
        left[out] = 2 * n_internal + 1
        n_internal += 1
        for kid in range(child, child + 2):
            if not in_b and kid == redirect_from:
                queue_node[tail], queue_in_b[tail] = redirect_to, redirect_to_b
            else:
                queue_node[tail], queue_in_b[tail] = kid, in_b
            tail += 1
    return tail


@numba.njit(**_NJIT)
def _with_test(arena, top, start, size, node, f, t):
    """A copy of the tree at ``top`` whose ``node`` tests ``x[f] <= t``."""
    _copy_tree(arena, top, start, size)
    arena[0][top + node] = f
    arena[1][top + node] = t
    return size


@numba.njit(**_NJIT)
def _prune(arena, top, start, size, node):
    leafify = np.zeros(size, np.bool_)
    leafify[node] = True
    return _assemble(arena, top, start, size, start, 0, -1, 0, False, leafify)


# ---------------------------------------------------------------- dipoles
@numba.njit(**_NJIT)
def _dipole_test(rng, X, row_a, row_b):
    """:func:`.operators.dipole_test` of rows ``row_a`` and ``row_b``: ``(found, feature, threshold)``."""
    n_features = n_columns(X)  # X: a dense array or a CSR tuple (._sparse)
    differ = np.empty(n_features, np.int64)
    k = 0
    for f in range(n_features):
        if cell(X, row_a, f) != cell(X, row_b, f):
            differ[k] = f
            k += 1
    if k == 0:
        return False, 0, 0.0
    f = differ[rng.integers(0, k)]
    a, b = np.float64(cell(X, row_a, f)), np.float64(cell(X, row_b, f))
    lo, hi = (a, b) if a < b else (b, a)
    t = lo + rng.random() * (hi - lo)
    if not lo <= t < hi:  # rounding reached hi: the separating threshold closest to it is lo
        t = lo
    return True, f, t


@numba.njit(**_NJIT)
def _node_dipole(rng, cand_row, node, X):
    """:func:`.operators.node_dipole`: a test from a mixed dipole of the objects drawn in ``node``."""
    n_classes = cand_row.shape[1]
    present = np.empty(n_classes, np.int64)
    k = 0
    for c in range(n_classes):
        if cand_row[node, c, 0] >= 0:
            present[k] = c
            k += 1
    if k < 2:
        return False, 0, 0.0
    first, second = _choose_two(rng, k)
    row_a = _drawn_row(rng, cand_row, node, present[first])
    row_b = _drawn_row(rng, cand_row, node, present[second])
    return _dipole_test(rng, X, row_a, row_b)


@numba.njit(**_NJIT)
def _drawn_row(rng, cand_row, node, c):
    """One of the (one or two) objects of class ``c`` drawn in ``node``, uniformly (slot 0 fills first)."""
    n_slots = 2 if cand_row[node, c, 1] >= 0 else 1
    return cand_row[node, c, rng.integers(0, n_slots)]


# ---------------------------------------------------------------- mutation and crossover
@numba.njit(**_NJIT)
def _exchange_with_son(rng, arena, top, start, size, node):
    left = arena[2]
    sons = np.empty(2, np.int64)
    k = 0
    for son in range(left[start + node], left[start + node] + 2):
        if left[start + son] != -1:
            sons[k] = son
            k += 1
    if k == 0:
        return _prune(arena, top, start, size, node)
    son = sons[rng.integers(0, k)]
    if rng.random() < 0.5:
        size = _with_test(arena, top, start, size, node, arena[0][start + son], arena[1][start + son])
        arena[0][top + son] = arena[0][start + node]
        arena[1][top + son] = arena[1][start + node]
        return size
    return _assemble(arena, top, start, size, start, 0, node, son, False, np.zeros(0, np.bool_))


@numba.njit(**_NJIT)
def _shift_threshold(rng, arena, top, start, size, node, span):
    f = arena[0][start + node]
    width = span[f] if span[f] > 0 else 1.0
    total = 0
    for c in range(arena[3].shape[1]):
        total += arena[3][start + node, c]
    u = rng.uniform(0.5, np.log10(max(total, 10)) + 1.0)
    step = width * 10.0 ** (-u) * (1.0 if rng.random() < 0.5 else -1.0)
    return _with_test(arena, top, start, size, node, f, arena[1][start + node] + step)


@numba.njit(**_NJIT)
def _expand(rng, arena, top, start, size, leaf, X):
    """A split of ``leaf`` from a mixed dipole of its objects, with two new leaves (0: no dipole)."""
    found, f, t = _node_dipole(rng, arena[5], start + leaf, X)
    if not found:
        return 0, 0
    feature, threshold, left, counts, cand_hash, cand_row = arena
    _copy_node(arena, top, start + leaf)  # a 3-node stub at top: the test, then two empty leaves
    feature[top], threshold[top], left[top] = f, t, 1
    for node in range(top + 1, top + 3):
        feature[node], threshold[node], left[node] = -1, 0.0, -1
        counts[node, :] = 0
        cand_hash[node, :, :] = EMPTY_HASH
        cand_row[node, :, :] = -1
    return top + 3, _assemble(arena, top + 3, start, size, top, 3, leaf, 0, True, np.zeros(0, np.bool_))


@numba.njit(**_NJIT)
def _mutate(rng, arena, top, start, size, X, span, variant_cdf, max_depth, pressure):
    """:func:`.operators.mutate`: ``(new start, new size)``, size 0 when no mutation applies."""
    left = arena[2]
    depth = _depths(left, start, size)
    leaf_err = _leaf_errors(arena[3], start, size)
    n_internal = 0
    for node in range(size):
        n_internal += left[start + node] != -1
    internal = np.empty(n_internal, np.int64)
    leaves = np.empty(size, np.int64)
    i = k = 0
    for node in range(size):
        if left[start + node] != -1:
            internal[i] = node
            i += 1
        elif leaf_err[node] > 0 and depth[node] < max_depth:
            leaves[k] = node
            k += 1
    leaves = leaves[:k]
    want_internal = rng.random() < 0.5
    if (want_internal and n_internal) or (k == 0 and n_internal):
        err = _subtree_errors(left, arena[3], start, size)
        node = _ranked_pick(rng, depth[internal], err[internal], True, internal, pressure)
        variant = _choice_cdf(rng, variant_cdf)
        if variant == PRUNE:
            return top, _prune(arena, top, start, size, node)
        if variant == EXCHANGE:
            return top, _exchange_with_son(rng, arena, top, start, size, node)
        if variant == NEW_TEST:
            found, f, t = _node_dipole(rng, arena[5], start + node, X)
            if found:
                return top, _with_test(arena, top, start, size, node, f, t)
        return top, _shift_threshold(rng, arena, top, start, size, node, span)
    if k:
        node = _ranked_pick(rng, leaf_err[leaves], leaf_err[leaves], False, leaves, pressure)
        return _expand(rng, arena, top, start, size, node, X)
    return 0, 0


@numba.njit(**_NJIT)
def _random_node(rng, size, avoid_root):
    if size == 1 or not avoid_root:
        return rng.integers(0, size)
    return rng.integers(1, size)


@numba.njit(**_NJIT)
def _crossover(rng, arena, top, start_a, size_a, start_b, size_b):
    """:func:`.operators.crossover`: the two offspring at ``top``; returns (start, size) of each."""
    feature, threshold, left = arena[0], arena[1], arena[2]
    na = _random_node(rng, size_a, True)
    nb = _random_node(rng, size_b, na == 0)
    variant = 0  # subtree
    if left[start_a + na] != -1 and left[start_b + nb] != -1:
        variant = rng.integers(0, 3)
    if variant == 2:  # tests
        first = _with_test(arena, top, start_a, size_a, na, feature[start_b + nb], threshold[start_b + nb])
        second = _with_test(arena, top + first, start_b, size_b, nb, feature[start_a + na], threshold[start_a + na])
        return top, first, top + first, second
    if variant == 1:  # branches
        na = left[start_a + na] + (0 if rng.random() < 0.5 else 1)
        nb = left[start_b + nb] + (0 if rng.random() < 0.5 else 1)
    first = _assemble(arena, top, start_a, size_a, start_b, size_b, na, nb, True, np.zeros(0, np.bool_))
    second = _assemble(arena, top + first, start_b, size_b, start_a, size_a, nb, na, True, np.zeros(0, np.bool_))
    return top, first, top + first, second


# ---------------------------------------------------------------- after an evaluation
@numba.njit(**_NJIT)
def _propagate_up(left, right, counts, cand_hash, cand_row):
    """Fill internal nodes' statistics from their children (paper, section 3.2: leaves toward the root).

    Forest-global ``left``/``right`` (a :class:`~dtlab.trees.PackedForest`'s),
    every child after its parent (breadth-first trees), so one reverse sweep
    sees children before parents.  Internal nodes get the summed class counts
    and the two smallest-key rows of each class in their subtree (exactly what
    a draw over the node's objects would give).
    """
    n_nodes, n_classes = counts.shape
    for node in range(n_nodes - 1, -1, -1):
        a = left[node]
        if a == -1:
            continue
        b = right[node]
        for c in range(n_classes):
            counts[node, c] = counts[a, c] + counts[b, c]
            h0, r0, h1, r1 = EMPTY_HASH, np.int64(-1), EMPTY_HASH, np.int64(-1)
            for k in range(4):  # the two slots of each child
                child = a if k < 2 else b
                if cand_row[child, c, k % 2] >= 0:
                    h0, r0, h1, r1 = offer_candidate(cand_hash[child, c, k % 2], cand_row[child, c, k % 2], h0, r0,
                                                     h1, r1)
            cand_hash[node, c, 0], cand_row[node, c, 0], cand_hash[node, c, 1], cand_row[node, c, 1] = h0, r0, h1, r1


@numba.njit(**_NJIT)
def _prune_sweep(left, counts, start, size, n_samples, alpha, first_only):
    """The bottom-up sweep of :func:`_prune_unprofitable` over the tree ``(start, size)``: ``(cut, err0)``,
    ``cut[node]`` where the subtree is not worth its nodes, ``err0`` the root's training errors after the cuts.
    ``first_only``: stop at the first cut (before it, every subtree is whole)."""
    leaf_err = _leaf_errors(counts, start, size)
    err = leaf_err.copy()  # errors of the best pruning of each subtree
    nodes = np.ones(size, np.int64)  # its number of nodes
    cut = np.zeros(size, np.bool_)
    for node in range(size - 1, -1, -1):  # breadth-first order: children before parents
        child = left[start + node]
        if child == -1:
            continue
        sub_err = err[child] + err[child + 1]
        sub_size = nodes[child] + nodes[child + 1] + 1
        if (leaf_err[node] - sub_err) <= alpha * n_samples * (sub_size - 1):
            cut[node] = True  # err / nodes stay those of a leaf
            if first_only:
                break
        else:
            err[node], nodes[node] = sub_err, sub_size
    return cut, err[0]


@numba.njit(**_NJIT)
def _cuts_something(left, counts, start, size, n_samples, alpha):
    """Whether :func:`_prune_unprofitable` would cut a subtree of the tree ``(start, size)`` (it writes nothing)."""
    return _prune_sweep(left, counts, start, size, n_samples, alpha, True)[0].any()


@numba.njit(**_NJIT)
def _prune_unprofitable(arena, top, start, size, n_samples, alpha):
    """:func:`.individual.prune_unprofitable`: ``(new size or 0 when nothing is cut, training errors)``."""
    cut, err0 = _prune_sweep(arena[2], arena[3], start, size, n_samples, alpha, False)
    if not cut.any():
        return 0, err0
    return _assemble(arena, top, start, size, start, 0, -1, 0, False, cut), err0


@numba.njit(**_NJIT)
def _margins(X, feature, threshold, left, right, missing_left, below, above):
    """Per test of one tree, the largest training value sent left and the smallest sent right (in place)."""
    for row in range(X.shape[0]):
        _record_margins(X, row, feature, threshold, left, right, missing_left, below, above)
