"""Reusable ipywidgets controls and panels for the notebooks.

Each builder returns a widget with the value a dtlab function expects
(e.g. an int number of rows), so notebook cells stay one line.  Builders run
headless (no display needed) and are unit-tested that way.

Display conventions (``notebooks/README.md``, "Conventions"):

* plot functions return a figure pyplot does not track (:func:`dtlab.plotting.new_figure`);
  a cell shows it once by ending with it, or :func:`show` shows it mid-cell;
* :func:`panel`: controls redraw a fast (< ~1 s) figure in place, in one ``Output`` area;
* :func:`run_panel`: controls only set parameters, a Run button starts the long computation,
  whose progress (tqdm bars, a :func:`live_figure`) appears in the panel's own area;
* nothing a callback prints, shows or raises goes to JupyterLab's log console: it lands in the
  panel's area (an error as its traceback).
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable

from dtlab.backend import cuda_status


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - ipywidgets is a core dependency
        raise ImportError("workbench.widgets needs ipywidgets: pip install ipywidgets") from exc
    return ipywidgets


def dataset_size_slider(value: int = 10_000, min_exp: int = 3, max_exp: int = 7, description: str = "rows"):
    """Log-scale slider for a number of rows, ``10**min_exp .. 10**max_exp``; ``.value`` is an int."""
    w = _ipywidgets()
    if not min_exp <= max_exp:
        raise ValueError(f"min_exp ({min_exp}) must be <= max_exp ({max_exp})")
    if not 10 ** min_exp <= value <= 10 ** max_exp:
        raise ValueError(f"value {value} is outside [10**{min_exp}, 10**{max_exp}]")
    # IntSlider over the exponent would lose values like 20,000; SelectionSlider keeps a 1-2-5 ladder.
    ladder = {m * 10 ** e for e in range(min_exp, max_exp + 1) for m in (1, 2, 5) if m * 10 ** e <= 10 ** max_exp}
    options = sorted(ladder | {value})
    return w.SelectionSlider(options=[(f"{o:,}", o) for o in options], value=value, description=description,
                             continuous_update=False)


def noise_attrs_slider(value: int = 0, max_value: int = 50, description: str = "noise attrs"):
    """Slider for the number of random (noise) attributes added to a dataset."""
    w = _ipywidgets()
    if not 0 <= value <= max_value:
        raise ValueError(f"value {value} is outside [0, {max_value}]")
    return w.IntSlider(value=value, min=0, max=max_value, description=description, continuous_update=False)


def density_slider(value: float = 1e-3, min_exp: int = -5, max_exp: int = -1, description: str = "density"):
    """Log-scale slider for the density of a sparse matrix (share of non-zeros), ``10**min_exp .. 10**max_exp``."""
    w = _ipywidgets()
    if not min_exp <= max_exp:
        raise ValueError(f"min_exp ({min_exp}) must be <= max_exp ({max_exp})")
    if not 10.0 ** min_exp <= value <= 10.0 ** max_exp:
        raise ValueError(f"value {value} is outside [10**{min_exp}, 10**{max_exp}]")
    return w.FloatLogSlider(value=value, base=10, min=min_exp, max=max_exp, step=0.25, description=description,
                            readout_format=".1e", continuous_update=False)


def device_count_slider(value: int = 1, max_value: int | None = None, description: str = "devices"):
    """Slider for the number of devices (GPUs, or CPU workers standing in for them)."""
    w = _ipywidgets()
    if max_value is None:
        from dtlab.backend import resolve_backend

        max_value = max(len(resolve_backend("auto").devices()), 1)
    if not 1 <= value <= max_value:
        raise ValueError(f"value {value} is outside [1, {max_value}]")
    return w.IntSlider(value=value, min=1, max=max_value, description=description, continuous_update=False)


def backend_selector(value: str = "auto", description: str = "backend"):
    """Toggle between ``auto``, ``cpu`` and ``cuda``; ``cuda`` is disabled (with the reason) where unavailable."""
    w = _ipywidgets()
    available, reason = cuda_status()
    options = ["auto", "cpu", "cuda"] if available else ["auto", "cpu"]
    if value not in options:
        raise ValueError(f"backend {value!r} is not available here ({reason or 'unknown name'}); "
                         f"choose one of {options}")
    return w.ToggleButtons(options=options, value=value, description=description,
                           tooltips=["pick the fastest available", "numba on the CPU",
                                     "numba.cuda + cupy on the GPU"][: len(options)])


def curve_digest(fig: Any) -> tuple[str, int]:
    """``(sha1 hex, number of curves)`` of the data a matplotlib figure plots.

    The digest covers every ``Line2D``'s x-y data and every ``PathCollection``'s
    (scatter) offsets, axes by axes in the figure's order; the curves are those
    lines and scatter collections.  The same data give the same digest whatever
    the styling; one point moved gives another.  A figure with no curves (bars,
    images, text only) gives ``0`` curves.
    """
    import hashlib

    import numpy as np
    from matplotlib.collections import PathCollection

    sha, curves = hashlib.sha1(), 0
    for i, ax in enumerate(fig.axes):
        sha.update(f"axes {i}\n".encode())
        for line in ax.lines:
            xy = np.ma.filled(np.ma.asarray(line.get_xydata(), dtype=np.float64), np.nan)
            sha.update(f"line {xy.shape}\n".encode())
            sha.update(np.ascontiguousarray(xy).tobytes())
            curves += 1
        for collection in ax.collections:
            if isinstance(collection, PathCollection):
                xy = np.ma.filled(np.ma.asarray(collection.get_offsets(), dtype=np.float64), np.nan)
                sha.update(f"points {xy.shape}\n".encode())
                sha.update(np.ascontiguousarray(xy).tobytes())
                curves += 1
    return sha.hexdigest(), curves


#: The element :func:`show` puts after a figure: invisible, read by the browser suite (``tests/browser``).
CURVES_HTML = '<div class="dtlab-curves" data-digest="{digest}" data-curves="{curves}" style="display:none"></div>'


def curves_html(fig: Any) -> str:
    """The invisible ``<div class="dtlab-curves" ...>`` with :func:`curve_digest` of ``fig``."""
    digest, curves = curve_digest(fig)
    return CURVES_HTML.format(digest=digest, curves=curves)


def _is_figure(obj: Any) -> bool:
    import sys

    if "matplotlib.figure" not in sys.modules:  # no figure can exist: don't import matplotlib for a table
        return False
    from matplotlib.figure import Figure

    return isinstance(obj, Figure)


def show(*objs: Any) -> None:
    """Display figures, widgets or tables now (mid-cell): ``IPython.display.display`` under a short name.

    After each matplotlib figure it also displays, invisibly, the figure's curve
    data digest (:func:`curves_html`), so that a browser test can tell that a
    slider changed the data plotted, not only the pixels.  Headless (no IPython
    shell), it does nothing, so package code may call it.
    """
    try:
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.display import HTML, display
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return
    if not InteractiveShell.initialized():
        return
    for obj in objs:
        display(obj)
        if _is_figure(obj):
            display(HTML(curves_html(obj)))


def _show_error(exc: BaseException) -> None:
    """The traceback of a failed callback, in the current output area (not the log console)."""
    show(_ipywidgets().HTML(
        "<pre style='color:#b00;white-space:pre-wrap'>" + _html_escape("".join(
            traceback.format_exception(type(exc), exc, exc.__traceback__))) + "</pre>"))


def _html_escape(text: str) -> str:
    import html

    return html.escape(text)


def live_figure(draw: Callable[[Any, Any], Any], figsize: tuple[float, float] = (7.0, 4.2),
                min_interval_s: float = 0.5):
    """An output area whose figure ``update(data)`` redraws in place while a long computation runs.

    Parameters
    ----------
    draw : callable
        ``draw(data, ax)`` draws ``data`` on a fresh matplotlib axes.
    figsize : (width, height) in inches
    min_interval_s : float
        Redraws closer together than this are skipped (``update(data, force=True)`` always draws).

    Returns
    -------
    area : ipywidgets.Output
        Display it once (e.g. as a cell's last value, or :func:`show` it before the
        computation starts); it keeps the latest figure, also after an interrupt.
    update : callable
        ``update(data, force=False)``, e.g. a computation's progress callback.
    """
    from dtlab.plotting import new_figure

    w = _ipywidgets()
    area = w.Output()
    last = [-float("inf")]

    def update(data: Any, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - last[0] < min_interval_s:
            return
        last[0] = now
        fig, ax = new_figure(figsize=figsize)
        draw(data, ax)
        with area:
            area.clear_output(wait=True)  # wait: the old figure stays until the new one arrives (no flicker)
            show(fig)

    return area, update


class working:
    """``with W.working("GDT on 3 datasets"):`` shows a line that counts the seconds while the block runs.

    For a call that reports no progress of its own (a loop should use ``tqdm.auto``, an
    iterative method :func:`live_figure`): the line is shown at once, ticks every second
    from a background thread, and ends as "done in 12.3 s", "interrupted after 4.0 s"
    or "failed after ...".  The elapsed time stays in the output, so a reader sees what took how long.
    """

    def __init__(self, what: str, tick_s: float = 1.0):
        self.what, self.tick_s = what, tick_s
        self.seconds = 0.0

    def _line(self, state: str, colour: str = "#555") -> str:
        return f"<span style='color:{colour}'>{_html_escape(self.what)}: {state}</span>"

    def __enter__(self) -> "working":
        import threading

        self._start = time.perf_counter()
        self._label = _ipywidgets().HTML(self._line("running ..."))
        self._stop = threading.Event()
        show(self._label)

        def tick() -> None:
            while not self._stop.wait(self.tick_s):
                self._label.value = self._line(f"running, {time.perf_counter() - self._start:.0f} s ...")

        self._thread = threading.Thread(target=tick, daemon=True, name="dtlab-working")
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._stop.set()
        self._thread.join(timeout=2 * self.tick_s)
        self.seconds = time.perf_counter() - self._start
        if exc_type is None:
            self._label.value = self._line(f"done in {self.seconds:.1f} s", "#060")
        elif issubclass(exc_type, KeyboardInterrupt):
            self._label.value = self._line(f"interrupted after {self.seconds:.1f} s", "#b60")
        else:
            self._label.value = self._line(f"failed after {self.seconds:.1f} s", "#b00")
        return False


def _values(controls: dict[str, Any]) -> dict[str, Any]:
    return {name: control.value for name, control in controls.items()}


def panel(fn: Callable[..., Any], **controls) -> Any:
    """Controls above one output area showing ``fn(**values)``, redrawn in place when a control changes.

    For work that takes under about a second; longer work belongs in :func:`run_panel`.
    ``fn`` is called once at once with the controls' current values, so a
    headless run (nbval) executes it with the defaults.  What ``fn`` returns
    (a figure, a table, a dict) is shown in the area, replacing the previous
    result; an exception shows its traceback there.  Returns an
    ``ipywidgets.VBox`` whose ``.render()`` attribute re-runs ``fn`` by hand and
    whose ``.output`` is the area.
    """
    w = _ipywidgets()
    out = w.Output()

    def render(change: Any = None) -> Any:
        result = None
        with out:
            out.clear_output(wait=True)
            try:
                result = fn(**_values(controls))
                if result is not None:
                    show(result)
            except Exception as exc:  # shown in the panel: a callback's error must not vanish in the log
                if change is None:
                    raise
                _show_error(exc)
        return result

    for control in controls.values():
        control.observe(render, names="value")
    box = w.VBox([w.HBox(list(controls.values())), out])
    box.render = render
    box.output = out
    render()
    return box


def run_panel(fn: Callable[..., Any], *, button: str = "Run", run_now: bool = True, **controls) -> Any:
    """Controls that set parameters, a Run button that calls ``fn(**values)``, one output area.

    For computations longer than about a second: moving a control only marks the
    shown result as stale (the status line says so); the button starts the work.
    ``fn`` runs with the area as the current output, so its progress bars
    (``tqdm.auto``) and live figures (:func:`live_figure`, shown with :func:`show`)
    appear in the panel; what it returns is shown below them.  Interrupting the
    kernel (the stop button) stops ``fn``, keeps what it had drawn, and leaves the
    panel ready for another run.

    Parameters
    ----------
    fn : callable
        ``fn(**values)``, one keyword per control.
    button : str
        The button's text.
    run_now : bool
        Run once with the defaults when the panel is built (what a headless run executes).
    **controls : ipywidgets value widgets

    Returns
    -------
    ipywidgets.VBox
        With ``.run()`` (click by hand), ``.button``, ``.status`` and ``.output`` attributes.
    """
    w = _ipywidgets()
    out = w.Output()
    go = w.Button(description=button, button_style="primary", icon="play", tooltip="run with these parameters")
    status = w.HTML()
    shown: dict[str, Any] = {}

    def describe(values: dict[str, Any]) -> str:
        return ", ".join(f"{k} = {v:,}" if isinstance(v, int) else f"{k} = {v}" for k, v in values.items())

    def mark_stale(change: Any = None) -> None:
        if shown and _values(controls) != shown:
            status.value = (f"<b>parameters changed</b>: press {button} (shown: {describe(shown)})")
        elif shown:
            status.value = f"shown: {describe(shown)}"

    def run(_: Any = None) -> Any:
        values = _values(controls)
        go.disabled = True
        status.value = f"<i>running</i> with {describe(values)} ..."
        start = time.perf_counter()
        result = None
        with out:
            out.clear_output(wait=True)
            try:
                result = fn(**values)
                if result is not None:
                    show(result)
                status.value = f"shown: {describe(values)} (took {time.perf_counter() - start:.1f} s)"
            except KeyboardInterrupt:
                status.value = (f"<b>interrupted</b> after {time.perf_counter() - start:.1f} s with "
                                f"{describe(values)}: what ran so far is shown; press {button} to run again")
            except Exception as exc:
                status.value = f"<b>failed</b> with {describe(values)}: see the error below"
                if _ is None and not shown:
                    raise
                _show_error(exc)
            finally:
                go.disabled = False
                shown.clear()
                shown.update(values)
        return result

    go.on_click(run)
    for control in controls.values():
        control.observe(mark_stale, names="value")
    box = w.VBox([w.HBox([*controls.values(), go]), status, out])
    box.run, box.button, box.status, box.output = run, go, status, out
    if run_now:
        run()
    return box
