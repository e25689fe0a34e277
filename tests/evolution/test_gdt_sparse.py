"""GDT on scipy.sparse input: the CSR evaluators against the reference, and the same seeded tree as on dense data."""

import numpy as np
import pytest
import scipy.sparse as sp

from dtlab.backend import cuda_status
from dtlab.datasets import chess3x3
from dtlab.evolution import GDTClassifier, NumpyEvaluator
from dtlab.evolution._operators_cpu import _dipole_test
from dtlab.evolution._sparse import check_gdt_X, numba_rows
from dtlab.evolution.evaluators.base import BatchWork
from dtlab.evolution.evaluators.sparse import SparseCpuEvaluator, evaluate_csr
from dtlab.evolution.individual import pack
from dtlab.evolution.testing import random_individuals

needs_cuda = pytest.mark.skipif(not cuda_status()[0], reason=f"cuda unavailable: {cuda_status()[1]}")
# the simulator runs the uint64 hash as NumPy scalars, which warn on their intended wrap-around
quiet_overflow = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
SMALL = dict(population_size=12, max_generations=12, max_stagnation=50)


def sparse_chess(n_samples, seed, noise_attrs=6, keep=0.1):
    """Chess3x3 with noise attributes, most noise entries zeroed (about ``keep`` of them stored), float32."""
    X, y = chess3x3(n_samples, noise_attrs=noise_attrs, seed=seed)
    rng = np.random.default_rng(seed + 100)
    X = X.astype(np.float32)
    noise = X[:, 2:]
    noise[rng.random(noise.shape) >= keep] = 0.0
    return X, y


def random_sparse(rng, n_samples, n_features, n_classes, density):
    """Random CSR data with negative values, repeated values and explicit stored zeros; its dense twin."""
    X = sp.random(n_samples, n_features, density=density, format="csr", dtype=np.float32, random_state=rng,
                  data_rvs=lambda k: rng.integers(-3, 4, k).astype(np.float32) / 2)  # zeros among the stored
    y = rng.integers(0, n_classes, n_samples).astype(np.int32)
    return X, X.toarray(), y


def same_tree(a, b):
    ta, tb = a.tree_, b.tree_
    return all(np.array_equal(getattr(ta, k), getattr(tb, k))
               for k in ("feature", "threshold", "left", "right", "value"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_seeded_tree_on_csr_csc_sparse_array_and_dense(seed):
    X, y = sparse_chess(400, seed)
    dense = GDTClassifier(**SMALL, random_state=seed).fit(X, y)
    assert dense.tree_.n_nodes > 1
    for form in (sp.csr_matrix, sp.csc_matrix, sp.csr_array):
        fit = GDTClassifier(**SMALL, random_state=seed).fit(form(X), y)
        assert same_tree(fit, dense), form.__name__
        assert fit.history_["best_fitness"].tolist() == dense.history_["best_fitness"].tolist()


@pytest.mark.filterwarnings("ignore:n_devices=3 CPU workers:UserWarning")  # more workers than this machine's cores
def test_same_tree_on_cpu_workers_and_reference_evaluator():
    X, y = sparse_chess(300, 5)
    dense = GDTClassifier(**SMALL, random_state=3).fit(X, y)
    for params in ({"n_devices": 2}, {"n_devices": 3}, {"evaluator": "reference"}):
        fit = GDTClassifier(**SMALL, random_state=3, **params).fit(sp.csr_matrix(X), y)
        assert same_tree(fit, dense), params


def test_csr_evaluator_counts_equal_the_reference_on_random_trees():
    """Counts and drawn rows of every CSR kernel path (dense blocks of any height and binary search, one and many
    row blocks, CPU workers)
    equal the NumPy reference's on the dense matrix, over random data and random trees."""
    rng = np.random.default_rng(0)
    for trial in range(6):
        n_classes = int(rng.integers(2, 4))
        Xs, X, y = random_sparse(rng, int(rng.integers(20, 200)), int(rng.integers(1, 12)), n_classes,
                                 float(rng.choice([0.02, 0.2, 0.6])))
        batch = pack(random_individuals(rng, X, y, n_classes, 7, max_depth=5))
        seed = int(rng.integers(0, 2**63))
        expected = NumpyEvaluator(X, y, n_classes).evaluate(batch, seed)
        work = BatchWork.prepare(batch, seed, X.shape[1], np.float32)
        csr = check_gdt_X(Xs)
        for scatter, rows_per_block in ((True, None), (True, 1), (True, 7), (False, None)):
            for n_blocks in (1, 3):
                got = evaluate_csr(csr, y, 0, work, n_classes, n_blocks, scatter, rows_per_block)
                assert got.equals(expected), (trial, scatter, rows_per_block, n_blocks)
        for n_devices in (None, 2):
            ev = SparseCpuEvaluator(Xs, y, n_classes, n_devices=n_devices)
            try:
                assert ev.evaluate(batch, seed).equals(expected), (trial, n_devices)
                rows = np.array([0, X.shape[0] - 1])
                np.testing.assert_array_equal(ev.rows(rows), X[rows].astype(np.float64))
            finally:
                ev.close()


def test_dipole_test_reads_csr_rows_as_dense_rows():
    """The compiled dipole test draws the same feature and threshold from a CSR row pair as from the dense rows."""
    rng = np.random.default_rng(1)
    Xs, X, _ = random_sparse(rng, 30, 9, 2, 0.3)
    rows = numba_rows(check_gdt_X(Xs))
    for a, b in rng.integers(0, 30, (40, 2)):
        r1, r2 = np.random.default_rng(int(a) * 31 + int(b)), np.random.default_rng(int(a) * 31 + int(b))
        assert _dipole_test(r1, X, a, b) == _dipole_test(r2, rows, a, b)


def test_predict_on_sparse_equals_predict_on_dense():
    X, y = sparse_chess(300, 7)
    clf = GDTClassifier(**SMALL, random_state=0).fit(X, y)
    Xt, _ = sparse_chess(200, 8)
    for form in (sp.csr_matrix, sp.csc_matrix, sp.csr_array):
        np.testing.assert_array_equal(clf.predict(form(Xt)), clf.predict(Xt))
        np.testing.assert_array_equal(clf.predict_proba(form(Xt)), clf.predict_proba(Xt))
        np.testing.assert_array_equal(clf.apply(form(Xt)), clf.apply(Xt))
        assert clf.score(form(Xt), clf.predict(Xt)) == 1.0
    assert clf.predict(sp.csr_matrix((0, X.shape[1]), dtype=np.float32)).shape == (0,)
    with pytest.raises(ValueError, match="X has 3 features, but GDTClassifier is expecting 8"):
        clf.predict(sp.csr_matrix(np.ones((2, 3))))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_in_sparse_data_is_the_dense_paths_error(bad):
    X, y = sparse_chess(60, 0)
    Xb = sp.csr_matrix(X)
    Xb.data[3] = bad
    with pytest.raises(ValueError, match="X contains NaN or inf") as sparse_error:
        GDTClassifier(**SMALL).fit(Xb, y)
    with pytest.raises(ValueError) as dense_error:
        GDTClassifier(**SMALL).fit(Xb.toarray(), y)
    assert str(sparse_error.value) == str(dense_error.value)
    clf = GDTClassifier(**SMALL, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="NaN or inf"):
        clf.predict(Xb)


def test_all_zero_and_empty_sparse_matrices():
    y = np.array([0, 1] * 10)
    zeros = sp.csr_matrix((20, 4), dtype=np.float32)
    fit = GDTClassifier(**SMALL, random_state=0).fit(zeros, y)
    dense = GDTClassifier(**SMALL, random_state=0).fit(zeros.toarray(), y)
    assert same_tree(fit, dense) and fit.tree_.n_nodes == 1  # no two rows differ: no test can be drawn
    np.testing.assert_array_equal(fit.predict(zeros), dense.predict(zeros.toarray()))
    with pytest.raises(ValueError, match="0 rows") as sparse_error:
        GDTClassifier().fit(sp.csr_matrix((0, 3)), np.array([]))
    with pytest.raises(ValueError) as dense_error:
        GDTClassifier().fit(np.zeros((0, 3)), np.array([]))
    assert str(sparse_error.value) == str(dense_error.value)
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):  # scikit-learn's wording, as for dense input
        GDTClassifier().fit(sp.csr_matrix((5, 0)), np.zeros(5))
    with pytest.raises(ValueError, match="no columns"):
        check_gdt_X(sp.csr_matrix((3, 0)))


def test_sparse_input_with_the_dask_executor_is_a_clear_error():
    X, y = sparse_chess(40, 0)
    with pytest.raises(ValueError, match="executor='local'.*X.toarray"):
        GDTClassifier(**SMALL, executor="dask").fit(sp.csr_matrix(X), y)


@needs_cuda
@quiet_overflow
def test_cuda_csr_evaluator_equals_the_cpu_on_random_trees():
    from dtlab.evolution.evaluators.sparse import SparseCudaEvaluator

    rng = np.random.default_rng(4)
    for trial in range(3):
        Xs, X, y = random_sparse(rng, int(rng.integers(10, 60)), int(rng.integers(1, 6)), 2, 0.3)
        batch = pack(random_individuals(rng, X, y, 2, 4, max_depth=4))
        expected = NumpyEvaluator(X, y, 2).evaluate(batch, 9)
        for n_devices in (1, 2):
            ev = SparseCudaEvaluator(Xs, y, 2, n_devices=n_devices, threads_per_block=4)
            try:
                assert ev.evaluate(batch, 9).equals(expected), (trial, n_devices)
            finally:
                ev.close()


@needs_cuda
@quiet_overflow
def test_cuda_fit_on_csr_gives_the_cpu_tree():
    X, y = sparse_chess(48, 2, noise_attrs=2)
    tiny = dict(population_size=4, max_generations=2, max_stagnation=5)
    cpu = GDTClassifier(**tiny, random_state=1).fit(X, y)
    gpu = GDTClassifier(**tiny, random_state=1, backend="cuda", n_devices=2).fit(sp.csr_matrix(X), y)
    assert same_tree(gpu, cpu)


def test_checkpoint_resume_and_cv_size_alpha_on_sparse_input(tmp_path):
    """A sparse run saved part-way resumes to the uninterrupted tree; other sparse data are refused; the
    cross-validated size weight (folds are CSR row selections) chooses as on dense data."""
    X, y = sparse_chess(200, 1)
    Xs = sp.csr_matrix(X)
    full = GDTClassifier(**SMALL, random_state=0).fit(Xs, y)
    GDTClassifier(**dict(SMALL, max_generations=5), random_state=0, checkpoint=tmp_path).fit(Xs, y)
    resumed = GDTClassifier(**SMALL, random_state=0, checkpoint=tmp_path).fit(Xs, y)
    assert same_tree(resumed, full)
    other = Xs.copy()
    other.data[0] += 1
    with pytest.raises(ValueError, match="made on other training data"):
        GDTClassifier(**SMALL, random_state=0, checkpoint=tmp_path).fit(other, y)
    cv = dict(SMALL, max_generations=6)
    sparse_cv = GDTClassifier(**cv, size_alpha="cv", size_cv=2, random_state=0).fit(Xs, y)
    dense_cv = GDTClassifier(**cv, size_alpha="cv", size_cv=2, random_state=0).fit(X, y)
    assert sparse_cv.size_alpha_ == dense_cv.size_alpha_ and same_tree(sparse_cv, dense_cv)


def test_unsorted_and_duplicate_entries_read_as_toarray_reads_them():
    """A CSR matrix with unsorted column indices and duplicate entries (summed, as ``toarray`` sums them) and a
    COO matrix give the dense matrix's tree; the caller's matrix is left as it was."""
    X, y = sparse_chess(200, 4)
    coo = sp.coo_matrix(X)
    rng = np.random.default_rng(0)
    rows, cols, vals = (np.concatenate([a, a]) for a in (coo.row, coo.col, coo.data / 2))  # each entry twice
    order = np.lexsort((rng.random(rows.size), rows))  # rows in order, columns shuffled within a row
    messy = sp.csr_matrix((vals[order], cols[order], np.searchsorted(rows[order], np.arange(X.shape[0] + 1))),
                          shape=X.shape)
    assert not messy.has_canonical_format
    np.testing.assert_array_equal(messy.toarray(), X)
    before = messy.indices.copy()
    dense = GDTClassifier(**SMALL, random_state=0).fit(X, y)
    assert same_tree(GDTClassifier(**SMALL, random_state=0).fit(messy, y), dense)
    assert same_tree(GDTClassifier(**SMALL, random_state=0).fit(sp.coo_matrix((vals, (rows, cols)), shape=X.shape),
                                                                 y), dense)
    np.testing.assert_array_equal(messy.indices, before)


@pytest.mark.gpu
def test_csr_cuda_evaluator_and_fit_equal_the_cpu_on_a_real_gpu():
    """200,000 CSR rows at about 10% density, trees up to depth 9; then a seeded fit on the GPU and the CPU."""
    from dtlab.evolution.evaluators.sparse import SparseCudaEvaluator

    X, y = sparse_chess(200_000, 0, noise_attrs=20, keep=0.05)
    Xs = sp.csr_matrix(X)
    batch = pack(random_individuals(np.random.default_rng(0), X[:20_000], y[:20_000], 2, 40, max_depth=9))
    expected = SparseCpuEvaluator(Xs, y, 2).evaluate(batch, 3)
    ev = SparseCudaEvaluator(Xs, y, 2)
    try:
        assert ev.evaluate(batch, 3).equals(expected)
    finally:
        ev.close()
    params = dict(population_size=20, max_generations=30, random_state=0)
    cpu = GDTClassifier(**params, backend="cpu").fit(Xs[:20_000], y[:20_000])
    gpu = GDTClassifier(**params, backend="cuda").fit(Xs[:20_000], y[:20_000])
    assert same_tree(gpu, cpu)
