"""Checkpoints of a GDT run: a JSON document and an ``.npz`` of arrays, never pickle.

A checkpoint is a folder holding

* ``state.json``: format tag, generation, stagnation counter, the generator's
  bit-generator state (so the resumed run draws the same numbers), history,
  the parameters that shape the run and a fingerprint of the training data;
* ``population.npz``: the population's flat arrays
  (:class:`~dtlab.evolution.population.Population`: tests, children,
  statistics, fitness, individual ids), the best individual's slot, and the
  run's size-accuracy front (``front_*``, :mod:`dtlab.evolution.front`).

Both files are written to temporary names and renamed into place, arrays
first, so an interrupted save leaves the previous checkpoint readable.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from .algorithm import RunState
from .front import Front
from .population import Population

FORMAT = "dtlab.GDTCheckpoint/2"
STATE_FILE = "state.json"
ARRAYS_FILE = "population.npz"


def data_fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """A BLAKE2 digest of the training data (shape, dtype and bytes), to refuse resuming on other data."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr((X.shape, str(X.dtype), y.shape, str(y.dtype))).encode())
    for part in (X.indptr, X.indices, X.data) if scipy.sparse.issparse(X) else (X,):  # CSR: its arrays
        digest.update(np.ascontiguousarray(part).data)
    digest.update(np.ascontiguousarray(y).data)
    return digest.hexdigest()


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def save(path: str | Path, state: RunState, params: dict[str, Any], fingerprint: str) -> None:
    """Write ``state`` as a checkpoint folder at ``path`` (created if needed)."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {name: getattr(state.population, name) for name in Population.ARRAYS}
    front = state.front.as_population()
    if front is not None:
        arrays.update({f"front_{name}": getattr(front, name) for name in Population.ARRAYS})
    arrays["best"] = np.array(state.best)
    arrays["generation"] = np.array(state.generation)
    tmp_arrays = folder / (ARRAYS_FILE + ".tmp.npz")
    np.savez(tmp_arrays, **arrays)
    os.replace(tmp_arrays, folder / ARRAYS_FILE)
    document = {"format": FORMAT, "generation": state.generation, "stagnation": state.stagnation,
                "stop_reason": state.stop_reason, "rng": _jsonable(state.rng.bit_generator.state),
                "history": _jsonable(state.history), "params": _jsonable(params), "data": fingerprint,
                "population_size": state.population.n_trees, "next_ident": state.next_ident}
    tmp_state = folder / (STATE_FILE + ".tmp")
    tmp_state.write_text(json.dumps(document))
    os.replace(tmp_state, folder / STATE_FILE)


def exists(path: str | Path) -> bool:
    """Whether ``path`` holds a checkpoint."""
    folder = Path(path)
    return (folder / STATE_FILE).is_file() and (folder / ARRAYS_FILE).is_file()


def load(path: str | Path) -> tuple[RunState, dict[str, Any], str]:
    """Read a checkpoint; returns ``(state, params, data fingerprint)``.

    Raises
    ------
    ValueError
        The folder does not hold a readable checkpoint of this format.
    """
    folder = Path(path)
    try:
        document = json.loads((folder / STATE_FILE).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{folder} does not hold a readable GDT checkpoint ({exc})") from exc
    if document.get("format") != FORMAT:
        raise ValueError(f"{folder / STATE_FILE} is not a GDT checkpoint (format {document.get('format')!r}, "
                         f"expected {FORMAT!r})")
    with np.load(folder / ARRAYS_FILE, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    if int(arrays["generation"]) != document["generation"]:
        raise ValueError(f"{folder}: {ARRAYS_FILE} is from generation {int(arrays['generation'])} but "
                         f"{STATE_FILE} from {document['generation']}; the checkpoint is inconsistent")
    population = Population(*(arrays[name] for name in Population.ARRAYS))
    front = (Population(*(arrays[f"front_{name}"] for name in Population.ARRAYS)) if "front_ident" in arrays
             else None)
    best = int(arrays["best"])
    try:
        population.validate()
        if front is not None:
            front.validate()
    except ValueError as exc:
        raise ValueError(f"{folder}: {ARRAYS_FILE} does not hold a valid population ({exc})") from exc
    if not 0 <= best < population.n_trees or int(document["next_ident"]) <= int(population.ident.max()):
        raise ValueError(f"{folder}: the best individual's slot or the next individual id is inconsistent")
    bit_generator = getattr(np.random, document["rng"]["bit_generator"])()
    bit_generator.state = document["rng"]
    state = RunState(generation=document["generation"], population=population, best=best,
                     stagnation=document["stagnation"], rng=np.random.Generator(bit_generator),
                     history=document["history"], stop_reason=document["stop_reason"],
                     next_ident=int(document["next_ident"]), front=Front.from_population(front))
    return state, document["params"], document["data"]


def resume(path: str | Path, X: np.ndarray, y: np.ndarray, n_classes: int, params: dict[str, Any],
           resumable: tuple[str, ...]) -> RunState:
    """The run saved at ``path``, checked to be a run on these data with these search parameters.

    Raises
    ------
    ValueError
        Other training data, other classes, or a changed parameter outside ``resumable`` (named).
    """
    state, saved_params, fingerprint = load(path)
    if fingerprint != data_fingerprint(X, y):
        raise ValueError(f"the checkpoint in {path} was made on other training data; "
                         "use another checkpoint folder or delete it to start afresh")
    changed = sorted(k for k in set(params) | set(saved_params) if params.get(k) != saved_params.get(k)
                     and k not in resumable)
    if changed:
        differences = ", ".join(f"{k}: {saved_params.get(k)!r} -> {params.get(k)!r}" for k in changed)
        raise ValueError(f"the checkpoint in {path} was made with other parameters ({differences}); "
                         f"only {', '.join(resumable)} may change when resuming")
    if state.population.counts.shape[1] != n_classes:
        raise ValueError(f"the checkpoint in {path} has {state.population.counts.shape[1]} classes, the data "
                         f"{n_classes}")
    if state.stop_reason in ("max_generations", "stagnation", "callback", "interrupted"):
        state.stop_reason = None  # limits may have been raised; run() re-checks them
    return state
