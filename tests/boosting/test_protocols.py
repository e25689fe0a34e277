"""The growers' interfaces (:mod:`dtlab.boosting.protocols`): every split finder and row state has each member of
its protocol, with the protocol's parameters, and the growers use exactly those members.

The CUDA modules are imported under numba's simulator (``tests/conftest.py``), the Dask ones without a cluster.
"""

import inspect
import typing

import numpy as np
import pytest

from dtlab.boosting import protocols as P
from dtlab.boosting.exact import ExactSearch
from dtlab.boosting.grower import ColumnData, HostRows, grow_boosted_tree
from dtlab.boosting.hist import HistSearch, SegmentRows
from dtlab.boosting.lossguide import LossguideSearch, Split
from dtlab.boosting.lossguide_grower import grow_lossguide_tree

#: What the growers call, spelt out: a member added to or dropped from a protocol must show here too.
MEMBERS = {
    P.RowState: {"pos", "side", "root_sums", "advance", "leaf_of_row"},
    P.SplitFinder: {"allowed", "start_tree", "find", "split"},
    P.RowStateFinder: {"allowed", "start_tree", "find", "split", "row_state"},
    P.NodeSplit: {"feature", "gain", "threshold", "missing_left", "categories"},
    P.NodeWiseSplitFinder: {"allowed", "start_tree", "evaluate", "split", "sums", "leaf_of_row"},
}


def _cuda_classes():
    from dtlab.boosting._exact_cuda import ExactCudaSearch
    from dtlab.boosting._hist_cuda import HistCudaSearch
    from dtlab.boosting._lossguide_cuda import LossguideCudaSearch
    from dtlab.boosting._rows_cuda import DeviceRows

    return ExactCudaSearch, HistCudaSearch, LossguideCudaSearch, DeviceRows


def _dask_classes():
    from dtlab.boosting.dask.collective import WorkerHistSearch
    from dtlab.boosting.dask.exact import DaskExactSearch
    from dtlab.boosting.dask.hist import DaskHistSearch, DaskRows

    return DaskHistSearch, WorkerHistSearch, DaskExactSearch, DaskRows


def implementations() -> dict:
    """``{protocol: [classes]}``: every finder, row state and node split of dtlab.boosting."""
    exact_cuda, hist_cuda, lossguide_cuda, device_rows = _cuda_classes()
    dask_hist, worker_hist, dask_exact, dask_rows = _dask_classes()
    own_rows = [HistSearch, exact_cuda, hist_cuda, dask_hist, worker_hist]
    return {
        P.SplitFinder: [ExactSearch, dask_exact, *own_rows],
        P.RowStateFinder: own_rows,
        P.RowState: [HostRows, SegmentRows, device_rows, dask_rows],
        P.NodeWiseSplitFinder: [LossguideSearch, lossguide_cuda],
        P.NodeSplit: [Split],
    }


def protocol_members(proto) -> set[str]:
    """The members a protocol declares (its own and its protocol bases'): annotated attributes and methods."""
    names = set()
    for base in proto.__mro__:
        if base in (typing.Protocol, typing.Generic, object) or not getattr(base, "_is_protocol", False):
            continue
        names |= set(base.__dict__.get("__annotations__", {}))
        names |= {n for n, v in vars(base).items() if inspect.isfunction(v) and not n.startswith("_")}
    return names


def declared(cls) -> set[str]:
    """A class's attributes and methods, with the attributes it only annotates (set per instance)."""
    names = set(dir(cls))
    for base in cls.__mro__:
        names |= set(base.__dict__.get("__annotations__", {}))
    return names


def _parameters(fn) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


@pytest.mark.parametrize("proto", list(MEMBERS), ids=lambda p: p.__name__)
def test_protocols_declare_what_the_growers_call(proto):
    assert protocol_members(proto) == MEMBERS[proto]
    assert getattr(proto, "_is_runtime_protocol", False)
    for name in MEMBERS[proto]:
        member = getattr(proto, name, None)
        if inspect.isfunction(member):
            assert member.__doc__, f"{proto.__name__}.{name} has no docstring"
    assert proto.__doc__


@pytest.mark.parametrize("proto", list(MEMBERS), ids=lambda p: p.__name__)
def test_every_implementation_has_each_member(proto):
    classes = implementations()[proto]
    assert classes
    for cls in classes:
        have = declared(cls)
        for name in MEMBERS[proto]:
            assert name in have, f"{cls.__qualname__} lacks {proto.__name__}.{name}"
            member = getattr(proto, name, None)
            if inspect.isfunction(member):
                impl = getattr(cls, name)
                assert callable(impl), f"{cls.__qualname__}.{name} is not a method"
                assert _parameters(impl) == _parameters(member), (cls.__qualname__, name)
        assert any("protocols." in (c.__doc__ or "") for c in cls.__mro__), \
            f"neither {cls.__qualname__}'s docstring nor its bases' name its protocol"


def test_finders_without_rows_of_their_own():
    """The grower gives ExactSearch and DaskExactSearch a HostRows: neither brings a row state."""
    dask_exact = _dask_classes()[2]
    for cls in (ExactSearch, dask_exact):
        assert not hasattr(cls, "row_state")
    level_wise = implementations()[P.SplitFinder]
    assert {c for c in level_wise if hasattr(c, "row_state")} == set(implementations()[P.RowStateFinder])


@pytest.fixture
def fit_data(rng):
    n, d = 120, 4
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[rng.random((n, d)) < 0.1] = np.nan
    g = (np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) + 0.3 * rng.normal(size=n)).astype(np.float32)
    h = np.ones(n, np.float32)
    return ColumnData.from_input(X), g, h


def test_real_instances_are_instances_of_their_protocols(fit_data):
    """runtime_checkable isinstance over small real finders and row states, CPU and CUDA (the simulator)."""
    from dtlab.backend import resolve_backend

    exact_cuda, hist_cuda, lossguide_cuda, _ = _cuda_classes()
    data, g, h = fit_data
    cuda = resolve_backend("cuda")
    cats = np.zeros(data.n_features, bool)
    exact, dev_exact = ExactSearch(data, 1), exact_cuda(data, cuda)
    hist, dev_hist = HistSearch(data, 1, 16), hist_cuda(data, cuda, 16)
    for finder in (exact, hist, dev_exact, dev_hist):
        assert isinstance(finder, P.SplitFinder), type(finder)
        assert isinstance(finder, P.RowStateFinder) == (finder is not exact), type(finder)
    for finder in (LossguideSearch(data, 1, 16, cats, 4), lossguide_cuda(data, cuda, 16, cats, 4)):
        assert isinstance(finder, P.NodeWiseSplitFinder), type(finder)
        finder.start_tree(g, h)
        split = finder.evaluate([0], [-1], [float(g.sum())], [float(h.sum())], 1.0, 1.0)[0]
        assert isinstance(split, P.NodeSplit)
    rows = [HostRows(g, h), _dask_classes()[3](None)]
    for finder in (hist, dev_exact, dev_hist):
        finder.start_tree(g, h)
        rows.append(finder.row_state(g, h))
    for r in rows:
        assert isinstance(r, P.RowState), type(r)
    assert {type(r).__name__ for r in rows} == {"HostRows", "DaskRows", "SegmentRows", "DeviceRows"}


class _Recorder:
    """Stands for a finder, row state or split: records the names the grower reads or sets on it.

    The finder's ``row_state`` and ``evaluate`` results are recorded too (in ``seen["rows"]``,
    ``seen["split"]``); the splits go back to the finder unwrapped, so only the grower's accesses count.
    """

    def __init__(self, target, seen: dict, kind: str):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_seen", seen)
        object.__setattr__(self, "_kind", kind)

    def __getattr__(self, name):
        self._seen[self._kind].add(name)
        value = getattr(self._target, name)
        if name == "row_state":
            return lambda g, h: _Recorder(value(g, h), self._seen, "rows")
        if name == "evaluate":
            return lambda *a: [_Recorder(s, self._seen, "split") for s in value(*a)]
        if name == "split" and self._kind == "finder":
            return lambda *a, **k: value(*(x._target if isinstance(x, _Recorder) else x for x in a), **k)
        return value

    def __setattr__(self, name, value):
        self._seen[self._kind].add(name)
        setattr(self._target, name, value)


GROW = dict(max_depth=3, learning_rate=0.3, reg_lambda=1.0, gamma=0.0, min_child_weight=1.0)


def _same_trees(a, b):
    for field in ("feature", "threshold", "missing_left", "left", "right", "value", "gain", "cover"):
        assert np.array_equal(getattr(a[0], field), getattr(b[0], field)), field
    assert np.array_equal(a[1], b[1])


def test_the_level_wise_grower_uses_exactly_the_protocol_members(fit_data):
    data, g, h = fit_data
    seen = {"finder": set(), "rows": set()}
    recorded = grow_boosted_tree(_Recorder(HistSearch(data, 1, 16), seen, "finder"), g, h, **GROW)
    assert recorded[0].n_nodes > 3  # a real tree: every level's members were used
    assert seen["finder"] == MEMBERS[P.RowStateFinder]
    assert seen["rows"] == MEMBERS[P.RowState]
    _same_trees(recorded, grow_boosted_tree(HistSearch(data, 1, 16), g, h, **GROW))
    seen = {"finder": set(), "rows": set()}
    grow_boosted_tree(_Recorder(ExactSearch(data, 1), seen, "finder"), g, h, **GROW)
    assert seen["finder"] == MEMBERS[P.SplitFinder] | {"row_state"}  # asked for, absent: a HostRows


@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_the_node_wise_grower_uses_exactly_the_protocol_members(fit_data, policy):
    data, g, h = fit_data
    cats = np.zeros(data.n_features, bool)
    seen = {"finder": set(), "split": set()}
    kw = dict(GROW, max_leaves=6)
    recorded = grow_lossguide_tree(_Recorder(LossguideSearch(data, 1, 16, cats, 4), seen, "finder"), g, h, policy,
                                   **kw)
    assert recorded[0].n_nodes > 3
    assert seen["finder"] == MEMBERS[P.NodeWiseSplitFinder]
    assert seen["split"] == MEMBERS[P.NodeSplit]
    _same_trees(recorded, grow_lossguide_tree(LossguideSearch(data, 1, 16, cats, 4), g, h, policy, **kw))
