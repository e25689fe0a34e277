"""Jupyter server settings for ``make lab`` (passed by ``scripts/lab.py`` as ``--config``): the token, saving.

Notebooks are saved without outputs, as they are committed: a run in JupyterLab
(autosave included) leaves the files, and so ``git status``, unchanged unless a
cell's source changed.  The outputs stay on screen for the session.  Notebook
metadata (kernelspec, ...) is kept as it is on disk, so a kernel's name or
version does not show up as a change either.  ``DTLAB_KEEP_OUTPUTS=1 make lab``
saves outputs (then the nbstripout git filter of ``make setup`` still keeps
them out of commits).
"""

import json
import os

# the keys nbstripout strips by default (as the git filter does), and the per-machine language_info
STRIP_KEYS = ["metadata.signature", "metadata.widgets", "metadata.language_info", "cell.metadata.collapsed",
              "cell.metadata.ExecuteTime", "cell.metadata.execution", "cell.metadata.heading_collapsed",
              "cell.metadata.hidden", "cell.metadata.scrolled"]


def strip_outputs_on_save(model, path, contents_manager, **kwargs):
    """``FileContentsManager.pre_save_hook``: outputs, counts and per-run metadata out; disk metadata kept."""
    if model.get("type") != "notebook" or os.environ.get("DTLAB_KEEP_OUTPUTS") == "1":
        return
    import nbformat
    from nbstripout import strip_output

    nb = nbformat.from_dict(model["content"])
    strip_output(nb, keep_output=False, keep_count=False, keep_id=True, extra_keys=STRIP_KEYS)
    os_path = contents_manager._get_os_path(path)
    if os.path.exists(os_path):
        try:
            with open(os_path, encoding="utf-8") as f:
                nb["metadata"] = nbformat.from_dict(json.load(f).get("metadata", {}))
        except (OSError, ValueError):  # an unreadable file on disk: keep the stripped metadata
            pass
    model["content"] = nb


c = get_config()  # noqa: F821 (defined by Jupyter when it loads this file)
c.FileContentsManager.pre_save_hook = strip_outputs_on_save
# The token comes in the environment (scripts/lab.py, the browser suite), never on the command line where `ps`
# shows it to every user; taken out of the environment here, so the kernels this server starts do not inherit it.
_token = os.environ.pop("DTLAB_LAB_TOKEN", None)
if _token:
    c.IdentityProvider.token = _token
