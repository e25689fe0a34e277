"""The figures CLI, the registry and the plotting helpers."""

import json

import numpy as np
import pytest

from dtlab.__main__ import main
from dtlab.datasets import chess3x3
from dtlab.experiments.registry import FIGURES, RunContext, load_all, register_figure
from dtlab.plotting import draw_tree, plot_board, savefig
from dtlab.trees import FlatTree


def test_figures_command_writes_figures_and_results(tmp_path):
    assert main(["figures", "--only", "tour", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    entry = results["figures"]["tour"]
    assert entry["status"] == "ok"
    assert entry["results"]["cpu"]["agrees_with_sklearn"] is True
    assert (tmp_path / "tour_tree.png").stat().st_size > 1000
    assert "machine" in results["runs"]["figures"]


def test_results_are_merged_not_overwritten(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"figures": {"older": {"status": "ok"}}}))
    assert main(["figures", "--only", "tour", "--out", str(tmp_path)]) == 0
    figures = json.loads((tmp_path / "results.json").read_text())["figures"]
    assert set(figures) >= {"older", "tour"}


def test_unknown_figure_name_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown"):
        main(["figures", "--only", "nope", "--out", str(tmp_path)])


def test_info_and_list(capsys):
    assert main(["info"]) == 0
    assert "cuda_available" in capsys.readouterr().out
    assert main(["figures", "--list"]) == 0
    assert "tour" in capsys.readouterr().out


def test_registry_refuses_duplicates():
    load_all()
    with pytest.raises(ValueError, match="twice"):
        register_figure("tour", technique="x", description="y")(lambda ctx: {})
    assert "tour" in FIGURES


def test_run_context_pick():
    assert RunContext(scale="small").pick(1, 2) == 1
    assert RunContext(scale="paper").pick(1, 2) == 2


def test_savefig_and_plots(tmp_path):
    X, y = chess3x3(500, seed=0)
    paths = savefig(plot_board(X, y), "board", out_dir=tmp_path)
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.exists() for p in paths)
    with pytest.raises(ValueError, match="plain file stem"):
        savefig(plot_board(X, y), "a/b", out_dir=tmp_path)


def test_draw_tree_labels_and_limits():
    tree = FlatTree(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                    value=[[3, 1], [3, 0], [0, 1]], n_features=1, classes=np.array(["no", "yes"]))
    fig = draw_tree(tree, feature_names=["age"])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "age <= 0.5" in texts and "class no\nn=3" in texts and "class yes\nn=1" in texts
    with pytest.raises(ValueError, match="max_nodes"):
        draw_tree(tree, max_nodes=2)
