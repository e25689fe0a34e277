"""Every dtlab estimator passes every scikit-learn estimator check: none expected to fail, none skipped.

The techniques' own test modules run ``check_estimator`` on their estimators in this process, where
scikit-learn skips its array-API check (it needs ``SCIPY_ARRAY_API=1`` before scipy is first imported, which
would change scipy for the whole suite).  Here a fresh interpreter with that variable set finds every
estimator class of the package by walking its modules -- so an estimator added later is checked too -- and
runs all of scikit-learn's checks on each; any status but "passed" fails the test.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Settings that keep the checks quick where an estimator's defaults make long fits (TRON runs with its
#: defaults: the intercept, which check_class_weight_classifiers needs; see tests/linear/test_estimators.py).
FAST_PARAMS = {
    "GBDTRegressor": {"n_estimators": 5, "max_depth": 3},
    "GBDTClassifier": {"n_estimators": 5, "max_depth": 3},
    "GDTClassifier": {"max_generations": 10, "population_size": 8, "random_state": 0},
}

SCRIPT = """
import importlib, inspect, json, pkgutil, sys, warnings
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import check_estimator
import dtlab

fast = json.loads(sys.argv[1])
classes = {}
for info in pkgutil.walk_packages(dtlab.__path__, "dtlab."):
    if info.name == "workbench.__main__":
        continue
    module = importlib.import_module(info.name)
    for name, cls in inspect.getmembers(module, inspect.isclass):
        if (issubclass(cls, BaseEstimator) and cls.__module__.startswith("dtlab.") and not name.startswith("_")
                and not inspect.isabstract(cls)):
            classes[name] = cls
report = {}
for name, cls in sorted(classes.items()):
    params = fast.get(name, {})
    if "backend" in inspect.signature(cls).parameters:
        params = dict(params, backend="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(cls(**params), on_fail=None)
    report[name] = [(r["check_name"], r["status"], str(r["exception"])[:300] if r["exception"] else None)
                    for r in results]
print(json.dumps(report))
"""


def test_every_estimator_passes_every_check_with_array_api_dispatch():
    env = dict(os.environ, SCIPY_ARRAY_API="1", NUMBA_ENABLE_CUDASIM="1", MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(FAST_PARAMS)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"DecisionTreeRegressor", "DecisionTreeClassifier", "GBDTRegressor", "GBDTClassifier",
            "TronLogisticRegression", "TronLinearSVC", "GDTClassifier"} <= set(report)
    not_passed = {name: [r for r in results if r[1] != "passed"] for name, results in report.items()}
    assert not any(not_passed.values()), {k: v for k, v in not_passed.items() if v}
    assert all(len(results) > 40 for results in report.values()), {k: len(v) for k, v in report.items()}
