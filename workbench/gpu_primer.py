"""The GPU primer of notebook 07: a histogram and a scan, each written three ways in numba.cuda.

Three small kernels per problem, taken from naive to coalesced to shared memory:

* histogram of ``values`` (int32 in ``[0, bins)``) into ``hist`` (int32, ``bins``):
  ``naive`` -- each thread takes a contiguous chunk (at one step the threads of a warp read addresses a chunk
  apart: uncoalesced) and adds with global atomics; ``coalesced`` -- a grid-stride loop (at one step a warp
  reads 32 adjacent values), global atomics; ``shared`` -- the grid-stride loop into a per-block histogram in
  shared memory, merged into ``hist`` with one global atomic per (block, bin) at the end;
* inclusive scan of each row of ``x`` (float32, ``(segments, length)``):
  ``naive`` -- one thread per segment adds it serially, reading ``x[s, k]`` (a warp's addresses a row apart);
  ``coalesced`` -- the same on the column-major copy ``xt[k, s]`` (a warp reads adjacent addresses);
  ``shared`` -- one block per segment, chunks of ``tpb`` loaded coalesced into shared memory and scanned
  there (Hillis-Steele: ``log2 tpb`` steps), plus the carry of the chunks before.

:func:`check_tiny` runs each under numba's simulator (or on a GPU) against ``np.bincount`` / ``np.cumsum``;
:func:`traced_accesses` records, under the simulator, which block and thread read which element at which
step; :func:`compile_resources` compiles them for sm_90 the way ``make gpu-compile`` does (numba-cuda's PTX,
``ptxas -v``), committed as ``workbench/gpu_primer_kernels.json`` (``python -m workbench.gpu_primer``);
:func:`modelled` prices each variant with :mod:`dtlab.gpu.model`'s roofline -- modelled, not measured.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import threading
import time
from pathlib import Path

import numpy as np

#: Threads per block of the modelled launches and of the compiled kernels; bins of the compiled shared histogram.
TPB = 256
COMPILED_BINS = 256
RESOURCES_JSON = Path(__file__).with_name("gpu_primer_kernels.json")
VARIANTS = ("naive", "coalesced", "shared")

#: Assumptions of the model beyond dtlab.gpu.model's roofline (stated, not data-sheet values): atomics to one
#: address run one after another, a global one in about 1 ns at the L2, a shared one in about one SM clock; a
#: serial add that waits for the previous one takes 4 clocks; a block-wide step (a shared-memory read, a
#: barrier, an add) about 40 clocks; each global atomic moves 8 bytes at the L2 (a 4-byte read and write).
GLOBAL_ATOMIC_SECONDS = 1e-9
SHARED_ATOMIC_SECONDS = 1 / 1.98e9
DEPENDENT_ADD_SECONDS = 4 / 1.98e9
BLOCK_STEP_SECONDS = 40 / 1.98e9
ATOMIC_BYTES = 8

GLOSSARY = [
    ("warp", "32 threads that issue one instruction together; a branch taken by some lanes makes the others "
     "wait.", "boosting.hist_merge_scan lets warp 0 and warp 1 scan two nodes at once; occupancy counts warps."),
    ("thread / block / grid", "A kernel runs a grid of blocks of threads; a block's threads share one SM, its "
     "shared memory and barriers; blocks are independent.", "inference.traverse: one thread per row; "
     "boosting.hist_build: one block per (part of a node's rows, 4 features), grid (parts, feature groups)."),
    ("coalescing", "When a warp's 32 loads fall in few 32-byte sectors the memory system serves them at once; "
     "addresses far apart cost a sector each (8x the bytes for float32).", "inference.traverse reads a "
     "column-major copy Xt[feature, row] so a warp's rows are adjacent; the primer's naive vs coalesced."),
    ("shared memory", "Fast on-chip memory of a block (up to 227 KiB per SM on sm_90), written and read by its "
     "threads between barriers (cuda.syncthreads).", "boosting.hist_build stages rows; evolution.fitness_pre "
     "keeps per-block leaf counts; greedy.scan_mse scans in it."),
    ("bank conflict", "Shared memory has 32 banks of 4 bytes; lanes reading different words of one bank wait "
     "for each other (the same word is a broadcast).", "hist_build's threads all read sh_bin[i, q], one word: "
     "a broadcast; the Hillis-Steele reads buf[t - d] are consecutive words: no conflict."),
    ("occupancy", "Resident warps of an SM over its 64; limited by registers, shared memory, warps or blocks "
     "per SM. More warps hide more memory latency.", "figures/gpu/kernels.json; boosting.lossguide_scan "
     "reaches 25%, limited by its 125 registers."),
    ("registers and spills", "Each thread's variables live in registers (at most 255, 64 Ki per SM); what "
     "does not fit spills to slow local memory.", "make gpu-compile reads them from ptxas -v and fails on any "
     "spill; this primer's kernels are compiled the same way."),
    ("roofline", "A kernel takes at least max(bytes / bandwidth, operations / peak rate); the ridge point "
     "peak / bandwidth says how many operations per byte make it compute bound.", "dtlab.gpu.model prices "
     "every declared kernel on an H200 (4.8 TB/s) -- modelled, never measured."),
    ("grid-stride loop", "for i in range(cuda.grid(1), n, cuda.gridsize(1)): any grid covers any n, each "
     "thread taking every gridsize-th item; the grid can be sized to the device.", "inference.traverse, "
     "evolution.fitness_pre; dtlab.gpu.launch.grid_for caps the grid."),
    ("atomics", "Read-modify-write of one word that no other thread interrupts (add, min, or, ...); atomics to "
     "one address run one after another.", "evolution.fitness_pre (shared add and min), inference.bitmask "
     "(shared OR); hist_build avoids them so its sums are in the CPU's order."),
]


@functools.lru_cache(maxsize=None)
def histogram_kernels(bins: int) -> dict:
    """``{"naive", "coalesced", "shared"}`` histogram kernels ``(values int32[n], hist int32[bins])``; ``bins``
    is the shared histogram's compile-time size."""
    global cuda  # a module global, as numba's simulator swaps the kernels' global ``cuda`` for its own
    from numba import cuda

    @cuda.jit
    def naive(values, hist):
        n = values.shape[0]
        chunk = (n + cuda.gridsize(1) - 1) // cuda.gridsize(1)
        start = cuda.grid(1) * chunk
        for i in range(start, min(start + chunk, n)):  # a warp's lanes read addresses `chunk` apart
            cuda.atomic.add(hist, values[i], 1)

    @cuda.jit
    def coalesced(values, hist):
        for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):  # a warp reads 32 adjacent values
            cuda.atomic.add(hist, values[i], 1)

    @cuda.jit
    def shared(values, hist):
        local = cuda.shared.array(bins, np.int32)
        for b in range(cuda.threadIdx.x, bins, cuda.blockDim.x):
            local[b] = 0
        cuda.syncthreads()
        for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
            cuda.atomic.add(local, values[i], 1)  # contention only among this block's threads
        cuda.syncthreads()
        for b in range(cuda.threadIdx.x, bins, cuda.blockDim.x):  # one global atomic per (block, bin)
            if local[b] != 0:
                cuda.atomic.add(hist, b, local[b])

    return {"naive": naive, "coalesced": coalesced, "shared": shared}


@functools.lru_cache(maxsize=None)
def scan_kernels(tpb: int) -> dict:
    """``{"naive", "coalesced", "shared"}`` inclusive scans of each segment (row) of a float32 matrix;
    ``coalesced`` takes and writes the column-major copy; ``tpb`` is the shared scan's block size."""
    global cuda
    from numba import cuda

    float32 = np.float32

    @cuda.jit
    def naive(x, out):
        s = cuda.grid(1)
        if s < x.shape[0]:
            acc = float32(0)
            for k in range(x.shape[1]):  # a warp's lanes read x[s, k]: a whole row apart
                acc += x[s, k]
                out[s, k] = acc

    @cuda.jit
    def coalesced(xt, out_t):
        s = cuda.grid(1)
        if s < xt.shape[1]:
            acc = float32(0)
            for k in range(xt.shape[0]):  # a warp's lanes read xt[k, s..s+31]: adjacent
                acc += xt[k, s]
                out_t[k, s] = acc

    @cuda.jit
    def shared(x, out):
        s = cuda.blockIdx.x
        t = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, float32)
        carry = float32(0)  # the sum of the chunks before; every thread keeps the same value
        length = x.shape[1]
        for c0 in range(0, length, tpb):
            i = c0 + t
            buf[t] = x[s, i] if i < length else float32(0)
            cuda.syncthreads()
            d = 1
            while d < tpb:  # Hillis-Steele: after the step with distance d, buf[t] sums 2d values ending at t
                v = buf[t - d] if t >= d else float32(0)
                cuda.syncthreads()
                buf[t] += v
                cuda.syncthreads()
                d *= 2
            if i < length:
                out[s, i] = carry + buf[t]
            carry += buf[tpb - 1]
            cuda.syncthreads()  # buf is reloaded by the next chunk only after every thread read buf[tpb - 1]

    return {"naive": naive, "coalesced": coalesced, "shared": shared}


def run_histogram(values: np.ndarray, bins: int, variant: str, grid: int, block: int) -> np.ndarray:
    """Counts (int32, ``bins``) of ``values`` (int32) by kernel ``variant`` on ``grid`` x ``block`` threads."""
    hist = np.zeros(bins, np.int32)
    histogram_kernels(bins)[variant][grid, block](np.ascontiguousarray(values, np.int32), hist)
    return hist


def run_scan(x: np.ndarray, variant: str, block: int) -> np.ndarray:
    """Inclusive scans (float32) of each row of ``x`` by kernel ``variant`` (``block`` threads per block)."""
    x = np.ascontiguousarray(x, np.float32)
    kernel = scan_kernels(block)[variant]
    if variant == "shared":
        out = np.zeros_like(x)
        kernel[x.shape[0], block](x, out)
        return out
    grid = -(-x.shape[0] // block)
    if variant == "naive":
        out = np.zeros_like(x)
        kernel[grid, block](x, out)
        return out
    out_t = np.zeros((x.shape[1], x.shape[0]), np.float32)
    kernel[grid, block](np.ascontiguousarray(x.T), out_t)
    return out_t.T.copy()


#: The tiny inputs of the notebook: 32 values in 6 bins on 2 blocks of 4 threads; 4 segments of 8 values.
TINY = {"values": 32, "bins": 6, "grid": 2, "block": 4, "segments": 4, "length": 8}


def tiny_inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(values int32[32] in [0, 6), x float32[4, 8] of small integers)``: sums are exact in float32."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, TINY["bins"], TINY["values"]).astype(np.int32),
            rng.integers(0, 5, (TINY["segments"], TINY["length"])).astype(np.float32))


def check_tiny(seed: int = 0) -> list[dict]:
    """Each of the six kernels on the tiny inputs, against ``np.bincount`` and ``np.cumsum``."""
    values, x = tiny_inputs(seed)
    out = []
    for v in VARIANTS:
        got = run_histogram(values, TINY["bins"], v, TINY["grid"], TINY["block"])
        out.append({"problem": "histogram", "variant": v, "launch": f"{TINY['grid']} blocks x {TINY['block']}",
                    "result": got.tolist(), "equal to numpy": bool(np.array_equal(
                        got, np.bincount(values, minlength=TINY["bins"])))})
    for v in VARIANTS:
        got = run_scan(x, v, TINY["block"])
        blocks = TINY["segments"] if v == "shared" else 1
        out.append({"problem": "scan", "variant": v, "launch": f"{blocks} block{'s' * (blocks > 1)} x {TINY['block']}",
                    "result": got[0].tolist(), "equal to numpy": bool(np.array_equal(got, np.cumsum(x, axis=1)))})
    return out


def hillis_steele_steps(values) -> list[np.ndarray]:
    """The shared buffer of one block's Hillis-Steele scan after each step (first: the loaded values)."""
    buf = np.asarray(values, dtype=np.float64).copy()
    steps, d = [buf.copy()], 1
    while d < len(buf):
        buf[d:] = buf[d:] + buf[:-d].copy()  # thread t >= d adds buf[t - d] as it was before the step
        steps.append(buf.copy())
        d *= 2
    return steps


@contextlib.contextmanager
def traced_accesses():
    """Under numba's simulator: every element a kernel's threads read or write, as a list of
    ``(launch number, "get"/"set", array shape, dtype, block, thread, index)`` in each thread's order."""
    from numba.cuda.simulator import kernel as sim
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    log, launches = [], [-1]
    get, put, call = FakeCUDAArray.__getitem__, FakeCUDAArray.__setitem__, sim.FakeCUDAKernel.__call__

    def note(arr, idx, kind):
        me = threading.current_thread()
        if isinstance(me, sim.BlockThread):
            index = idx if isinstance(idx, tuple) else (idx,)
            if all(isinstance(i, (int, np.integer)) for i in index):
                log.append((launches[0], kind, arr._ary.shape, str(arr._ary.dtype), tuple(me.blockIdx),
                            tuple(me.threadIdx), tuple(int(i) for i in index)))

    def traced_get(self, idx):
        note(self, idx, "get")
        return get(self, idx)

    def traced_set(self, idx, value):
        note(self, idx, "set")
        return put(self, idx, value)

    def counted_call(self, *args):
        if not self._device and sim._get_kernel_context() is None:  # a launch, not a device function
            launches[0] += 1
        return call(self, *args)

    FakeCUDAArray.__getitem__, FakeCUDAArray.__setitem__ = traced_get, traced_set
    sim.FakeCUDAKernel.__call__ = counted_call
    try:
        yield log
    finally:
        FakeCUDAArray.__getitem__, FakeCUDAArray.__setitem__ = get, put
        sim.FakeCUDAKernel.__call__ = call


def access_map(log, launch: int, shape: tuple, dtype: str, kind: str = "get", axis: int | None = None) -> dict:
    """Who touched each element of one array in launch ``launch`` of a :func:`traced_accesses` log: for every
    element (flat, C order) the first ``(block, thread, step)``, ``step`` being the how-many-th new element
    (with ``axis``: new index along that axis, e.g. a row) of that thread -- its loop's iteration; ``-1``
    where no thread touched it."""
    size = int(np.prod(shape))
    owner = {"block": [None] * size, "thread": np.full(size, -1), "step": np.full(size, -1),
             "readers": np.zeros(size, int), "shape": tuple(shape)}
    seen: dict[tuple, set] = {}
    steps: dict[tuple, dict] = {}
    for no, k, shp, dt, block, thread, idx in log:
        if no != launch or k != kind or tuple(shp) != tuple(shape) or dt != dtype or len(idx) != len(shape):
            continue
        cell = int(np.ravel_multi_index(idx, shape))
        mine = seen.setdefault((block, thread), set())
        if cell in mine:
            continue
        mine.add(cell)
        order = steps.setdefault((block, thread), {})
        step = order.setdefault(cell if axis is None else idx[axis], len(order))
        owner["readers"][cell] += 1
        if owner["thread"][cell] < 0:
            owner["block"][cell], owner["thread"][cell], owner["step"][cell] = block, thread[0], step
    return owner


def primer_maps(seed: int = 0) -> dict[str, dict]:
    """Under the simulator: the :func:`access_map` of the input of each primer kernel on the tiny inputs."""
    values, x = tiny_inputs(seed)
    out = {}
    with traced_accesses() as log:
        for v in VARIANTS:
            run_histogram(values, TINY["bins"], v, TINY["grid"], TINY["block"])
        for v in VARIANTS:
            run_scan(x, v, TINY["block"])
    for j, v in enumerate(VARIANTS):
        out[f"histogram, {v}"] = access_map(log, j, values.shape, "int32")
    for j, v in enumerate(VARIANTS):
        shape = x.T.shape if v == "coalesced" else x.shape
        out[f"scan, {v}"] = access_map(log, 3 + j, shape, "float32")
    return out


def in_simulator(module: str, function: str, *args, child: bool = False):
    """``module.function(*args)`` under numba's simulator: here when it is on, else (a GPU machine: the
    notebook's process runs the real device) in a child process with ``NUMBA_ENABLE_CUDASIM=1``, the result
    pickled back.  The traces need the simulator's threads; ``child`` forces the child process (tests)."""
    import importlib

    from dtlab.backend import cuda_simulator_enabled

    if cuda_simulator_enabled() and not child:
        return getattr(importlib.import_module(module), function)(*args)
    import base64
    import os
    import pickle
    import subprocess
    import sys

    code = ("import base64, pickle, sys, importlib; from dtlab.backend import enable_cuda_simulator; "
            "enable_cuda_simulator(); args = pickle.loads(base64.b64decode(sys.argv[1])); "
            f"r = getattr(importlib.import_module({module!r}), {function!r})(*args); "
            "sys.stdout.write('RESULT' + base64.b64encode(pickle.dumps(r)).decode())")
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run([sys.executable, "-c", code, base64.b64encode(pickle.dumps(args)).decode()],
                         capture_output=True, text=True, env=env, cwd=root)
    if run.returncode or "RESULT" not in run.stdout:
        raise RuntimeError(f"{module}.{function} under the simulator failed:\n{run.stderr[-3000:]}")
    return pickle.loads(base64.b64decode(run.stdout.split("RESULT", 1)[1]))


def compile_resources(arch: str = "sm_90") -> list[dict]:
    """Each primer kernel compiled for ``arch`` as ``make gpu-compile`` does (numba-cuda's PTX, ``ptxas -v
    -O3``): registers, spills, stack and static shared memory.  Needs ``NUMBA_ENABLE_CUDASIM=0`` and the
    gpu-compile extra; no GPU."""
    from dtlab.gpu.compile import assemble, compile_ptx, ptxas_path
    from dtlab.gpu.kernels import python_function
    from dtlab.gpu.occupancy import ARCHS

    cc, ptxas = ARCHS[arch].cc, ptxas_path()
    todo = [(f"histogram.{v}", k, "void(int32[::1], int32[::1])") for v, k in
            histogram_kernels(COMPILED_BINS).items()]
    todo += [(f"scan.{v}", k, "void(float32[:, ::1], float32[:, ::1])") for v, k in scan_kernels(TPB).items()]
    out = []
    for name, kernel, signature in todo:
        rec = assemble(compile_ptx(python_function(kernel), signature, [cc])[cc], arch, ptxas)
        out.append({"kernel": name, "arch": arch, "signature": signature, "registers": rec["registers"],
                    "spill_stores": rec["spill_stores"], "spill_loads": rec["spill_loads"], "stack": rec["stack"],
                    "shared_static": rec["shared_static"]})
    return out


def load_resources() -> dict[str, dict]:
    """The committed compile results (``workbench/gpu_primer_kernels.json``) by kernel name."""
    doc = json.loads(RESOURCES_JSON.read_text())
    return {r["kernel"]: r for r in doc["kernels"]}


def launch_shape(problem: str, variant: str, n: int, bins: int = 256, segment: int = 4096,
                 blocks: int | None = None) -> dict:
    """The modelled launch of a variant on ``n`` elements: blocks, threads per block, resident blocks per SM."""
    from dtlab.gpu.model import H200
    from dtlab.gpu.occupancy import ARCHS, occupancy

    rec = load_resources()[f"{problem}.{variant}"]
    shared = 4 * bins if (problem, variant) == ("histogram", "shared") else rec["shared_static"]
    per_sm = max(occupancy(rec["registers"], shared, TPB, ARCHS["sm_90"])["blocks_per_sm"], 1)
    if problem == "histogram":  # a grid-stride grid: at most what the device holds at once
        grid = blocks or max(1, min(-(-n // TPB), H200["sms"] * per_sm))
    else:
        segments = max(1, n // segment)
        grid = blocks or (segments if variant == "shared" else -(-segments // TPB))
    return {"blocks": int(grid), "threads": TPB, "blocks_per_sm": per_sm, "shared_bytes": shared}


def work(problem: str, variant: str, n: int, bins: int = 256, segment: int = 4096, blocks: int | None = None):
    """``(Work, chain seconds, launch shape)`` of a variant: DRAM/L2 bytes and operations for
    :func:`dtlab.gpu.model.seconds`, and the longest chain of steps that must follow one another (same-address
    atomics, a thread's serial adds, a block's scan steps) under the module's stated assumptions."""
    from dtlab.gpu.model import H200, Work

    shape = launch_shape(problem, variant, n, bins, segment, blocks)
    g = shape["blocks"]
    waves = -(-g // (H200["sms"] * shape["blocks_per_sm"]))
    if problem == "histogram":
        read = 32 * n if variant == "naive" else 4 * n  # strided: a 32-byte sector per 4-byte value
        if variant == "shared":
            per_block = n / g
            merges = g * min(bins, per_block)
            w = Work(bytes=read + 4 * bins + ATOMIC_BYTES * merges, ops=6 * n + 3 * g * bins)
            chain = waves * per_block / bins * SHARED_ATOMIC_SECONDS + g * GLOBAL_ATOMIC_SECONDS
        else:
            w = Work(bytes=read + 4 * bins + ATOMIC_BYTES * n, ops=6 * n)
            chain = n / bins * GLOBAL_ATOMIC_SECONDS
        return w, chain, shape
    segments, length = max(1, n // segment), segment
    n = segments * length
    if variant == "shared":
        chunks = -(-length // TPB)
        steps = int(math.log2(TPB))
        padded = segments * chunks * TPB  # every thread of the last chunk runs the steps
        w = Work(bytes=8 * n, flops32=padded * (steps + 2), ops=padded * (3 * steps + 6))
        chain = waves * chunks * (steps + 2) * BLOCK_STEP_SECONDS
    else:
        moved = 64 * n if variant == "naive" else 8 * n  # read and write, a sector each when strided
        w = Work(bytes=moved, flops32=n, ops=4 * n)
        chain = length * DEPENDENT_ADD_SECONDS
    return w, chain, shape


def modelled_seconds(problem: str, variant: str, n: int, **kw) -> float:
    """Modelled H200 seconds: ``max(roofline of dtlab.gpu.model.seconds, launch + chain)``. Not measured."""
    from dtlab.gpu.model import H200, seconds

    w, chain, shape = work(problem, variant, n, **kw)
    return max(seconds(w, shape["blocks"], shape["threads"], shape["blocks_per_sm"]),
               H200["launch_seconds"] + chain)


def modelled(sizes, bins: int = 256, segment: int = 4096) -> list[dict]:
    """Rows ``{problem, variant, n, seconds, bound}`` for every size, variant and problem (modelled)."""
    from dtlab.gpu.model import H200, bound, seconds

    out = []
    for problem in ("histogram", "scan"):
        for v in VARIANTS:
            for n in sizes:
                w, chain, shape = work(problem, v, int(n), bins=bins, segment=segment)
                roof = seconds(w, shape["blocks"], shape["threads"], shape["blocks_per_sm"])
                out.append({"problem": problem, "variant": v, "n": int(n), "blocks": shape["blocks"],
                            "seconds": max(roof, H200["launch_seconds"] + chain),
                            "bound": "serial chain" if H200["launch_seconds"] + chain > roof else bound(w)})
    return out


def plot_modelled(rows: list[dict], bins: int, segment: int, measured: list[dict] | None = None):
    """Seconds against n: the histogram (left) and the scan (right); modelled open markers and dashed lines,
    and where ``measured`` (:func:`load_measured`'s rows) has this bin count or segment, the H200's measured
    seconds as filled markers and solid lines."""
    from dtlab.plotting.axes import new_figure

    fig, axes = new_figure(ncols=2, figsize=(11, 4.4))
    marks = {"naive": "s", "coalesced": "o", "shared": "^"}
    for ax, problem, key, value in ((axes[0], "histogram", "bins", bins), (axes[1], "scan", "segment", segment)):
        for i, v in enumerate(VARIANTS):
            mine = [r for r in rows if r["problem"] == problem and r["variant"] == v]
            ax.plot([r["n"] for r in mine], [r["seconds"] for r in mine], marks[v] + "--", color=f"C{i}",
                    markerfacecolor="none", label=f"{v} (modelled)")
            seen = [r for r in measured or () if r["problem"] == problem and r["variant"] == v and r[key] == value]
            if seen:
                ax.plot([r["n"] for r in seen], [r["seconds"] for r in seen], marks[v] + "-", color=f"C{i}",
                        label=f"{v} (measured, H200)")
        ax.set(xscale="log", yscale="log", xlabel="elements n", ylabel="seconds on an H200",
               title=f"{problem}, {value:,} {'bins' if key == 'bins' else 'per segment'}")
        ax.legend(fontsize=6.5, ncol=2, loc="best", framealpha=0.6)
    return fig


MEASURED_JSON = Path(__file__).with_name("gpu_primer_measured.json")


def measure(sizes, bins_list=(16, 256, 8192), segment: int = 4096, repeats: int = 5, seed: int = 0) -> list[dict]:
    """On a real GPU: each variant's kernel seconds (median of ``repeats`` after a warm-up, CUDA events) for the
    launches :func:`launch_shape` models, each result checked against NumPy.  Rows as :func:`modelled`'s."""
    from numba import cuda

    def timed(kernel, grid, args, reset=None):
        kernel[grid, TPB](*args)  # the warm-up compiles the kernel
        start, stop, seconds = cuda.event(), cuda.event(), []
        for _ in range(repeats):
            if reset is not None:
                reset.copy_to_device(np.zeros(reset.shape, reset.dtype))
            start.record()
            kernel[grid, TPB](*args)
            stop.record()
            stop.synchronize()
            seconds.append(start.elapsed_time(stop) / 1e3)
        if reset is not None:  # the result of one launch, for the check
            reset.copy_to_device(np.zeros(reset.shape, reset.dtype))
            kernel[grid, TPB](*args)
        return float(np.median(seconds))

    rng, rows = np.random.default_rng(seed), []
    for n in sizes:
        for bins in bins_list:
            host = rng.integers(0, bins, n).astype(np.int32)
            values, hist = cuda.to_device(host), cuda.device_array(bins, np.int32)
            for v in VARIANTS:
                grid = launch_shape("histogram", v, n, bins=bins)["blocks"]
                sec = timed(histogram_kernels(bins)[v], grid, (values, hist), reset=hist)
                rows.append({"problem": "histogram", "variant": v, "n": int(n), "bins": bins, "seconds": sec,
                             "correct": bool(np.array_equal(hist.copy_to_host(), np.bincount(host, minlength=bins)))})
        segments = max(1, n // segment)
        x = rng.integers(0, 5, (segments, segment)).astype(np.float32)
        want = np.cumsum(x, axis=1)
        for v in VARIANTS:
            grid = launch_shape("scan", v, n, segment=segment)["blocks"]
            src = cuda.to_device(np.ascontiguousarray(x.T) if v == "coalesced" else x)
            out = cuda.device_array(src.shape, np.float32)
            sec = timed(scan_kernels(TPB)[v], grid, (src, out))
            got = out.copy_to_host()
            rows.append({"problem": "scan", "variant": v, "n": int(segments * segment), "segment": segment,
                         "seconds": sec, "correct": bool(np.array_equal(got.T if v == "coalesced" else got, want))})
    return rows


def load_measured() -> dict:
    """The committed H200 measurements (``workbench/gpu_primer_measured.json``), ``{}`` when absent."""
    return json.loads(MEASURED_JSON.read_text()) if MEASURED_JSON.exists() else {}


def main(argv=None) -> int:
    """``python -m workbench.gpu_primer [--check]``: write (or compare with) ``gpu_primer_kernels.json``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the committed JSON, write nothing")
    parser.add_argument("--measure", type=Path, default=None, help="on a GPU: time the kernels, write this JSON")
    args = parser.parse_args(argv)
    if args.measure:
        from numba import cuda

        from dtlab.gpu.compile import versions

        rows = measure([10**k for k in range(4, 9)])
        doc = {"generated_by": "python -m workbench.gpu_primer --measure (CUDA events, median of 5)",
               "date": time.strftime("%Y-%m-%d", time.gmtime()),
               "device": cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes)
               else str(cuda.get_current_device().name), "versions": versions(), "rows": rows}
        args.measure.write_text(json.dumps(doc, indent=1) + "\n")
        print(json.dumps(doc)[:3000])
        return 0 if all(r["correct"] for r in rows) else 1
    fresh = compile_resources()
    if args.check:
        same = {r["kernel"]: r for r in fresh} == load_resources()
        print("RESULT", json.dumps({"same": same, "fresh": fresh}))
        return 0 if same else 1
    from dtlab.gpu.compile import versions

    doc = {"generated_by": "python -m workbench.gpu_primer (NUMBA_ENABLE_CUDASIM=0, the gpu-compile extra)",
           "versions": versions(), "bins": COMPILED_BINS, "tpb": TPB, "kernels": fresh}
    RESOURCES_JSON.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {RESOURCES_JSON}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
