"""Occupancy of a kernel on a multiprocessor, from its registers, shared memory and block size.

The rules of NVIDIA's occupancy calculator for the architectures dtlab
compiles for: registers are allocated per warp in units of 256, shared memory
per block in units of 128 bytes plus 1 KiB the system reserves, and a
multiprocessor holds at most 64 warps (2,048 threads) and 32 blocks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    """Per-multiprocessor resources of one architecture."""

    name: str
    cc: tuple[int, int]
    registers: int = 65_536
    max_registers_per_thread: int = 255
    register_unit: int = 256
    max_warps: int = 64
    max_blocks: int = 32
    shared_bytes: int = 233_472
    max_shared_per_block: int = 232_448
    shared_unit: int = 128
    shared_reserved: int = 1024
    static_shared_limit: int = 48 * 1024


#: sm_90 (H100, H200): 228 KiB of shared memory per multiprocessor; sm_80 (A100): 164 KiB.
ARCHS = {"sm_90": Arch("sm_90", (9, 0)),
         "sm_80": Arch("sm_80", (8, 0), shared_bytes=167_936, max_shared_per_block=166_912)}


def _ceil_to(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(registers: int, shared_bytes: int, block: int, arch: Arch) -> dict:
    """Resident blocks and warps per multiprocessor for a launch of ``block`` threads.

    Parameters
    ----------
    registers : int, per thread (ptxas)
    shared_bytes : int, static plus dynamic shared memory per block
    block : int, threads per block
    arch : Arch

    Returns
    -------
    dict with ``blocks_per_sm``, ``warps_per_sm``, ``occupancy`` (warps / max warps, 0 if the block cannot
    run), ``limited_by`` (``"registers"``, ``"shared memory"``, ``"warps"`` or ``"blocks"``) and ``launchable``
    (False when one block needs more registers or shared memory than a multiprocessor has).
    """
    warps = -(-block // 32)
    regs_per_warp = _ceil_to(max(registers, 1) * 32, arch.register_unit)
    smem = _ceil_to(shared_bytes, arch.shared_unit) + arch.shared_reserved
    limits = {
        "warps": arch.max_warps // warps,
        "blocks": arch.max_blocks,
        "registers": (arch.registers // regs_per_warp) // warps,
        "shared memory": arch.shared_bytes // smem,
    }
    launchable = (registers <= arch.max_registers_per_thread and regs_per_warp * warps <= arch.registers
                  and shared_bytes <= arch.max_shared_per_block)
    blocks = min(limits.values()) if launchable else 0
    limited_by = min(limits, key=lambda k: (limits[k], ["warps", "blocks", "registers", "shared memory"].index(k)))
    return {"blocks_per_sm": int(blocks), "warps_per_sm": int(blocks * warps),
            "occupancy": blocks * warps / arch.max_warps, "limited_by": limited_by, "launchable": bool(launchable)}
