"""The display conventions of notebooks/README.md that code can check.

Figures come from ``dtlab.plotting.new_figure`` / ``new_axes``: pyplot does not track them, so the
inline backend never draws a second copy and widget callbacks leave nothing open.
"""

import json
import re
from pathlib import Path

import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[2]
PYPLOT_FIGURE = re.compile(r"\bplt\.(subplots|figure|subplot|show|gcf|gca)\(|pyplot\.(subplots|figure|show)\(")


def test_no_pyplot_figures_in_the_package():
    offenders = [f"{path.relative_to(ROOT)}:{i}" for path in sorted((ROOT / "dtlab").rglob("*.py"))
                 for i, line in enumerate(path.read_text().splitlines(), 1) if PYPLOT_FIGURE.search(line)]
    assert not offenders, f"make figures with dtlab.plotting.new_figure / new_axes, not pyplot: {offenders}"


def test_notebooks_do_not_hide_a_figure_with_a_semicolon():
    """A trailing ';' hides the returned figure: with untracked figures nothing would show."""
    hidden = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            lines = "".join(cell["source"]).rstrip().splitlines()
            if cell["cell_type"] == "code" and lines and re.search(r"\b(plot_\w+|draw_tree)\(.*\);$", lines[-1]):
                hidden.append(f"{path.name} cell {i}")
    assert not hidden, f"figure cells ending with ';' show nothing: {hidden}"


def test_notebooks_show_mid_cell_figures_explicitly():
    """Only a cell's last expression is displayed: a plot call before it must be wrapped in ``W.show``."""
    import ast

    lost = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] != "code":
                continue
            body = ast.parse("".join(cell["source"])).body
            for statement in body[:-1]:
                call = statement.value if isinstance(statement, ast.Expr) else None
                name = getattr(getattr(call, "func", None), "attr", None) or getattr(getattr(call, "func", None),
                                                                                    "id", "")
                if isinstance(call, ast.Call) and (name.startswith("plot") or name == "draw_tree"):
                    lost.append(f"{path.name} cell {i}: {name}")
    assert not lost, f"figures made mid-cell and never shown (wrap them in W.show): {lost}"


def test_figures_show_as_png_without_pyplot():
    from dtlab.plotting import new_figure

    fig, ax = new_figure()
    ax.plot([0, 1], [1, 0])
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and not plt.get_fignums()
