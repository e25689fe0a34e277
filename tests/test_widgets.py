"""Widgets build and react headless."""

import pytest

from workbench import widgets


def test_dataset_size_slider_is_log_ladder():
    w = widgets.dataset_size_slider(value=20_000, min_exp=3, max_exp=5)
    values = [v for _, v in w.options]
    assert values[0] == 1000 and values[-1] == 100_000 and 20_000 in values and 50_000 in values
    assert w.value == 20_000
    with pytest.raises(ValueError):
        widgets.dataset_size_slider(value=10, min_exp=3)


def test_noise_and_device_sliders():
    assert widgets.noise_attrs_slider(5).value == 5
    with pytest.raises(ValueError):
        widgets.noise_attrs_slider(-1)
    devices = widgets.device_count_slider()
    assert devices.value == 1 and devices.max >= 1


def test_backend_selector_offers_only_what_works():
    w = widgets.backend_selector()
    assert w.value == "auto" and "cpu" in w.options


def test_panel_renders_once_and_on_change():
    calls = []
    size = widgets.dataset_size_slider(value=1000, min_exp=3, max_exp=4)
    noise = widgets.noise_attrs_slider(0, max_value=3)
    box = widgets.panel(lambda rows, noise: calls.append((rows, noise)), rows=size, noise=noise)
    assert calls == [(1000, 0)]
    noise.value = 2
    size.value = 2000
    assert calls[-2:] == [(1000, 2), (2000, 2)]
    assert len(box.children) == 2


def test_live_figure_redraws_on_update_and_skips_bursts():
    calls = []
    area, update = widgets.live_figure(lambda data, ax: (calls.append(data), ax.plot(data)), min_interval_s=60)
    update([1, 2, 3])
    update([1, 2, 3, 4])  # within the interval: skipped
    update([1, 2, 3, 4, 5], force=True)
    assert [len(c) for c in calls] == [3, 5]
    assert area.outputs is not None


def test_plot_figures_are_not_tracked_by_pyplot():
    # Figures pyplot tracks are drawn a second time by the inline backend at the end of a cell.
    import matplotlib.pyplot as plt

    from dtlab.plotting import new_axes, new_figure

    before = plt.get_fignums()
    fig, ax = new_axes()
    fig2, (a, b) = new_figure(1, 2, figsize=(4, 2))
    assert plt.get_fignums() == before
    assert ax.figure is fig and a.figure is fig2 and b.figure is fig2


def test_panel_shows_a_callback_error_in_its_area_not_the_log():
    def fn(rows):
        if rows > 1000:
            raise RuntimeError("too many rows")
        return rows

    size = widgets.dataset_size_slider(value=1000, min_exp=3, max_exp=4)
    box = widgets.panel(fn, rows=size)
    size.value = 2000  # raises inside the callback: must not propagate to the comm handler
    assert box.output is box.children[1]
    with pytest.raises(RuntimeError):  # at build time (a cell running headless) the error fails the cell
        widgets.panel(fn, rows=widgets.dataset_size_slider(value=2000, min_exp=3, max_exp=4))


def test_run_panel_runs_on_click_only_and_survives_an_interrupt():
    calls = []

    def fn(rows, noise):
        calls.append((rows, noise))
        if noise == 3:
            raise KeyboardInterrupt  # what the kernel's stop button raises in a running callback
        return rows

    size = widgets.dataset_size_slider(value=1000, min_exp=3, max_exp=4)
    noise = widgets.noise_attrs_slider(0, max_value=3)
    box = widgets.run_panel(fn, rows=size, noise=noise)
    assert calls == [(1000, 0)] and "shown" in box.status.value
    size.value = 2000  # a slider only sets a parameter
    assert calls == [(1000, 0)] and "parameters changed" in box.status.value
    box.button.click()
    assert calls[-1] == (2000, 0) and "parameters changed" not in box.status.value
    noise.value = 3
    box.button.click()
    assert calls[-1] == (2000, 3) and "interrupted" in box.status.value and not box.button.disabled
    noise.value = 1
    box.button.click()
    assert calls[-1] == (2000, 1) and "took" in box.status.value


def test_working_counts_and_reports_how_the_block_ended():
    with widgets.working("a step", tick_s=0.01) as w:
        import time

        time.sleep(0.05)
    assert "done in" in w._label.value and w.seconds >= 0.05
    with pytest.raises(KeyboardInterrupt):
        with widgets.working("a step") as w:
            raise KeyboardInterrupt
    assert "interrupted after" in w._label.value
    with pytest.raises(ValueError):
        with widgets.working("a step") as w:
            raise ValueError("bad")
    assert "failed after" in w._label.value and not w._thread.is_alive()


def _figure(ys, scatter=None):
    from dtlab.plotting import new_axes

    fig, ax = new_axes()
    ax.plot(range(len(ys)), ys, color="C0")
    if scatter is not None:
        ax.scatter(*scatter)
    return fig


def test_curve_digest_follows_the_plotted_data_only():
    same, curves = widgets.curve_digest(_figure([1.0, 2.0, 3.0], scatter=([0, 1], [5, 6])))
    assert curves == 2 and len(same) == 40
    restyled = _figure([1.0, 2.0, 3.0], scatter=([0, 1], [5, 6]))
    restyled.axes[0].lines[0].set_color("red")
    restyled.axes[0].set_title("another title")
    assert widgets.curve_digest(restyled) == (same, 2)
    assert widgets.curve_digest(_figure([1.0, 2.5, 3.0], scatter=([0, 1], [5, 6])))[0] != same  # a point of the line
    assert widgets.curve_digest(_figure([1.0, 2.0, 3.0], scatter=([0, 1], [5, 7])))[0] != same  # a scatter point


def test_curve_digest_of_a_figure_without_curves():
    from dtlab.plotting import new_axes

    fig, ax = new_axes()
    ax.bar([0, 1], [3, 4])
    ax.imshow([[0, 1], [1, 0]])
    digest, curves = widgets.curve_digest(fig)
    assert curves == 0
    html = widgets.curves_html(fig)
    assert 'class="dtlab-curves"' in html and 'data-curves="0"' in html and f'data-digest="{digest}"' in html
    assert "display:none" in html


def test_show_publishes_the_curve_digest_after_a_figure(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    shown = []
    monkeypatch.setattr(InteractiveShell, "initialized", classmethod(lambda cls: True))
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    fig = _figure([1.0, 2.0])
    widgets.show(fig, "a table")
    assert shown[0] is fig and shown[2] == "a table"
    assert shown[1].data == widgets.curves_html(fig) and 'data-curves="1"' in shown[1].data
