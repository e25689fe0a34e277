"""The workers' own exchange of a Dask hist fit, attacked and on a TLS cluster: a stranger that reaches rank 0's
port first, claims rank 1 and sends a pickle that would create a file is refused (no file, a log line) and the fit
completes with the same trees; on a cluster whose workers talk TLS the fit keeps its bytes on the cluster's channel
(the scheduler-driven loop, said once in a warning) and grows the same trees."""

import logging
import pickle
import socket
import struct
import threading
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from dtlab.boosting import GBDTClassifier  # noqa: E402
from dtlab.boosting.dask import collective as dask_collective  # noqa: E402
from dtlab.distributed import collective  # noqa: E402
from dtlab.distributed.cluster import local_cluster  # noqa: E402
from dtlab.distributed.dask_executor import alive_workers  # noqa: E402
from tests.boosting.test_dask import assert_same_trees, data  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")

PARAMS = dict(n_estimators=4, max_depth=4, split_method="hist", learning_rate=0.3, n_jobs=1)


class WritesAFile:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


#: Set by the test: where the stranger's pickle would write; the strangers' threads and what they got back.
ATTACK = {"marker": None, "threads": [], "got": []}


def _attack(address, connected: threading.Event):
    """Connect first, claim rank 1 as the collective once took it (an 8-byte rank), send a pickled object whose
    loading creates a file, then keep reading until rank 0 closes the connection."""
    conn = socket.create_connection(address, timeout=10)
    connected.set()
    payload = pickle.dumps(WritesAFile(ATTACK["marker"]))
    try:
        conn.sendall(struct.pack("!Q", 1) + struct.pack("!Q", len(payload)) + payload)
        got = b""
        while chunk := conn.recv(4096):
            got += chunk
    except OSError:
        got = b"(reset)"
    finally:
        conn.close()
    ATTACK["got"].append(got)


def _open_with_a_stranger_first(state, key, rank, world):
    """The group's listener opened as usual, then a stranger connected to it before any rank joins."""
    address = collective.open_group(state, key, rank, world)
    if rank == 0 and world > 1:
        connected = threading.Event()
        t = threading.Thread(target=_attack, args=(address, connected))
        t.start()
        ATTACK["threads"].append(t)
        connected.wait(10)
    return address


@pytest.fixture(scope="module")
def plain_cluster():
    with local_cluster(n_workers=2, processes=False) as c:
        yield c


def test_a_stranger_with_a_pickle_at_the_door_gets_no_rank_and_runs_no_code(plain_cluster, tmp_path, monkeypatch,
                                                                             caplog):
    X, z = data(n=900, seed=3)
    y = (z > 0).astype(int)
    clean = GBDTClassifier(**PARAMS, executor=plain_cluster).fit(X, y)
    assert clean.dask_stats_["loop"] == "collective"

    ATTACK.update(marker=tmp_path / "pwned", threads=[], got=[])
    monkeypatch.setattr(dask_collective, "open_group", _open_with_a_stranger_first)
    with caplog.at_level(logging.WARNING, logger="dtlab.distributed.collective"):
        attacked = GBDTClassifier(**PARAMS, executor=plain_cluster).fit(X, y)
    for t in ATTACK["threads"]:
        t.join(10)
    assert len(ATTACK["threads"]) == 1 and ATTACK["got"], "the stranger never reached the door"
    assert not (tmp_path / "pwned").exists()
    refused = [r.getMessage() for r in caplog.records if "refused a connection" in r.getMessage()]
    assert len(refused) == 1, caplog.records
    assert attacked.dask_stats_["loop"] == "collective"  # the real rank joined after the stranger was refused
    assert_same_trees(attacked, clean)


def test_a_tls_cluster_keeps_the_fit_on_its_channel_and_says_so_once(plain_cluster):
    X, z = data(n=900, seed=3)
    y = (z > 0).astype(int)
    plain = GBDTClassifier(**PARAMS, executor=plain_cluster).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, host="127.0.0.1",
                                  security=True, dashboard_address=None, silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        workers = list(alive_workers(client))
        assert all(w.startswith("tls://") for w in workers), workers
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tls = GBDTClassifier(**PARAMS, executor=client).fit(X, y)
    said = [w for w in caught if str(w.message) == dask_collective.TLS_FALLBACK]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert tls.dask_stats_["loop"] == "scheduler"
    assert_same_trees(tls, plain)
    np.testing.assert_array_equal(tls.predict_proba(X), plain.predict_proba(X))
