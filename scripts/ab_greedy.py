"""A/B of two revisions of dtlab.greedy: fit times of the regressor's three methods and the classifier, without and
with sample weights, and a check that both revisions grow the same trees.

    python scripts/ab_greedy.py OLD NEW [--rounds 5] [--fits 3] [--rows 20000] [--features 20] [--naive-rows 1500]
                                        [--depth 8]

OLD and NEW are git revisions, or ``WORKTREE`` (the working tree's dtlab/ as it is now).  Each revision's
``dtlab/`` is extracted (``git archive REV dtlab | tar -x``) into a private folder under the system temp dir, kept
between runs per commit so that numba's on-disk cache is reused.  Each round runs one fresh ``python`` per
revision (``PYTHONPATH`` = its folder; the child checks where dtlab came from), the one going first swapped every
round; a child fits every case once untimed (compilation or cache loading), then ``--fits`` times timed, and
prints the times and a SHA-256 digest of each fitted ``tree_`` (``feature``, ``threshold``, ``value``, ``left``,
``right`` as bytes).  Cases: ``DecisionTreeRegressor`` with method naive (on ``--naive-rows`` rows: the method is
O(n^2) per node), incremental and vectorized, and ``DecisionTreeClassifier`` (Gini, 3 classes), each unweighted and
with weights uniform in [0.5, 2]; ``backend="cpu"``, the machine's threads.  The table gives per case the median
[min, max] of every timed fit's wall time of each revision, NEW/OLD of the medians, the same of the fits' process
CPU times (less sensitive to other work on the machine than wall time while a fit runs on one thread), and
whether every digest of both revisions is the same.  Exit code 1 when a tree differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MARK = "AB_GREEDY_RESULT "
METHODS = ("naive", "incremental", "vectorized")


def child(a):
    """Fit every case (one warm-up, then ``a.fits`` timed fits); print one JSON line of times and digests."""
    import numpy as np

    import dtlab
    from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor

    if Path(dtlab.__file__).resolve().parent.parent != Path(os.environ["AB_GREEDY_TREE"]).resolve():
        sys.exit(f"dtlab imported from {dtlab.__file__}, not from {os.environ['AB_GREEDY_TREE']}")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, a.features)).astype(np.float32)
    y = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + np.sin(X[:, 3 % a.features]) + 0.3 * rng.standard_normal(a.rows)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    w = rng.uniform(0.5, 2.0, a.rows)
    cases = {}
    for weighted in (False, True):
        tag = " weighted" if weighted else ""
        for m in METHODS:
            n = a.naive_rows if m == "naive" else a.rows
            cases[f"regressor {m}{tag}"] = (
                lambda m=m: DecisionTreeRegressor(method=m, max_depth=a.depth, random_state=0, backend="cpu"),
                X[:n], y[:n], w[:n] if weighted else None)
        cases[f"classifier gini{tag}"] = (
            lambda: DecisionTreeClassifier(max_depth=a.depth, random_state=0, backend="cpu"), X, labels,
            w if weighted else None)
    out = {}
    for name, (make, Xc, yc, wc) in cases.items():
        times = []
        for i in range(1 + a.fits):
            model = make()
            t0, c0 = time.perf_counter(), time.process_time()
            model.fit(Xc, yc, sample_weight=wc)
            if i:
                times.append((time.perf_counter() - t0, time.process_time() - c0))
        t = model.tree_
        h = hashlib.sha256()
        for arr in (t.feature, t.threshold, t.value, t.left, t.right):
            h.update(np.ascontiguousarray(arr).tobytes())
        out[name] = dict(times=times, digest=h.hexdigest(), nodes=int(len(t.feature)))
    print(MARK + json.dumps(out))


def git(*args):
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()

def extract(rev, base):
    """The folder holding ``rev``'s dtlab/ and a label for the report."""
    if rev == "WORKTREE":
        folder = base / "worktree"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(REPO / "dtlab", folder / "dtlab", ignore=shutil.ignore_patterns("__pycache__"))
        return folder, f"WORKTREE on {git('rev-parse', '--short', 'HEAD')}"
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    folder = base / sha
    if not (folder / "dtlab").is_dir():
        part = base / f"{sha}.part"
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir()
        archive = subprocess.run(["git", "archive", sha, "dtlab"], cwd=REPO, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(part)], input=archive.stdout, check=True)
        part.rename(folder)
    return folder, f"{rev} = {sha[:10]}"


def run_child(folder, argv):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(PYTHONPATH=str(folder), AB_GREEDY_TREE=str(folder))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", *argv], cwd=folder, env=env,
                          capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode or not lines:
        sys.exit(f"child in {folder} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK):])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", nargs="?")
    p.add_argument("new", nargs="?")
    for flag, default in (("rounds", 5), ("fits", 3), ("rows", 20_000), ("features", 20), ("naive-rows", 1_500),
                          ("depth", 8)):
        p.add_argument(f"--{flag}", type=int, default=default)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return child(a)
    if not (a.old and a.new) or a.rounds < 1 or a.fits < 1:
        p.error("need OLD and NEW, --rounds >= 1 and --fits >= 1")
    base = Path(tempfile.gettempdir()) / f"dtlab-ab-greedy-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    if base.stat().st_uid != os.getuid() or base.stat().st_mode & 0o022:
        sys.exit(f"{base} is not private to this user")
    trees = {"OLD": extract(a.old, base), "NEW": extract(a.new, base)}
    sizes = [f"--{k.replace('_', '-')}={getattr(a, k)}" for k in ("fits", "rows", "features", "naive_rows", "depth")]
    runs, load = {"OLD": [], "NEW": []}, [os.getloadavg()[0]]
    for r in range(a.rounds):
        for rev in ("OLD", "NEW") if r % 2 == 0 else ("NEW", "OLD"):
            runs[rev].append(run_child(trees[rev][0], sizes))
            print(f"round {r + 1}/{a.rounds} {rev} done", file=sys.stderr, flush=True)
    load.append(os.getloadavg()[0])
    print(f"OLD: {trees['OLD'][1]}   NEW: {trees['NEW'][1]}   {a.rounds} rounds x {a.fits} fits, {a.rows} x "
          f"{a.features} (naive {a.naive_rows} rows), max_depth {a.depth}, {os.cpu_count()} CPUs, load "
          f"{load[0]:.2f} -> {load[1]:.2f}")
    print(f"{'case':31} {'nodes':>5}  {'OLD s, median [min, max]':27} {'NEW s, median [min, max]':27} NEW/OLD  "
          f"(cpu)  same")
    differs = []
    for case in runs["OLD"][0]:
        stats = {}
        for rev in runs:
            wall, cpu = zip(*[t for run in runs[rev] for t in run[case]["times"]])
            stats[rev] = (statistics.median(wall), min(wall), max(wall), statistics.median(cpu))
        same = len({run[case]["digest"] for rev in runs for run in runs[rev]}) == 1
        differs += [] if same else [case]
        cell = {rev: f"{s[0]:.4f} [{s[1]:.4f}, {s[2]:.4f}]" for rev, s in stats.items()}
        print(f"{case:31} {runs['OLD'][0][case]['nodes']:5}  {cell['OLD']:27} {cell['NEW']:27} "
              f"{stats['NEW'][0] / stats['OLD'][0]:7.3f} {stats['NEW'][3] / stats['OLD'][3]:6.3f}  "
              f"{'yes' if same else 'NO'}")
    if differs:
        print("trees differ: " + "; ".join(differs))
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
