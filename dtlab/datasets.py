"""Datasets: the synthetic Chess3x3 benchmark, file loaders, the shipped real samples, sharding.

The real samples live in ``data/`` at the repository root (see its README for
sources and licenses).  Set ``DTLAB_DATA`` to read them from another folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse

from ._validation import check_int, check_X, check_y

#: Rows generated per chunk by :func:`chess3x3`.  Fixed, so a seed gives the
#: same data whatever the size asked for (a prefix property) and memory stays
#: bounded to one chunk of float64 temporaries.
CHESS_CHUNK_ROWS = 1 << 20


def chess3x3(n_samples: int, noise_attrs: int = 0, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The Chess3x3 problem of the GDT paper (Jurczuk, Czajkowski, Kretowski).

    Two real attributes uniform on ``[0, 1)`` form a 3x3 board with borders at
    1/3 and 2/3; cell ``(i, j)`` has class ``(i + j) % 2``, so the five cells
    with even ``i + j`` (corners and centre) are class 0 and the four others
    class 1.  The ideal tree has 17 nodes (8 tests, 9 leaves).  ``noise_attrs``
    extra attributes are uniform noise on ``[0, 1)``.

    Parameters
    ----------
    n_samples : int >= 1
    noise_attrs : int >= 0
    seed : int or None

    Returns
    -------
    X : ndarray of shape (n_samples, 2 + noise_attrs), float32
    y : ndarray of shape (n_samples,), int32 in {0, 1}

    Notes
    -----
    Generated in chunks of :data:`CHESS_CHUNK_ROWS` rows, each from its own
    child seed, so 10^8 rows need only the output (0.8 GB for 2 attributes) plus
    one chunk, and the first ``m`` rows of a larger draw equal a draw of ``m``.
    """
    n_samples = check_int(n_samples, "n_samples", low=1)
    noise_attrs = check_int(noise_attrs, "noise_attrs", low=0)
    n_features = 2 + noise_attrs
    X = np.empty((n_samples, n_features), dtype=np.float32)
    y = np.empty(n_samples, dtype=np.int32)
    n_chunks = (n_samples + CHESS_CHUNK_ROWS - 1) // CHESS_CHUNK_ROWS
    root = np.random.SeedSequence(seed)
    for chunk, child in enumerate(root.spawn(n_chunks)):
        start = chunk * CHESS_CHUNK_ROWS
        stop = min(start + CHESS_CHUNK_ROWS, n_samples)
        rng = np.random.default_rng(child)
        block = rng.random((stop - start, n_features), dtype=np.float32)
        X[start:stop] = block
        y[start:stop] = chess3x3_label(block[:, 0], block[:, 1])
    return X, y


def chess3x3_label(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """Class of points of the 3x3 board, int32: ``(cell_row + cell_col) % 2``.

    Cells are ``floor(3 x)`` clipped to 0..2; a point exactly on a border belongs
    to the upper cell, matching the tree test ``x <= border`` going left only for
    points strictly inside the lower cell's float range.
    """
    i = np.clip(np.floor(np.asarray(x0, dtype=np.float64) * 3), 0, 2).astype(np.int32)
    j = np.clip(np.floor(np.asarray(x1, dtype=np.float64) * 3), 0, 2).astype(np.int32)
    return ((i + j) % 2).astype(np.int32)


class Shard(NamedTuple):
    """One device's slice of the data: rows ``start .. start + len(y)`` of the whole."""

    X: Any
    y: Any
    start: int


def shard(X: Any, y: Any, n_shards: int) -> list[Shard]:
    """Split rows into ``n_shards`` contiguous, nearly equal shards.

    Shards keep their global row offset (``start``) so that per-row choices
    (e.g. hashing ``(seed, row id)``) do not depend on how the data are split.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
    n_shards : int, 1 <= n_shards <= n_samples

    Returns
    -------
    list of Shard (views, no copies)
    """
    n_shards = check_int(n_shards, "n_shards", low=1)
    if getattr(X, "ndim", None) != 2:
        raise ValueError(f"X must be a 2-D array, got {type(X).__name__} with shape {getattr(X, 'shape', None)}")
    n = X.shape[0]
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)}; they must match")
    if n_shards > n:
        raise ValueError(f"cannot split {n} rows into {n_shards} non-empty shards")
    from .distributed import shard_bounds  # the one split, shared with the device pools

    return [Shard(X[a:b], y[a:b], a) for a, b in shard_bounds(n, n_shards)]


# ----------------------------------------------------------------------- files
def data_dir() -> Path:
    """Folder holding the shipped samples: ``$DTLAB_DATA`` or ``<repo>/data``."""
    env = os.environ.get("DTLAB_DATA")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "data"


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}"
                                + ("" if path.parent.exists() else f" (folder {path.parent} does not exist either)"))
    return path


def load_csv(path: str | Path, target: str | int, *, categorical: str = "codes", **read_csv_kwargs):
    """Load a CSV file with a header into a numeric matrix and a target.

    Parameters
    ----------
    path : path of the file
    target : column name (or position) of the target
    categorical : {"codes", "error"}
        Non-numeric feature columns become integer category codes (categories in
        sorted order) or raise ``TypeError``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,)
    feature_names : list of str
    """
    import pandas as pd

    path = _existing(path)
    try:
        frame = pd.read_csv(path, **read_csv_kwargs)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a readable CSV file: {exc}") from exc
    if frame.shape[0] == 0:
        raise ValueError(f"{path} has no data rows")
    if isinstance(target, int):
        target = frame.columns[target]
    if target not in frame.columns:
        raise ValueError(f"{path} has no column {target!r}; columns are {list(frame.columns)}")
    y = frame.pop(target).to_numpy()
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column].dtype):
            if categorical != "codes":
                raise TypeError(f"column {column!r} of {path} is not numeric")
            frame[column] = pd.Categorical(frame[column]).codes.astype(np.float64)
    X = check_X(frame, dtype=np.float64, allow_nan=True, name=f"{path.name} features")
    return X, y, list(frame.columns)


def load_svmlight(path: str | Path, n_features: int | None = None):
    """Load a LIBSVM / svmlight file.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), float64
    """
    from sklearn.datasets import load_svmlight_file

    path = _existing(path)
    try:
        X, y = load_svmlight_file(str(path), n_features=n_features)
    except ValueError as exc:
        raise ValueError(f"{path} is not a valid LIBSVM/svmlight file: {exc}") from exc
    if X.shape[0] == 0:
        raise ValueError(f"{path} has no rows")
    return scipy.sparse.csr_matrix(X), y


@dataclass
class Dataset:
    """A loaded real dataset: features, target and what they mean."""

    X: Any
    y: np.ndarray
    feature_names: list[str]
    name: str
    task: str

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape


def load_diabetes_prediction(target: str = "diabetes", n_samples: int | None = None) -> Dataset:
    """The Kaggle diabetes prediction data (100,000 rows, 8 features + the target).

    ``target="diabetes"`` gives the binary classification task; ``target="age"``
    the regression task of the SIMD decision tree project (age from the other
    columns).  ``gender`` and ``smoking_history`` become category codes.
    """
    path = data_dir() / "diabetes_prediction" / "diabetes_prediction_dataset.csv"
    X, y, names = load_csv(path, target)
    if n_samples is not None:
        n_samples = check_int(n_samples, "n_samples", low=1, high=X.shape[0])
        X, y = X[:n_samples], y[:n_samples]
    task = "regression" if target == "age" else "classification"
    y = check_y(y, X.shape[0], numeric=True) if task == "regression" else y.astype(np.int32)
    return Dataset(X, y, names, f"diabetes_prediction[{target}]", task)


def load_higgs() -> Dataset:
    """The 10,984-row HIGGS subset (28 features, label 1 = signal)."""
    X, y, names = load_csv(data_dir() / "higgs_sas_subset" / "higgs.csv", "label")
    return Dataset(X, y.astype(np.int32), names, "higgs_subset", "classification")


def load_a9a(split: str = "train") -> Dataset:
    """LIBSVM a9a (UCI Adult), sparse, 123 binary features, labels -1/+1."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    name = "a9a" if split == "train" else "a9a.t"
    X, y = load_svmlight(data_dir() / "a9a" / name, n_features=123)
    return Dataset(X, y, [f"f{i}" for i in range(123)], f"a9a[{split}]", "classification")


def load_w8a() -> Dataset:
    """LIBSVM w8a (J. Platt's web data), sparse, 49,749 rows, 300 binary features, labels -1/+1 (3% positive)."""
    X, y = load_svmlight(data_dir() / "w8a" / "w8a", n_features=300)
    return Dataset(X, y, [f"f{i}" for i in range(300)], "w8a", "classification")


def load_rcv1_small() -> Dataset:
    """1,000 RCV1 documents (tf-idf, 47,236 features), labels -1/+1."""
    X, y = load_svmlight(data_dir() / "rcv1_vw_small" / "rcv1_small.svm", n_features=47236)
    return Dataset(X, y, [f"f{i}" for i in range(47236)], "rcv1_small", "classification")


def train_test_split(X: Any, y: Any, test_fraction: float = 0.25, seed: int | None = 0):
    """Seeded random split of rows; returns ``X_train, X_test, y_train, y_test``."""
    n = X.shape[0]
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    order = np.random.default_rng(seed).permutation(n)
    n_test = max(1, int(round(n * test_fraction)))
    test, train = order[:n_test], order[n_test:]
    return X[train], X[test], y[train], y[test]
