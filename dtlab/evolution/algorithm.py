"""The evolutionary loop of GDT and the state of a run (what a checkpoint holds).

One generation (Jurczuk, Czajkowski, Kretowski 2021, Fig. 5 and Listing 1):
linear ranking selection of ``population_size - n_elite`` parents, crossover
of consecutive pairs, mutation, the elite (best individuals found so far)
copied unchanged, then one batched evaluation of every individual that
changed.  Unchanged individuals keep their fitness, so a generation costs one
pass over the data whatever the population size.  After the evaluation a
changed tree is, with probability ``local_pruning``, locally optimised by
pruning the subtrees that do not pay for their size (GDT's local fitness
maximisation, see :func:`~dtlab.evolution.individual.prune_unprofitable`),
which needs no further pass over the data.

All randomness comes from one ``numpy.random.Generator`` stored in the
:class:`RunState`; evaluators are stateless and order-independent, so a run
is reproduced exactly from a saved state, whatever the number of devices.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .evaluators import Evaluator
from .individual import Individual, apply_stats, pack, prune_unprofitable
from .operators import OperatorContext, crossover, initial_population, mutate
from .selection import linear_ranking


@dataclass
class EvolutionParams:
    """Validated parameters of the loop (see :mod:`dtlab.evolution.defaults` for the reasons)."""

    population_size: int
    max_generations: int
    max_stagnation: int
    alpha: float
    crossover_probability: float
    mutation_probability: float
    n_elite: int
    ranking_pressure: float
    variant_p: np.ndarray
    init_sample_fraction: float
    init_max_samples: int
    init_max_depth: int
    min_samples_split: int
    max_depth: int
    local_pruning: float = 0.0


@dataclass
class RunState:
    """Everything the next generation depends on.

    Attributes
    ----------
    generation : int
        Generations completed (0 = initial population evaluated).
    population : list of Individual
    best : Individual
        Best individual found so far (the elite).
    stagnation : int
        Generations since ``best`` last improved.
    rng : numpy Generator
    history : list of dict
        One record per generation (see :func:`record`).
    stop_reason : str or None
        Why the run ended (``"max_generations"``, ``"stagnation"``, ``"callback"``, ``"interrupted"``).
    """

    generation: int
    population: list[Individual]
    best: Individual
    stagnation: int
    rng: np.random.Generator
    history: list[dict] = field(default_factory=list)
    stop_reason: str | None = None


def evaluate(individuals: list[Individual], evaluator: Evaluator, alpha: float, rng: np.random.Generator,
             local_pruning: float = 0.0) -> int:
    """Evaluate the not-yet-evaluated individuals in one batch; returns how many were evaluated.

    Then each evaluated individual is, with probability ``local_pruning``,
    replaced in the list by its most profitable pruning
    (:func:`~dtlab.evolution.individual.prune_unprofitable`).
    """
    todo = [i for i, ind in enumerate(individuals) if not ind.evaluated]
    if todo:
        seed = int(rng.integers(0, 2**63, dtype=np.int64))
        trees = [individuals[i] for i in todo]
        batch = pack(trees)
        stats = evaluator.evaluate(batch, seed)
        apply_stats(trees, batch, stats, evaluator.n_samples, alpha)
        if local_pruning > 0:
            chosen = rng.random(len(todo)) < local_pruning
            for i, prune in zip(todo, chosen):
                if prune:
                    individuals[i] = prune_unprofitable(individuals[i], evaluator.n_samples, alpha)
    return len(todo)


def _best_index(population: list[Individual]) -> int:
    return int(np.argmax([ind.fitness for ind in population]))  # first of equals: deterministic


def record(state: RunState, n_evaluated: int, seconds: float, elapsed: float) -> dict:
    """The history record of the state's current generation."""
    fitness = np.array([ind.fitness for ind in state.population])
    return {"generation": state.generation, "best_fitness": state.best.fitness,
            "best_size": state.best.n_nodes, "best_leaves": state.best.n_leaves,
            "best_accuracy": state.best.accuracy, "mean_fitness": float(fitness.mean()),
            "mean_size": float(np.mean([ind.n_nodes for ind in state.population])),
            "n_evaluated": n_evaluated, "seconds": seconds, "elapsed_s": elapsed}


def initial_state(X: np.ndarray, y: np.ndarray, n_classes: int, evaluator: Evaluator, params: EvolutionParams,
                  rng: np.random.Generator) -> RunState:
    """Grow and evaluate the initial population (generation 0)."""
    start = time.perf_counter()
    population = initial_population(X, y, n_classes, params.population_size, params.init_sample_fraction,
                                    params.init_max_samples, params.init_max_depth, params.min_samples_split, rng)
    n_eval = evaluate(population, evaluator, params.alpha, rng, params.local_pruning)
    state = RunState(0, population, population[_best_index(population)], 0, rng)
    seconds = time.perf_counter() - start
    state.history.append(record(state, n_eval, seconds, seconds))
    return state


def next_generation(state: RunState, evaluator: Evaluator, params: EvolutionParams, ctx: OperatorContext) -> int:
    """Advance ``state`` by one generation in place; returns the number of individuals evaluated."""
    rng = state.rng
    population = state.population
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
    # elitism: the best found so far, then the next best of the current population.  The best is
    # re-evaluated (same fitness, a new draw of dipole objects): without stored arrangements its two
    # objects per (node, class) would otherwise stay the same for as long as it stays the best, and
    # every mutation of its copies would draw its tests from those few objects.
    refreshed = state.best.copy()
    refreshed.evaluated = False
    elite = [refreshed]
    if params.n_elite > 1:
        order = np.argsort(-fitness, kind="stable")
        elite += [population[i] for i in order if population[i] is not state.best][:params.n_elite - 1]
    new_population = elite + offspring
    n_eval = evaluate(new_population, evaluator, params.alpha, rng, params.local_pruning)
    refreshed = new_population[0]  # local pruning may replace the list entry (with the same tree: it is pruned)
    champion = new_population[_best_index(new_population)]
    best, stagnation = (champion, 0) if champion.fitness > state.best.fitness else (refreshed, state.stagnation + 1)
    # one statement without calls: a KeyboardInterrupt cannot land between these stores
    state.population, state.best, state.stagnation, state.generation = (new_population, best, stagnation,
                                                                          state.generation + 1)
    return n_eval


def run(state: RunState, evaluator: Evaluator, params: EvolutionParams, ctx: OperatorContext,
        after_generation: Callable[[RunState, dict], bool] | None = None) -> RunState:
    """Run generations until a stopping rule holds; ``after_generation(state, record)`` may return True to stop.

    Stopping rules (GDT): ``params.max_generations`` generations, or
    ``params.max_stagnation`` generations without improvement of the best.
    A ``KeyboardInterrupt`` (or any error) propagates to the caller with
    ``state`` at the last completed generation: ``next_generation`` commits
    its result in one step at the end, and the generator's state is rolled
    back to the start of the unfinished generation, so a run resumed from
    this state continues exactly as if it had not been interrupted.
    """
    elapsed = state.history[-1]["elapsed_s"] if state.history else 0.0
    while state.stop_reason is None:
        if state.generation >= params.max_generations:
            state.stop_reason = "max_generations"
            break
        if state.stagnation >= params.max_stagnation:
            state.stop_reason = "stagnation"
            break
        start = time.perf_counter()
        rng_state = state.rng.bit_generator.state
        done = state.generation
        try:
            n_eval = next_generation(state, evaluator, params, ctx)
        except BaseException:
            if state.generation == done:
                state.rng.bit_generator.state = rng_state
            raise
        seconds = time.perf_counter() - start
        elapsed += seconds
        rec = record(state, n_eval, seconds, elapsed)
        state.history.append(rec)
        if after_generation is not None and after_generation(state, rec):
            state.stop_reason = "callback"
    return state
