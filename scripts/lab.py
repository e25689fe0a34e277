"""Start JupyterLab on the notebooks: loopback only, a token, no browser on a headless machine.

Run by ``make lab`` with the project's virtual environment; usable on its own
(``python scripts/lab.py [--port N] [extra jupyter lab options]``).  As root (the
project's machines and containers run as root) it adds ``--allow-root``; as a
user it does not.  It prints the URL (with its token) before the server starts,
then JupyterLab's own log follows.

The token travels in the environment (``DTLAB_LAB_TOKEN``), never on the
command line, where ``ps`` would show it to every user of the machine;
``scripts/jupyter_lab_config.py`` moves it into the server's configuration and
out of the environment, so the kernels do not inherit it either.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port(start: int, host: str = "127.0.0.1", tries: int = 50) -> int:
    """The first port from ``start`` on that nothing listens on (Jupyter's own retry would change the URL)."""
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise SystemExit(f"no free port in {start}..{start + tries - 1} on {host}: pass --port")


def headless() -> bool:
    """No display to open a browser on (Linux without X11 / Wayland, or an SSH session)."""
    if sys.platform in ("darwin", "win32"):
        return bool(os.environ.get("SSH_CONNECTION"))
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


#: The environment variable that carries the token to ``scripts/jupyter_lab_config.py``.
TOKEN_VARIABLE = "DTLAB_LAB_TOKEN"


def lab_command(port: int, *, as_root: bool, open_browser: bool, extra: list[str]) -> list[str]:
    """The ``jupyter lab`` command line (a list for ``os.execvpe``); no token in it (:func:`lab_environment`)."""
    cmd = [sys.executable, "-m", "jupyter", "lab", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
           f"--ServerApp.root_dir={ROOT / 'notebooks'}",
           f"--config={ROOT / 'scripts' / 'jupyter_lab_config.py'}"]  # the token, and saves without outputs
    if as_root:
        cmd.append("--allow-root")
    if not open_browser:
        cmd.append("--no-browser")
    return cmd + extra


def lab_environment(token: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: ``base`` (default ``os.environ``) with the token in :data:`TOKEN_VARIABLE` only.

    A token chosen in ``LAB_TOKEN`` is not passed on (the kernels would inherit it), nor a test run's MPLBACKEND.
    """
    env = dict(os.environ if base is None else base)
    env.pop("MPLBACKEND", None)  # a test run's Agg would replace the notebook's inline figures with text
    env.pop("LAB_TOKEN", None)
    env[TOKEN_VARIABLE] = token
    return env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("LAB_PORT", 8888)),
                        help="first port to try (default 8888, or $LAB_PORT)")
    args, extra = parser.parse_known_args(argv)
    port = free_port(args.port)
    token = os.environ.get("LAB_TOKEN") or secrets.token_hex(24)
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    open_browser = not headless() and shutil.which("xdg-open") is not None
    url = f"http://127.0.0.1:{port}/lab?token={token}"
    print(f"JupyterLab on the notebooks folder, loopback only{' (as root: --allow-root)' if as_root else ''}:")
    print(f"    {url}")
    if not open_browser:
        print(f"No browser opened (headless). From another machine: ssh -L {port}:127.0.0.1:{port} <this host>, "
              "then open the URL above. Stop with Ctrl-C.", flush=True)
    os.execvpe(sys.executable, lab_command(port, as_root=as_root, open_browser=open_browser, extra=extra),
               lab_environment(token))


if __name__ == "__main__":
    main()
