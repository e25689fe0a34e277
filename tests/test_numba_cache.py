"""numba's cache follows the package's sources (dtlab/_numba_cache.py): an edited callee in another module is
compiled again, never loaded stale; a user's NUMBA_CACHE_DIR is kept; old folders are pruned."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dtlab import _numba_cache

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh_env(monkeypatch, tmp_path):
    """No NUMBA_CACHE_DIR, a user cache in tmp_path; numba's setting restored afterwards."""
    from numba.core import config

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "CACHE_DIR", config.CACHE_DIR)
    return tmp_path


def _package(root: Path, body: str = "return x + 1") -> Path:
    pkg = root / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "callee.py").write_text(f"import numba\n\n@numba.njit(cache=True)\ndef g(x):\n    {body}\n")
    (pkg / "caller.py").write_text("import numba\nfrom .callee import g\n\n"
                                   "@numba.njit(cache=True)\ndef f(x):\n    return g(x) * 10\n")
    return pkg


def test_the_folder_follows_the_sources_and_a_users_setting_is_kept(fresh_env, monkeypatch):
    pkg = _package(fresh_env)
    first = _numba_cache.configure(pkg)
    assert first is not None and Path(first).is_dir() and str(fresh_env / "cache") in first
    assert os.environ["NUMBA_CACHE_DIR"] == first
    from numba.core import config
    assert config.CACHE_DIR == first  # numba already imported here: its setting follows
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert _numba_cache.configure(pkg) == first  # unchanged sources: the same folder
    (pkg / "callee.py").write_text((pkg / "callee.py").read_text().replace("x + 1", "x + 2"))
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    second = _numba_cache.configure(pkg)
    assert second != first and Path(second).parent == Path(first).parent
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(fresh_env / "mine"))
    assert _numba_cache.configure(pkg) is None and os.environ["NUMBA_CACHE_DIR"] == str(fresh_env / "mine")


def test_a_folder_others_may_write_is_not_used(fresh_env):
    """numba unpickles its cache files: a cache folder another user could write would run their code."""
    pkg = _package(fresh_env)
    folder = Path(_numba_cache.configure(pkg))
    assert folder.stat().st_mode & 0o777 == 0o700
    os.environ.pop("NUMBA_CACHE_DIR")
    folder.parent.chmod(0o777)  # the dtlab/numba folder: anyone could plant a folder of pickles in it
    try:
        assert _numba_cache.configure(pkg) is None and "NUMBA_CACHE_DIR" not in os.environ
    finally:
        folder.parent.chmod(0o755)
    folder.chmod(0o775)
    assert _numba_cache.configure(pkg) is None
    folder.chmod(0o700)
    assert _numba_cache.configure(pkg) == str(folder)


def test_old_folders_of_a_checkout_are_pruned_and_other_checkouts_kept(fresh_env, monkeypatch):
    pkg = _package(fresh_env)
    (fresh_env / "elsewhere").mkdir()
    other = _package(fresh_env / "elsewhere")  # another checkout: its folders are its own
    made = []
    for k in range(_numba_cache.KEEP + 2):
        (pkg / "callee.py").write_text(f"import numba\n\n@numba.njit(cache=True)\ndef g(x):\n    return x + {k}\n")
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
        made.append(Path(_numba_cache.configure(pkg)))
        os.utime(made[-1], (k + 1_000_000, k + 1_000_000))  # in order of making, whatever the clock's grain
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    kept_other = Path(_numba_cache.configure(other))
    left = sorted(p for p in made if p.is_dir())
    assert left == sorted(made[-_numba_cache.KEEP:]) and kept_other.is_dir()


def test_an_edited_callee_is_compiled_again_not_loaded_stale(tmp_path):
    """The case numba's own cache gets wrong: caller.f inlines callee.g; after g changes, f must change too."""
    pkg = _package(tmp_path)
    script = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("_numba_cache", {str(ROOT / "dtlab" / "_numba_cache.py")!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.configure(__import__("pathlib").Path({str(pkg)!r})) is not None
        sys.path.insert(0, {str(tmp_path)!r})
        from pkg.caller import f
        print(f(1))
    """)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")

    def run() -> str:
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert run() == "20" and run() == "20"  # compiled, then loaded from the cache
    (pkg / "callee.py").write_text((pkg / "callee.py").read_text().replace("x + 1", "x + 2"))
    assert run() == "30"
