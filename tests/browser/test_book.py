"""``make book``: the notebooks as a static site, checked in Chromium.

The book is built by ``scripts/build_book.py`` into a temporary folder, from
``notebooks/`` as stored (without outputs), in a process of its own (it takes
minutes: every notebook runs); ``DTLAB_BOOK_DIR=book`` checks an existing build
instead (``make book`` builds ``book/`` and then runs this file on it).  The
site is served by ``http.server`` on loopback and every request elsewhere (the
CDN the pages name for require.js, MathJax and the widget manager) is refused,
so the pages are checked as a reader offline sees them: every page loads (HTTP
200, no error from the page's own scripts), every image is drawn, a page shows
as many images as its executed notebook has image outputs (those of its
widgets' output areas included: the static rendering of the widgets), and no
output holds an error.  The executed notebooks are also checked headless for
outputs that are a plain ``dict`` / ``list`` repr.

The helpers of the build are unit-tested here too (no browser, no build).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, missing_browser, script

build_book = script("build_book")

NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
BUILD_LIMIT_S = 1800  # every notebook headless, one after the other, on a loaded 2-core machine
# the first test to use the book builds it: more than make test's --timeout=900 a test allows
book_timeout = pytest.mark.timeout(BUILD_LIMIT_S + 300)


def _needed(session) -> list[str]:
    """The notebooks the selected tests of this file look at: all, when the contents page is checked; otherwise
    those of the selected page tests (``-k 05_boosting`` builds one notebook, not the book)."""
    mine = [item for item in session.items if item.path == Path(__file__)]
    if any(item.originalname == "test_book_contents_page_links_every_notebook_in_the_course_order" for item in mine):
        return []
    return sorted({item.callspec.params["name"] for item in mine if hasattr(item, "callspec")
                   and "name" in item.callspec.params})


@pytest.fixture(scope="module")
def book(request, tmp_path_factory) -> Path:
    """The built book's folder: ``$DTLAB_BOOK_DIR``, or a fresh build from ``notebooks/``."""
    if os.environ.get("DTLAB_BOOK_DIR"):
        out = Path(os.environ["DTLAB_BOOK_DIR"])
        if not (out / "book.json").exists():
            pytest.fail(f"DTLAB_BOOK_DIR={out} holds no built book (run python scripts/build_book.py --out {out})")
        return out
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("book")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_book.py"), "--out", str(out),
                           *_needed(request.session)], cwd=ROOT, capture_output=True, text=True,
                          timeout=BUILD_LIMIT_S)
    if done.returncode != 0:
        pytest.fail(f"make book's build failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return out


@pytest.fixture(scope="module")
def served(book):
    """``http://127.0.0.1:<port>`` serving the book's folder."""
    handler = functools.partial(_QuietHandler, directory=str(book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test's output stays readable
        pass


def _report(book: Path) -> dict:
    return json.loads((book / "book.json").read_text())


def _open(chromium, base: str, path: str):
    """A page at ``base/path`` with requests off loopback refused; returns (page, HTTP status, own errors)."""
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))

    def console(message) -> None:  # a refused CDN script logs "Failed to load resource" with its own URL
        if message.type == "error" and (message.location or {}).get("url", "").startswith(base):
            errors.append(f"console: {message.text}")

    page.on("console", console)
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base) else route.abort())
    response = page.goto(f"{base}/{path}", wait_until="load")
    return page, response.status if response else None, errors


@pytest.mark.browser
@book_timeout
def test_book_contents_page_links_every_notebook_in_the_course_order(book, served, chromium):
    page, status, errors = _open(chromium, served, "index.html")
    try:
        assert status == 200
        links = page.evaluate("() => Array.from(document.querySelectorAll('ol a')).map(a => a.getAttribute('href'))")
        order = _report(book)["order"]
        assert links == [f"{Path(n).stem}.html" for n in order]
        if not os.environ.get("DTLAB_BOOK_DIR"):
            assert sorted(order) == NOTEBOOKS, "the book lacks a notebook"
        readme = (ROOT / "notebooks" / "README.md").read_text()
        assert order == [n for n, _ in build_book.course(order, readme)]
        for response in [page.request.get(f"{served}/{link}") for link in links]:
            assert response.status == 200, f"{response.url}: HTTP {response.status}"
        assert not errors, f"index.html: {errors}"
    finally:
        page.close()


def _page_names() -> list[str]:
    if os.environ.get("DTLAB_BOOK_DIR"):
        report = Path(os.environ["DTLAB_BOOK_DIR"]) / "book.json"
        if report.exists():
            return json.loads(report.read_text())["order"]
    return NOTEBOOKS


@pytest.mark.browser
@book_timeout
@pytest.mark.parametrize("name", _page_names())
def test_book_page_shows_every_figure_and_no_error(name, book, served, chromium):
    import nbformat

    executed = nbformat.read(book / f"{Path(name).stem}.ipynb", as_version=4)
    page, status, errors = _open(chromium, served, f"{Path(name).stem}.html")
    try:
        assert status == 200, f"{name}: HTTP {status}"
        page.wait_for_function("() => Array.from(document.images).every(i => i.complete)", timeout=30_000)
        images = page.evaluate("""() => Array.from(document.images).map(i => ({
            width: i.naturalWidth, output: !!i.closest('.jp-OutputArea')}))""")
        blank = [i for i, im in enumerate(images) if im["width"] == 0]
        assert not blank, f"{name}: images {blank} of {len(images)} are not drawn"
        shown = sum(im["output"] for im in images)
        expected = build_book.image_outputs(executed)
        in_cells = sum(build_book._shown_as_image(o) for c in executed.cells for o in c.get("outputs", []))
        assert shown == expected >= in_cells, (f"{name}: the page shows {shown} images in outputs, the executed "
                                               f"notebook has {expected} image outputs ({in_cells} in cells)")
        # nbconvert shows an error output, like stderr, as a jp-RenderedText of mime type vnd.jupyter.stderr;
        # the book's template marks error outputs (data-output-type="error") and static widgets' (.dtlab-error)
        failed = page.evaluate("""() => {
            const stderr = Array.from(document.querySelectorAll(
                '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]'))
              .map(e => e.innerText).filter(t => t.includes('Traceback'));
            const marked = Array.from(document.querySelectorAll('[data-output-type="error"], .dtlab-error'))
              .map(e => e.innerText);
            return stderr.concat(marked);
        }""")
        assert not failed, f"{name}: outputs with an error: {[t[:300] for t in failed]}"
        text = page.evaluate("() => Array.from(document.querySelectorAll('.jp-OutputArea')).map(e => e.innerText)"
                             ".join('\\n')")
        assert "Traceback (most recent call last)" not in text, f"{name}: an output shows a traceback"
        assert not errors, f"{name}: errors of the page's own scripts: {errors}"
        assert not build_book.error_outputs(executed), f"{name}: {build_book.error_outputs(executed)}"
        title = page.title()
        assert title == _report(book)["notebooks"][name]["title"]
    finally:
        page.close()


@pytest.mark.browser
@book_timeout
@pytest.mark.parametrize("name", _page_names())
def test_book_notebook_outputs_are_no_plain_dict_or_list(name, book):
    """Headless (the book's run of each notebook): no output is a bare dict / list repr; show a table
    (``pandas.DataFrame``), a sentence or a figure instead."""
    found = _report(book)["notebooks"][name]["plain_reprs"]
    assert not found, f"{name}: outputs that are a plain dict / list repr: {found}"


# ----------------------------------------------------------------------------------------------------------------
# The build's helpers, without a browser or a build


def test_plain_repr_tells_dicts_and_lists_from_other_text():
    plain = build_book.plain_repr
    assert plain("{'rows': 5000, 'cpu': True}") and plain('{"a": 1}') and plain("[0.5, 0.75]") and plain("['cpu']")
    assert plain("{'seconds': np.float64(0.5)}")  # parses: a dict of calls
    assert plain("[<matplotlib.lines.Line2D at 0x7f>]") and plain("{'model': <Forest at 0x7f>}")
    assert not plain("FlatTree(n_nodes=19)") and not plain("array([1, 2])") and not plain("0.93")
    assert not plain("   rows  seconds\n0  1000  0.1") and not plain("[1] the first note") and not plain("{x}")
    assert not plain("(0.5, 0.7)")  # a tuple: not what the check is about


def test_plain_repr_outputs_names_cells_and_widgets():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("d", outputs=[
        nbformat.v4.new_output("execute_result", data={"text/plain": "{'a': 1}"}, execution_count=1)]),
        nbformat.v4.new_code_cell("df", outputs=[nbformat.v4.new_output(
            "execute_result", data={"text/plain": "{'a': 1}", "text/html": "<table></table>"}, execution_count=2)]),
        nbformat.v4.new_code_cell("print", outputs=[nbformat.v4.new_output("stream", text="[1, 2]\n")])]
    nb.metadata["widgets"] = {build_book.WIDGET_STATE: {"state": {"abcdef123456": {
        "model_name": "OutputModel", "state": {"outputs": [
            {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "[1, 2]"}}]}}}}}
    found = build_book.plain_repr_outputs(nb)
    assert len(found) == 2 and found[0].startswith("cell 0: ") and found[1].startswith("widget abcdef12: ")


def test_static_rendering_of_a_panel_shows_its_controls_and_its_figure():
    png = "iVBORw0KGgo="
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_row", "IPY_MODEL_out"]}},
        "row": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_rows", "IPY_MODEL_noise",
                                                                  "IPY_MODEL_go", "IPY_MODEL_x"]}},
        "rows": {"model_name": "SelectionSliderModel", "state": {"description": "rows", "index": 1,
                                                                 "_options_labels": ["1,000", "2,000"]}},
        "noise": {"model_name": "IntSliderModel", "state": {"description": "noise attrs", "value": 3}},
        "go": {"model_name": "ButtonModel", "state": {"description": "Run"}},
        "out": {"model_name": "OutputModel", "state": {"outputs": [
            {"output_type": "display_data", "data": {"image/png": png, "text/plain": "<Figure>"}},
            {"output_type": "display_data", "data": {"text/html": '<div class="dtlab-curves"></div>'}},
            {"output_type": "stream", "name": "stdout", "text": "a < b\n"}]}},
    }
    rendered = build_book.render_widget("box", state)
    assert "rows: <b>2,000</b>" in rendered and "noise attrs: <b>3</b>" in rendered and "Run" not in rendered
    assert f"data:image/png;base64,{png}" in rendered and 'class="dtlab-curves"' in rendered
    assert "a &lt; b" in rendered and build_book.render_widget("missing", state) == ""

    import nbformat

    nb = nbformat.v4.new_notebook()
    view = {build_book.WIDGET_VIEW: {"model_id": "box", "version_major": 2}, "text/plain": "VBox()"}
    nb.cells = [nbformat.v4.new_code_cell("W.panel(...)", outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
        nbformat.v4.new_output("display_data", data=view)])]
    nb.metadata["widgets"] = {build_book.WIDGET_STATE: {"state": state}}
    assert build_book.image_outputs(nb) == 2 == rendered.count("<img") + 1


def test_course_order_follows_the_readme():
    names = ["00_a.ipynb", "01_b.ipynb", "02_c.ipynb"]
    readme = ("Start with `01_b`, then 00_a.\n\n| notebook | slug | what it teaches |\n|---|---|---|\n"
              "| [`00_a.ipynb`](00_a.ipynb) | `a` | Trees (the first kind): grown greedily. |\n"
              "| [`01_b.ipynb`](01_b.ipynb) | `b` | Forests; many trees |\n")
    assert build_book.course(names, readme) == [("01_b.ipynb", "Forests"), ("00_a.ipynb", "Trees (the first kind)"),
                                                ("02_c.ipynb", "")]
