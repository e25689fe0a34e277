"""Reusable ipywidgets controls for the notebooks.

Each builder returns a widget with the value a dtlab function expects
(e.g. an int number of rows), so notebook cells stay one line.  Builders run
headless (no display needed) and are unit-tested that way.
"""

from __future__ import annotations

from typing import Any, Callable

from .backend import cuda_status


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - ipywidgets is a core dependency
        raise ImportError("dtlab.widgets needs ipywidgets: pip install ipywidgets") from exc
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
        from .backend import resolve_backend

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


def live_figure(draw: Callable[[Any, Any], Any], figsize: tuple[float, float] = (7.0, 4.2),
                min_interval_s: float = 0.5):
    """An output area whose figure ``update(data)`` redraws while a long computation runs.

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
        Display it once (e.g. as a cell's last value); it keeps the latest figure.
    update : callable
        ``update(data, force=False)``, e.g. a computation's progress callback.
    """
    import time

    w = _ipywidgets()
    area = w.Output()
    last = [-float("inf")]

    def update(data: Any, force: bool = False) -> None:
        import matplotlib.pyplot as plt
        from IPython.display import display

        now = time.monotonic()
        if not force and now - last[0] < min_interval_s:
            return
        last[0] = now
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        draw(data, ax)
        with area:
            area.clear_output(wait=True)
            display(fig)
        plt.close(fig)

    return area, update


def panel(fn: Callable[..., Any], **controls) -> Any:
    """Controls above an output area showing ``fn(**values)``; re-rendered when a control changes.

    ``fn`` is called once at once with the controls' current values, so a
    headless run (nbval) executes it with the defaults.  Returns an
    ``ipywidgets.VBox`` whose ``.render()`` attribute re-runs ``fn`` by hand.
    """
    w = _ipywidgets()
    out = w.Output()

    def render(change: Any = None) -> Any:
        values = {name: control.value for name, control in controls.items()}
        out.clear_output(wait=True)
        with out:
            result = fn(**values)
            if result is not None:
                from IPython.display import display

                display(result)
        return result

    for control in controls.values():
        control.observe(render, names="value")
    box = w.VBox([w.HBox(list(controls.values())), out])
    box.render = render
    render()
    return box
