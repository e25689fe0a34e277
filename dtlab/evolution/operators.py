"""Genetic operators of GDT: initial trees, mutation variants and crossover.

Follows Jurczuk, Czajkowski, Kretowski (Applied Intelligence 2021, section
2.4) and Kretowski's GDT system:

* initial trees are grown top-down on a random fraction of the training data
  with tests from *mixed dipoles* (two objects of different classes in the
  node; a threshold is drawn between their values on an attribute where they
  differ, so the test separates them);
* a mutation first chooses a node type (internal or leaf, equally likely),
  then a node by linear ranking that favours deeper nodes and nodes with more
  misclassified objects (pure leaves excluded), then a variant: prune, exchange
  parent with son, new test, shift threshold (internal) or expand (leaf);
* crossover exchanges subtrees rooted at random nodes, or for two internal
  nodes their branches or tests.

The evaluator keeps no record of which objects reach which node, so dipoles
come from the two objects per (node, class) drawn in the last evaluation.
Every operator returns a new :class:`Individual` (or ``None`` when it cannot
apply); inputs are never modified, so individuals may be shared between
generations.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .evaluators.draws import EMPTY_HASH
from .individual import Individual, apply_stats, assemble, pack, prune_unprofitable
from .selection import linear_ranking, ranked_pick

MUTATION_VARIANTS = ("prune", "exchange", "new_test", "shift")


@dataclass
class OperatorContext:
    """What operators need besides the individual.

    Attributes
    ----------
    rng : numpy Generator
        The run's only source of randomness.
    fetch_rows : callable
        ``fetch_rows(row_ids) -> ndarray (k, n_features)`` of float64 (the evaluator's ``rows``).
    feature_span : ndarray of shape (n_features,), float64
        ``max - min`` of every attribute on the training data (scale of threshold shifts).
    n_samples : int
    variant_p : ndarray of shape (4,)
        Probabilities of prune, exchange, new test and shift for internal nodes.
    max_depth : int
    ranking_pressure : float
    X : ndarray of shape (n_samples, n_features), float32 or float64, optional
        The training rows on the host, what the compiled loop reads dipoles from
        (:mod:`dtlab.evolution.breeding`); ``fetch_rows`` reads the same rows.
    phases : dict, optional
        When given, the compiled loop adds the seconds of its host phases to it
        (``"operators"``, ``"packing"``, ``"statistics"``; see :data:`dtlab.evolution.breeding.HOST_PHASES`).
    """

    rng: np.random.Generator
    fetch_rows: Callable[[np.ndarray], np.ndarray]
    feature_span: np.ndarray
    n_samples: int
    variant_p: np.ndarray
    max_depth: int
    ranking_pressure: float
    X: np.ndarray | None = None
    phases: dict | None = None
    _variant_cdf: np.ndarray | None = field(default=None, repr=False)

    def variant_cdf(self, params) -> np.ndarray:
        """The compiled loop's cdf of mutation variants (:func:`~dtlab.evolution.breeding.variant_cdf`), once."""
        if self._variant_cdf is None:
            from .breeding import variant_cdf

            self._variant_cdf = variant_cdf(params)
        return self._variant_cdf


# ------------------------------------------------------------------ dipoles
def dipole_test(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[int, float] | None:
    """A test ``x[f] <= t`` that separates objects ``a`` and ``b``, or None if they are equal everywhere.

    The attribute is drawn uniformly among those where the objects differ and
    the threshold uniformly in ``[min, max)`` of their two values, so the
    smaller value goes left and the larger right.
    """
    differ = np.flatnonzero(a != b)
    if differ.size == 0:
        return None
    f = int(differ[rng.integers(differ.size)])
    lo, hi = (a[f], b[f]) if a[f] < b[f] else (b[f], a[f])
    t = float(lo + rng.random() * (hi - lo))
    if not lo <= t < hi:  # rounding reached hi: the separating threshold closest to it is lo
        t = float(lo)
    return f, t


def node_dipole(ind: Individual, node: int, ctx: OperatorContext) -> tuple[int, float] | None:
    """A test from a mixed dipole of the objects drawn in ``node`` (two classes present), else None."""
    present = np.flatnonzero(ind.cand_row[node, :, 0] >= 0)
    if present.size < 2:
        return None
    c1, c2 = ctx.rng.choice(present, size=2, replace=False)
    rows = []
    for c in (c1, c2):
        slots = np.flatnonzero(ind.cand_row[node, c] >= 0)
        rows.append(ind.cand_row[node, c, slots[ctx.rng.integers(slots.size)]])
    a, b = ctx.fetch_rows(np.array(rows, dtype=np.int64))
    return dipole_test(a, b, ctx.rng)


# ----------------------------------------------------------- initialisation
def grow_dipole_tree(X: np.ndarray, y: np.ndarray, n_classes: int, depth_limit: int, min_samples_split: int,
                     rng: np.random.Generator) -> Individual:
    """Grow a tree top-down with mixed-dipole tests (GDT's initialisation).

    A node becomes a leaf when it is pure, holds fewer than
    ``min_samples_split`` objects or reaches ``depth_limit``; otherwise two
    objects of different classes are drawn from it and :func:`dipole_test`
    separates them.

    Parameters
    ----------
    X : ndarray of shape (m, n_features)
        The (sub)sample the tree is grown on.
    y : ndarray of shape (m,), int class codes
    n_classes : int
    depth_limit : int >= 0
    min_samples_split : int >= 2
    rng : numpy Generator

    Returns
    -------
    Individual (breadth-first, statistics empty, not evaluated)
    """
    feature, threshold, left, right = [], [], [], []
    queue = deque([(np.arange(X.shape[0]), 0)])
    while queue:
        idx, depth = queue.popleft()
        node = len(feature)
        feature.append(-1), threshold.append(0.0), left.append(-1), right.append(-1)
        labels = y[idx]
        if depth >= depth_limit or idx.size < min_samples_split or (labels == labels[0]).all():
            continue
        test = None
        for _ in range(4):  # objects identical in every attribute cannot be separated: redraw
            i = idx[rng.integers(idx.size)]
            others = idx[labels != y[i]]
            j = others[rng.integers(others.size)]
            test = dipole_test(X[i], X[j], rng)
            if test is not None:
                break
        if test is None:
            continue
        f, t = test
        go_left = X[idx, f] <= t
        feature[node], threshold[node] = f, t
        # breadth-first: children are appended in the order parents are dequeued
        left[node] = node + 1 + len(queue)
        right[node] = left[node] + 1
        queue.append((idx[go_left], depth + 1))
        queue.append((idx[~go_left], depth + 1))
    n = len(feature)
    return Individual(np.array(feature, np.int32), np.array(threshold, np.float64), np.array(left, np.int32),
                      np.array(right, np.int32), np.zeros((n, n_classes), np.int64),
                      np.full((n, n_classes, 2), EMPTY_HASH, np.uint64), np.full((n, n_classes, 2), -1, np.int64))


def initial_population(X: np.ndarray, y: np.ndarray, n_classes: int, size: int, sample_fraction: float,
                       max_samples: int, max_depth: int, min_samples_split: int,
                       rng: np.random.Generator) -> list[Individual]:
    """``size`` trees, each grown on its own random subsample with its own depth limit in ``1..max_depth``."""
    n = X.shape[0]
    m = int(min(n, max(min_samples_split, min(max_samples, round(sample_fraction * n)))))
    population = []
    for _ in range(size):
        rows = np.sort(rng.choice(n, size=m, replace=False))
        depth_limit = int(rng.integers(1, max_depth + 1))
        population.append(grow_dipole_tree(X[rows], y[rows], n_classes, depth_limit, min_samples_split, rng))
    return population


# ----------------------------------------------------------------- mutation
def _with_test(ind: Individual, node: int, f: int, t: float) -> Individual:
    new = Individual(ind.feature.copy(), ind.threshold.copy(), ind.left, ind.right, ind.counts, ind.cand_hash,
                     ind.cand_row)
    new.feature[node], new.threshold[node] = f, t
    return new


def prune(ind: Individual, node: int) -> Individual:
    """Replace the subtree at ``node`` by a leaf."""
    return assemble([ind], (0, 0), leafify={(0, node)})[0]


def exchange_with_son(ind: Individual, node: int, ctx: OperatorContext) -> Individual:
    """Exchange parent with son: swap the tests of ``node`` and a random internal son, or
    (equally likely) let the son's subtree replace the node, which prunes the node's other branch.

    When neither son is internal there is no son's test to take and the node is pruned.
    """
    sons = [int(s) for s in (ind.left[node], ind.right[node]) if ind.left[s] != -1]
    if not sons:
        return prune(ind, node)
    son = sons[ctx.rng.integers(len(sons))]
    if ctx.rng.random() < 0.5:
        new = _with_test(ind, node, int(ind.feature[son]), float(ind.threshold[son]))
        new.feature[son], new.threshold[son] = ind.feature[node], ind.threshold[node]
        return new
    return assemble([ind], (0, 0), redirect={(0, node): (0, son)})[0]


def new_test(ind: Individual, node: int, ctx: OperatorContext) -> Individual | None:
    """Re-draw the test of ``node`` from a new mixed dipole of its objects (any attribute)."""
    test = node_dipole(ind, node, ctx)
    return None if test is None else _with_test(ind, node, *test)


def shift_threshold(ind: Individual, node: int, ctx: OperatorContext) -> Individual:
    """Shift the threshold of ``node`` on the same attribute.

    The step is ``+-span * 10**-u`` with ``u`` uniform on
    ``[0.5, log10(m) + 1]``, ``span`` the attribute's range on the training
    data and ``m`` the number of objects in the node (from its last
    evaluation): log-uniform scales let one operator both move a threshold
    across a region and place it between two neighbouring objects.  ``span / m``
    is the mean gap between neighbouring objects of the node; steps go one
    decade below it because the gap that must be hit can be much narrower
    than the mean, while much smaller steps would change nothing.
    """
    f = int(ind.feature[node])
    span = ctx.feature_span[f] if ctx.feature_span[f] > 0 else 1.0
    m = max(int(ind.counts[node].sum()), 10)
    # libm's log10, as the compiled loop's: NumPy's own log10 differs from it in the last bit for some m
    # (and between its scalar and SIMD paths), which would change the run
    u = ctx.rng.uniform(0.5, math.log10(m) + 1.0)
    step = span * 10.0 ** (-u) * (1.0 if ctx.rng.random() < 0.5 else -1.0)
    return _with_test(ind, node, f, float(ind.threshold[node] + step))


def expand(ind: Individual, leaf: int, ctx: OperatorContext) -> Individual | None:
    """Turn ``leaf`` into a split from a mixed dipole of its objects, with two new leaves."""
    test = node_dipole(ind, leaf, ctx)
    if test is None:
        return None
    c = ind.n_classes
    stub = Individual(np.array([test[0], -1, -1], np.int32), np.array([test[1], 0.0, 0.0]),
                      np.array([1, -1, -1], np.int32), np.array([2, -1, -1], np.int32),
                      np.zeros((3, c), np.int64), np.full((3, c, 2), EMPTY_HASH, np.uint64),
                      np.full((3, c, 2), -1, np.int64))
    stub.counts[0], stub.cand_hash[0], stub.cand_row[0] = ind.counts[leaf], ind.cand_hash[leaf], ind.cand_row[leaf]
    return assemble([ind, stub], (0, 0), redirect={(0, leaf): (1, 0)})[0]


def mutate(ind: Individual, ctx: OperatorContext) -> tuple[Individual | None, str]:
    """Apply one GDT mutation; returns ``(new individual or None, variant name)``.

    Node type first (internal or leaf, equal probability; the other type when
    the chosen one has no candidate), then the node by linear ranking: internal
    nodes by depth and by misclassified objects below them, leaves by
    misclassified objects (pure leaves and leaves at ``max_depth`` excluded).
    """
    rng = ctx.rng
    internal = np.flatnonzero(ind.left != -1)
    depth = ind.depths()
    leaf_err = ind.leaf_errors()
    leaves = np.flatnonzero((ind.left == -1) & (leaf_err > 0) & (depth < ctx.max_depth))
    want_internal = rng.random() < 0.5
    if (want_internal and internal.size) or (not leaves.size and internal.size):
        err = ind.subtree_errors()[internal]
        node = ranked_pick([depth[internal], err], internal, ctx.ranking_pressure, rng)
        variant = MUTATION_VARIANTS[rng.choice(len(MUTATION_VARIANTS), p=ctx.variant_p)]
        if variant == "prune":
            return prune(ind, node), variant
        if variant == "exchange":
            return exchange_with_son(ind, node, ctx), variant
        if variant == "new_test":
            new = new_test(ind, node, ctx)
            if new is not None:
                return new, variant
            variant = "shift"  # a pure node has no mixed dipole: fine-tune instead
        return shift_threshold(ind, node, ctx), variant
    if leaves.size:
        node = ranked_pick([leaf_err[leaves]], leaves, ctx.ranking_pressure, rng)
        return expand(ind, node, ctx), "expand"
    return None, "none"


# ---------------------------------------------------------------- crossover
def _random_node(ind: Individual, rng: np.random.Generator, avoid_root: bool) -> int:
    if ind.n_nodes == 1 or not avoid_root:
        return int(rng.integers(ind.n_nodes))
    return int(rng.integers(1, ind.n_nodes))


def crossover(a: Individual, b: Individual, ctx: OperatorContext) -> tuple[Individual, Individual, str]:
    """Exchange subtrees at random nodes; for two internal nodes also (equally likely) branches or tests.

    Returns the two offspring and the variant (``"subtree"``, ``"branches"`` or ``"tests"``).
    """
    rng = ctx.rng
    na = _random_node(a, rng, avoid_root=True)
    nb = _random_node(b, rng, avoid_root=na == 0)
    both_internal = a.left[na] != -1 and b.left[nb] != -1
    variant = ("subtree", "branches", "tests")[rng.integers(3)] if both_internal else "subtree"
    if variant == "tests":
        new_a = _with_test(a, na, int(b.feature[nb]), float(b.threshold[nb]))
        new_b = _with_test(b, nb, int(a.feature[na]), float(a.threshold[na]))
        return new_a, new_b, variant
    if variant == "branches":
        na = int(a.left[na] if rng.random() < 0.5 else a.right[na])
        nb = int(b.left[nb] if rng.random() < 0.5 else b.right[nb])
    new_a = assemble([a, b], (0, 0), redirect={(0, na): (1, nb)})[0]
    new_b = assemble([b, a], (0, 0), redirect={(0, nb): (1, na)})[0]
    return new_a, new_b, variant


# ------------------------------------------------------------ a whole generation
def reference_evaluate(individuals: list[Individual], evaluator, alpha: float, rng: np.random.Generator,
                       local_pruning: float = 0.0, front=None) -> int:
    """Evaluate the not-yet-evaluated individuals in one batch; returns how many were evaluated.

    Then each evaluated individual is, with probability ``local_pruning``,
    replaced in the list by its most profitable pruning
    (:func:`~dtlab.evolution.individual.prune_unprofitable`).  The plain
    reference of :func:`dtlab.evolution.breeding.evaluate`; ``front`` (a
    :class:`~dtlab.evolution.front.Front`) is offered the evaluated trees, then the pruned ones.
    """
    from .population import Population

    todo = [i for i, ind in enumerate(individuals) if not ind.evaluated]
    if todo:
        seed = int(rng.integers(0, 2**63, dtype=np.int64))
        trees = [individuals[i] for i in todo]
        batch = pack(trees)
        stats = evaluator.evaluate(batch, seed)
        apply_stats(trees, batch, stats, evaluator.n_samples, alpha)
        if front is not None:
            front.offer(Population.from_individuals(trees), np.arange(len(trees)))
        if local_pruning > 0:
            chosen = rng.random(len(todo)) < local_pruning
            pruned = []
            for i, prune_it in zip(todo, chosen):
                if prune_it:
                    new = prune_unprofitable(individuals[i], evaluator.n_samples, alpha)
                    if new is not individuals[i]:
                        pruned.append(new)
                    individuals[i] = new
            if front is not None and pruned:
                front.offer(Population.from_individuals(pruned), np.arange(len(pruned)))
    return len(todo)


def reference_generation(state, evaluator, params, ctx: OperatorContext) -> int:
    """One generation in plain Python over objects: what :func:`dtlab.evolution.algorithm.next_generation` compiles.

    Advances ``state`` (a :class:`~dtlab.evolution.algorithm.RunState`) in
    place with the same draws, so both give the same population; returns the
    number of individuals evaluated.
    """
    from .population import Population

    rng = state.rng
    population = state.population.individuals()
    best = population[state.best]
    fitness = np.array([ind.fitness for ind in population])
    n_offspring = params.population_size - params.n_elite
    offspring = [population[i] for i in linear_ranking(fitness, n_offspring, params.ranking_pressure, rng)]
    for k in range(0, n_offspring - 1, 2):
        if rng.random() < params.crossover_probability:
            offspring[k], offspring[k + 1], _ = crossover(offspring[k], offspring[k + 1], ctx)
    for k in range(n_offspring):
        if rng.random() < params.mutation_probability:
            new, _ = mutate(offspring[k], ctx)
            if new is not None:
                offspring[k] = new
    refreshed = best.copy()
    refreshed.evaluated = False
    elite = [refreshed]
    if params.n_elite > 1:
        order = np.argsort(-fitness, kind="stable")
        elite += [population[i] for i in order if population[i] is not best][:params.n_elite - 1]
    new_population = elite + offspring
    n_eval = reference_evaluate(new_population, evaluator, params.alpha, rng, params.local_pruning, state.front)
    champion = int(np.argmax([ind.fitness for ind in new_population]))
    new_best, stagnation = ((champion, 0) if new_population[champion].fitness > best.fitness
                            else (0, state.stagnation + 1))
    packed = Population.from_individuals(new_population)
    state.population, state.best, state.stagnation, state.next_ident, state.generation = (
        packed, new_best, stagnation, int(packed.ident.max()) + 1, state.generation + 1)
    return n_eval
