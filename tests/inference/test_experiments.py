"""Producers and plots of the inference technique, at tiny sizes."""

import numpy as np
import pytest

from dtlab.experiments.catalog import TECHNIQUES, load_all
from dtlab.experiments.registry import BENCHMARKS, FIGURES
from dtlab.inference import experiments as E
from dtlab.inference import plots as P


def test_registered():
    load_all()
    assert "inference" in TECHNIQUES
    assert {"inference_patent", "inference_shapes"} <= set(FIGURES)
    assert BENCHMARKS["inference_vs_peers"].technique == "inference"


def test_patent_tables_and_stepping():
    tables = E.patent_tables()
    assert tables["and"] == "00000010 00000000" and tables["class"] == 9
    assert [t["or"] for t in tables["levels"]][0] == "11111111 00000000"
    for step in (0, 2, None):
        fig = P.plot_patent_table(tables, step=step)
        assert len(fig.axes) == 1


def test_shape_thread_and_phase_experiments():
    rows = E.time_vs_depth(depths=(2, 5), n_trees=2, n_rows=300, repeats=1)
    assert {(r["method"], r["depth"]) for r in rows} == {(m, d) for m in E.CPU_METHODS for d in (2, 5)}
    assert all(r["ns_per_tree_row"] > 0 for r in rows)
    threads = E.throughput_vs_threads(depth=4, n_trees=2, n_rows=300, repeats=1)
    assert {r["threads"] for r in threads} == set(range(1, E.machine_threads() + 1))
    phases = E.decision_vs_combining(depths=(3,), n_rows=64, repeats=1)
    assert [r["n_tasks"] for r in phases] == [7, 3, 3]  # levels of 1, 2, 4 nodes: by node, by up to 4, by level
    for fig in (P.plot_time_vs_depth(rows), P.plot_threads(threads), P.plot_phases(phases)):
        assert fig.axes


def test_benchmark_at_a_tiny_size(monkeypatch):
    pytest.importorskip("xgboost")
    pytest.importorskip("lightgbm")
    monkeypatch.setitem(E.BENCH, "small", dict(n_rows=2_000, n_train=500, n_trees=5, n_features=8))
    result = E.benchmark_vs_peers("small", depths=(3,), repeats=1)
    assert {c["mode"] for c in result["comparisons"]} == {"per_core", "whole_machine"}
    assert len(result["comparisons"]) == 6
    goals = E.goals(result)
    assert set(goals) >= {"goal_met_xgboost_1_5x", "goal_met_sklearn_3x"}
    assert P.benchmark_captions({**result, **goals, "load_average_before": None})["inference_benchmark"]
    fig = P.plot_benchmark(result)
    assert len(fig.axes) == 2 and np.isfinite(result["cases"]["xgboost_depth3"]["per_core"]["peer_seconds"])
