"""The inference benchmark: dtlab timed as ``Forest.predict(method="auto")`` with its choice made first, and the
goal's two rules judged apart."""

import numpy as np
import pytest

from dtlab.inference import auto
from dtlab.inference.forest import Forest
from workbench.inference import bench as B


def _comparison(peer, worst, best=None, **extra):
    best = worst * 1.2 if best is None else best
    return {"peer": peer, "mode": "per_core", "case": "c", "speedup": (worst + best) / 2,
            "speedup_spread": [worst, best], **extra}


def test_goal_judges_the_ratios_and_every_peer_apart():
    """The auditor's case: 1.36x XGBoost in its worst round is ahead of every peer but short of 1.5x."""
    results = {"comparisons": [_comparison("XGBoost inplace_predict", 1.36), _comparison("scikit-learn predict_proba",
                                                                                          3.1),
                               _comparison("TL2cgen predict (gcc)", 1.9)]}
    verdict = B.GOAL.judge(results)
    assert verdict["ratios"]["met"] is False and "1.36x XGBoost inplace_predict" in verdict["ratios"]["detail"]
    assert verdict["every peer"]["met"] is True
    results["comparisons"][0]["speedup_spread"] = [1.5, 1.9]
    assert B.GOAL.judge(results)["ratios"]["met"] is True
    results["comparisons"].append(_comparison("LightGBM predict", 0.97))
    verdict = B.GOAL.judge(results)
    assert verdict["ratios"]["met"] is True and verdict["every peer"]["met"] is False
    assert "1 of 4 comparisons" in verdict["every peer"]["detail"]


def test_ratio_rule_needs_its_peers_and_says_when_only_medians_were_recorded():
    verdict = B.GOAL.judge({"comparisons": [_comparison("LightGBM predict", 2.0)]})
    assert verdict["ratios"] == {"met": None, "detail": "does not apply to this run"}
    old = {"comparisons": [{"peer": "XGBoost inplace_predict", "mode": "per_core", "speedup": 1.6}]}
    verdict = B.GOAL.judge(old)
    assert verdict["ratios"]["met"] is True and "judged on medians" in verdict["ratios"]["detail"]
    assert B.GOAL.history[0][1].startswith("best dtlab CPU method >= 1.5x XGBoost")  # the original wording kept


def _sklearn_model(n_trees=3, depth=3):
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return RandomForestClassifier(n_trees, max_depth=depth, random_state=0).fit(X, y), X


def test_auto_choice_is_what_predict_auto_runs():
    model, X = _sklearn_model()
    forest = Forest(model)
    auto.CACHE.clear()
    chosen = B.auto_choice(forest, X)
    assert chosen in B.CPU_METHODS and chosen in auto.CACHE.values()
    np.testing.assert_allclose(forest.predict(X, method="auto"), forest.predict(X, method=chosen))
    small = np.ascontiguousarray(X[:2])  # the serial small-batch path keeps its own choice, made on one thread
    assert B.auto_choice(forest, small) == forest._serving_method[small.dtype.char]


def test_compare_case_times_predict_auto_chosen_before_the_rounds(monkeypatch):
    """No best-of-three from the timed rounds: one dtlab contender, auto's call, whose choice is cached before
    the first timed round and recorded in every comparison."""
    model, X = _sklearn_model()
    auto.CACHE.clear()
    timed = []
    real = B.paired_times

    def spy(fns, repeats, **kw):
        timed.append(dict(auto.CACHE))  # what auto had chosen when the timing began
        return real(fns, repeats=repeats, **kw)

    monkeypatch.setattr(B, "paired_times", spy)
    out = B.compare_case("sklearn depth 3", "sklearn", model, X, repeats=5)
    assert len(timed) == 2 and all(timed)  # per core, whole machine: each with its choice made first
    for m in out["modes"].values():
        assert [c for c in m["seconds"] if c.startswith("dtlab")] == [B.AUTO]
        assert m["auto_method"] in B.CPU_METHODS
    for c in out["comparisons"]:
        assert c["method"] == "auto" and c["auto_choice"] == out["modes"][c["mode"]]["auto_method"]
        assert c["runs"] == 5 and c["peer"].startswith("scikit-learn")
    assert set(out["max_abs_difference"]) == {"dtlab bitmask", "dtlab quickscorer", "scikit-learn predict_proba"}


def test_latency_case_records_auto_choice_per_batch_and_mode():
    model, X = _sklearn_model()
    out = B.latency_case("sklearn depth 3", "sklearn", model, X, batches=(1, 4), calls=5, rounds=5)
    assert set(out["auto_method"]) == {"1", "4"}
    assert all(m in B.CPU_METHODS for per in out["auto_method"].values() for m in per.values())
    assert set(out["batches"]["1"]["per_core"]) == {B.AUTO, "scikit-learn predict_proba"}
    for c in out["comparisons"]:
        assert c["auto_choice"] == out["auto_method"][str(c["batch_rows"])][c["mode"]]


@pytest.mark.parametrize("name", ["inference_vs_peers", "inference_large", "inference_latency"])
def test_every_inference_benchmark_declares_the_goal(name):
    from workbench.catalog import load_all
    from workbench.registry import BENCHMARKS

    load_all()
    assert BENCHMARKS[name].goal is B.GOAL
    assert [r.name for r in B.GOAL.rules] == ["ratios", "every peer"]
