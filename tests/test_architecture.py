"""The package's shape: no import cycles, imports pointing one way, modules of a readable length.

The import graph is read from the source with :mod:`ast`, counting imports
inside functions too (a lazy import still ties two modules together).  An
edge ``a -> b`` means module ``a`` names module ``b`` in an import statement;
importing ``dtlab.x.y`` also runs ``dtlab/x/__init__.py``, but that implicit
edge to the parent package is not counted (every submodule would otherwise
form a cycle with its package's ``__init__``).
"""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

from dtlab.experiments.catalog import TECHNIQUES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dtlab"

#: Modules that are not techniques; none of them may import a technique package.
FOUNDATION = ("dtlab.backend", "dtlab._validation", "dtlab._jit", "dtlab._cuda_blocks", "dtlab.datasets", "dtlab.trees",
              "dtlab.plotting", "dtlab.distributed")

#: Lines above which a module's docstring must say why it is long ("Long module: ...").
MAX_LINES = 450


def module_files() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (path, is_package)}`` of every module of dtlab."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def import_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` among dtlab's modules, function-level imports included."""
    modules = module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name if is_package else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                graph[name] |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        graph[name].add(sub)
                    elif target in modules:
                        graph[name].add(target)
    return graph


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


def test_foundation_never_imports_a_technique():
    graph = import_graph()
    techniques = [f"dtlab.{slug}" for slug in TECHNIQUES] + ["dtlab.experiments"]
    bad = {m: sorted(t for t in targets if _in(t, techniques))
           for m, targets in graph.items() if _in(m, FOUNDATION)}
    assert not {m: t for m, t in bad.items() if t}


def test_estimators_never_reach_experiments_or_plots():
    """Importing a technique's public API (its package) pulls in no experiment, plot or registry."""
    graph = import_graph()
    for slug in TECHNIQUES:
        reached = closure(graph, f"dtlab.{slug}")
        bad = sorted(m for m in reached if _in(m, ["dtlab.experiments"])
                     or m.rsplit(".", 1)[-1] in ("experiments", "plots", "throughput"))
        assert not bad, f"dtlab.{slug} reaches {bad}"


def test_plots_never_import_experiments():
    graph = import_graph()
    for module, targets in graph.items():
        if module.endswith(".plots") or _in(module, ["dtlab.plotting"]):
            bad = sorted(t for t in targets if t.endswith(".experiments") or _in(t, ["dtlab.experiments"]))
            assert not bad, f"{module} imports {bad}"


def test_every_technique_has_its_slice():
    for slug in TECHNIQUES:
        assert (PACKAGE / slug / "experiments.py").exists() and (PACKAGE / slug / "plots.py").exists()
        assert (ROOT / "tests" / slug).is_dir()
        assert list((ROOT / "notebooks").glob(f"[0-9][0-9]_{slug}_*.ipynb")), f"no notebook for {slug}"


def test_long_modules_say_why():
    too_long = []
    for name, (path, _) in module_files().items():
        lines = path.read_text().count("\n")
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > MAX_LINES and "Long module:" not in doc:
            too_long.append(f"{name} ({lines} lines)")
    assert not too_long, f"over {MAX_LINES} lines without 'Long module: <why>' in the docstring: {too_long}"


@pytest.mark.parametrize("old, new", [("dtlab.plotting_gdt", "dtlab.evolution.plots"),
                                      ("dtlab.plotting_greedy", "dtlab.greedy.plots"),
                                      ("dtlab.experiments.gdt", "dtlab.evolution.experiments"),
                                      ("dtlab.experiments.greedy", "dtlab.greedy.experiments")])
def test_old_import_paths_warn_and_reexport(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        shim = importlib.import_module(old)
    target = importlib.import_module(new)
    assert target.__all__ and all(getattr(shim, name) is getattr(target, name) for name in target.__all__)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module(new)  # the new path is silent


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
