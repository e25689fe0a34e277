"""Shared figure helpers: savefig, the board, tree drawings, words for threads and speedups."""

import numpy as np
import pytest

from dtlab.datasets import chess3x3
from dtlab.plotting import draw_tree, plot_board, savefig
from dtlab.trees import FlatTree
from workbench.text import by_mode, comparison_phrase, speedup, threads


def test_savefig_and_board(tmp_path):
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


def test_words_for_threads_and_speedups():
    assert threads(1) == "1 thread" and threads(2) == "2 threads"
    assert speedup(0.8712) == "0.87x" and speedup(3.44) == "3.4x" and speedup(117.6) == "118x"
    entry = {"peer": "p", "mode": "whole_machine", "threads": {"dtlab": 2, "peer": 1}, "speedup": 5.0, "d": 3}
    assert comparison_phrase(entry) == "5x whole machine (dtlab 2 threads, peer 1 thread)"
    assert by_mode([entry, {**entry, "d": 4}], d=3) == {"whole_machine": entry}


def test_board_follows_rows_and_noise_attributes():
    fig = plot_board(*chess3x3(1_000, seed=0), max_points=5_000, bins=40)
    assert len(fig.axes) == 1 and "1,000 of 1,000 points" in fig.axes[0].get_title()
    many = chess3x3(20_000, seed=0)
    binned = plot_board(*many, max_points=5_000, bins=40).axes[0]
    assert len(binned.images) == 1 and "all 20,000 points in 40 x 40 bins" in binned.get_title()
    noisy = plot_board(*chess3x3(1_000, noise_attrs=3, seed=0), max_points=5_000, bins=40)
    assert len(noisy.axes) == 2 and "noise attribute 3" in noisy.axes[1].get_title()
