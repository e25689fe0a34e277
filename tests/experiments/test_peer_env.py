"""Peers outside the venv: a JSON-lines worker in another interpreter, and where ``make peers`` puts them."""

import re
import sys
import textwrap

import pytest

from workbench import peer_env


@pytest.fixture
def echo_script(tmp_path):
    path = tmp_path / "echo.py"
    path.write_text(textwrap.dedent("""
        import json, sys
        for line in sys.stdin:
            request = json.loads(line)
            if request["cmd"] == "fail":
                reply = {"error": "Traceback: asked to fail"}
            elif request["cmd"] == "die":
                sys.exit(3)
            elif request["cmd"] == "hang":
                import time
                time.sleep(60)
            else:
                reply = {"twice": 2 * request["x"]}
            print(json.dumps(reply), flush=True)
    """))
    return path


def test_worker_answers_reports_errors_and_a_death(echo_script):
    with peer_env.Worker(sys.executable, echo_script) as worker:
        assert worker.ask(cmd="double", x=21) == {"twice": 42}
        with pytest.raises(peer_env.WorkerError, match="asked to fail"):
            worker.ask(cmd="fail")
        assert worker.ask(cmd="double", x=1) == {"twice": 2}  # still serving
        with pytest.raises(peer_env.WorkerError, match="died on 'die'"):
            worker.ask(cmd="die")
        with pytest.raises(peer_env.WorkerError, match="exited"):
            worker.ask(cmd="double", x=1)


def test_worker_past_its_timeout_is_killed(echo_script):
    with peer_env.Worker(sys.executable, echo_script) as worker:
        assert worker.ask(cmd="double", x=2, timeout=30) == {"twice": 4}  # an answer within the limit
        with pytest.raises(peer_env.WorkerTimeout, match="'hang' within 0.5 s"):
            worker.ask(cmd="hang", timeout=0.5)
        assert worker.proc.poll() is not None  # killed, not left sleeping
        with pytest.raises(peer_env.WorkerError, match="exited"):
            worker.ask(cmd="double", x=1)


def test_missing_peers_say_how_to_build_them(tmp_path, monkeypatch):
    monkeypatch.setenv("DTLAB_PEERS", str(tmp_path))
    assert peer_env.peers_dir() == tmp_path
    monkeypatch.delitem(sys.modules, "liblinear_multicore.liblinear", raising=False)
    with pytest.raises(ModuleNotFoundError, match="make peers"):
        peer_env.liblinear_multicore()
    with pytest.raises(FileNotFoundError, match="make peers"):
        peer_env.peer_python("lleaves")


def _pins_in_makefile() -> set[str]:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    return set(re.findall(r'"([\w.-]+(?:==|<)[\w.]+)"', text.split("$(PEERS_STAMP):", 1)[1].split("\n\n", 1)[0]))


def test_the_pins_are_those_make_peers_installs():
    """peer_env's versions and the Makefile's ``make peers`` recipe (which reads nothing from peer_env) in step."""
    assert {peer_env.LIBLINEAR_MULTICORE, *peer_env.LLEAVES} <= _pins_in_makefile()


def test_the_built_peers_are_the_pinned_releases(liblinear_multicore_built, lleaves_python):
    """What ``make peers`` built (``make test`` builds it first): the pinned liblinear-multicore where peer_env
    looks for it, and lleaves with an llvmlite of the legacy pass manager in its own venv."""
    import importlib.metadata
    import subprocess

    assert liblinear_multicore_built == peer_env.peers_dir() / "liblinear-multicore" / "liblinear"
    found = {d.metadata["Name"].lower(): d.version
             for d in importlib.metadata.distributions(path=[str(liblinear_multicore_built.parent)])}
    name, version = peer_env.LIBLINEAR_MULTICORE.split("==")
    assert found == {name: version}
    versions = subprocess.run([str(lleaves_python), "-c", "import importlib.metadata as m, lleaves, llvmlite; "
                               "print(m.version('lleaves'), llvmlite.__version__)"],
                              capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert versions[0] == peer_env.LLEAVES[0].split("==")[1]
    assert tuple(int(p) for p in versions[1].split(".")[:2]) < (0, 45)
