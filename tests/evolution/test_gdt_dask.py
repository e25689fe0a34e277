"""The Dask evaluator on a LocalCluster on loopback: exact statistics, the same tree, lost workers, bad clients."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

distributed = pytest.importorskip("distributed")

from dtlab.datasets import chess3x3  # noqa: E402
from dtlab.distributed.dask_executor import ClusterError, alive_workers  # noqa: E402
from dtlab.evolution import GDTClassifier, NumpyEvaluator  # noqa: E402
from dtlab.evolution.evaluators.dask import DaskEvaluator  # noqa: E402
from dtlab.evolution.individual import pack  # noqa: E402
from dtlab.evolution.testing import random_individuals  # noqa: E402
from dtlab.testing import random_data  # noqa: E402

# the scheduler's small HTTP server (metrics, health) binds 127.0.0.1:8787 even without a dashboard, and moves
# to a free port, with this warning, when another process on the machine holds 8787
pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")

TINY = dict(population_size=6, max_generations=4, random_state=7, init_max_depth=3)


def local_cluster():
    # threads in this process, tcp on loopback only; no dashboard
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                    host="127.0.0.1", dashboard_address=None)


@pytest.fixture(scope="module")
def client():
    with local_cluster() as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def tiny_chess():
    return chess3x3(48, noise_attrs=1, seed=2)


@pytest.mark.parametrize("n_devices", [None, 1, 4])
def test_dask_statistics_equal_the_reference(client, n_devices):
    rng = np.random.default_rng(0)
    X, y = random_data(rng, 300, 3, 3, levels=5)
    batch = pack(random_individuals(rng, X, y, 3, 5))
    ev = DaskEvaluator(X, y, 3, n_devices, client=client)
    try:
        assert ev.n_devices == (2 if n_devices is None else n_devices)
        assert ev.evaluate(batch, 9).equals(NumpyEvaluator(X, y, 3).evaluate(batch, 9))
        assert ev.timings["kernel"] > 0 and ev.calls == 1
    finally:
        ev.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(n_samples=st.integers(1, 80), n_classes=st.integers(1, 3), n_trees=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1), n_devices=st.integers(1, 4))
def test_property_dask_statistics_equal_the_reference(client, n_samples, n_classes, n_trees, seed, n_devices):
    rng = np.random.default_rng(seed)
    X, y = random_data(rng, n_samples, 2, n_classes, levels=4)
    batch = pack(random_individuals(rng, X, y, n_classes, n_trees))
    ev = DaskEvaluator(X, y, n_classes, n_devices, client=client)
    try:
        assert ev.evaluate(batch, seed).equals(NumpyEvaluator(X, y, n_classes).evaluate(batch, seed))
    finally:
        ev.close()


def test_same_tree_on_dask_for_any_number_of_shards(client, tiny_chess):
    X, y = tiny_chess
    expected = GDTClassifier(**TINY, backend="cpu", evaluator="reference").fit(X, y)
    for n_devices in (1, 2, 4):
        clf = GDTClassifier(**TINY, backend="cpu", executor=client, n_devices=n_devices).fit(X, y)
        assert clf.tree_.equals(expected.tree_), n_devices
        assert np.array_equal(clf.history_.mean_fitness, expected.history_.mean_fitness)
    assert client.status == "running"  # the estimator does not close a client it was given


def test_a_worker_lost_mid_run_has_its_shard_resent(tiny_chess):
    """Close a worker after generation 2: its shards go to the other worker; the tree is the same."""
    X, y = tiny_chess
    expected = GDTClassifier(**TINY, backend="cpu").fit(X, y)
    with local_cluster() as cluster, distributed.Client(cluster) as c:
        def lose_a_worker(generation, record):
            if generation == 2:
                cluster.sync(cluster.workers[sorted(cluster.workers)[0]].close)

        clf = GDTClassifier(**TINY, backend="cpu", executor=c, n_devices=2, callback=lose_a_worker).fit(X, y)
        assert len(alive_workers(c)) == 1
    assert clf.tree_.equals(expected.tree_)
    assert np.array_equal(clf.history_.best_fitness, expected.history_.best_fitness)


def test_losing_every_worker_is_a_clear_error_and_nothing_is_fitted(tiny_chess, monkeypatch):
    from dtlab.distributed import dask_executor

    monkeypatch.setattr(dask_executor, "WORKER_GRACE_S", 1.0)  # none will join: no need to wait long for one
    X, y = tiny_chess
    with local_cluster() as cluster, distributed.Client(cluster) as c:
        def lose_all(generation, record):
            if generation == 1:
                for name in sorted(cluster.workers):
                    cluster.sync(cluster.workers[name].close)

        clf = GDTClassifier(**TINY, backend="cpu", executor=c, callback=lose_all)
        with pytest.raises(ClusterError, match="lost every worker"):
            clf.fit(X, y)
    assert not hasattr(clf, "tree_") and not hasattr(clf, "history_")


def test_closed_or_unreachable_clients_are_clear_errors(tiny_chess, monkeypatch):
    from dtlab.distributed import dask_executor

    X, y = tiny_chess
    with local_cluster() as cluster:
        closed = distributed.Client(cluster)
        closed.close()
        with pytest.raises(ClusterError, match="the Dask client is closed"):
            GDTClassifier(**TINY, executor=closed).fit(X, y)
    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'"):
        GDTClassifier(**TINY, executor="tcp://127.0.0.1:9").fit(X, y)
    with pytest.raises(ValueError, match="the Dask executor runs the batched kernels"):
        GDTClassifier(**TINY, evaluator="reference", executor="tcp://127.0.0.1:9").fit(X, y)


def test_local_dask_cluster_keeps_dask_logs_quiet_through_its_teardown(monkeypatch):
    """A record logged while the helper's cluster runs or shuts down reaches no stream; the levels come back."""
    import io
    import logging

    from workbench.evolution.devices import local_dask_cluster

    logger = logging.getLogger("distributed")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    cluster_exit = distributed.LocalCluster.__exit__

    def exit_then_log(self, *exc):  # as the client's batched stream does once the cluster's own quiet window ended
        result = cluster_exit(self, *exc)
        logging.getLogger("distributed.batched").error("a closed stream during the teardown")
        return result

    monkeypatch.setattr(distributed.LocalCluster, "__exit__", exit_then_log)
    try:
        with local_dask_cluster(n_workers=1, processes=False) as client:
            assert client.submit(sum, [1, 2]).result() == 3
            logging.getLogger("distributed.scheduler").error("while the cluster runs")
        assert "closed stream" not in stream.getvalue() and "while the cluster runs" not in stream.getvalue()
        assert handler.level == logging.NOTSET
        logging.getLogger("distributed.batched").error("after the cluster")
        assert "after the cluster" in stream.getvalue()
    finally:
        logger.removeHandler(handler)
