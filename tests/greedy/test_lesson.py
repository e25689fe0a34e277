"""Notebook 02's lesson module: the stepped split search, lane-wise prefix sums, the scaling sweep, their plots."""

import numpy as np
import pytest

from workbench.greedy import lesson as L
from workbench.greedy import plots


def _brute_force(x, y):
    """Every threshold between two distinct sorted values: its left rows and SSE_L + SSE_R, from np.var."""
    x = np.asarray(x, dtype=np.float32)
    out = {}
    values = np.unique(x)
    for lo, hi in zip(values[:-1], values[1:]):
        left = x <= hi - (hi - lo) / 2  # any cut strictly between the two values
        sse = np.var(y[left]) * left.sum() + np.var(y[~left]) * (~left).sum()
        out[int(left.sum())] = sse
    return out


def test_split_steps_match_a_plain_reference_and_the_library():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 12, size=40).astype(np.float32)  # repeated values: ties that admit no threshold
    y = rng.normal(40, 15, size=40)
    steps = L.split_steps(x, y)
    assert [s["n_L"] for s in steps] == list(range(1, 41))
    assert np.allclose([s["B_L"] for s in steps], np.cumsum(y[np.argsort(x, kind="stable")]))
    brute = _brute_force(x, y)
    with_threshold = [s for s in steps if not np.isnan(s["proxy"])]
    assert {s["n_L"] for s in with_threshold} == set(brute)  # candidates exactly where the next value differs
    sse_node = np.var(y) * len(y)
    for s in with_threshold:
        assert s["SSE_L"] + s["SSE_R"] == pytest.approx(brute[s["n_L"]], rel=1e-9)
        assert s["reduction"] == pytest.approx(sse_node - brute[s["n_L"]], rel=1e-9, abs=1e-9)
        assert s["proxy"] - s["reduction"] == pytest.approx(y.sum() ** 2 / len(y), rel=1e-12)
    best, root = L.best_step(steps), L.library_root(x, y)
    assert root["threshold"] == best["threshold"] and root["n_L"] == best["n_L"]
    assert root["reduction"] == pytest.approx(best["reduction"], rel=1e-9)
    assert root["proxy"] == pytest.approx(best["proxy"], rel=1e-12)


def test_the_tiny_input_has_one_tie_and_its_best_split():
    steps = L.split_steps()
    no_threshold = [s["n_L"] for s in steps if np.isnan(s["threshold"])]
    assert no_threshold == [3, 8]  # the two 25.1s, and the last row
    best = L.best_step(steps)
    assert best["n_L"] == 4 and best["B_L"] == 107 and best["proxy"] == 107**2 / 4 + 223**2 / 4
    assert best["threshold"] == np.float64(np.float32(25.1)) / 2 + np.float64(np.float32(27.3)) / 2
    assert L.library_root() == {"threshold": best["threshold"], "n_L": 4, "proxy": pytest.approx(best["proxy"]),
                                "reduction": pytest.approx(best["reduction"])}


def test_naive_steps_give_the_same_proxies_with_n_visits_each():
    naive = L.naive_steps()
    incremental = [s for s in L.split_steps() if not np.isnan(s["proxy"])]
    assert [s["proxy"] for s in naive] == [s["proxy"] for s in incremental]
    assert [s["threshold"] for s in naive] == [s["threshold"] for s in incremental]
    assert all(s["rows_visited"] == len(L.TINY_Y) for s in naive)
    assert L.best_step([]) == {}


@pytest.mark.parametrize("layout", ["chunks", "registers"])
@pytest.mark.parametrize("lanes", [1, 2, 4, 8])
@pytest.mark.parametrize("n", [1, 7, 8, 33])
def test_lane_scan_is_a_prefix_sum(layout, lanes, n):
    ints = np.arange(1, n + 1, dtype=np.float64) * 3  # exact in any order
    scan = L.lane_scan(ints, lanes, layout)
    assert np.array_equal(scan["result"], np.cumsum(ints))
    assert scan["stages"][0][1] is scan["values"] or np.array_equal(scan["stages"][0][1], ints)
    assert np.array_equal(scan["stages"][-1][1], scan["result"])
    assert all(len(values) == n for _, values in scan["stages"])
    assert scan["lane"].min() >= 0 and scan["lane"].max() < lanes
    floats = np.random.default_rng(n).random(n)
    assert np.allclose(L.lane_scan(floats, lanes, layout)["result"], np.cumsum(floats), rtol=1e-13, atol=0)


def test_lane_scan_stages_and_work():
    chunks = L.lane_scan(np.arange(1.0, 9.0), 4, "chunks")
    names = [name for name, _ in chunks["stages"]]
    assert names == ["sorted y", "each lane's own running sum", "carry into the lane", "prefix sums B_L"]
    assert list(chunks["stages"][1][1]) == [1, 3, 3, 7, 5, 11, 7, 15]  # every lane restarts from zero
    assert list(chunks["carry"]) == [0, 3, 10, 21] and chunks["vector_ops"] == 4
    registers = L.lane_scan(np.arange(1.0, 9.0), 4, "registers")
    assert [name for name, _ in registers["stages"]][1:3] == ["+ itself shifted 1 lane", "+ itself shifted 2 lanes"]
    assert list(registers["carry"]) == [0, 10] and registers["vector_ops"] == 2 * 3
    with pytest.raises(ValueError, match="power of two"):
        L.lane_scan(np.ones(4), 3, "registers")
    with pytest.raises(ValueError, match="layout"):
        L.lane_scan(np.ones(4), 2, "diagonal")
    with pytest.raises(ValueError, match="lanes"):
        L.lane_scan(np.ones(4), 0)


def test_order_effect_counts_last_bit_differences():
    assert L.order_effect(np.arange(100.0), 8)["differ"] == 0  # integers: every order exact
    tenths = np.full(1_000, 0.1)
    effect = L.order_effect(tenths, 8)
    lanewise = L.lane_scan(tenths, 8)["result"]
    assert effect["differ"] == int(np.sum(lanewise != np.cumsum(tenths))) > 0
    assert effect["max_ulps"] > 0 and effect["max_relative"] < 1e-12
    assert effect["n"] == 1_000 and effect["lanes"] == 8 and effect["layout"] == "chunks"


def test_irrelevant_columns_and_the_row_ladder():
    X = np.arange(12, dtype=np.float64).reshape(4, 3)
    out = L.with_irrelevant(X, 2, seed=1)
    assert out.shape == (4, 5) and out.dtype == np.float32
    assert np.array_equal(out[:, :3], X) and ((out[:, 3:] >= 0) & (out[:, 3:] < 1)).all()
    assert np.array_equal(out, L.with_irrelevant(X, 2, seed=1)) and L.with_irrelevant(X, 0).shape == (4, 3)
    assert L.row_ladder(25_000) == [1_000, 2_000, 5_000, 10_000, 20_000, 25_000]
    assert L.row_ladder(1_000) == [1_000] and L.row_ladder(500, 100) == [100, 200, 500]


def test_growth_exponent():
    assert L.growth_exponent({1_000: 1.0, 4_000: 16.0}) == pytest.approx(2.0)
    assert L.growth_exponent({1_000: 1.0, 10_000: 10.0}) == pytest.approx(1.0)
    assert np.isnan(L.growth_exponent({1_000: 1.0}))


def test_parallel_threshold_is_the_librarys():
    from dtlab.greedy import _node_rules

    assert L.PARALLEL_MIN_WORK == _node_rules.PARALLEL_MIN_WORK


def test_scaling_measures_every_contender_and_the_error_curve():
    from workbench.timing import machine_threads

    r = L.scaling(1_500, 2, 2, max_depth=6, naive_max_rows=1_000, depths=(1, 2, 3), seed=0)
    assert r["rows"] == [1_000, 1_500] and r["n_features"] == 10 and r["irrelevant"] == 2
    threads = min(2, machine_threads())
    assert r["threads"] == threads and r["parallel_from_rows"] == 100_000
    contenders = {(p["method"], p["threads"]) for p in r["points"]}
    assert contenders == {("naive", 1), ("incremental", 1), ("vectorized", 1), ("sklearn", 1)} | {("vectorized",
                                                                                                    threads)}
    assert sorted(L.seconds_at(r, "naive")) == [1_000]  # stopped at naive_max_rows
    assert all(p["seconds_min"] <= p["seconds"] <= p["seconds_max"] and p["seconds"] > 0 for p in r["points"])
    for n in r["rows"]:  # every dtlab search grows the same tree
        nodes = {p["n_nodes"] for p in r["points"] if p["rows"] == n and p["method"] != "sklearn"}
        assert len(nodes) == 1
    assert [e["max_depth"] for e in r["errors"]] == [1, 2, 3]
    assert all(a["train_mse"] >= b["train_mse"] for a, b in zip(r["errors"], r["errors"][1:]))
    assert r["errors_without_irrelevant"] is not None and r["errors"][0]["irrelevant_share"] == 0.0
    table = L.scaling_table(r)
    assert [t["contender"] for t in table][-1] == "scikit-learn, 1 thread"
    assert next(t for t in table if t["contender"] == "dtlab naive, 1 thread")["rows"] == 1_000
    assert all(t["speedup over scikit-learn"] > 0 for t in table)
    assert next(t for t in table if t["contender"] == "scikit-learn, 1 thread")["speedup over scikit-learn"] == 1.0
    assert L.scaling(1_000, 0, 1, max_depth=3, depths=(1,))["errors_without_irrelevant"] is None
    with pytest.raises(ValueError, match="max_rows"):
        L.scaling(200_000, 0, 1)


def _scaling_result(scale: float = 1.0, threads: int = 2):
    points = []
    for n in (1_000, 2_000, 5_000):
        for method, t, seconds in (("naive", 1, 1e-7 * n * n), ("incremental", 1, 2e-6 * n),
                                   ("vectorized", 1, 1e-6 * n), ("vectorized", threads, 6e-7 * n),
                                   ("sklearn", 1, 1.5e-6 * n)):
            if (method, t) == ("vectorized", 1) and threads == 1 and any(
                    p["method"] == "vectorized" and p["rows"] == n for p in points):
                continue
            if method == "naive" and n > 2_000:
                continue
            points.append({"method": method, "threads": t, "rows": n, "seconds": seconds * scale,
                           "seconds_min": seconds * scale, "seconds_max": seconds * scale, "n_nodes": 99})
    errors = [{"max_depth": d, "train_mse": 300 - 20 * d, "test_mse": 300 - 10 * d + d * d, "n_nodes": 2**d,
               "irrelevant_share": 0.0} for d in (1, 2, 3, 4, 5, 6)]
    return {"points": points, "errors": errors, "errors_without_irrelevant": errors[:3], "rows": [1_000, 2_000, 5_000],
            "irrelevant": 3, "n_features": 11, "threads": threads, "cores": 2, "max_depth": None,
            "naive_max_rows": 2_000, "parallel_from_rows": 2_000}


def test_scaling_plot_draws_measured_curves_reported_markers_and_changes_with_the_data():
    from workbench.greedy.experiments import PROJECT_REPORTED_SECONDS
    from workbench.widgets import curve_digest

    fig = plots.plot_scaling(_scaling_result(), reported=PROJECT_REPORTED_SECONDS)
    ax1, ax2, ax3 = fig.axes
    labels = [t.get_text() for t in fig.legends[0].get_texts()]  # one legend below the first two panels
    assert "dtlab vectorized, 2 threads" in labels and "scikit-learn, 1 thread" in labels
    assert sum("reported, other CPU" in label for label in labels) == len(PROJECT_REPORTED_SECONDS)
    reported = [line for line in ax1.lines if "reported" in (line.get_label() or "")]
    assert all(line.get_markerfacecolor() == "none" for line in reported)  # not measured here: open markers
    measured = [line for line in ax1.lines if line.get_label().startswith(("dtlab", "scikit"))]
    assert all(line.get_markerfacecolor() != "none" for line in measured)
    assert ax1.get_xscale() == ax1.get_yscale() == "log" and "(s" in ax1.get_ylabel()
    assert any("parallel" in label for label in labels)  # 2,000 rows is in range
    speedups = {line.get_label(): line.get_ydata() for line in ax2.lines if line.get_label().startswith("dtlab")}
    assert np.allclose(speedups["dtlab vectorized, 1 thread"], 1.5) and "scikit-learn, 1 thread" not in speedups
    assert any("no irrelevant" in t.get_text() for t in ax3.get_legend().get_texts())
    assert any("best held-out depth (5)" in t.get_text() for t in ax3.get_legend().get_texts())
    digest, curves = curve_digest(fig)
    assert curves >= 10
    assert curve_digest(plots.plot_scaling(_scaling_result(scale=1.1)))[0] != digest
    one = plots.plot_scaling(_scaling_result(threads=1))
    assert not any("parallel" in t.get_text() for t in one.legends[0].get_texts())
    assert "irrelevant columns,\n" in ax3.get_legend().get_texts()[1].get_text()


def test_tiny_search_and_lane_plots():
    from workbench.widgets import curve_digest

    fig = plots.plot_split_steps(L.split_steps(), L.naive_steps(), L.library_root())
    ax = fig.axes[0]
    incremental, naive = ax.lines[0], ax.lines[1]
    assert len(incremental.get_xdata()) == len(naive.get_xdata()) == 6
    assert np.allclose(incremental.get_ydata(), naive.get_ydata())
    assert "years" in ax.get_ylabel() and any("root split" in t.get_text() for t in ax.get_legend().get_texts())
    drawing = plots.plot_lane_stages(L.lane_scan(np.arange(1.0, 9.0), 4))
    assert curve_digest(drawing)[1] == 0  # a drawing of cells, not curves
    texts = [t.get_text() for t in drawing.axes[0].texts]
    assert "lane 3" in texts and "carry into the lane" in texts and "36" in texts
    assert "4 vector adds" in drawing.axes[0].get_title()
    registers = plots.plot_lane_stages(L.lane_scan(np.arange(1.0, 9.0), 4, "registers"))
    assert "lane 0" not in [t.get_text() for t in registers.axes[0].texts]
