"""Forest serves every dtlab estimator and its model file; corrupted model files are clear errors, never a crash."""

import json
import subprocess
import sys

import numpy as np
import pytest

from dtlab.datasets import chess3x3
from dtlab.inference import Forest
from dtlab.trees.ensemble import ModelFormatError


@pytest.fixture(scope="module")
def data():
    X, y = chess3x3(600, noise_attrs=1, seed=4)
    X = X.astype(np.float32)
    X[::17, 2] = np.nan
    return X, y


def _fitted(name, X, y):
    from dtlab.boosting import GBDTClassifier, GBDTRegressor
    from dtlab.evolution import GDTClassifier
    from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor

    clean = np.nan_to_num(X)  # the greedy trees and GDT fit on finite X
    if name == "greedy regressor":
        m = DecisionTreeRegressor(max_depth=5, random_state=0).fit(clean, y.astype(float))
        return m, clean, m.predict(clean)
    if name == "greedy classifier":
        m = DecisionTreeClassifier(max_depth=5, random_state=0).fit(clean, y)
        return m, clean, m.predict_proba(clean)
    if name == "GDT":
        m = GDTClassifier(max_generations=20, population_size=10, random_state=0).fit(clean, y)
        return m, clean, m.predict_proba(clean)
    if name == "GBDT regressor":
        m = GBDTRegressor(n_estimators=8, max_depth=3).fit(X, y.astype(np.float32))
        return m, X, m.predict(X)
    classes = y + 3 * (np.arange(y.shape[0]) % 2)  # four classes: softmax, one tree per class and round
    m = GBDTClassifier(n_estimators=5, max_depth=3).fit(X, classes)
    return m, X, m.decision_function(X)


MODELS = ["greedy regressor", "greedy classifier", "GDT", "GBDT regressor", "GBDT classifier"]


@pytest.mark.parametrize("name", MODELS)
def test_forest_of_every_dtlab_estimator_and_its_model_file(tmp_path, data, name):
    model, X, expected = _fitted(name, *data)
    got = Forest(model).predict(X)
    tol = 1e-6 if name.startswith("GBDT") else 0  # GBDT's margins are float32 (XGBoost's precision)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    path = tmp_path / "model.json"
    if name.startswith("GBDT"):
        model.save_json(path)
    else:
        model.tree_.save(path)
    np.testing.assert_allclose(Forest(str(path)).predict(X), expected, rtol=tol, atol=tol)


def test_gbdt_predicts_through_the_inference_engine(data):
    import dtlab.boosting.booster as booster

    X, y = data
    m, X, margins = _fitted("GBDT classifier", X, y)
    assert not hasattr(booster, "predict_margin") and not hasattr(booster, "_sum_leaves")
    ens = m.to_ensemble()
    assert ens.n_outputs == 4 and ens.forest.n_trees == 20 and (ens.base == m.base_margin_).all()
    for method in ("traversal", "bitmask", "quickscorer"):
        np.testing.assert_allclose(Forest(ens).predict(X, method=method), margins, rtol=1e-6, atol=1e-6)


def _gbdt_file(tmp_path, X, y):
    from dtlab.boosting import GBDTRegressor

    m = GBDTRegressor(n_estimators=3, max_depth=3).fit(X, y.astype(np.float32))
    path = tmp_path / "gbdt.json"
    m.save_json(path)
    return json.loads(path.read_text()), path


def _corrupt_gbdt(doc, case):
    tree = doc["fitted"]["trees"][1]
    internal = [i for i, left in enumerate(tree["left"]) if left != -1]
    if case == "child index out of range":
        tree["left"][internal[0]] = 1000
    elif case == "a cycle":
        tree["right"][internal[-1]] = 0  # back to the root
    elif case == "feature past the columns":
        tree["feature"][internal[0]] = 7
    elif case == "fields of different lengths":
        tree["value"] = tree["value"][:-1]
    elif case == "a missing field":
        del tree["threshold"]
    return doc


CORRUPTIONS = ["child index out of range", "a cycle", "feature past the columns", "fields of different lengths",
               "a missing field"]


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_corrupted_gbdt_file_is_a_clear_error(tmp_path, data, case):
    from dtlab.boosting import GBDTRegressor

    X, y = data
    doc, path = _gbdt_file(tmp_path, X, y)
    path.write_text(json.dumps(_corrupt_gbdt(doc, case)))
    with pytest.raises(ModelFormatError):
        GBDTRegressor.load_json(path)
    with pytest.raises(ModelFormatError):
        Forest(str(path))


def test_a_corrupted_gbdt_file_never_reaches_the_kernels(tmp_path, data):
    """The issue's case, as a new user meets it: before, this killed the interpreter at predict."""
    X, y = data
    doc, path = _gbdt_file(tmp_path, X, y)
    path.write_text(json.dumps(_corrupt_gbdt(doc, "child index out of range")))
    np.save(tmp_path / "X.npy", X)
    script = ("import numpy as np\nfrom dtlab.boosting import GBDTRegressor\n"
              f"m = GBDTRegressor.load_json({str(path)!r})\nm.predict(np.load({str(tmp_path / 'X.npy')!r}))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr  # an exception, not a signal
    assert "ModelFormatError" in run.stderr and "child indices must point forward" in run.stderr


@pytest.mark.parametrize("case", ["child index out of range", "a cycle", "feature past the columns"])
def test_corrupted_tree_file_is_a_clear_error(tmp_path, data, case):
    from dtlab.greedy import DecisionTreeClassifier

    X, y = data
    m = DecisionTreeClassifier(max_depth=4, random_state=0).fit(np.nan_to_num(X), y)
    doc = m.tree_.to_dict()
    internal = [i for i, left in enumerate(doc["left"]) if left != -1]
    if case == "child index out of range":
        doc["left"][internal[0]] = len(doc["left"]) + 3
    elif case == "a cycle":
        doc["right"][internal[-1]] = internal[0]
    else:
        doc["feature"][internal[0]] = X.shape[1]
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelFormatError, match="invalid dtlab tree file"):
        Forest(str(path))
    with pytest.raises(ValueError):
        type(m.tree_).load(path)
