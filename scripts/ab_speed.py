"""A/B of two revisions of dtlab: every technique's fit and predict timed, the same models checked.

    python scripts/ab_speed.py OLD NEW [--rounds 5] [--repeats 1] [--only greedy,boosting] [--out ab.json]
                               [--scale tiny|default|large]

OLD and NEW are git revisions; NEW (or OLD) may be ``WORKTREE``, the working tree's dtlab/ as it is now.

Method.  Each revision's ``dtlab/`` is extracted (``git archive REV dtlab | tar -x``; WORKTREE: a copy without
``__pycache__``) into a private folder, ``<temp dir>/dtlab-ab-speed-<uid>/<sha>``, kept between runs so that
numba's on-disk cache (dtlab keys it on the tree's place and sources, see ``dtlab/_numba_cache.py``; ~50 MB per
commit under ``~/.cache/dtlab/numba``) is reused: delete both to reclaim the space.
Every measurement is a fresh ``python`` process with ``PYTHONPATH=<that folder>`` (the child checks that
``dtlab.__file__`` lies there) running one technique's cases: per case one untimed warm-up fit + predict (its
times are reported as the "first call": compilation or cache loading), then ``--repeats`` timed fits and
predicts (the process's time is their median), and a SHA-256 digest of each call's model (its predictions on
fixed rows as bytes, and for linear models ``coef_``/``intercept_``).
The revisions alternate: for each round, for each technique, both revisions run
back to back, the one going first swapped every round, so that drifts of the machine's load hit both alike.
The table gives per case and phase OLD and NEW median [min, max] over the rounds, NEW/OLD of the medians,
NEW/OLD of the medians of the process CPU time of the same calls (``time.process_time``: all the process's
threads; with one numba thread, time the call computed rather than waited for a core another process held),
"same model" (every digest of both revisions equal in every round) and the first-call seconds of each,
median (max): the first process on a commit not seen before compiles every kernel it reaches (minutes on
2 cores; the max shows it), later ones load numba's cache.  The data are made here with seeded numpy
generators (nothing is downloaded), so both revisions see the same bytes.  Exit code 1 when any model differs.

The allocator.  The children inherit the environment.  A predict of a few milliseconds right after a fit can
take 1-2 ms more or less depending on glibc's malloc state, which the previous fit's frees set (its dynamic
mmap threshold decides whether the predict's output and copied input come from the heap or from fresh,
page-faulting mmaps).  Two revisions that allocate different temporaries in the fit then differ in the predict
with the predict's code unchanged (seen: greedy ``predict_proba`` 2.0x "slower" after the greedy grower's
rewrite, equal in a loop of predicts).  To time the code rather than the allocator's state, run the A/B with
``MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296`` (glibc: large blocks from the heap,
never returned) and keep the default-allocator run beside it.
"""

import argparse
import datetime
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

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
TECHNIQUES = ("greedy", "evolution", "linear", "boosting", "inference")
MARK = "AB_SPEED_RESULT "
#: (rows, columns) etc. per scale.  default: a 5-round A/B of all techniques, once compiled, estimated at ~13 minutes
#: on 2 cores under a load of ~6 (one process per technique timed), less when quiet; a commit's first run adds its
#: compilation (~10 minutes).  tiny: 2 rounds in ~2.5 minutes under that load, nearly all process start-up.
SCALES = {
    "tiny": dict(greedy=(2_000, 10), naive=(400, 5), depth=8, gdt=(500, 5), linear=(3_000, 120),
                 gbdt=(5_000, 10), trees=5, rf=(2_000, 5), predict=5_000),
    "default": dict(greedy=(20_000, 20), naive=(2_000, 10), depth=12, gdt=(2_000, 30), linear=(30_000, 120),
                    gbdt=(50_000, 20), trees=30, rf=(10_000, 20), predict=50_000),
    # large: most calls 0.1-8 s, so that a 3% difference stands above a scheduler tick and the allocator's state
    # (default-scale calls of 1-20 ms moved 0.8-1.4x between runs with their code unchanged); ~25 minutes for 5
    # rounds x 3 calls on 2 quiet cores.  The naive regressor stays small (O(n^2) per feature and node), so its
    # predict is still a few ms: the same predict code is timed at size by the incremental and vectorized cases.
    "large": dict(greedy=(100_000, 20), naive=(6_000, 10), depth=12, gdt=(50_000, 30), linear=(600_000, 120),
                  gbdt=(300_000, 20), trees=30, rf=(100_000, 20), predict=1_000_000),
}


# ------------------------------------------------------------------------------------------ data (child side)
def dense(n, d, seed, task):
    """Seeded float32 features; y a noisy nonlinear target (regression) or its sign (binary labels 0/1)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + np.sin(X[:, min(3, d - 1)]) + 0.3 * rng.standard_normal(n)
    return X, (y if task == "regression" else (y > 0).astype(np.int64))


def a9a_like(n, d, seed):
    """a9a's shape: binary features, ~14 ones per row, CSR float64; labels from a noisy linear rule."""
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.random((n, d)).argsort(axis=1)[:, :14], axis=1).ravel()
    X = sp.csr_matrix((np.ones(n * 14), cols, np.arange(0, n * 14 + 1, 14)), shape=(n, d))
    y = (X @ rng.standard_normal(d) + rng.standard_normal(n) > 0).astype(np.int64)
    return X, y


def cases(technique, s):
    """name -> (fit: () -> fitted model, predict: model -> array, attributes digested besides the array)."""
    out, rows, depth = {}, s["predict"], s["depth"]
    if technique == "greedy":
        from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor

        X, y = dense(*s["greedy"], 1, "regression")
        Xn, yn = dense(*s["naive"], 2, "regression")  # naive is O(n^2) per feature and node: fewer rows
        Xc, yc = dense(*s["greedy"], 3, "classification")
        w = np.random.default_rng(4).uniform(0.5, 2.0, len(y))
        tree = lambda cls, **kw: cls(max_depth=depth, random_state=0, **kw)
        for m, Xm, ym in (("naive", Xn, yn), ("incremental", X, y), ("vectorized", X, y)):
            out[f"regressor {m}"] = (lambda m=m, Xm=Xm, ym=ym: tree(DecisionTreeRegressor, method=m).fit(Xm, ym),
                                     lambda model, Xm=Xm: model.predict(Xm), ())
        out["regressor sample_weight"] = (lambda: tree(DecisionTreeRegressor).fit(X, y, sample_weight=w),
                                          lambda model: model.predict(X), ())
        out["classifier gini"] = (lambda: tree(DecisionTreeClassifier).fit(Xc, yc),
                                  lambda model: model.predict_proba(Xc), ())
    elif technique == "evolution":
        from dtlab.datasets import chess3x3
        from dtlab.evolution import GDTClassifier

        X, y = chess3x3(s["gdt"][0], noise_attrs=0, seed=5)
        out["GDT chess3x3"] = (lambda: GDTClassifier(max_generations=s["gdt"][1], random_state=0).fit(X, y),
                               lambda model: model.predict_proba(X), ())
    elif technique == "linear":
        from dtlab.linear import TronLinearSVC, TronLogisticRegression

        Xs, y = a9a_like(*s["linear"], 6)
        for cls in (TronLogisticRegression, TronLinearSVC):  # fit_intercept: both revisions take it
            for kind, X in (("sparse", Xs), ("dense", Xs.toarray())):
                out[f"{cls.__name__} {kind}"] = (lambda cls=cls, X=X: cls(C=1.0, fit_intercept=False).fit(X, y),
                                                 lambda model, X=X: model.predict(X), ("coef_", "intercept_"))
    elif technique in ("boosting", "inference"):
        from dtlab.boosting import GBDTClassifier, GBDTRegressor

        gbdt = lambda cls, m: cls(n_estimators=s["trees"], max_depth=6, split_method=m, random_state=0)
        X, y = dense(*s["gbdt"], 7, "classification")
        if technique == "boosting":  # split_method always given: its default went from "exact" to "auto"
            Xr, yr = dense(*s["gbdt"], 8, "regression")
            for m in ("exact", "hist"):
                out[f"classifier {m}"] = (lambda m=m: gbdt(GBDTClassifier, m).fit(X, y),
                                          lambda model: model.predict_proba(X[:rows]), ())
            out["regressor hist"] = (lambda: gbdt(GBDTRegressor, "hist").fit(Xr, yr),
                                     lambda model: model.predict(Xr[:rows]), ())
            return out
        from sklearn.ensemble import RandomForestClassifier

        from dtlab.inference import Forest

        Xp = dense(rows, X.shape[1], 10, "classification")[0]
        rf = RandomForestClassifier(n_estimators=s["rf"][1], max_depth=10, random_state=0, n_jobs=1)
        for name, model in (("Forest(GBDT hist)", gbdt(GBDTClassifier, "hist").fit(X, y)),
                            ("Forest(sklearn RandomForest)", rf.fit(X[:s["rf"][0]], y[:s["rf"][0]]))):
            out[name] = (lambda model=model: Forest(model), lambda forest: forest.predict(Xp), ())  # "fit": build
    return out


def child(technique, scale, repeats):
    """Run one technique's cases in this process; print one JSON line of times and digests.

    Per case: one warm-up fit + predict ("first"), then ``repeats`` timed fit + predict pairs; "timed" is their
    median fit and median predict (one call of a few milliseconds is at the mercy of a scheduler tick)."""
    import dtlab

    expected = Path(os.environ["AB_SPEED_TREE"]).resolve()
    if Path(dtlab.__file__).resolve().parent.parent != expected:
        sys.exit(f"dtlab imported from {dtlab.__file__}, not from {expected}")
    result = {}
    for name, (fit, predict, attrs) in cases(technique, SCALES[scale]).items():
        times, cpu, digests = [], [], set()
        for _ in range(1 + repeats):  # the warm-up, then the timed calls
            c0, t0 = time.process_time(), time.perf_counter()
            model = fit()
            c1, t1 = time.process_time(), time.perf_counter()
            out = predict(model)
            times.append((t1 - t0, time.perf_counter() - t1))
            cpu.append((c1 - c0, time.process_time() - c1))
            h = hashlib.sha256(np.ascontiguousarray(out).tobytes())
            for a in attrs:
                h.update(np.ascontiguousarray(getattr(model, a)).tobytes())
            digests.add(h.hexdigest())
        timed = [statistics.median(t[i] for t in times[1:]) for i in (0, 1)]
        timed_cpu = [statistics.median(t[i] for t in cpu[1:]) for i in (0, 1)]
        # a model that differs between calls of one process shows as two digests joined: never "the same model"
        result[name] = dict(first=times[0], timed=timed, timed_cpu=timed_cpu, calls=times[1:],
                            digest="+".join(sorted(digests)))
    print(MARK + json.dumps(result))


# ------------------------------------------------------------------------------------------- parent side
def git(*args):
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def extract(rev, base):
    """The folder holding ``rev``'s dtlab/ (extracted once per commit); (folder, sha, label for the report)."""
    if rev == "WORKTREE":
        folder, sha = base / "worktree", git("rev-parse", "HEAD")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(REPO / "dtlab", folder / "dtlab", ignore=shutil.ignore_patterns("__pycache__"))
        dirty = bool(git("status", "--porcelain", "--", "dtlab"))
        return folder, sha, f"WORKTREE on {sha[:10]}" + (" (dtlab/ edited)" if dirty else "")
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    folder = base / sha
    if not (folder / "dtlab").is_dir():
        part = base / f"{sha}.part"
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir()
        archive = subprocess.run(["git", "archive", sha, "dtlab"], cwd=REPO, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(part)], input=archive.stdout, check=True)
        part.rename(folder)
    return folder, sha, f"{rev} = {sha[:10]}"


def private_base():
    """A folder of this user's, writable by no one else (its trees' code is run, their numba pickles loaded)."""
    base = Path(tempfile.gettempdir()) / f"dtlab-ab-speed-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    st = base.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        sys.exit(f"{base} is not private to this user: remove it or fix its owner and mode")
    return base


def run_child(script, folder, technique, scale, repeats):
    """One fresh process on ``folder``'s dtlab (numba's cache: dtlab's own folder for that tree)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(PYTHONPATH=str(folder), AB_SPEED_TREE=str(folder))
    proc = subprocess.run([sys.executable, str(script), "--child", technique, "--scale", scale,
                           "--repeats", str(repeats)],
                          cwd=folder, env=env, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode or not lines:
        sys.exit(f"{technique} on {folder.name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK):])


spread = lambda xs: dict(median=statistics.median(xs), min=min(xs), max=max(xs), runs=xs)
fmt = lambda x: f"{x['median']:.4f} [{x['min']:.4f}, {x['max']:.4f}]"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", nargs="?", help="git revision, or WORKTREE (the working tree's dtlab/)")
    p.add_argument("new", nargs="?", help="git revision, or WORKTREE")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeats", type=int, default=1, help="timed calls per case and process (their median is the "
                   "process's time; default 1: one call)")
    p.add_argument("--only", default=",".join(TECHNIQUES), help="comma-separated subset of " + ",".join(TECHNIQUES))
    p.add_argument("--out", type=Path)
    p.add_argument("--scale", choices=tuple(SCALES), default="default")
    p.add_argument("--child", choices=TECHNIQUES, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return child(a.child, a.scale, a.repeats)
    techniques = [t.strip() for t in a.only.split(",") if t.strip()]
    if not (a.old and a.new) or set(techniques) - set(TECHNIQUES) or a.rounds < 1 or a.repeats < 1:
        p.error(f"need OLD and NEW, --rounds >= 1, --repeats >= 1 and --only among {', '.join(TECHNIQUES)}")
    base, load_before = private_base(), os.getloadavg()
    trees = {"OLD": extract(a.old, base), "NEW": extract(a.new, base)}
    source = Path(__file__).read_bytes()  # the children run this copy: an edit during the A/B changes nothing
    script = base / f"ab_speed-{hashlib.sha256(source).hexdigest()[:12]}.py"
    script.write_bytes(source)
    runs = {(rev, t): [] for rev in trees for t in techniques}
    for r in range(a.rounds):
        for t in techniques:
            for rev in (("OLD", "NEW") if r % 2 == 0 else ("NEW", "OLD")):
                runs[rev, t].append(run_child(script, trees[rev][0], t, a.scale, a.repeats))
                print(f"round {r + 1}/{a.rounds} {t:9} {rev} done", file=sys.stderr, flush=True)
    rows, differs = [], []
    for t in techniques:
        for case in runs["OLD", t][0]:
            digests = {rev: [run[case]["digest"] for run in runs[rev, t]] for rev in trees}
            same = len(set(digests["OLD"] + digests["NEW"])) == 1
            if not same:
                unstable = [rev for rev in trees if len(set(digests[rev])) > 1]
                differs.append(f"{t}: {case}" + (f" (varies between {' and '.join(unstable)}'s own rounds)"
                                                 if unstable else ""))
            for i, phase in enumerate(("fit", "predict")):
                row = dict(technique=t, case=case, phase=phase, same_model=same, digests=digests)
                for rev in trees:
                    row[rev] = spread([run[case]["timed"][i] for run in runs[rev, t]])
                    row[rev + "_first"] = spread([run[case]["first"][i] for run in runs[rev, t]])
                row["ratio"] = row["NEW"]["median"] / row["OLD"]["median"] if row["OLD"]["median"] else float("nan")
                if all("timed_cpu" in run[case] for rev in trees for run in runs[rev, t]):
                    for rev in trees:
                        row[rev + "_cpu"] = spread([run[case]["timed_cpu"][i] for run in runs[rev, t]])
                    old_cpu = row["OLD_cpu"]["median"]
                    row["ratio_cpu"] = row["NEW_cpu"]["median"] / old_cpu if old_cpu else float("nan")
                rows.append(row)
    load_after = os.getloadavg()
    print(f"OLD: {trees['OLD'][2]}   NEW: {trees['NEW'][2]}   scale {a.scale}, {a.rounds} rounds x {a.repeats} calls, "
          f"{os.cpu_count()} CPUs, load {load_before[0]:.2f} -> {load_after[0]:.2f}")
    print(f"{'technique':10} {'case':29} {'phase':7} {'OLD s: median [min, max]':28} {'NEW s: median [min, max]':28} "
          f"{'NEW/OLD':>7} {'CPU N/O':>7}  same  first call s, median (max): OLD / NEW")
    for row in rows:
        first = " / ".join(f"{row[rev + '_first']['median']:.3f} ({row[rev + '_first']['max']:.2f})" for rev in trees)
        print(f"{row['technique']:10} {row['case']:29} {row['phase']:7} {fmt(row['OLD']):28} {fmt(row['NEW']):28} "
              f"{row['ratio']:7.3f} {row.get('ratio_cpu', float('nan')):7.3f}  "
              f"{'yes' if row['same_model'] else 'NO':4}  {first}")
    if differs:
        print("models differ: " + "; ".join(differs))
    if a.out:
        report = dict(old=dict(rev=a.old, sha=trees["OLD"][1], label=trees["OLD"][2]),
                      new=dict(rev=a.new, sha=trees["NEW"][1], label=trees["NEW"][2]),
                      date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      scale=a.scale, sizes=SCALES[a.scale], rounds=a.rounds, repeats=a.repeats,
                      cpu_count=os.cpu_count(),
                      loadavg_before=load_before, loadavg_after=load_after, python=sys.version.split()[0],
                      rows=rows, models_differ=differs)
        a.out.write_text(json.dumps(report, indent=1) + "\n")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
