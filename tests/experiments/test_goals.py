"""Goals declared beside their benchmarks, and the rule that a goal is met on a code only when every run meets it."""

import pytest

from workbench.goals import Goal, Rule, contender_spreads, verdict_on_code, worst_round

GOAL = Goal("at least 2x", (Rule("2x", "worst round >= 2x", lambda r: (r["worst"] >= 2, f"worst {r['worst']}x")),
                            Rule("same", "same output", lambda r: None if "same" not in r else (r["same"], ""))),
            history=(("2026-11-30", "at least 3x", "first set"), ("2026-12-01", "at least 2x", "why it changed")))


def test_goal_judges_each_rule_and_never_guesses():
    assert GOAL.judge({"worst": 2.5, "same": True}) == {"2x": {"met": True, "detail": "worst 2.5x"},
                                                        "same": {"met": True, "detail": ""}}
    got = GOAL.judge({"old_key": 1})  # an older producer's results: not judged, and why
    assert got["2x"]["met"] is None and "'worst'" in got["2x"]["detail"]
    assert got["same"] == {"met": None, "detail": "does not apply to this run"}


def test_goal_declaration_is_checked():
    with pytest.raises(ValueError, match="distinct"):
        Goal("x", (Rule("a", "", lambda r: None), Rule("a", "", lambda r: None)))
    with pytest.raises(ValueError, match="oldest"):
        Goal("x", (Rule("a", "", lambda r: None),), history=(("2026-12-02", "b", ""), ("2026-12-01", "a", "")))


def test_a_rerun_never_replaces_a_miss():
    miss = {"verdict": {"2x": {"met": False, "detail": ""}}}
    hit = {"verdict": {"2x": {"met": True, "detail": ""}}}
    old = {"verdict": {"2x": {"met": None, "detail": "not judged"}}}
    assert verdict_on_code([miss, hit], "2x") == {"met": False, "runs": 2, "met_runs": 1, "missed_runs": 1,
                                                  "unjudged": 0}
    assert verdict_on_code([hit, hit, old], "2x")["met"] is True
    assert verdict_on_code([old], "2x")["met"] is None


def test_worst_round_and_contender_spreads():
    assert worst_round({"speedup": 2.0, "speedup_spread": [1.5, 2.5]}) == 1.5
    assert worst_round({"speedup": 2.0, "speedup_min": 1.8}) == 1.8
    assert worst_round({"speedup": 2.0}) == 2.0  # a run of before the spreads: its median
    runs = {"a": {"seconds": [1.0, 2.0], "auc": 0.9, "dask_stats": []}, "b": {"error": "failed"}}
    assert contender_spreads(runs, "x: ") == [{"contender": "x: a", "seconds": [1.0, 2.0], "auc": 0.9}]


def test_every_benchmark_with_a_goal_declares_it():
    from workbench.catalog import load_all
    from workbench.registry import BENCHMARKS

    load_all()
    with_goal = {name for name, p in BENCHMARKS.items() if p.goal is not None}
    assert {"boosting_vs_peers", "boosting_dask", "greedy_regressor_vs_sklearn", "greedy_classifier_vs_sklearn",
            "inference_vs_peers", "inference_large", "inference_latency", "linear_vs_liblinear", "linear_dask",
            "evolution_host_loop"} <= with_goal
    for name in with_goal:
        goal = BENCHMARKS[name].goal
        assert goal.statement and goal.history, name  # the wording and where it came from
