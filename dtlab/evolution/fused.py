"""A whole GDT generation in one compiled call, for data small enough to evaluate on the calling thread.

On 1,000 rows a generation's evaluation is a few hundred microseconds, and
the host loop of :mod:`dtlab.evolution.breeding` (selection, crossover,
mutation, then the evaluator, then statistics and local pruning) spent more
than that again on getting there: a dozen calls from Python, each typing its
array arguments, the batch validated and its bitmasks built with NumPy, the
evaluator's parallel region started and joined for a tiny batch.  Here the
same generation runs as one numba call: :func:`~dtlab.evolution.breeding._breed`,
the evaluation seed, the batch packed and prepared, every row through every
changed tree on this thread (:func:`~dtlab.evolution.evaluators._fitness_cpu._rows_through_trees`,
the CPU evaluator's own kernel), the statistics stored, the local-pruning
draws and the pruning, drawing every random number in the order of
:func:`~dtlab.evolution.breeding.evaluate`, so the run gives the same trees,
bit for bit, as the evaluator path (``tests/evolution/test_fused.py``).

The size-accuracy front (:class:`~dtlab.evolution.front.Front`) is offered
the trees that beat its best of their size: the call returns just those (before
and after their pruning), which :meth:`Front.offer` then keeps exactly as if it
had seen the whole batch.
"""

from __future__ import annotations

import numba
import numpy as np

from .breeding import _breed, _compact, _population, _prune_chosen, _store_stats
from .evaluators._fitness_cpu import _rows_through_trees
from .evaluators._prepare import _masks, _salts, round_down
from .evaluators.draws import EMPTY_HASH
from .population import Population, _pack

_NJIT = dict(cache=True, nogil=True)


@numba.njit(**_NJIT)
def _beats_front(node_offset, accuracy, slots, front_best):
    """The ``slots`` whose tree :meth:`Front.offer` keeps, in order; ``front_best`` (a copy) updated as it would be."""
    keep = np.zeros(slots.shape[0], np.bool_)
    for j in range(slots.shape[0]):
        size = node_offset[slots[j] + 1] - node_offset[slots[j]]
        best = front_best[size] if size < front_best.shape[0] else -1.0
        if accuracy[slots[j]] > best:
            keep[j] = True
            if size < front_best.shape[0]:
                front_best[size] = accuracy[slots[j]]
    return slots[keep]


@numba.njit(**_NJIT)
def _take(node_offset, nodes, fitness, accuracy, slots):
    """The trees of ``slots`` as new population arrays (node arrays copied)."""
    offset, out = _compact(nodes, node_offset[slots], node_offset[slots + 1] - node_offset[slots])
    return offset, out, fitness[slots], accuracy[slots]


@numba.njit(**_NJIT)
def _evaluate_serial(Xt, y, n_classes, seed, offset, feature, threshold, left, right):
    """Leaf statistics of the packed batch over all rows of ``Xt``, on this thread (the CPU evaluator's kernel)."""
    n_nodes = feature.shape[0]
    counts = np.zeros((n_nodes, n_classes), np.int64)
    cand_hash = np.full((n_nodes, n_classes, 2), EMPTY_HASH, np.uint64)
    cand_row = np.full((n_nodes, n_classes, 2), -1, np.int64)
    rounded = round_down(threshold, Xt[0, :0])
    masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node = _masks(
        offset, feature, left, right, rounded)
    n_trees = offset.shape[0] - 1
    missing_left = np.ones(n_nodes, np.bool_)
    _rows_through_trees(Xt, y, 0, Xt.shape[1], np.int64(0), seed, np.arange(n_trees), offset, feature, threshold, left,
                        right, missing_left, _salts(seed, n_trees), masked, test_offset, test_feature, test_threshold,
                        test_mask, leaf_offset, leaf_node, counts, cand_hash, cand_row)
    return counts, cand_hash, cand_row


@numba.njit(**_NJIT)
def _generation(rng, node_offset, nodes, fitness, accuracy, ident, best, next_ident, n_elite, n_offspring,
                crossover_p, mutation_p, variant_cdf, max_depth, pressure, X, span, Xt, y, n_classes, alpha,
                local_pruning, front_best):
    offset, nodes, fitness, accuracy, evaluated, ident, next_ident = _breed(
        rng, node_offset, nodes, fitness, accuracy, ident, best, next_ident, n_elite, n_offspring, crossover_p,
        mutation_p, variant_cdf, max_depth, pressure, X, span)
    todo = np.flatnonzero(~evaluated).astype(np.int64)
    no_trees = np.zeros(0, np.int64)
    if todo.shape[0] == 0:
        front = _take(offset, nodes, fitness, accuracy, no_trees)
        return offset, nodes, fitness, accuracy, evaluated, ident, next_ident, 0, front, front
    # the evaluation seed, as Generator.integers(0, 2**63, dtype=np.int64) draws it
    seed = np.uint64(rng.integers(np.int64(0), np.int64(2**63 - 1), dtype=np.int64, endpoint=True))
    batch_offset, feature, threshold, left, right = _pack(offset, nodes[0], nodes[1], nodes[2], todo)
    counts, cand_hash, cand_row = _evaluate_serial(Xt, y, n_classes, seed, batch_offset, feature, threshold, left,
                                                   right)
    n_samples = np.int64(Xt.shape[1])
    _store_stats(offset, nodes, fitness, accuracy, evaluated, todo, batch_offset, left, right, counts, cand_hash,
                 cand_row, n_samples, alpha)
    before = _take(offset, nodes, fitness, accuracy, _beats_front(offset, accuracy, todo, front_best))
    prune = np.zeros(todo.shape[0], np.bool_)
    if local_pruning > 0:
        for j in range(todo.shape[0]):
            prune[j] = rng.random() < local_pruning
    after = _take(offset, nodes, fitness, accuracy, no_trees)
    if prune.any():
        offset, nodes, pruned, next_ident = _prune_chosen(offset, nodes, fitness, accuracy, ident, todo[prune],
                                                          n_samples, alpha, next_ident)
        after = _take(offset, nodes, fitness, accuracy, _beats_front(offset, accuracy, pruned, front_best))
    return offset, nodes, fitness, accuracy, evaluated, ident, next_ident, todo.shape[0], before, after


def generation(population: Population, best: int, next_ident: int, params, variant_cdf: np.ndarray,
               rng: np.random.Generator, X: np.ndarray, span: np.ndarray, Xt: np.ndarray, y: np.ndarray,
               n_classes: int, front=None) -> tuple[Population, int, int]:
    """:func:`~dtlab.evolution.breeding.breed` then :func:`~dtlab.evolution.breeding.evaluate`, in one compiled call.

    Parameters
    ----------
    population, best, next_ident, params, variant_cdf, rng, X, span :
        as :func:`~dtlab.evolution.breeding.breed` takes them.
    Xt : ndarray of shape (n_features, n_samples), float32 or float64, C-contiguous
        The training rows transposed (a :class:`~dtlab.evolution.CpuEvaluator`'s ``Xt``).
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    front : Front or None
        Offered every evaluated tree that beats its best of the same size, before and after its pruning.

    Returns
    -------
    (Population, number of trees evaluated, next_ident)
    """
    p = population
    front_best = front.best.copy() if front is not None else np.full(0, -1.0)
    offset, nodes, fitness, accuracy, evaluated, ident, next_ident, n_eval, before, after = _generation(
        rng, p.node_offset, (p.feature, p.threshold, p.left, p.counts, p.cand_hash, p.cand_row), p.fitness,
        p.accuracy, p.ident, np.int64(best), np.int64(next_ident), np.int64(params.n_elite),
        np.int64(params.population_size - params.n_elite), float(params.crossover_probability),
        float(params.mutation_probability), variant_cdf, np.int64(params.max_depth), float(params.ranking_pressure),
        X, span, Xt, y, np.int64(n_classes), float(params.alpha), float(params.local_pruning), front_best)
    if front is not None:
        for off, kept, fit, acc in (before, after):
            if fit.shape[0]:
                front.offer(_population(off, kept, fit, acc, np.ones(fit.shape[0], np.bool_),
                                        np.zeros(fit.shape[0], np.int64)), np.arange(fit.shape[0]))
    return _population(offset, nodes, fitness, accuracy, evaluated, ident), int(n_eval), int(next_ident)
