"""Reference runs of LIBLINEAR 2.30's trust-region TRON, for tests/linear/liblinear230_reference.json.

``liblinear-official`` >= 2.40 replaced TRON's trust region with a line search,
so the trust-region solver (``solver="tron"``) is checked against the last
release that had it, built from source:

    git clone https://github.com/cjlin1/liblinear && cd liblinear && git checkout v230 && make
    PYTHONPATH=. python scripts/liblinear230_reference.py /path/to/liblinear/train

For each dataset, loss (-s 0, -s 2), tolerance and bias, the script runs
``train -s S -c 4 -e EPS [-B 1]``, counts the ``iter`` lines of its log (one
per trust-region iteration, rejected steps included), reads the model's
weights and evaluates the objective with dtlab's formula.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from dtlab.datasets import load_a9a, load_rcv1_small, load_w8a
from workbench.linear.peers import objective_value

CASES = {"a9a": load_a9a, "w8a": load_w8a, "rcv1_small": load_rcv1_small}
OUT = Path(__file__).resolve().parent.parent / "tests" / "linear" / "liblinear230_reference.json"


def write_svmlight(X, y, path: Path) -> None:
    """LIBSVM text in row order; the last column is named on the first row (value 0, which adds exact zeros),
    so that LIBLINEAR sizes w (and places the bias) as dtlab does."""
    X = X.tocsr()
    with open(path, "w") as out:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            items = [f"{j + 1}:{v:.17g}" for j, v in zip(X.indices[lo:hi], X.data[lo:hi])]
            if i == 0 and (hi == lo or X.indices[hi - 1] != X.shape[1] - 1):
                items.append(f"{X.shape[1]}:0")
            out.write(f"{int(y[i]):+d} " + " ".join(items) + "\n")


def read_model(path: Path, n_features: int):
    lines = path.read_text().splitlines()
    head = {ln.split()[0]: ln.split()[1:] for ln in lines[: lines.index("w")]}
    w = np.array([float(v) for v in lines[lines.index("w") + 1:]])
    labels = [int(v) for v in head["label"]]
    bias = float(head["bias"][0])
    coef, b = (w[:-1], w[-1]) if bias >= 0 else (w, 0.0)
    if labels[0] != 1:
        coef, b = -coef, -b
    assert len(coef) == n_features, (len(coef), n_features)
    return coef, float(b)


def main(train: str) -> None:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, load in CASES.items():
            d = load()
            y_pm = np.where(d.y > 0, 1.0, -1.0)
            data = Path(tmp) / name
            write_svmlight(d.X, y_pm, data)
            for loss, s in (("logistic", 0), ("squared_hinge", 2)):
                for eps in (0.1, 0.001):
                    for bias in (False, True):
                        model = Path(tmp) / "model"
                        cmd = [train, "-s", str(s), "-c", "4", "-e", repr(eps)] + (["-B", "1"] if bias else [])
                        log = subprocess.run(cmd + [str(data), str(model)], capture_output=True, text=True,
                                             check=True).stdout
                        coef, b = read_model(model, d.X.shape[1])
                        results.append({"dataset": name, "loss": loss, "C": 4.0, "eps": eps, "bias": bias,
                                        "n_iter": sum(ln.startswith("iter") for ln in log.splitlines()),
                                        "objective": objective_value(d.X, y_pm, coef, b, 4.0, loss)})
                        print(results[-1])
    OUT.write_text(json.dumps({"liblinear_version": 230, "command": "train -s S -c 4 -e EPS [-B 1]",
                               "runs": results}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
