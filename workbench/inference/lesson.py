"""The computations of notebook 06 as a lesson: the leaf-bitmask method of JP5863426B2 stepped by hand, why
unbalanced trees need a base per level, and time per row against depth and threads (predict, then run).

* :func:`work_per_tree`: what each method does per row and tree of depth ``D`` -- the walk's ``D`` dependent
  tests, the patent's ``2^D - 1`` independent ones, the identifiers' bits (its fourth embodiment: one bit per
  leaf) and bytes.
* :func:`patent_picture`: the patent's Fig. 1 tree (its node numbers 11, 121, ..., 150), every decision node's
  selected child for the patent's row, and the leaves still possible after the AND of the first levels' ORs.
* :func:`chain_tree` / :func:`unbalanced_steps`: a tree whose right children are leaves, stepped with and
  without each level's base of leaves that ended above it.
* :func:`depth_and_threads`: nanoseconds per tree and row of traversal, bitmask and QuickScorer against depth,
  and the speedup on 1 .. the machine's cores, with the thread counts beyond them modelled (Amdahl's law
  fitted to the measured counts), never measured; :func:`recorded_speedups` reads the static figure's.
* :func:`library_agreement`: one ``Forest`` over an XGBoost, a LightGBM and a scikit-learn model, every method
  against each library's own raw prediction.

The library is reached through :class:`dtlab.inference.Forest`, :mod:`dtlab.inference.reference` (the plain
references) and :class:`dtlab.trees.FlatTree`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from dtlab.inference import PARALLEL_MIN_TREE_ROWS, Forest
from dtlab.inference.reference import bitmask_steps, identifier_string
from dtlab.trees import FlatTree
from workbench.inference.experiments import (
    THREAD_FOREST,
    THREAD_ROWS,
    random_rows,
    throughput_vs_threads,
    time_vs_depth,
)
from workbench.inference.patent import patent_example
from workbench.timing import amdahl_fit, load_average, machine_threads

METHODS = ("traversal", "bitmask", "quickscorer")
RESULTS = Path(__file__).resolve().parents[2] / "figures" / "results.json"


# ------------------------------------------------------------------ the idea
def work_per_tree(depths) -> list[dict[str, Any]]:
    """Per complete binary tree of each depth ``D``: the tests a walk makes one after another (``D``), the tests
    the patent makes side by side (every decision node, ``2^D - 1``), the bits of an identifier (one per leaf,
    the patent's fourth embodiment), the 64-bit words they fill, and the bytes of the identifiers dtlab keeps
    per tree (a left and a right child's identifier per decision node, as ``Forest.layout("bitmask", ...)``).

    Returns
    -------
    list of dict, one per depth: ``depth, leaves, walk: tests in a row, bitmask: tests side by side,
    bits per identifier, 64-bit words, identifier bytes per tree``
    """
    out = []
    for depth in depths:
        depth = int(depth)
        if depth < 1:
            raise ValueError(f"depths must be >= 1, got {depth}")
        leaves = 2**depth
        words = -(-leaves // 64)
        out.append({"depth": depth, "leaves": leaves, "walk: tests in a row": depth,
                    "bitmask: tests side by side": leaves - 1, "bits per identifier": leaves,
                    "64-bit words": words, "identifier bytes per tree": 2 * (leaves - 1) * words * 8})
    return out


# ------------------------------------------------------------------ the patent's example, drawn
def patent_number(node: int) -> int:
    """The patent's reference numeral of heap node ``node`` of Fig. 1: the root is 11, then 121, 122 (level 1),
    123-126 (level 2), 127-134 (level 3) and the leaves 135-150, left to right (so the leaf reached is 141)."""
    if not 0 <= node <= 30:
        raise ValueError(f"Fig. 1 has heap nodes 0 .. 30, got {node}")
    return 11 if node == 0 else 120 + node


def patent_picture() -> dict[str, Any]:
    """The Fig. 1 tree as a picture: each node's place, its numeral and level; each decision node's selected
    child for the patent's row; the walk's path; the leaves still possible after each step.

    Returns
    -------
    dict: ``nodes`` (list of {"node", "numeral", "level", "x", "leaf", "class"}; ``x`` is the leaf position
    0 .. 15 from the left, a decision node's the middle of its leaves'), ``children`` {node: (left, right)},
    ``selected`` {decision node: child}, ``path`` (heap nodes root to leaf), ``candidates`` (list over
    ``k = 0 .. 4`` of the leaf positions whose bit survives the AND of the ORs of levels ``0 .. k-1``),
    ``reached`` (the leaf position the walk ends on)
    """
    tree, x = patent_example()
    left, right = np.asarray(tree.left), np.asarray(tree.right)
    n = len(left)
    children = {h: (int(left[h]), int(right[h])) for h in range(n) if left[h] != -1}
    leaves = [h for h in range(n) if left[h] == -1]  # heap order puts the leaves left to right
    place = {h: float(k) for k, h in enumerate(leaves)}
    for h in sorted(children, reverse=True):  # children before parents
        place[h] = (place[children[h][0]] + place[children[h][1]]) / 2
    nodes = [{"node": h, "numeral": patent_number(h), "level": int(np.log2(h + 1)), "x": place[h],
              "leaf": h not in children,
              "class": int(tree.value[h, 0]) if h not in children else None} for h in range(n)]
    selected = {h: (b if x[tree.feature[h]] > tree.threshold[h] else a) for h, (a, b) in children.items()}
    path = [0]
    while path[-1] in selected:
        path.append(selected[path[-1]])
    steps = bitmask_steps(Forest(tree).ensemble.forest, 0, x)
    candidates, alive = [list(range(len(leaves)))], -1
    for level in steps["levels"]:
        alive &= level["or"]
        candidates.append([k for k in range(len(leaves)) if alive >> k & 1])
    return {"nodes": nodes, "children": children, "selected": selected, "path": path, "candidates": candidates,
            "reached": leaves.index(path[-1])}


# ------------------------------------------------------------------ unbalanced trees
def chain_tree(depth: int = 5) -> FlatTree:
    """A chain of ``depth`` decision nodes whose right children are leaves: node ``2d`` (level ``d``) sends
    ``x <= depth - d`` left, one level deeper, and anything larger right, to the leaf ``2d + 1``; the last left
    child is the leaf ``2 depth``.  Every node's value is its index (so a prediction names the leaf)."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    n = 2 * depth + 1
    feature, threshold, left, right = [-1] * n, [0.0] * n, [-1] * n, [-1] * n
    for d in range(depth):
        feature[2 * d], threshold[2 * d] = 0, float(depth - d)
        left[2 * d], right[2 * d] = 2 * d + 2, 2 * d + 1
    return FlatTree(feature=feature, threshold=threshold, left=left, right=right,
                    value=np.arange(n, dtype=float), n_features=1, task="regression")


def unbalanced_steps(depth: int = 5, x: float = 3.5) -> dict[str, Any]:
    """The patent's OR/AND on :func:`chain_tree` for the one-feature row ``[x]``, with dtlab's base per level
    (leaves whose path ended above that level) and without it (the patent's rule alone).

    Returns
    -------
    dict: ``table`` (list of dict per level: ``level, selections OR, base, level OR, AND so far,
    AND without base``; identifiers leftmost leaf first), ``leaf`` (the node the AND names), ``n_leaves``,
    ``leaf_order`` (the leaf nodes, leftmost first: the digits' order), ``without_base_empty`` (whether the AND
    without bases erased every bit)
    """
    tree = chain_tree(depth)
    steps = bitmask_steps(Forest(tree).ensemble.forest, 0, np.array([float(x)]))
    n_leaves = depth + 1
    table, with_base, without = [], -1, -1
    for level, t in enumerate(steps["levels"]):
        chosen = 0
        for v in t["selected"].values():
            chosen |= v
        with_base &= t["or"]
        without &= chosen
        table.append({"level": level, "selections OR": identifier_string(chosen, n_leaves),
                      "base": identifier_string(t["base"], n_leaves),
                      "level OR": identifier_string(t["or"], n_leaves),
                      "AND so far": identifier_string(with_base, n_leaves),
                      "AND without base": identifier_string(without & (2**n_leaves - 1), n_leaves)})
    order = sorted(steps["number"], key=steps["number"].get)
    return {"table": table, "leaf": int(steps["leaf"]), "n_leaves": n_leaves, "leaf_order": [int(v) for v in order],
            "without_base_empty": (without & (2**n_leaves - 1)) == 0}


# ------------------------------------------------------------------ time against depth and threads
def depth_and_threads(max_depth: int, rows: int, threads: int, missing: float, *, n_trees: int = 10,
                      n_features: int = 28, min_depth: int = 1, repeats: int = 3, seed: int = 0) -> dict[str, Any]:
    """The panel's experiment: time per tree and row of the three methods on complete random trees of depth
    ``min_depth .. max_depth`` (``n_trees`` per forest, ``rows`` rows of ``n_features`` standard normals with a
    share ``missing`` of NaN), on one thread (as the static figure ``inference_time_vs_depth``: a second thread
    on a shared machine waits for a free core, which would blur the shape); then, on the depth-``max_depth``
    forest, every thread count from 1 to the machine's cores, measured, and the counts beyond them up to
    ``threads`` modelled by :func:`workbench.timing.amdahl_fit` of the measured ones.  Medians of ``repeats``
    alternating runs.

    Returns
    -------
    dict: ``depth_points`` (``method, depth, ns_per_tree_row, nodes_per_tree, threads``) measured on
    ``depth_threads`` (1) thread; ``thread_points`` (``method, threads, ns_per_tree_row, speedup, source`` =
    "measured" for 1 .. ``cores``, "modelled" beyond, up to ``threads``); ``amdahl`` {method: {"serial_ns",
    "parallel_ns"}}; ``serial_kernel`` (rows x trees below the library's ``parallel_min_tree_rows``: every call
    runs on one thread, whatever the threads); ``bitmask_behind_from`` (the smallest depth from which the bitmask
    method is slower than the traversal at every depth measured, None if at none); ``max_depth, rows, threads,
    cores, missing, n_trees, load_average``
    """
    if not 1 <= min_depth <= max_depth:
        raise ValueError(f"need 1 <= min_depth <= max_depth, got {min_depth}, {max_depth}")
    cores = machine_threads()
    depths = list(range(int(min_depth), int(max_depth) + 1))
    depth_points = time_vs_depth(depths, n_trees=n_trees, n_rows=rows, n_features=n_features, threads=1,
                                 repeats=repeats, seed=seed, missing=missing)
    per_thread = throughput_vs_threads(depth=max_depth, n_trees=n_trees, n_rows=rows, n_features=n_features,
                                       repeats=repeats, seed=seed, missing=missing, max_threads=cores)
    thread_points, fits = [], {}
    for m in METHODS:
        mine = [r for r in per_thread if r["method"] == m]
        ns = {r["threads"]: 1e9 / r["tree_rows_per_second"] for r in mine}
        serial, parallel = amdahl_fit(list(ns), list(ns.values()))
        fits[m] = {"serial_ns": serial, "parallel_ns": parallel}
        thread_points += [{"method": m, "threads": p, "ns_per_tree_row": t, "speedup": ns[1] / t,
                           "source": "measured"} for p, t in ns.items()]
        thread_points += [{"method": m, "threads": p, "ns_per_tree_row": serial + parallel / p,
                           "speedup": ns[1] / (serial + parallel / p), "source": "modelled"}
                          for p in range(cores + 1, int(threads) + 1)]
    at = {(r["method"], r["depth"]): r["ns_per_tree_row"] for r in depth_points}
    behind = [d for d in depths if at["bitmask", d] > at["traversal", d]]
    behind_from = next((d for d in depths if all(e in behind for e in depths if e >= d)), None)
    return {"depth_points": depth_points, "thread_points": thread_points, "amdahl": fits,
            "serial_kernel": rows * n_trees < PARALLEL_MIN_TREE_ROWS,
            "parallel_min_tree_rows": PARALLEL_MIN_TREE_ROWS, "bitmask_behind_from": behind_from,
            "max_depth": int(max_depth), "rows": int(rows), "threads": int(threads), "depth_threads": 1,
            "cores": cores, "missing": float(missing), "n_trees": int(n_trees), "load_average": load_average()}


def recorded_speedups(path: Path = RESULTS) -> dict[str, Any] | None:
    """The speedups of the static figure ``inference_threads`` (the producer ``inference_shapes`` in
    ``figures/results.json``; ``make figures`` remakes it), for the panel's right-hand plot; None if absent.

    Returns
    -------
    dict: ``speedups`` {method: {threads: speedup over 1 thread}}, ``depth``, ``n_trees``, ``rows`` (from the
    run's scale), ``load_average``, ``date``
    """
    try:
        entry = json.loads(Path(path).read_text())["figures"]["inference_shapes"]
        points = entry["results"]["threads"]
    except (OSError, KeyError, TypeError, ValueError):
        return None
    speedups: dict[str, dict[int, float]] = {}
    for m in dict.fromkeys(r["method"] for r in points):
        per = {int(r["threads"]): float(r["tree_rows_per_second"]) for r in points if r["method"] == m}
        if 1 not in per:
            return None
        speedups[m] = {p: v / per[1] for p, v in sorted(per.items())}
    return {"speedups": speedups, "depth": int(points[0]["depth"]),
            "n_trees": THREAD_FOREST["n_trees"],
            "rows": THREAD_ROWS.get(entry.get("scale")), "load_average": entry["results"].get("load_average_before"),
            "date": entry.get("run", {}).get("date", "")[:10]}


def depth_table(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per depth of :func:`depth_and_threads`' result: each method's ns per tree and row, and the
    bitmask's and QuickScorer's times over the traversal's."""
    at = {(r["method"], r["depth"]): r["ns_per_tree_row"] for r in result["depth_points"]}
    depths = sorted({r["depth"] for r in result["depth_points"]})
    return [{"depth": d, **{f"{m} ns": at[m, d] for m in METHODS},
             "bitmask / traversal": at["bitmask", d] / at["traversal", d],
             "quickscorer / traversal": at["quickscorer", d] / at["traversal", d]} for d in depths]


# ------------------------------------------------------------------ one interface over three libraries
def library_agreement(n_rows: int = 2_000, n_features: int = 10, missing: float = 0.05, n_trees: int = 20,
                      max_depth: int = 6, seed: int = 0) -> list[dict[str, Any]]:
    """An XGBoost booster, a LightGBM booster and a scikit-learn random forest trained on the same rows (a
    share ``missing`` of the entries NaN), each read by ``Forest(model)`` and predicted by every method, against
    the library's own raw prediction (XGBoost ``inplace_predict`` margins, LightGBM ``raw_score``, scikit-learn
    ``predict_proba``).

    Returns
    -------
    list of dict: ``library, its own call, trees, method, largest |difference|, tolerance``.  XGBoost adds
    its leaves in float32 (tolerance 1e-5), the others in float64 (1e-10).
    """
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import RandomForestClassifier

    X = random_rows(n_rows, n_features, missing, seed)
    y = (np.nan_to_num(X[:, :5]).sum(axis=1) > 0).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": max_depth, "nthread": 1, "seed": seed},
                        xgb.DMatrix(X, y), n_trees)
    light = lgb.train({"objective": "binary", "num_leaves": 2**max_depth, "max_depth": max_depth, "verbose": -1,
                       "seed": seed, "num_threads": 1, "deterministic": True}, lgb.Dataset(X, y), n_trees)
    forest = RandomForestClassifier(n_trees, max_depth=max_depth, random_state=seed, n_jobs=1).fit(X, y)
    cases = [("XGBoost", "inplace_predict(X, predict_type='margin')", booster,
              booster.inplace_predict(X, predict_type="margin"), 1e-5),
             ("LightGBM", "predict(X, raw_score=True)", light, light.predict(X, raw_score=True), 1e-10),
             ("scikit-learn", "RandomForestClassifier.predict_proba(X)", forest, forest.predict_proba(X), 1e-10)]
    out = []
    for library, call, model, expected, tolerance in cases:
        ours = Forest(model)
        for m in METHODS:
            got = ours.predict(X, method=m, backend="cpu")
            out.append({"library": library, "its own call": call, "trees": ours.n_trees, "method": m,
                        "largest |difference|": float(np.abs(got - expected).max()),
                        "tolerance": tolerance})
    return out
