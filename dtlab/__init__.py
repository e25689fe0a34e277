"""dtlab: a research workbench for fast decision-tree learning on CPUs and GPUs.

Public API only; importing dtlab never imports cupy or numba.cuda.
"""

from .backend import Backend, resolve_backend
from .datasets import chess3x3, shard
from .trees import FlatTree, PackedForest

__version__ = "0.1.0"

__all__ = ["Backend", "FlatTree", "PackedForest", "chess3x3", "resolve_backend", "shard", "__version__"]
