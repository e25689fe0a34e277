"""The lesson module of notebook 06 (workbench/inference/lesson.py) and its figures, at tiny sizes."""

import numpy as np
import pytest

from workbench.inference import lesson as L
from workbench.inference import plots as P
from workbench.inference.patent import patent_example


def test_work_per_tree_counts_tests_bits_and_bytes():
    rows = {r["depth"]: r for r in L.work_per_tree([1, 4, 6, 7, 12])}
    assert rows[4]["leaves"] == 16 and rows[4]["bitmask: tests side by side"] == 15
    assert rows[4]["walk: tests in a row"] == 4
    assert rows[4]["bits per identifier"] == 16 and rows[4]["64-bit words"] == 1
    assert rows[4]["identifier bytes per tree"] == 2 * 15 * 8  # a left and a right identifier per decision node
    assert [rows[d]["64-bit words"] for d in (6, 7, 12)] == [1, 2, 64]
    assert rows[12]["identifier bytes per tree"] == 2 * 4095 * 64 * 8  # 4 MiB: past a core's L2
    with pytest.raises(ValueError):
        L.work_per_tree([0])


def test_work_per_tree_words_match_the_library_layout():
    from workbench.inference.experiments import random_forest_of_depth

    for depth in (3, 7):
        forest = random_forest_of_depth(depth, 1, 4)
        assert forest.layout("bitmask", np.float32).n_words == L.work_per_tree([depth])[0]["64-bit words"]


def test_patent_numerals():
    assert [L.patent_number(h) for h in (0, 1, 2, 3, 7, 15, 21, 30)] == [11, 121, 122, 123, 127, 135, 141, 150]
    with pytest.raises(ValueError):
        L.patent_number(31)


def test_patent_picture_halves_the_candidates_down_to_the_walks_leaf():
    picture = L.patent_picture()
    tree, x = patent_example()
    assert [len(c) for c in picture["candidates"]] == [16, 8, 4, 2, 1]
    for before, after in zip(picture["candidates"], picture["candidates"][1:]):
        assert set(after) <= set(before)
    # the patent's walk 11 -> 121 -> 124 -> 130 -> 141, class 9, and the library's leaf
    assert [L.patent_number(h) for h in picture["path"]] == [11, 121, 124, 130, 141]
    assert picture["path"][-1] == tree.apply(x[None, :])[0]
    assert picture["candidates"][-1] == [picture["reached"]] == [6]
    leaves = [n for n in picture["nodes"] if n["leaf"]]
    assert len(leaves) == 16 and leaves[picture["reached"]]["class"] == 9
    assert len(picture["selected"]) == 15  # every decision node selects, not only the path's four
    assert all(picture["selected"][h] in picture["children"][h] for h in picture["selected"])


def test_chain_tree_and_its_steps_match_the_walk():
    tree = L.chain_tree(5)
    for x in (-1.0, 0.5, 1.5, 2.5, 3.5, 4.5, 6.0):
        steps = L.unbalanced_steps(5, x)
        assert steps["leaf"] == tree.apply(np.array([[x]]))[0]
        assert steps["table"][-1]["AND so far"].replace(" ", "").count("1") == 1
        # without the bases the AND survives only where the row reaches the deepest level
        assert steps["without_base_empty"] == (steps["leaf"] not in (9, 10))
    steps = L.unbalanced_steps(5, 3.5)
    assert steps["leaf"] == 5 and len(steps["table"]) == 5
    assert steps["leaf_order"] == [10, 9, 7, 5, 3, 1]  # in order: the left chain first
    assert steps["table"][3]["AND without base"] == "000000"  # erased where the path has ended
    with pytest.raises(ValueError):
        L.chain_tree(0)


def test_depth_and_threads_measures_the_cores_and_models_beyond(monkeypatch):
    monkeypatch.setattr(L, "machine_threads", lambda: 1)
    result = L.depth_and_threads(3, 300, 3, 0.1, n_trees=2, repeats=1)
    assert {(r["method"], r["depth"]) for r in result["depth_points"]} == {
        (m, d) for m in L.METHODS for d in (1, 2, 3)}
    assert all(r["ns_per_tree_row"] > 0 and r["threads"] == 1 for r in result["depth_points"])
    measured = [r for r in result["thread_points"] if r["source"] == "measured"]
    modelled = [r for r in result["thread_points"] if r["source"] == "modelled"]
    assert {r["threads"] for r in measured} == {1} and {r["threads"] for r in modelled} == {2, 3}
    assert all(r["speedup"] == pytest.approx(1.0) for r in measured)
    # one measured count: the model assumes perfect scaling, as the plot's label says
    assert all(r["speedup"] == pytest.approx(r["threads"]) for r in modelled)
    assert result["serial_kernel"] and result["rows"] * result["n_trees"] < result["parallel_min_tree_rows"]
    assert result["depth_threads"] == 1 and result["cores"] == 1
    table = L.depth_table(result)
    assert [r["depth"] for r in table] == [1, 2, 3]
    assert all(r["bitmask / traversal"] == pytest.approx(r["bitmask ns"] / r["traversal ns"]) for r in table)
    with pytest.raises(ValueError):
        L.depth_and_threads(2, 100, 1, 0.0, min_depth=3)


def _fake_result(max_depth: int) -> dict:
    depths = range(1, max_depth + 1)
    ns = {"traversal": lambda d: 2.0 * d, "bitmask": lambda d: 2.0 ** d, "quickscorer": lambda d: 1.5 * 2 ** (d / 2)}
    return {"depth_points": [{"method": m, "depth": d, "ns_per_tree_row": f(d), "threads": 2}
                             for m, f in ns.items() for d in depths],
            "thread_points": [{"method": m, "threads": p, "speedup": s, "source": src, "ns_per_tree_row": 1.0}
                              for m in ns for p, s, src in ((1, 1.0, "measured"), (2, 1.8, "measured"),
                                                            (3, 2.4, "modelled"), (4, 2.9, "modelled"))],
            "bitmask_behind_from": 3, "serial_kernel": True, "parallel_min_tree_rows": 16_384,
            "max_depth": max_depth, "rows": 1_000, "threads": 4, "depth_threads": 1, "cores": 2,
            "missing": 0.1, "n_trees": 10}


def test_bitmask_behind_from_and_depth_table_on_known_times():
    table = L.depth_table(_fake_result(4))
    assert [round(r["bitmask / traversal"], 3) for r in table] == [1.0, 1.0, round(8 / 6, 3), 2.0]


def test_the_panel_figure_changes_its_curve_data_with_the_depth():
    import workbench.widgets as W

    first, second = (P.plot_depth_and_threads(_fake_result(d)) for d in (5, 4))
    digest, curves = W.curve_digest(first)
    assert curves >= 7  # three measured methods, three modelled, the ideal line (and the crossover mark)
    assert W.curve_digest(second)[0] != digest
    right = first.axes[1]
    dashed = [line for line in right.lines if line.get_linestyle() == "--"]
    assert len(dashed) == 3 and all(line.get_markerfacecolor() == "white" for line in dashed)
    assert all("modelled" in line.get_label() for line in dashed)


def test_patent_step_figures():
    from workbench.inference.experiments import patent_tables

    tables, picture = patent_tables(), L.patent_picture()
    for step in range(5):
        fig = P.plot_patent_step(tables, picture, step)
        assert len(fig.axes) == 2
        assert f"{len(picture['candidates'][step])} of 16 leaves" in fig.axes[0].get_title()


def test_library_agreement_tiny():
    pytest.importorskip("lightgbm")
    pytest.importorskip("xgboost")
    rows = L.library_agreement(n_rows=300, n_features=6, n_trees=3, max_depth=3)
    assert len(rows) == 9 and {r["library"] for r in rows} == {"XGBoost", "LightGBM", "scikit-learn"}
    assert all(r["largest |difference|"] < r["tolerance"] for r in rows)
    assert all(r["trees"] == 3 for r in rows)


def test_recorded_speedups_reads_the_static_figure(tmp_path):
    import json

    path = tmp_path / "results.json"
    assert L.recorded_speedups(path) is None  # no file
    path.write_text(json.dumps({"figures": {}}))
    assert L.recorded_speedups(path) is None  # no such figure
    points = [{"depth": 8, "method": m, "threads": p, "tree_rows_per_second": v}
              for m, per in (("traversal", {1: 100.0, 2: 190.0}), ("bitmask", {1: 2.0, 2: 4.2}))
              for p, v in per.items()]
    path.write_text(json.dumps({"figures": {"inference_shapes": {
        "scale": "small", "run": {"date": "2026-11-30T19:34:40+00:00"},
        "results": {"threads": points, "load_average_before": [1.2, 1.2, 1.1]}}}}))
    got = L.recorded_speedups(path)
    assert got["speedups"] == {"traversal": {1: 1.0, 2: 1.9}, "bitmask": {1: 1.0, 2: pytest.approx(2.1)}}
    assert got["depth"] == 8 and got["rows"] == 100_000 and got["n_trees"] == 50 and got["date"] == "2026-11-30"
    fig = P.plot_depth_and_threads(_fake_result(3), got)
    labels = [c.get_label() for c in fig.axes[1].collections]
    assert any(label.startswith("recorded") for label in labels)
