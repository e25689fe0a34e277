"""Synthetic sparse binary classification data with power-law feature frequencies, made fast.

Real sparse data (text, clicks, the LIBSVM sets of the TRON paper) have a few
very frequent features and a long tail of rare ones; the speed of a sparse
``X.T @ u`` depends on that (the frequent features' output slots stay in
cache, the rare ones miss).  :func:`make_sparse_classification` draws feature
ids from a Zipf-like law ``p_j ~ (j + 1) ** -zipf_a`` (feature ids then
shuffled), row lengths from a Poisson law, values like tf-idf (positive, each
row scaled to unit length, as in RCV1), and labels from a planted linear model
with logistic noise.  Everything is vectorised numpy: 10^6 rows with 10^7
non-zeros take a few seconds.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from .._validation import check_int, check_real


def make_sparse_classification(n_samples: int = 100_000, n_features: int = 50_000, nnz_per_row: float = 10.0,
                               zipf_a: float = 1.1, positive_fraction: float = 0.3, noise: float = 1.0,
                               seed: int | None = 0):
    """Sparse rows with power-law feature frequencies and labels from a noisy planted linear model.

    Parameters
    ----------
    n_samples : int >= 1
    n_features : int >= 1
    nnz_per_row : float > 0
        Mean non-zeros per row (Poisson; duplicates within a row are merged, so slightly fewer,
        most for small ``n_features``).  Density is ``nnz_per_row / n_features``.
    zipf_a : float >= 0
        Exponent of the feature-frequency law (0: uniform; 1 - 1.5: like text).
    positive_fraction : float in (0, 1)
        Share of rows labelled +1 (before the label noise).
    noise : float >= 0
        Scale of the logistic noise added to the planted margin (0: separable).
    seed : int or None

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), float64, int32 indices, sorted
    y : ndarray of shape (n_samples,), float64 in {-1, +1}
    """
    n_samples = check_int(n_samples, "n_samples", low=1)
    n_features = check_int(n_features, "n_features", low=1, high=2**31 - 1)
    nnz_per_row = check_real(nnz_per_row, "nnz_per_row", low=0.0, low_inclusive=False)
    zipf_a = check_real(zipf_a, "zipf_a", low=0.0)
    positive_fraction = check_real(positive_fraction, "positive_fraction", low=0.0, high=1.0)
    if not 0 < positive_fraction < 1:
        raise ValueError(f"positive_fraction must be in (0, 1), got {positive_fraction}")
    noise = check_real(noise, "noise", low=0.0)
    rng = np.random.default_rng(seed)

    lengths = rng.poisson(nnz_per_row, size=n_samples).astype(np.int64)
    n_draws = int(lengths.sum())
    cdf = np.cumsum(np.arange(1, n_features + 1, dtype=np.float64) ** -zipf_a)
    ranks = np.searchsorted(cdf, rng.random(n_draws) * cdf[-1], side="right")
    np.minimum(ranks, n_features - 1, out=ranks)  # guard the rounding at the top of the cdf
    cols = rng.permutation(n_features).astype(np.int64)[ranks]  # frequent features anywhere, not first
    row_of = np.repeat(np.arange(n_samples, dtype=np.int64), lengths)
    # One sort by (row, column) both orders each row and finds the duplicate draws within it.
    key = row_of * n_features + cols
    key.sort()
    keep = np.empty(len(key), dtype=bool)
    keep[:1] = True
    np.not_equal(key[1:], key[:-1], out=keep[1:])
    key = key[keep]
    rows, cols = np.divmod(key, n_features)
    indptr = np.zeros(n_samples + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_samples), out=indptr[1:])
    # tf-idf-like values: positive, rarer features weigh more, each row of unit length.
    idf = np.log1p(n_features / (1.0 + np.bincount(cols, minlength=n_features)))
    data = (0.5 + rng.random(len(cols))) * idf[cols]
    norms = np.sqrt(np.add.reduceat(data * data, indptr[:-1][np.diff(indptr) > 0]))
    data /= np.repeat(norms, np.diff(indptr)[np.diff(indptr) > 0])
    X = scipy.sparse.csr_matrix((data, cols.astype(np.int32), indptr), shape=(n_samples, n_features))
    X.has_canonical_format = True

    w_true = rng.standard_normal(n_features)
    margin = X @ w_true
    if noise > 0:
        margin = margin + noise * rng.logistic(size=n_samples) * (margin.std() or 1.0)
    threshold = np.quantile(margin, 1.0 - positive_fraction)
    y = np.where(margin > threshold, 1.0, -1.0)
    return X, y
