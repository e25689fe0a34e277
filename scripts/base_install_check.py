"""What a user gets from ``pip install dtlab`` with no extras: every estimator fits and predicts, a model imports
into ``Forest``, and (with ``--dask``, after ``pip install dtlab[dask]``) a boosting and a TRON fit run on a Dask
cluster -- all without JupyterLab, ipywidgets or matplotlib installed.

Run from outside the checkout (``.ci/run`` does, in a fresh venv), so that the installed library is the one
imported.  Exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

import numpy as np

NOT_BASE = ("matplotlib", "ipywidgets", "jupyterlab", "IPython")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dask", action="store_true", help="also fit on a LocalCluster (needs dtlab[dask])")
    args = parser.parse_args()

    installed = [name for name in NOT_BASE if importlib.util.find_spec(name) is not None]
    if installed:
        raise SystemExit(f"this check needs a venv without the extras, but it has {installed}")

    import dtlab
    from dtlab.boosting import GBDTClassifier, GBDTRegressor
    from dtlab.evolution import GDTClassifier
    from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
    from dtlab.inference import Forest
    from dtlab.linear import TronLinearSVC, TronLogisticRegression

    print("dtlab", dtlab.__version__, "from", dtlab.__file__)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y_class = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    y_value = X[:, 0] * 2.0 + X[:, 2]

    def check(name, model, y, at_least):
        model.fit(X, y)
        score = model.score(X, y)
        print(f"{name}: training score {score:.3f}")
        if not score >= at_least:
            raise SystemExit(f"{name} fitted badly: score {score:.3f} < {at_least}")
        return model

    tree = check("DecisionTreeClassifier", DecisionTreeClassifier(max_depth=4, random_state=0), y_class, 0.9)
    check("DecisionTreeRegressor", DecisionTreeRegressor(max_depth=4, random_state=0), y_value, 0.8)
    check("GDTClassifier", GDTClassifier(max_generations=30, random_state=0), y_class, 0.7)
    check("TronLogisticRegression", TronLogisticRegression(), y_class, 0.9)
    check("TronLinearSVC", TronLinearSVC(), y_class, 0.9)
    boosted = check("GBDTClassifier", GBDTClassifier(n_estimators=20, random_state=0), y_class, 0.9)
    check("GBDTRegressor", GBDTRegressor(n_estimators=20, random_state=0), y_value, 0.8)

    forest = Forest(boosted)
    margins = forest.predict(X)
    expected = boosted.decision_function(X) if hasattr(boosted, "decision_function") else None
    if expected is not None and not np.allclose(np.ravel(margins), np.ravel(expected), atol=1e-5):
        raise SystemExit("Forest.predict differs from the model's own decision_function")
    print(f"Forest.predict: {np.shape(margins)} margins")

    from dtlab.plotting import draw_tree

    try:
        draw_tree(tree.tree_)
    except ImportError as err:
        if "dtlab[plot]" not in str(err):
            raise SystemExit(f"drawing without matplotlib raised an unclear error: {err}") from err
        print("draw_tree without matplotlib:", err)
    else:
        raise SystemExit("draw_tree without matplotlib did not raise")

    loaded = [name for name in NOT_BASE if name in sys.modules]
    if loaded:
        raise SystemExit(f"importing and using dtlab loaded {loaded}")

    if args.dask:
        from dask.distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            on_dask = GBDTClassifier(n_estimators=10, split_method="hist", random_state=0, executor=client)
            on_dask.fit(X, y_class)
            alone = GBDTClassifier(n_estimators=10, split_method="hist", random_state=0).fit(X, y_class)
            if not np.array_equal(on_dask.predict_proba(X), alone.predict_proba(X)):
                raise SystemExit("the Dask fit differs from the fit in this process")
            print("GBDTClassifier on a 2-worker LocalCluster: the same model as in this process")
            tron = TronLogisticRegression(executor=client).fit(X, y_class)
            print(f"TronLogisticRegression on the cluster: training score {tron.score(X, y_class):.3f}")
    print("base install: OK")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
