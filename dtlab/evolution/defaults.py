"""Default parameters of the GDT system, in one place, each with its reason.

The evolutionary settings follow the recommended GDT defaults of Kretowski
(*Evolutionary Decision Trees in Large-Scale Data Mining*, 2019), which the
multi-GPU paper (Jurczuk, Czajkowski, Kretowski, "Multi-GPU approach to global
induction of classification trees for large-scale data mining", Applied
Intelligence 2021, Table 1) uses unchanged: a population of 50, mutation 0.8,
crossover 0.2, one elite, at most 10,000 generations and 1,000 without
improvement.  Where the paper does not give a number (the mix of mutation
variants, the complexity weight ``alpha``, the initial depth), the value here
was chosen on Chess3x3, HIGGS and the diabetes data and the reason is stated.

:data:`DEFAULTS` maps each parameter of :class:`dtlab.evolution.GDTClassifier`
that has an evolutionary meaning to ``(value, reason)``; the estimator's
signature reads its defaults from here, so this table is the only place to
change them.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Default(NamedTuple):
    """A default value and why it was chosen."""

    value: Any
    reason: str


DEFAULTS: dict[str, Default] = {
    "population_size": Default(
        50, "GDT's recommended size (paper, Table 1): large enough to keep several tree shapes alive, "
            "small enough that a generation is one batched pass over the data with ~45 changed trees."),
    "max_generations": Default(
        10_000, "GDT's limit (paper, Table 1). Chess3x3 (10^4-10^5 rows, 0 or 10 noise attributes) reaches the "
                "ideal tree in 190-460 generations and stops by the stagnation rule after 1,300-1,850, so the "
                "limit binds only on harder data."),
    "max_stagnation": Default(
        1_000, "Generations without improvement of the best individual before stopping (GDT's rule). "
               "Threshold fine-tuning improves the best tree by single objects late in a run, so a "
               "shorter patience stops before the thresholds settle."),
    "alpha": Default(
        5e-4, "Weight of tree size in Fitness(T) = Accuracy(T) - alpha * (Size(T) - 1). A split adds two "
              "nodes, so it must raise training accuracy by 2 * alpha = 0.1 percentage point to pay for "
              "itself: real splits on Chess3x3 gain ~10 points, splits that fit a handful of noisy "
              "objects gain less and are pruned away (this is what keeps trees 10-100x smaller than "
              "unpruned CART on HIGGS and diabetes)."),
    "crossover_probability": Default(
        0.2, "GDT default (paper, Table 1): crossover mixes subtrees of good trees but disrupts "
             "fine-tuned thresholds, so it is the minor operator."),
    "mutation_probability": Default(
        0.8, "GDT default (paper, Table 1): most progress comes from local mutations of single nodes."),
    "n_elite": Default(
        1, "Elitism as in GDT: the best individual found so far is copied unchanged into every "
           "generation, so the best fitness never decreases."),
    "ranking_pressure": Default(
        2.0, "Expected number of copies of the best-ranked individual under linear ranking selection "
             "(eta+ in [1, 2]; the worst gets 2 - eta+).  2 is the usual maximum pressure, which GDT uses "
             "with its small population and one elite."),
    "prune_probability": Default(
        0.2, "Share of internal-node mutations that prune the subtree to a leaf: the main size-reducing "
             "move, needed often early when initial trees are overgrown."),
    "exchange_probability": Default(
        0.1, "Share of internal-node mutations that exchange a node with a son (swap tests, or promote the "
             "son's subtree): restructures a tree without re-drawing tests; less often useful than the others."),
    "new_test_probability": Default(
        0.3, "Share of internal-node mutations that re-draw the test from a new mixed dipole (possibly on "
             "another attribute): the move that finds the right attribute, which matters more the more "
             "noise attributes there are."),
    "shift_probability": Default(
        0.4, "Share of internal-node mutations that shift the threshold by a log-uniformly scaled step: "
             "the fine-tuning move that places thresholds to within one object, which the 99.9% "
             "accuracy on Chess3x3 needs; given the largest share because it is tried most times."),
    "init_sample_fraction": Default(
        0.1, "Each initial tree is grown on this random fraction of the training rows (GDT grows initial "
             "trees on random subsamples for diversity and speed)."),
    "init_max_samples": Default(
        2_000, "Cap on the rows used to grow one initial tree, so initialisation stays negligible on "
               "10^6+ rows; mixed dipoles need only a few hundred objects per tree."),
    "init_max_depth": Default(
        6, "Each initial tree gets a depth limit drawn uniformly from 1..init_max_depth, giving both "
           "small and large trees; 6 is above the depth of the ideal Chess3x3 tree (4)."),
    "min_samples_split": Default(
        5, "GDT's minimum number of objects to split a node during initialisation (paper, section 2.4.1)."),
    "max_depth": Default(
        32, "Expand mutations never deepen a tree beyond this; a guard against bloat when alpha is 0, "
            "never reached with the default alpha."),
    "local_pruning": Default(
        0.5, "Probability that a changed tree, once evaluated, has every subtree pruned whose replacement by "
             "a leaf does not lower the fitness (GDT's local fitness maximisation; exact from the evaluation's "
             "counts, no extra pass).  Without it imprecise thresholds get patched by small compensating "
             "splits that then block the search (Chess3x3, 10^4 rows: ideal tree after 570 to >1,500 "
             "generations, seeds 0-9); always pruning removes those (170-341 generations) but also every "
             "split that pays only once a second one is added, and with 10 noise attributes 2 of 10 runs "
             "stuck in a 5-node tree; pruning half of the trees kept the speed and 10 of 10 runs succeeded."),
    "checkpoint_every": Default(
        25, "Generations between checkpoints: saving the population costs ~a generation's host work, "
            "so every 25 generations is cheap and loses little of a long run."),
}


def default(name: str) -> Any:
    """The default value of parameter ``name``."""
    return DEFAULTS[name].value


def defaults_table():
    """The defaults as a pandas DataFrame with columns ``parameter``, ``value``, ``reason``."""
    import pandas as pd

    # object dtype keeps ints as ints next to floats and bools
    return pd.DataFrame({"parameter": list(DEFAULTS), "value": pd.Series([d.value for d in DEFAULTS.values()],
                                                                           dtype=object),
                         "reason": [d.reason for d in DEFAULTS.values()]})
