"""``make gpu-compile``: every kernel dtlab launches, compiled for the H200 (sm_90) and the A100 (sm_80) without a GPU.

For each declared kernel (:mod:`.kernels`) and each of its launch signatures:

1. numba-cuda compiles it to PTX for compute capability 9.0 and 8.0 (one
   front-end pass, NVVM once per architecture).  No driver is needed, except
   that a kernel calling device functions asks the current device for its
   compute capability: a stand-in device answers for the compile;
2. ``ptxas -v -O3`` assembles the PTX for the architecture and reports
   registers per thread, spill stores and loads, the stack frame (local
   memory) and static shared memory;
3. the occupancy at each block size the kernel launches with
   (:mod:`.occupancy`).

The check fails on a compile error, any spill, static shared memory over
48 KiB, ``registers x block`` beyond the register file (or a block over 1,024
threads), and on a fused multiply-add in a kernel declared ``exact`` (bit for
bit the CPU's arithmetic: a contraction, or libdevice math, would change its
last bits).  It also counts 64-bit shared-memory atomics (min / max / or /
and / xor / add on 64-bit words, which sm_90 runs as compare-and-swap loops).
The results go to ``figures/gpu/kernels.json`` and ``figures/gpu/kernels.md``.

Run: ``python -m dtlab.gpu.compile [--out DIR] [--jobs N]`` with
``NUMBA_ENABLE_CUDASIM=0`` and the ``gpu-compile`` extra installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .occupancy import ARCHS, occupancy

#: Static shared memory a block may declare (more needs dynamic shared memory and an opt-in).
STATIC_SHARED_LIMIT = 48 * 1024
MAX_BLOCK = 1024

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+)'")
_FRAME = re.compile(r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, "
                    r"(\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers([^\n]*)")
_FMA = re.compile(r"^\s*(?:@%p\d+\s+)?fma\.rn(?:\.ftz)?\.f(?:32|64)\b", re.M)
_ATOM64 = re.compile(r"\batom\.shared\.(?:\w+\.)*?(min|max|or|and|xor|add|inc|dec)\.(?:u64|s64|b64|f64)\b")


def ptxas_path() -> str:
    """The ``ptxas`` of the nvcc wheel (CUDA 12 or 13), ``$PTXAS``, or one on the PATH."""
    if os.environ.get("PTXAS"):
        return os.environ["PTXAS"]
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations if spec else []):
        for sub in ("cuda_nvcc/bin/ptxas", "cu13/bin/ptxas"):
            if (Path(root) / sub).exists():
                return str(Path(root) / sub)
    found = shutil.which("ptxas")
    if found:
        return found
    raise FileNotFoundError("ptxas not found: install the gpu-compile extra (pip install -e '.[gpu-compile]'), "
                            "or set PTXAS")


@contextlib.contextmanager
def stand_in_device(cc: tuple[int, int]):
    """numba's dispatcher asks the current device for its compute capability when a kernel calls device
    functions; without a driver, this stand-in answers ``cc`` for the duration of the compile."""
    import numba.cuda.dispatcher as dispatcher

    class StandIn:
        compute_capability = tuple(cc)
        name = f"stand-in device, compute capability {cc[0]}.{cc[1]}"

    old = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: StandIn()
    try:
        yield
    finally:
        dispatcher.get_current_device = old


def compile_ptx(pyfunc, signature: str, ccs: list[tuple[int, int]]) -> dict:
    """``{cc: ptx}`` of a kernel for a signature: one front-end pass, one NVVM pass per compute capability."""
    from numba import cuda

    with stand_in_device(max(ccs)):
        try:  # numba-cuda's internal entry point: the library it returns gives PTX for any cc
            from numba.cuda.compiler import _compile_pyfunc_with_fixup

            lib, _ = _compile_pyfunc_with_fixup(pyfunc, signature, device=False, cc=max(ccs), abi="numba")
            out = {}
            for cc in ccs:
                ptx = lib.get_asm_strs(cc=cc)
                if len(ptx) != 1:
                    raise RuntimeError(f"{len(ptx)} PTX modules for one kernel")
                out[cc] = ptx[0]
            return out
        except ImportError:
            return {cc: cuda.compile_ptx(pyfunc, signature, cc=cc)[0] for cc in ccs}


def assemble(ptx: str, arch: str, ptxas: str) -> dict:
    """``ptxas -v -O3`` for ``arch``: registers, spills, stack and static shared memory of the kernel."""
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        run = subprocess.run([ptxas, f"-arch={arch}", "-v", "-O3", str(src), "-o", str(obj)],
                             capture_output=True, text=True)
    log = run.stdout + run.stderr
    if run.returncode:
        raise RuntimeError(f"ptxas failed for {arch}:\n{log[-3000:]}")
    return parse_ptxas(log)


def parse_ptxas(log: str) -> dict:
    """The entry function's resources from a ``ptxas -v`` log (spills summed over every function in it)."""
    entry = _ENTRY.search(log)
    used = [m for m in _USED.finditer(log) if entry is not None and m.start() > entry.end()][:1]
    if entry is None or not used:
        raise RuntimeError(f"unexpected ptxas output:\n{log[-2000:]}")
    frames = {m.group(1): tuple(int(v) for v in m.groups()[1:]) for m in _FRAME.finditer(log)}
    stack, stores, loads = frames.get(entry.group(1), (0, 0, 0))
    rest = used[0].group(2)  # e.g. ", used 1 barriers, 512 bytes cumulative stack size, 16896 bytes smem"

    def number(pattern):
        m = re.search(pattern, rest)
        return int(m.group(1)) if m else 0

    return {"registers": int(used[0].group(1)), "barriers": number(r"used (\d+) barriers"),
            "shared_static": number(r"(\d+) bytes smem"), "stack": stack,
            "spill_stores": sum(f[1] for f in frames.values()), "spill_loads": sum(f[2] for f in frames.values()),
            "max_callee_stack": max((f[0] for f in frames.values()), default=0)}


def ptx_facts(ptx: str) -> dict:
    """Fused multiply-adds and 64-bit shared-memory atomics in the PTX (libdevice math included)."""
    return {"fma": len(_FMA.findall(ptx)), "shared_atomics_64": sorted(set(_ATOM64.findall(ptx))),
            "shared_atomic_sites_64": len(_ATOM64.findall(ptx))}


def check_kernel(name: str, archs: list[str], ptxas: str) -> list[dict]:
    """Compile, assemble and judge every signature of declared kernel ``name`` (runs in a worker process)."""
    from .kernels import discover, python_function

    spec = discover()[name]
    pyfunc = python_function(spec.build())
    records = []
    for signature in spec.signatures:
        start = time.perf_counter()
        try:
            ptx = compile_ptx(pyfunc, signature, [ARCHS[a].cc for a in archs])
        except Exception as exc:  # the compile error is the finding
            records.append({"name": name, "signature": signature, "arch": archs[0], "failures":
                            [f"compile error: {type(exc).__name__}: {str(exc).splitlines()[0][:500]}"]})
            continue
        for arch_name in archs:
            arch = ARCHS[arch_name]
            code = ptx[arch.cc]
            rec = {"name": name, "signature": signature, "arch": arch_name, **ptx_facts(code)}
            rec.update(assemble(code, arch_name, ptxas))
            rec["blocks"] = {str(b): occupancy(rec["registers"], rec["shared_static"], b, arch) for b in spec.blocks}
            rec["exact"] = spec.exact
            rec["failures"] = judge(rec, spec.blocks)
            rec["seconds"] = round(time.perf_counter() - start, 2)
            records.append(rec)
    return records


def judge(rec: dict, blocks) -> list[str]:
    """What makes a compiled kernel fail the check (see the module docstring)."""
    bad = []
    if rec["spill_stores"] or rec["spill_loads"]:
        bad.append(f"spills {rec['spill_stores']} bytes stored, {rec['spill_loads']} loaded")
    if rec["shared_static"] > STATIC_SHARED_LIMIT:
        bad.append(f"{rec['shared_static']:,} bytes of static shared memory (> {STATIC_SHARED_LIMIT:,})")
    for b in blocks:
        if b > MAX_BLOCK:
            bad.append(f"block of {b} threads (> {MAX_BLOCK})")
        elif not rec["blocks"][str(b)]["launchable"]:
            bad.append(f"{rec['registers']} registers x {b} threads exceed the register file")
    if rec.get("exact") and rec["fma"]:
        bad.append(f"declared exact (the CPU's bits) but its PTX has {rec['fma']} fused multiply-adds")
    return bad


def run(archs=("sm_90", "sm_80"), jobs: int | None = None, names=None) -> list[dict]:
    """Check every declared kernel (or those in ``names``); records in declaration order."""
    from .kernels import discover

    specs = discover()
    names = list(names or specs)
    missing = [n for n in names if n not in specs]
    if missing:
        raise KeyError(f"not declared: {missing}")
    ptxas = ptxas_path()
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(names)))
    if jobs == 1:
        results = [check_kernel(n, list(archs), ptxas) for n in names]
    else:
        import multiprocessing

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(check_kernel, names, [list(archs)] * len(names), [ptxas] * len(names)))
    return [r for group in results for r in group]


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("numba", "numba-cuda", "nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvcc"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def table(records: list[dict], arch: str = "sm_90") -> str:
    """A markdown table of the kernels on ``arch``: one row per kernel (its first signature)."""
    from .kernels import SPECS

    lines = ["| kernel | what a block does | registers | spills | stack B | static smem B | block | occupancy "
             "| 64-bit smem atomics | FMA |", "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    seen = set()
    for r in records:
        if r["arch"] != arch or r["name"] in seen or "registers" not in r:
            continue
        seen.add(r["name"])
        block = next(iter(r["blocks"]))
        occ = r["blocks"][block]
        summary = SPECS[r["name"]].summary if r["name"] in SPECS else ""
        lines.append(f"| `{r['name']}` | {summary} | {r['registers']} | {r['spill_stores'] + r['spill_loads']} | "
                     f"{r['stack']} | {r['shared_static']:,} | {block} | {occ['occupancy']:.0%} "
                     f"({occ['limited_by']}) | {', '.join(r['shared_atomics_64']) or '-'} | {r['fma']} |")
    return "\n".join(lines)


def write(records: list[dict], out: Path) -> tuple[Path, Path]:
    """``kernels.json`` (every record, no timings: stable in git) and ``kernels.md`` (the sm_90 table)."""
    out.mkdir(parents=True, exist_ok=True)
    stable = [{k: v for k, v in r.items() if k != "seconds"} for r in records]
    doc = {"generated_by": "make gpu-compile (python -m dtlab.gpu.compile)", "versions": versions(),
           "archs": sorted({r["arch"] for r in records}), "kernels": stable}
    js = out / "kernels.json"
    js.write_text(json.dumps(doc, indent=1) + "\n")
    md = out / "kernels.md"
    md.write_text("# dtlab's CUDA kernels compiled for sm_90 (H200)\n\nGenerated by `make gpu-compile` from "
                  "`kernels.json`: registers per thread, spilled bytes, stack (local memory) and static shared "
                  "memory from `ptxas -v`, occupancy at the block size the code launches with (and what "
                  "limits it).\n\n" + table(records) + "\n")
    return js, md


README_START, README_END = "<!-- gpu-kernels:start -->", "<!-- gpu-kernels:end -->"


def write_readme(records: list[dict], readme: Path) -> bool:
    """Put the sm_90 table between the README's gpu-kernels markers; True when it changed."""
    text = readme.read_text()
    start, end = text.index(README_START) + len(README_START), text.index(README_END)
    new = text[:start] + "\n" + table(records) + "\n" + text[end:]
    if new != text:
        readme.write_text(new)
    return new != text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dtlab.gpu.compile", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("figures/gpu"))
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--arch", nargs="+", default=["sm_90", "sm_80"], choices=sorted(ARCHS))
    parser.add_argument("--only", nargs="+", default=None, help="kernel names (default: every declared kernel)")
    parser.add_argument("--no-write", action="store_true", help="check only; write nothing")
    parser.add_argument("--readme", type=Path, default=None,
                        help="also put the sm_90 table into this README (between its gpu-kernels markers)")
    args = parser.parse_args(argv)
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1":
        print("make gpu-compile compiles for a real device: run it with NUMBA_ENABLE_CUDASIM=0", file=sys.stderr)
        return 2
    start = time.perf_counter()
    records = run(args.arch, args.jobs, args.only)
    failed = [r for r in records if r["failures"]]
    for r in records:
        mark = "FAIL" if r["failures"] else "ok  "
        regs = r.get("registers", "-")
        print(f"{mark} {r['arch']} {r['name']:<32} regs {regs:>3}  stack {r.get('stack', '-'):>4}  "
              f"smem {r.get('shared_static', '-'):>6}  {r['signature'][:70]}")
        for f in r["failures"]:
            print(f"       {f}")
    if not args.no_write:
        for path in write(records, args.out):
            print(f"wrote {path}")
        if args.readme is not None and write_readme(records, args.readme):
            print(f"wrote the table into {args.readme}")
    n = len({r["name"] for r in records})
    print(f"make gpu-compile: {n} kernels, {len(records)} compiled (kernel, signature, arch), {len(failed)} failed, "
          f"{time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
