"""The command line: ``python -m dtlab figures | bench | readme | info``."""

import json

import pytest

from dtlab.__main__ import main


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
