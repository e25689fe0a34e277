"""README captions of GDT's figures and benchmarks, written from the recorded results (never typed numbers).

Each function takes a producer's recorded results (``results.json``) and
returns ``{figure or benchmark name: text}``; :mod:`.producers` registers them.
"""

from __future__ import annotations

from typing import Any

from workbench.text import MODE_WORDS, by_mode, comparison_phrase, count, speedup, threads


def _rows(n: int) -> str:
    return f"{n:,} rows"


def convergence_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the convergence figures: what each configuration reached, and when."""
    runs = results["runs"]
    configs = list(dict.fromkeys((r["n_samples"], r["noise_attrs"]) for r in runs))
    seeds = len({r["seed"] for r in runs})
    grid = "; ".join(f"{n:,} objects with {count(k, 'noise attribute')}" for n, k in configs)
    ideal = [r for r in runs if r["ideal"]]
    reached = "; ".join(
        f"{n:,} objects, {k} noise: " + ", ".join(
            f"generation {r['first_ideal_generation']}" if r["first_ideal_generation"] >= 0 else "never"
            for r in runs if (r["n_samples"], r["noise_attrs"]) == (n, k))
        for n, k in configs)
    return {
        "evolution_convergence_fitness": (
            f"GDT on Chess3x3: best fitness per generation, mean of {seeds} run(s) per configuration ({grid}); "
            f"the paper's Fig. 11 analogue."),
        "evolution_convergence_size": (
            f"Size of the best tree per generation (Fig. 12 analogue): {len(ideal)} of {len(runs)} runs ended with "
            f"the ideal {results['ideal_nodes']}-node tree. First generation whose best tree was ideal: "
            f"{reached}."),
    }


def _gdt_standing(row: dict) -> str:
    # judged against the baselines only: the "pareto" flag is over every row, where one GDT row tying with
    # the other (the same tree chosen twice) leaves it unflagged although no baseline beats it
    if row["gap_points"] == 0 and row["gap_nodes"] == 0:
        return "on the front"
    parts = []
    if row["gap_points"] > 0:
        parts.append(f"{row['gap_points']:.1f} points below a baseline no larger")
    if row["gap_nodes"] > 0:
        parts.append(f"{row['gap_nodes']:.0f} nodes above a baseline at least as accurate")
    return "off the front: " + ", ".join(parts)


def baseline_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the Table 4 figures (each method's median size, accuracy and time; GDT's standing) and the tree."""
    by_dataset: dict[str, list] = {}
    for row in results["summary"]:
        by_dataset.setdefault(row["dataset"], []).append(row)
    parts = []
    for name, rows in by_dataset.items():
        held = " (held out: no part in choosing GDT's defaults)" if rows[0]["held_out"] else ""
        gdt = [f"{r['method']} {r['n_nodes']:.0f} nodes / {100 * r['test_accuracy']:.1f}% in {r['fit_seconds']:.2g} s, "
               f"{_gdt_standing(r)}" for r in rows if r["method"].startswith("GDT")]
        others = ", ".join(f"{r['method']} {r['n_nodes']:.0f} / {100 * r['test_accuracy']:.1f}% "
                           f"({r['fit_seconds']:.2g} s)" for r in rows if not r["method"].startswith("GDT"))
        front = ", ".join(r["method"] for r in rows if r["pareto"])
        parts.append(f"{name}{held}: {'; '.join(gdt)}; {others}; Pareto front: {front}")
    skipped = results.get("skipped", {})
    note = (" Not run: " + "; ".join(f"{m} ({why})" for m, why in skipped.items()) + ".") if skipped else ""
    text = (f"Table 4, honestly: GDT with its defaults held fixed, and its size chosen on its own front by "
            f"{results.get('cv', 3)}-fold CV of the training rows, against tuned and optimal trees on the same splits "
            f"(median of {results['n_seeds']} seed(s): nodes / test accuracy, time to the chosen tree). "
            + " ".join(p + "." for p in parts) + note)
    tree = results["chess_tree"]
    return {"evolution_vs_cart": text, "evolution_accuracy_size": text,
            "evolution_chess_tree": (f"The tree GDT evolved on Chess3x3 ({tree['n_samples']:,} rows): "
                                     f"{tree['n_nodes']} nodes, {tree['n_leaves']} leaves"
                                     + (", the ideal structure." if tree["ideal"] else ", not the ideal structure."))}


def throughput_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of the throughput figure: each speedup with its threads."""
    comparisons = results["comparisons"]
    first = comparisons[0]
    parts = []
    for peer in dict.fromkeys(e["peer"] for e in comparisons):
        modes = by_mode(comparisons, peer=peer)
        notes = {e.get("peer_note") for e in modes.values()} - {None}
        parts.append(f"against the {peer}, {', '.join(comparison_phrase(modes[m]) for m in MODE_WORDS)}"
                     + (f" ({'; '.join(sorted(notes))})" if notes else ""))
    return {"evolution_evaluator_throughput": (
        f"GDT fitness evaluation of {first['n_trees']} evolved trees on {first['n_samples']:,} rows (tree-rows per "
        f"second), speedup of dtlab's batched numba evaluator " + "; ".join(parts)
        + ". scikit-learn's apply only finds leaves (no class counts, no draws).")}


def quality_captions(results: dict[str, Any]) -> dict[str, str]:
    """Text for the quality benchmark: ideal trees found, the timed run, real data against CART tuned by CV."""
    chess = "; ".join(
        f"{r['n_samples']:,} rows, {count(r['noise_attrs'], 'noise attribute')}: "
        f"{r['ideal_runs']} of {r['runs']} runs ideal"
        + (f" (first ideal generation {r['first_ideal_generation_min']}-{r['first_ideal_generation_max']})"
           if r["first_ideal_generation_min"] >= 0 else "")
        for r in results["chess_summary"])
    real = "; ".join(
        f"{name}: GDT {r['GDT']['n_nodes']:.0f} nodes / {100 * r['GDT']['test_accuracy']:.1f}%, "
        + ", ".join(f"{m} {v['n_nodes']:.0f} / {100 * v['test_accuracy']:.1f}%" for m, v in r.items() if m != "GDT")
        for name, r in results["tuned"].items())
    t = results.get("threads", {})
    run_threads = f" on {threads(t['gdt'])}" if "gdt" in t else ""
    return {"evolution_quality": (
        f"GDT on Chess3x3: {chess}. A run on 100,000 rows reached the ideal tree in "
        f"{results['run_100k_to_ideal_generations']} generations and {results['run_100k_to_ideal_seconds']:.1f} s"
        f"{run_threads}. On real data against CART tuned by cross-validation on the training rows (median of "
        f"{results['n_seeds']} seed(s), nodes / test accuracy): {real}; the whole comparison is Table 4.")}


def device_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the device figures: Fig. 9 and Fig. 10 from one sweep, the model's fit, the breakdown."""
    speed = results["evaluator_speedups"]
    largest = max(r["n_samples"] for r in speed)
    at = [r for r in speed if r["n_samples"] == largest and r["method"] != "NumPy reference"]
    ref = next(r for r in speed if r["n_samples"] == largest and r["method"] == "NumPy reference")
    curves, model, probe = results["device_scaling"], results["model"], results["probe"]
    measured = [r for r in curves if r["source"] == "measured" and r["n_devices"] > 1 and r["n_samples"] == largest]
    modelled = [r for r in curves if r["source"] == "modelled" and r["n_devices"] > 1 and r["n_samples"] == largest]
    fit = (f"The model T(n, d) = a + b n/d + c (d - 1), fitted to every measured point, is within "
           f"{100 * model['max_error']:.0f}% of each (tolerance {100 * results['tolerance']:.0f}%), so it is drawn: "
           + "; ".join(f"{r['n_devices']} devices modelled {speedup(r['speedup'])}" for r in modelled)
           + " (it gives each device its own compute, as GPUs have)."
           if modelled else
           f"No model is drawn: the best fit T(n, d) = a + b n/d + c (d - 1) misses a measured point by "
           f"{100 * model['max_error']:.0f}% (tolerance {100 * results['tolerance']:.0f}%).")
    breakdown = results["generation_breakdown"]
    phases = "; ".join(f"{r['evaluator']}: {1000 * r['total']:.2f} ms, host {100 * r['host_share']:.0f}% "
                       f"(operators {1000 * r['operators']:.2f} ms), kernels {1000 * r['kernel']:.2f} ms"
                       for r in breakdown)
    return {
        "evolution_evaluator_speedups": (
            f"Speedup of each evaluator over the NumPy reference as Chess3x3 grows (Fig. 9 analogue, "
            f"{speed[0]['n_trees']} evolved trees per batch; the reference measured on the whole batch, "
            f"{ref['seconds']:.3g} s at {_rows(largest)}): at {_rows(largest)}, "
            + ", ".join(f"{r['method']} x{r['devices']} {speedup(r['speedup_over_reference'])}" for r in at)
            + ". Medians of alternating calls; bars: min-max."),
        "evolution_device_scaling": (
            f"Speedup over one device (Fig. 10 analogue, {results['kind']} of one thread each), from the same sweep as "
            f"Fig. 9 (the one-device time is its x1 time): at {_rows(largest)} "
            + "; ".join(f"{r['n_devices']} devices measured {speedup(r['speedup'])}" for r in measured)
            + f". The machine's bound (dotted): {probe['processes']} processes running the kernel alone reached "
              f"{probe['throughput_ratio']:.2f}x one's rate in a probe run with this sweep (load average "
              f"{results['load_average'][0]:.1f}). " + fit),
        "evolution_generation_time": (
            f"Milliseconds per GDT generation by phase ({_rows(breakdown[0]['n_samples'])}, mean of "
            f"{breakdown[0]['generations']} generations; hatched: the host's phases): {phases}."),
    }


def speed_captions(results: dict[str, Any]) -> dict[str, str]:
    """Text of the device-speed benchmark: the 2-worker speedup with its rounds, the process probe, Dask."""
    pool, probe, dask = results["pool"], results["probe"], results["dask"]
    speedups, ratios = results.get("speedups", [pool["speedup"]]), results.get("probe_ratios", [])
    spread = (f" (median of {len(speedups)} rounds, range {min(speedups):.2f}-{max(speedups):.2f}x; two processes "
              f"running the kernel alone reached {min(ratios):.2f}-{max(ratios):.2f}x one process's rate in the same "
              f"rounds)" if len(speedups) > 1 and ratios else "")
    if "skipped" in dask:
        dask_text = f"Dask: {dask['skipped']}."
    else:
        dask_text = (f"Dask ({dask['devices']} worker processes on loopback, one thread each) against the in-process "
                     f"pool with as many workers: {1000 * dask['overhead_seconds']:+.1f} ms per generation "
                     f"({100 * dask['overhead_fraction']:+.0f}%: {1000 * dask['dask_seconds']:.0f} against "
                     f"{1000 * dask['pool_seconds']:.0f} ms).")
    return {"evolution_device_speed": (
        f"Device pool on {pool['n_samples']:,} Chess3x3 rows ({pool['n_trees']} trees per batch, one thread per "
        f"CPU worker, {pool['cores']} cores): 2 workers against 1, {pool['speedup']:.2f}x "
        f"({1000 * pool['seconds'][0]:.0f} ms against {1000 * pool['seconds'][1]:.0f} ms per batch){spread}; in the "
        f"median round {probe['processes']} separate processes running the kernel alone reached "
        f"{probe['throughput_ratio']:.2f}x one process's rate. " + dask_text)}


def host_loop_captions(results: dict[str, Any]) -> dict[str, str]:
    """Text of the host-loop benchmark: each case against the Python loop's code, the goals over the spread."""
    if results.get("status") == "skipped":
        return {"evolution_host_loop": f"Host-loop benchmark not run: {results['reason']}."}
    parts = []
    for c in results["cases"].values():
        now, base, rec = c["now"], c["baseline"], c["recorded"]
        parts.append(f"{c['n_samples']:,} rows x {c['generations']:,} generations: {now['median']:.2f} s "
                     f"({now['min']:.2f}-{now['max']:.2f}) against {base['median']:.2f} s "
                     f"({base['min']:.2f}-{base['max']:.2f}), {c['speedup']:.1f}x ({c['speedup_min']:.1f}-"
                     f"{c['speedup_max']:.1f}x; recorded with the exclusive lock: {rec['median']:.2f} s); goal "
                     f"{c['goal']}: " + ("met over the whole spread" if c["met"] else "missed"))
    alone = results["loop_alone"]
    return {"evolution_host_loop": (
        f"GDTClassifier(random_state=3, max_stagnation=10**6).fit on Chess3x3 with 2 noise attributes, "
        f"{threads(results['threads'])}, {results['repeats']} runs each, against the Python host loop "
        f"({results['baseline_source']}): " + "; ".join(parts)
        + f". A fit during which other processes or the hypervisor took over 10% of a core was timed again. The "
          f"compiled loop against the plain Python reference loop on the same evaluator ({alone['n_samples']:,} rows, "
          f"{alone['generations']} generations, the same trees): {alone['speedup']:.1f}x.")}


def gpu_captions(results: dict[str, Any]) -> dict[str, str]:
    """Text of the GPU benchmark, or why its numbers are pending."""
    if results.get("status") == "pending":
        return {"evolution_gpu": f"GPU numbers pending: {results['reason']}. Target: {results['target']}."}
    run, tp = results["run"], results["throughput"]
    host = results.get("breakdown")
    host_text = (f" Host share of a generation: {100 * host[0]['host_share']:.0f}% "
                 f"({1000 * host[0]['total']:.2f} ms per generation over {host[0]['generations']} generations)."
                 if host else "")
    done = "measured" if run.get("measured_10000") else "projected from the mean generation"
    return {"evolution_gpu": (
        f"On {run['gpus'][0]['name'] if run.get('gpus') else 'the GPU'}: GDT on {run['n_samples']:,} rows x "
        f"{run['n_features']} attributes ran {run['generations']:,} generations in {run['seconds']:.0f} s, "
        f"{1000 * run['seconds_per_generation_mean']:.1f} ms per generation on average, so 10,000 generations take "
        f"{run['projected_10000_generations_seconds']:.0f} s ({done}; target 60 s; the paper: "
        f"{run['paper_seconds_4_p100']:.0f} s on four P100). Evaluator: {tp['tree_rows_per_s']:.3g} tree-rows/s per "
        f"batch ({tp['kernel_tree_rows_per_s']:.3g} in the kernels, {tp['leaf_search']} leaf search), "
        f"{100 * tp['bandwidth_fraction']:.1f}% of the 4.3 TB/s copy bandwidth by the bytes-read model." + host_text)}
