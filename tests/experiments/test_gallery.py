"""The README's generated results section."""

from pathlib import Path

from workbench.gallery import BEGIN, END, render, section
from workbench.history import without_dirty_commit

ROOT = Path(__file__).resolve().parents[2]


def test_readme_section_is_in_sync_with_results_json():
    """Regenerating from the committed figures/results.json gives the committed README section."""
    readme = (ROOT / "README.md").read_text()
    committed = BEGIN + readme.split(BEGIN, 1)[1].split(END, 1)[0] + END
    assert committed == section(ROOT / "figures", "figures"), (
        "README results section is stale: run `python -m workbench readme`")


def test_every_figure_in_results_is_shown_with_a_caption():
    import json

    results = json.loads((ROOT / "figures" / "results.json").read_text())
    text = render(results)
    for kind in ("figures", "benchmarks"):
        for entry in results[kind].values():
            for name in entry["figures"]:
                if name.endswith(".png"):
                    assert f"(figures/{name})" in text
                    assert (ROOT / "figures" / name).exists()


def test_speed_table_states_threads_for_every_ratio():
    results = {"benchmarks": {"tour_traversal_throughput": {"status": "ok", "figures": [], "results": {
        "n_rows": 10, "n_nodes": 3, "max_depth": 1, "comparisons": [
            {"peer": "p", "mode": "per_core", "threads": {"dtlab": 1, "peer": 1}, "speedup": 2.0, "n_rows": 10},
            {"peer": "p", "mode": "whole_machine", "threads": {"dtlab": 4, "peer": 1}, "speedup": 7.0,
             "peer_note": "no threads", "n_rows": 10}]}}}}
    text = render(results)
    assert "| tour_traversal_throughput | p | 10 rows | per core | 1 / 1 | 2x |  |" in text
    assert "| tour_traversal_throughput | p | 10 rows | whole machine | 4 / 1 | 7x | no threads |" in text
    assert "2x per core (dtlab 1 thread, peer 1 thread), 7x whole machine (dtlab 4 threads, peer 1 thread)" in text


def test_results_of_an_older_producer_are_named_not_rendered(monkeypatch):
    """An entry whose results lack a key today's captions read: a line says which run and which key, and its
    figures keep the producer's description (no crash, no guessed number)."""
    from types import SimpleNamespace

    from workbench import gallery

    def captions(res):
        return {"fig": f"{res['new_key']:.1f}"}

    producer = SimpleNamespace(name="old_thing", captions=captions, description="what it shows")
    monkeypatch.setattr(gallery, "_producers", lambda: [("figures", producer)])
    entry = {"status": "ok", "results": {"old_key": 1.0}, "figures": ["fig.png"],
             "run": {"commit": "abc1234", "date": "2026-11-30T10:00:00+00:00"}}
    text = render({"figures": {"old_thing": entry}, "runs": {}})
    assert "**old_thing**: recorded by an older version of its producer (abc1234, 2026-11-30" in text
    assert "'new_key'" in text and "| ![fig](figures/fig.png) | what it shows |" in text


def _run(date, code, commit, met, spreads):
    return {"date": date, "commit": commit, "code": code, "status": "ok", "spreads": spreads,
            "machine": {"cpu_workers": 2, "cuda_available": False}, "load_average": {"start": 1.0, "end": 1.5},
            "verdict": {"faster peer": {"met": met, "detail": "slowest against fastest"}}}


def test_goal_verdict_counts_every_run_on_the_latest_code(monkeypatch):
    """A miss then a pass on one code (two commits, one dtlab/ tree): missed, both runs shown with their spreads;
    an older code's runs in brief; the goal's wording history; a run of the old recorder on uncommitted changes
    counted apart from the codes."""
    from types import SimpleNamespace

    from workbench import gallery
    from workbench.goals import Goal, Rule

    goal = Goal("hist at most the faster peer's time", (Rule("faster peer", "slowest <= fastest", None),),
                history=(("2026-12-01", "hist at most the faster peer's time", "the issue's goal"),))
    producer = SimpleNamespace(name="boosting_dask", captions=None, description="d", goal=goal)
    monkeypatch.setattr(gallery, "_producers", lambda: [("benchmarks", producer)])
    hist = [{"contender": "dtlab hist", "seconds": [2.21, 2.49, 3.56]},
            {"contender": "lightgbm.dask", "seconds": [3.05, 3.51, 4.11]}]
    history = [_run("2026-12-03T18:00:00+00:00", "a" * 40, "46eb1f1", False, []),
               _run("2026-12-04T01:39:51+00:00", "b" * 40, "d85cfa1", False, hist),
               _run("2026-12-04T01:48:41+00:00", "b" * 40, "0f9a91d", True, hist)]
    entry = {"status": "ok", "figures": [], "results": {}, "history": history,
             "run": {"commit": "0f9a91d", "date": "2026-12-04T01:48:41+00:00"}}
    text = render({"benchmarks": {"boosting_dask": entry}, "runs": {}})
    assert "on its latest code `bbbbbbb` (commits d85cfa1, 0f9a91d), 2 run(s)" in text
    assert "*faster peer* (slowest <= fastest): **missed** on this code (met in 1 of 2 run(s))" in text
    assert "run 2026-12-04 01:39 UTC (commit d85cfa1, 2 cores, no GPU, load 1.0-1.5): dtlab hist 2.49 s " \
           "[2.21-3.56]; lightgbm.dask 3.51 s [3.05-4.11] -- *faster peer* **missed**" in text
    assert "earlier: 1 run(s) on 1 other code(s): *faster peer* met in 0, missed in 1" in text
    assert '2026-12-01: "hist at most the faster peer\'s time" (the issue\'s goal)' in text
    old = without_dirty_commit(_run("2026-12-02T07:00:00+00:00", "c" * 40 + "+dirty", "8436af9+dirty", True, []))
    history.insert(0, old)
    text = render({"benchmarks": {"boosting_dask": entry}, "runs": {}})
    assert "earlier: 2 run(s) on 1 other code(s), 1 on uncommitted changes (code in no commit, recorded " \
           "before 05ab4de): *faster peer* met in 1, missed in 1" in text
    assert "+dirty" not in text and "on its latest code `bbbbbbb` (commits d85cfa1, 0f9a91d), 2 run(s)" in text
