"""Checkpoints of a GDT run: a JSON document and an ``.npz`` of arrays, never pickle.

A checkpoint is a folder holding

* ``state.json``: format tag, generation, stagnation counter, the generator's
  bit-generator state (so the resumed run draws the same numbers), history,
  the parameters that shape the run and a fingerprint of the training data;
* ``population.npz``: the population and the best individual packed into
  concatenated arrays (tests, children, statistics, fitness).

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

from .algorithm import RunState
from .individual import Individual

FORMAT = "dtlab.GDTCheckpoint/1"
STATE_FILE = "state.json"
ARRAYS_FILE = "population.npz"


def data_fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """A BLAKE2 digest of the training data (shape, dtype and bytes), to refuse resuming on other data."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(repr((X.shape, str(X.dtype), y.shape, str(y.dtype))).encode())
    digest.update(np.ascontiguousarray(X).data)
    digest.update(np.ascontiguousarray(y).data)
    return digest.hexdigest()


def _pack_individuals(individuals: list[Individual]) -> dict[str, np.ndarray]:
    sizes = np.array([ind.n_nodes for ind in individuals], np.int64)
    offset = np.concatenate([[0], np.cumsum(sizes)])
    cat = {name: np.concatenate([getattr(ind, name) for ind in individuals])
           for name in ("feature", "threshold", "left", "right", "counts", "cand_hash", "cand_row")}
    return {"node_offset": offset, **cat,
            "fitness": np.array([ind.fitness for ind in individuals], np.float64),
            "accuracy": np.array([ind.accuracy for ind in individuals], np.float64),
            "evaluated": np.array([ind.evaluated for ind in individuals], bool)}


def _unpack_individuals(arrays: dict[str, np.ndarray]) -> list[Individual]:
    off = arrays["node_offset"]
    out = []
    for t in range(off.shape[0] - 1):
        a, b = int(off[t]), int(off[t + 1])
        ind = Individual(*(arrays[name][a:b].copy() for name in ("feature", "threshold", "left", "right", "counts",
                                                                     "cand_hash", "cand_row")),
                         fitness=float(arrays["fitness"][t]), accuracy=float(arrays["accuracy"][t]),
                         evaluated=bool(arrays["evaluated"][t]))
        ind.check()
        out.append(ind)
    return out


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
    # the same object can fill several slots (selected twice, or the elite): store it once
    # and keep the aliasing, since the loop compares individuals by identity
    unique: list[Individual] = []
    slot_of: dict[int, int] = {}
    for ind in state.population + [state.best]:
        if id(ind) not in slot_of:
            slot_of[id(ind)] = len(unique)
            unique.append(ind)
    arrays = _pack_individuals(unique)
    arrays["members"] = np.array([slot_of[id(ind)] for ind in state.population + [state.best]], np.int64)
    arrays["generation"] = np.array(state.generation)
    tmp_arrays = folder / (ARRAYS_FILE + ".tmp.npz")
    np.savez(tmp_arrays, **arrays)
    os.replace(tmp_arrays, folder / ARRAYS_FILE)
    document = {"format": FORMAT, "generation": state.generation, "stagnation": state.stagnation,
                "stop_reason": state.stop_reason, "rng": _jsonable(state.rng.bit_generator.state),
                "history": _jsonable(state.history), "params": _jsonable(params), "data": fingerprint,
                "population_size": len(state.population)}
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
    unique = _unpack_individuals(arrays)
    individuals = [unique[i] for i in arrays["members"]]
    bit_generator = getattr(np.random, document["rng"]["bit_generator"])()
    bit_generator.state = document["rng"]
    state = RunState(generation=document["generation"], population=individuals[:-1], best=individuals[-1],
                     stagnation=document["stagnation"], rng=np.random.Generator(bit_generator),
                     history=document["history"], stop_reason=document["stop_reason"])
    return state, document["params"], document["data"]
