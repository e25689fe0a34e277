"""Rules of the test suite itself: under ``make test`` a missing peer library, or a missing build of ``make peers``,
fails its tests (tests/conftest.py)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUILT_PEERS, PEERS, REQUIRE_PEERS, missing_peer

ROOT = Path(__file__).resolve().parents[1]


def test_missing_peer_reads_importorskip_reasons():
    assert missing_peer("could not import 'xgboost': No module named 'xgboost'") == "xgboost"
    assert missing_peer("could not import 'dask.array': No module named 'dask'") == "dask.array"
    assert missing_peer("could not import 'cupy': No module named 'cupy'") is None  # a GPU library, no peer
    assert missing_peer("needs a real CUDA GPU") is None
    # an importorskip'd peer that imports a missing peer: the missing one is named
    assert missing_peer("could not import 'tl2cgen': No module named 'treelite'") == "treelite"
    assert missing_peer("the peer build 'lleaves' is missing: no venv at .peers/lleaves") == "lleaves"
    assert missing_peer("the peer build 'something-else' is missing") is None
    assert {"xgboost", "lightgbm", "liblinear", "dask", "distributed", "pystreed", "pycontree", "tl2cgen",
            "treelite"} <= set(PEERS)
    assert set(BUILT_PEERS) == {"liblinear-multicore", "lleaves"}


def test_every_declared_peer_is_required():
    """Every import name of the ``peers`` extra (pyproject.toml) is in :data:`PEERS` (dask-ml's tests import it as
    ``dask_ml``, its own package: a part of ``dask``'s benchmark)."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[ ]", d)[0].lower() for d in extras["peers"]}
    imports = {"liblinear-official": "liblinear", "dask-ml": "dask"}
    assert {imports.get(n, n) for n in names} <= set(PEERS)
    assert {re.split(r"[<>=\[ ]", d)[0].lower() for d in extras["dev"]} >= names


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



INFERENCE = "tests/inference/test_experiments.py::"
#: A test of each peer that is not imported from the venv's site-packages by name alone: the modules a stub hides
#: (None: the builds of ``make peers``, hidden by an empty ``DTLAB_PEERS``), the test that needs it.
HIDDEN = {
    "tl2cgen": (("tl2cgen",), INFERENCE + "test_a_compile_past_its_limit_leaves_the_engine_out"),
    "treelite": (("treelite",), INFERENCE + "test_a_compile_past_its_limit_leaves_the_engine_out"),
    "pycontree": (("pycontree",),
                  "tests/evolution/test_experiments.py::test_optimal_trees_run_in_a_child_process[ConTree]"),
    "liblinear-multicore": (None, "tests/linear/test_multicore_liblinear.py::test_the_multicore_options_are_its_own"),
    "lleaves": (None, INFERENCE + "test_lleaves_predicts_as_lightgbm"),
}
#: Hidden together in one run (treelite apart: with tl2cgen hidden, nothing imports it).
GROUPS = [("tl2cgen", "pycontree", "liblinear-multicore", "lleaves"), ("treelite",)]


def _run_hiding(tmp_path: Path, peers: tuple, require: bool) -> subprocess.CompletedProcess:
    """Run the tests of ``peers`` (:data:`HIDDEN`) with their modules made unimportable (stub packages that
    refuse) and the builds of ``make peers`` missing (``DTLAB_PEERS`` an empty folder)."""
    stubs = tmp_path / "hidden"
    stubs.mkdir(parents=True, exist_ok=True)
    for peer in peers:
        for module in HIDDEN[peer][0] or ():
            (stubs / module).mkdir(parents=True, exist_ok=True)
            (stubs / module / "__init__.py").write_text(
                f"raise ModuleNotFoundError(\"No module named '{module}' (hidden by the test)\")")
    (tmp_path / "no-peers").mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(stubs), os.environ.get("PYTHONPATH", "")]),
               DTLAB_PEERS=str(tmp_path / "no-peers"))
    env.pop(REQUIRE_PEERS, None)
    if require:
        env[REQUIRE_PEERS] = "1"
    nodes = list(dict.fromkeys(HIDDEN[peer][1] for peer in peers))
    return subprocess.run([sys.executable, "-m", "pytest", *nodes, "-q", "-rs"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("peers", GROUPS, ids="-".join)
def test_a_missing_peer_or_peer_build_fails_under_make_test(tmp_path, peers):
    done = _run_hiding(tmp_path, peers, require=True)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    for peer in peers:
        assert f"the peer {peer!r} is required, not skipped" in out, out
    for cause in {"hidden by the test" if HIDDEN[peer][0] else "(run `make peers`)" for peer in peers}:
        assert cause in out, out
    summary = out.strip().splitlines()[-1]
    assert "passed" not in summary and "skipped" not in summary, out


def test_missing_peers_and_peer_builds_skip_under_plain_pytest(tmp_path):
    done = _run_hiding(tmp_path, GROUPS[0], require=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"{len(GROUPS[0])} skipped" in out and "passed" not in out and "failed" not in out, out
    for reason in ("could not import 'tl2cgen'", "could not import 'pycontree'",
                   "the peer build 'liblinear-multicore' is missing", "the peer build 'lleaves' is missing"):
        assert reason in out, out
