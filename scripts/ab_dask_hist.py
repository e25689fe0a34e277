"""A/B timing of dtlab hist on Dask: two versions of the package, each on its own LocalCluster, fits alternated.

Usage: python scripts/ab_dask_hist.py OLD_TREE NEW_TREE [--rows N] [--trees T] [--repeats R] [--out FILE]

Each tree is a checkout of the repository (e.g. ``git worktree add /tmp/old <commit>``).  A child process per
tree imports that tree's ``dtlab`` (PYTHONPATH), starts a ``LocalCluster`` of 2 worker processes x 1 thread
(``boosting_dask``'s setting), persists the benchmark's synthetic rows (:func:`dtlab.boosting.datasets.synthetic`,
the same seed) and fits ``GBDTClassifier(split_method="hist", executor=client)`` when asked.  After one untimed
fit each (compilation), the fits alternate old, new, old, new, ...; each fit's wall time is the user's
``fit`` call.  Prints and writes the medians and spreads, the loop each fit took and its AUC.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time
import dtlab
import dask.array as da
from sklearn.metrics import roc_auc_score
from dtlab.boosting import GBDTClassifier
from dtlab.boosting.datasets import holdout_split, synthetic
from dtlab.distributed.cluster import local_cluster

rows, trees = int(sys.argv[1]), int(sys.argv[2])
X, y = synthetic(rows + rows // 4, 28, seed=0)
X_train, y_train, X_test, y_test = holdout_split(X, y, fraction=0.2)
chunk = -(-X_train.shape[0] // 8)
with local_cluster(n_workers=2, threads_per_worker=1, processes=True) as client:
    Xd = da.from_array(X_train, chunks=(chunk, -1)).persist()
    yd = da.from_array(y_train, chunks=chunk).persist()
    print(json.dumps({"ready": dtlab.__file__}), flush=True)
    for line in sys.stdin:
        start = time.perf_counter()
        m = GBDTClassifier(n_estimators=trees, max_depth=6, learning_rate=0.3, split_method="hist",
                           max_bins=256, executor=client).fit(Xd, yd)
        seconds = time.perf_counter() - start
        auc = roc_auc_score(y_test, m.predict_proba(X_test)[:, 1])
        print(json.dumps({"seconds": seconds, "loop": m.dask_stats_["loop"], "auc": auc}), flush=True)
"""


def _start(tree: Path, rows: int, trees: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(rows), str(trees)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env, cwd=str(tree))
    ready = json.loads(proc.stdout.readline())
    if not ready["ready"].startswith(str(tree.resolve())):
        raise SystemExit(f"{tree}: the child imported {ready['ready']}")
    return proc


def _fit(proc: subprocess.Popen) -> dict:
    proc.stdin.write("fit\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    procs = {"old": _start(args.old, args.rows, args.trees), "new": _start(args.new, args.rows, args.trees)}
    runs = {k: [] for k in procs}
    try:
        for k in procs:
            _fit(procs[k])  # compilation on the workers: untimed
        for _ in range(args.repeats):
            for k in procs:
                runs[k].append(_fit(procs[k]))
    finally:
        for p in procs.values():
            p.stdin.close()
            p.wait(timeout=120)
    summary = {"rows": args.rows, "trees": args.trees, "repeats": args.repeats,
               "trees_compared": {k: str(v) for k, v in (("old", args.old), ("new", args.new))}}
    for k, rs in runs.items():
        s = [r["seconds"] for r in rs]
        summary[k] = {"median": statistics.median(s), "min": min(s), "max": max(s), "seconds": s,
                      "loops": sorted({r["loop"] for r in rs}), "auc": rs[-1]["auc"]}
    summary["new_over_old_median"] = summary["new"]["median"] / summary["old"]["median"]
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
