"""dtlab: a research workbench for fast decision-tree learning on CPUs and GPUs.

Public API only; importing dtlab never imports cupy or numba.cuda.
"""

from ._numba_cache import configure as _configure_numba_cache

_configure_numba_cache()  # before anything imports numba: its cache folder follows the package's sources

from .backend import Backend, resolve_backend  # noqa: E402
from .datasets import chess3x3, shard  # noqa: E402
from .trees import FlatTree, PackedForest  # noqa: E402

__version__ = "0.1.0"

__all__ = ["Backend", "FlatTree", "PackedForest", "chess3x3", "resolve_backend", "shard", "__version__"]
