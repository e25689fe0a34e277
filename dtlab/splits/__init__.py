"""Split search shared by the tree learners (foundation): sorted attribute lists, prefix-sum scans over
(g, h), their reduction, and the stable sorts behind them.

The greedy trees and gradient boosting find a node's best split the same way:
every feature sorted once (:mod:`.presort`, by :mod:`.sort`'s stable argsorts),
each node a contiguous segment of every sorted list kept so by stable
partitions, and every candidate of a segment ranked at once from the prefix
sums of its statistics and reduced to the best (:mod:`.scans`).  What two
techniques share lives here; each technique keeps its own rules (criteria,
stopping, XGBoost's conventions) in its package.

Plain numba kernels (``numba.njit(**dtlab._jit.NJIT)``); the scans are plain
enough to be compiled as CUDA device functions too (their ``py_func``).
"""

from .presort import (
    attribute_lists,
    gather_feature,
    gather_in_order,
    partition_lists,
    partition_samples,
    presort,
    presort_columns,
    sorted_row_ids,
)
from .scans import largest, rank_prefix, scan_prefix, split_proxy
from .sort import DEFAULT_SORT, RADIX_MIN_KEYS, SORTS, numpy_argsort, presort_argsort, radix_argsort

__all__ = ["DEFAULT_SORT", "RADIX_MIN_KEYS", "SORTS", "attribute_lists", "gather_feature", "gather_in_order",
           "largest", "numpy_argsort", "partition_lists", "partition_samples", "presort", "presort_argsort",
           "presort_columns", "radix_argsort", "rank_prefix", "scan_prefix", "sorted_row_ids", "split_proxy"]
