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

The population lives in flat arrays (:class:`~dtlab.evolution.population.Population`)
and a generation's host work runs compiled (:mod:`dtlab.evolution.breeding`);
:func:`~dtlab.evolution.operators.reference_generation` is the same generation
in plain Python over objects, which the compiled one reproduces exactly.

All randomness comes from one ``numpy.random.Generator`` stored in the
:class:`RunState`; evaluators are stateless and order-independent, so a run
is reproduced exactly from a saved state, whatever the number of devices.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import breeding, fused
from ._sparse import dense_samples
from .evaluators import Evaluator
from .front import Front
from .operators import OperatorContext, initial_population
from .population import Population


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

    @classmethod
    def from_estimator(cls, est) -> "EvolutionParams":
        """The loop's parameters from a :class:`~dtlab.evolution.GDTClassifier`'s, checked (clear errors)."""
        from .._validation import check_int, check_real

        population_size = check_int(est.population_size, "population_size", low=2)
        n_elite = check_int(est.n_elite, "n_elite", low=1, high=population_size - 1)
        weights = np.array([check_real(getattr(est, f"{v}_probability"), f"{v}_probability", low=0.0)
                            for v in ("prune", "exchange", "new_test", "shift")])
        if weights.sum() <= 0:
            raise ValueError("prune/exchange/new_test/shift probabilities are all 0; at least one must be > 0")
        return cls(
            population_size=population_size,
            max_generations=check_int(est.max_generations, "max_generations", low=0),
            max_stagnation=check_int(est.max_stagnation, "max_stagnation", low=1),
            alpha=check_real(est.alpha, "alpha", low=0.0),
            crossover_probability=check_real(est.crossover_probability, "crossover_probability", low=0.0, high=1.0),
            mutation_probability=check_real(est.mutation_probability, "mutation_probability", low=0.0, high=1.0),
            n_elite=n_elite,
            ranking_pressure=check_real(est.ranking_pressure, "ranking_pressure", low=1.0, high=2.0),
            variant_p=weights / weights.sum(),
            init_sample_fraction=check_real(est.init_sample_fraction, "init_sample_fraction", low=0.0,
                                            high=1.0, low_inclusive=False),
            init_max_samples=check_int(est.init_max_samples, "init_max_samples", low=1),
            init_max_depth=check_int(est.init_max_depth, "init_max_depth", low=1),
            min_samples_split=check_int(est.min_samples_split, "min_samples_split", low=2),
            max_depth=check_int(est.max_depth, "max_depth", low=1),
            local_pruning=check_real(est.local_pruning, "local_pruning", low=0.0, high=1.0),
        )


@dataclass
class RunState:
    """Everything the next generation depends on.

    Attributes
    ----------
    generation : int
        Generations completed (0 = initial population evaluated).
    population : Population
    best : int
        Slot of the best individual found so far (the elite) in ``population``.
    stagnation : int
        Generations since the best last improved.
    rng : numpy Generator
    history : list of dict
        One record per generation (see :func:`record`).
    stop_reason : str or None
        Why the run ended (``"max_generations"``, ``"stagnation"``, ``"callback"``, ``"interrupted"``).
    next_ident : int
        The next unused individual id (:attr:`Population.ident`).
    front : Front
        The most accurate tree of each size evaluated so far (:mod:`dtlab.evolution.front`).
    """

    generation: int
    population: Population
    best: int
    stagnation: int
    rng: np.random.Generator
    history: list[dict] = field(default_factory=list)
    stop_reason: str | None = None
    next_ident: int = 0
    front: Front = field(default_factory=Front)

    @property
    def best_fitness(self) -> float:
        return float(self.population.fitness[self.best])

    def best_individual(self):
        """The best individual as an :class:`~dtlab.evolution.individual.Individual`."""
        return self.population.individual(self.best)


def record(state: RunState, n_evaluated: int, seconds: float, elapsed: float) -> dict:
    """The history record of the state's current generation."""
    pop, best = state.population, state.best
    return {"generation": state.generation, "best_fitness": float(pop.fitness[best]),
            "best_size": int(pop.sizes[best]), "best_leaves": pop.n_leaves(best),
            "best_accuracy": float(pop.accuracy[best]), "mean_fitness": float(pop.fitness.mean()),
            "mean_size": float(np.mean(pop.sizes)), "n_evaluated": n_evaluated, "seconds": seconds,
            "elapsed_s": elapsed}


def initial_state(X: np.ndarray, y: np.ndarray, n_classes: int, evaluator: Evaluator, params: EvolutionParams,
                  rng: np.random.Generator) -> RunState:
    """Grow and evaluate the initial population (generation 0)."""
    start = time.perf_counter()
    # a sparse X: only each initial tree's sample of rows is made dense
    individuals = initial_population(dense_samples(X), y, n_classes, params.population_size,
                                     params.init_sample_fraction, params.init_max_samples, params.init_max_depth,
                                     params.min_samples_split, rng)
    population = Population.from_individuals(individuals)
    front = Front()
    population, n_eval, next_ident = breeding.evaluate(population, evaluator, params.alpha, rng, params.local_pruning,
                                                       population.n_trees, front=front)
    state = RunState(0, population, int(np.argmax(population.fitness)), 0, rng, next_ident=next_ident, front=front)
    seconds = time.perf_counter() - start
    state.history.append(record(state, n_eval, seconds, seconds))
    return state


def next_generation(state: RunState, evaluator: Evaluator, params: EvolutionParams, ctx: OperatorContext) -> int:
    """Advance ``state`` by one generation in place; returns the number of individuals evaluated.

    The best individual found so far is re-evaluated as the first elite (same
    fitness, a new draw of dipole objects): without stored arrangements its two
    objects per (node, class) would otherwise stay the same for as long as it
    stays the best, and every mutation of its copies would draw its tests from
    those few objects.
    """
    serial_data = getattr(evaluator, "serial_data", None)
    data = serial_data(params.population_size) if serial_data is not None and ctx.phases is None else None
    if data is not None:  # small data on this process's CPU: the whole generation in one compiled call
        population, n_eval, next_ident = fused.generation(state.population, state.best, state.next_ident, params,
                                                          ctx.variant_cdf(params), state.rng, ctx.X,
                                                          ctx.feature_span, *data, evaluator.n_classes, state.front)
    else:
        start = time.perf_counter()
        population, next_ident = breeding.breed(state.population, state.best, state.next_ident, params,
                                                ctx.variant_cdf(params), state.rng, ctx.X, ctx.feature_span)
        if ctx.phases is not None:
            ctx.phases["operators"] = ctx.phases.get("operators", 0.0) + time.perf_counter() - start
        population, n_eval, next_ident = breeding.evaluate(population, evaluator, params.alpha, state.rng,
                                                           params.local_pruning, next_ident, ctx.phases, state.front)
    champion = int(np.argmax(population.fitness))  # first of equals: deterministic
    # slot 0 is the refreshed best (local pruning may have replaced it with its pruning)
    improved = population.fitness[champion] > state.best_fitness
    best, stagnation = (champion, 0) if improved else (0, state.stagnation + 1)
    # one statement without calls: a KeyboardInterrupt cannot land between these stores
    state.population, state.best, state.stagnation, state.next_ident, state.generation = (
        population, best, stagnation, next_ident, state.generation + 1)
    return n_eval


def run(state: RunState, evaluator: Evaluator, params: EvolutionParams, ctx: OperatorContext,
        after_generation: Callable[[RunState, dict], bool] | None = None,
        step: Callable[..., int] = next_generation) -> RunState:
    """Run generations until a stopping rule holds; ``after_generation(state, record)`` may return True to stop.

    Stopping rules (GDT): ``params.max_generations`` generations, or
    ``params.max_stagnation`` generations without improvement of the best.
    A ``KeyboardInterrupt`` (or any error) propagates to the caller with
    ``state`` at the last completed generation: a generation commits its
    result in one step at the end, and the generator's state is rolled back to
    the start of the unfinished generation, so a run resumed from this state
    continues exactly as if it had not been interrupted.  ``step`` advances
    one generation (:func:`next_generation`, or the reference
    :func:`~dtlab.evolution.operators.reference_generation`).
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
            n_eval = step(state, evaluator, params, ctx)
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
