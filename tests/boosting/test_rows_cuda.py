"""The boosting rows on the device (:mod:`dtlab.boosting._rows_cuda`) against the grower's host rows."""

import numpy as np
import pytest

from dtlab.backend import cuda_status

pytestmark = pytest.mark.skipif(not cuda_status()[0], reason="numba.cuda unavailable")


def test_plan_cuts_segments_into_parts():
    from dtlab.boosting._rows_cuda import plan_parts

    nseg = np.array([0, 5, 5, 12, 30])
    plan = plan_parts(nseg, np.array([0, 1, 2, 3]), 8)
    assert plan.tolist() == [[0, 2, 3, 3, 3], [0, 5, 12, 20, 28], [5, 12, 20, 28, 30]]
    assert plan_parts(nseg, np.array([1]), 8).shape == (3, 0)


@pytest.mark.parametrize("seed", [0, 1])
def test_device_rows_split_like_the_host_rows(seed):
    """Three levels of random splits over 100 rows in parts of 8 (the simulator's): the same children's sums
    and counts (integer gradients: exact sums in any order), the same rows per child, the same leaves."""
    from numba import cuda

    from dtlab.boosting._rows_cuda import DeviceRows
    from dtlab.boosting.grower import HostRows

    rng = np.random.default_rng(seed)
    n = 100
    g = rng.integers(-20, 20, n).astype(np.float32)
    h = rng.integers(1, 5, n).astype(np.float32)
    host = HostRows(g, h)
    dev = DeviceRows(cuda.to_device(g), cuda.to_device(h), simulated=True)
    for a, b in zip(host.root_sums(), dev.root_sums()):
        np.testing.assert_array_equal(a, b)
    n_nodes, level_ids, next_id = 1, np.array([0]), 1
    for _ in range(3):
        split = rng.random(n_nodes) < 0.7
        which = np.where(split, np.cumsum(split) - 1, -1).astype(np.int64)
        n_split = int(split.sum())
        side = rng.integers(0, 2, n).astype(np.uint8)
        host.side[:] = side
        dev.side.copy_to_device(side)
        got = dev.advance(which, level_ids, 2 * n_split)
        want = host.advance(which, level_ids, 2 * n_split)
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)
        order = dev.order.copy_to_host()
        for c in range(2 * n_split):  # child c's rows, ascending, are the host's rows with pos == c
            np.testing.assert_array_equal(order[dev.nseg[c]:dev.nseg[c + 1]], np.flatnonzero(host.pos == c))
        n_nodes, level_ids = 2 * n_split, np.arange(next_id, next_id + 2 * n_split)
        next_id += 2 * n_split
        if not n_nodes:
            break
    dev.advance(np.full(n_nodes, -1, np.int64), level_ids, 0)
    host.advance(np.full(n_nodes, -1, np.int64), level_ids, 0)
    np.testing.assert_array_equal(dev.leaf_of_row(), host.leaf_of_row())
