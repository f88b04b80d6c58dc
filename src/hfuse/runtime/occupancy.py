"""Theoretical occupancy: how many blocks of a kernel fit on one SM, and why not more.

Pure arithmetic on a ``DeviceLimits`` (no GPU needed). It follows the allocation rules
of NVIDIA's occupancy calculator (cuda_occupancy.h), which are facts about the hardware:

- registers go to warps, ``regs * 32`` rounded up to 256 per warp, and the register file
  is split into 4 sub-partitions, each holding whole warps;
- shared memory per block is static + dynamic + the driver's reserved 1 KiB (sm_80+),
  rounded up to 128 bytes (256 before sm_80);
- warps per SM and blocks per SM are hard limits.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .device import DeviceLimits

_UNLIMITED = 1 << 30


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


def warps_per_block(limits: DeviceLimits, block_threads: int) -> int:
    return _ceil_div(block_threads, limits.warp_size)


def regs_per_warp(limits: DeviceLimits, regs_per_thread: int) -> int:
    """Registers one warp really holds (allocation granularity applied)."""
    return _round_up(regs_per_thread * limits.warp_size, limits.reg_alloc_unit)


def blocks_by_registers(limits: DeviceLimits, regs_per_thread: int, block_threads: int) -> int:
    if regs_per_thread <= 0:
        return _UNLIMITED
    if regs_per_thread > limits.max_regs_per_thread:
        return 0
    per_warp = regs_per_warp(limits, regs_per_thread)
    warps = warps_per_block(limits, block_threads)
    # The launch check assumes a block's warps are spread over all sub-partitions.
    if per_warp * _round_up(warps, limits.sub_partitions) > limits.regs_per_block:
        return 0
    warps_per_partition = (limits.regs_per_sm // limits.sub_partitions) // per_warp
    return (warps_per_partition * limits.sub_partitions) // warps


def smem_per_block(limits: DeviceLimits, static_smem: int, dynamic_smem: int = 0) -> int:
    """Shared memory one block really occupies (reserved part and granularity applied)."""
    total = static_smem + dynamic_smem + limits.reserved_smem_per_block
    return _round_up(total, limits.smem_alloc_unit)


def blocks_by_smem(limits: DeviceLimits, static_smem: int, dynamic_smem: int = 0) -> int:
    if static_smem + dynamic_smem <= 0 and limits.reserved_smem_per_block == 0:
        return _UNLIMITED
    footprint = smem_per_block(limits, static_smem, dynamic_smem)
    # A launch may use up to the opt-in maximum (the launcher opts in when it needs to).
    if footprint > limits.smem_per_block_optin + limits.reserved_smem_per_block:
        return 0
    return limits.smem_per_sm // footprint


def blocks_by_threads(limits: DeviceLimits, block_threads: int) -> int:
    if block_threads > limits.max_threads_per_block or block_threads < 1:
        return 0
    return limits.max_warps_per_sm // warps_per_block(limits, block_threads)


@dataclass(frozen=True)
class Occupancy:
    """Blocks per SM and which resource bounds them."""

    blocks_per_sm: int
    limited_by: str
    """'registers', 'shared_memory', 'threads' (warp slots) or 'blocks' (the SM's block limit)."""
    by_registers: int
    by_shared_memory: int
    by_threads: int
    by_blocks: int
    warps_per_sm: int
    occupancy: float
    """Theoretical occupancy: resident warps over the SM's maximum warps."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def occupancy(
    limits: DeviceLimits,
    regs_per_thread: int,
    block_threads: int,
    static_smem: int = 0,
    dynamic_smem: int = 0,
) -> Occupancy:
    bounds = {
        "registers": blocks_by_registers(limits, regs_per_thread, block_threads),
        "shared_memory": blocks_by_smem(limits, static_smem, dynamic_smem),
        "threads": blocks_by_threads(limits, block_threads),
        "blocks": limits.max_blocks_per_sm,
    }
    # Ties go to the first in this order: registers are what a cap can change.
    limited_by = min(bounds, key=lambda k: bounds[k])
    blocks = bounds[limited_by]
    warps = blocks * warps_per_block(limits, block_threads)
    return Occupancy(
        blocks_per_sm=blocks,
        limited_by=limited_by,
        by_registers=bounds["registers"],
        by_shared_memory=bounds["shared_memory"],
        by_threads=bounds["threads"],
        by_blocks=bounds["blocks"],
        warps_per_sm=warps,
        occupancy=warps / limits.max_warps_per_sm,
    )
