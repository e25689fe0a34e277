"""GDT's CUDA kernels where the simulator used to be blind: leaf bitmasks of trees with 33 to 64 leaves."""

import numpy as np
import pytest
from numba import cuda  # a module global: the simulator swaps the kernels' global ``cuda`` for its fake one

from dtlab.backend import cuda_status
from dtlab.evolution import CpuEvaluator
from dtlab.evolution.individual import pack
from dtlab.evolution.testing import random_individuals
from dtlab.testing import random_data

needs_cuda = pytest.mark.skipif(not cuda_status()[0], reason=f"cuda unavailable: {cuda_status()[1]}")
quiet_overflow = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


@needs_cuda
def test_lowest_bit_of_every_64_bit_position():
    """The device function on each bit 0-63 and on random words, against numpy: the simulator's ``cuda.ffs``
    truncates to 32 bits (bit 40 gave 8), the 32-bit halves give the right index on both."""
    from dtlab.evolution.evaluators._fitness_cuda import lowest_bit

    low_bit = cuda.jit(device=True)(lowest_bit)

    @cuda.jit
    def kernel(words, out):
        i = cuda.grid(1)
        if i < words.shape[0]:
            out[i] = low_bit(words[i])

    rng = np.random.default_rng(0)
    words = np.concatenate([np.uint64(1) << np.arange(64, dtype=np.uint64),
                            rng.integers(1, 2**63, 40, dtype=np.uint64) << rng.integers(0, 40, 40).astype(np.uint64)])
    words = words[words != 0]
    out = np.zeros(words.shape[0], np.int64)
    kernel[(words.shape[0] + 31) // 32, 32](words, out)
    expected = np.array([(int(w) & -int(w)).bit_length() - 1 for w in words])
    np.testing.assert_array_equal(out, expected)


@needs_cuda
@quiet_overflow
def test_bitmask_leaf_search_on_trees_of_33_to_64_leaves_equals_the_cpu():
    """Leaf search by bitmasks for trees of more than 32 leaves (at most 64, so masked): the CUDA evaluator's
    statistics equal the CPU evaluator's bit for bit."""
    from dtlab.evolution.evaluators.cuda import CudaEvaluator
    from dtlab.trees.bitmask import forest_masks

    rng = np.random.default_rng(3)
    X, y = random_data(rng, 200, 3, 2, levels=0)
    trees = [t for t in random_individuals(rng, X, y, 2, 40, max_depth=6)
             if 32 < (t.left == -1).sum() <= 64][:2]
    assert len(trees) == 2, "no tree of 33 to 64 leaves drawn"
    batch = pack(trees)
    assert forest_masks(batch).masked.all()
    expected = CpuEvaluator(X, y, 2).evaluate(batch, 11)
    ev = CudaEvaluator(X, y, 2, n_devices=1, leaf_search="bitmask", threads_per_block=8, shared_slots=12)
    try:
        got = ev.evaluate(batch, 11)
    finally:
        ev.close()
    assert got.equals(expected)
