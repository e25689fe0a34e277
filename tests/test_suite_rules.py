"""Rules of the test suite itself: under ``make test`` a missing peer library fails its tests (tests/conftest.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PEERS, REQUIRE_PEERS, missing_peer

ROOT = Path(__file__).resolve().parents[1]


def test_missing_peer_reads_importorskip_reasons():
    assert missing_peer("could not import 'xgboost': No module named 'xgboost'") == "xgboost"
    assert missing_peer("could not import 'dask.array': No module named 'dask'") == "dask.array"
    assert missing_peer("could not import 'cupy': No module named 'cupy'") is None  # a GPU library, no peer
    assert missing_peer("needs a real CUDA GPU") is None
    assert {"xgboost", "lightgbm", "liblinear", "dask", "distributed"} <= set(PEERS)


def _run_without_liblinear(tmp_path: Path, require: bool) -> subprocess.CompletedProcess:
    """Collect the LIBLINEAR comparison with ``liblinear`` made unimportable (a stub package that refuses)."""
    stub = tmp_path / "hidden" / "liblinear"
    stub.mkdir(parents=True, exist_ok=True)
    # importorskip skips on ModuleNotFoundError (another ImportError is an error of its own)
    (stub / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'liblinear' (hidden by the test)\")")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(stub.parent), os.environ.get("PYTHONPATH", "")]))
    env.pop(REQUIRE_PEERS, None)
    if require:
        env[REQUIRE_PEERS] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "tests/linear/test_vs_liblinear.py", "-q", "-rs"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("require", [False, True])
def test_a_missing_peer_skips_under_plain_pytest_and_fails_under_make_test(tmp_path, require):
    done = _run_without_liblinear(tmp_path, require)
    out = done.stdout + done.stderr
    if require:
        assert done.returncode != 0, out
        assert "the peer 'liblinear' is required, not skipped" in out and "hidden by the test" in out
    else:
        assert done.returncode in (0, 5), out  # 5: nothing left to run, the module skipped
        assert "1 skipped" in out and "could not import 'liblinear'" in out
