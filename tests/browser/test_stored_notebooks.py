"""Notebooks stay committed without outputs while people run them; ``make lab``'s command line.

No browser needed: these run in every ``make test``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

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
    """No outputs, and byte for byte what nbstripout writes: otherwise a run shows as a change."""
    pytest.importorskip("nbstripout")
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code), f"{path.name} has outputs"
    stripped = subprocess.run([sys.executable, "-m", "nbstripout", "--keep-id", "-t"], input=path.read_text(),
                              capture_output=True, text=True, check=True).stdout
    assert stripped == path.read_text(), f"{path.name}: run `nbstripout --keep-id {path}` and commit the result"


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


def test_lab_command_line():
    """``make lab``: loopback, a token, --allow-root only as root, no browser when headless, notebooks/ as root."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import lab
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    as_user = lab.lab_command(8888, "tok", as_root=False, open_browser=False, extra=[])
    as_root = lab.lab_command(8888, "tok", as_root=True, open_browser=True, extra=["--debug"])
    assert "--ip=127.0.0.1" in as_user and "--IdentityProvider.token=tok" in as_user
    assert "--allow-root" not in as_user and "--allow-root" in as_root
    assert "--no-browser" in as_user and "--no-browser" not in as_root and as_root[-1] == "--debug"
    assert f"--ServerApp.root_dir={ROOT / 'notebooks'}" in as_user
    port = lab.free_port(20_000)
    assert 20_000 <= port < 20_050


def test_readme_gallery_shows_every_notebook():
    """The README's screenshot gallery links one screenshot per notebook (the browser suite writes them)."""
    readme = (ROOT / "README.md").read_text()
    missing = [p.stem for p in NOTEBOOKS if f"(figures/screens/{p.stem}.png)" not in readme]
    assert not missing, f"README gallery lacks the screenshots of {missing}"
