"""GBDT on a LocalCluster on loopback (1, 2 and 3 workers): exact gives the single-process trees bit for bit,
hist where the sums are exact (and the same AUC otherwise); Dask input and output; eval sets on Dask."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

from sklearn.metrics import roc_auc_score  # noqa: E402

from dtlab.boosting import GBDTClassifier, GBDTRegressor  # noqa: E402
from dtlab.boosting.dask import collective as dask_collective  # noqa: E402
from dtlab.distributed.cluster import local_cluster  # noqa: E402
from dtlab.distributed.dask_executor import alive_workers  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")

FIELDS = ("feature", "threshold", "missing_left", "left", "right", "value", "gain", "cover")


def assert_same_trees(a, b):
    assert len(a.trees_) == len(b.trees_)
    for i, (s, t) in enumerate(zip(a.trees_, b.trees_)):
        for f in FIELDS:
            assert np.array_equal(getattr(s, f), getattr(t, f)), (i, f)
    assert a.base_margin_ == b.base_margin_


@pytest.fixture(scope="module", params=[1, 2, 3], ids=lambda n: f"{n}workers")
def client(request):
    with local_cluster(n_workers=request.param, processes=False) as c:
        yield c


def data(n=900, d=6, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 2] = rng.integers(0, 5, n)  # ties and few distinct values
    X[:, 4] = np.round(X[:, 4], 1)
    z = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] - X[:, 3] * X[:, 4] + 0.5 * rng.normal(size=n)
    X[rng.random((n, d)) < missing] = np.nan
    return X, z


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_exact_gives_the_single_process_trees(client, kind):
    X, z = data()
    params = dict(n_estimators=4, max_depth=4, split_method="exact", n_jobs=1)
    if kind == "regression":
        est, y = GBDTRegressor, z.astype(np.float32)
    else:
        est = GBDTClassifier
        y = (z > 0).astype(int) if kind == "binary" else np.digitize(z, [-1, 0, 1])
        y = np.array(["a", "b", "c", "d"])[y]
    local = est(**params).fit(X, y)
    dist = est(**params, executor=client).fit(X, y)
    assert_same_trees(dist, local)
    assert dist.dask_stats_["level_bytes"] and len(dist.dask_stats_["workers"]) == len(
        alive_workers(client))
    np.testing.assert_array_equal(dist.predict(X), local.predict(X))


def test_exact_on_a_dask_dataframe_and_sparse_input(client):
    X, z = data(n=700, missing=0.0)
    y = (z > 0.3).astype(np.int64)
    params = dict(n_estimators=3, max_depth=3, split_method="exact", n_jobs=1)
    local = GBDTClassifier(**params).fit(X, y)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    ddf = dd.from_pandas(frame, npartitions=4)
    dist = GBDTClassifier(**params, executor=client).fit(ddf, dd.from_pandas(pd.Series(y), npartitions=4))
    assert_same_trees(dist, local)
    assert list(dist.feature_names_in_) == list(frame.columns)
    Xs = scipy.sparse.random(600, 5, density=0.4, format="csr", random_state=1, dtype=np.float32)
    ys = (np.asarray(Xs.sum(axis=1)).ravel() > 0.5).astype(int)
    assert_same_trees(GBDTClassifier(**params, executor=client).fit(Xs, ys), GBDTClassifier(**params).fit(Xs, ys))


@pytest.mark.parametrize("loop", ["collective", "scheduler"])
def test_hist_gives_the_single_process_trees_where_sums_are_exact(client, loop):
    """Squared error on small-integer targets, learning rate 1/2: every sum of g and h is exact, so the order
    in which the workers' histograms are added does not matter."""
    X, z = data(n=1200, missing=0.05)
    y = np.clip(np.round(z), -2, 2).astype(np.float32) + 3  # targets 1..5
    params = dict(n_estimators=5, max_depth=4, split_method="hist", max_bins=32, learning_rate=0.5, n_jobs=1)
    local = GBDTRegressor(**params).fit(X, y)
    Xd = da.from_array(X, chunks=(250, 3))
    dist = GBDTRegressor(**params, executor=client, dask_hist_loop=loop).fit(Xd, da.from_array(y, chunks=250))
    assert_same_trees(dist, local)
    stats = dist.dask_stats_
    assert stats["loop"] == loop
    levels = stats["level_bytes"]
    alone = loop == "collective" and len(stats["workers"]) == 1  # nothing to send to anyone
    assert levels[0][0] == 0 and (max(b for _, b in levels) > 0) != alone
    assert len([d for d, _ in levels if d == 0]) == params["n_estimators"]  # every tree's root, either loop


@pytest.mark.parametrize("kind", ["regression", "binary", "multiclass"])
def test_collective_and_scheduler_loops_grow_the_same_trees(client, kind):
    """Sums that are not exact: the workers add the parts' histograms in the order the client does, so the
    collective loop's trees are the scheduler-driven loop's, bit for bit, with far fewer scheduler round trips;
    the same trees with a task per round (a callback to call between rounds) or many rounds per task (none)."""
    X, z = data(n=900, seed=3)
    y = {"regression": z, "binary": (z > 0).astype(int), "multiclass": np.digitize(z, [-1, 1])}[kind]
    Est = GBDTRegressor if kind == "regression" else GBDTClassifier
    params = dict(n_estimators=4, max_depth=4, split_method="hist", learning_rate=0.3, n_jobs=1, executor=client)
    seen = []
    fits = {}
    for loop, callbacks in (("scheduler", None), ("collective", [lambda r, record: seen.append(r)]),
                            ("batched", None)):
        hist_loop = "scheduler" if loop == "scheduler" else "collective"
        fits[loop] = Est(**params, dask_hist_loop=hist_loop).fit(X, y, callbacks=callbacks)
        assert fits[loop].dask_stats_["loop"] == ("scheduler" if loop == "scheduler" else "collective")
    assert seen == list(range(params["n_estimators"]))
    assert_same_trees(fits["collective"], fits["scheduler"])
    assert_same_trees(fits["batched"], fits["scheduler"])
    # the same cut queries; then one trip per tree and level against two to set the group up and one per round
    # (a callback) or one for all the rounds (none: they take far less than TASK_SECONDS)
    trips = {k: f.dask_stats_["round_trips"] for k, f in fits.items()}
    tree_messages = len(fits["scheduler"].dask_stats_["level_bytes"])
    assert trips["collective"] == trips["scheduler"] - tree_messages + 2 + params["n_estimators"]
    assert trips["batched"] == trips["scheduler"] - tree_messages + 2 + 1
    assert tree_messages > 3 * params["n_estimators"]


def test_collective_with_an_odd_number_of_features_grows_the_scheduler_loops_trees(client):
    """Two ranks keep the summed histograms of 3 and 4 of 7 features each (a reduce-scatter of uneven halves)."""
    X, z = data(n=700, d=7, seed=5)
    params = dict(n_estimators=3, max_depth=4, split_method="hist", learning_rate=0.3, n_jobs=1, executor=client)
    fits = {}
    for loop in ("scheduler", "collective"):
        fits[loop] = GBDTClassifier(**params, dask_hist_loop=loop).fit(X, (z > 0).astype(int))
    assert fits["collective"].dask_stats_["loop"] == "collective"
    assert_same_trees(fits["collective"], fits["scheduler"])


def test_the_collective_falls_back_to_the_scheduler_loop_where_it_cannot_start(client, monkeypatch):
    """Workers that cannot open the group's sockets: the fit takes the scheduler-driven loop, says so, and
    grows the same trees."""
    monkeypatch.setattr(dask_collective, "open_group", _no_sockets)
    X, z = data(n=600)
    params = dict(n_estimators=3, max_depth=3, split_method="hist", n_jobs=1)
    dist = GBDTRegressor(**params, executor=client).fit(X, z)
    assert dist.dask_stats_["loop"] == "scheduler"
    assert_same_trees(dist, GBDTRegressor(**params, executor=client, dask_hist_loop="scheduler").fit(X, z))


def _no_sockets(*args):
    raise OSError("sockets are not allowed here")


def test_options_the_dask_fit_does_not_carry_are_clear_errors(client):
    X, z = data(n=200)
    y = (z > 0).astype(int)
    for split_method in ("hist", "exact"):
        est = GBDTClassifier(n_estimators=2, split_method=split_method, executor=client)
        with pytest.raises(ValueError, match="sample_weight is not supported with a Dask executor"):
            est.fit(X, y, sample_weight=np.ones(200))
        with pytest.raises(ValueError, match="sample_weight is not supported with a Dask executor"):
            est.fit(X, y, eval_set=[(X, y)], sample_weight_eval_set=[np.ones(200)])
        for option in (dict(subsample=0.5), dict(colsample_bytree=0.5), dict(colsample_bylevel=0.5)):
            with pytest.raises(ValueError, match="subsample and colsample_. below 1 are not supported"):
                GBDTClassifier(n_estimators=2, split_method=split_method, executor=client, **option).fit(X, y)
        with pytest.raises(ValueError, match="grow_policy='lossguide' is not supported with a Dask executor"
                           if split_method == "hist" else "lossguide' needs split_method='hist'"):
            GBDTClassifier(n_estimators=2, split_method=split_method, executor=client,
                           grow_policy="lossguide").fit(X, y)
        frame = pd.DataFrame(X, columns=list("abcdef")).assign(c=lambda f: pd.Categorical(np.arange(200) % 3))
        with pytest.raises(ValueError, match="categorical columns are not supported with a Dask executor"):
            est.fit(frame, y)


def test_hist_auc_within_a_thousandth_of_one_process(client):
    rng = np.random.default_rng(5)
    X, z = data(n=4000, seed=5)
    y = (z + 0.3 * rng.normal(size=z.shape[0]) > 0).astype(int)
    train, test = slice(0, 3000), slice(3000, None)
    params = dict(n_estimators=20, max_depth=4, split_method="hist", learning_rate=0.3, n_jobs=1)
    local = GBDTClassifier(**params).fit(X[train], y[train])
    dist = GBDTClassifier(**params, executor=client).fit(X[train], y[train])
    auc_local = roc_auc_score(y[test], local.predict_proba(X[test])[:, 1])
    auc_dist = roc_auc_score(y[test], dist.predict_proba(X[test])[:, 1])
    assert abs(auc_dist - auc_local) <= 1e-3
    assert np.array_equal(dist.trees_[0].feature, local.trees_[0].feature)  # rounding apart, the same first tree


def test_predictions_on_dask_input_are_dask_collections(client):
    X, z = data(n=600)
    y = np.digitize(z, [-1, 1])
    clf = GBDTClassifier(n_estimators=3, max_depth=3, split_method="hist").fit(X, y)
    Xd = da.from_array(X, chunks=(200, 6))
    proba = clf.predict_proba(Xd)
    labels = clf.predict(Xd)
    assert isinstance(proba, da.Array) and isinstance(labels, da.Array)
    np.testing.assert_allclose(proba.compute(), clf.predict_proba(X), rtol=1e-12)
    np.testing.assert_array_equal(labels.compute(), clf.predict(X))
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcdef")), npartitions=3)
    as_frame = clf.predict_proba(frame)
    assert list(as_frame.columns) == list(clf.classes_)
    np.testing.assert_allclose(as_frame.compute().to_numpy(), clf.predict_proba(X), rtol=1e-12)
    reg = GBDTRegressor(n_estimators=2, max_depth=2).fit(X, z)
    pred = reg.predict(frame)
    assert isinstance(pred, dd.Series)
    np.testing.assert_array_equal(pred.compute().to_numpy(), reg.predict(X))


@pytest.mark.parametrize("split_method", ["hist", "exact"])
def test_eval_set_on_dask_data(client, split_method):
    X, z = data(n=1000)
    y = (z > 0).astype(int)
    params = dict(n_estimators=6, max_depth=3, split_method=split_method, n_jobs=1)
    local = GBDTClassifier(**params).fit(X[:700], y[:700], eval_set=[(X[700:], y[700:])])
    Xe, ye = da.from_array(X[700:], chunks=(120, 6)), da.from_array(y[700:], chunks=120)
    dist = GBDTClassifier(**params, executor=client).fit(X[:700], y[:700], eval_set=[(X[700:], y[700:]), (Xe, ye)])
    for name in ("validation_0", "validation_1"):
        np.testing.assert_allclose(dist.evals_result_[name]["logloss"], local.evals_result_["validation_0"]["logloss"],
                                   rtol=1e-5)
    stopped = GBDTClassifier(**params, executor=client, early_stopping_rounds=1, learning_rate=2.0).fit(
        X[:700], y[:700], eval_set=[(Xe, ye)])
    assert stopped.best_iteration_ is not None and len(stopped.trees_) <= 6


def test_dask_input_needs_a_dask_executor_and_bad_labels_are_clear_errors(client):
    X, z = data(n=100)
    with pytest.raises(ValueError, match="executor='dask'"):
        GBDTRegressor().fit(da.from_array(X), z)
    with pytest.raises(ValueError, match="one class only"):
        GBDTClassifier(executor=client, split_method="hist").fit(X, np.zeros(100))
    with pytest.raises(ValueError, match="NaN or inf"):
        GBDTRegressor(executor=client, split_method="hist").fit(X, np.where(z > 1, np.nan, z))
    with pytest.raises(ValueError, match="CPU split searches"):
        GBDTRegressor(executor=client, backend="cuda").fit(X, z)
    with pytest.raises(ValueError, match="executor must be"):
        GBDTRegressor(executor="nowhere").fit(X, z)


def test_a_model_fitted_on_dask_predicts_dask_dataframes(client):
    """The estimator then holds its Client (executor=client), which Dask cannot tokenize: the functions sent
    with the partitions must not carry it."""
    X, z = data(n=500)
    y = (z > 0).astype(int)
    clf = GBDTClassifier(n_estimators=2, max_depth=3, split_method="hist", executor=client).fit(X, y)
    frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcdef")), npartitions=2)
    for _ in range(4):  # one prediction after another: each keeps its own copy of the model on the workers
        np.testing.assert_allclose(clf.predict_proba(frame).compute().to_numpy(), clf.predict_proba(X), rtol=1e-12)
        np.testing.assert_array_equal(clf.predict(frame).compute().to_numpy(), clf.predict(X))
