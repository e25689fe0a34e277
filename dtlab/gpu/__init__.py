"""The GPU foundation: how dtlab launches, compiles and models its CUDA kernels.

:mod:`.kernels`
    every kernel the package launches is *declared* next to its code: a name,
    the argument types it is launched with (numba signatures), the block sizes
    it uses on a device and a work model (bytes and operations from a launch);
:mod:`.launch`
    the one launch path: real-device limits checked before the driver would
    (grid, block, shared memory), declared signatures enforced, cupy arrays
    passed without a stream synchronisation where the stream order already
    holds, launches recorded for tests and for the performance check;
:mod:`.compile`
    ``make gpu-compile``: every declared kernel compiled for sm_90 and sm_80
    without a GPU, assembled by ``ptxas -v``, its registers, spills, stack,
    shared memory and occupancy written to ``figures/gpu/kernels.json``;
:mod:`.occupancy`, :mod:`.model`
    occupancy from those resources and a stated H200 roofline model of each
    kernel's time, drawn and printed as *modelled*, never as measured.

Nothing here imports numba.cuda at import time; the functions that need it
import it when called (only CUDA code paths and the compile check do).
"""
