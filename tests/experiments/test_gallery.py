"""The README's generated results section."""

from pathlib import Path

from dtlab.experiments.gallery import BEGIN, END, render, section

ROOT = Path(__file__).resolve().parents[2]


def test_readme_section_is_in_sync_with_results_json():
    """Regenerating from the committed figures/results.json gives the committed README section."""
    readme = (ROOT / "README.md").read_text()
    committed = BEGIN + readme.split(BEGIN, 1)[1].split(END, 1)[0] + END
    assert committed == section(ROOT / "figures", "figures"), (
        "README results section is stale: run `python -m dtlab readme`")


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

    from dtlab.experiments import gallery

    def captions(res):
        return {"fig": f"{res['new_key']:.1f}"}

    producer = SimpleNamespace(name="old_thing", captions=captions, description="what it shows")
    monkeypatch.setattr(gallery, "_producers", lambda: [("figures", producer)])
    entry = {"status": "ok", "results": {"old_key": 1.0}, "figures": ["fig.png"],
             "run": {"commit": "abc1234", "date": "2026-11-30T10:00:00+00:00"}}
    text = render({"figures": {"old_thing": entry}, "runs": {}})
    assert "**old_thing**: recorded by an older version of its producer (abc1234, 2026-11-30" in text
    assert "'new_key'" in text and "| ![fig](figures/fig.png) | what it shows |" in text
