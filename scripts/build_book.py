"""``make book``: the notebooks as a static HTML site for readers without Python.

Every ``notebooks/*.ipynb`` is executed headless (nbclient, widget state stored,
``NUMBA_ENABLE_CUDASIM=1`` unless the environment says otherwise, figures as PNG
through the inline backend) and converted with nbconvert's ``lab`` template
into ``book/<stem>.html`` (the executed notebook beside it as ``<stem>.ipynb``);
``book/index.html`` is the contents page, in the course order of
``notebooks/README.md``.

Widgets: the widget state is embedded, so where the page can load the widget
manager (``@jupyter-widgets/html-manager`` from a CDN) the panels show as
widgets at their state after the run.  Offline, or before it loads, each widget
shows a static rendering of that state in its place: the panel's figures and
tables (the contents of its ``Output`` areas), its HTML lines, and the values
of its controls.  So every figure is on the page without a network; none is
fetched at build time either.

The build fails (exit status 1, after writing every page it could) when a cell
raises.  It also lists outputs that are a plain ``dict`` / ``list`` repr
(:func:`plain_repr_outputs`, what the browser suite forbids) and, with
``--strict``, fails on them.

    python scripts/build_book.py [--out book] [--jobs N] [--strict] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import ast
import datetime
import html
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
README = NOTEBOOKS / "README.md"
CELL_TIMEOUT_S = 900
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: What nbconvert's HTML exporter shows of an output, best first (the image outputs are those it shows as <img>).
_RICHER_THAN_IMAGES = (WIDGET_VIEW, "application/javascript", "text/html", "text/markdown", "image/svg+xml",
                       "text/latex")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")

# --------------------------------------------------------------------------------------------------------------
# What the notebooks' outputs hold


def plain_repr(text: str) -> bool:
    """Whether a ``text/plain`` output is a bare ``dict`` or ``list`` repr (``{'a': 1}``, ``[0.5, 0.7]``,
    ``[<matplotlib.lines.Line2D at 0x...>]``), which a notebook should show as a table, a sentence or a figure."""
    text = text.strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):  # values without a literal repr: objects, "<... at 0x...>"
        return text.startswith(("{'", '{"', "[<", "[{", "['", '["'))
    return isinstance(node, (ast.Dict, ast.List))


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _outputs_of_widgets(nb) -> dict[str, list]:
    """``{model_id: outputs}`` of the notebook's ``Output`` widgets, from its stored widget state."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {k: v.get("state", {}).get("outputs", []) for k, v in state.items() if v.get("model_name") == "OutputModel"}


def _all_outputs(nb):
    """``(cell index, output, where)`` for every output: the cells' own, then those inside Output widgets."""
    for i, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            yield i, output, "cell"
    for model_id, outputs in _outputs_of_widgets(nb).items():
        for output in outputs:
            yield None, output, f"widget {model_id[:8]}"


def plain_repr_outputs(nb) -> list[str]:
    """Outputs of an executed notebook (cells and Output widgets) whose only representation is a plain
    ``dict`` / ``list`` repr: one line each, naming the cell (its index among all cells) or the widget."""
    found = []
    for i, output, where in _all_outputs(nb):
        data = output.get("data", {})
        if output.get("output_type") in ("execute_result", "display_data") and set(data) == {"text/plain"}:
            text = _text(data["text/plain"])
            if plain_repr(text):
                place = f"cell {i}" if i is not None else where
                found.append(f"{place}: {text.strip()[:120]!r}")
    return found


def _shown_as_image(output) -> bool:
    data = output.get("data", {})
    return (output.get("output_type") in ("execute_result", "display_data")
            and any(t in data for t in IMAGE_TYPES) and not any(t in data for t in _RICHER_THAN_IMAGES))


def image_outputs(nb) -> int:
    """How many images a book page shows offline: the cells' image outputs, and those of the widgets they
    display (in Output areas, nested widgets included), as the static rendering of widgets draws them."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return sum(_images_of_output(o, state, 0) for cell in nb["cells"] for o in cell.get("outputs", []))


def _images_of_output(output: dict, state: dict, depth: int) -> int:
    view = output.get("data", {}).get(WIDGET_VIEW)
    if view:
        return _images_of_widget(view["model_id"], state, depth + 1)
    return int(_shown_as_image(output))


def _images_of_widget(model_id: str, state: dict, depth: int) -> int:
    """Images in :func:`render_widget`'s rendering of ``model_id`` (the same walk)."""
    model = state.get(model_id)
    if model is None or depth > 20:
        return 0
    if model.get("model_name") in _CONTAINERS:
        return sum(_images_of_widget(c, state, depth + 1) for c in _children(model))
    if model.get("model_name") == "OutputModel":
        return sum(_images_of_output(o, state, depth) for o in model.get("state", {}).get("outputs", []))
    return 0


def _children(model: dict) -> list[str]:
    children = model.get("state", {}).get("children", [])
    return [c.removeprefix("IPY_MODEL_") for c in children if isinstance(c, str)]


def error_outputs(nb) -> list[str]:
    """``"cell i: Ename: value"`` for each error output of an executed notebook."""
    return [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, o, _ in _all_outputs(nb)
            if o.get("output_type") == "error"]


# --------------------------------------------------------------------------------------------------------------
# The static rendering of a widget (what a page shows without the widget manager)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CONTAINERS = {"VBoxModel": "column", "BoxModel": "column", "GridBoxModel": "row", "HBoxModel": "row",
               "AccordionModel": "column", "TabModel": "column", "StackModel": "column"}


def _control_value(state: dict) -> str | None:
    """A control's value as its readout shows it, or None (no value to show)."""
    labels = state.get("_options_labels")
    if labels is not None and "index" in state:
        index = state["index"]
        if isinstance(index, list):
            return ", ".join(labels[i] for i in index)
        return labels[index] if isinstance(index, int) and 0 <= index < len(labels) else None
    value = state.get("value")
    if value is None or isinstance(value, dict):
        return None
    if isinstance(value, list):
        return " to ".join(str(v) for v in value)
    if isinstance(value, float):
        try:
            return format(value, state.get("readout_format") or "g")
        except ValueError:
            return f"{value:g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _render_output(output: dict, state: dict, depth: int) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        colour = " style='color:#b00'" if output.get("name") == "stderr" else ""
        return f"<pre{colour}>{html.escape(_ANSI.sub('', _text(output.get('text', ''))))}</pre>"
    if kind == "error":
        lines = _ANSI.sub("", "\n".join(output.get("traceback", [])))
        return f"<pre class='dtlab-error' style='color:#b00'>{html.escape(lines)}</pre>"
    data = output.get("data", {})
    if WIDGET_VIEW in data:
        return render_widget(data[WIDGET_VIEW]["model_id"], state, depth + 1)
    if "text/html" in data:
        return _text(data["text/html"])
    for mime in IMAGE_TYPES:
        if mime in data:
            return f"<img src='data:{mime};base64,{_text(data[mime]).strip()}' alt='figure'>"
    if "image/svg+xml" in data:
        return _text(data["image/svg+xml"])
    for mime in ("text/markdown", "text/latex", "text/plain"):
        if mime in data:
            return f"<pre>{html.escape(_text(data[mime]))}</pre>"
    return ""


def render_widget(model_id: str, state: dict, depth: int = 0) -> str:
    """HTML for widget ``model_id`` at its stored state: Output areas' contents, HTML and labels, the values of
    controls (``rows: 10,000``), boxes as rows and columns; buttons and progress bars leave nothing."""
    model = state.get(model_id)
    if model is None or depth > 20:
        return ""
    name, values = model.get("model_name", ""), model.get("state", {})
    if name in _CONTAINERS:
        inner = "".join(render_widget(c, state, depth + 1) for c in _children(model))
        return (f"<div style='display:flex;flex-direction:{_CONTAINERS[name]};gap:4px 16px;"
                f"flex-wrap:wrap;align-items:flex-start'>{inner}</div>")
    if name == "OutputModel":
        return "".join(f"<div class='dtlab-static-output'>{_render_output(o, state, depth)}</div>"
                       for o in values.get("outputs", []))
    if name in ("HTMLModel", "HTMLMathModel"):
        return f"<div>{values.get('value', '')}</div>"
    if name == "LabelModel":
        return f"<div>{html.escape(str(values.get('value', '')))}</div>"
    if name.endswith(("ProgressModel", "ButtonModel")) or name in ("ButtonModel", "FileUploadModel"):
        return ""
    value = _control_value(values)
    if value is None:
        return ""
    description = values.get("description", "")
    label = f"{html.escape(description)}: " if description else ""
    return f"<div class='dtlab-static-control'>{label}<b>{html.escape(value)}</b></div>"


def add_static_widgets(nb) -> None:
    """Put the static rendering of each displayed widget into its output's metadata (the template shows it)."""
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view:
                output.setdefault("metadata", {})["dtlab_static_html"] = render_widget(view["model_id"], state)


# --------------------------------------------------------------------------------------------------------------
# Pages

TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{% block extra_css %}
<style type="text/css">
.dtlab-book-nav { font-family: var(--jp-ui-font-family, sans-serif); font-size: 14px; padding: 8px 0 12px;
  display: flex; gap: 24px; border-bottom: 1px solid #ddd; margin-bottom: 12px; }
.dtlab-book-nav a { text-decoration: none; }
.dtlab-built { color: #666; font-size: 12px; }
.dtlab-widget-static { padding: 4px 0; }
.dtlab-widget-static img { max-width: 100%; }
.dtlab-static-control { font-family: var(--jp-ui-font-family, sans-serif); font-size: 13px; color: #333; }
/* once the widget manager has drawn the widget (online), its static rendering goes */
.jupyter-widgets:has(.widget-subarea) > .dtlab-widget-static { display: none; }
</style>
{% endblock extra_css %}
{%- block body_header -%}
{{ super() }}
{{ resources.dtlab_nav }}
{%- endblock body_header -%}
{% block body_footer %}
{{ resources.dtlab_nav }}
{{ super() }}
{% endblock body_footer %}
{%- block data_widget_view scoped %}
{% set div_id = uuid4() %}
<div id="{{ div_id }}" class="jupyter-widgets jp-OutputArea-output {{ extra_class }}">
<script type="text/javascript">
var element = document.getElementById('{{ div_id }}');
</script>
<script type="application/vnd.jupyter.widget-view+json">
{{ output.data['application/vnd.jupyter.widget-view+json'] | json_dumps | escape_html_script }}
</script>
<div class="dtlab-widget-static">{{ output.metadata.get('dtlab_static_html', '') }}</div>
</div>
{%- endblock data_widget_view -%}
{% block error -%}
<div class="jp-RenderedText jp-OutputArea-output dtlab-error" data-mime-type="application/vnd.jupyter.stderr"
     data-output-type="error">
<pre>
{{- super() -}}
</pre>
</div>
{%- endblock error %}
"""


def _exporter():
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", template_file="dtlab_book.html.j2", embed_images=True,
                        extra_loaders=[DictLoader({"dtlab_book.html.j2": TEMPLATE})])


def title_of(nb, fallback: str) -> str:
    """The notebook's first ``# `` heading."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in _text(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def _first_clause(text: str) -> str:
    """Up to the first ':' / ';' / '. ' outside parentheses."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and (ch in ":;" or (ch == "." and text[i + 1:i + 2] in (" ", ""))):
            return text[:i].strip()
    return text.strip()


def course(names: list[str], readme: str) -> list[tuple[str, str]]:
    """``(file name, one-line summary)`` in the course order: the order in which ``notebooks/README.md`` first
    names each notebook (notebooks it never names follow in file order); the summary is the first clause of the
    README's "what it teaches" cell for the notebook, or empty."""
    stems = {Path(n).stem: n for n in names}
    order: list[str] = []
    for match in re.finditer(r"\d\d_[A-Za-z0-9_]+", readme):
        name = stems.get(match.group(0))
        if name and name not in order:
            order.append(name)
    order += [n for n in sorted(names) if n not in order]
    summaries = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3:
            found = re.search(r"\d\d_[A-Za-z0-9_]+\.ipynb", cells[0])
            if found and found.group(0) in names:
                summaries[found.group(0)] = _first_clause(cells[-1])
    return [(n, summaries.get(n, "")) for n in order]


def _nav(order: list[str], name: str, titles: dict[str, str]) -> str:
    i = order.index(name)
    parts = ["<a href='index.html'>Contents</a>"]
    if i > 0:
        parts.append(f"<a href='{Path(order[i - 1]).stem}.html'>&larr; {html.escape(titles[order[i - 1]])}</a>")
    if i + 1 < len(order):
        parts.append(f"<a href='{Path(order[i + 1]).stem}.html'>{html.escape(titles[order[i + 1]])} &rarr;</a>")
    parts.append(f"<a href='{Path(name).stem}.ipynb' download>the notebook with its outputs</a>")
    return f"<nav class='dtlab-book-nav'>{''.join(parts)}</nav>"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def index_html(entries: list[dict], built: str) -> str:
    items = "\n".join(
        f"<li><a href='{Path(e['name']).stem}.html'>{html.escape(e['title'])}</a>"
        + (f"<div class='summary'>{html.escape(e['summary'])}</div>" if e["summary"] else "")
        + (" <span class='failed'>(a cell failed when the book was built)</span>" if e["errors"] else "")
        + "</li>" for e in entries)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>dtlab: decision-tree learning on CPUs and GPUs, the notebooks</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 52em; margin: 2em auto; padding: 0 1em; line-height: 1.5;
  color: #222; }}
ol li {{ margin: 0.7em 0; }}
.summary {{ color: #444; }}
.failed {{ color: #b00; }}
.built {{ color: #666; font-size: 0.9em; }}
</style>
</head>
<body>
<h1>dtlab: decision-tree learning on CPUs and GPUs</h1>
<p>The notebooks of dtlab as a course, in the order to read them. Each page is a notebook as it ran when this book
was built, with its code, outputs and figures. The sliders and buttons show their state after that run: to move
them, run the notebook in JupyterLab (<code>make lab</code>).</p>
<ol>
{items}
</ol>
<p class="built">{html.escape(built)}</p>
</body>
</html>
"""


# --------------------------------------------------------------------------------------------------------------
# Execution


def kernel_environment() -> None:
    """The environment the notebooks' kernels inherit (set in this process, which starts them)."""
    os.environ.pop("MPLBACKEND", None)  # Agg (as make test sets it) would show every figure as text
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")  # without a GPU, the CUDA paths under numba's simulator
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


#: How long one wait for a kernel message lasts before pyzmq is asked again (see :func:`_poll_in_steps`).
POLL_STEP_S = 1.0


def _poll_in_steps(channel, step_s: float = POLL_STEP_S) -> None:
    """Make ``channel.get_msg(timeout)`` wait in steps of ``step_s``, asking the socket again after each.

    Seen here (nbclient 0.11, jupyter_client 8.10, pyzmq 27, ipykernel 7.4): a kernel's reply sits on the
    socket while the asyncio poll for it does not wake, until its timeout, when pyzmq polls once more and
    finds it; with nbclient's cell timeout (minutes) as the poll's timeout, a notebook of 10 s took 909 s
    (00_tour: the kernel idle for 15 minutes between two cells, no error). Short polls bound such a stall
    to ``step_s``; the overall timeout stays what the caller asked for.
    """
    from queue import Empty

    original = channel.get_msg

    async def get_msg(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = step_s if deadline is None else max(0.0, min(step_s, deadline - time.monotonic()))
            try:
                return await original(timeout=step)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


def _client_class():
    from nbclient import NotebookClient

    class Client(NotebookClient):
        """nbclient's, with the shell and IOPub channels polled in steps (:func:`_poll_in_steps`)."""

        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            _poll_in_steps(kc.shell_channel)
            _poll_in_steps(kc.iopub_channel)
            return kc

    return Client


def execute(path: Path, timeout_s: int = CELL_TIMEOUT_S) -> tuple[dict, str | None, float]:
    """``(executed notebook, error or None, seconds)``; the notebook keeps the outputs up to a failing cell."""
    import nbformat
    from nbclient.exceptions import CellExecutionError

    kernel_environment()
    nb = nbformat.read(path, as_version=4)
    client = _client_class()(nb, timeout=timeout_s, kernel_name="python3", store_widget_state=True,
                             resources={"metadata": {"path": str(path.parent)}})
    start, error = time.perf_counter(), None
    try:
        client.execute()
    except CellExecutionError as exc:
        error = _ANSI.sub("", str(exc)).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
    except Exception as exc:  # a kernel that died, a timeout
        error = f"{type(exc).__name__}: {exc}"
    return nb, error, time.perf_counter() - start


def _execute_to_file(args: tuple[str, str, int]) -> tuple[str | None, float]:
    """In a worker process: execute and write the executed notebook (pickling it back is slower than the file)."""
    import nbformat

    source, target, timeout_s = args
    nb, error, seconds = execute(Path(source), timeout_s)
    nbformat.write(nb, target)
    return error, seconds


def build(out: Path, names: list[str] | None = None, jobs: int = 1, timeout_s: int = CELL_TIMEOUT_S,
          log=print) -> dict:
    """Execute and convert the notebooks into ``out``; returns ``{name: {...}}`` (also ``out/book.json``)."""
    import nbformat

    everything = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    names = everything if not names else [Path(n).name for n in names]
    unknown = [n for n in names if n not in everything]
    if unknown:
        raise SystemExit(f"no such notebooks in {NOTEBOOKS}: {unknown}")
    out.mkdir(parents=True, exist_ok=True)
    order = [n for n, _ in course(names, README.read_text() if README.exists() else "")]
    summaries = dict(course(names, README.read_text() if README.exists() else ""))

    jobs_args = [(str(NOTEBOOKS / n), str(out / f"{Path(n).stem}.ipynb"), timeout_s) for n in order]
    results: dict[str, tuple[str | None, float]] = {}
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for name, result in zip(order, pool.map(_execute_to_file, jobs_args)):
                results[name] = result
                log(f"executed {name} in {result[1]:.1f} s" + (f": FAILED, {result[0]}" if result[0] else ""))
    else:
        for name, job in zip(order, jobs_args):
            results[name] = _execute_to_file(job)
            log(f"executed {name} in {results[name][1]:.1f} s"
                + (f": FAILED, {results[name][0]}" if results[name][0] else ""))

    executed = {n: nbformat.read(out / f"{Path(n).stem}.ipynb", as_version=4) for n in order}
    titles = {n: title_of(executed[n], Path(n).stem) for n in order}
    exporter = _exporter()
    report = {}
    for name in order:
        nb = executed[name]
        errors = error_outputs(nb) or ([results[name][0]] if results[name][0] else [])
        report[name] = {"title": titles[name], "summary": summaries.get(name, ""),
                        "seconds": round(results[name][1], 1), "errors": errors,
                        "plain_reprs": plain_repr_outputs(nb), "images": image_outputs(nb)}
        add_static_widgets(nb)
        body, _ = exporter.from_notebook_node(
            nb, resources={"metadata": {"name": titles[name], "path": str(NOTEBOOKS)},
                           "dtlab_nav": _nav(order, name, titles)})
        (out / f"{Path(name).stem}.html").write_text(body, encoding="utf-8")
    built = f"Built {datetime.datetime.now().isoformat(timespec='minutes')}" + (
        f" from commit {_commit()}" if _commit() else "") + "."
    entries = [{"name": n, **report[n]} for n in order]
    (out / "index.html").write_text(index_html(entries, built), encoding="utf-8")
    (out / "book.json").write_text(json.dumps({"order": order, "notebooks": report}, indent=1) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="file names in notebooks/ (default: every notebook)")
    parser.add_argument("--out", type=Path, default=ROOT / "book", help="the site's folder (default: book/)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed side by side (default 1)")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S, help="seconds a cell may take")
    parser.add_argument("--strict", action="store_true", help="also fail on outputs that are a dict / list repr")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    report = build(args.out, args.notebooks, args.jobs, args.timeout)
    failed = {n: r["errors"] for n, r in report.items() if r["errors"]}
    reprs = {n: r["plain_reprs"] for n, r in report.items() if r["plain_reprs"]}
    for name, found in reprs.items():
        print(f"{name}: outputs that are a plain dict / list repr: {found}", file=sys.stderr)
    print(f"book: {len(report)} notebooks into {args.out / 'index.html'} in {time.perf_counter() - start:.0f} s")
    if failed:
        print(f"book: cells failed in {failed}", file=sys.stderr)
    return 1 if failed or (args.strict and reprs) else 0


if __name__ == "__main__":
    sys.exit(main())
