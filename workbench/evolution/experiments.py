"""GDT's measuring wing (slug ``evolution``): experiments, benchmarks and the producers that draw their figures.

Modules by role:

* :mod:`.chess` -- convergence runs on Chess3x3 (the paper's Fig. 11 and 12), live curves, the ideal tree;
* :mod:`.table4` -- Table 4: GDT and its size-accuracy front against tuned and optimal trees on real data;
* :mod:`.throughput` -- evolved batches for timing, the evaluator against NumPy and scikit-learn;
* :mod:`.devices` -- one sweep of evaluators and device counts (Fig. 9 and 10), the performance model, probes;
* :mod:`.host_loop` -- where a generation's time goes, and the compiled host loop's speed;
* :mod:`.gpu` -- the H200 target run;
* :mod:`.captions` -- the README captions of every producer, from recorded results;
* :mod:`.producers` -- the figures and benchmarks ``python -m workbench figures | bench`` runs (registered when
  this package is imported, which :mod:`workbench.catalog` does).

Figures are drawn by :mod:`workbench.evolution.plots`.  The estimator never imports this package.
"""

from workbench.evolution import producers  # noqa: F401  (registers the figures and benchmarks)
from workbench.evolution.chess import (
    IDEAL_LEAVES,
    IDEAL_NODES,
    IDEAL_TRAIN_ACCURACY,
    chess_runs,
    chess_summary,
    ideal_table,
    is_ideal_chess_tree,
    live_convergence,
    reached_ideal,
)
from workbench.evolution.table4 import (
    ALL_METHODS,
    HELD_OUT,
    baseline_comparison,
    baseline_summary,
    cart_comparison,
    cart_summary,
    load_split,
    pareto_front,
)
from workbench.evolution.throughput import evaluator_throughput, evolved_population, timing_batch, to_sklearn_tree

__all__ = ["ALL_METHODS", "HELD_OUT", "IDEAL_LEAVES", "IDEAL_NODES", "IDEAL_TRAIN_ACCURACY", "baseline_comparison",
           "baseline_summary", "cart_comparison", "cart_summary", "chess_runs", "chess_summary", "evaluator_throughput",
           "evolved_population", "ideal_table", "is_ideal_chess_tree", "live_convergence", "load_split", "pareto_front",
           "reached_ideal",
           "timing_batch", "to_sklearn_tree"]
