"""GDT's hidden steps, shown on a tiny input: one generation of three trees, and class counts merged from shards.

What :func:`dtlab.evolution.operators.reference_generation` does to a
population of fifty trees, done here to three small ones on a few dozen
Chess3x3 rows, each step kept for a notebook to show (notebook 01; Jurczuk,
Czajkowski, Kretowski, Applied Intelligence 2021, section 2.4, Fig. 3, Fig. 5
and Listing 1):

1. the three trees are evaluated: every row walks every tree to a leaf, each
   device (here a *shard* of the rows) counts the objects of each class per
   leaf, and the host adds the shards' counts (:func:`dtlab.evolution.merge_stats`,
   exact: the sum is the count over all rows; Fig. 6);
2. fitness, eq. (1): ``accuracy - alpha * (size - 1)``;
3. linear ranking selection draws the parents of the two offspring (the third
   place goes to the elite, the best tree, copied unchanged);
4. crossover exchanges parts of the two offspring (Fig. 3), then mutation
   changes one node of each;
5. the new population is evaluated as in step 1.

In a run crossover and mutation happen with probabilities 0.2 and 0.8; here
both are applied, so that every operator appears in the one generation shown.
:func:`shard_counts` is step 1 alone, for any number of shards (notebook 04).
Only the library's public functions are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from dtlab.datasets import chess3x3

__all__ = ["GenerationStep", "one_generation", "shard_bounds", "shard_counts"]

#: Names of the three trees of the walk-through.
TREE_NAMES = ("A", "B", "C")


def shard_bounds(n_samples: int, n_shards: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]``: ``n_samples`` rows cut into ``n_shards`` contiguous shards of near-equal size."""
    if not 1 <= n_shards <= n_samples:
        raise ValueError(f"n_shards must be in 1..{n_samples}, got {n_shards}")
    edges = np.linspace(0, n_samples, n_shards + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def shard_counts(trees: Sequence[Any], X: np.ndarray, y: np.ndarray, n_shards: int = 2, seed: int = 0,
                 names: Sequence[str] | None = None):
    """Class counts of every leaf of ``trees``, per shard of the rows, merged, and from one pass over all rows.

    Each shard is evaluated alone (a :class:`~dtlab.evolution.NumpyEvaluator`
    on its rows, with their global row ids), as one device of the paper holds
    and walks its part of the data; :func:`~dtlab.evolution.merge_stats` adds
    the parts.

    Parameters
    ----------
    trees : sequence of :class:`~dtlab.evolution.individual.Individual`
    X, y : the rows (float, and int class codes 0..k-1)
    n_shards : int
    seed : the evaluation's draw seed (which objects each leaf offers for dipoles)
    names : tree names for the table (default A, B, C, ...)

    Returns
    -------
    table : DataFrame, one row per leaf
        ``tree, leaf`` (the leaf's node number in its tree), ``shard i: class c`` for every shard and
        class, ``merged: class c`` and ``one pass: class c``.
    stats : LeafStats, the merged statistics (of the packed batch)
    equal : bool, whether the merged statistics (counts and drawn objects) equal one pass's
    """
    import pandas as pd

    from dtlab.evolution import NumpyEvaluator, merge_stats
    from dtlab.evolution.individual import pack

    y = np.asarray(y, np.int32)
    n_classes = int(y.max()) + 1
    batch = pack(list(trees))
    parts = [NumpyEvaluator(X[a:b], y[a:b], n_classes, row_offset=a).evaluate(batch, seed)
             for a, b in shard_bounds(X.shape[0], n_shards)]
    merged = merge_stats(parts)
    whole = NumpyEvaluator(X, y, n_classes).evaluate(batch, seed)
    names = list(names) if names is not None else [chr(ord("A") + t) for t in range(len(trees))]
    rows = []
    for t, name in enumerate(names):
        start = int(batch.node_offset[t])
        for node in range(int(batch.node_offset[t + 1]) - start):
            if batch.left[start + node] != -1:
                continue
            row: dict[str, Any] = {"tree": name, "leaf": node}
            for i, part in enumerate(parts):
                row.update({f"shard {i + 1}: class {c}": int(part.counts[start + node, c]) for c in range(n_classes)})
            row.update({f"merged: class {c}": int(merged.counts[start + node, c]) for c in range(n_classes)})
            row.update({f"one pass: class {c}": int(whole.counts[start + node, c]) for c in range(n_classes)})
            rows.append(row)
    return pd.DataFrame(rows), merged, bool(merged.equals(whole))


@dataclass
class GenerationStep:
    """One GDT generation on three trees, every step kept (see the module's docstring).

    Attributes
    ----------
    X, y : the tiny Chess3x3 rows
    alpha : the fitness's size weight
    parents, children : lists of three evaluated individuals (generation g and g + 1)
    parent_trees, child_trees : the same as :class:`~dtlab.trees.FlatTree` (for drawing; leaves hold class counts)
    selection : DataFrame, one row per parent
        ``tree, nodes, leaves, correct, accuracy, fitness, rank`` (1 = best), ``probability`` (of each draw),
        ``expected`` (copies among the offspring), ``drawn`` (copies drawn), ``elite``.
    picks : parent index of each offspring
    crossover_variant : ``"subtree"``, ``"branches"`` or ``"tests"``
    mutation_variants : the variant applied to each offspring (``"none"`` where no node could be changed)
    child_labels : what each child is ("elite: copy of A", "offspring 1: ...")
    leaf_counts : :func:`shard_counts`' table of the children
    merged_equals_one_pass : bool
    n_shards : int
    """

    X: np.ndarray
    y: np.ndarray
    alpha: float
    parents: list
    children: list
    parent_trees: list
    child_trees: list
    selection: Any
    picks: list[int]
    crossover_variant: str
    mutation_variants: list[str]
    child_labels: list[str]
    leaf_counts: Any
    merged_equals_one_pass: bool
    n_shards: int

    def fitness_table(self):
        """Both generations side by side: ``generation, tree, what it is, nodes, accuracy, fitness``."""
        import pandas as pd

        rows = [{"generation": "g", "tree": name, "what it is": "initial tree", "nodes": p.n_nodes,
                 "accuracy": p.accuracy, "fitness": p.fitness} for name, p in zip(TREE_NAMES, self.parents)]
        rows += [{"generation": "g + 1", "tree": name, "what it is": label, "nodes": c.n_nodes,
                  "accuracy": c.accuracy, "fitness": c.fitness}
                 for name, label, c in zip(("elite", "offspring 1", "offspring 2"), self.child_labels, self.children)]
        return pd.DataFrame(rows)


def _evaluate(trees: list, X, y, n_shards: int, seed: int, alpha: float, names: Sequence[str]):
    from dtlab.evolution.individual import apply_stats, pack

    table, stats, equal = shard_counts(trees, X, y, n_shards, seed, names)
    apply_stats(trees, pack(trees), stats, X.shape[0], alpha)  # fitness, eq. (1); statistics up to the root
    return table, equal


def one_generation(n_samples: int = 60, n_shards: int = 2, max_depth: int = 2, seed: int = 0,
                   alpha: float | None = None) -> GenerationStep:
    """GDT's generation g -> g + 1 on three trees grown on ``n_samples`` Chess3x3 rows.

    Parameters
    ----------
    n_samples : rows of Chess3x3 (no noise attributes)
    n_shards : shards (devices) the rows are split into for each evaluation
    max_depth : depth limit of the three initial trees (GDT's initialisation: mixed-dipole tests on random
        subsamples, each tree with its own limit in ``1..max_depth``)
    seed : seeds the data, the trees and every draw
    alpha : the fitness's size weight (GDT's default when None)
    """
    import pandas as pd

    from dtlab.evolution import GDTClassifier
    from dtlab.evolution.algorithm import EvolutionParams
    from dtlab.evolution.individual import to_flat_tree
    from dtlab.evolution.operators import OperatorContext, crossover, initial_population, mutate
    from dtlab.evolution.selection import linear_ranking, ranking_probabilities

    X, y = chess3x3(n_samples, seed=seed)
    y = y.astype(np.int32)
    params = EvolutionParams.from_estimator(GDTClassifier(population_size=3, max_depth=max(max_depth + 2, 3)))
    alpha = params.alpha if alpha is None else float(alpha)
    rng = np.random.default_rng(seed)
    parents = initial_population(X, y, 2, 3, 0.5, n_samples, max_depth, params.min_samples_split, rng)
    _evaluate(parents, X, y, n_shards, int(rng.integers(2**62)), alpha, TREE_NAMES)

    # selection: linear ranking of the fitness, two offspring (population 3, one elite)
    fitness = np.array([p.fitness for p in parents])
    n_offspring = len(parents) - params.n_elite
    picks = [int(i) for i in linear_ranking(fitness, n_offspring, params.ranking_pressure, rng)]
    order = np.argsort(fitness, kind="stable")  # worst first, as the selection ranks them
    rank_of = np.empty(3, int)
    rank_of[order] = np.arange(3)
    prob = ranking_probabilities(3, params.ranking_pressure)[rank_of]
    best = int(np.argmax(fitness))  # the elite, as GDT picks it (the first of equally fit trees)
    selection = pd.DataFrame({
        "tree": list(TREE_NAMES), "nodes": [p.n_nodes for p in parents], "leaves": [p.n_leaves for p in parents],
        "correct": [round(p.accuracy * n_samples) for p in parents], "accuracy": [p.accuracy for p in parents],
        "fitness": fitness, "rank": 3 - rank_of, "probability": prob, "expected": prob * n_offspring,
        "drawn": [picks.count(t) for t in range(3)], "elite": [t == best for t in range(3)]})

    # crossover of the two offspring, then one mutation of each (both forced here; see the module's docstring)
    ctx = OperatorContext(rng=rng, fetch_rows=lambda rows: X[np.asarray(rows)].astype(np.float64),
                          feature_span=np.ptp(X, axis=0).astype(np.float64), n_samples=n_samples,
                          variant_p=params.variant_p, max_depth=params.max_depth,
                          ranking_pressure=params.ranking_pressure, X=X)
    first, second, variant = crossover(parents[picks[0]], parents[picks[1]], ctx)
    offspring, variants = [], []
    for ind in (first, second):
        new, how = mutate(ind, ctx)
        offspring.append(new if new is not None else ind)
        variants.append(how)
    elite = parents[best].copy()
    children = [elite, *offspring]
    labels = [f"elite: {TREE_NAMES[best]} unchanged"] + [
        f"offspring {k + 1}: {TREE_NAMES[picks[k]]}, {variant} crossover, {variants[k]} mutation"
        for k in range(n_offspring)]
    leaf_counts, equal = _evaluate(children, X, y, n_shards, int(rng.integers(2**62)), alpha,
                                   ("elite", "offspring 1", "offspring 2"))
    flat = [to_flat_tree(ind, X.shape[1], classes=np.array([0, 1])) for ind in parents + children]
    return GenerationStep(X=X, y=y, alpha=alpha, parents=parents, children=children, parent_trees=flat[:3],
                          child_trees=flat[3:], selection=selection, picks=picks, crossover_variant=variant,
                          mutation_variants=variants, child_labels=labels, leaf_counts=leaf_counts,
                          merged_equals_one_pass=equal, n_shards=n_shards)
