"""make gpu-compile: ptxas parsing, occupancy, the failure rules, and a broken kernel that makes the check fail."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dtlab.gpu.compile import judge, parse_ptxas, ptx_facts
from dtlab.gpu.occupancy import ARCHS, occupancy

ROOT = Path(__file__).resolve().parents[1]

PTXAS_LOG = """ptxas info    : 8 bytes gmem
ptxas info    : Compiling entry function '_Z6kernel' for 'sm_90'
ptxas info    : Function properties for _Z6kernel
    512 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 84 registers, used 1 barriers, 512 bytes cumulative stack size, 16896 bytes smem
ptxas info    : Compile time = 1444.150 ms
"""


def test_ptxas_log_is_read():
    assert parse_ptxas(PTXAS_LOG) == {"registers": 84, "barriers": 1, "shared_static": 16896, "stack": 512,
                                      "spill_stores": 8, "spill_loads": 4, "max_callee_stack": 512}
    with pytest.raises(RuntimeError, match="unexpected ptxas output"):
        parse_ptxas("ptxas fatal: nothing")


def test_occupancy_follows_the_calculator():
    sm90 = ARCHS["sm_90"]
    full = occupancy(32, 0, 256, sm90)
    assert full["blocks_per_sm"] == 8 and full["occupancy"] == 1.0 and full["launchable"]
    # 84 registers: 2,816 per warp (rounded to 256) -> 23 warps of the 65,536 registers
    regs = occupancy(84, 0, 512, sm90)
    assert regs["blocks_per_sm"] == 1 and regs["limited_by"] == "registers"
    assert not occupancy(84, 0, 1024, sm90)["launchable"]  # 32 warps x 2,816 > 65,536
    smem = occupancy(16, 40 * 1024, 128, sm90)  # (40 KiB + 1 KiB reserved) per block: 5 blocks in 228 KiB
    assert smem["blocks_per_sm"] == 5 and smem["limited_by"] == "shared memory"
    assert occupancy(16, 40 * 1024, 128, ARCHS["sm_80"])["blocks_per_sm"] == 4  # 164 KiB


def test_failure_rules():
    rec = {"registers": 32, "shared_static": 0, "spill_stores": 0, "spill_loads": 0, "fma": 0, "exact": True,
           "blocks": {"128": occupancy(32, 0, 128, ARCHS["sm_90"])}}
    assert judge(rec, (128,)) == []
    assert "spills" in judge(dict(rec, spill_stores=8), (128,))[0]
    assert "static shared memory" in judge(dict(rec, shared_static=49_153), (128,))[0]
    assert "fused multiply-adds" in judge(dict(rec, fma=2), (128,))[0]
    assert judge(dict(rec, fma=2, exact=False), (128,)) == []
    big = dict(rec, registers=128, blocks={"1024": occupancy(128, 0, 1024, ARCHS["sm_90"])})
    assert "exceed the register file" in judge(big, (1024,))[0]
    assert "block of 2048 threads" in judge(dict(rec, blocks={"2048": {}}), (2048,))[0]


def test_ptx_facts_count_fmas_and_64_bit_shared_atomics():
    ptx = textwrap.dedent("""
        fma.rn.f64 %fd1, %fd2, %fd3, %fd4;
        mul.rn.f64 %fd5, %fd1, %fd1;
        atom.shared.min.u64 %rd1, [%rd2], %rd3;
        atom.shared.or.b64 %rd1, [%rd2], %rd3;
        atom.shared.or.b32 %r1, [%rd2], %r3;
        atom.shared.add.u32 %r1, [%rd2], 1;
    """)
    assert ptx_facts(ptx) == {"fma": 1, "shared_atomics_64": ["min", "or"], "shared_atomic_sites_64": 2}


def _toolchain() -> bool:
    """The gpu-compile extra's wheels: libNVVM (in the nvcc wheel) and a ptxas (a ptxas alone on the PATH, without
    libNVVM, cannot compile)."""
    import importlib.util

    try:
        if not any(importlib.util.find_spec(name) for name in ("nvidia.cuda_nvcc", "nvidia.cu13")):
            return False
        from dtlab.gpu.compile import ptxas_path

        ptxas_path()
        import numba.cuda.compiler  # noqa: F401
        return True
    except Exception:
        return False


needs_toolchain = pytest.mark.skipif(not _toolchain(), reason="the gpu-compile extra is not installed: "
                                     "run make gpu-compile once (it installs numba-cuda's nvcc and nvrtc wheels)")

BROKEN = '''
import numpy as np
from numba import cuda
from dtlab.gpu.compile import run
from dtlab.gpu.kernels import declare_kernel

@cuda.jit
def allocates(out):
    tmp = np.empty(4)  # no allocation on a device: a compile error the simulator would not see
    out[0] = tmp[0]

@cuda.jit
def contracts(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * x[i] + out[i]  # fused into an FMA by NVVM

@cuda.jit
def fine(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] + 1.0

declare_kernel("test.allocates", build=lambda: allocates, signatures=("void(float64[::1])",), blocks=(32,))
declare_kernel("test.contracts", build=lambda: contracts, signatures=("void(float64[::1], float64[::1])",),
               blocks=(1024,))
declare_kernel("test.fine", build=lambda: fine, signatures=("void(float64[::1], float64[::1])",), blocks=(256,))
records = run(("sm_90",), jobs=1, names=["test.allocates", "test.contracts", "test.fine"])
print("RESULT", __import__("json").dumps({r["name"]: r["failures"] for r in records}))
'''


@needs_toolchain
def test_a_broken_kernel_fails_the_check(tmp_path):
    """Without a GPU: np.empty in device code is a compile error, an FMA in a kernel declared exact fails,
    a plain kernel passes (compiled for sm_90 and assembled by ptxas)."""
    script = tmp_path / "broken.py"
    script.write_text(BROKEN)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.split("RESULT", 1)[1])
    assert result["test.allocates"] and "compile error" in result["test.allocates"][0]
    assert any("fused multiply-adds" in f for f in result["test.contracts"])
    assert result["test.fine"] == []


def test_the_committed_table_covers_every_declared_kernel():
    """figures/gpu/kernels.json (written by make gpu-compile, committed) has every declared kernel and
    signature on sm_90 and sm_80, none failing; the README shows its sm_90 table."""
    from dtlab.gpu.compile import table
    from dtlab.gpu.kernels import discover

    doc = json.loads((ROOT / "figures" / "gpu" / "kernels.json").read_text())
    compiled = {(r["name"], r["signature"], r["arch"]) for r in doc["kernels"] if "registers" in r}
    wanted = {(s.name, sig, arch) for s in discover().values() for sig in s.signatures for arch in ("sm_90", "sm_80")}
    assert wanted <= compiled, f"not in kernels.json (run make gpu-compile): {sorted(wanted - compiled)[:5]}"
    assert not [r for r in doc["kernels"] if r["failures"]]
    readme = (ROOT / "README.md").read_text()
    assert table([r for r in doc["kernels"] if r["name"] in discover()]) in readme
