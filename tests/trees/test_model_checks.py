"""Models that would predict wrong without a word are refused at load: a leaf value, threshold or base that became
NaN or inf, by every loader, with an error naming the field and the tree (before, Forest accepted it and predicted
NaN); a node the root does not reach (bitmask and quickscorer counted it as a leaf)."""

import json

import numpy as np
import pytest

from dtlab.inference import Forest
from dtlab.trees import PackedForest

BAD = [float("nan"), float("inf")]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    return X, X[:, 0] * 2 + X[:, 1]


def _first_leaf(left):
    return [i for i, c in enumerate(left) if c == -1][0]


def _written(doc, tmp_path):
    """``doc`` through a file, as a mutated model file reaches Forest (json writes NaN and Infinity)."""
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("field", ["leaf", "threshold", "base_score"])
def test_xgboost_json(data, tmp_path, field, bad):
    xgb = pytest.importorskip("xgboost")
    X, y = data
    doc = json.loads(xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 3).save_raw("json"))
    tree = doc["learner"]["gradient_booster"]["model"]["trees"][1]
    if field == "leaf":
        node = _first_leaf(tree["left_children"])
        tree["split_conditions"][node] = bad
        message = rf"tree 1, node {node}: leaf value \(split_conditions\) \[{bad}\] is not finite"
    elif field == "threshold":
        tree["split_conditions"][0] = bad
        message = f"tree 1, node 0: split_conditions {bad} is not finite"
    else:
        doc["learner"]["learner_model_param"]["base_score"] = f"[{bad}]"
        message = f"base_score {bad} is not finite"
    with pytest.raises(ValueError, match=message):
        Forest(_written(doc, tmp_path))


@pytest.mark.parametrize("bad", BAD)
def test_xgboost_text_dump(data, bad):
    xgb = pytest.importorskip("xgboost")
    from dtlab.trees.xgboost_import import from_xgboost_dump

    X, y = data
    dump = [json.loads(t) for t in xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, y), 2).get_dump(
        dump_format="json")]
    dump[1]["children"][0]["children"][0]["leaf"] = bad
    with pytest.raises(ValueError, match=f"tree 1, node 2: leaf \\[{bad}\\] is not finite"):
        from_xgboost_dump(dump, 3)


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("field", ["leaf_value", "threshold"])
def test_lightgbm_dump(data, tmp_path, field, bad):
    lgb = pytest.importorskip("lightgbm")
    X, y = data
    dump = lgb.train({"num_leaves": 4, "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y), 3).dump_model()
    node = dump["tree_info"][2]["tree_structure"]
    if field == "leaf_value":
        while "split_feature" in node:
            node = node["left_child"]  # the leftmost leaf: node 2 of the preorder
        node["leaf_value"] = bad
        message = rf"tree 2, node 2: leaf_value \[{bad}\] is not finite"
    else:
        node["threshold"] = bad
        message = f"tree 2, node 0: threshold {bad} is not finite"
    with pytest.raises(ValueError, match=message):
        Forest(_written(dump, tmp_path))


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("field", ["value", "threshold", "base_margin"])
def test_dtlab_gbdt_file(data, tmp_path, field, bad):
    from dtlab.boosting import GBDTRegressor

    X, y = data
    path = tmp_path / "gbdt.json"
    GBDTRegressor(n_estimators=3, max_depth=3).fit(X, y).save_json(path)
    doc = json.loads(path.read_text())
    tree = doc["fitted"]["trees"][1]
    if field == "value":
        node = _first_leaf(tree["left"])
        tree["value"][node] = bad
        message = rf"tree 1, node {node}: value \[{bad}\] is not finite"
    elif field == "threshold":
        tree["threshold"][0] = bad
        if bad == float("inf"):  # dtlab's hist trees write inf themselves: x < inf sends every present value left
            path.write_text(json.dumps(doc))
            assert np.isfinite(Forest(path).predict(X, method="traversal")).all()
            return
        message = "tree 1, node 0: threshold nan is not finite"
    else:
        doc["fitted"]["base_margin"] = bad
        message = rf"base_margin \[{bad}\] is not finite"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        Forest(path)
    with pytest.raises(ValueError, match=message):
        GBDTRegressor.load_json(path)


def test_dtlab_gbdt_file_best_iteration_out_of_range(data, tmp_path):
    """A negative best_iteration_ sliced trees off the end without a word."""
    from dtlab.boosting import GBDTRegressor

    X, y = data
    path = tmp_path / "gbdt.json"
    GBDTRegressor(n_estimators=3, max_depth=3).fit(X, y).save_json(path)
    doc = json.loads(path.read_text())
    for best in (-2, 3):
        doc["fitted"]["best_iteration_"] = best
        with pytest.raises(ValueError, match=f"best_iteration_ {best} is not a round of the model's 3"):
            Forest(_written(doc, tmp_path))


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("field", ["value", "threshold"])
def test_dtlab_flat_tree_file(data, tmp_path, field, bad):
    from dtlab.greedy import DecisionTreeRegressor

    X, y = data
    doc = DecisionTreeRegressor(max_depth=3).fit(X, y).tree_.to_dict()
    if field == "value":
        node = _first_leaf(doc["left"])
        doc["value"][node] = [bad]
        message = rf"node values must be finite: node {node} has value \[{bad}\]"
    else:
        doc["threshold"][0] = bad
        message = f"thresholds of internal nodes must be finite: node 0 has threshold {bad}"
    with pytest.raises(ValueError, match=message):
        Forest(_written(doc, tmp_path))


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("kind", ["tree value", "tree threshold", "forest value", "gradient boosting value",
                                  "hist gradient boosting value", "hist gradient boosting baseline"])
def test_scikit_learn(data, kind, bad):
    from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeClassifier

    X, y = data
    if kind.startswith("tree"):
        model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y > 0)
        if kind == "tree value":
            model.tree_.value[_first_leaf(model.tree_.children_left), 0, 1] = bad
            message = "tree 0, node .*: tree_.value .* is not finite"
        else:
            model.tree_.threshold[0] = bad if bad != float("inf") else -bad  # +inf is scikit-learn's NaN-only split
            message = "tree 0, node 0: tree_.threshold .* is not finite"
    elif kind == "forest value":
        model = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
        model.estimators_[2].tree_.value[-1, 0, 0] = bad
        message = rf"tree 2, node .*: tree_.value \[{bad}\] is not finite"
    elif kind == "gradient boosting value":
        model = GradientBoostingRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
        model.estimators_[1, 0].tree_.value[-1, 0, 0] = bad
        message = rf"tree 1, node .*: learning_rate \* tree_.value \[{bad}\] is not finite"
    else:
        model = HistGradientBoostingRegressor(max_iter=3, random_state=0).fit(X, y)
        if kind.endswith("value"):
            model._predictors[1][0].nodes["value"][-1] = bad
            message = rf"tree 1, node .*: nodes\['value'\] \[{bad}\] is not finite"
        else:
            model._baseline_prediction = np.array([[bad]])
            message = rf"_baseline_prediction \[{bad}\] is not finite"
    with pytest.raises(ValueError, match=message):
        Forest(model)


def test_a_packed_forest_or_ensemble_built_by_hand():
    forest = PackedForest.from_arrays([3], np.array([0, -1, -1]), np.zeros(3), np.array([1, -1, -1]),
                                      np.array([2, -1, -1]), value=np.array([[0.0], [1.0], [np.nan]]))
    with pytest.raises(ValueError, match=r"tree 0, node 2: leaf value \[nan\] is not finite"):
        Forest(forest)


@pytest.mark.parametrize("case", ["unreached", "shared"])
def test_a_node_not_reached_exactly_once(data, tmp_path, case):
    """A model file whose child index was changed to another node forward in the tree: the walk still ends, but
    a node is reached never or twice, and the methods that number the leaves would read it wrong."""
    from dtlab.boosting import GBDTRegressor

    X, y = data
    path = tmp_path / "gbdt.json"
    GBDTRegressor(n_estimators=2, max_depth=3).fit(X, y).save_json(path)
    doc = json.loads(path.read_text())
    tree = doc["fitted"]["trees"][1]
    first = tree["left"][0]
    assert tree["left"][first] != -1  # the root's left child splits again
    if case == "shared":
        tree["left"][0] = tree["right"][0]  # the right child twice, the left subtree never
    else:
        tree["left"][0] = tree["left"][first]  # the root's left child unreached (its own left child shared)
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="tree 1, node .* is not reached from the root exactly once"):
        Forest(path)
