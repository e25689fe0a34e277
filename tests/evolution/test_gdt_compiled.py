"""The compiled host loop against the plain reference: the same draws, the same population, bit for bit."""

import copy

import numpy as np
import pytest

from dtlab._validation import encode_labels
from dtlab.datasets import chess3x3
from dtlab.evolution import CpuEvaluator, GDTClassifier
from dtlab.evolution._choices import _choose_two, _numpy_sum, _ranking_cdf, _selection_cum
from dtlab.evolution.algorithm import initial_state, next_generation, run
from dtlab.evolution.operators import OperatorContext, reference_generation
from dtlab.evolution.population import Population
from dtlab.evolution.selection import ranking_probabilities


def test_numpy_sum_is_numpys_pairwise_sum():
    rng = np.random.default_rng(0)
    for n in list(range(1, 300)) + [1000, 1025, 4097]:
        a = rng.standard_normal(n + 5) * 10.0 ** rng.integers(-3, 4, n + 5)
        assert _numpy_sum(a, 3, n) == np.sum(a[3:3 + n]), n


@pytest.mark.parametrize("pressure", [1.0, 1.5, 2.0])
def test_ranking_cdf_is_what_generator_choice_searches(pressure):
    for n in range(1, 400):
        p = ranking_probabilities(n, pressure)
        cdf = p.cumsum()
        cdf /= cdf[-1]
        assert np.array_equal(_ranking_cdf(n, pressure), cdf), n
        # and the draw lands where Generator.choice lands, with the same generator state after
        a, b = np.random.default_rng(n), np.random.default_rng(n)
        assert np.searchsorted(cdf, a.random(), side="right") == b.choice(n, p=p)
        assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("pressure", [1.0, 1.7, 2.0])
def test_selection_cum_is_linear_rankings(pressure):
    for n in range(1, 400):
        cum = np.cumsum(ranking_probabilities(n, pressure))
        cum[-1] = 1.0
        assert np.array_equal(_selection_cum(n, pressure), cum), n


def test_choose_two_is_generator_choice_without_replacement():
    for n in range(2, 40):
        for seed in range(25):
            a, b = np.random.default_rng(seed), np.random.default_rng(seed)
            assert tuple(_choose_two(a, n)) == tuple(b.choice(n, size=2, replace=False)), (n, seed)
            assert a.bit_generator.state == b.bit_generator.state


def _start(X, y, seed, **params):
    clf = GDTClassifier(random_state=seed, **params)
    p = clf._validated_params()
    classes, y_enc = encode_labels(y)
    X = np.ascontiguousarray(X, np.float32)
    evaluator = CpuEvaluator(X, y_enc, len(classes))
    state = initial_state(X, y_enc, len(classes), evaluator, p, np.random.default_rng(seed))
    return state, evaluator, p, X


def _context(state, evaluator, params, X):
    return OperatorContext(rng=state.rng, fetch_rows=evaluator.rows, feature_span=np.ptp(X, axis=0).astype(np.float64),
                           n_samples=X.shape[0], variant_p=params.variant_p, max_depth=params.max_depth,
                           ranking_pressure=params.ranking_pressure, X=X)


def assert_same_state(a, b):
    for name in Population.ARRAYS[:-1]:
        x, y = getattr(a.population, name), getattr(b.population, name)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    # the same slots hold the same individual (the ids themselves are numbered differently)
    same_a, same_b = (np.equal.outer(s.population.ident, s.population.ident) for s in (a, b))
    assert np.array_equal(same_a, same_b)
    assert (a.best, a.stagnation, a.generation) == (b.best, b.stagnation, b.generation)
    assert a.rng.bit_generator.state == b.rng.bit_generator.state
    # the size-accuracy front kept along the way: the same tree for every size
    assert sorted(a.front.trees) == sorted(b.front.trees)
    for size, tree in a.front.trees.items():
        assert tree.same_tree(b.front.trees[size]) and tree.accuracy == b.front.trees[size].accuracy


rng_data = np.random.default_rng(7)
X_THREE = rng_data.random((500, 4)).astype(np.float32)
Y_THREE = (X_THREE[:, 0] * 3).astype(int) + (X_THREE[:, 1] > 0.5)


@pytest.mark.parametrize("data, params", [
    (chess3x3(600, 2, seed=1), dict(population_size=20)),
    (chess3x3(600, 2, seed=2), dict(population_size=20, n_elite=3, local_pruning=1.0)),
    (chess3x3(400, 1, seed=3), dict(population_size=16, alpha=0.0, local_pruning=0.0, crossover_probability=0.9)),
    ((X_THREE, Y_THREE), dict(population_size=14, max_depth=3, ranking_pressure=1.4)),
])
def test_compiled_generations_are_the_reference_generations(data, params):
    X, y = data
    compiled, evaluator, p, X = _start(X, y, 3, **params)
    reference = copy.deepcopy(compiled)
    ctx_c, ctx_r = _context(compiled, evaluator, p, X), _context(reference, evaluator, p, X)
    for _ in range(40):
        next_generation(compiled, evaluator, p, ctx_c)
        reference_generation(reference, evaluator, p, ctx_r)
        assert_same_state(compiled, reference)
    assert compiled.population.sizes.max() > 3  # the runs did grow trees


def test_run_takes_either_step_and_records_the_same_history():
    X, y = chess3x3(500, 1, seed=4)
    a, evaluator, p, X = _start(X, y, 5, population_size=12, max_generations=15)
    b = copy.deepcopy(a)
    run(a, evaluator, p, _context(a, evaluator, p, X))
    run(b, evaluator, p, _context(b, evaluator, p, X), step=reference_generation)
    assert_same_state(a, b)
    keys = ["generation", "best_fitness", "best_size", "best_leaves", "best_accuracy", "mean_fitness", "mean_size",
            "n_evaluated"]
    assert [{k: r[k] for k in keys} for r in a.history] == [{k: r[k] for k in keys} for r in b.history]


def test_population_round_trip_and_validation():
    X, y = chess3x3(300, 1, seed=6)
    state, *_ = _start(X, y, 6, population_size=8)
    pop = state.population
    pop.validate()
    again = Population.from_individuals(pop.individuals(), pop.ident)
    for name in Population.ARRAYS:
        assert np.array_equal(getattr(pop, name), getattr(again, name), equal_nan=name in ("fitness", "accuracy"))
    forest = pop.forest(np.arange(pop.n_trees))
    forest.validate(X.shape[1])
    broken = copy.deepcopy(pop)
    broken.left[np.flatnonzero(broken.left != -1)[0]] += 2
    with pytest.raises(ValueError, match="breadth-first"):
        broken.validate()
    with pytest.raises(ValueError, match="int32"):
        Population(*(a.astype(np.int64) if a.dtype == np.int32 else a for a in pop.astuple())).validate()
