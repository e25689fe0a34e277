"""The callbacks protocol shared by GBDT's rounds and GDT's generations."""

import numpy as np
import pytest

from dtlab.callbacks import EarlyStopping, ProgressBar, RecordEvaluation, run_callbacks
from dtlab.datasets import chess3x3


def test_early_stopping_keeps_the_first_best_and_stops_after_the_patience():
    stop = EarlyStopping(2, ("validation_0", "logloss"))
    values = [0.5, 0.4, 0.4, 0.45, 0.3]
    stopped = [stop(i, {"validation_0": {"logloss": v}}) for i, v in enumerate(values[:4])]
    assert stopped == [False, False, False, True] and stop.best_iteration == 1 and stop.best_value == 0.4
    fitness = EarlyStopping(1, "best_fitness", minimize=False)
    assert not fitness(0, {"best_fitness": 0.5}) and not fitness(1, {"best_fitness": 0.6})
    assert fitness(2, {"best_fitness": 0.6}) and fitness.best_iteration == 1


def test_record_evaluation_and_run_callbacks_call_every_callback():
    store = {"validation_0": {"rmse": []}}
    calls = []
    callbacks = [lambda i, rec: True, RecordEvaluation(store, ["validation_0"]), lambda i, rec: calls.append(i)]
    assert run_callbacks(callbacks, 0, {"validation_0": {"rmse": 1.5}})  # one asked to stop ...
    assert store == {"validation_0": {"rmse": [1.5]}} and calls == [0]  # ... and the others still ran
    assert not run_callbacks(callbacks[1:], 1, {"validation_0": {"rmse": 1.0}})


def test_progress_bar_counts_iterations_and_shows_the_record():
    bar = ProgressBar(5, "test", initial=1, postfix=lambda rec: {"loss": f"{rec['loss']:.2f}"})
    for i in range(2):
        assert bar(i, {"loss": 0.25 * i}) is False
    assert bar.bar.n == 3 and "loss=0.25" in str(bar.bar)
    bar.close()


def test_gbdt_callbacks_see_the_round_records_and_can_stop(rng):
    from dtlab.boosting import GBDTRegressor

    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = X[:, 0] + 0.1 * rng.normal(size=300)
    records = []
    m = GBDTRegressor(n_estimators=20, max_depth=2).fit(
        X[:200], y[:200], eval_set=[(X[200:], y[200:])],
        callbacks=[lambda r, rec: records.append((r, rec)) or r == 4])
    assert [r for r, _ in records] == list(range(5)) and len(m.trees_) == 5
    assert [rec["validation_0"]["rmse"] for _, rec in records] == m.evals_result_["validation_0"]["rmse"]
    with pytest.raises(TypeError, match="callbacks"):
        GBDTRegressor(n_estimators=2).fit(X, y, callbacks=[3])


def test_gdt_takes_the_same_callbacks():
    from dtlab.evolution import GDTClassifier

    X, y = chess3x3(400, seed=2)
    stop = EarlyStopping(3, "best_fitness", minimize=False)
    clf = GDTClassifier(max_generations=500, population_size=12, random_state=0, callback=stop).fit(X, y)
    assert clf.stop_reason_ == "callback"
    assert clf.n_generations_ <= stop.best_iteration + 3 + 1
    assert stop.best_value == pytest.approx(clf.history_.best_fitness.max())
