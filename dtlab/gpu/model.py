"""A stated performance model of dtlab's kernels on an NVIDIA H200: modelled, never measured.

Each declared kernel (:mod:`.kernels`) counts the work of one launch from its
launch shape and arguments (:class:`Work`: DRAM bytes, float32 and float64
operations, other instructions).  Its modelled time on an H200 is a roofline
with an occupancy-scaled efficiency:

``t = launch + max(bytes / (B * e), flops64 / (F64 * e), flops32 / (F32 * e), ops / (I * e))``

* ``B`` = 4.8 TB/s (HBM3e), ``F64`` = 34 TFLOP/s and ``F32`` = 67 TFLOP/s
  (SXM, no tensor cores), ``I`` = 132 SMs x 64 integer lanes x 1.98 GHz;
  ``launch`` = 4 microseconds of launch latency;
* ``e = busy x latency``: ``busy`` is the fraction of the 132 SMs the grid
  keeps busy (``blocks / 132``, at most 1); ``latency`` is the share of the
  latency a multiprocessor hides, ``min(1, resident warps / 16)``, with the
  resident warps from the compile check's occupancy (:mod:`.occupancy`) --
  the assumption being that 16 warps (25% occupancy) keep the memory system
  or the pipelines busy;
* bytes count each array element a kernel reads or writes once, except
  scattered reads (a row's nodes, gathered rows), which count a 32-byte
  sector each.

It is a model: its numbers are drawn with open markers and dashed lines, and
``make gpu-check`` prints it beside the measured times the first time a
device is lent, which is how it gets checked.
"""

from __future__ import annotations

from dataclasses import dataclass

#: H200 SXM (the lent machine's GPU), from NVIDIA's data sheet.
H200 = {"name": "NVIDIA H200 (modelled)", "sms": 132, "bandwidth": 4.8e12, "fp64": 34e12, "fp32": 67e12,
        "int_lanes_per_sm": 64, "clock": 1.98e9, "launch_seconds": 4e-6, "warps_to_hide_latency": 16}

SECTOR = 32


@dataclass(frozen=True)
class Work:
    """What one launch does: DRAM bytes, float64 / float32 operations and other (integer, compare,
    branch, shared-memory) instructions, summed over its threads."""

    bytes: float
    flops64: float = 0.0
    flops32: float = 0.0
    ops: float = 0.0

    def __add__(self, other: "Work") -> "Work":
        return Work(self.bytes + other.bytes, self.flops64 + other.flops64, self.flops32 + other.flops32,
                    self.ops + other.ops)


def efficiency(blocks: int, warps_per_block: int, blocks_per_sm: int, device: dict = H200) -> float:
    """``busy x latency`` of the module docstring, in (0, 1]."""
    sms = device["sms"]
    busy = min(1.0, blocks / sms)
    resident = min(max(blocks_per_sm, 1), -(-blocks // sms)) * warps_per_block
    return max(busy * min(1.0, resident / device["warps_to_hide_latency"]), 1e-6)


def seconds(work: Work, blocks: int, threads_per_block: int, blocks_per_sm: int, device: dict = H200) -> float:
    """Modelled seconds of a launch (see the module docstring)."""
    e = efficiency(blocks, -(-threads_per_block // 32), blocks_per_sm, device)
    int_rate = device["sms"] * device["int_lanes_per_sm"] * device["clock"]
    return device["launch_seconds"] + max(work.bytes / (device["bandwidth"] * e), work.flops64 / (device["fp64"] * e),
                                          work.flops32 / (device["fp32"] * e), work.ops / (int_rate * e))


def bound(work: Work, device: dict = H200) -> str:
    """Which roof limits the launch: ``"memory"``, ``"fp64"``, ``"fp32"`` or ``"instructions"``."""
    int_rate = device["sms"] * device["int_lanes_per_sm"] * device["clock"]
    times = {"memory": work.bytes / device["bandwidth"], "fp64": work.flops64 / device["fp64"],
             "fp32": work.flops32 / device["fp32"], "instructions": work.ops / int_rate}
    return max(times, key=times.get)


def resources(name: str, block: int, table: dict | None = None, arch: str = "sm_90") -> int:
    """Blocks per multiprocessor of kernel ``name`` at ``block`` threads, from ``figures/gpu/kernels.json``
    (the compile check); 1 when the kernel or block size is not in it."""
    table = load_table() if table is None else table
    for rec in table.get("kernels", []):
        if rec["name"] == name and rec["arch"] == arch and str(block) in rec.get("blocks", {}):
            return max(int(rec["blocks"][str(block)]["blocks_per_sm"]), 1)
    for rec in table.get("kernels", []):  # another block size: the same registers, recomputed
        if rec["name"] == name and rec["arch"] == arch and "registers" in rec:
            from .occupancy import ARCHS, occupancy

            return max(occupancy(rec["registers"], rec["shared_static"], block, ARCHS[arch])["blocks_per_sm"], 1)
    return 1


def load_table() -> dict:
    """``figures/gpu/kernels.json`` of the source tree ({} when absent)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "figures" / "gpu" / "kernels.json"
    return json.loads(path.read_text()) if path.exists() else {}


def model_launch(launch, table: dict | None = None) -> dict | None:
    """The modelled time of a recorded launch (:class:`dtlab.gpu.launch.Launch` with its arguments kept):
    ``{"name", "seconds", "bound", "work"}``, or None for a kernel declared without a model."""
    from .kernels import SPECS

    spec = SPECS[launch.name]
    if spec.model is None:
        return None
    work = spec.model(launch)
    blocks = int(launch.grid[0] * launch.grid[1] * launch.grid[2])
    block = int(launch.block[0] * launch.block[1] * launch.block[2])
    per_sm = resources(launch.name, block, table)
    return {"name": launch.name, "seconds": seconds(work, blocks, block, per_sm), "bound": bound(work),
            "work": work}


def summarise(launches, table: dict | None = None) -> dict[str, dict]:
    """Per kernel: launches, modelled seconds in all, and measured seconds in all where timed."""
    out: dict[str, dict] = {}
    for item in launches:
        m = model_launch(item, table)
        row = out.setdefault(item.name, {"launches": 0, "modelled": 0.0, "measured": None, "bound": None})
        row["launches"] += 1
        if m is not None:
            row["modelled"] += m["seconds"]
            row["bound"] = m["bound"]
        if item.seconds is not None:
            row["measured"] = (row["measured"] or 0.0) + item.seconds
    return out
