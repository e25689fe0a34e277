"""numba's on-disk cache in a folder of its own per version of the package's sources.

numba's ``cache=True`` keys a cached function on its own source file only: a
kernel that calls (and inlines) a function of another module keeps its old
machine code after that module changes, and silently computes the old thing
(a greedy fit once returned one-node trees after its scans were edited).  So
the cache goes to ``<user cache>/dtlab/numba/<digest>``, the digest taken over
every ``.py`` file of the package (and its place: checkouts side by side keep
their own): an edited or upgraded dtlab compiles afresh once, an unchanged one
loads what it compiled before.  Worker processes (Dask,
device pools, notebook kernels) compute the same digest and share the folder.

A ``NUMBA_CACHE_DIR`` set by the user is left as it is; where the user cache
cannot be written, numba's own default (``__pycache__`` beside each file) stays.

numba loads its cache files with pickle, so whoever can write the folder can
run code in every process that loads from it: the folder is made private
(mode 0700), and one that another user owns or that others may write (the
folder or the ``dtlab`` folder above it) is not used.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

#: Digest folders kept per checkout (the newest by modification time); older ones go when a new one is made.
KEEP = 3


def source_digest(root: Path) -> str:
    """16 hex digits over the relative path and bytes of every ``.py`` file under ``root``."""
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dtlab" / "numba"


#: The package whose sources key the cache.
PACKAGE = Path(__file__).resolve().parent


def configure(package: Path = PACKAGE) -> str | None:
    """Point numba's cache at this version's folder; returns it, or None where it was left alone."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    try:
        base = cache_root()
        place = hashlib.sha1(str(package).encode()).hexdigest()[:8]
        folder = base / f"{place}-{source_digest(package)}"
        fresh = not folder.is_dir()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.access(folder, os.W_OK) or not all(_private(p) for p in (base.parent, base, folder)):
            return None
    except OSError:  # no home, a read-only file system: numba's default place
        return None
    if fresh:
        _prune(base, folder, f"{place}-")
    os.environ["NUMBA_CACHE_DIR"] = str(folder)  # before numba is imported (it reads it then), and for children
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba imported first: its locator reads the setting when a function is compiled
        config.CACHE_DIR = str(folder)
    return str(folder)


def _private(folder: Path) -> bool:
    """Owned by this user and writable by no one else (what a folder of pickles to load needs)."""
    st = folder.stat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _prune(base: Path, current: Path, prefix: str) -> None:
    """Delete all but the :data:`KEEP` newest digest folders of this checkout (``prefix``; never ``current``)."""
    try:
        folders = sorted((p for p in base.iterdir() if p.is_dir() and p != current and p.name.startswith(prefix)),
                         key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in folders[KEEP - 1:]:
        shutil.rmtree(old, ignore_errors=True)
