"""The device sweep, the performance model and the host-loop measurements on tiny inputs (paths, not numbers)."""

import numpy as np
import pandas as pd
import pytest

from workbench.evolution import devices, host_loop


def test_one_sweep_feeds_fig9_and_fig10():
    sweep = devices.device_sweep(sizes=(2_000, 6_000), device_counts=(1, 2, 8), repeats=2)
    assert set(sweep.method) == {"NumPy reference", "CPU workers"}
    workers = sweep[sweep.method == "CPU workers"]
    assert set(workers.devices) <= {1, 2} and (workers.threads == workers.devices).all()  # 8 > cores: skipped
    assert ((workers.seconds_min <= workers.seconds) & (workers.seconds <= workers.seconds_max)).all()
    phases = workers[list(devices.CALL_PHASES)].sum(axis=1)
    assert (phases <= workers.seconds_max * 1.5).all() and (workers.kernel > 0).all()
    speed = devices.evaluator_speedups(sweep)
    ref = speed[speed.method == "NumPy reference"]
    assert (ref.speedup_over_reference == 1).all()
    curves, model = devices.device_scaling(sweep, (1, 2, 4), probe_ratio=1.8, cores=2)
    one = curves[(curves.source == "measured") & (curves.n_devices == 1)]
    assert (one.speedup == 1).all()
    # Fig. 10's one-device time is Fig. 9's one-worker time: the same measurement
    assert np.allclose(one.seconds.to_numpy(), workers[workers.devices == 1].seconds.to_numpy())
    bound = curves[curves.source == "bound"].set_index(["n_samples", "n_devices"]).speedup
    assert bound[2_000, 1] == 1 and bound[2_000, 2] == pytest.approx(1.8) and bound[2_000, 4] == pytest.approx(1.8)
    assert ("modelled" in set(curves.source)) == model.usable


def test_model_is_drawn_only_where_it_fits_every_point():
    truth = devices.PoolModel(fixed=1e-3, per_row=2e-8, per_device=5e-4)
    points = pd.DataFrame([{"n_samples": n, "devices": d, "seconds": float(truth.seconds(n, d))}
                           for n in (1e4, 1e5, 1e6) for d in (1, 2, 4)])
    fitted = devices.PoolModel.fit(points)
    assert fitted.max_error < 1e-6 and fitted.usable
    assert fitted.per_row == pytest.approx(2e-8, rel=1e-4)
    # two workers sharing one core: no model of independent devices fits both counts
    shared = points.assign(seconds=lambda p: np.where(p.devices > 1, p.seconds * p.devices * 0.6, p.seconds))
    misfit = devices.PoolModel.fit(shared)
    assert misfit.max_error > devices.MODEL_TOLERANCE and not misfit.usable
    sweep = shared.assign(method="CPU workers")
    curves, _ = devices.device_scaling(sweep, (1, 2, 4))
    assert "modelled" not in set(curves.source)


def test_a_model_within_tolerance_of_every_time_but_not_of_a_speedup_is_not_drawn():
    """Times 13% too slow on one device and 13% too fast on two are each within 20%, their ratio 30% off: the
    figure draws speedups, so the fit fails."""
    truth = devices.PoolModel(fixed=1e-3, per_row=2e-8, per_device=5e-4)
    points = pd.DataFrame([{"n_samples": n, "devices": d, "seconds": float(truth.seconds(n, d))}
                           for n in (1e4, 1e5, 1e6) for d in (1, 2)])
    big = points.n_samples == 1e6
    skewed = points.assign(seconds=np.where(big & (points.devices == 1), points.seconds * 0.87,
                                            np.where(big, points.seconds * 1.13, points.seconds)))
    model = devices.PoolModel.fit(skewed)
    time_error = np.max(np.abs(model.seconds(skewed.n_samples, skewed.devices) / skewed.seconds - 1))
    assert time_error < devices.MODEL_TOLERANCE < model.max_error and not model.usable


def test_hardware_bound():
    assert devices.hardware_bound(1, 2, 1.7) == 1.0
    assert devices.hardware_bound(2, 2, 1.7) == pytest.approx(1.7)
    assert devices.hardware_bound(8, 2, 1.7) == pytest.approx(1.7)
    assert devices.hardware_bound(3, 1, 1.0) == 1.0


def test_generation_breakdown_splits_host_and_devices():
    table = host_loop.generation_breakdown(n_samples=3_000, generations=4, n_devices=(1, 2), use_dask=False,
                                           population_size=10)
    assert list(table.evaluator) == ["CPU workers x1", "CPU workers x2"]
    assert table.devices.tolist() == [1, 2] and set(table.kind) == {"CPU workers"}
    phases = list(host_loop.HOST_PHASES + host_loop.DEVICE_PHASES)
    assert (table[phases] >= 0).all().all() and (table.operators > 0).all() and (table.kernel > 0).all()
    assert np.allclose(table[phases].sum(axis=1), table.total, rtol=1e-6)
    assert ((0 < table.host_share) & (table.host_share < 1)).all()


def test_host_loop_speed_against_another_commit_and_the_loop_alone():
    import subprocess

    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    commit = head.stdout.strip() if head.returncode == 0 else None  # this checkout's own code as the "baseline"
    # attempts=1: a loaded test machine would otherwise take each fit again (the retries are for benchmarks)
    out = host_loop.host_loop_speed(cases=((300, 5), (600, 3)), repeats=2, threads=1, baseline_commit=commit,
                                    attempts=1)
    assert set(out["cases"]) == {"300x5", "600x3"} and out["threads"] == 1
    for entry in out["cases"].values():
        for who in ("now", "baseline") if commit else ("now",):
            fit = entry[who]["fit"]
            assert len(entry[who]["fit_seconds"]) == 2 and fit["min"] <= fit["median"] <= fit["max"]
        if commit:  # the same code at the same seed: the same tree
            assert entry["now"]["n_nodes"] == entry["baseline"]["n_nodes"]
    with pytest.raises(RuntimeError, match="not in this checkout's history"):
        host_loop.host_loop_speed(cases=((300, 2),), repeats=1, baseline_commit="0" * 40)
    alone = host_loop.loop_alone(n_samples=300, generations=5, repeats=1, threads=1)
    assert alone["speedup"] > 0 and alone["compiled"]["median"] > 0


def test_recorded_baseline_holds_the_issue_cases():
    base = host_loop.host_loop_baseline()
    assert {f"{n}x{g}" for n, g in host_loop.HOST_LOOP_CASES} <= set(base["cases"])
    for case in base["cases"].values():
        assert case["fit"]["min"] <= case["fit"]["median"] <= case["fit"]["max"]
    assert base["threads"] == 2 and len(base["commit"]) == 40


def test_amdahl_curves_from_a_breakdown():
    from workbench.evolution import amdahl

    rows = [{"evaluator": f"CPU workers x{d}", "kind": "CPU workers", "devices": d, "n_samples": n, "total": t,
             "host_share": h} for n, d, t, h in ((1000, 1, 0.010, 0.5), (1000, 2, 0.008, 0.6),
                                                 (9000, 1, 0.050, 0.1), (9000, 2, 0.030, 0.15))]
    curves = amdahl.amdahl_curves(pd.DataFrame(rows), (1, 2, 4))
    small = curves[curves.n_samples == 1000].set_index(["source", "n_devices"]).speedup
    assert small["measured", 1] == 1 and small["measured", 2] == pytest.approx(0.010 / 0.008)
    assert small["modelled", 2] == pytest.approx(1 / (0.5 + 0.25)) and small["modelled", 4] == pytest.approx(1 / 0.625)
    assert (curves[curves.n_samples == 1000].limit == 2).all() and (curves[curves.n_samples == 9000].limit == 10).all()
    assert amdahl.amdahl_speedup(0.0, 4) == pytest.approx(4) and amdahl.amdahl_speedup(1.0, 4) == pytest.approx(1)
    table = amdahl.amdahl_table(curves)
    assert list(table.index) == ["1,000", "9,000"]
    assert list(table.columns) == ["host share (%)", "measured on 2", "Amdahl on 2", "Amdahl on 4", "limit"]
    assert table.loc["9,000", "Amdahl on 2"] == pytest.approx(1 / 0.55, abs=0.01)
    with pytest.raises(ValueError, match="no one-device row"):
        amdahl.amdahl_curves(pd.DataFrame(rows[1:2]))


def test_device_panel_measures_evaluation_and_generation():
    from workbench.evolution import amdahl

    curves, breakdown, generation = amdahl.device_panel(2_000, 1, 2, repeats=1, generations=2)
    assert set(curves.method) >= {"CPU workers"} and "measured" in set(curves.source)
    assert list(breakdown.devices) == sorted(set(curves[curves.source == "measured"].n_devices))
    assert {"measured", "modelled"} <= set(generation.source)
    assert sorted(generation[generation.source == "modelled"].n_devices) == [1, 2]


def test_recorded_gpu_table(tmp_path):
    import json

    from workbench.evolution.gpu import recorded_gpu_table

    assert "nothing recorded" in recorded_gpu_table([tmp_path / "missing.json"]).value.iloc[0]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"benchmarks": {"evolution_gpu": {
        "history": [{"date": "2026-12-01", "commit": "abc1234"}],
        "results": {"status": "measured", "target": "60 s", "run": {"generations": 10_000, "meets_target": True,
                                                                     "gpus": ["H200"]},
                    "throughput": {"tree_rows_per_s": 1.5e11},
                    "breakdown": [{"evaluator": "GPU x1", "host_share": 0.25}]}}}}))
    table = recorded_gpu_table([tmp_path / "missing.json", path]).value
    assert table["file"] == str(path) and table["status"] == "measured" and table["GPUs"] == "H200"
    assert table["evaluator: tree-rows per second"] == "1.5e+11" and table["host's share of a generation"] == "0.25"


def test_process_probe_times_one_process_alone_then_all_together():
    probe = devices.process_probe(n_samples=3_000, n_processes=2, repeats=1)
    assert probe["processes"] == 2 and len(probe["seconds_together"]) == 2 and probe["seconds_alone"] > 0
    assert probe["throughput_ratio"] == pytest.approx(2 * probe["seconds_alone"] / np.mean(probe["seconds_together"]))
