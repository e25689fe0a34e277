"""Flat (struct-of-arrays) decision trees: representation, packing, the one walk, import/export."""

from .ensemble import Ensemble, ModelFormatError
from .flat import FlatTree, TreeValidationError, breadth_first, preorder
from .leaves import apply, apply_reference
from .packed import PackedForest

__all__ = ["Ensemble", "FlatTree", "ModelFormatError", "PackedForest", "TreeValidationError", "apply",
           "apply_reference", "breadth_first", "preorder"]
