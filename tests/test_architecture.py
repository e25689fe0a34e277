"""The library's shape and the workbench beside it: no import cycles, imports pointing one way, modules of a
readable length.

The import graph is read from the source with :mod:`ast`, counting imports
inside functions too (a lazy import still ties two modules together).  An
edge ``a -> b`` means module ``a`` names module ``b`` in an import statement;
importing ``dtlab.x.y`` also runs ``dtlab/x/__init__.py``, but that implicit
edge to the parent package is not counted (every submodule would otherwise
form a cycle with its package's ``__init__``).

The layers (DESIGN.md): the foundation (:data:`FOUNDATION`) <- each technique
(``dtlab.<slug>``) <- its experiments and plots, which register into the lab
(``workbench``).  The rules checked here:

* the foundation never imports a technique or the lab;
* no module imports a private (``_``) module or name of another package: what
  two techniques share is foundation, with a public name;
* a technique imports the foundation, the lab and its own modules; of another
  technique only what that technique's package exports (``dtlab.inference``'s
  ``Forest``, as a user would), never one of its modules.

Each rule is a function of the import edges, so that the tests below can show
it catching a deliberately bad import in a snippet parsed like the package's
own files.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

from workbench.catalog import TECHNIQUES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dtlab"
WORKBENCH = ROOT / "workbench"

#: Modules that are not techniques; none of them may import a technique package (or the lab).
FOUNDATION = ("dtlab.backend", "dtlab._validation", "dtlab._jit", "dtlab._hashing", "dtlab._cuda_blocks",
              "dtlab.callbacks", "dtlab.datasets", "dtlab.trees", "dtlab.splits", "dtlab.plotting", "dtlab.distributed",
              "dtlab.testing", "workbench.widgets", "dtlab.gpu")
#: The lab: the registry behind ``python -m workbench figures | bench``, timing helpers, the gallery; the techniques'
#: experiments register into it (its catalog imports them by name, which no static edge shows).
LAB = ("workbench",)
TECHNIQUE_PACKAGES = tuple(f"dtlab.{slug}" for slug in TECHNIQUES)

#: A soft ceiling: modules hold one role each and are split by role, never only for size; past this many lines a
#: module has grown a second role.
MAX_LINES = 600


class Edge(NamedTuple):
    """``importer`` names ``target`` (a dtlab module) in an import; ``name`` is what ``from target import name``
    takes from it when that is not itself a module (None for ``import target`` or a submodule)."""

    importer: str
    target: str
    name: str | None
    line: int


def module_files() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (path, is_package)}`` of every module of dtlab and of the workbench."""
    modules = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *WORKBENCH.rglob("*.py")]):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def edges_of_source(name: str, source: str, is_package: bool, modules) -> list[Edge]:
    """The import edges of module ``name`` (whose text is ``source``) to the modules ``modules``."""
    here = name if is_package else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Edge(name, alias.name, None, node.lineno) for alias in node.names if alias.name in modules]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    found.append(Edge(name, sub, None, node.lineno))
                elif target in modules:
                    found.append(Edge(name, target, alias.name, node.lineno))
    return found


def import_edges() -> list[Edge]:
    modules = module_files()
    return [e for name, (path, is_package) in modules.items()
            for e in edges_of_source(name, path.read_text(), is_package, modules)]


def import_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` among dtlab's modules, function-level imports included."""
    graph: dict[str, set[str]] = {name: set() for name in module_files()}
    for e in import_edges():
        graph[e.importer].add(e.target)
    return graph


def _in(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def owner(module: str) -> str:
    """The package a module belongs to: ``dtlab.<sub>`` for the modules of a subpackage, else the module itself
    (``dtlab.backend``, ``dtlab._jit``: the root's own modules)."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (ROOT / parts[0] / parts[1]).is_dir()):
        return ".".join(parts[:2])
    return module


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def private_imports(edges) -> list[Edge]:
    """Imports of another package's private module (a ``_`` part below that package) or private name."""
    bad = []
    for e in edges:
        pkg = owner(e.target)
        if owner(e.importer) == pkg:
            continue
        below = e.target[len(pkg):].split(".")[1:]
        if any(_private(p) for p in below) or (e.name is not None and _private(e.name)):
            bad.append(e)
    return bad


def library_reaching_the_workbench(edges) -> list[Edge]:
    """Imports of the workbench by a module of the library."""
    return [e for e in edges if _in(e.importer, ["dtlab"]) and _in(e.target, LAB)]


def foundation_reaching_up(edges) -> list[Edge]:
    """Imports of a technique or of the lab by a foundation module."""
    return [e for e in edges if _in(e.importer, FOUNDATION) and _in(e.target, TECHNIQUE_PACKAGES + LAB)]


def cross_technique_imports(edges) -> list[Edge]:
    """Imports by a technique of another technique's modules, or of names its package does not export."""
    bad = []
    for e in edges:
        mine, theirs = owner(e.importer), owner(e.target)
        if mine in TECHNIQUE_PACKAGES and theirs in TECHNIQUE_PACKAGES and mine != theirs:
            if e.target != theirs or e.name is None or e.name not in _exports(theirs):
                bad.append(e)
    return bad


def _exports(package: str) -> set[str]:
    """The names of a package's ``__all__`` (read from its ``__init__.py``)."""
    tree = ast.parse((PACKAGE / package.split(".")[1] / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def _snippet(module: str, source: str) -> list[Edge]:
    """The edges of ``source`` as if it were the module ``module`` of dtlab (a deliberately bad import)."""
    modules = module_files()
    return edges_of_source(module, source, modules.get(module, (None, False))[1], modules)


def strongly_connected_components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm (iterative); returns the components of more than one module or with a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(component)
    return found


def closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def _in(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}
    assert sorted(map(sorted, strongly_connected_components(graph))) == [["a", "b", "c"], ["d"]]


def test_no_import_cycles():
    cycles = strongly_connected_components(import_graph())
    assert not cycles, f"import cycles among dtlab modules (function-level imports count): {cycles}"


def test_the_library_never_imports_the_workbench():
    bad = library_reaching_the_workbench(import_edges())
    assert not bad, f"library modules import the workbench: {bad}"
    assert library_reaching_the_workbench(_snippet("dtlab.boosting.estimators", "from workbench.boosting import plots"))
    assert not library_reaching_the_workbench(_snippet("workbench.boosting.plots", "from dtlab.boosting import GBDT"))


def test_the_workbench_uses_public_names_only():
    bad = [e for e in private_imports(import_edges()) if _in(e.importer, LAB)]
    assert not bad, f"the workbench imports private modules or names of the library: {bad}"
    assert private_imports(_snippet("workbench.inference.bench", "from dtlab.inference._predict_cpu import SERIAL"))


def test_foundation_never_imports_a_technique():
    bad = foundation_reaching_up(import_edges())
    assert not bad, f"foundation modules import techniques: {bad}"


def test_no_private_import_across_packages():
    bad = private_imports(import_edges())
    assert not bad, f"private modules or names of another package imported: {bad}"


def test_a_technique_uses_another_only_through_its_public_package():
    bad = cross_technique_imports(import_edges())
    assert not bad, f"technique modules reaching into another technique: {bad}"


@pytest.mark.parametrize("module, source", [
    ("dtlab.boosting.exact", "from ..greedy._scans_cpu import _scan_mse_naive"),  # before dtlab.splits
    ("dtlab.boosting.exact", "from ..greedy import _rules"),
    ("dtlab.inference.layout", "from ..trees.bitmask import _leaf_layout"),
    ("dtlab.greedy.builder", "from ..splits.presort import _partition_feature"),
    ("dtlab.linear.tron", "import dtlab.boosting._exact_cpu"),
])
def test_a_private_import_across_packages_is_caught(module, source):
    assert private_imports(_snippet(module, source))


@pytest.mark.parametrize("module, source", [
    ("dtlab.testing", "from .evolution.operators import grow_tree"),  # what testing.py did
    ("dtlab.callbacks", "from .greedy import DecisionTreeRegressor"),
    ("dtlab.trees.model_import", "from ..boosting import GBDTClassifier"),
    ("dtlab.splits.scans", "from workbench.registry import register_figure"),
])
def test_a_foundation_module_importing_a_technique_is_caught(module, source):
    assert foundation_reaching_up(_snippet(module, source))


def test_cross_technique_rule_allows_only_the_public_package():
    assert not cross_technique_imports(_snippet("dtlab.boosting.booster", "from ..inference import Forest"))
    assert cross_technique_imports(_snippet("dtlab.boosting.booster", "from ..inference.forest import Forest"))
    assert cross_technique_imports(_snippet("dtlab.boosting.booster", "from ..inference import layout"))
    assert cross_technique_imports(_snippet("dtlab.inference.forest", "from ..greedy.builder import GrownTree"))
    # the rules pass the package's own imports
    assert not private_imports(_snippet("dtlab.boosting.exact", "from ._exact_cpu import _level"))
    assert not foundation_reaching_up(_snippet("dtlab.trees.leaves", "from ._cpu import _apply_cpu"))


def test_estimators_never_reach_experiments_or_plots():
    """Importing a technique's public API (its package) pulls in no experiment, plot or registry."""
    graph = import_graph()
    for slug in TECHNIQUES:
        reached = closure(graph, f"dtlab.{slug}")
        bad = sorted(m for m in reached if _in(m, ["workbench"])
                     or m.rsplit(".", 1)[-1] in ("experiments", "plots", "throughput"))
        assert not bad, f"dtlab.{slug} reaches {bad}"


def test_plots_never_import_experiments():
    graph = import_graph()
    for module, targets in graph.items():
        if module.endswith(".plots") or _in(module, ["dtlab.plotting"]):
            # plots take data: never a producer, the registry or the timing helpers (the caption phrases are fine)
            bad = sorted(t for t in targets if t.endswith((".experiments", ".producers"))
                         or t in ("workbench.registry", "workbench.timing", "workbench.catalog")
                         or (_in(module, ["dtlab"]) and _in(t, LAB)))
            assert not bad, f"{module} imports {bad}"


def test_every_technique_has_its_slice():
    """Each technique: its package in the library, its producers and plots in the workbench, tests, a notebook."""
    for slug in TECHNIQUES:
        assert (PACKAGE / slug / "__init__.py").exists()
        for part in ("experiments", "plots"):
            assert (WORKBENCH / slug / f"{part}.py").exists(), f"workbench/{slug}/{part}.py"
        assert (ROOT / "tests" / slug).is_dir()
        assert list((ROOT / "notebooks").glob(f"[0-9][0-9]_{slug}_*.ipynb")), f"no notebook for {slug}"


def test_no_module_is_long():
    too_long = []
    for name, (path, _) in module_files().items():
        lines = path.read_text().count("\n")
        if lines > MAX_LINES:
            too_long.append(f"{name} ({lines} lines)")
    assert not too_long, f"over {MAX_LINES} lines (a second role: split by role): {too_long}"


def test_workers_are_counted_by_asking_the_scheduler():
    """``client.scheduler_info()["workers"]`` can read a live cluster as having no workers: the client's periodic
    update rewrites its cached identity without them, and can land between the refresh and the read (a CI run
    once failed on it). Workers are counted with ``alive_workers``, which asks the scheduler itself."""
    import json
    import re

    racy = re.compile(r"scheduler_info\(\)\s*\[\s*[\"']workers")
    # alive_workers itself falls back to it on a distributed too old to be asked; this file names it
    allowed = {"dtlab/distributed/dask_executor.py", "tests/test_architecture.py"}
    def source(path: Path) -> str:  # a notebook's code as written (its JSON escapes the quotes)
        if path.suffix == ".py":
            return path.read_text()
        return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])

    found = [str(path.relative_to(ROOT)) for folder in ("dtlab", "workbench", "tests", "notebooks", "scripts")
             for path in (ROOT / folder).rglob("*") if path.suffix in (".py", ".ipynb") and racy.search(source(path))]
    # equal, not a subset: the two known places prove the pattern still matches
    assert set(found) == allowed, f"count workers with dtlab.distributed.dask_executor.alive_workers: {found}"


def test_notebooks_are_numbered_without_gaps_and_indexed():
    import json
    import re

    names = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert names[0] == "00_tour.ipynb"
    numbers = sorted({int(n[:2]) for n in names})
    assert numbers == list(range(len(numbers))), names
    slugs = ("tour", *TECHNIQUES)
    pattern = re.compile(r"^\d\d_(%s)(_[a-z0-9_]+)?\.ipynb$" % "|".join(slugs))
    assert all(pattern.match(n) for n in names), names
    index = (ROOT / "notebooks" / "README.md").read_text()
    for name in names:
        assert f"({name})" in index, f"{name} is missing from notebooks/README.md"
        cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert "parameters" in code[0]["metadata"].get("tags", []), f"{name}: first code cell is not the parameters"
        assert all(not c["outputs"] and c["execution_count"] is None for c in code), f"{name} is stored with outputs"
        source = "".join("".join(c["source"]) for c in code)
        assert "NBVAL_CHECK_OUTPUT" not in source, f"{name}: an unexecuted output is never compared; use assert"
        assert "assert " in source, f"{name} checks none of its facts"
