"""Amdahl's law on a GDT generation: the host's share of a generation caps what more devices can give.

A generation is the host's work (selection, crossover, mutation, packing the
batch, storing statistics; :data:`~workbench.evolution.host_loop.HOST_PHASES`)
plus the devices' (handing the batch over and back, transfers, kernels).  The
host's work depends on the population and its trees, not on the rows; the
devices' grows with the rows and is what more devices divide (each walks its
shard).  With ``h`` the host's share of a generation on one device, ``d``
devices can at best make the generation ``S(d) = 1 / (h + (1 - h) / d)``
times faster, and never more than ``1 / h`` (Amdahl's law), however fast the
devices are.  Measured points fall below the law where each further device
adds work of its own (handing it the batch and waiting for it, merging its
statistics: the ``c (d - 1)`` of :class:`~workbench.evolution.devices.PoolModel`)
or the devices share what the law assumes each has alone (CPU workers share
the memory bus, and on a busy machine wait for a core).  This is the paper's
own explanation of Fig. 10 (Jurczuk, Czajkowski, Kretowski, Applied
Intelligence 2021, section 4.2): on small data "other algorithm parts ...
contribute importantly to the overall execution time", so the speedup over one
GPU stays below linear until the data are large.

* :func:`amdahl_curves`: from :func:`~workbench.evolution.host_loop.generation_breakdown`'s
  rows, the whole generation's measured speedup over one device and Amdahl's
  law from its measured host share;
* :func:`device_panel`: what notebook 04's device panel draws for one size,
  noise and device count: the evaluation's speedup (measured, modelled,
  bound), the generation's (measured, and Amdahl's) and the time by phase.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from workbench.evolution.devices import device_scaling, device_sweep, present_devices
from workbench.evolution.host_loop import generation_breakdown

__all__ = ["amdahl_curves", "amdahl_speedup", "amdahl_table", "device_panel"]


def amdahl_speedup(serial, n_devices):
    """Amdahl's law: ``1 / (s + (1 - s) / d)``, the speedup on ``d`` devices of work whose share ``s`` they do not
    divide and whose rest they divide perfectly."""
    s = np.asarray(serial, float)
    return 1.0 / (s + (1.0 - s) / np.asarray(n_devices, float))


def amdahl_curves(breakdown, device_counts: Sequence[int] = (1, 2, 4), kind: str = "CPU workers"):
    """The whole generation's speedup over one device: measured, and Amdahl's law from the measured host share.

    Parameters
    ----------
    breakdown : DataFrame of :func:`~workbench.evolution.host_loop.generation_breakdown` rows (one or more sizes),
        with the one-device row of ``kind`` for every size
    device_counts : the counts Amdahl's law is drawn at
    kind : the evaluators to read (``"CPU workers"``, ``"GPUs"``)

    Returns
    -------
    DataFrame, per size and count: ``n_samples, n_devices, seconds`` (per generation; NaN where modelled),
    ``speedup, source`` (``"measured"``: one device's time over ``d``'s; ``"modelled"``: Amdahl's law with
    the measured host share), ``host_share`` (of the one-device generation) and ``limit`` (``1 / host_share``,
    the speedup no number of devices passes).
    """
    import pandas as pd

    rows = []
    part = breakdown[breakdown.kind == kind]
    for n, size in part.groupby("n_samples"):
        one = size[size.devices == 1]
        if one.empty:
            raise ValueError(f"the breakdown of {n:,} rows has no one-device row of {kind}")
        base, h = float(one.total.iloc[0]), float(one.host_share.iloc[0])
        shares = {"host_share": h, "limit": 1 / h}
        for r in size.sort_values("devices").itertuples():
            rows.append({"n_samples": int(n), "n_devices": int(r.devices), "seconds": float(r.total),
                         "speedup": base / float(r.total), "source": "measured", **shares})
        for d in device_counts:
            rows.append({"n_samples": int(n), "n_devices": int(d), "seconds": float("nan"),
                         "speedup": float(amdahl_speedup(h, d)), "source": "modelled", **shares})
    return pd.DataFrame(rows)


def amdahl_table(generation):
    """:func:`amdahl_curves`' rows as one row per size: the host's share, the measured speedups, Amdahl's, the limit.

    Columns ``host share`` (of the one-device generation, %), ``measured on d`` for every measured count
    ``d > 1``, ``Amdahl on d`` for every modelled count ``d > 1`` and ``limit`` (``1 / host share``).
    """
    import pandas as pd

    rows = []
    for n, part in generation.groupby("n_samples"):
        row = {"rows": f"{n:,}", "host share (%)": round(100 * float(part.host_share.iloc[0]), 1)}
        for source, words in (("measured", "measured on"), ("modelled", "Amdahl on")):
            for r in part[(part.source == source) & (part.n_devices > 1)].sort_values("n_devices").itertuples():
                row[f"{words} {r.n_devices}"] = round(float(r.speedup), 2)
        row["limit"] = round(float(part.limit.iloc[0]), 2)
        rows.append(row)
    return pd.DataFrame(rows).set_index("rows")


def device_panel(rows: int, noise_attrs: int, n_devices: int, fit_to=None, probe_ratio: float | None = None,
                 repeats: int = 2, generations: int = 10, seed: int = 0):
    """Notebook 04's device panel for one size: evaluation and generation speedups over one device, time by phase.

    CPU workers are measured up to the cores present (one thread each), and GPUs too where real ones are
    present; beyond the devices present the evaluation's speedup is modelled
    (:class:`~workbench.evolution.devices.PoolModel`, which gives every device its own compute, as GPUs have;
    only where it fits the measured points, ``fit_to`` included) and bounded by this machine's cores
    (``probe_ratio``, :func:`~workbench.evolution.devices.process_probe`).

    Returns
    -------
    curves : DataFrame, :func:`~workbench.evolution.devices.device_scaling`'s rows with a ``method`` column
        (``"CPU workers"`` or ``"GPUs"``)
    breakdown : :func:`~workbench.evolution.host_loop.generation_breakdown`'s rows (the measured counts)
    generation : :func:`amdahl_curves`' rows for ``1..n_devices``
    """
    import pandas as pd

    counts = list(range(1, n_devices + 1))
    point = device_sweep(sizes=(rows,), device_counts=counts, repeats=repeats, noise_attrs=noise_attrs,
                         reference=False, seed=seed)
    curves, _ = device_scaling(point, counts, probe_ratio=probe_ratio, cores=present_devices("cpu"), fit_to=fit_to)
    curves = curves.assign(method="CPU workers")
    gpus = min(present_devices("cuda"), n_devices)
    if gpus:  # real GPUs: measured, never the simulator
        measured = device_sweep(sizes=(rows,), device_counts=range(1, gpus + 1), kind="cuda", repeats=repeats,
                                noise_attrs=noise_attrs, reference=False, seed=seed)
        gpu_curves, _ = device_scaling(measured, counts, method="GPUs")
        curves = pd.concat([curves, gpu_curves.assign(method="GPUs")], ignore_index=True)
    breakdown = generation_breakdown(n_samples=rows, generations=generations, n_devices=sorted(set(point.devices)),
                                     noise_attrs=noise_attrs, use_dask=False, seed=seed)
    return curves, breakdown, amdahl_curves(breakdown, counts)
