"""GDT experiment functions on tiny inputs (the figures' code paths, not their numbers)."""

import pytest

from dtlab.datasets import chess3x3
from workbench.catalog import load_all
from workbench.evolution import experiments as exp
from workbench.evolution.chess import _stop_at_ideal
from workbench.evolution.producers import gdt_backend
from workbench.registry import BENCHMARKS, FIGURES, RunContext


def test_chess_runs_tables():
    runs, history = exp.chess_runs(n_samples=(300,), noise_attrs=(0, 1), seeds=(0, 1), n_test=500,
                                   max_generations=6, population_size=8)
    assert len(runs) == 4 and set(runs.noise_attrs) == {0, 1}
    assert {"ideal", "test_accuracy", "first_ideal_generation", "fit_seconds", "threads"} <= set(runs.columns)
    assert ((runs.test_accuracy >= 0) & (runs.test_accuracy <= 1)).all()
    assert len(history) == 4 * 7
    assert {"n_samples", "noise_attrs", "seed", "best_fitness", "best_size"} <= set(history.columns)


def test_reached_ideal_on_records_and_frames():
    import pandas as pd

    good = {"best_size": 17, "best_leaves": 9, "best_accuracy": 0.9995}
    assert exp.reached_ideal(good)
    assert not exp.reached_ideal({**good, "best_accuracy": 0.99})
    assert not exp.reached_ideal({**good, "best_size": 19, "best_leaves": 10})
    frame = pd.DataFrame([good, {**good, "best_accuracy": 0.9}])
    assert exp.reached_ideal(frame).tolist() == [True, False]
    assert _stop_at_ideal(3, good) is True


def test_is_ideal_chess_tree_rejects_noise_attributes():
    X, y = chess3x3(3000, noise_attrs=1, seed=0)
    from sklearn.tree import DecisionTreeClassifier

    from dtlab.trees import FlatTree

    tree = FlatTree.from_sklearn(DecisionTreeClassifier(max_depth=1).fit(X, y))
    assert not exp.is_ideal_chess_tree(tree)


def test_cart_comparison_table():
    table = exp.cart_comparison(datasets=("chess3x3", "higgs"), seeds=(0,), n_samples=600, max_generations=5,
                                population_size=8)
    assert set(table.method) == {"GDT", "CART"} and set(table.dataset) == {"chess3x3", "higgs"}
    cart = table[table.method == "CART"]
    assert (cart.train_accuracy == 1.0).all()  # unpruned CART fits its training data
    assert (cart.threads == 1).all() and (table.threads >= 1).all()
    with pytest.raises(ValueError, match="unknown dataset"):
        exp.cart_comparison(datasets=("iris",))


def test_producers_are_registered():
    load_all()
    assert {"evolution_convergence", "evolution_vs_cart", "evolution_devices"} <= set(FIGURES)
    assert {"evolution_evaluator_throughput", "evolution_quality", "evolution_host_loop", "evolution_gpu",
            "evolution_device_speed"} <= set(BENCHMARKS)
    assert {FIGURES["evolution_convergence"].technique, BENCHMARKS["evolution_quality"].technique} == {"evolution"}


def test_summaries():
    runs, _ = exp.chess_runs(n_samples=(300,), noise_attrs=(0, 1), seeds=(0, 1), n_test=300, max_generations=3,
                             population_size=6)
    summary = exp.chess_summary(runs)
    assert len(summary) == 2 and (summary.runs == 2).all()
    assert (summary.ideal_runs <= summary.runs).all()
    table = exp.cart_comparison(datasets=("chess3x3",), seeds=(0, 1), n_samples=400, max_generations=3,
                                population_size=6)
    cart = exp.cart_summary(table)
    assert cart.seeds.tolist() == [2]
    row = cart.iloc[0]
    assert row.node_ratio == pytest.approx(row.cart_nodes / row.gdt_nodes)


def test_live_convergence_hands_the_growing_history_to_its_callback():
    seen = []
    history = exp.live_convergence(n_samples=(200,), noise_attrs=(0,), seeds=(0, 1), on_update=seen.append,
                                   every=2, max_generations=4, population_size=6)
    assert len(history) == 2 * 5 and list(history.groupby("seed").generation.apply(list)) == [list(range(5))] * 2
    assert len(seen) >= 4 and len(seen[-1]) == len(history)
    assert all(len(a) <= len(b) for a, b in zip(seen, seen[1:]))  # the curve only grows


def test_interrupt_stops_the_live_sweep_after_showing_the_partial_history():
    seen = []

    def ctrl_c_once(history):  # the kernel's interrupt landing during the first redraw (inside GDT's callback)
        seen.append(history)
        if len(seen) == 1:
            raise KeyboardInterrupt

    with pytest.warns(UserWarning, match="interrupted after 2 generations"), pytest.raises(KeyboardInterrupt):
        exp.live_convergence(n_samples=(200,), noise_attrs=(0,), seeds=(0, 1), on_update=ctrl_c_once, every=2,
                             max_generations=4, population_size=6)
    assert len(seen) == 2, "the partial history is shown once more before the interrupt is passed on"
    assert seen[-1].seed.unique().tolist() == [0], "the next seed's run started after the interrupt"
    assert seen[-1].generation.tolist() == [0, 1, 2]


def test_interrupt_ends_the_sweep_with_the_runs_so_far():
    def ctrl_c(generation, record):
        if generation == 2:
            raise KeyboardInterrupt

    with pytest.warns(UserWarning, match="interrupted after 2 generations"):
        runs, history = exp.chess_runs(n_samples=(200,), noise_attrs=(0, 1), seeds=(0, 1), n_test=200,
                                       max_generations=4, population_size=6, callback=ctrl_c)
    assert runs[["noise_attrs", "seed", "stop_reason"]].values.tolist() == [[0, 0, "interrupted"]]
    assert history.generation.tolist() == [0, 1, 2]


def test_baseline_comparison_summary_and_gaps():
    methods = ("GDT", "GDT front (CV)", "CART + CCP (CV)", "CART depth/leaf (CV)", "C4.5-style (dtlab)")
    table, skipped, fronts = exp.baseline_comparison(datasets=("chess3x3", "a9a"), seeds=(0, 1), n_samples=500,
                                                     methods=methods, cv=2, n_alphas=4, max_generations=4,
                                                     population_size=6)
    assert set(table.method) == set(methods) and not skipped
    assert table[table.dataset == "a9a"].held_out.all() and not table[table.dataset == "chess3x3"].held_out.any()
    assert (table[table.method == "CART depth/leaf (CV)"].params.str.contains("max_depth")).all()
    assert (table[table.method == "GDT front (CV)"].params.str.contains("size_alpha")).all()
    # the fronts: one curve per GDT run, sizes increasing
    assert set(zip(fronts.dataset, fronts.seed)) == {(d, s) for d in ("chess3x3", "a9a") for s in (0, 1)}
    for _, run in fronts.groupby(["dataset", "seed"]):
        assert (run.n_nodes.diff().dropna() > 0).all() and (run.train_accuracy.diff().dropna() > 0).all()
    summary = exp.baseline_summary(table)
    assert (summary.seeds == 2).all()
    for _, part in summary.groupby("dataset"):
        front = part[part.pareto]
        assert len(front) >= 1
        # nobody off the front is both smaller and more accurate than a front member
        for _, f in front.iterrows():
            assert not ((part.n_nodes < f.n_nodes) & (part.test_accuracy > f.test_accuracy)).any()
        baselines = part[~part.method.str.startswith("GDT")]
        for _, g in part[part.method.str.startswith("GDT")].iterrows():
            no_larger = baselines[baselines.n_nodes <= g.n_nodes].test_accuracy
            assert g.gap_points == pytest.approx(max(0.0, 100 * (no_larger.max() - g.test_accuracy))
                                                 if len(no_larger) else 0.0)
    with pytest.raises(ValueError, match="unknown methods"):
        exp.baseline_comparison(methods=("GDT", "XGBoost"))


def test_front_by_cv_is_the_estimators_own_cv_fit():
    """Table 4 makes "GDT front (CV)" from the defaults' run plus the folds: the same tree and weight as a user's
    GDTClassifier(size_alpha="cv") fit, and its time includes the defaults' run."""
    import numpy as np

    from dtlab.evolution import GDTClassifier
    from workbench.evolution.table4 import front_by_cv

    X_train, _, y_train, _ = exp.load_split("a9a", 600, 3)
    params = dict(random_state=3, max_generations=30, population_size=10, backend="cpu")
    own = GDTClassifier(**params, size_alpha="cv", size_cv=2).fit(X_train, y_train)
    gdt = GDTClassifier(**params).fit(X_train, y_train)
    made, seconds = front_by_cv(gdt, 5.0, X_train, y_train, 2, 3)
    assert seconds > 5.0 and made.size_alpha_ == own.size_alpha_ and made.cv_results_ == own.cv_results_
    assert made.get_params() == own.get_params() and gdt.size_alpha_ is None  # gdt itself untouched
    assert made.tree_.n_nodes == own.tree_.n_nodes
    assert np.array_equal(made.predict(X_train), own.predict(X_train))
    assert np.array_equal(made.tree_.threshold, own.tree_.threshold)


@pytest.mark.parametrize("solver", ["STreeD", "ConTree"])
def test_optimal_trees_run_in_a_child_process(solver):
    pytest.importorskip({"STreeD": "pystreed", "ConTree": "pycontree"}[solver])
    methods = tuple(f"{solver} depth {d}" for d in (2, 3))
    table, skipped, _ = exp.baseline_comparison(datasets=("chess3x3",), seeds=(0,), n_samples=400, methods=methods,
                                                optimal_time_limit=20)
    assert not skipped and set(table.method) == set(methods)
    assert (table.n_nodes <= 2 ** (table.method.str[-1].astype(int) + 1) - 1).all()
    assert table.proven_optimal.all() and (table.test_accuracy > 0.5).all()


def test_pareto_front_of_points():
    assert exp.pareto_front([(17, 0.99), (23, 0.99), (5, 0.7), (100, 0.995)]) == [2, 0, 3]


def test_cuda_backend_without_a_gpu_is_an_error_in_the_gdt_experiments(tmp_path):
    from workbench.evolution.devices import present_devices

    if present_devices("cuda"):
        pytest.skip("a real GPU is present")
    with pytest.raises(RuntimeError, match="no real GPU is usable here"):
        gdt_backend(RunContext(out_dir=tmp_path, technique="evolution", backend="cuda"))
    assert gdt_backend(RunContext(out_dir=tmp_path, technique="evolution", backend="cpu")) == "cpu"


def test_ideal_table_never_averages_a_run_that_did_not_find_the_ideal_tree():
    import pandas as pd

    runs = pd.DataFrame([{"n_samples": n, "noise_attrs": k, "seed": s, "first_ideal_generation": g}
                         for n, k, s, g in ((1000, 0, 0, 40), (1000, 0, 1, 90), (1000, 2, 0, 120), (1000, 2, 1, -1),
                                            (5000, 0, 0, -1), (5000, 0, 1, -1), (5000, 2, 0, 60), (5000, 2, 1, 60))])
    table = exp.ideal_table(runs, max_generations=300)
    assert list(table.columns) == ["0 noise attributes", "2 noise attributes"]
    assert table.loc["1,000 objects", "0 noise attributes"] == "generations 40-90, median 65 (2 of 2 runs)"
    assert table.loc["1,000 objects", "2 noise attributes"] == "generation 120 (1 of 2 runs; 1 never within 300)"
    assert table.loc["5,000 objects", "0 noise attributes"] == "never within 300 (0 of 2 runs)"
    assert table.loc["5,000 objects", "2 noise attributes"] == "generations 60-60, median 60 (2 of 2 runs)"
    one = exp.ideal_table(runs[runs.seed == 0])
    assert one.loc["1,000 objects", "0 noise attributes"] == "generation 40"
    assert one.loc["5,000 objects", "0 noise attributes"] == "never"


def test_one_generation_walkthrough_keeps_every_step():
    from workbench.evolution.walkthrough import one_generation

    step = one_generation(n_samples=40, n_shards=3, seed=3)
    sel = step.selection
    assert sel.tree.tolist() == ["A", "B", "C"] and sel.drawn.sum() == 2 == len(step.picks)
    assert sel.probability.sum() == pytest.approx(1) and ((sel.drawn - sel.expected).abs() < 1).all()
    assert sel.loc[sel["rank"] == 3, "probability"].iloc[0] == 0  # pressure 2: the worst is never drawn
    best = int(sel.fitness.idxmax())
    assert sel.elite.tolist() == [t == best for t in range(3)]
    elite = step.children[0]
    assert elite.same_tree(step.parents[best]) and elite.fitness == pytest.approx(step.parents[best].fitness)
    assert step.crossover_variant in ("subtree", "branches", "tests")
    assert set(step.mutation_variants) <= {"prune", "exchange", "new_test", "shift", "expand", "none"}
    for ind in step.parents + step.children:  # evaluated: every row in one leaf, fitness by eq. (1)
        assert ind.evaluated and int(ind.counts[0].sum()) == 40
        assert ind.fitness == pytest.approx(ind.accuracy - step.alpha * (ind.n_nodes - 1))
    counts = step.leaf_counts
    assert step.merged_equals_one_pass and set(counts.tree) == {"elite", "offspring 1", "offspring 2"}
    for c in (0, 1):
        shards = sum(counts[f"shard {i}: class {c}"] for i in (1, 2, 3))
        assert (shards == counts[f"merged: class {c}"]).all() and (shards == counts[f"one pass: class {c}"]).all()
    assert [t.n_nodes for t in step.child_trees] == [c.n_nodes for c in step.children]
    assert len(step.fitness_table()) == 6


def test_shard_counts_and_bounds():
    from dtlab.evolution.operators import initial_population
    from workbench.evolution.walkthrough import shard_bounds, shard_counts

    assert shard_bounds(10, 3) == [(0, 3), (3, 7), (7, 10)]
    with pytest.raises(ValueError, match="n_shards"):
        shard_bounds(3, 4)
    import numpy as np

    X, y = chess3x3(50, noise_attrs=1, seed=1)
    trees = initial_population(X, y.astype(np.int32), 2, 2, 0.5, 50, 3, 5, np.random.default_rng(0))
    for shards in (1, 2, 5):
        table, stats, equal = shard_counts(trees, X, y, n_shards=shards, seed=7, names=["a", "b"])
        assert equal and len(table) == sum(t.n_leaves for t in trees)
        assert table[["merged: class 0", "merged: class 1"]].to_numpy().sum() == 2 * 50
