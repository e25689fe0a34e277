"""Callbacks of iterative fits: one protocol for GBDT's boosting rounds and GDT's generations.

A callback is any callable ``callback(iteration, record) -> bool | None``
called once per iteration (a boosting round, a generation) with the
iteration's number (from 0) and a ``record`` of what the iteration measured
(a dict).  Returning True stops the fit after this iteration.  The small
classes here are the callbacks the estimators build from their parameters
(LightGBM's ``callback.py`` pattern); a user's callback has the same shape:

``RecordEvaluation``  appends metrics of the record to a dict of lists (GBDT's ``evals_result_``);
``EarlyStopping``     stops when a watched value has not improved for some iterations (``best_iteration``);
``ProgressBar``       a tqdm bar, one step per iteration, with values of the record beside it.

:func:`run_callbacks` calls them all (none is skipped because another asked
to stop) and says whether any asked to stop.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

#: ``callback(iteration, record) -> bool | None``; True stops the fit.
Callback = Callable[[int, dict], Any]


def run_callbacks(callbacks: Iterable[Callback], iteration: int, record: dict) -> bool:
    """Call every callback with ``(iteration, record)``; True when at least one asks to stop."""
    stop = False
    for callback in callbacks:
        stop = bool(callback(iteration, record)) or stop
    return stop


def _lookup(record: Mapping, key: tuple[str, ...]) -> Any:
    for part in key:
        record = record[part]
    return record


class RecordEvaluation:
    """Append the record's metrics to ``store``: ``store[group][metric]`` gets one value per iteration.

    Parameters
    ----------
    store : dict
        Filled in place (GBDT's ``evals_result_``: ``{"validation_0": {"logloss": [...]}}``).
    groups : iterable of str
        Keys of the record whose values are ``{metric: value}`` dicts.
    """

    def __init__(self, store: dict, groups: Iterable[str]):
        self.store = store
        self.groups = tuple(groups)

    def __call__(self, iteration: int, record: dict) -> bool:
        for group in self.groups:
            for metric, value in record[group].items():
                self.store.setdefault(group, {}).setdefault(metric, []).append(value)
        return False


class EarlyStopping:
    """Stop when ``record[key]`` has not improved for ``rounds`` iterations.

    Parameters
    ----------
    rounds : int >= 1
    key : str or tuple of str
        Where the watched value sits in the record (a tuple for nested dicts,
        e.g. ``("validation_0", "logloss")``).
    minimize : bool, default=True
        Lower is better (a loss); False for a fitness.

    Attributes
    ----------
    best_iteration : int or None
        The iteration of the best value so far (the first of equal values).
    best_value : float or None
    """

    def __init__(self, rounds: int, key: str | tuple[str, ...], minimize: bool = True):
        self.rounds = int(rounds)
        self.key = (key,) if isinstance(key, str) else tuple(key)
        self.minimize = minimize
        self.best_iteration: int | None = None
        self.best_value: float | None = None

    def __call__(self, iteration: int, record: dict) -> bool:
        value = float(_lookup(record, self.key))
        better = self.best_value is None or (value < self.best_value if self.minimize else value > self.best_value)
        if better:
            self.best_value, self.best_iteration = value, iteration
        return iteration - self.best_iteration >= self.rounds


class ProgressBar:
    """A tqdm progress bar advanced once per iteration, showing ``postfix(record)`` beside it.

    Parameters
    ----------
    total : int
        Iterations at most.
    desc : str
    initial : int, default=0
        Iterations already done (a resumed run).
    unit : str, default="it"
    postfix : callable(record) -> dict, optional
        The values to show (formatted strings or numbers).

    Call :meth:`close` when the fit ends (also on an error or an interrupt).
    """

    def __init__(self, total: int, desc: str, initial: int = 0, unit: str = "it",
                 postfix: Callable[[dict], dict] | None = None):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, initial=min(initial, total), desc=desc, unit=unit)
        self.postfix = postfix

    def __call__(self, iteration: int, record: dict) -> bool:
        self.bar.update(1)
        if self.postfix is not None:
            self.bar.set_postfix(self.postfix(record), refresh=False)
        return False

    def close(self) -> None:
        self.bar.close()
