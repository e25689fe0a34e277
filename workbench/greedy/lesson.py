"""The computations of notebook 02 as a lesson: the variance-reduction split search stepped by hand on eight
rows, what SIMD lanes would do in its prefix-sum loop, and how the three searches scale with rows.

* :func:`split_steps` / :func:`naive_steps`: the "SIMD decision tree" project's running sums ``A_S`` (of
  ``y^2``) and ``B_S`` (of ``y``) along one feature's sorted rows, each candidate's squared errors and
  scikit-learn's proxy ``B_L^2/n_L + B_R^2/n_R``; the naive search recomputes both sides from every row per
  candidate.  :func:`library_root` is the root split :class:`dtlab.greedy.DecisionTreeRegressor` grows on
  the same rows, for the notebook's ``assert``.
* :func:`lane_scan`: a plain NumPy model of a prefix sum done by ``lanes`` SIMD lanes, in two layouts (each
  lane a chunk of the rows, then the carry across lanes; or registers of consecutive rows, shifted adds, then
  the carry from register to register); :func:`order_effect` counts where such a scan's float sums differ
  from the sequential ones in the last bits.
* :func:`scaling`: fit time against rows of the naive, incremental and vectorised searches and
  scikit-learn on the project's task (age from the diabetes data) with irrelevant features appended,
  timed in alternation, the vectorised search on one thread and on the chosen threads; and the error
  against depth of the same data on a held-out quarter.

Only the library's public API is used.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from dtlab.datasets import load_diabetes_prediction, train_test_split
from dtlab.greedy import DecisionTreeRegressor
from workbench.timing import load_average, machine_threads, numba_threads, paired_times

#: The tiny input of the stepped example: one feature (a body-mass index) and the targets (ages, years).
#: Two rows share the value 25.1, so no threshold may fall between them.
TINY_X = np.array([27.3, 19.0, 31.2, 22.5, 25.1, 35.0, 25.1, 29.8], dtype=np.float32)
TINY_Y = np.array([54.0, 12.0, 61.0, 30.0, 45.0, 58.0, 20.0, 50.0])
#: A node of ``n_samples * n_features`` at least this is scanned in parallel over features by dtlab's
#: vectorised search (``dtlab.greedy``'s ``PARALLEL_MIN_WORK``; ``tests/greedy/test_lesson.py`` holds the two
#: equal): below it, starting threads costs more than they save.
PARALLEL_MIN_WORK = 1_000_000
#: Columns of the diabetes data (the project's task: age from the other eight).
DIABETES_FEATURES = 8
#: The contenders of :func:`scaling` besides the vectorised search on more threads.
METHODS = ("naive", "incremental", "vectorized", "sklearn")


def _midpoint(a: float, b: float) -> float:
    """scikit-learn's threshold between two sorted float32 values (and dtlab's): ``a/2 + b/2`` in float64."""
    return float(np.float64(np.float32(a)) / 2.0 + np.float64(np.float32(b)) / 2.0)


def split_steps(x=TINY_X, y=TINY_Y) -> list[dict[str, Any]]:
    """The incremental search on one feature, one sorted row at a time.

    Each entry is the state after moving the next row (in ``x``'s order, stable on ties) from the right side
    to the left: ``n_L`` rows on the left, the running sums ``B_L`` (of y) and ``A_L`` (of y^2), the right
    side's ``B_R = B_S - B_L`` and ``A_R = A_S - A_L``, each side's squared error ``SSE = A - B^2/n``, the
    proxy ``B_L^2/n_L + B_R^2/n_R``, the variance reduction ``SSE(S) - SSE_L - SSE_R``, and the candidate
    threshold (the midpoint to the next value; NaN where the next value is equal, or at the last row).

    Parameters
    ----------
    x : float array (n,), cast to float32 as the library does
    y : float array (n,)

    Returns
    -------
    list of dict: ``n_L, row, x, y, B_L, A_L, B_R, A_R, SSE_L, SSE_R, proxy, reduction, threshold``
    """
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    n = len(y)
    a_total, b_total = float(np.sum(y * y)), float(np.sum(y))
    sse_node = a_total - b_total * b_total / n
    out, a_left, b_left = [], 0.0, 0.0
    for k, r in enumerate(order, start=1):
        a_left += float(y[r]) ** 2  # one row moves: O(1) per candidate
        b_left += float(y[r])
        entry = {"n_L": k, "row": int(r), "x": float(x[r]), "y": float(y[r]), "B_L": b_left, "A_L": a_left,
                 "B_R": b_total - b_left, "A_R": a_total - a_left, "SSE_L": np.nan, "SSE_R": np.nan,
                 "proxy": np.nan, "reduction": np.nan, "threshold": np.nan}
        if k < n and x[order[k]] > x[r]:  # a threshold only between two different values
            b_right, a_right = b_total - b_left, a_total - a_left
            entry["SSE_L"] = a_left - b_left * b_left / k
            entry["SSE_R"] = a_right - b_right * b_right / (n - k)
            entry["proxy"] = b_left * b_left / k + b_right * b_right / (n - k)
            entry["reduction"] = sse_node - entry["SSE_L"] - entry["SSE_R"]
            entry["threshold"] = _midpoint(x[r], x[order[k]])
        out.append(entry)
    return out


def naive_steps(x=TINY_X, y=TINY_Y) -> list[dict[str, Any]]:
    """The naive search on the same rows: for every candidate threshold, both sides' sums again from every
    row of the node (in row order), so each candidate costs ``n`` row visits.

    Returns
    -------
    list of dict, one per candidate: ``threshold, n_L, B_L, B_R, proxy, rows_visited``
    """
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.float64)
    values = np.unique(x)
    out = []
    for lo, hi in zip(values[:-1], values[1:]):
        cut = _midpoint(lo, hi)
        n_left, b_left, b_right, visited = 0, 0.0, 0.0, 0
        for xi, yi in zip(x, y):  # every row, for every candidate: O(n^2) per feature
            visited += 1
            if xi <= cut:
                n_left += 1
                b_left += float(yi)
            else:
                b_right += float(yi)
        proxy = b_left * b_left / n_left + b_right * b_right / (len(y) - n_left)
        out.append({"threshold": cut, "n_L": n_left, "B_L": b_left, "B_R": b_right, "proxy": proxy,
                    "rows_visited": visited})
    return out


def best_step(steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The entry of largest proxy (the first on ties, as the library), among those with a threshold."""
    candidates = [s for s in steps if not np.isnan(s["proxy"])]
    return max(candidates, key=lambda s: s["proxy"]) if candidates else {}


def library_root(x=TINY_X, y=TINY_Y, seed: int = 0) -> dict[str, Any]:
    """The root split :class:`dtlab.greedy.DecisionTreeRegressor` grows on one feature (a tree of depth 1).

    Returns
    -------
    dict: ``threshold``, ``n_L`` (training rows on the left), ``proxy`` (``n_L mean_L^2 + n_R mean_R^2``) and
    ``reduction`` (``n MSE_node - n_L MSE_L - n_R MSE_R``), from the fitted tree's values and impurities
    """
    x = np.asarray(x, dtype=np.float32)
    est = DecisionTreeRegressor(max_depth=1, random_state=seed).fit(x[:, None], np.asarray(y, dtype=np.float64))
    tree = est.tree_
    left, right = int(tree.left[0]), int(tree.right[0])
    n = est.node_n_samples_
    mse = est.node_impurity_
    mean = tree.value[:, 0]
    return {"threshold": float(tree.threshold[0]), "n_L": int(n[left]),
            "proxy": float(n[left] * mean[left] ** 2 + n[right] * mean[right] ** 2),
            "reduction": float(n[0] * mse[0] - n[left] * mse[left] - n[right] * mse[right])}


# --------------------------------------------------------------- SIMD lanes in the prefix sum
def lane_scan(values, lanes: int = 4, layout: str = "chunks") -> dict[str, Any]:
    """A prefix sum as ``lanes`` SIMD lanes would compute it (a NumPy model; every stage is one vector op).

    ``layout="chunks"``: lane ``j`` takes the ``j``-th contiguous chunk of the rows and keeps its own running
    sum (one vector add per step advances every lane); then the carry into each lane is the sum of the
    totals of the lanes before it; adding it finishes every lane's sums.
    ``layout="registers"``: a register holds ``lanes`` consecutive rows; ``log2(lanes)`` shifted adds scan
    it in place (Hillis and Steele), then the carry -- the last sum of the previous register -- is added.

    Parameters
    ----------
    values : float array (n,)
    lanes : int >= 1 (a power of two for ``"registers"``)
    layout : {"chunks", "registers"}

    Returns
    -------
    dict: ``layout, lanes, values``, ``lane`` (int array (n,): the lane of each position), ``stages`` (list
    of ``(name, float64 array (n,))``, the first the input, the last the prefix sums), ``result`` (float64
    array (n,)), ``carry`` (float64 array: into each lane, or into each register), ``vector_ops`` (the
    vector adds the stages took)
    """
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    if lanes < 1:
        raise ValueError(f"lanes must be >= 1, got {lanes}")
    if layout == "chunks":
        chunk = -(-n // lanes)
        padded = np.zeros(lanes * chunk)
        padded[:n] = v
        block = padded.reshape(lanes, chunk)  # row j: the rows lane j takes
        partial = np.empty_like(block)
        running = np.zeros(lanes)
        for k in range(chunk):  # one vector add per step: every lane advances its own running sum
            running = running + block[:, k]
            partial[:, k] = running
        carry = np.zeros(lanes)
        for j in range(1, lanes):  # the carry across lanes: each lane starts where the lanes before it end
            carry[j] = carry[j - 1] + partial[j - 1, -1]
        result = (partial + carry[:, None]).reshape(-1)[:n]
        lane = np.repeat(np.arange(lanes), chunk)[:n]
        stages = [("sorted y", v), ("each lane's own running sum", partial.reshape(-1)[:n]),
                  ("carry into the lane", np.repeat(carry, chunk)[:n]), ("prefix sums B_L", result)]
        ops = 2 * chunk
    elif layout == "registers":
        if lanes & (lanes - 1):
            raise ValueError(f"the register layout needs a power of two lanes, got {lanes}")
        n_vec = -(-n // lanes)
        padded = np.zeros(n_vec * lanes)
        padded[:n] = v
        reg = padded.reshape(n_vec, lanes)  # row i: register i, rows i*lanes ...
        stages = [("sorted y", v)]
        shift = 1
        while shift < lanes:  # Hillis-Steele inside every register: add the register shifted by `shift` lanes
            shifted = np.zeros_like(reg)
            shifted[:, shift:] = reg[:, :-shift]
            reg = reg + shifted
            stages.append((f"+ itself shifted {shift} lane{'s' if shift > 1 else ''}", reg.reshape(-1)[:n]))
            shift *= 2
        carry = np.zeros(n_vec)
        for i in range(1, n_vec):  # the carry from register to register: the last sum so far
            carry[i] = carry[i - 1] + reg[i - 1, -1]
        result = (reg + carry[:, None]).reshape(-1)[:n]
        stages += [("carry into the register", np.repeat(carry, lanes)[:n]), ("prefix sums B_L", result)]
        lane = np.arange(n) % lanes
        ops = n_vec * (int(np.log2(lanes)) + 1)
    else:
        raise ValueError(f"layout must be 'chunks' or 'registers', got {layout!r}")
    return {"layout": layout, "lanes": int(lanes), "values": v, "lane": lane, "stages": stages,
            "result": result, "carry": carry, "vector_ops": int(ops)}


def order_effect(values, lanes: int = 8, layout: str = "chunks") -> dict[str, Any]:
    """How a lane-wise scan's float sums (:func:`lane_scan`) differ from the sequential running sum
    (``np.cumsum``, the order of dtlab's CPU scans).

    Returns
    -------
    dict: ``n``, ``differ`` (positions whose sums are not equal to the bit), ``max_ulps`` (the largest
    difference in units of the last place of the sequential sum), ``max_relative``
    """
    v = np.asarray(values, dtype=np.float64)
    sequential = np.cumsum(v)
    lanewise = lane_scan(v, lanes, layout)["result"]
    diff = np.abs(lanewise - sequential)
    ulps = diff / np.spacing(np.abs(sequential))
    scale = np.maximum(np.abs(sequential), np.finfo(np.float64).tiny)
    return {"n": int(len(v)), "lanes": int(lanes), "layout": layout, "differ": int(np.sum(diff > 0)),
            "max_ulps": float(ulps.max(initial=0.0)), "max_relative": float((diff / scale).max(initial=0.0))}


# --------------------------------------------------------------- the predict-then-run panel
def with_irrelevant(X: np.ndarray, n_irrelevant: int, seed: int = 0) -> np.ndarray:
    """``X`` (float32, shape (n, f)) with ``n_irrelevant`` columns of uniform random values in [0, 1)
    appended (seeded): features the target does not depend on, every value distinct."""
    X = np.asarray(X, dtype=np.float32)
    noise = np.random.default_rng(seed + 7).random((X.shape[0], int(n_irrelevant)), dtype=np.float32)
    return np.hstack([X, noise])


def row_ladder(max_rows: int, min_rows: int = 1_000) -> list[int]:
    """``1,000, 2,000, 5,000, 10,000, ...`` up to ``max_rows`` (included)."""
    sizes = [m * 10 ** e for e in range(2, 9) for m in (1, 2, 5)]
    return sorted({s for s in sizes if min_rows <= s < max_rows} | {int(max_rows)})


def _estimator(method: str, max_depth: int | None, seed: int):
    if method == "sklearn":
        from sklearn.tree import DecisionTreeRegressor as SkRegressor

        return SkRegressor(max_depth=max_depth, random_state=seed)
    return DecisionTreeRegressor(max_depth=max_depth, method=method, random_state=seed, backend="cpu")


def _fit(est: Any, X: np.ndarray, y: np.ndarray, n_threads: int):
    def run() -> None:
        with numba_threads(n_threads):
            est.fit(X, y)
    return run


def _n_nodes(method: str, est: Any) -> int:
    return int(est.tree_.node_count if method == "sklearn" else est.tree_.n_nodes)


def error_curve(X: np.ndarray, y: np.ndarray, depths: Sequence[int], *, test_fraction: float = 0.25,
                seed: int = 0, informative: int = DIABETES_FEATURES) -> list[dict[str, Any]]:
    """Training and held-out mean squared error (years^2) of the vectorised tree against the depth limit.

    Returns
    -------
    list of dict: ``max_depth, train_mse, test_mse, n_nodes, irrelevant_share`` (the share of the tree's
    splits on a column from ``informative`` on, an irrelevant one)
    """
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_fraction=test_fraction, seed=seed)
    out = []
    for depth in depths:
        est = DecisionTreeRegressor(max_depth=depth, random_state=seed).fit(X_train, y_train)
        feature = est.tree_.feature
        splits = feature[feature >= 0]
        out.append({"max_depth": depth, "train_mse": float(np.mean((est.predict(X_train) - y_train) ** 2)),
                    "test_mse": float(np.mean((est.predict(X_test) - y_test) ** 2)),
                    "n_nodes": int(est.tree_.n_nodes),
                    "irrelevant_share": float(np.mean(splits >= informative)) if len(splits) else 0.0})
    return out


def scaling(max_rows: int, irrelevant: int, threads: int, *, max_depth: int | None = None,
            naive_max_rows: int = 5_000, min_rows: int = 1_000, repeats: int = 1,
            depths: Sequence[int] = tuple(range(1, 16)), seed: int = 0) -> dict[str, Any]:
    """Fit time against rows of every search and scikit-learn, and error against depth, on the project's task.

    The first rows of the diabetes data (age from the other eight columns) with ``irrelevant`` uniform random
    columns appended (:func:`with_irrelevant`), at every size of :func:`row_ladder` up to ``max_rows``; the
    naive search (O(n^2) per feature and node) only up to ``naive_max_rows``.  At each size the fits take
    turns (:func:`workbench.timing.paired_times`, ``repeats`` rounds, after compiling fits on 200 rows);
    the naive, incremental and scikit-learn fits run on one thread (none has another mode), the vectorised
    search on one thread and, when ``threads > 1``, on ``min(threads, cores)`` numba threads.  Every point is
    measured.  The error curve (:func:`error_curve`) is fitted on the largest size, a quarter held out, with
    and (as a reference) without the irrelevant columns.

    Returns
    -------
    dict: ``points`` (``method, threads, rows, seconds, seconds_min, seconds_max, n_nodes``), ``errors``
    and ``errors_without_irrelevant`` (:func:`error_curve`; the latter None when ``irrelevant == 0``),
    ``rows`` (the sizes), ``irrelevant, n_features, threads, cores, max_depth, naive_max_rows``,
    ``parallel_from_rows`` (nodes of at least this many rows are scanned in parallel), ``seconds`` (the
    call's wall time), ``load_average``
    """
    start = time.perf_counter()
    data = load_diabetes_prediction(target="age")
    if not 1 <= max_rows <= len(data.y):
        raise ValueError(f"max_rows must be in [1, {len(data.y):,}], got {max_rows:,}")
    cores = machine_threads()
    threads = max(1, min(int(threads), cores))
    sizes = row_ladder(max_rows, min(min_rows, max_rows))
    X = with_irrelevant(data.X[:sizes[-1]], irrelevant, seed)
    y = data.y[:sizes[-1]]
    contenders = [("naive", 1), ("incremental", 1), ("vectorized", 1)]
    contenders += [("vectorized", threads)] if threads > 1 else []
    contenders += [("sklearn", 1)]
    for method, n_threads in contenders:  # compile (or load numba's cache) outside the timings
        _fit(_estimator(method, max_depth, seed), X[:200], y[:200], n_threads)()
    points: list[dict[str, Any]] = []
    for n in sizes:
        active = [(m, t) for m, t in contenders if m != "naive" or n <= naive_max_rows]
        estimators = [_estimator(m, max_depth, seed) for m, _ in active]
        times = paired_times([_fit(est, X[:n], y[:n], t) for est, (_, t) in zip(estimators, active)],
                             repeats=repeats, warmup=0)
        for (method, n_threads), est, t in zip(active, estimators, times):
            points.append({"method": method, "threads": n_threads, "rows": n, "seconds": float(np.median(t)),
                           "seconds_min": float(min(t)), "seconds_max": float(max(t)),
                           "n_nodes": _n_nodes(method, est)})
    n_features = DIABETES_FEATURES + int(irrelevant)
    errors = error_curve(X, y, depths, seed=seed)
    reference = error_curve(X[:, :DIABETES_FEATURES], y, depths, seed=seed) if irrelevant else None
    return {"points": points, "errors": errors, "errors_without_irrelevant": reference, "rows": sizes,
            "irrelevant": int(irrelevant), "n_features": n_features, "threads": threads, "cores": cores,
            "max_depth": max_depth, "naive_max_rows": int(naive_max_rows),
            "parallel_from_rows": -(-PARALLEL_MIN_WORK // n_features),
            "seconds": time.perf_counter() - start, "load_average": load_average()}


def seconds_at(result: dict[str, Any], method: str, threads: int = 1) -> dict[int, float]:
    """``{rows: seconds}`` of one contender of :func:`scaling`."""
    return {p["rows"]: p["seconds"] for p in result["points"] if p["method"] == method and p["threads"] == threads}


def growth_exponent(seconds: dict[int, float]) -> float:
    """The slope of log(seconds) against log(rows) between the smallest and the largest size (2: O(n^2))."""
    sizes = sorted(seconds)
    if len(sizes) < 2:
        return float("nan")
    return float(np.log(seconds[sizes[-1]] / seconds[sizes[0]]) / np.log(sizes[-1] / sizes[0]))


def scaling_table(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per contender of :func:`scaling`, at the largest size it ran: ``contender``, ``rows``,
    ``seconds``, ``growth exponent k`` (time ~ n^k, :func:`growth_exponent`), ``speedup over scikit-learn``
    (scikit-learn's seconds at those rows / the contender's) and ``tree nodes``."""
    sk = seconds_at(result, "sklearn")
    out = []
    for method, n_threads in dict.fromkeys((p["method"], p["threads"]) for p in result["points"]):
        at = seconds_at(result, method, n_threads)
        n = max(at)
        nodes = next(p["n_nodes"] for p in result["points"]
                     if p["method"] == method and p["threads"] == n_threads and p["rows"] == n)
        name = "scikit-learn" if method == "sklearn" else f"dtlab {method}"
        out.append({"contender": f"{name}, {n_threads} thread{'s' if n_threads > 1 else ''}", "rows": n,
                    "seconds": at[n], "growth exponent k": growth_exponent(at),
                    "speedup over scikit-learn": sk[n] / at[n], "tree nodes": nodes})
    return out
