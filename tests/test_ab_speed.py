"""scripts/ab_speed.py's pure helpers: the seeded data, the summaries, the checked-out trees, the arguments."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ab_speed", ROOT / "scripts" / "ab_speed.py")
ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ab)


def test_data_is_seeded_and_shaped():
    X, y = ab.dense(100, 5, 1, "regression")
    X2, y2 = ab.dense(100, 5, 1, "regression")
    assert X.dtype == np.float32 and X.shape == (100, 5) and y.dtype == np.float64
    assert X.tobytes() == X2.tobytes() and y.tobytes() == y2.tobytes()
    _, labels = ab.dense(100, 5, 1, "classification")
    assert set(np.unique(labels)) == {0, 1}
    S, t = ab.a9a_like(50, 120, 6)
    assert S.shape == (50, 120) and (np.diff(S.indptr) == 14).all() and (S.data == 1).all()
    assert S.has_sorted_indices and set(np.unique(t)) <= {0, 1}
    assert (ab.a9a_like(50, 120, 6)[0] != S).nnz == 0


def test_spread_and_format():
    s = ab.spread([3.0, 1.0, 2.0])
    assert (s["median"], s["min"], s["max"]) == (2.0, 1.0, 3.0)
    assert ab.fmt(s) == "2.0000 [1.0000, 3.0000]"


def test_every_scale_names_the_same_sizes():
    assert set(ab.SCALES["tiny"]) == set(ab.SCALES["default"])


def test_extract_a_commit_and_the_worktree(tmp_path):
    folder, sha, label = ab.extract("HEAD", tmp_path)
    assert folder == tmp_path / sha and (folder / "dtlab" / "__init__.py").is_file()
    assert label.startswith("HEAD = ") and sha == ab.git("rev-parse", "HEAD")
    assert ab.extract("HEAD", tmp_path)[0] == folder  # kept, not extracted again
    folder, _, label = ab.extract("WORKTREE", tmp_path)
    assert label.startswith("WORKTREE on ") and (folder / "dtlab" / "__init__.py").is_file()
    assert not list(folder.rglob("__pycache__"))


def test_private_base_refuses_a_folder_others_may_write(tmp_path, monkeypatch):
    monkeypatch.setattr(ab.tempfile, "gettempdir", lambda: str(tmp_path))
    base = ab.private_base()
    assert base.stat().st_mode & 0o777 == 0o700
    os.chmod(base, 0o777)
    with pytest.raises(SystemExit):
        ab.private_base()


def test_bad_arguments_are_refused():
    for argv in (["HEAD"], ["HEAD", "HEAD", "--only", "bogus"], ["HEAD", "HEAD", "--rounds", "0"],
                 ["HEAD", "HEAD", "--repeats", "0"]):
        with pytest.raises(SystemExit) as e:
            ab.main(argv)
        assert e.value.code == 2


def test_the_child_refuses_a_dtlab_from_elsewhere(tmp_path):
    (tmp_path / "elsewhere" / "dtlab").mkdir(parents=True)
    (tmp_path / "elsewhere" / "dtlab" / "__init__.py").write_text("")
    env = dict(os.environ, AB_SPEED_TREE=str(tmp_path / "expected"), PYTHONPATH=str(tmp_path / "elsewhere"))
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "ab_speed.py"), "--child", "greedy",
                           "--scale", "tiny"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0 and "not from" in proc.stderr


def test_a_differing_model_is_named_and_fails_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ab.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(ab, "extract", lambda rev, base: (base / rev, rev * 4, f"{rev} = {rev}"))
    calls = []

    def fake_child(script, folder, technique, scale, repeats):
        calls.append(folder.name)
        same = {"first": [2.0, 0.5], "timed": [1.0 if folder.name == "a" else 0.5, 0.1],
                "timed_cpu": [0.8 if folder.name == "a" else 0.2, 0.1], "digest": "x"}
        return {"same": same, "other": dict(same, digest=folder.name)}

    monkeypatch.setattr(ab, "run_child", fake_child)
    out = tmp_path / "ab.json"
    assert ab.main(["a", "b", "--rounds", "3", "--only", "linear", "--out", str(out)]) == 1
    assert calls == ["a", "b", "b", "a", "a", "b"]  # alternating which goes first
    text = capsys.readouterr().out
    assert "models differ: linear: other" in text and "  0.500   0.250  yes" in text
    report = json.loads(out.read_text())
    assert report["old"]["sha"] == "aaaa" and report["models_differ"] == ["linear: other"]
    assert len(report["loadavg_before"]) == 3 and report["cpu_count"] == os.cpu_count()
