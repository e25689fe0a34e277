"""Flat (struct-of-arrays) decision trees: representation, traversal, import/export."""

from .flat import FlatTree, TreeValidationError
from .traversal import apply, apply_reference

__all__ = ["FlatTree", "TreeValidationError", "apply", "apply_reference"]
