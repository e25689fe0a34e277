"""The frames of :mod:`dtlab.distributed.collective`: numeric arrays behind a fixed header, nothing else.

A frame is a header -- ``DTLC``, the number of arrays, their total bytes,
then for each array a dtype code from :data:`DTYPE_CODES` and its shape
(padded to four dimensions) -- followed by the arrays' raw bytes in order.
The receiver makes the header of the buffers it expects and compares the
two before it takes any array: a frame never becomes an object, only bytes
in a numeric buffer of the expected size.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["DTYPE_CODES", "FRAME_FIXED_BYTES", "describe_frame", "frame_header"]

#: The dtypes a frame may carry, by their one-byte code on the wire (any other code is refused).
DTYPE_CODES = {1: np.dtype(np.float64), 2: np.dtype(np.float32), 3: np.dtype(np.int64), 4: np.dtype(np.int32),
               5: np.dtype(np.uint64), 6: np.dtype(np.uint8), 7: np.dtype(np.bool_)}
_CODE_OF = {dt: code for code, dt in DTYPE_CODES.items()}
_MAX_DIMS = 4
#: A frame's header: magic, number of arrays, total bytes of the arrays.
_FRAME = struct.Struct("!4sIQ")
_FRAME_MAGIC = b"DTLC"
#: One array's entry in the header: dtype code, number of dimensions, the shape padded to four.
_ARRAY = struct.Struct("!BB6x4Q")

#: Bytes of a header before its per-array entries (what says how many entries follow).
FRAME_FIXED_BYTES = _FRAME.size


def frame_header(arrays: list) -> bytes:
    """The header of a frame of ``arrays`` (C-contiguous numpy arrays of allowed dtypes, at most 4-D)."""
    entries = []
    for a in arrays:
        code = _CODE_OF.get(a.dtype)
        if code is None or a.ndim > _MAX_DIMS:
            raise ValueError(f"the collective sends arrays of {sorted(str(d) for d in _CODE_OF)} with at most "
                             f"{_MAX_DIMS} dimensions, not {a.dtype} {a.shape}")
        entries.append(_ARRAY.pack(code, a.ndim, *a.shape, *(0,) * (_MAX_DIMS - a.ndim)))
    return _FRAME.pack(_FRAME_MAGIC, len(arrays), sum(a.nbytes for a in arrays)) + b"".join(entries)


def describe_frame(got: bytes) -> str:
    """What a received header says, in words, for an error (it may be anything: read defensively)."""
    if len(got) < _FRAME.size:
        return f"{len(got)} bytes of a header"
    magic, n, nbytes = _FRAME.unpack_from(got)
    if magic != _FRAME_MAGIC:
        return f"a frame that does not start with {_FRAME_MAGIC!r} ({magic!r})"
    arrays = []
    for i in range(min(n, (len(got) - _FRAME.size) // _ARRAY.size)):
        code, ndim, *shape = _ARRAY.unpack_from(got, _FRAME.size + i * _ARRAY.size)
        dtype = DTYPE_CODES.get(code, f"unknown dtype code {code}")
        arrays.append(f"{dtype} {tuple(shape[:min(ndim, _MAX_DIMS)])}")
    return f"{n} arrays of {nbytes} bytes" + (f" ({', '.join(arrays)})" if arrays else "")
