"""One GDT generation on the flat population, compiled: selection, crossover, mutation, elitism, and the evaluation.

The loop of Jurczuk, Czajkowski, Kretowski (2021, Fig. 5, Listing 1), as
:mod:`dtlab.evolution.operators` writes it on lists of objects, in two
compiled calls around the evaluator:

* :func:`breed`: linear ranking selection of ``population_size - n_elite``
  parents, crossover of consecutive pairs, mutation, the elite, and the new
  population packed into flat arrays (:class:`~dtlab.evolution.population.Population`);
* :func:`evaluate`: every changed tree in one batch (a
  :class:`~dtlab.trees.PackedForest`) through the evaluator, then the
  statistics propagated to internal nodes, fitness, and GDT's local pruning of
  the changed trees with probability ``local_pruning``.

A generation costs a handful of calls from Python whatever the population,
instead of thousands of small NumPy operations: the host's share of a
generation no longer caps what a fast device can do.  Every random number is
drawn from the run's generator in the reference's order, so the trees are the
reference's, bit for bit.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from ._choices import _selection_cum
from ._operators_cpu import _crossover, _cuts_something, _mutate, _propagate_up, _prune_unprofitable
from .population import Population

_NJIT = dict(cache=True, nogil=True)

#: The host's phases of a generation, as timed when asked (:attr:`~dtlab.evolution.operators.OperatorContext.phases`):
#: selection, crossover, mutation and elitism (one compiled call); packing the changed trees into the batch;
#: storing the batch's statistics, fitness and local pruning (one compiled call).
HOST_PHASES = ("operators", "packing", "statistics")


def _arena(capacity, n_classes):
    return (np.empty(capacity, np.int32), np.empty(capacity, np.float64), np.empty(capacity, np.int32),
            np.empty((capacity, n_classes), np.int64), np.empty((capacity, n_classes, 2), np.uint64),
            np.empty((capacity, n_classes, 2), np.int64))


_arena_jit = numba.njit(**_NJIT)(_arena)


@numba.njit(**_NJIT)
def _compact(arena, start, size):
    """New population node arrays holding the arena trees ``(start[t], size[t])`` in slot order."""
    n_trees = start.shape[0]
    offset = np.zeros(n_trees + 1, np.int64)
    for t in range(n_trees):
        offset[t + 1] = offset[t] + size[t]
    out = _arena_jit(offset[n_trees], arena[3].shape[1])
    for t in range(n_trees):
        a, b = start[t], offset[t]
        for k in range(size[t]):
            out[0][b + k] = arena[0][a + k]
            out[1][b + k] = arena[1][a + k]
            out[2][b + k] = arena[2][a + k]
            out[3][b + k] = arena[3][a + k]
            out[4][b + k] = arena[4][a + k]
            out[5][b + k] = arena[5][a + k]
    return offset, out


@numba.njit(**_NJIT)
def _breed(rng, node_offset, nodes, fitness, accuracy, ident, best, next_ident, n_elite, n_offspring, crossover_p,
           mutation_p, variant_cdf, max_depth, pressure, X, span):
    n_trees = fitness.shape[0]
    sizes = node_offset[1:] - node_offset[:-1]
    largest = sizes.max()
    n_old = node_offset[n_trees]
    # room for every tree a generation can write: crossover children (at most both parents' nodes each),
    # mutants of them (at most 2 more nodes, after a 3-node stub)
    arena = _arena_jit(n_old + 2 * n_offspring * largest + n_offspring * (2 * largest + 5) + 8, nodes[3].shape[1])
    arena[0][:n_old] = nodes[0]
    arena[1][:n_old] = nodes[1]
    arena[2][:n_old] = nodes[2]
    arena[3][:n_old] = nodes[3]
    arena[4][:n_old] = nodes[4]
    arena[5][:n_old] = nodes[5]
    top = n_old
    # linear ranking selection by stochastic universal sampling (selection.linear_ranking)
    selection_cum = _selection_cum(n_trees, pressure)
    order = np.argsort(fitness, kind="mergesort")
    u = rng.random()
    chosen = np.empty(n_offspring, np.int64)
    for k in range(n_offspring):
        pick = np.searchsorted(selection_cum, (u + np.float64(k)) / np.float64(n_offspring), side="right")
        chosen[k] = order[min(max(pick, 0), n_trees - 1)]
    chosen = rng.permutation(chosen)
    start, size, changed = node_offset[chosen], sizes[chosen], np.zeros(n_offspring, np.bool_)
    for k in range(0, n_offspring - 1, 2):
        if rng.random() < crossover_p:
            start[k], size[k], start[k + 1], size[k + 1] = _crossover(rng, arena, top, start[k], size[k],
                                                                      start[k + 1], size[k + 1])
            top = start[k + 1] + size[k + 1]
            changed[k] = changed[k + 1] = True
    for k in range(n_offspring):
        if rng.random() < mutation_p:
            new_start, new_size = _mutate(rng, arena, top, start[k], size[k], X, span, variant_cdf, max_depth,
                                          pressure)
            if new_size > 0:
                start[k], size[k], changed[k] = new_start, new_size, True
                top = new_start + new_size
    # elitism: the best so far, re-evaluated (a new draw of its dipole objects), then the next best that are
    # not it (stable order of decreasing fitness, as the reference's argsort(-fitness)); fewer when every other
    # slot holds the best itself, and the population is smaller then, as the reference's list is
    elite = [best]
    if n_elite > 1:
        for i in np.argsort(-fitness, kind="mergesort"):
            if len(elite) == n_elite:
                break
            if ident[i] != ident[best]:
                elite.append(i)
    n_out = len(elite) + n_offspring
    slot_start = np.empty(n_out, np.int64)
    slot_size = np.empty(n_out, np.int64)
    out_fitness = np.full(n_out, np.nan)
    out_accuracy = np.full(n_out, np.nan)
    out_evaluated = np.zeros(n_out, np.bool_)
    out_ident = np.empty(n_out, np.int64)
    for slot, i in enumerate(elite):
        slot_start[slot], slot_size[slot], out_ident[slot] = node_offset[i], sizes[i], ident[i]
        out_fitness[slot], out_accuracy[slot], out_evaluated[slot] = fitness[i], accuracy[i], True
    out_ident[0], out_evaluated[0], out_fitness[0], out_accuracy[0] = next_ident, False, np.nan, np.nan
    next_ident += 1
    for k in range(n_offspring):
        slot = len(elite) + k
        slot_start[slot], slot_size[slot] = start[k], size[k]
        if changed[k]:
            out_ident[slot] = next_ident
            next_ident += 1
        else:
            parent = chosen[k]
            out_ident[slot] = ident[parent]
            out_fitness[slot], out_accuracy[slot], out_evaluated[slot] = fitness[parent], accuracy[parent], True
    offset, out = _compact(arena, slot_start, slot_size)
    return offset, out, out_fitness, out_accuracy, out_evaluated, out_ident, next_ident


@numba.njit(**_NJIT)
def _store_stats(node_offset, nodes, fitness, accuracy, evaluated, todo, batch_offset, batch_left, batch_right,
                 counts, cand_hash, cand_row, n_samples, alpha):
    """Store a batch's statistics in the trees ``todo`` (propagated to internal nodes) and their fitness."""
    _propagate_up(batch_left, batch_right, counts, cand_hash, cand_row)
    n_classes = counts.shape[1]
    # the arrays taken out of the tuple once: inside the loops every access would count a reference
    left, node_counts, node_hash, node_row = nodes[2], nodes[3], nodes[4], nodes[5]
    for j in range(todo.shape[0]):
        slot, first = todo[j], batch_offset[j]
        base = node_offset[slot]
        n_nodes = batch_offset[j + 1] - first
        correct = 0
        for k in range(n_nodes):
            most = counts[first + k, 0]
            for c in range(n_classes):
                node_counts[base + k, c] = counts[first + k, c]
                most = max(most, counts[first + k, c])
                for s in range(2):
                    node_hash[base + k, c, s] = cand_hash[first + k, c, s]
                    node_row[base + k, c, s] = cand_row[first + k, c, s]
            if left[base + k] == -1:
                correct += most
        accuracy[slot] = correct / n_samples
        fitness[slot] = accuracy[slot] - alpha * (n_nodes - 1)
        evaluated[slot] = True


@numba.njit(**_NJIT)
def _prune_chosen(node_offset, nodes, fitness, accuracy, ident, slots, n_samples, alpha, next_ident):
    """Replace each tree of ``slots`` by its most profitable pruning (GDT's local fitness maximisation).

    Returns the population's node arrays (new ones when a tree changed), the
    slots that changed and the next free individual id.
    """
    n_old = node_offset[fitness.shape[0]]
    # most chosen trees have nothing to cut: find those that do before copying the population into an arena
    cuts = np.zeros(slots.shape[0], np.bool_)
    for j in range(slots.shape[0]):
        start = node_offset[slots[j]]
        cuts[j] = _cuts_something(nodes[2], nodes[3], start, node_offset[slots[j] + 1] - start, n_samples, alpha)
    if not cuts.any():
        return node_offset, nodes, slots[cuts], next_ident
    slots = slots[cuts]
    arena = _arena_jit(2 * n_old, nodes[3].shape[1])
    arena[0][:n_old] = nodes[0]
    arena[1][:n_old] = nodes[1]
    arena[2][:n_old] = nodes[2]
    arena[3][:n_old] = nodes[3]
    arena[4][:n_old] = nodes[4]
    arena[5][:n_old] = nodes[5]
    start, size = node_offset[:-1].copy(), node_offset[1:] - node_offset[:-1]
    top = n_old
    changed = np.zeros(slots.shape[0], np.bool_)
    for j in range(slots.shape[0]):
        slot = slots[j]
        new_size, errors = _prune_unprofitable(arena, top, start[slot], size[slot], n_samples, alpha)
        if new_size == 0:
            continue
        start[slot], size[slot], changed[j] = top, new_size, True
        top += new_size
        accuracy[slot] = (n_samples - errors) / n_samples
        fitness[slot] = accuracy[slot] - alpha * (new_size - 1)
        ident[slot] = next_ident
        next_ident += 1
    if not changed.any():
        return node_offset, nodes, slots[changed], next_ident
    offset, out = _compact(arena, start, size)
    return offset, out, slots[changed], next_ident


def _nodes(population: Population) -> tuple:
    p = population
    return p.feature, p.threshold, p.left, p.counts, p.cand_hash, p.cand_row


def _population(offset, nodes, fitness, accuracy, evaluated, ident) -> Population:
    return Population(offset, *nodes, fitness, accuracy, evaluated, ident)


def breed(population: Population, best: int, next_ident: int, params, variant_cdf: np.ndarray,
          rng: np.random.Generator,
          X: np.ndarray, span: np.ndarray) -> tuple[Population, int]:
    """The next generation's population before its evaluation; the elite first, changed trees unevaluated.

    Parameters
    ----------
    population : Population, every tree evaluated
    best : int
        Slot of the best individual found so far.
    next_ident : int
        The first unused individual id.
    params : EvolutionParams
    variant_cdf : ndarray of shape (4,), float64
        The cdf the choice of a mutation variant searches (:func:`variant_cdf`).
    rng : the run's generator
    X : ndarray of shape (n_samples, n_features), float32 or float64
        The training rows (a dipole's two objects are read from it).
    span : ndarray of shape (n_features,), float64
        Each attribute's range (the scale of threshold shifts).

    Returns
    -------
    (Population, next_ident)
    """
    p = population
    offset, nodes, fitness, accuracy, evaluated, ident, next_ident = _breed(
        rng, p.node_offset, _nodes(p), p.fitness, p.accuracy, p.ident, np.int64(best), np.int64(next_ident),
        np.int64(params.n_elite), np.int64(params.population_size - params.n_elite), params.crossover_probability,
        params.mutation_probability, variant_cdf,
        np.int64(params.max_depth), float(params.ranking_pressure), X, span)
    return _population(offset, nodes, fitness, accuracy, evaluated, ident), int(next_ident)


def variant_cdf(params) -> np.ndarray:
    """The cdf ``Generator.choice(4, p=variant_p)`` searches for a mutation variant, as NumPy computes it."""
    cdf = np.asarray(params.variant_p, np.float64).cumsum()
    cdf /= cdf[-1]
    return cdf


def evaluate(population: Population, evaluator, alpha: float, rng: np.random.Generator, local_pruning: float,
             next_ident: int, phases: dict | None = None, front=None) -> tuple[Population, int, int]:
    """Evaluate the population's unevaluated trees in one batch, then prune each with probability ``local_pruning``.

    The draws, in the reference's order: the evaluation seed, then (with
    ``local_pruning > 0``) one uniform number per evaluated tree.  ``phases``,
    when given, gets the seconds of ``"packing"`` and ``"statistics"`` added;
    ``front`` (a :class:`~dtlab.evolution.front.Front`), when given, is offered
    every evaluated tree, before and after its pruning.

    Returns
    -------
    (Population, number of trees evaluated, next_ident)
    """
    todo = np.flatnonzero(~population.evaluated).astype(np.int64)
    if todo.size == 0:
        return population, 0, next_ident
    seed = int(rng.integers(0, 2**63, dtype=np.int64))
    start = time.perf_counter()
    batch = population.forest(todo)
    packed = time.perf_counter()
    stats = evaluator.evaluate(batch, seed)
    evaluated_at = time.perf_counter()
    prune = rng.random(todo.size) < local_pruning if local_pruning > 0 else np.zeros(todo.size, np.bool_)
    p = population
    fitness, accuracy, evaluated, ident = p.fitness.copy(), p.accuracy.copy(), p.evaluated.copy(), p.ident.copy()
    nodes = _nodes(p)  # the batch's fresh trees: their statistics are written in place
    n_samples = np.int64(evaluator.n_samples)
    _store_stats(p.node_offset, nodes, fitness, accuracy, evaluated, todo, batch.node_offset, batch.left, batch.right,
                 stats.counts, stats.cand_hash, stats.cand_row, n_samples, float(alpha))
    population = _population(p.node_offset, nodes, fitness, accuracy, evaluated, ident)
    if front is not None:
        front.offer(population, todo)
    if prune.any():
        offset, nodes, pruned, next_ident = _prune_chosen(p.node_offset, nodes, fitness, accuracy, ident, todo[prune],
                                                          n_samples, float(alpha), np.int64(next_ident))
        population = _population(offset, nodes, fitness, accuracy, evaluated, ident)
        if front is not None:
            front.offer(population, pruned)
    if phases is not None:
        phases["packing"] = phases.get("packing", 0.0) + packed - start
        phases["statistics"] = phases.get("statistics", 0.0) + time.perf_counter() - evaluated_at
    return population, int(todo.size), int(next_ident)
