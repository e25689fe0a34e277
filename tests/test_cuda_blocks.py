"""Block-level CUDA primitives against numpy (simulated unless on a GPU)."""

import functools

import numpy as np
import pytest
from numba import cuda  # after conftest chose the simulator or the GPU

from dtlab._cuda_blocks import block_argmax, block_inclusive_scan, block_sum

# 16 threads a block in the simulator (a Python thread each); a real GPU also runs the greedy kernels' 128
TPBS = [16, pytest.param(128, marks=pytest.mark.gpu)]


@functools.cache
def _kernels(tpb):
    """Test kernels: block ``b`` runs a primitive on row ``b`` of the input, entries past ``n_valid[b]`` padded."""
    @cuda.jit
    def scan(x, n_valid, out):
        b = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.int64)
        buf[tid] = x[b, tid] if tid < n_valid[b] else 0
        block_inclusive_scan(buf, tid, tpb)
        out[b, tid] = buf[tid]

    @cuda.jit
    def argmax(values, positions, n_valid, out_value, out_pos):
        b = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        red_value = cuda.shared.array(tpb, np.float64)
        red_pos = cuda.shared.array(tpb, np.int64)
        value = values[b, tid] if tid < n_valid[b] else -np.inf
        pos = positions[b, tid] if tid < n_valid[b] else -1
        best_value, best_pos = block_argmax(value, pos, red_value, red_pos, tid, tpb)
        if tid == tpb - 1:  # every thread gets the result: read it from the last one
            out_value[b] = best_value
            out_pos[b] = best_pos

    @cuda.jit
    def total(x, n_valid, out):
        b = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        red = cuda.shared.array(tpb, np.int64)
        s = block_sum(x[b, tid] if tid < n_valid[b] else 0, red, tid, tpb)
        if tid == tpb - 1:
            out[b] = s

    return scan, argmax, total


def _n_valid(tpb):
    """Valid entries per block: one, several non-powers of two, and a full block."""
    return np.array([1, 3, tpb // 2 + 3, tpb - 1, tpb], dtype=np.int64)


@pytest.mark.parametrize("tpb", TPBS)
def test_block_inclusive_scan_is_cumsum(rng, tpb):
    scan, _, _ = _kernels(tpb)
    n_valid = _n_valid(tpb)
    x = rng.integers(-50, 50, size=(len(n_valid), tpb))
    out = np.zeros_like(x)
    scan[len(n_valid), tpb](x, n_valid, out)
    for b, k in enumerate(n_valid):
        expected = np.cumsum(np.where(np.arange(tpb) < k, x[b], 0))
        np.testing.assert_array_equal(out[b], expected)


@pytest.mark.parametrize("tpb", TPBS)
def test_block_argmax_takes_first_position_on_ties(rng, tpb):
    _, argmax, _ = _kernels(tpb)
    n_valid = _n_valid(tpb)
    values = rng.integers(0, 3, size=(len(n_valid), tpb)).astype(np.float64)  # many ties
    # positions in thread order (np.argmax's rule), then shuffled: the smallest position wins, not the first thread
    positions = np.tile(np.arange(tpb), (len(n_valid), 1))
    positions[len(n_valid) // 2:] = rng.permuted(positions[len(n_valid) // 2:], axis=1)
    out_value = np.empty(len(n_valid))
    out_pos = np.empty(len(n_valid), dtype=np.int64)
    argmax[len(n_valid), tpb](values, positions, n_valid, out_value, out_pos)
    for b, k in enumerate(n_valid):
        v, p = values[b, :k], positions[b, :k]
        best = v.max()
        assert out_value[b] == best
        assert out_pos[b] == p[v == best].min()
        if b < len(n_valid) // 2:
            assert out_pos[b] == np.argmax(v)


def test_block_argmax_of_no_candidate_is_none():
    _, argmax, _ = _kernels(16)
    out_value, out_pos = np.empty(1), np.empty(1, dtype=np.int64)
    argmax[1, 16](np.zeros((1, 16)), np.zeros((1, 16), dtype=np.int64), np.zeros(1, dtype=np.int64),
                  out_value, out_pos)
    assert out_value[0] == -np.inf and out_pos[0] == -1


@pytest.mark.parametrize("tpb", TPBS)
def test_block_sum_is_sum(rng, tpb):
    _, _, total = _kernels(tpb)
    n_valid = _n_valid(tpb)
    x = rng.integers(-1000, 1000, size=(len(n_valid), tpb))
    out = np.empty(len(n_valid), dtype=np.int64)
    total[len(n_valid), tpb](x, n_valid, out)
    np.testing.assert_array_equal(out, [x[b, :k].sum() for b, k in enumerate(n_valid)])
