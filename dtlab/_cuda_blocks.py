"""Block-level CUDA primitives: prefix scan, arg-max and sum over the threads of one block.

Device functions (``numba.cuda.jit(device=True)``) shared by every technique's
kernels: the greedy trees' split scans and partitions
(:mod:`dtlab.greedy._scans_cuda`) today, gradient boosting's gain scans and
histogram kernels next.  Each works on the calling block's shared memory and
is called by *every* thread of the block (it synchronises the block, so a
thread that skips the call deadlocks the others).

This module imports ``numba.cuda``.  Import it only from modules that are
themselves imported lazily for ``backend="cuda"``, never from a module that
``import dtlab`` reaches: the package must import without numba.cuda.  The
functions are compiled when the first kernel that calls them is compiled (on a
GPU or under numba's CUDA simulator).

What a device function here may do: read and write scalars and elements of the
arrays it is passed, call ``cuda.syncthreads()`` and other device functions,
and return scalars or tuples of scalars.  It may not allocate: in numba.cuda a
shared array's size is a compile-time constant, so the *kernel* declares its
shared arrays (``cuda.shared.array(tpb, dtype)`` with ``tpb`` fixed when the
kernel is compiled, e.g. by a factory cached per block size) and passes them
here together with ``tid = cuda.threadIdx.x`` and the block size ``tpb``.
The arrays hold at least ``tpb`` entries; ``tpb`` is a power of two for the
tree reductions (:func:`block_argmax`, :func:`block_sum`).

A result is read from shared memory by every thread after the last
``cuda.syncthreads()`` of the primitive: the caller must synchronise again
before it writes those shared arrays for the next round.
"""

from __future__ import annotations

from numba import cuda


@cuda.jit(device=True)
def block_inclusive_scan(buf, tid, tpb):
    """Inclusive prefix sum of ``buf[:tpb]`` in place (Hillis-Steele, ``log2(tpb)`` steps).

    Parameters
    ----------
    buf : shared array (>= tpb,), int or float
        Thread ``tid`` has written its entry ``buf[tid]``; afterwards
        ``buf[tid] = buf[0] + ... + buf[tid]`` (the old values) for every thread.
    tid, tpb : int
        ``cuda.threadIdx.x`` and the block size (any size).

    Notes
    -----
    The summation order is fixed by ``tpb``, not by the scheduling, so a float
    scan is reproducible; it is not the sequential order, so float sums differ
    from a CPU loop's in the last bits unless they are exact (integers).
    """
    offset = 1
    while offset < tpb:
        cuda.syncthreads()
        v = buf[tid - offset] if tid >= offset else 0
        cuda.syncthreads()
        if tid >= offset:
            buf[tid] += v
        offset *= 2
    cuda.syncthreads()


@cuda.jit(device=True)
def _takes_over(value, pos, best_value, best_pos):
    """Whether (value, pos) beats (best_value, best_pos): larger value, else smaller valid position.

    A negative position means "no candidate" and never wins a tie; NaN never wins.
    """
    if value != best_value:
        return value > best_value
    return pos >= 0 and (best_pos < 0 or pos < best_pos)


@cuda.jit(device=True)
def block_argmax(value, pos, red_value, red_pos, tid, tpb):
    """Block-wide arg-max of the threads' (value, position) pairs; the first position wins ties.

    Parameters
    ----------
    value : float
        This thread's candidate value (``-inf`` for none).
    pos : int
        Its position (e.g. a left size; negative for none).
    red_value : shared float64 array (>= tpb,), scratch
    red_pos : shared int64 array (>= tpb,), scratch
    tid, tpb : int
        ``tpb`` a power of two.

    Returns
    -------
    best_value : float
    best_pos : int
        The largest value and, among equal values, the smallest non-negative
        position -- the order-independent form of "the first best" that a
        sequential scan keeps with ``>``.  Every thread gets them.
    """
    red_value[tid] = value
    red_pos[tid] = pos
    step = tpb // 2
    while step > 0:
        cuda.syncthreads()
        if tid < step and _takes_over(red_value[tid + step], red_pos[tid + step], red_value[tid], red_pos[tid]):
            red_value[tid] = red_value[tid + step]
            red_pos[tid] = red_pos[tid + step]
        step //= 2
    cuda.syncthreads()
    return red_value[0], red_pos[0]


@cuda.jit(device=True)
def block_sum(value, red, tid, tpb):
    """Block-wide sum of the threads' values (a tree reduction).

    Parameters
    ----------
    value : int or float
        This thread's term (0 for none).
    red : shared array (>= tpb,), the dtype of the sum, scratch
    tid, tpb : int
        ``tpb`` a power of two.

    Returns
    -------
    The sum, to every thread.  Its order is fixed by ``tpb`` (pairs ``tid``,
    ``tid + step``), so a float sum is reproducible but is neither a CPU loop's
    nor :func:`block_inclusive_scan`'s last entry to the bit.
    """
    red[tid] = value
    step = tpb // 2
    while step > 0:
        cuda.syncthreads()
        if tid < step:
            red[tid] += red[tid + step]
        step //= 2
    cuda.syncthreads()
    return red[0]
