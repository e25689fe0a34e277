"""Notebooks stay committed without outputs while people run them; ``make lab``'s command line.

No browser needed: these run in every ``make test``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, script

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _filter_commands() -> dict[str, str]:
    """The git config ``make setup`` writes (read from the Makefile), with this Python for the venv's."""
    text = (ROOT / "Makefile").read_text()
    found = dict(re.findall(r"git config (\S+) '(.+?)'", text))
    found.update(re.findall(r"git config (\S+) (cat)\b", text))
    assert {"filter.nbstripout.clean", "filter.nbstripout.smudge", "diff.ipynb.textconv"} <= set(found), found
    return {k: v.replace('"$(abspath $(PY))"', f'"{sys.executable}"') for k, v in found.items()}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_is_what_the_filter_leaves(path):
    """No outputs, and byte for byte what the git filter of ``make setup`` writes (its very command, extra keys
    included): otherwise ``git status`` lists the notebook as changed in every checkout with the filter."""
    pytest.importorskip("nbstripout")
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code), f"{path.name} has outputs"
    clean = shlex.split(_filter_commands()["filter.nbstripout.clean"])
    stripped = subprocess.run(clean + ["-t"], input=path.read_text(), capture_output=True, text=True,
                              check=True).stdout
    assert stripped == path.read_text(), (f"{path.name}: run `{shlex.join(clean[1:])} {path}` and commit "
                                          "the result")


def test_running_a_notebook_leaves_git_status_clean(tmp_path):
    """With the filter ``make setup`` installs, outputs, counts and widget state written by a run stay out of git."""
    pytest.importorskip("nbstripout")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "clone"
    (repo / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / ".gitattributes", repo / ".gitattributes")
    nb_path = repo / "notebooks" / NOTEBOOKS[0].name
    shutil.copy(NOTEBOOKS[0], nb_path)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "ci@example.invalid")
    _git(repo, "config", "user.name", "ci")
    for key, value in _filter_commands().items():
        _git(repo, "config", key, value)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "notebooks without outputs")

    nb = json.loads(nb_path.read_text())  # what JupyterLab saves after Run All
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = i + 1
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]},
                           {"output_type": "display_data", "metadata": {},
                            "data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure size 640x480>"]}}]
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.2"}
    nb_path.write_text(json.dumps(nb, indent=1))
    assert _git(repo, "diff") == "", "outputs of a run show in git diff"
    # git status compares file sizes before contents, so it lists the file until the index is refreshed
    # with the filtered content; what would be committed is unchanged:
    _git(repo, "add", "-A")
    assert _git(repo, "status", "--porcelain") == "", "outputs of a run would be committed"


def test_lab_saves_notebooks_as_committed(tmp_path):
    """``make lab``'s save hook: a notebook saved after a run is byte for byte the committed file."""
    pytest.importorskip("nbstripout")
    import nbformat
    from jupyter_server.services.contents.filemanager import FileContentsManager

    config = {"get_config": lambda: _Config()}
    exec((ROOT / "scripts" / "jupyter_lab_config.py").read_text(), config)
    for source in NOTEBOOKS:
        shutil.copy(source, tmp_path / source.name)
    manager = FileContentsManager(root_dir=str(tmp_path), pre_save_hook=config["strip_outputs_on_save"])
    for source in NOTEBOOKS:
        model = manager.get(source.name)
        nb = model["content"]
        for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            cell.execution_count = i + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
            cell.metadata["execution"] = {"iopub.status.busy": "2026-11-30T15:00:00Z"}
        nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
        nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
        manager.save({"type": "notebook", "format": "json", "content": nb}, source.name)
        assert (tmp_path / source.name).read_bytes() == source.read_bytes(), f"{source.name} changed on save"


class _Config:
    """Stands in for the traitlets config a Jupyter config file assigns to."""

    def __getattr__(self, name):
        value = _Config()
        object.__setattr__(self, name, value)
        return value


def _lab_script():
    return script("lab")


def test_lab_command_line():
    """``make lab``: loopback, --allow-root only as root, no browser when headless, notebooks/ as root; the token
    in the environment, not on the command line (``ps`` shows a command line to every user)."""
    lab = _lab_script()
    as_user = lab.lab_command(8888, as_root=False, open_browser=False, extra=[])
    as_root = lab.lab_command(8888, as_root=True, open_browser=True, extra=["--debug"])
    assert "--ip=127.0.0.1" in as_user and not any("token" in arg.lower() for arg in as_user + as_root)
    assert lab.lab_environment("tok", {"MPLBACKEND": "Agg", "HOME": "/h", "LAB_TOKEN": "tok"}) == {
        "HOME": "/h", "DTLAB_LAB_TOKEN": "tok"}
    assert "--allow-root" not in as_user and "--allow-root" in as_root
    assert "--no-browser" in as_user and "--no-browser" not in as_root and as_root[-1] == "--debug"
    assert f"--ServerApp.root_dir={ROOT / 'notebooks'}" in as_user
    port = lab.free_port(20_000)
    assert 20_000 <= port < 20_050


def test_lab_config_takes_the_token_out_of_the_environment(monkeypatch):
    """The server's config file sets the token from ``DTLAB_LAB_TOKEN`` and removes the variable, so the kernels
    the server starts do not inherit it."""
    monkeypatch.setenv("DTLAB_LAB_TOKEN", "s3cret")
    config = _Config()
    exec((ROOT / "scripts" / "jupyter_lab_config.py").read_text(), {"get_config": lambda: config})
    assert config.IdentityProvider.token == "s3cret"
    assert "DTLAB_LAB_TOKEN" not in os.environ


def test_make_lab_serves_with_its_token_which_no_command_line_shows(tmp_path):
    """``scripts/lab.py`` as ``make lab`` runs it: the server answers with the token, refuses without it, and
    neither its command line (``/proc/<pid>/cmdline``) nor a kernel it starts (environment, command line) holds it."""
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("no /proc here to read a process's command line from")
    lab = _lab_script()
    port, token = lab.free_port(28_000), secrets.token_hex(16)
    env = dict(os.environ, LAB_TOKEN=token, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "lab.py"), f"--port={port}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/api"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/status?token={token}", timeout=5) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert proc.poll() is None, "make lab's server exited"
                assert time.monotonic() < deadline, "make lab's server did not answer within 120 s"
                time.sleep(0.5)
        with pytest.raises(urllib.error.HTTPError, match="403"):
            urllib.request.urlopen(f"{base}/kernels?token=wrong{token}", timeout=5)
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "jupyter" in cmdline and token not in cmdline
        auth = {"Authorization": f"token {token}"}
        request = urllib.request.Request(f"{base}/kernels", data=b"{}", headers=auth, method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            kernel_id = json.loads(response.read())["id"]
        kernel_pid = _child_pid(proc.pid, "ipykernel", timeout_s=60)
        assert token not in Path(f"/proc/{kernel_pid}/environ").read_bytes().decode()
        assert token not in Path(f"/proc/{kernel_pid}/cmdline").read_bytes().decode()
        urllib.request.urlopen(urllib.request.Request(f"{base}/kernels/{kernel_id}", headers=auth, method="DELETE"),
                               timeout=60)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _child_pid(parent: int, word: str, timeout_s: float) -> int:
    """A child process of ``parent`` whose command line holds ``word`` (waiting up to ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
                if ppid == parent and word in (stat.parent / "cmdline").read_bytes().decode():
                    return int(stat.parent.name)
            except (OSError, IndexError, ValueError):  # a process that ended meanwhile
                continue
        time.sleep(0.5)
    raise AssertionError(f"no child process of {parent} running {word} within {timeout_s} s")


def test_notebook_run_time_table_is_generated_from_the_recorded_times():
    """``notebooks/README.md``'s run times are what ``scripts/notebook_times.py`` makes of the committed
    ``figures/screens/times.json`` (``make screens`` writes both): a typed time would differ."""
    notebook_times = script("notebook_times")
    times = notebook_times.load()
    text = (ROOT / "notebooks" / "README.md").read_text()
    begin, end = text.index(notebook_times.BEGIN), text.index(notebook_times.END) + len(notebook_times.END)
    assert text[begin:end] == notebook_times.table(times), "run `python scripts/notebook_times.py readme`"
    assert sorted(times) == [p.name for p in NOTEBOOKS], "times.json lacks a notebook: run `make screens`"


def test_notebook_times_record_and_render(tmp_path):
    notebook_times = script("notebook_times")
    path = tmp_path / "times.json"
    notebook_times.record("09_x.ipynb", path, run_all_s=12.345, slider_s=0.96, slider_with_run=True)
    notebook_times.record("09_x.ipynb", path, headless_s=71.0)
    entry = notebook_times.load(path)["09_x.ipynb"]
    assert entry["run_all_s"] == 12.3 and entry["headless_s"] == 71.0 and entry["slider_with_run"] is True
    assert entry["cpu_cores"] == os.cpu_count() and "date" in entry
    rendered = notebook_times.table(notebook_times.load(path))
    assert "| `09_x` | 71.0 s | 12.3 s | 1.0 s (with the panel's Run) |" in rendered
    assert "Slowest headless run: 71.0 s, over the 60 s limit" in rendered
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{notebook_times.BEGIN}\nold\n{notebook_times.END}\nafter\n")
    notebook_times.write_readme(notebook_times.load(path), readme)
    assert readme.read_text() == f"before\n{rendered}\nafter\n"


def test_readme_gallery_shows_every_notebook():
    """The README's screenshot gallery links one screenshot per notebook (the browser suite writes them)."""
    readme = (ROOT / "README.md").read_text()
    missing = [p.stem for p in NOTEBOOKS if f"(figures/screens/{p.stem}.png)" not in readme]
    assert not missing, f"README gallery lacks the screenshots of {missing}"
