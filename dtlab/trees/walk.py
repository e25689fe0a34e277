"""The root-to-leaf walk, written once and compiled for every layout and target.

:func:`descend` is the one walk of the project: from a root, at every test
``x <= threshold`` goes left, ``x > threshold`` goes right and a value for
which neither holds (NaN) follows ``missing_left``.  It reads a feature value
through ``value_at`` and reports each test it passes to ``record``; both are
global names that :func:`dtlab._jit.compile_functions` binds per variant:

=====================  ================  ==================  =====================================
compiled name          ``value_at``      ``record``          used by
=====================  ================  ==================  =====================================
``find_leaf``          ``X[row, f]``     nothing             FlatTree traversal, GDT row kernels
``find_leaf_columns``  ``Xt[f, row]``    nothing             GDT's CPU evaluator (transposed data)
``record_margins``     ``X[row, f]``     nearest values      GDT's threshold centring
=====================  ================  ==================  =====================================

:func:`cpu_walks` compiles them with ``numba.njit`` (inlined into the callers'
``prange`` loops), :func:`cuda_walks` with ``numba.cuda.jit(device=True)``;
both follow the rules of :mod:`dtlab._jit`.  The comparison is made in the
precision of ``X`` promoted against the float64 threshold, as scikit-learn's
(which casts X to float32 first) -- so every target reaches the same leaf.
"""

from __future__ import annotations

import functools

from .._jit import compile_functions, cpu_jit, cuda_device


def row_major(X, row, f):
    """``X[row, f]`` for data of shape (n_samples, n_features)."""
    return X[row, f]


def column_major(Xt, row, f):
    """``Xt[f, row]`` for transposed data of shape (n_features, n_samples)."""
    return Xt[f, row]


def no_record(trace, node, x, went_left):
    """Record nothing (plain walks)."""
    return


def record_nearest(trace, node, x, went_left):
    """Keep, per test, the largest value sent left (``trace[0]``) and the smallest sent right (``trace[1]``)."""
    below, above = trace
    if went_left:
        if x > below[node]:
            below[node] = x
    elif x < above[node]:
        above[node] = x


def descend(X, row, root, feature, threshold, left, right, missing_left, trace):
    """Walk row ``row`` of ``X`` from node ``root`` to its leaf; report each test to ``record``.

    Parameters
    ----------
    X : 2-D float array, laid out as the bound ``value_at`` reads it
    row : int
    root : int
        Index of the root in the node arrays (0 for one tree; a packed forest's ``node_offset[t]``).
    feature, left, right : int32 arrays (n_nodes,); ``left == -1`` at leaves
    threshold : float64 array (n_nodes,)
    missing_left : bool array (n_nodes,)
    trace : whatever the bound ``record`` takes (0 for none)

    Returns
    -------
    int : index of the leaf reached.
    """
    node = root
    while left[node] != -1:
        x = value_at(X, row, feature[node])  # noqa: F821 -- bound by compile_functions
        if x <= threshold[node]:
            record(trace, node, x, True)  # noqa: F821 -- bound by compile_functions
            node = left[node]
        elif x > threshold[node]:
            record(trace, node, x, False)  # noqa: F821
            node = right[node]
        else:  # neither comparison holds: x is NaN
            record(trace, node, x, missing_left[node])  # noqa: F821
            node = left[node] if missing_left[node] else right[node]
    return node


def find_leaf(X, row, root, feature, threshold, left, right, missing_left):
    """Leaf reached by row ``row`` from node ``root`` (see :func:`descend`)."""
    return descend(X, row, root, feature, threshold, left, right, missing_left, 0)


def record_margins(X, row, feature, threshold, left, right, missing_left, below, above):
    """Walk row ``row`` from node 0 and keep, at each test, the nearest value on its side.

    ``below[node]`` keeps the largest ``X[row, feature[node]]`` that went left
    and ``above[node]`` the smallest that went right (float64 arrays of shape
    (n_nodes,), updated in place).
    """
    return descend(X, row, 0, feature, threshold, left, right, missing_left, (below, above))


def compile_walks(jit) -> dict:
    """The three walk variants compiled with decorator ``jit``.

    Returns
    -------
    dict with keys ``"find_leaf"``, ``"find_leaf_columns"``, ``"record_margins"``.
    """
    plain = {"value_at": jit(row_major), "record": jit(no_record)}
    columns = {"value_at": jit(column_major), "record": plain["record"]}
    margins = {"value_at": plain["value_at"], "record": jit(record_nearest)}
    return {
        "find_leaf": compile_functions([descend, find_leaf], jit, plain, "rows")["find_leaf"],
        "find_leaf_columns": compile_functions([descend, find_leaf], jit, columns, "columns")["find_leaf"],
        "record_margins": compile_functions([descend, record_margins], jit, margins, "margins")["record_margins"],
    }


@functools.lru_cache(maxsize=2)
def cpu_walks(inline: bool = True) -> dict:
    """:func:`compile_walks` for the CPU.

    ``inline=True`` inlines a walk into its caller (a real call costs as much as
    a short walk); ``inline=False`` keeps it a call, for a kernel whose hot loop
    is elsewhere and should not grow by the walk's code.  Not cached on disk:
    the callers are, and an inlined walk's code is part of their cache.
    """
    return compile_walks(cpu_jit(inline="always") if inline else cpu_jit())


@functools.lru_cache(maxsize=1)
def cuda_walks() -> dict:
    """:func:`compile_walks` as CUDA device functions (imports numba.cuda)."""
    return compile_walks(cuda_device())
