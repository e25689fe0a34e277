"""GDTClassifier: learning, determinism, checkpoints, interruption, bad input, scikit-learn conventions."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from dtlab.datasets import chess3x3
from dtlab.evolution import DEFAULTS, GDTClassifier, NumpyEvaluator, register_evaluator
from dtlab.evolution.evaluators import EVALUATORS
from dtlab.trees import FlatTree

SMALL = dict(population_size=12, max_generations=25, random_state=3)


@pytest.fixture(scope="module")
def chess_small():
    return chess3x3(600, noise_attrs=1, seed=1)


def same_tree(a: FlatTree, b: FlatTree) -> bool:
    return a.equals(b)


def test_chess_2000_rows_reaches_the_ideal_tree():
    X, y = chess3x3(2000, seed=0)
    clf = GDTClassifier(max_generations=800, max_stagnation=400, random_state=0).fit(X, y)
    assert clf.tree_.n_nodes == 17 and clf.tree_.n_leaves == 9
    assert clf.score(X, y) >= 0.999  # the ideal tree: at most a couple of objects right at a border
    X_test, y_test = chess3x3(20000, seed=123)
    assert clf.score(X_test, y_test) > 0.99
    h = clf.history_
    assert (np.diff(h.best_fitness) >= 0).all()  # elitism: the best never gets worse
    assert h.best_size.iloc[-1] == 17


def test_fitted_attributes_and_history(chess_small):
    X, y = chess_small
    clf = GDTClassifier(**SMALL).fit(X, y)
    assert clf.n_generations_ == 25 and clf.stop_reason_ == "max_generations"
    assert isinstance(clf.history_, pd.DataFrame) and len(clf.history_) == 26
    assert {"generation", "best_fitness", "best_size", "best_accuracy", "mean_fitness", "seconds"} <= \
        set(clf.history_.columns)
    assert np.array_equal(clf.classes_, [0, 1]) and clf.n_features_in_ == 3
    clf.tree_.validate()
    assert np.array_equal(clf.tree_.classes, clf.classes_)
    # the tree's leaf counts are the training data's
    assert clf.tree_.value[0].sum() == X.shape[0]
    last = clf.history_.iloc[-1]
    assert clf.best_fitness_ == pytest.approx(last.best_fitness)
    assert clf.best_fitness_ == pytest.approx(last.best_accuracy - clf.alpha * (last.best_size - 1))
    assert clf.score(X, y) == pytest.approx(last.best_accuracy)
    proba = clf.predict_proba(X)
    assert proba.shape == (X.shape[0], 2) and np.allclose(proba.sum(axis=1), 1)
    assert np.array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))
    assert clf.apply(X).shape == (X.shape[0],)


def test_string_labels_and_three_classes():
    rng = np.random.default_rng(0)
    X = rng.random((300, 2)).astype(np.float32)
    labels = np.array(["low", "mid", "high"])[np.digitize(X[:, 0], [0.3, 0.6])]
    clf = GDTClassifier(population_size=10, max_generations=40, random_state=0).fit(X, labels)
    assert set(clf.classes_) == {"low", "mid", "high"}
    assert clf.score(X, labels) > 0.9
    assert clf.predict(X).dtype == labels.dtype


def test_same_seed_same_tree_and_devices_do_not_matter(chess_small):
    X, y = chess_small
    a = GDTClassifier(**SMALL).fit(X, y)
    b = GDTClassifier(**SMALL).fit(X, y)
    c = GDTClassifier(**SMALL, n_devices=2).fit(X, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "n_devices=3 CPU workers", UserWarning)  # a 2-core machine
        d = GDTClassifier(**SMALL, n_devices=3).fit(X, y)
    assert same_tree(a.tree_, b.tree_) and same_tree(a.tree_, c.tree_) and same_tree(a.tree_, d.tree_)
    assert np.array_equal(a.history_.best_fitness, d.history_.best_fitness)
    other = GDTClassifier(**{**SMALL, "random_state": 4}).fit(X, y)
    assert not np.array_equal(a.history_.mean_fitness, other.history_.mean_fitness)


def test_reference_evaluator_gives_the_same_tree(chess_small):
    X, y = chess_small
    params = dict(SMALL, max_generations=8)
    fast = GDTClassifier(**params, backend="cpu").fit(X, y)
    ref = GDTClassifier(**params, backend="cpu", evaluator="reference").fit(X, y)
    assert same_tree(fast.tree_, ref.tree_)


def test_checkpoint_resume_reaches_the_same_final_tree(tmp_path, chess_small):
    X, y = chess_small
    params = dict(SMALL, max_generations=30, checkpoint_every=4)
    reference = GDTClassifier(**params).fit(X, y)

    class Crash(Exception):
        pass

    def crash_at_15(generation, record):
        if generation == 15:
            raise Crash  # a hard failure: only the periodic checkpoint (generation 12) survives

    folder = tmp_path / "run"
    with pytest.raises(Crash):
        GDTClassifier(**params, checkpoint=folder, callback=crash_at_15).fit(X, y)
    assert (folder / "state.json").is_file() and (folder / "population.npz").is_file()
    resumed = GDTClassifier(**params, checkpoint=folder).fit(X, y)
    assert same_tree(resumed.tree_, reference.tree_)
    assert resumed.n_generations_ == 30
    assert np.array_equal(resumed.history_.best_fitness, reference.history_.best_fitness)
    # a finished run resumes to itself; a longer limit continues it
    again = GDTClassifier(**params, checkpoint=folder).fit(X, y)
    assert same_tree(again.tree_, reference.tree_)
    longer = GDTClassifier(**dict(params, max_generations=34), checkpoint=folder).fit(X, y)
    assert longer.n_generations_ == 34
    assert same_tree(longer.tree_, GDTClassifier(**dict(params, max_generations=34)).fit(X, y).tree_)


def test_checkpoint_holds_no_pickle(tmp_path, chess_small):
    X, y = chess_small
    GDTClassifier(**SMALL, checkpoint=tmp_path / "c").fit(X, y)
    data = np.load(tmp_path / "c" / "population.npz", allow_pickle=False)
    assert all(data[k].dtype != object for k in data.files)
    import json

    state = json.loads((tmp_path / "c" / "state.json").read_text())
    assert state["generation"] == 25 and state["rng"]["bit_generator"] == "PCG64"


def test_checkpoint_of_other_data_or_parameters_is_refused(tmp_path, chess_small):
    X, y = chess_small
    GDTClassifier(**SMALL, checkpoint=tmp_path / "c").fit(X, y)
    with pytest.raises(ValueError, match="other training data"):
        GDTClassifier(**SMALL, checkpoint=tmp_path / "c").fit(X[:-1], y[:-1])
    with pytest.raises(ValueError, match="alpha"):
        GDTClassifier(**SMALL, alpha=0.01, checkpoint=tmp_path / "c").fit(X, y)


def test_keyboard_interrupt_keeps_the_best_tree_and_resumes(tmp_path, chess_small):
    X, y = chess_small
    params = dict(SMALL, max_generations=20, checkpoint_every=100)
    reference = GDTClassifier(**params).fit(X, y)

    def ctrl_c(generation, record):
        if generation == 9:
            raise KeyboardInterrupt

    with pytest.warns(UserWarning, match="interrupted after 9 generations"):
        clf = GDTClassifier(**params, callback=ctrl_c, checkpoint=tmp_path / "k").fit(X, y)
    assert clf.stop_reason_ == "interrupted" and clf.n_generations_ == 9
    clf.tree_.validate()
    assert clf.best_fitness_ == pytest.approx(reference.history_.best_fitness[9])
    resumed = GDTClassifier(**params, checkpoint=tmp_path / "k").fit(X, y)
    assert same_tree(resumed.tree_, reference.tree_)


def test_interrupt_inside_the_evaluator_rolls_back_the_unfinished_generation(tmp_path, chess_small):
    X, y = chess_small
    params = dict(SMALL, max_generations=12, backend="flaky")
    calls = {"n": 0}

    class Flaky(NumpyEvaluator):
        def evaluate(self, batch, seed):
            calls["n"] += 1
            if calls["n"] == 7:  # generation 6's evaluation
                raise KeyboardInterrupt
            return super().evaluate(batch, seed)

    register_evaluator("flaky", Flaky)
    try:
        with pytest.warns(UserWarning, match="interrupted after 5 generations"):
            GDTClassifier(**params, checkpoint=tmp_path / "f").fit(X, y)
        resumed = GDTClassifier(**params, checkpoint=tmp_path / "f").fit(X, y)
    finally:
        EVALUATORS.pop(("flaky", "batched"))
    reference = GDTClassifier(**dict(params, backend="cpu")).fit(X, y)
    assert same_tree(resumed.tree_, reference.tree_)


def test_callback_can_stop_the_run(chess_small):
    X, y = chess_small
    clf = GDTClassifier(**SMALL, callback=lambda g, rec: g >= 5).fit(X, y)
    assert clf.n_generations_ == 5 and clf.stop_reason_ == "callback"


def test_stagnation_stops_the_run():
    X, y = chess3x3(300, seed=2)
    clf = GDTClassifier(population_size=10, max_generations=10_000, max_stagnation=15, random_state=0).fit(X, y)
    assert clf.stop_reason_ == "stagnation"
    h = clf.history_
    last_gain = h.generation[h.best_fitness.diff() > 0].max()
    assert clf.n_generations_ == (0 if np.isnan(last_gain) else last_gain) + 15


def test_verbose_shows_a_progress_bar(chess_small, capsys):
    X, y = chess_small
    GDTClassifier(**dict(SMALL, max_generations=3), verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert "GDT" in err and "3/3" in err


def test_single_class_gives_one_leaf_with_a_warning():
    X = np.random.default_rng(0).random((20, 2))
    with pytest.warns(UserWarning, match="single class"):
        clf = GDTClassifier(random_state=0).fit(X, np.full(20, 7))
    assert clf.tree_.n_nodes == 1 and clf.n_generations_ == 0
    assert (clf.predict(X) == 7).all()
    assert np.allclose(clf.predict_proba(X), 1.0)


@pytest.mark.parametrize("X, y, error, match", [
    (np.array([[0.0, np.nan]] * 10), np.arange(10) % 2, ValueError, "NaN"),
    (np.array([["a", "b"]] * 10), np.arange(10) % 2, TypeError, "numeric"),
    (np.zeros((10,)), np.arange(10) % 2, ValueError, "Reshape your data"),
    (np.zeros((10, 2)), np.linspace(0, 1, 10), ValueError, "Unknown label type: continuous"),
    (np.zeros((10, 2)), None, ValueError, "requires y"),
    (np.zeros((10, 2), dtype=complex), np.arange(10) % 2, ValueError, "Complex data"),
    (np.zeros((10, 2)), np.arange(9) % 2, ValueError, "rows"),
    (np.random.default_rng(0).random((4, 2)), np.array([0, 1, 0, 1]), ValueError, "min_samples_split"),
])
def test_bad_data_raises_clear_errors(X, y, error, match):
    with pytest.raises(error, match=match):
        GDTClassifier(random_state=0).fit(X, y)


def test_non_numeric_dataframe_column_is_refused():
    frame = pd.DataFrame({"a": np.arange(10.0), "b": list("abcdefghij")})
    with pytest.raises(TypeError, match="non-numeric"):
        GDTClassifier().fit(frame, np.arange(10) % 2)


@pytest.mark.parametrize("params, error, match", [
    (dict(alpha=-0.1), ValueError, "alpha must be >= 0"),
    (dict(alpha="big"), TypeError, "alpha must be a finite number"),
    (dict(population_size=1), ValueError, "population_size must be >= 2"),
    (dict(population_size=2.5), TypeError, "population_size must be an int"),
    (dict(max_generations=-1), ValueError, "max_generations"),
    (dict(mutation_probability=1.5), ValueError, "mutation_probability must be <= 1"),
    (dict(ranking_pressure=3.0), ValueError, "ranking_pressure"),
    (dict(n_elite=12, population_size=12), ValueError, "n_elite"),
    (dict(prune_probability=0, exchange_probability=0, new_test_probability=0, shift_probability=0),
     ValueError, "at least one"),
    (dict(min_samples_split=1), ValueError, "min_samples_split must be >= 2"),
    (dict(n_devices=0), ValueError, "n_devices must be >= 1"),
    (dict(backend="cuda", evaluator="reference"), ValueError, "no GDT evaluator is registered for backend='cuda'"),
    (dict(executor="spark"), ValueError, "executor must be 'local', 'dask'"),
    (dict(executor=3), TypeError, "executor must be"),
    (dict(evaluator="fastest"), ValueError, "evaluator must be one of"),
    (dict(callback=3), TypeError, "callable"),
])
def test_bad_parameters_raise_clear_errors(params, error, match, chess_small):
    X, y = chess_small
    if params.get("backend") == "cuda" and ("cuda", params.get("evaluator", "batched")) in EVALUATORS:
        pytest.skip("a CUDA evaluator of this variant is registered")
    clf = GDTClassifier(**params)
    with pytest.raises(error, match=match):
        clf.fit(X, y)
    assert not any(name.endswith("_") and not name.startswith("_") for name in vars(clf))  # nothing half-fitted


def test_predict_checks_its_input(chess_small):
    X, y = chess_small
    clf = GDTClassifier(**dict(SMALL, max_generations=2)).fit(X, y)
    with pytest.raises(ValueError, match="X has 2 features, but GDTClassifier is expecting 3"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(np.full((2, 3), np.nan))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        GDTClassifier().predict(X)


def test_scikit_learn_conventions(chess_small):
    X, y = chess_small
    clf = GDTClassifier(alpha=0.01, population_size=8)
    params = clf.get_params()
    assert params["alpha"] == 0.01 and params["population_size"] == 8
    assert params["max_stagnation"] == DEFAULTS["max_stagnation"].value
    clf.set_params(max_generations=3, random_state=0)
    copy = clone(clf)
    assert copy.get_params() == clf.get_params() and not hasattr(copy, "tree_")
    assert 0 <= copy.fit(X, y).score(X, y) <= 1


def test_defaults_have_reasons():
    import inspect

    signature = inspect.signature(GDTClassifier)
    for name, entry in DEFAULTS.items():
        assert len(entry.reason) > 40
        assert signature.parameters[name].default == entry.value


def test_fitted_tree_round_trips_through_json(tmp_path, chess_small):
    X, y = chess_small
    clf = GDTClassifier(**dict(SMALL, max_generations=5)).fit(X, y)
    clf.tree_.save(tmp_path / "t.json")
    loaded = FlatTree.load(tmp_path / "t.json")
    assert np.array_equal(loaded.predict(X.astype(np.float32)), clf.predict(X))


def test_no_warnings_in_a_normal_fit(chess_small):
    X, y = chess_small
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GDTClassifier(**dict(SMALL, max_generations=3)).fit(X, y)


@pytest.mark.parametrize("local_pruning", [0.0, 1.0])
def test_local_pruning_extremes_give_valid_trees(local_pruning, chess_small):
    X, y = chess_small
    clf = GDTClassifier(**SMALL, local_pruning=local_pruning).fit(X, y)
    clf.tree_.validate()
    assert (np.diff(clf.history_.best_fitness) >= 0).all()
    with pytest.raises(ValueError, match="local_pruning must be <= 1"):
        GDTClassifier(local_pruning=1.5).fit(X, y)


def test_scikit_learn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(GDTClassifier(max_generations=10, population_size=8, random_state=0),
                                  on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed
    assert len(results) > 40


# ----------------------------------------------------------------- the size-accuracy front
def test_front_holds_non_dominated_trees_and_the_path_chooses_among_them(chess_small):
    X, y = chess_small
    clf = GDTClassifier(**dict(SMALL, max_generations=40)).fit(X, y)
    nodes = np.array([t.n_nodes for t in clf.front_])
    train = np.array([t.metadata["training_accuracy"] for t in clf.front_])
    assert len(clf.front_) >= 2 and (np.diff(nodes) > 0).all() and (np.diff(train) > 0).all()
    for tree, acc in zip(clf.front_, train):  # the recorded accuracy is the finished tree's own
        tree.validate()
        assert np.mean(tree.predict(X.astype(np.float32), backend="cpu") == y) == pytest.approx(acc)
    # no tree the run evaluated beat the evolution's best on its fitness (elitism keeps the best)
    assert max(t.metadata["fitness"] for t in clf.front_) <= clf.best_fitness_
    assert clf.best_tree_ is clf.tree_ and clf.size_alpha_ is None and clf.cv_results_ is None
    path = clf.size_path_
    assert path.alpha_high.iloc[0] == np.inf and path.alpha_low.iloc[-1] == 0
    assert (path.alpha_low.to_numpy()[:-1] == path.alpha_high.to_numpy()[1:]).all()
    for row in path.itertuples():  # inside its range, a weight chooses that tree
        alpha = row.alpha_low * 1.01 if np.isinf(row.alpha_high) else (row.alpha_low + row.alpha_high) / 2
        chosen = GDTClassifier(**dict(SMALL, max_generations=40), size_alpha=alpha).fit(X, y)
        assert chosen.tree_.equals(clf.front_[row.front_index]) and chosen.size_alpha_ == alpha
    big = GDTClassifier(**dict(SMALL, max_generations=40), size_alpha=1.0).fit(X, y)
    assert big.tree_.n_nodes == nodes[0]  # a heavy weight: the smallest tree of the front


def test_size_alpha_by_cross_validation(chess_small):
    X, y = chess_small
    clf = GDTClassifier(**dict(SMALL, max_generations=15), size_alpha="cv", size_cv=2).fit(X, y)
    results = clf.cv_results_
    assert results["folds"] == 2 and len(results["alphas"]) == len(results["scores"]) >= 1
    best = int(np.flatnonzero(np.isclose(results["scores"], max(results["scores"])))[-1])
    assert clf.size_alpha_ == results["alphas"][best]
    assert any(clf.tree_.equals(t) for t in clf.front_)
    again = GDTClassifier(**dict(SMALL, max_generations=15), size_alpha="cv", size_cv=2).fit(X, y)
    assert again.tree_.equals(clf.tree_) and again.cv_results_ == results  # same seed, same choice


@pytest.mark.parametrize("size_alpha, error, match", [
    ("big", ValueError, "size_alpha must be None"), (-1.0, ValueError, "size_alpha must be >= 0"),
])
def test_bad_size_alpha_is_a_clear_error(size_alpha, error, match, chess_small):
    X, y = chess_small
    with pytest.raises(error, match=match):
        GDTClassifier(**SMALL, size_alpha=size_alpha).fit(X, y)
    with pytest.raises(ValueError, match="size_cv must be >= 2"):
        GDTClassifier(**SMALL, size_alpha="cv", size_cv=1).fit(X, y)


def test_checkpoint_keeps_the_front(tmp_path, chess_small):
    X, y = chess_small
    params = dict(SMALL, max_generations=20, checkpoint_every=5)
    reference = GDTClassifier(**params).fit(X, y)

    def stop_at_12(generation, record):
        if generation == 12:
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        GDTClassifier(**params, checkpoint=tmp_path / "c", callback=stop_at_12).fit(X, y)
    resumed = GDTClassifier(**params, checkpoint=tmp_path / "c").fit(X, y)
    assert len(resumed.front_) == len(reference.front_)
    assert all(a.equals(b) for a, b in zip(resumed.front_, reference.front_))
