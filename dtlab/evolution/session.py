"""One fit's run of the evolutionary loop: progress bar, checkpoints, the user's callback, interruption."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..callbacks import ProgressBar, run_callbacks
from . import checkpoint as ckpt
from ._sparse import feature_span, numba_rows
from .algorithm import EvolutionParams, RunState, run
from .operators import OperatorContext


def evolve(state: RunState, X: np.ndarray, evaluator, params: EvolutionParams, *, verbose: bool,
           callback: Callable[[int, dict], Any] | None, checkpoint: str | Path | None, checkpoint_every: int,
           search_params: dict[str, Any], fingerprint: str) -> None:
    """Run ``state`` to a stopping rule (in place), saving a checkpoint every ``checkpoint_every`` generations.

    A ``KeyboardInterrupt`` ends the run at the last completed generation with
    a warning (``state.stop_reason == "interrupted"``); the run is saved at
    the end either way.

    Parameters
    ----------
    state : RunState (a fresh run or one resumed from a checkpoint)
    X : ndarray of shape (n_samples, n_features), the training rows (host copy)
    evaluator : Evaluator
    params : EvolutionParams
    verbose : show a progress bar (:class:`dtlab.callbacks.ProgressBar`) with the best fitness and size
    callback : ``callback(generation, record) -> bool`` (the protocol of :mod:`dtlab.callbacks`); True stops the run
    checkpoint : folder, or None for no checkpoints
    search_params, fingerprint : what the checkpoint records to refuse resuming another run
    """
    # a sparse X reaches the compiled operators as a CSR tuple (._sparse), never densified
    ctx = OperatorContext(rng=state.rng, fetch_rows=evaluator.rows, feature_span=feature_span(X), n_samples=X.shape[0],
                          variant_p=params.variant_p, max_depth=params.max_depth,
                          ranking_pressure=params.ranking_pressure, X=numba_rows(X))

    def save():
        if checkpoint is not None:
            ckpt.save(checkpoint, state, search_params, fingerprint)

    bar = None
    if verbose:
        bar = ProgressBar(params.max_generations, "GDT", initial=state.generation, unit="gen",
                          postfix=lambda rec: {"fitness": f"{rec['best_fitness']:.5f}", "size": rec["best_size"]})
    callbacks = [c for c in (bar, callback) if c is not None]  # dtlab.callbacks' protocol, as GBDT's

    def after_generation(st: RunState, rec: dict) -> bool:
        if st.generation % checkpoint_every == 0:
            save()
        return run_callbacks(callbacks, st.generation, rec)

    try:
        run(state, evaluator, params, ctx, after_generation)
    except KeyboardInterrupt:
        state.stop_reason = "interrupted"
        warnings.warn(f"GDT interrupted after {state.generation} generations; keeping the best tree so far "
                      f"(fitness {state.best_fitness:.6f}, {int(state.population.sizes[state.best])} nodes)"
                      + (f"; the run is saved in {checkpoint} and resumes from there" if checkpoint else ""),
                      UserWarning, stacklevel=5)
    finally:
        if bar is not None:
            bar.close()
    save()
