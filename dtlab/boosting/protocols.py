"""The interfaces the boosting growers run over: split finders and the rows' state.

The level-wise grower (:func:`.grower.grow_boosted_tree`) drives a
:class:`SplitFinder` (the whole level at once) and a :class:`RowState` (each
row's node, the nodes' sums); the node-wise grower
(:func:`.lossguide_grower.grow_lossguide_tree`) drives a
:class:`NodeWiseSplitFinder` (any set of open nodes, which keeps its rows
itself) and reads the :class:`NodeSplit` it returns.  The members declared here
are exactly those the growers call; the implementations are duck-typed
(:func:`typing.runtime_checkable`; ``tests/boosting/test_protocols.py`` checks
every one, member by member):

* :class:`SplitFinder`: :class:`.exact.ExactSearch`, :class:`.hist.HistSearch`,
  :class:`._exact_cuda.ExactCudaSearch`, :class:`._hist_cuda.HistCudaSearch`,
  :class:`.dask.hist.DaskHistSearch` (and :class:`.dask.collective.WorkerHistSearch`),
  :class:`.dask.exact.DaskExactSearch`;
* :class:`RowStateFinder` (a split finder with rows of its own): all of these but
  ``ExactSearch`` and ``DaskExactSearch``, whose rows the grower keeps in a
  :class:`.grower.HostRows`;
* :class:`RowState`: :class:`.grower.HostRows`, :class:`.hist.SegmentRows`,
  :class:`._rows_cuda.DeviceRows`, :class:`.dask.hist.DaskRows`;
* :class:`NodeWiseSplitFinder`: :class:`.lossguide.LossguideSearch`,
  :class:`._lossguide_cuda.LossguideCudaSearch`; :class:`NodeSplit`:
  :class:`.lossguide.Split`.

Shapes: ``n_samples`` rows of the fit, ``n_features`` features, ``n_nodes`` nodes
of the level (numbered ``0 .. n_nodes - 1`` in the order the grower made them:
child ``2 j`` and ``2 j + 1`` of the level before's ``j``-th splitting node).
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

#: ``(node_g, node_h, node_n)``: float64, float64, int64 arrays (n_nodes,), the nodes' gradient and hessian sums
#: (float64 sums of the float32 gradients) and row counts.
NodeSums = tuple[np.ndarray, np.ndarray, np.ndarray]


@runtime_checkable
class RowState(Protocol):
    """The rows of the tree being grown level by level: each row's node and side, the nodes' sums, the leaves.

    Made per tree: by the finder (:meth:`RowStateFinder.row_state`, after its
    :meth:`~SplitFinder.start_tree`) or by the grower (:class:`.grower.HostRows`).

    Attributes
    ----------
    pos : int64 array (n_samples,) or None
        Each row's node in the current level (-1: settled in a leaf), handed to
        :meth:`SplitFinder.split`; None where the state keeps no per-row node (its
        finder reads the rows' nodes off its own arrays).
    side : uint8 array (n_samples,), a device array, or None
        Written by :meth:`SplitFinder.split` (1: the row goes to the left child) and read by
        :meth:`advance`; a device array where the rows live on the GPU, None where the finder keeps
        the sides itself.
    """

    pos: np.ndarray | None
    side: Any

    def root_sums(self) -> NodeSums:
        """The root's :data:`NodeSums` (arrays of length 1): every row of the tree."""
        ...

    def advance(self, which: np.ndarray, level_ids: np.ndarray, n_children: int) -> NodeSums:
        """Move the level's rows after :meth:`SplitFinder.split`.

        ``which`` int64 (n_nodes,): ``j >= 0`` for the level's ``j``-th splitting node, whose rows go to
        children ``2 j`` (``side`` 1) and ``2 j + 1``; -1 for a node that stops, whose rows settle in leaf
        ``level_ids[k]`` (int64 (n_nodes,), the nodes' ids in the tree).  Returns the :data:`NodeSums` of the
        ``n_children`` children (empty arrays for 0: the last level, every row settles).
        """
        ...

    def leaf_of_row(self) -> np.ndarray:
        """int64 array: each row's leaf (a node id of the unpruned tree), once every row has settled.

        (n_samples,); :class:`.dask.hist.DaskRows`, whose rows are on the workers, returns every node id
        instead, ``arange(n_nodes_made)``: pruning maps each to its kept leaf.)"""
        ...


@runtime_checkable
class SplitFinder(Protocol):
    """A level-wise split finder: the best split of every node of a level, then the rows' sides.

    Per tree the grower calls :meth:`start_tree`, then per level sets :attr:`allowed`, calls
    :meth:`find` and, for the nodes whose loss change exceeds :data:`._gain.RT_EPS`, :meth:`split`.

    Attributes
    ----------
    allowed : bool array (n_features,) or None
        The features the level may split on (the column sample, :meth:`.sampling.Sampler.level_features`),
        set by the grower before each :meth:`find`; None: every feature.  The finder zeroes the others'
        gains (:func:`.sampling.gate_gains`) before it chooses.
    """

    allowed: np.ndarray | None

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        """A new tree on this round's gradients: ``g``, ``h`` float32 (n_samples,), zero outside the row
        sample (:class:`.dask.hist.DaskHistSearch`, whose gradients are on the workers, takes a
        :class:`~.dask.hist.TreeStart` and None).  The root holds every row."""
        ...

    def find(self, n_nodes: int, node_g: np.ndarray, node_h: np.ndarray, node_n: np.ndarray, lam: float,
             mcw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The best split of every node of the level.

        Parameters
        ----------
        n_nodes : int
        node_g, node_h, node_n : the level's :data:`NodeSums` (from :class:`RowState`)
        lam, mcw : float, ``reg_lambda`` and ``min_child_weight``

        Returns
        -------
        feature : int64 (n_nodes,), -1 where no split improves the loss
        loss_chg : float64 (n_nodes,), the split's loss change (0 where none)
        threshold : float32 (n_nodes,), a row goes left when ``x < threshold``
        missing_left : bool (n_nodes,), the side of the rows missing the feature
        """
        ...

    def split(self, split_k: np.ndarray, split_f: np.ndarray, split_thr: np.ndarray, split_left: np.ndarray,
              pos: np.ndarray | None, side: Any, last: bool = False) -> None:
        """Split the nodes ``split_k`` (int64 (n_split,), increasing) on features ``split_f`` (int64), at
        ``split_thr`` (float32), missing values left where ``split_left`` (bool): mark every row of those
        nodes in ``side`` (the :class:`RowState`'s, with its ``pos``), and make ready the children's
        :meth:`find`.  ``last``: the children are the last level (leaves), so nothing is kept for them."""
        ...


@runtime_checkable
class RowStateFinder(SplitFinder, Protocol):
    """A :class:`SplitFinder` that brings the rows' state of its trees (the grower calls :meth:`row_state` when
    a finder has one, else makes a :class:`.grower.HostRows`)."""

    def row_state(self, g: np.ndarray, h: np.ndarray) -> RowState:
        """The :class:`RowState` of the tree :meth:`~SplitFinder.start_tree` began (``g``, ``h``: the same)."""
        ...


@runtime_checkable
class NodeSplit(Protocol):
    """The best split of one open node, as :meth:`NodeWiseSplitFinder.evaluate` returns it
    (:class:`.lossguide.Split`).  The grower reads these fields and hands the object back to
    :meth:`NodeWiseSplitFinder.split`.

    Attributes
    ----------
    feature : int, -1: no split
    gain : float, the loss change
    threshold : float, float32-exact; a row goes left when ``x < threshold`` (numeric splits)
    missing_left : bool
    categories : int64 array or None, the category values going left (categorical splits)
    """

    feature: int
    gain: float
    threshold: float
    missing_left: bool
    categories: np.ndarray | None


@runtime_checkable
class NodeWiseSplitFinder(Protocol):
    """A node-wise split finder: splits any open node at any time (leaf-wise growth, categorical splits).

    It keeps the rows of every open node (a leaf still to split) itself, so the grower keeps no
    :class:`RowState`; nodes are numbered by the grower, in creation order, the root 0.

    Attributes
    ----------
    allowed : bool array (n_features,) or None
        As :attr:`SplitFinder.allowed`, set before each :meth:`evaluate` for the depth of its nodes.
    """

    allowed: np.ndarray | None

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> tuple[float, float]:
        """A new tree on ``g``, ``h`` (float32 (n_samples,)); the root holds every row.  Returns the root's
        ``(G, H)``, float."""
        ...

    def evaluate(self, nodes: list[int], parents: list[int], node_g: Sequence[float], node_h: Sequence[float],
                 lam: float, mcw: float) -> list[NodeSplit]:
        """The best split of each of ``nodes``: the root alone (``parents == [-1]``), or sibling pairs
        ``(2 j, 2 j + 1)`` of ``parents[j]``, each node's sums ``node_g[i]``, ``node_h[i]``."""
        ...

    def split(self, node: int, split: NodeSplit, left: int, right: int) -> None:
        """Move ``node``'s rows to its new children ``left`` and ``right`` by ``split`` (from :meth:`evaluate`)."""
        ...

    def sums(self, node: int) -> tuple[float, float]:
        """``(G, H)`` of an open node's rows, float, added in row order."""
        ...

    def leaf_of_row(self, leaves: dict[int, int]) -> np.ndarray:
        """int64 (n_samples,): each row's leaf, ``leaves`` mapping every open node to its id in the tree."""
        ...
