"""GDT operators keep trees valid and do what they say; selection follows linear ranking."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtlab.evolution import CpuEvaluator
from dtlab.evolution.evaluators.draws import tree_salts
from dtlab.evolution.individual import Individual, assemble, from_flat_tree, pack, remove_empty_branches, to_flat_tree
from dtlab.evolution.operators import (
    OperatorContext,
    crossover,
    dipole_test,
    expand,
    grow_dipole_tree,
    initial_population,
    mutate,
    new_test,
    prune,
    reference_evaluate,
    shift_threshold,
)
from dtlab.evolution.selection import linear_ranking, ranked_pick, ranking_probabilities
from dtlab.evolution.testing import random_individuals as random_trees
from dtlab.testing import random_data
from dtlab.trees import apply_reference


def context(rng, X, evaluator, max_depth=8):
    span = X.max(axis=0).astype(np.float64) - X.min(axis=0)
    return OperatorContext(rng=rng, fetch_rows=evaluator.rows, feature_span=span, n_samples=X.shape[0],
                           variant_p=np.full(4, 0.25), max_depth=max_depth, ranking_pressure=2.0)


def evaluated_population(seed, n_samples=400, n_features=3, n_classes=2, n_trees=6):
    rng = np.random.default_rng(seed)
    X, y = random_data(rng, n_samples, n_features, n_classes)
    ev = CpuEvaluator(X, y, n_classes)
    population = random_trees(rng, X, y, n_classes, n_trees)
    reference_evaluate(population, ev, 0.001, rng)
    return rng, X, y, ev, population


def assert_valid(ind, n_features):
    ind.check()
    to_flat_tree(ind, n_features).validate()


def test_grow_dipole_tree_is_valid_and_stops_where_it_should():
    rng = np.random.default_rng(0)
    X, y = random_data(rng, 300, 2, 3)
    ind = grow_dipole_tree(X, y, 3, depth_limit=20, min_samples_split=5, rng=rng)
    assert_valid(ind, 2)
    flat = to_flat_tree(ind, 2)
    leaf = apply_reference(flat, X)
    for node in np.unique(leaf):
        labels = y[leaf == node]
        # a leaf is pure, or too small to split, (or its objects cannot be separated)
        assert len(np.unique(labels)) == 1 or labels.size < 5 or len(np.unique(X[leaf == node], axis=0)) == 1
    assert ind.depths().max() <= 20
    shallow = grow_dipole_tree(X, y, 3, depth_limit=1, min_samples_split=5, rng=rng)
    assert shallow.n_nodes == 3


def test_grow_dipole_tree_on_pure_or_tiny_data_is_a_leaf():
    rng = np.random.default_rng(1)
    X = rng.random((10, 2))
    assert grow_dipole_tree(X, np.zeros(10, np.int32), 2, 5, 5, rng).n_nodes == 1
    assert grow_dipole_tree(X[:4], np.array([0, 1, 0, 1], np.int32), 2, 5, 5, rng).n_nodes == 1


def test_dipole_test_separates_the_two_objects():
    rng = np.random.default_rng(2)
    for _ in range(200):
        a, b = rng.integers(0, 3, size=(2, 4)).astype(np.float32)
        test = dipole_test(a, b, rng)
        if (a == b).all():
            assert test is None
            continue
        f, t = test
        assert (a[f] <= t) != (b[f] <= t)
    # adjacent float32 values: the threshold still separates them
    a = np.array([np.float32(0.3)])
    b = np.array([np.nextafter(np.float32(0.3), np.float32(1))])
    f, t = dipole_test(a, b, rng)
    assert a[0] <= t < b[0]


def test_initial_population_sizes_and_depths():
    rng = np.random.default_rng(3)
    X, y = random_data(rng, 1000, 2, 2)
    pop = initial_population(X, y, 2, size=10, sample_fraction=0.1, max_samples=50, max_depth=3,
                             min_samples_split=5, rng=rng)
    assert len(pop) == 10
    for ind in pop:
        assert_valid(ind, 2)
        assert ind.depths().max() <= 3
        assert not ind.evaluated


def test_assemble_identity_and_flat_tree_round_trip():
    rng, X, y, ev, population = evaluated_population(4)
    for ind in population:
        same, _ = assemble([ind], (0, 0))
        assert same.same_tree(ind)
        assert np.array_equal(same.counts, ind.counts)
        back = from_flat_tree(to_flat_tree(ind, X.shape[1]), 2)
        assert back.same_tree(ind)


def test_prune_makes_a_leaf_with_the_subtree_counts():
    rng, X, y, ev, population = evaluated_population(5)
    ind = max(population, key=lambda i: i.n_nodes)
    node = int(np.flatnonzero(ind.left != -1)[-1])
    pruned = prune(ind, node)
    assert_valid(pruned, X.shape[1])
    assert pruned.n_nodes < ind.n_nodes
    reference_evaluate([pruned], ev, 0.0, rng)
    assert pruned.counts.sum(axis=1)[0] == X.shape[0]
    assert prune(ind, 0).n_nodes == 1


def test_expand_adds_a_separating_test():
    rng, X, y, ev, population = evaluated_population(6)
    ctx = context(rng, X, ev)
    for ind in population:
        impure = np.flatnonzero((ind.left == -1) & (ind.leaf_errors() > 0))
        if not impure.size:
            continue
        leaf = int(impure[0])
        new = expand(ind, leaf, ctx)
        assert_valid(new, X.shape[1])
        assert new.n_nodes == ind.n_nodes + 2
        assert new.n_leaves == ind.n_leaves + 1
        reference_evaluate([new], ev, 0.0, rng)
        # every leaf of the old tree keeps its objects, the expanded one is split in two non-empty parts
        assert new.counts[0].sum() == X.shape[0]
        split_nodes = [n for n in range(new.n_nodes) if new.left[n] != -1 and
                       new.counts[new.left[n]].sum() > 0 and new.counts[new.right[n]].sum() > 0]
        assert len(split_nodes) >= 1


def test_new_test_and_shift_change_only_one_test():
    rng, X, y, ev, population = evaluated_population(7)
    ctx = context(rng, X, ev)
    ind = max(population, key=lambda i: i.n_nodes)
    node = int(np.flatnonzero(ind.left != -1)[0])
    shifted = shift_threshold(ind, node, ctx)
    assert shifted.feature[node] == ind.feature[node]
    assert shifted.threshold[node] != ind.threshold[node]
    changed = np.flatnonzero(shifted.threshold != ind.threshold)
    assert changed.tolist() == [node]
    fresh = new_test(ind, node, ctx)
    assert fresh is not None
    assert np.array_equal(fresh.left, ind.left)
    assert set(np.flatnonzero((fresh.threshold != ind.threshold) | (fresh.feature != ind.feature))) <= {node}
    assert ind.evaluated and not fresh.evaluated  # inputs are never modified


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_classes=st.integers(2, 3), rounds=st.integers(1, 6))
def test_property_operators_keep_trees_valid(seed, n_classes, rounds):
    rng, X, y, ev, population = evaluated_population(seed, n_samples=120, n_classes=n_classes)
    ctx = context(rng, X, ev, max_depth=6)
    for _ in range(rounds):
        nxt = []
        for i in range(0, len(population) - 1, 2):
            a, b, variant = crossover(population[i], population[i + 1], ctx)
            assert variant in ("subtree", "branches", "tests")
            nxt += [a, b]
        for ind in nxt:
            assert_valid(ind, X.shape[1])
        reference_evaluate(nxt, ev, 0.001, rng)
        mutated = []
        for ind in nxt:
            new, variant = mutate(ind, ctx)
            new = new or ind
            assert_valid(new, X.shape[1])
            # only expand deepens a tree, and never beyond max_depth
            assert new.depths().max() <= max(6, ind.depths().max())
            mutated.append(new)
        nxt = mutated
        reference_evaluate(nxt, ev, 0.001, rng)
        population = nxt


def test_crossover_subtree_exchange_conserves_nodes():
    rng, X, y, ev, population = evaluated_population(8)
    ctx = context(rng, X, ev)
    a, b = sorted(population, key=lambda i: -i.n_nodes)[:2]
    for _ in range(30):
        na, nb, variant = crossover(a, b, ctx)
        assert_valid(na, X.shape[1])
        assert_valid(nb, X.shape[1])
        assert na.n_nodes + nb.n_nodes == a.n_nodes + b.n_nodes


def test_mutation_never_picks_pure_leaves():
    rng, X, y, ev, population = evaluated_population(9)
    ctx = context(rng, X, ev)
    # a one-leaf tree over pure data has nothing to mutate
    pure = Individual.leaf(2)
    pure.counts[0] = [10, 0]
    pure.evaluated = True
    assert mutate(pure, ctx) == (None, "none")


def test_remove_empty_branches_keeps_predictions_on_training_data():
    rng, X, y, ev, population = evaluated_population(10)
    ctx = context(rng, X, ev)
    ind = max(population, key=lambda i: i.n_nodes)
    # push a threshold beyond the data so one branch is empty
    node = int(np.flatnonzero(ind.left != -1)[-1])
    odd = shift_threshold(ind, node, ctx)
    odd.threshold[node] = 10.0
    reference_evaluate([odd], ev, 0.0, rng)
    cleaned = remove_empty_branches(odd)
    assert_valid(cleaned, X.shape[1])
    assert cleaned.n_nodes < odd.n_nodes
    assert np.array_equal(to_flat_tree(cleaned, X.shape[1]).predict(X), to_flat_tree(odd, X.shape[1]).predict(X))


def test_ranking_probabilities():
    p = ranking_probabilities(5, 2.0)
    assert p.sum() == pytest.approx(1.0)
    assert p[0] == 0 and p[-1] == pytest.approx(2 / 5)
    assert np.all(np.diff(p) > 0)
    assert np.allclose(ranking_probabilities(4, 1.0), 0.25)


def test_linear_ranking_sus_gives_expected_copies():
    rng = np.random.default_rng(11)
    fitness = rng.random(20)
    expected = ranking_probabilities(20, 1.8) * 20
    ranks = np.argsort(np.argsort(fitness))
    for _ in range(20):
        chosen = linear_ranking(fitness, 20, 1.8, rng)
        copies = np.bincount(chosen, minlength=20)
        assert np.all(np.abs(copies - expected[ranks]) < 1 + 1e-9)


def test_ranked_pick_prefers_high_keys():
    rng = np.random.default_rng(12)
    candidates = np.arange(5)
    picks = [ranked_pick([candidates.astype(float)], candidates, 2.0, rng) for _ in range(2000)]
    counts = np.bincount(picks, minlength=5)
    assert counts[0] == 0 and counts[4] > counts[2] > counts[1]


def test_pack_offsets_and_children():
    rng, X, y, ev, population = evaluated_population(13)
    batch = pack(population)
    assert batch.n_trees == len(population)
    batch.validate(X.shape[1])
    assert batch.n_nodes == sum(ind.n_nodes for ind in population)
    assert np.array_equal(batch.missing_left, np.ones(batch.n_nodes, bool))
    assert len(np.unique(tree_salts(5, batch.n_trees))) == len(population)


def test_center_thresholds_keeps_the_partition_and_centres():
    from dtlab.evolution.individual import center_thresholds

    rng, X, y, ev, population = evaluated_population(14, n_samples=150)
    for ind in population:
        centred = center_thresholds(ind, X)
        assert np.array_equal(to_flat_tree(ind, X.shape[1]).apply(X), to_flat_tree(centred, X.shape[1]).apply(X))
        paths = _paths(ind, X)
        for node in np.flatnonzero(ind.left != -1):
            reach = np.array([node in path for path in paths])
            if not reach.any():
                continue
            x = X[reach, ind.feature[node]].astype(np.float64)
            t = centred.threshold[node]
            lo, hi = x[x <= t], x[x > t]
            if lo.size and hi.size:  # the nearest values on either side are equally far from the threshold
                assert t - lo.max() == pytest.approx(hi.min() - t, abs=1e-7)


def _paths(ind, X):
    """Internal nodes visited by each row (plain Python)."""
    out = []
    for row in X:
        node, path = 0, set()
        while ind.left[node] != -1:
            path.add(int(node))
            node = ind.left[node] if row[ind.feature[node]] <= ind.threshold[node] else ind.right[node]
        out.append(path)
    return out


@pytest.mark.parametrize("alpha", [0.0, 0.002, 0.02])
def test_prune_unprofitable_is_exact_and_locally_optimal(alpha):
    from dtlab.evolution.individual import prune_unprofitable

    rng, X, y, ev, population = evaluated_population(15, n_samples=300, n_classes=3, n_trees=8)
    n = X.shape[0]
    for ind in population:
        ind.fitness = ind.accuracy - alpha * (ind.n_nodes - 1)
        pruned = prune_unprofitable(ind, n, alpha)
        assert_valid(pruned, X.shape[1])
        assert pruned.fitness >= ind.fitness
        # statistics and fitness of the pruned tree are exact: re-evaluating it gives the same numbers
        fresh = pruned.copy()
        fresh.evaluated = False
        reference_evaluate([fresh], ev, alpha, rng)
        assert fresh.accuracy == pytest.approx(pruned.accuracy)
        assert fresh.fitness == pytest.approx(pruned.fitness)
        assert np.array_equal(fresh.counts, pruned.counts)
        # nothing left to gain: pruning any single remaining subtree lowers the fitness, and a second
        # pass changes nothing
        assert prune_unprofitable(pruned, n, alpha) is pruned
        for node in np.flatnonzero(pruned.left != -1):
            cut = prune(pruned, int(node))
            reference_evaluate([cut], ev, alpha, rng)
            assert cut.fitness < pruned.fitness
        if alpha == 0.0:  # with no size penalty only splits that change no prediction go
            assert pruned.accuracy == pytest.approx(ind.accuracy)
