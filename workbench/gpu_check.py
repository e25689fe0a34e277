"""Every kernel measured on a GPU against its H200 model: the step of ``make gpu-check`` that checks the model.

Runs one workload per technique (a forest's prediction by each method, a
tree walk, boosting fits by histograms and exact search, a greedy tree, a GDT
evaluation) with every launch recorded and timed by CUDA events
(:func:`dtlab.gpu.launch.recording`), after an untimed warm-up run that
compiles the kernels; then prints, per kernel, the measured time beside the
modelled one (:mod:`dtlab.gpu.model`, with the compile check's occupancy) and writes
both to ``kernels_measured.json``.

``--dry-run`` runs the same code on tiny inputs without a GPU (numba's
simulator): the launches are recorded and modelled, nothing is measured, and
the table says so -- the test of this module's logic.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

#: Rows of each workload on a GPU, and in a dry run.
SIZES = {"gpu": {"predict": 1_000_000, "boost": 200_000, "greedy": 100_000, "gdt": 200_000},
         "dry-run": {"predict": 64, "boost": 40, "greedy": 40, "gdt": 48}}


def _inference(n: int, rng) -> None:
    from dtlab.inference import Forest
    from dtlab.trees.leaves import apply
    from dtlab.trees.synthetic import random_grid_tree

    grid = np.linspace(-2, 2, 17)
    trees = [random_grid_tree(rng, 8, 8 if n > 1000 else 3, grid, p_split=0.8) for _ in range(100 if n > 1000 else 3)]
    forest = Forest(trees, combine="sum")
    X = rng.normal(size=(n, 8)).astype(np.float32)
    for method in ("traversal", "bitmask", "quickscorer"):
        forest.predict(X, method=method, backend="cuda")
    apply(trees[0], X, backend="cuda")


def _boosting(n: int, rng) -> None:
    from dtlab.boosting import GBDTRegressor

    d = 28 if n > 1000 else 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2).astype(np.float32)
    for method in ("hist", "exact"):
        GBDTRegressor(n_estimators=3, max_depth=6 if n > 1000 else 2, split_method=method, backend="cuda").fit(X, y)


def _greedy(n: int, rng) -> None:
    from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor

    d = 10 if n > 1000 else 3
    X = rng.integers(0, 50, size=(n, d)).astype(np.float32)
    y = X[:, 0] * 2 + X[:, 1] + rng.integers(0, 5, n)
    depth = 8 if n > 1000 else 2
    DecisionTreeRegressor(max_depth=depth, backend="cuda").fit(X, y)
    for criterion in ("gini", "entropy"):
        DecisionTreeClassifier(criterion=criterion, max_depth=depth, backend="cuda").fit(X, (y % 3).astype(int))


def _gdt(n: int, rng) -> None:
    from dtlab.evolution.evaluators.cuda import CudaEvaluator
    from dtlab.evolution.individual import pack
    from dtlab.evolution.testing import random_individuals

    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int32)
    batch = pack(random_individuals(rng, X[:2000], y[:2000], 2, 64 if n > 1000 else 3,
                                    max_depth=8 if n > 1000 else 3))
    ev = CudaEvaluator(X, y, 2, n_devices=1, leaf_search="walk")
    try:
        ev.evaluate(batch, 7)
    finally:
        ev.close()


WORKLOADS = {"inference": (_inference, "predict"), "boosting": (_boosting, "boost"),
             "greedy": (_greedy, "greedy"), "evolution": (_gdt, "gdt")}


def run(dry_run: bool, only=None) -> list[dict]:
    """Run the workloads (a warm-up, then recorded and timed); per kernel the measured and modelled seconds."""
    from dtlab.gpu.launch import recording
    from dtlab.gpu.model import load_table, model_launch

    sizes = SIZES["dry-run" if dry_run else "gpu"]
    launches = []
    for name, (work, size) in WORKLOADS.items():
        if only and name not in only:
            continue
        if not dry_run:  # compile every kernel the workload uses, untimed
            work(min(sizes[size], 5000), np.random.default_rng(0))
        with recording(keep_args=True, timed=not dry_run) as log:
            work(sizes[size], np.random.default_rng(0))
        launches.extend(log)
    table = load_table()
    rows: dict[str, dict] = {}
    for item in launches:
        m = model_launch(item, table)
        row = rows.setdefault(item.name, {"kernel": item.name, "launches": 0, "modelled_s": 0.0,
                                          "measured_s": None, "bound": None, "threads": 0})
        row["launches"] += 1
        row["threads"] += item.threads
        if m is not None:
            row["modelled_s"] += m["seconds"]
            row["bound"] = m["bound"]
        if item.seconds is not None:
            row["measured_s"] = (row["measured_s"] or 0.0) + item.seconds
    return list(rows.values())


def report(rows: list[dict]) -> str:
    """The table ``make gpu-check`` prints: measured against modelled, per kernel."""
    lines = [f"{'kernel':<30} {'launches':>8} {'measured ms':>12} {'modelled ms':>12} {'ratio':>7}  bound"]
    for r in rows:
        measured = "-" if r["measured_s"] is None else f"{r['measured_s'] * 1e3:.3f}"
        ratio = "-" if r["measured_s"] is None or not r["modelled_s"] else f"{r['measured_s'] / r['modelled_s']:.2f}"
        lines.append(f"{r['kernel']:<30} {r['launches']:>8} {measured:>12} {r['modelled_s'] * 1e3:>12.3f} {ratio:>7}  "
                     f"{r['bound'] or '-'}")
    if all(r["measured_s"] is None for r in rows):
        lines.append("(dry run: nothing measured -- the modelled times are the H200 model's, not a measurement)")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("figures/gpu"))
    parser.add_argument("--dry-run", action="store_true", help="tiny inputs under numba's simulator, no timing")
    parser.add_argument("--only", nargs="+", choices=sorted(WORKLOADS))
    args = parser.parse_args(argv)
    from dtlab.backend import cuda_simulator_enabled, real_gpu_available

    if args.dry_run != cuda_simulator_enabled():
        print("use --dry-run with NUMBA_ENABLE_CUDASIM=1, and a real run with NUMBA_ENABLE_CUDASIM=0", file=sys.stderr)
        return 2
    if not args.dry_run and not real_gpu_available():
        print("no usable GPU here: python -m workbench.gpu_check measures kernels on a GPU (or --dry-run)",
              file=sys.stderr)
        return 2
    start = time.perf_counter()
    rows = run(args.dry_run, args.only)
    print(report(rows))
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"dry_run": args.dry_run, "model": "dtlab.gpu.model.H200 (modelled, not measured)", "kernels": rows,
           "seconds": round(time.perf_counter() - start, 1)}
    if not args.dry_run:
        from dtlab.backend import describe

        doc["device"] = describe().get("gpus")
    (args.out / ("kernels_dry_run.json" if args.dry_run else "kernels_measured.json")).write_text(
        json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
