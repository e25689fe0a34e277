"""Widgets build and react headless."""

import pytest

from dtlab import widgets


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
