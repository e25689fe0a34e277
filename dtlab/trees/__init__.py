"""Flat (struct-of-arrays) decision trees: representation, packing, the one walk, import/export."""

from .flat import FlatTree, TreeValidationError, breadth_first, preorder
from .packed import PackedForest
from .traversal import apply, apply_reference

__all__ = ["FlatTree", "PackedForest", "TreeValidationError", "apply", "apply_reference", "breadth_first", "preorder"]
