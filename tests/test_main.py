"""The command line: ``python -m workbench figures | bench | readme | info``."""

import json

import pytest

from workbench import __main__ as cli
from workbench.__main__ import main, run_producers
from workbench.goals import Goal, Rule
from workbench.registry import Producer

CLEAN = {"commit": "abc1234", "code": "f" * 40, "dirty": []}


@pytest.fixture(autouse=True)
def clean_tree(monkeypatch):
    """A clean checkout, whatever the working tree these tests run in holds (others may be editing it)."""
    monkeypatch.setattr(cli, "code_state", lambda: dict(CLEAN))


def test_figures_command_writes_figures_and_results(tmp_path):
    assert main(["figures", "--only", "tour", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    entry = results["figures"]["tour"]
    assert entry["status"] == "ok" and entry["technique"] == "tour"
    assert entry["results"]["cpu"]["agrees_with_sklearn"] is True
    assert sorted(entry["figures"]) == ["tour_chess3x3_board.png", "tour_chess3x3_board.svg", "tour_tree.png",
                                        "tour_tree.svg"]
    assert (tmp_path / "tour_tree.png").stat().st_size > 1000
    assert "machine" in results["runs"]["figures"]


def test_results_are_merged_and_stale_entries_dropped(tmp_path, capsys):
    (tmp_path / "results.json").write_text(json.dumps({"figures": {
        "greedy_regression_depth": {"status": "ok"}, "gdt_vs_cart": {"status": "ok"}}}))
    assert main(["figures", "--only", "tour", "--out", str(tmp_path)]) == 0
    figures = json.loads((tmp_path / "results.json").read_text())["figures"]
    assert set(figures) == {"greedy_regression_depth", "tour"}  # registered kept, renamed producer dropped
    assert "dropped stale figures entries: ['gdt_vs_cart']" in capsys.readouterr().out


def test_unknown_figure_name_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown"):
        main(["figures", "--only", "nope", "--out", str(tmp_path)])


def test_info_and_list(capsys):
    assert main(["info"]) == 0
    assert "cuda_available" in capsys.readouterr().out
    assert main(["figures", "--list"]) == 0
    listing = capsys.readouterr().out
    assert "tour" in listing and "[evolution]" in listing and "[greedy]" in listing


def test_readme_command_regenerates_only_the_section(tmp_path):
    assert main(["figures", "--only", "tour", "--out", str(tmp_path / "figures")]) == 0
    readme = tmp_path / "README.md"
    readme.write_text("# title\n\n<!-- results:begin -->\nold\n<!-- results:end -->\n\n## after\n")
    assert main(["readme", "--readme", str(readme), "--out", str(tmp_path / "figures")]) == 0
    text = readme.read_text()
    assert text.startswith("# title\n") and text.endswith("\n## after\n") and "old" not in text
    assert "![tour_tree](figures/tour_tree.png)" in text


def test_a_dirty_tree_is_refused(tmp_path, monkeypatch):
    """Commit, then measure: no flag records a run on uncommitted changes (its code would be in no commit)."""
    monkeypatch.setattr(cli, "code_state", lambda: {**CLEAN, "dirty": ["dtlab/backend.py"]})
    with pytest.raises(SystemExit, match=r"uncommitted changes \(dtlab/backend.py\).*commit them first"):
        main(["figures", "--only", "tour", "--out", str(tmp_path)])
    assert not (tmp_path / "results.json").exists()  # refused before running anything
    with pytest.raises(SystemExit):  # the old --allow-dirty is gone: argparse refuses it
        main(["figures", "--only", "tour", "--out", str(tmp_path), "--allow-dirty"])
    assert not (tmp_path / "results.json").exists()


def test_outside_a_checkout_the_commit_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "code_state", lambda: None)
    assert main(["figures", "--only", "tour", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "results.json").read_text())["figures"]["tour"]["run"]["commit"] is None


def test_every_run_of_a_benchmark_is_kept_with_its_verdict(tmp_path):
    """A run that misses, then one that passes on the same code: both stay, each with its verdict and spreads."""
    speeds = iter([0.9, 1.2])

    def fn(ctx):
        s = next(speeds)
        return {"comparisons": [{"peer": "p", "mode": "per_core", "speedup": s, "speedup_spread": [s, s + 0.1]}]}

    goal = Goal("ahead", (Rule("ahead", "worst round above 1x", lambda r: (
        r["comparisons"][0]["speedup_spread"][0] > 1, "worst round")),))
    table = {"tour_fake": Producer("tour_fake", fn, "tour", "fake", goal=goal)}
    for _ in range(2):
        assert run_producers(table, "benchmarks", None, "small", tmp_path, "cpu", 0) == 0
    entry = json.loads((tmp_path / "results.json").read_text())["benchmarks"]["tour_fake"]
    assert entry["results"]["comparisons"][0]["speedup"] == 1.2  # the latest run in full, as before
    history = entry["history"]
    assert [h["verdict"]["ahead"]["met"] for h in history] == [False, True]
    assert [h["spreads"][0]["speedup_spread"] for h in history] == [[0.9, 1.0], [1.2, 1.3]]
    assert {h["code"] for h in history} == {"f" * 40} and all(h["machine"] and h["scale"] == "small" for h in history)
    assert all(set(h["load_average"]) == {"start", "end"} for h in history)


def test_the_library_command_prints_the_backends_and_points_to_the_workbench(capsys):
    from dtlab.__main__ import main as library_main

    assert library_main(["info"]) == 0
    assert "cpu" in capsys.readouterr().out.lower()
    with pytest.raises(SystemExit) as stop:
        library_main(["figures"])
    assert stop.value.code == 2
    assert "python -m workbench figures" in capsys.readouterr().err
