"""workbench.gpu_primer and notebook 07's helpers in workbench.gpu_tour: the primer's kernels against NumPy, the
simulator's access traces, occupancy curves against figures/gpu/kernels.json, the modelled times, and the committed
ptxas resources against a fresh compile."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dtlab.backend import cuda_simulator_enabled
from workbench import gpu_primer as G
from workbench import gpu_tour as T
from workbench.widgets import curve_digest

ROOT = Path(__file__).resolve().parents[1]
simulator_only = pytest.mark.skipif(not cuda_simulator_enabled(), reason="traces need numba's CUDA simulator")


@pytest.mark.parametrize("variant", G.VARIANTS)
@pytest.mark.parametrize("n, bins, grid, block", [(32, 6, 2, 4), (50, 7, 3, 5), (5, 3, 2, 4)])
def test_histograms_equal_bincount(variant, n, bins, grid, block):
    values = np.random.default_rng(n).integers(0, bins, n).astype(np.int32)
    got = G.run_histogram(values, bins, variant, grid, block)
    assert np.array_equal(got, np.bincount(values, minlength=bins))


@pytest.mark.parametrize("variant", G.VARIANTS)
@pytest.mark.parametrize("shape, block", [((4, 8), 4), ((3, 11), 4), ((5, 3), 8)])
def test_scans_equal_cumsum(variant, shape, block):
    x = np.random.default_rng(shape[1]).integers(0, 5, shape).astype(np.float32)  # exact sums in float32
    assert np.array_equal(G.run_scan(x, variant, block), np.cumsum(x, axis=1))


def test_check_tiny_reports_every_kernel_equal():
    rows = G.check_tiny(0)
    assert [(r["problem"], r["variant"]) for r in rows] == [(p, v) for p in ("histogram", "scan") for v in G.VARIANTS]
    assert all(r["equal to numpy"] for r in rows)


def test_in_simulator_runs_here_or_in_a_child_process():
    here = G.in_simulator("workbench.gpu_primer", "tiny_inputs", 3)
    child = G.in_simulator("workbench.gpu_primer", "check_tiny", 0, child=True)
    assert all(np.array_equal(a, b) for a, b in zip(here, G.tiny_inputs(3)))
    assert child == G.check_tiny(0)


def test_hillis_steele_steps():
    values = np.arange(1, 9)
    steps = G.hillis_steele_steps(values)
    assert len(steps) == 4 and np.array_equal(steps[0], values) and np.array_equal(steps[-1], np.cumsum(values))
    assert np.array_equal(steps[1], [1, 3, 5, 7, 9, 11, 13, 15])  # each sums itself and its left neighbour
    assert np.array_equal(G.hillis_steele_steps([5])[-1], [5])


@simulator_only
def test_traces_show_strided_and_coalesced_steps():
    maps = G.primer_maps(0)
    naive, coalesced = maps["histogram, naive"], maps["histogram, coalesced"]
    for m in (naive, coalesced):
        assert (m["readers"] == 1).all()  # every value read by exactly one thread
    global_thread = naive["thread"] + 4 * np.array([b[0] for b in naive["block"]])
    assert np.array_equal(global_thread, np.arange(32) // 4) and np.array_equal(naive["step"], np.arange(32) % 4)
    assert np.array_equal(coalesced["step"], np.arange(32) // 8)  # step k: the 8 threads read 8k .. 8k + 7
    scan = maps["scan, naive"]
    assert np.array_equal(scan["step"].reshape(4, 8), np.tile(np.arange(8), (4, 1)))  # thread s walks row s
    assert np.array_equal(maps["scan, shared"]["step"].reshape(4, 8), np.tile(np.arange(8) // 4, (4, 1)))


def test_access_map_of_a_hand_made_log():
    log = [(0, "get", (2, 3), "float32", (0, 0, 0), (1, 0, 0), (0, 2)),
           (0, "get", (2, 3), "float32", (0, 0, 0), (1, 0, 0), (0, 2)),  # the same element again: no new step
           (0, "get", (2, 3), "float32", (0, 0, 0), (1, 0, 0), (1, 0)),
           (0, "set", (2, 3), "float32", (1, 0, 0), (0, 0, 0), (1, 1)),  # a write: not a read
           (1, "get", (2, 3), "float32", (1, 0, 0), (0, 0, 0), (1, 1))]  # another launch
    m = G.access_map(log, 0, (2, 3), "float32")
    assert m["thread"].tolist() == [-1, -1, 1, 1, -1, -1] and m["step"].tolist() == [-1, -1, 0, 1, -1, -1]
    assert T.traced_rows(m, axis=1) == {((0, 0, 0), 1): [0, 2]}
    log.append((0, "get", (2, 3), "float32", (0, 0, 0), (1, 0, 0), (1, 2)))  # row 1 again: the same loop step
    by_row = G.access_map(log, 0, (2, 3), "float32", axis=0)
    assert by_row["step"].tolist() == [-1, -1, 0, 1, -1, 1]


@simulator_only
def test_tiny_traces_agree_with_the_written_mapping():
    traces = T.tiny_traces(0)
    assert all(t["equal"] for t in traces.values())
    written = {((r["block"], 0, 0), r["thread"]): r["rows"] for r in T.mapping(traces["inference"]["launch"])}
    assert T.traced_rows(traces["inference"]["map"], axis=1) == written
    assert (traces["evolution"]["map"]["readers"] == traces["evolution"]["launch"].grid[1]).all()  # once per tree
    assert {k: v[1] for k, v in T.tiny_launches(0).items()} == {k: True for k in T.KERNELS}
    child = G.in_simulator("workbench.gpu_tour", "tiny_traces", 0, child=True)  # as on a GPU machine: pickled back
    assert T.traced_rows(child["inference"]["map"], axis=1) == written
    assert len(T.mapping(child["greedy"]["launch"])) == len(T.mapping(traces["greedy"]["launch"]))


def test_plot_access_maps_marks_the_step():
    m = {"block": [(0, 0, 0)] * 4 + [(1, 0, 0)] * 4, "thread": np.array([0, 1, 0, 1, 0, 1, 0, 1]),
         "step": np.array([0, 0, 1, 1, 0, 0, 1, 1]), "readers": np.ones(8, int), "shape": (8,)}
    fig = T.plot_access_maps({"toy": m}, 1)
    assert "step 1 of 2" in fig.axes[0].get_title(loc="left") and "2 cells" in fig.axes[0].get_title(loc="left")
    assert T._spacing([(0, (0, 0, 0), 0), (1, (0, 0, 0), 1)]) == "block 0: 2 cells adjacent"
    assert T._spacing([(0, (0, 0, 0), 0), (4, (0, 0, 0), 1)]) == "block 0: 2 cells 4 apart"


def test_occupancy_curve_reproduces_kernels_json():
    rec = T.kernel_record("boosting.lossguide_scan")
    for block, stored in rec["blocks"].items():
        (point,) = T.occupancy_curve(rec["registers"], rec["shared_static"], [int(block)])
        assert {k: point[k] for k in stored} == stored
    assert T.allocated_registers("boosting.lossguide_scan") == 128
    flat = T.occupancy_curve(128, 0, range(64, 1025, 64))
    # 16 warps of 4,096 registers fit an SM: 25% with blocks of 2, 4, 8 or 16 warps, less where blocks leave a
    # remainder (3 warps: 5 blocks, 15 warps); never more, whatever the block
    assert {p["block"] for p in flat if p["occupancy"] == 0.25} == {64, 128, 256, 512}
    assert max(p["occupancy"] for p in flat) == 0.25 and not flat[-1]["launchable"]  # 1,024 x 128 > 65,536
    assert all(p["limited_by"] == "registers" for p in flat if p["launchable"])
    assert T.occupancy_curve(64, 0, [64])[0]["occupancy"] == 0.5


def test_plot_occupancy_curves_change_with_registers():
    a = T.plot_occupancy("boosting.lossguide_scan", 128)
    b = T.plot_occupancy("boosting.lossguide_scan", 136)
    assert curve_digest(a)[1] >= 2 and curve_digest(a)[0] != curve_digest(b)[0]


def test_ridge_points():
    ridge = {r["roof"]: r["ridge point (per byte)"] for r in T.ridge_points()}
    assert ridge["float64 flops"] == pytest.approx(34e12 / 4.8e12)
    assert ridge["float32 flops"] == pytest.approx(67e12 / 4.8e12)


def test_work_counts_the_access_patterns():
    naive, _, _ = G.work("histogram", "naive", 10**6, bins=256)
    coalesced, chain, _ = G.work("histogram", "coalesced", 10**6, bins=256)
    assert naive.bytes - coalesced.bytes == 28 * 10**6  # a 32-byte sector instead of 4 bytes per value
    assert chain == pytest.approx(10**6 / 256 * G.GLOBAL_ATOMIC_SECONDS)
    _, few, _ = G.work("histogram", "shared", 10**6, bins=16)
    shape = G.launch_shape("histogram", "shared", 10**6, bins=16)
    assert shape["shared_bytes"] == 64 and shape["blocks"] <= 132 * shape["blocks_per_sm"]
    s_naive, _, _ = G.work("scan", "naive", 2**20, segment=1024)
    s_coal, s_chain, s_shape = G.work("scan", "coalesced", 2**20, segment=1024)
    assert s_naive.bytes == 8 * s_coal.bytes and s_shape["blocks"] == 4  # 1,024 segments, one thread each
    assert s_chain == pytest.approx(1024 * G.DEPENDENT_ADD_SECONDS)


def test_modelled_times_rank_the_variants():
    n = 10**8
    seconds = {(b, v): G.modelled_seconds("histogram", v, n, bins=b) for b in (16, 8192) for v in G.VARIANTS}
    assert seconds[16, "shared"] < seconds[16, "coalesced"] / 5 < seconds[16, "naive"]
    assert seconds[8192, "coalesced"] < seconds[8192, "naive"]
    assert seconds[8192, "shared"] / seconds[8192, "coalesced"] > seconds[16, "shared"] / seconds[16, "coalesced"]
    one_per_value = G.modelled_seconds("histogram", "shared", 10**7, bins=256, blocks=10**7 // 256)
    assert one_per_value > G.modelled_seconds("histogram", "shared", 10**7, bins=256)
    rows = G.modelled([10**4, 10**6], bins=64, segment=1024)
    assert len(rows) == 2 * 3 * 2 and all(r["seconds"] >= 4e-6 for r in rows)


def test_plot_modelled_draws_open_dashed_modelled_curves():
    fig = G.plot_modelled(G.modelled([10**4, 10**6]), 256, 4096)
    lines = [line for ax in fig.axes for line in ax.lines]
    assert len(lines) == 6 and all(line.get_linestyle() == "--" and "modelled" in line.get_label()
                                   and line.get_markerfacecolor() == "none" for line in lines)
    assert curve_digest(fig)[0] != curve_digest(G.plot_modelled(G.modelled([10**4, 10**6], bins=512), 512, 4096))[0]


def test_measured_points_are_filled_and_the_recorded_facts_hold():
    doc = G.load_measured()
    rows = doc["rows"]
    assert "H200" in doc["device"] and all(r["correct"] for r in rows)
    fig = G.plot_modelled(G.modelled([10**4, 10**8]), 256, 4096, rows)
    solid = [line for ax in fig.axes for line in ax.lines if line.get_linestyle() == "-"]
    assert len(solid) == 6 and all("measured" in line.get_label() and line.get_markerfacecolor() != "none"
                                   for line in solid)
    assert len(G.plot_modelled(G.modelled([10**4]), 512, 4096, rows).axes[0].lines) == 3  # no measurement at 512
    t = {(r["problem"], r["variant"], r["n"], r.get("bins")): r["seconds"] for r in rows}
    for n in (10**6, 10**7, 10**8):
        for bins in (16, 256, 8192):
            assert t["histogram", "shared", n, bins] < t["histogram", "coalesced", n, bins]
    scans = {(v, n): s for (p, v, n, _), s in t.items() if p == "scan"}
    assert all(scans["shared", n] < scans["coalesced", n] for v, n in scans)


def test_glossary_names_the_terms():
    terms = {t for t, _, _ in G.GLOSSARY}
    assert {"warp", "coalescing", "shared memory", "bank conflict", "occupancy", "registers and spills", "roofline",
            "grid-stride loop", "atomics"} <= terms
    assert all(what and where for _, what, where in G.GLOSSARY)


def test_committed_resources_are_clean():
    res = G.load_resources()
    assert set(res) == {f"{p}.{v}" for p in ("histogram", "scan") for v in G.VARIANTS}
    assert all(r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["arch"] == "sm_90" for r in res.values())
    assert res["histogram.shared"]["shared_static"] == 4 * G.COMPILED_BINS
    assert res["scan.shared"]["shared_static"] == 4 * G.TPB


def _toolchain() -> bool:
    """The gpu-compile extra (libNVVM in the nvcc wheel and a ptxas), as tests/test_gpu_compile.py checks."""
    import importlib.util

    try:
        if not any(importlib.util.find_spec(name) for name in ("nvidia.cuda_nvcc", "nvidia.cu13")):
            return False
        from dtlab.gpu.compile import ptxas_path

        ptxas_path()
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _toolchain(), reason="the gpu-compile extra is not installed: run make gpu-compile once")
def test_committed_resources_match_a_fresh_compile():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "workbench.gpu_primer", "--check"], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=600)
    result = json.loads(run.stdout.split("RESULT", 1)[1])
    assert result["same"], f"run python -m workbench.gpu_primer: {result['fresh']}"
