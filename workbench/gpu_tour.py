"""The GPU tour (notebook 07, slug ``tour``): what one kernel of each technique gives each block and thread,
its sm_90 resources, and its modelled H200 time beside the CPU's measured time for the same work.

* :func:`tiny_launches` runs each technique's CUDA path on a tiny input (numba's
  simulator without a GPU), checks it against the CPU and keeps the recorded
  launch of its kernel; :func:`mapping` reads from that launch which data each
  block and thread takes and where the block combines;
* :func:`tiny_traces` does the same under numba's simulator with every element access traced
  (:func:`workbench.gpu_primer.traced_accesses`): which block and thread read each element of one argument,
  at which step of its loop, drawn by :func:`plot_access_maps`;
* :func:`resources` is the compile check's row (``figures/gpu/kernels.json``); :func:`occupancy_curve` and
  :func:`plot_occupancy` recompute a kernel's occupancy at every block size (:mod:`dtlab.gpu.occupancy`),
  :func:`ridge_points` gives the H200 model's ridge points;
* :func:`modelled_vs_cpu` times the CPU on ``n_rows`` and records the GPU
  path's launches for the same work without running them (a launch plan), then
  prices them with the H200 model (:mod:`dtlab.gpu.model`) -- modelled, never
  measured; figure ``tour_gpu_model`` draws both, the model with open markers
  and dashed lines.

``linear`` has no kernel of its own on a GPU: TRON's products are cupy's
(cuBLAS / cuSPARSE), so it has no row here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from dataclasses import replace

import numpy as np

from workbench.registry import RunContext, register_figure

#: The kernel the tour shows for each technique.
KERNELS = {"inference": "inference.traverse", "boosting": "boosting.hist_build", "evolution": "evolution.fitness_pre",
           "greedy": "greedy.scan_mse"}


def _data(n, d, rng, dtype=np.float32):
    X = rng.normal(size=(n, d)).astype(dtype)
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0)


def _forest(rng, n_trees, depth):
    from dtlab.inference import Forest
    from dtlab.trees.synthetic import random_grid_tree

    return Forest([random_grid_tree(rng, 4, depth, np.linspace(-2, 2, 17), p_split=0.9) for _ in range(n_trees)],
                  combine="sum")


def _inference(n, rng, backend):
    forest = _forest(rng, 2 if n < 100 else 20, 2 if n < 100 else 6)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    return lambda: forest.predict(X, method="traversal", backend=backend)


def _boosting(n, rng, backend):
    from dtlab.boosting import GBDTRegressor

    X, y = _data(n, 3 if n < 100 else 28, rng)
    model = GBDTRegressor(n_estimators=1, max_depth=1, split_method="hist", max_bins=4 if n < 100 else 256,
                          backend=backend)
    return lambda: model.fit(X, y.astype(np.float32)).trees_[0]


def _evolution(n, rng, backend):
    from dtlab.evolution import CpuEvaluator
    from dtlab.evolution.individual import pack
    from dtlab.evolution.testing import random_individuals

    X, y = _data(n, 4, rng)
    y = y.astype(np.int32)
    batch = pack(random_individuals(rng, X[:500], y[:500], 2, 1 if n < 100 else 32, max_depth=2 if n < 100 else 8))
    if backend == "cpu":
        ev = CpuEvaluator(X, y, 2)
    else:
        from dtlab.evolution.evaluators.cuda import CudaEvaluator

        small = n < 100
        ev = CudaEvaluator(X, y, 2, n_devices=1, leaf_search="walk", threads_per_block=8 if small else None,
                           shared_slots=12 if small else None)
    return lambda: ev.evaluate(batch, 3)


def _greedy(n, rng, backend, features=2):
    from dtlab.greedy import DecisionTreeRegressor

    X, y = _data(n, features, rng)
    target = np.round(X[:, 0] * 4)  # integer targets: exact sums, the same tree on both
    return lambda: DecisionTreeRegressor(max_depth=1, backend=backend).fit(X, target).tree_


WORK = {"inference": _inference, "boosting": _boosting, "evolution": _evolution, "greedy": _greedy}


def make_call(slug: str, n: int, rng, backend: str, **kw):
    """Technique ``slug``'s call on ``n`` rows for ``backend``, ready to run (a zero-argument callable)."""
    return WORK[slug](n, rng, backend, **kw)


def _same(a, b) -> bool:
    if hasattr(a, "equals"):
        return bool(a.equals(b))
    if hasattr(a, "feature"):
        return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("feature", "threshold", "left", "value"))
    return bool(np.array_equal(a, b))


#: Per technique, the argument of its kernel whose elements :func:`tiny_traces` maps, and its axes' names.
WATCH = {"inference": (0, "Xt[feature, row]"), "boosting": (2, "bins[row, feature], drawn transposed"),
         "evolution": (1, "y[row]"), "greedy": (2, "ylist[feature, position]")}

#: The axis of the :data:`WATCH` argument along which a thread's loop steps (rows; the greedy scan's positions).
ROW_AXIS = {"inference": 1, "boosting": 0, "evolution": 0, "greedy": 1}


def tiny_launches(seed: int = 0) -> dict:
    """Each technique's CUDA path on a tiny input, recorded: ``{slug: (launch of its kernel, equal to the CPU)}``."""
    return {slug: (t["launch"], t["equal"]) for slug, t in tiny_traces(seed, traced=False).items()}


def tiny_traces(seed: int = 0, traced: bool = True) -> dict:
    """Each technique's CUDA path on 12 rows, checked against the CPU and recorded: ``{slug: {"launch",
    "equal", "map"}}``; ``map`` (with ``traced``, under numba's simulator) is
    :func:`workbench.gpu_primer.access_map` of the :data:`WATCH` argument: which block and thread touched
    each of its elements, at which step of its loop."""
    from dtlab.gpu.launch import recording
    from workbench.gpu_primer import access_map, traced_accesses

    out = {}
    for slug, make in WORK.items():
        # GDT's counter-based draws multiply uint64 values that wrap by design; compiled code wraps silently,
        # but numba's simulator runs the device functions on numpy scalars, which warn on the wrap (in the
        # simulator's threads: np.errstate is per thread, the warnings filter is not)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "overflow encountered in scalar multiply", RuntimeWarning)
            cpu = make(12, np.random.default_rng(seed), "cpu")()
            run = make(12, np.random.default_rng(seed), "cuda")
            with recording(keep_args=True) as log, (traced_accesses() if traced else _nothing()) as accesses:
                got = run()
        j = next(i for i, item in enumerate(log) if item.name == KERNELS[slug])
        host = tuple(_to_host(a) if hasattr(a, "copy_to_host") else a for a in log[j].args)
        out[slug] = {"launch": replace(log[j], args=host), "equal": _same(got, cpu), "map": None}  # picklable
        if traced:
            launched = 1 + max((a[0] for a in accesses), default=-1)
            if launched > len(log):
                raise RuntimeError(f"{slug}: {launched} simulated launches, {len(log)} recorded")
            arg, _ = WATCH[slug]
            dtype = log[j].types[arg].split("(")[1].split(",")[0]
            out[slug]["map"] = access_map(accesses, j, log[j].shapes[arg], dtype, axis=ROW_AXIS[slug])
    return out


class _nothing:
    def __enter__(self):
        return []

    def __exit__(self, *exc):
        return False


def traced_rows(amap: dict, axis: int) -> dict[tuple, list[int]]:
    """``{(block, thread): sorted indices along ``axis``}`` of the elements a thread touched first."""
    out: dict[tuple, set] = {}
    for cell in np.flatnonzero(amap["thread"] >= 0):
        idx = np.unravel_index(int(cell), amap["shape"])
        out.setdefault((amap["block"][cell], int(amap["thread"][cell])), set()).add(int(idx[axis]))
    return {k: sorted(v) for k, v in out.items()}


def _to_host(a):
    from dtlab.backend import to_host

    return np.asarray(to_host(a))


def mapping(launch) -> list[dict]:
    """Which data each block and thread of a recorded launch takes, read from its grid and arguments
    (the kernel's own indexing, written out); ``combine`` says where the block's threads meet."""
    gx, gy = launch.grid[0], launch.grid[1]
    tpb = launch.block[0]
    rows = []
    if launch.name == "inference.traverse":
        n = launch.shapes[0][1]
        for b in range(gx):
            for t in range(tpb):
                mine = list(range(b * tpb + t, n, gx * tpb))
                if mine:
                    rows.append({"block": b, "thread": t, "rows": mine, "reads": "Xt[feature, row] on each tree's "
                                 "path", "writes": "out[row, :] once", "combine": "none: sums in registers"})
    elif launch.name == "boosting.hist_build":
        plan = _to_host(launch.args[1])
        d = launch.shapes[2][1]
        for p in range(gx):
            for g in range(gy):
                feats = [f for f in range(4 * g, 4 * g + 4) if f < d]
                rows.append({"block": (p, g), "thread": f"0..{tpb - 1} (one per bin)",
                             "rows": list(range(int(plan[1, p]), int(plan[2, p]))),
                             "reads": f"order, bins[row, {feats}], g, h staged in shared memory",
                             "writes": f"part_g/part_h[{p}, {feats}, bin]", "combine": "merge_scan adds the parts "
                             "in part order"})
    elif launch.name == "evolution.fitness_pre":
        n = launch.shapes[2]
        for t in range(gy):
            for b in range(gx):
                for tid in range(tpb):
                    mine = list(range(b * tpb + tid, n, gx * tpb))
                    if mine:
                        rows.append({"block": (b, t), "thread": tid, "rows": mine, "reads": f"Xt[:, row] along tree "
                                     f"{launch.shapes[5] + t}'s path, y[row]", "writes": "shared (leaf, class) slots",
                                     "combine": "shared-memory atomics, then fitness_post over blocks"})
    elif launch.name == "greedy.scan_mse":
        active = _to_host(launch.args[0])
        s, e = launch.shapes[3], launch.shapes[4]
        for b in range(gx):
            for t in range(tpb):
                mine = list(range(t, e - s, tpb))
                if mine:
                    rows.append({"block": b, "thread": t, "rows": [s + i for i in mine],
                                 "reads": f"ylist[{int(active[b])}, position]", "writes": "out[:, feature] (thread 0)",
                                 "combine": "block scan (prefix sums), block arg-max"})
    return rows


def resources(names=None, arch: str = "sm_90") -> list[dict]:
    """The compile check's rows (first signature of each kernel) from ``figures/gpu/kernels.json``."""
    from dtlab.gpu.model import load_table

    seen, out = set(), []
    for r in load_table().get("kernels", []):
        if r["arch"] == arch and r["name"] not in seen and (names is None or r["name"] in names) and "registers" in r:
            seen.add(r["name"])
            block = next(iter(r["blocks"]))
            out.append({"kernel": r["name"], "registers": r["registers"], "spilled bytes": r["spill_stores"],
                        "stack bytes": r["stack"], "static shared bytes": r["shared_static"], "block": int(block),
                        "occupancy": r["blocks"][block]["occupancy"], "limited by": r["blocks"][block]["limited_by"]})
    return out


def _example(name: str, n: int, d: int) -> None:
    """Launch kernel ``name``'s declared representative launch for ``n`` rows and ``d`` features."""
    from dtlab.gpu.kernels import discover
    from dtlab.gpu.launch import launch

    spec = discover()[name]
    grid, block, args = spec.example(n, d)
    launch(spec.build(), grid, block, *args)


def _same_work(slug: str, n: int, rng):
    """``(cpu, gpu_plan, what)``: the CPU's call, the GPU path's launches for the same work (run in a launch
    plan: they need not run) and what both do.  A fit of several levels has host decisions between launches
    that read kernel results, so boosting and greedy are priced on their root level's kernels."""
    if slug in ("inference", "evolution"):
        return make_call(slug, n, rng, "cpu"), make_call(slug, n, rng, "cuda"), WHAT[slug]
    if slug == "boosting":
        from dtlab.boosting.grower import ColumnData
        from dtlab.boosting.hist import HistSearch

        X, y = _data(n, 28, rng)
        search = HistSearch(ColumnData.from_input(X), 1, 256)
        g, h = (y - 0.5).astype(np.float32), np.ones(n, np.float32)

        def cpu():
            search.start_tree(g, h)
            return search.find(1, np.array([float(g.sum())]), np.array([float(h.sum())]), np.array([n]), 1.0, 0.0)

        return cpu, lambda: (_example("boosting.hist_build", n, 28), _example("boosting.hist_merge_scan", n, 28)), \
            WHAT[slug]
    from dtlab.splits import attribute_lists

    X, y = _data(n, 10, rng)
    XT = np.ascontiguousarray(X.T)

    def gpu():
        attribute_lists(XT, y.astype(np.float64))  # the GPU path presorts on the host, as the CPU path
        _example("greedy.scan_mse", n, 10)

    return make_call(slug, n, rng, "cpu", features=10), gpu, WHAT[slug]


WHAT = {"inference": "20 trees of depth 6, traversal", "evolution": "32 trees of depth <= 8, one evaluation",
        "boosting": "root level, 28 features: histograms and scans", "greedy": "depth-1 tree, 10 features (presort "
        "on the host included)"}


def modelled_vs_cpu(n_rows: int, seed: int = 0) -> list[dict]:
    """Per technique, the CPU's measured seconds (median of 3, numba's threads) and the H200 model's seconds
    for the same work: the GPU path's launches recorded without running (a launch plan) and priced (a host step
    of the GPU path, the greedy presort, is timed on the host and added)."""
    import time

    from dtlab.gpu.launch import recording
    from dtlab.gpu.model import model_launch
    from workbench.timing import median_seconds

    out = []
    for slug in WORK:
        cpu, gpu, what = _same_work(slug, n_rows, np.random.default_rng(seed))
        cpu_seconds = median_seconds(cpu, repeats=3)
        with recording(execute=False, keep_args=True) as plan:
            start = time.perf_counter()
            try:
                gpu()
            except RuntimeError:  # GDT's evaluator checks the statistics the plan did not compute: its two
                if slug != "evolution":  # kernels are recorded by then
                    raise
            host = time.perf_counter() - start if slug == "greedy" else 0.0
        kernels = [m for m in (model_launch(item) for item in plan) if m is not None]
        out.append({"technique": slug, "what": what, "n_rows": n_rows, "cpu_seconds_measured": cpu_seconds,
                    "h200_seconds_modelled": host + sum(m["seconds"] for m in kernels),
                    "host_seconds_measured": host, "launches": len(kernels),
                    "bound": sorted({m["bound"] for m in kernels})})
    return out


def _modelled_in_simulator(sizes) -> list[dict]:
    """:func:`modelled_vs_cpu` for each size in a child process with numba's simulator (the launch plans need
    the cuda backend, which the simulator provides without a GPU)."""
    code = ("import json, sys; from workbench.gpu_tour import modelled_vs_cpu; "
            f"print(json.dumps([r for n in {list(sizes)} for r in modelled_vs_cpu(n)]))")
    env = dict(__import__("os").environ, NUMBA_ENABLE_CUDASIM="1")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def plot_model(rows: list[dict]):
    """Seconds against rows: the CPU measured (filled, solid) and the H200 modelled (open, dashed)."""
    from dtlab.plotting.axes import new_figure

    fig, ax = new_figure(figsize=(7.5, 4.6))
    for i, slug in enumerate(sorted({r["technique"] for r in rows})):
        mine = sorted((r for r in rows if r["technique"] == slug), key=lambda r: r["n_rows"])
        n = [r["n_rows"] for r in mine]
        color = f"C{i}"
        ax.plot(n, [r["cpu_seconds_measured"] for r in mine], "o-", color=color, label=f"{slug}: CPU, measured")
        ax.plot(n, [r["h200_seconds_modelled"] for r in mine], "s--", color=color, markerfacecolor="none",
                label=f"{slug}: H200, modelled (not measured)")
    ax.set(xscale="log", yscale="log", xlabel="rows", ylabel="seconds",
           title="One kernel step per technique: CPU measured, H200 modelled (roofline, dtlab.gpu.model)")
    ax.legend(fontsize=8, ncol=2)
    return fig


def _captions(results: dict) -> dict[str, str]:
    sizes = sorted({r["n_rows"] for r in results.get("rows", [])})
    return {"tour_gpu_model": (
        "One kernel step per technique on " + ", ".join(f"{n:,}" for n in sizes) + " rows: the CPU's time measured "
        "(filled markers, solid lines; numba's threads) against an H200's time *modelled* by dtlab.gpu.model "
        "(open markers, dashed lines: a roofline at 4.8 TB/s and the compile check's occupancy) -- not a "
        "measurement; make gpu-check measures it on a GPU.")}


@register_figure("tour_gpu_model", technique="tour", captions=_captions,
                 description="modelled H200 time of each technique's GPU kernels against the CPU's measured time")
def figure_gpu_model(ctx: RunContext) -> dict:
    sizes = ctx.pick([10_000, 100_000], [10_000, 100_000, 1_000_000])
    rows = _modelled_in_simulator(sizes)
    ctx.savefig(plot_model(rows), "tour_gpu_model")
    return {"rows": rows, "model": "dtlab.gpu.model.H200 (modelled, not measured)"}


def _cell_colour(block_rank: int, thread: int, threads: int):
    """A block's hue, lighter for higher threads of the block (RGB)."""
    from matplotlib import colormaps

    base = np.array(colormaps["tab10"](block_rank % 10)[:3])
    return base + (1 - base) * 0.55 * thread / max(threads - 1, 1)


def _display(amap: dict, transpose: bool):
    """The map's arrays shaped for drawing: 2-D, 1-D arrays cut into rows of at most 16 cells."""
    shape = amap["shape"]
    size = int(np.prod(shape))
    if len(shape) == 1:
        cols = min(size, 16)
        shape = (-(-size // cols), cols)
    cells = np.full(shape[0] * shape[1], -1)
    cells[:size] = np.arange(size)
    grid = cells.reshape(shape)
    return grid.T if transpose else grid


def plot_access_maps(maps: dict[str, dict], step: int | str = "all", labels: dict | None = None,
                     transpose: tuple = ()):
    """Each traced array as a grid of cells (one per element), coloured by the block (hue) and thread (shade)
    that touched it; with ``step = k`` the cells of loop step ``k`` are solid and outlined, those of earlier
    steps faded, later ones empty.  Each title says which threads read at that step and how far apart."""
    from matplotlib.patches import Patch

    from dtlab.plotting.axes import new_figure

    labels = labels or {}
    heights = [_display(m, name in transpose).shape[0] for name, m in maps.items()]
    fig, axes = new_figure(len(maps), 1, figsize=(9, 0.9 + 0.55 * sum(heights) + 0.55 * len(maps)),
                           gridspec_kw={"height_ratios": [h + 1.2 for h in heights]})
    axes = np.atleast_1d(axes)
    for ax, (name, m) in zip(axes, maps.items()):
        grid = _display(m, name in transpose)
        blocks = sorted({b for b in m["block"] if b is not None})
        threads = int(m["thread"].max()) + 1
        last = int(m["step"].max())
        k = last if step == "all" else int(step)
        active = []
        for (r, c), cell in np.ndenumerate(grid):
            if cell < 0 or m["thread"][cell] < 0:
                ax.add_patch(_rect(c, r, "white", "#ccc", 0.5))
                continue
            s, b, t = int(m["step"][cell]), m["block"][cell], int(m["thread"][cell])
            colour = _cell_colour(blocks.index(b), t, threads)
            if s == k or step == "all":
                active.append((cell, b, t))
            if step == "all":
                ax.add_patch(_rect(c, r, colour, "#888", 0.5))
                ax.text(c + 0.5, r + 0.5, f"t{t}\nk{s}", ha="center", va="center", fontsize=6.5)
            elif s <= k:
                ax.add_patch(_rect(c, r, colour, "black" if s == k else "#888", 2.0 if s == k else 0.5,
                                   1.0 if s == k else 0.35))
                ax.text(c + 0.5, r + 0.5, f"t{t}\nk{s}", ha="center", va="center", fontsize=6.5)
            else:
                ax.add_patch(_rect(c, r, "white", "#bbb", 0.5))
        ax.set(xlim=(0, grid.shape[1]), ylim=(grid.shape[0], 0), aspect="equal")
        ax.set_xticks(np.arange(grid.shape[1]) + 0.5, [str(i) for i in range(grid.shape[1])], fontsize=6)
        ax.set_yticks(np.arange(grid.shape[0]) + 0.5, [str(i) for i in range(grid.shape[0])], fontsize=6)
        names = labels.get(name)
        if names:
            ax.set(xlabel=names[-1], ylabel=names[0] if len(names) > 1 else "")
        if step == "all":
            what = (f"{len(active)} cells read by {len({(b, t) for _, b, t in active})} threads in "
                    f"{last + 1} step{'s' * (last > 0)}")
        elif k <= last:
            what = f"step {k} of {last + 1}: {_spacing(active)}"
        else:
            what = f"step {k}: done after {last + 1} step{'s' * (last > 0)}"
        ax.set_title(f"{name} -- {what}", fontsize=9, loc="left")
        ax.legend(handles=[Patch(color=_cell_colour(i, 0, threads), label=f"block {_block_name(b)}")
                           for i, b in enumerate(blocks)], fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _block_name(b: tuple) -> str:
    return str(b[0]) if tuple(b[1:]) == (0, 0) else str(tuple(b[:2]))


def _rect(x, y, face, edge, width, alpha=1.0):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), 1, 1, facecolor=face, edgecolor=edge, linewidth=width, alpha=alpha)


def _spacing(active: list) -> str:
    """What the threads of each block touch at one step: how many and how far apart (in elements)."""
    if not active:
        return "no thread touches an element"
    parts = []
    for b in sorted({b for _, b, _ in active}):
        cells = sorted(c for c, bb, _ in active if bb == b)
        gaps = sorted(set(np.diff(cells).tolist())) if len(cells) > 1 else []
        gap = "" if not gaps else (" adjacent" if gaps == [1] else f" {', '.join(map(str, gaps[:3]))} apart")
        parts.append(f"block {_block_name(b)}: {len(cells)} cells{gap}")
    return "; ".join(parts[:3]) + ("; ..." if len(parts) > 3 else "")


def kernel_record(name: str, arch: str = "sm_90") -> dict:
    """The compile check's record of kernel ``name`` (its first signature) from ``figures/gpu/kernels.json``."""
    from dtlab.gpu.model import load_table

    return next(r for r in load_table()["kernels"] if r["name"] == name and r["arch"] == arch and "registers" in r)


def allocated_registers(name: str) -> int:
    """Kernel ``name``'s registers per thread rounded up to the allocation unit (256 per warp: 8 per thread)."""
    return -(-kernel_record(name)["registers"] // 8) * 8


def occupancy_curve(registers: int, shared_bytes: int, blocks=range(32, 1025, 32), arch: str = "sm_90") -> list[dict]:
    """Occupancy and its limiting factor (:func:`dtlab.gpu.occupancy.occupancy`) at each block size."""
    from dtlab.gpu.occupancy import ARCHS, occupancy

    return [{"block": b, **occupancy(registers, shared_bytes, b, ARCHS[arch])} for b in blocks]


LIMIT_COLOURS = {"registers": "C3", "shared memory": "C2", "warps": "C0", "blocks": "C1"}


def plot_occupancy(name: str, registers: int):
    """Occupancy against block size for ``registers`` per thread (the kernel's shared memory), points coloured
    by what limits them; the kernel's own registers dotted; its launch block size from kernels.json starred."""
    from dtlab.plotting.axes import new_figure

    rec = kernel_record(name)
    fig, ax = new_figure(figsize=(8, 4.2))
    own = occupancy_curve(rec["registers"], rec["shared_static"])
    if registers != rec["registers"]:
        ax.plot([r["block"] for r in own], [r["occupancy"] for r in own], ":", color="grey",
                label=f"its own {rec['registers']} registers")
    curve = occupancy_curve(registers, rec["shared_static"])
    ax.plot([r["block"] for r in curve], [r["occupancy"] for r in curve], "-", color="black", lw=1,
            label=f"{registers} registers per thread")
    for factor, colour in LIMIT_COLOURS.items():
        pts = [r for r in curve if r["limited_by"] == factor and r["launchable"]]
        if pts:
            ax.scatter([r["block"] for r in pts], [r["occupancy"] for r in pts], color=colour, s=22, zorder=3,
                       label=f"limited by {factor}")
    for block, occ in rec["blocks"].items():
        ax.scatter([int(block)], [occ["occupancy"]], marker="*", s=220, facecolor="none", edgecolor="black",
                   zorder=4, label=f"kernels.json: block {block}, {occ['occupancy']:.0%}")
    ax.set(xlabel="threads per block", ylabel="occupancy (resident warps / 64)", ylim=(0, 1.05),
           title=f"{name}: {rec['shared_static']:,} B static shared memory, sm_90")
    ax.legend(fontsize=7, loc="upper right")
    return fig


def ridge_points() -> list[dict]:
    """The H200 roofs of :mod:`dtlab.gpu.model` and their ridge points (operations per DRAM byte)."""
    from dtlab.gpu.model import H200

    ints = H200["sms"] * H200["int_lanes_per_sm"] * H200["clock"]
    return [{"roof": what, "peak per second": peak, "ridge point (per byte)": peak / H200["bandwidth"]}
            for what, peak in (("float64 flops", H200["fp64"]), ("float32 flops", H200["fp32"]),
                               ("integer instructions", ints))]
