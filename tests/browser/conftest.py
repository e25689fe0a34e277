"""The browser suite's fixtures: a JupyterLab server on a copy of the notebooks, and Debian's Chromium.

The server runs on a free loopback port with a random token, on a temporary
copy of ``notebooks/`` (JupyterLab autosaves: running the notebooks must not
touch the tracked files), with the worktree first on the kernel's
``PYTHONPATH``.  Chromium is the system's (``/usr/bin/chromium``, or
``$DTLAB_CHROMIUM``) driven by Playwright for Python; ``playwright install``
(which downloads a browser) is never used.  Without either, every browser test
is skipped with the reason (``make screens``, which needs them, sets
``DTLAB_REQUIRE_BROWSER=1``: then a missing one stops the run).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("DTLAB_CHROMIUM", "/usr/bin/chromium")
# Without the background-networking flags Chromium keeps dialling out, which a closed network refuses.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
SERVER_START_S = 90


def script(name: str):
    """The module ``scripts/<name>.py`` (the scripts folder is no package)."""
    import importlib

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def missing_browser() -> str | None:
    """Why the browser suite cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e .[dev]: the pip wheel carries its driver)"
    if not Path(CHROMIUM).exists():
        return (f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; .ci/run does it; "
                "or set DTLAB_CHROMIUM to another Chromium binary)")
    return None


def pytest_collection_modifyitems(config, items):
    reason = missing_browser()
    if reason is None:
        return
    # the marker, not the keyword: every test in this folder has the keyword "browser" (the package's name),
    # and the tests of the stored notebooks need no browser
    in_browser = [item for item in items if item.get_closest_marker("browser") is not None]
    if os.environ.get("DTLAB_REQUIRE_BROWSER") == "1" and in_browser:
        raise pytest.UsageError(f"DTLAB_REQUIRE_BROWSER=1 (make screens) but the browser suite cannot run: {reason}")
    skip = pytest.mark.skip(reason=f"browser suite skipped: {reason}")
    for item in in_browser:
        item.add_marker(skip)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_settings(settings_dir: Path) -> None:
    """User settings for a test server: every cell in the DOM (no windowing), no news or update checks."""
    settings = {
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    }
    for plugin, values in settings.items():
        package, name = plugin.rsplit("/", 1)
        path = settings_dir / package / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """``(base_url, token, notebooks_dir)`` of a JupyterLab server on a copy of ``notebooks/`` (taken at start)."""
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", work / "notebooks")
    # the files as copied, to compare a save with (the worktree may change while the suite runs)
    shutil.copytree(ROOT / "notebooks", work / "notebooks" / ".originals")
    for name in ("figures", "data"):  # notebooks read ../figures/... and the loaders read data/
        (work / name).symlink_to(ROOT / name)
    settings = work / "settings"
    _lab_settings(settings)
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # the test run's Agg would turn every figure into "<Figure size ...>" text
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(work / "workspaces"),
               JUPYTER_RUNTIME_DIR=str(work / "runtime"), NUMBA_ENABLE_CUDASIM="1",
               DTLAB_LAB_TOKEN=token)  # as make lab: the token in the environment, never on the command line
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--ServerApp.root_dir={work / 'notebooks'}",
           "--LabApp.expose_app_in_browser=True",
           f"--config={ROOT / 'scripts' / 'jupyter_lab_config.py'}"]  # as make lab: the token, saved without outputs
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(work / "lab.log", "w")
    proc = subprocess.Popen(cmd, cwd=work / "notebooks", env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_S
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"JupyterLab did not start in {SERVER_START_S} s:\n{(work / 'lab.log').read_text()[-3000:]}")
        time.sleep(0.5)
    yield base, token, work / "notebooks"
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, headless, through Playwright."""
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
