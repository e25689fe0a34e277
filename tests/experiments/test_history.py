"""Every run of a benchmark kept: the code a run measured (git tree of the package), its history item, the merge."""

import subprocess
from types import SimpleNamespace

from workbench.goals import Goal, Rule, comparison_spreads
from workbench.history import code_of, code_state, history_item, merged_history, runs_on_latest_code

PRODUCER = SimpleNamespace(goal=Goal("fast", (Rule("fast", "2x", lambda r: (r["x"] >= 2, f"{r['x']}x")),)),
                           spreads=comparison_spreads)


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _repo(tmp_path):
    repo = tmp_path / "repo"
    (repo / "dtlab").mkdir(parents=True)
    (repo / "dtlab" / "a.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return repo


def test_code_is_the_package_tree_and_dirt_is_seen(tmp_path):
    repo = _repo(tmp_path)
    state = code_state(repo / "dtlab")
    assert state["dirty"] == [] and state["code"] == _git(repo, "rev-parse", "HEAD:dtlab")
    (repo / "README").write_text("outside the package: same code\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two")
    again = code_state(repo / "dtlab")
    assert again["commit"] != state["commit"] and again["code"] == state["code"]
    (repo / "dtlab" / "a.py").write_text("x = 2\n")
    (repo / "dtlab" / "new.py").write_text("")
    assert sorted(code_state(repo / "dtlab")["dirty"]) == ["dtlab/a.py", "dtlab/new.py"]
    assert code_of(state["commit"] + "+dirty", repo) is None  # the old recorder's mark: code in no commit
    assert code_of(None, repo) is None and code_of("0000000", repo) is None


def test_outside_a_checkout_there_is_nothing_to_check(tmp_path):
    (tmp_path / "pkg").mkdir()
    assert code_state(tmp_path / "pkg") is None


def _entry(date, code, x):
    return {"status": "ok", "scale": "small", "run": {"date": date, "commit": code[:3], "code": code},
            "results": {"x": x, "comparisons": [{"peer": "p", "speedup": x}]}}


def test_history_keeps_every_run_and_groups_by_code():
    info = {"machine": {"cpu_workers": 2}, "platform": "p", "commit": "aaa"}
    first = _entry("2026-12-01T00:00:00+00:00", "aaa111", 1.5)
    item = history_item(first, PRODUCER, info)
    assert item["verdict"] == {"fast": {"met": False, "detail": "1.5x"}}
    assert item["spreads"] == [{"peer": "p", "speedup": 1.5}] and item["machine"] == {"cpu_workers": 2}
    second = _entry("2026-12-02T00:00:00+00:00", "aaa111", 2.5)
    history = merged_history(first, second, PRODUCER, info, {"commit": "aaa"})  # the old entry had no history yet
    assert [h["date"][:10] for h in history] == ["2026-12-01", "2026-12-02"]
    second["history"] = history
    third = _entry("2026-12-03T00:00:00+00:00", "bbb222", 3.0)
    history = merged_history(second, third, PRODUCER, {}, {})
    assert len(history) == 3
    assert [h["date"][:10] for h in runs_on_latest_code(history)] == ["2026-12-03"]
    assert [h["date"][:10] for h in runs_on_latest_code(history[:2])] == ["2026-12-01", "2026-12-02"]
