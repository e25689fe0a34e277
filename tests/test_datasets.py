"""Datasets: Chess3x3 against the paper's board, loaders, sharding."""

import numpy as np
import pytest

from dtlab import datasets
from dtlab.datasets import chess3x3, chess3x3_label, shard


def test_cell_centres_have_the_chessboard_classes():
    centres = np.array([(i + 0.5) / 3 for i in range(3)])
    x0, x1 = np.meshgrid(centres, centres, indexing="ij")
    labels = chess3x3_label(x0.ravel(), x1.ravel()).reshape(3, 3)
    # corners and centre (5 cells) one class, edges (4 cells) the other
    assert labels.tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]


def test_class_balance_is_five_ninths_within_sampling_error():
    n = 200_000
    _, y = chess3x3(n, seed=7)
    p = 5 / 9
    share = float((y == 0).mean())
    assert abs(share - p) < 4 * np.sqrt(p * (1 - p) / n)  # 4 standard errors


def test_shapes_dtypes_and_noise_columns():
    X, y = chess3x3(1000, noise_attrs=3, seed=1)
    assert X.shape == (1000, 5) and X.dtype == np.float32 and y.dtype == np.int32
    assert X.min() >= 0 and X.max() < 1
    assert np.array_equal(y, chess3x3_label(X[:, 0], X[:, 1]))
    # noise columns are independent of the class
    assert abs(X[y == 0, 2].mean() - X[y == 1, 2].mean()) < 0.1


def test_seeded_and_prefix_stable(monkeypatch):
    monkeypatch.setattr(datasets, "CHESS_CHUNK_ROWS", 100)  # exercise several chunks
    X1, y1 = chess3x3(450, seed=3)
    X2, y2 = chess3x3(450, seed=3)
    X3, y3 = chess3x3(250, seed=3)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert np.array_equal(X1[:250], X3) and np.array_equal(y1[:250], y3)
    assert not np.array_equal(chess3x3(450, seed=4)[0], X1)


@pytest.mark.parametrize("kwargs, error", [
    (dict(n_samples=0), ValueError), (dict(n_samples=-5), ValueError), (dict(n_samples=2.5), TypeError),
    (dict(n_samples=10, noise_attrs=-1), ValueError),
])
def test_chess_bad_sizes(kwargs, error):
    with pytest.raises(error):
        chess3x3(**kwargs)


def test_shard_keeps_global_offsets():
    X, y = chess3x3(103, seed=0)
    parts = shard(X, y, 4)
    assert [len(p.y) for p in parts] == [26, 26, 26, 25]
    assert [p.start for p in parts] == [0, 26, 52, 78]
    assert np.array_equal(np.vstack([p.X for p in parts]), X)
    for p in parts:
        assert np.array_equal(p.X, X[p.start:p.start + len(p.y)])


def test_shard_bad_input():
    X, y = chess3x3(5, seed=0)
    with pytest.raises(ValueError, match="non-empty"):
        shard(X, y, 6)
    with pytest.raises(ValueError, match="must match"):
        shard(X, y[:3], 2)
    with pytest.raises(ValueError):
        shard(X, y, 0)


def test_shipped_real_samples_load():
    diabetes = datasets.load_diabetes_prediction()
    assert diabetes.X.shape == (100_000, 8) and diabetes.y.sum() == 8_500
    age = datasets.load_diabetes_prediction(target="age", n_samples=5000)
    assert age.task == "regression" and age.X.shape == (5000, 8) and "diabetes" in age.feature_names
    higgs = datasets.load_higgs()
    assert higgs.X.shape == (10_984, 28) and int(higgs.y.sum()) == 5_821
    a9a = datasets.load_a9a()
    assert a9a.X.shape == (32_561, 123) and a9a.X.nnz == 451_592
    assert datasets.load_a9a("test").X.shape == (16_281, 123)
    rcv1 = datasets.load_rcv1_small()
    assert rcv1.X.shape == (1000, 47236) and rcv1.X.nnz == 77_739


def test_loaders_report_missing_and_malformed_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        datasets.load_csv(tmp_path / "nope.csv", "y")
    with pytest.raises(FileNotFoundError):
        datasets.load_svmlight(tmp_path / "nope.svm")
    bad = tmp_path / "bad.svm"
    bad.write_text("1 3:abc\n")
    with pytest.raises(ValueError, match="LIBSVM"):
        datasets.load_svmlight(bad)
    csv = tmp_path / "t.csv"
    csv.write_text("a,b,label\n1,x,0\n2,y,1\n")
    X, y, names = datasets.load_csv(csv, "label")
    assert names == ["a", "b"] and X[:, 1].tolist() == [0.0, 1.0] and y.tolist() == [0, 1]
    with pytest.raises(ValueError, match="no column"):
        datasets.load_csv(csv, "target")
    with pytest.raises(TypeError, match="not numeric"):
        datasets.load_csv(csv, "label", categorical="error")
    empty = tmp_path / "e.csv"
    empty.write_text("a,label\n")
    with pytest.raises(ValueError, match="no data rows"):
        datasets.load_csv(empty, "label")


def test_data_dir_can_be_moved(monkeypatch, tmp_path):
    monkeypatch.setenv("DTLAB_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        datasets.load_higgs()
