"""The public surface of the estimators and of :class:`dtlab.inference.Forest`.

* every public ``fit`` / ``predict`` / ``predict_proba`` / ``predict_log_proba`` / ``decision_function`` /
  ``score`` (and ``Forest.predict`` / ``Forest.apply``) has numpydoc Parameters, Returns and Examples sections,
  and its Examples run (``doctest``, under numba's CUDA simulator as tests/conftest.py sets it, so ``"auto"``
  backends are the CPU);
* constructors take keyword arguments only;
* ``verbose`` is one thing everywhere: scikit-learn's int >= 0 (0 silent, True / False as 1 / 0), documented in
  the same words, validated by :func:`dtlab._validation.check_verbose`, and it never changes a model;
* the scikit-learn synonym ``criterion="log_loss"`` grows the ``"entropy"`` tree.
"""

import doctest
import inspect
import os
import re

import numpy as np
import pytest

from dtlab._validation import check_verbose
from dtlab.boosting import GBDTClassifier, GBDTRegressor
from dtlab.evolution import GDTClassifier
from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
from dtlab.inference import Forest
from dtlab.linear import TronLinearSVC, TronLogisticRegression

ESTIMATORS = (DecisionTreeClassifier, DecisionTreeRegressor, GDTClassifier, TronLogisticRegression, TronLinearSVC,
              GBDTClassifier, GBDTRegressor)
METHODS = ("fit", "predict", "predict_proba", "predict_log_proba", "decision_function", "score")
FOREST_METHODS = ("predict", "apply")
SECTIONS = ("Parameters", "Returns", "Examples")

#: The estimators with a ``verbose``; the greedy trees have none (a tree fit has no progress to report, as in
#: scikit-learn), which their docstrings say.
VERBOSE = (GDTClassifier, TronLogisticRegression, TronLinearSVC, GBDTClassifier, GBDTRegressor)
VERBOSE_HEADER = "verbose : int >= 0 or bool, default=0"
VERBOSE_CONVENTION = "Progress reporting, scikit-learn's convention: 0 is silent, True and False count as 1 and 0."
#: Small settings for the verbose fits below.
SMALL = {GDTClassifier: dict(population_size=8, max_generations=5, random_state=0),
         TronLogisticRegression: dict(backend="cpu"), TronLinearSVC: dict(backend="cpu"),
         GBDTClassifier: dict(n_estimators=3, max_depth=2, backend="cpu"),
         GBDTRegressor: dict(n_estimators=3, max_depth=2, backend="cpu")}


def _public_methods() -> dict[str, object]:
    """``"Class.method"`` -> function, each function once (the two TRON classes share theirs)."""
    found: dict[str, object] = {}
    for cls in ESTIMATORS:
        for name in METHODS:
            func = getattr(cls, name, None)
            if func is not None and func not in found.values():
                found[f"{cls.__name__}.{name}"] = func
    for name in FOREST_METHODS:
        found[f"Forest.{name}"] = getattr(Forest, name)
    return found


PUBLIC = _public_methods()


def test_the_simulator_is_on():
    """The examples' ``"auto"`` backends mean the CPU under the simulator (tests/conftest.py sets it)."""
    assert os.environ.get("NUMBA_ENABLE_CUDASIM") in ("0", "1")


def test_every_listed_method_is_dtlab_s_own():
    """No method of the list is left to scikit-learn's mixins, whose docstrings have no Examples."""
    for cls in ESTIMATORS:
        for name in METHODS:
            func = getattr(cls, name, None)
            if func is not None:
                assert func.__module__.startswith("dtlab."), f"{cls.__name__}.{name} comes from {func.__module__}"
    assert {"DecisionTreeClassifier.score", "GBDTClassifier.decision_function", "GDTClassifier.predict_proba",
            "TronLogisticRegression.predict_log_proba", "DecisionTreeRegressor.predict", "Forest.predict"} \
        <= set(PUBLIC)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstring_has_the_numpydoc_sections(name):
    doc = inspect.getdoc(PUBLIC[name]) or ""
    for section in SECTIONS:
        assert re.search(rf"^{section}\n-{{{len(section)}}}$", doc, re.MULTILINE), f"{name}: no {section} section"
    returns = doc.split("Returns\n-------\n", 1)[1].split("\n\n", 1)[0]
    assert returns.strip(), f"{name}: an empty Returns section"


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstring_examples_run(name):
    func = PUBLIC[name]
    doc = inspect.getdoc(func)
    examples = doc.split("Examples\n--------\n", 1)[1]
    test = doctest.DocTestParser().get_doctest(examples, {}, name, inspect.getsourcefile(func), 0)
    assert test.examples, f"{name}: its Examples hold no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_constructors_take_keywords_only(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    positional = [p.name for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert not positional, f"{cls.__name__} takes {positional} by position"


def test_a_positional_argument_is_refused():
    with pytest.raises(TypeError):
        GDTClassifier(20)


@pytest.mark.parametrize("value, expected", [(0, 0), (1, 1), (3, 3), (True, 1), (False, 0), (np.int64(2), 2),
                                             (np.bool_(True), 1)])
def test_check_verbose_takes_scikit_learn_s_values(value, expected):
    out = check_verbose(value)
    assert out == expected and type(out) is int


@pytest.mark.parametrize("value", [0.5, 1.0, "1", None, [1]])
def test_check_verbose_refuses_other_types(value):
    with pytest.raises(TypeError, match="verbose must be an int >= 0"):
        check_verbose(value)


def test_check_verbose_refuses_negative_values():
    with pytest.raises(ValueError, match="LightGBM's verbose=-1"):
        check_verbose(-1)
    with pytest.raises(ValueError, match=r"verbose must be >= 0 \(0: silent\), got -2"):
        check_verbose(-2)


def _doc_of(cls) -> str:
    return " ".join(inspect.getdoc(cls).split())


@pytest.mark.parametrize("cls", VERBOSE, ids=lambda c: c.__name__)
def test_verbose_is_an_int_default_documented_alike(cls):
    default = inspect.signature(cls).parameters["verbose"].default
    assert default == 0 and type(default) is int
    documented = TronLogisticRegression if cls is TronLinearSVC else cls  # its docstring refers there
    assert VERBOSE_HEADER in _doc_of(documented) and VERBOSE_CONVENTION in _doc_of(documented)


@pytest.mark.parametrize("cls", (DecisionTreeClassifier, DecisionTreeRegressor), ids=lambda c: c.__name__)
def test_the_trees_without_verbose_say_so(cls):
    assert "verbose" not in inspect.signature(cls).parameters
    assert "There is no ``verbose``" in _doc_of(cls)


def _data(cls):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] - X[:, 1] if cls is GBDTRegressor else (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


@pytest.mark.parametrize("bad, error", [("yes", TypeError), (0.5, TypeError), (None, TypeError), (-1, ValueError)])
@pytest.mark.parametrize("cls", VERBOSE, ids=lambda c: c.__name__)
def test_fit_refuses_a_bad_verbose(cls, bad, error):
    X, y = _data(cls)
    with pytest.raises(error, match="verbose must be"):
        cls(**SMALL[cls], verbose=bad).fit(X, y)


def _outputs(model, X) -> list[np.ndarray]:
    out = [model.predict(X)]
    for name in ("predict_proba", "decision_function"):
        if hasattr(model, name):
            out.append(getattr(model, name)(X))
    return out


@pytest.mark.parametrize("cls", VERBOSE, ids=lambda c: c.__name__)
def test_verbose_never_changes_the_model(cls, capsys):
    X, y = _data(cls)
    silent = _outputs(cls(**SMALL[cls]).fit(X, y), X)
    for verbose in (True, 2, np.int64(1)):
        talking = _outputs(cls(**SMALL[cls], verbose=verbose).fit(X, y), X)
        for a, b in zip(silent, talking):
            np.testing.assert_array_equal(a, b)
    capsys.readouterr()


def test_log_loss_is_scikit_learn_s_name_of_entropy():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    entropy = DecisionTreeClassifier(criterion="entropy", random_state=0).fit(X, y)
    log_loss = DecisionTreeClassifier(criterion="log_loss", random_state=0).fit(X, y)
    for field in ("feature", "threshold", "left", "right", "value"):
        np.testing.assert_array_equal(getattr(entropy.tree_, field), getattr(log_loss.tree_, field))
    np.testing.assert_array_equal(entropy.node_impurity_, log_loss.node_impurity_)
    np.testing.assert_array_equal(entropy.feature_importances_, log_loss.feature_importances_)
    assert log_loss.get_params()["criterion"] == "log_loss"
