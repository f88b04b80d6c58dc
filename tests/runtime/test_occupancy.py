"""Occupancy arithmetic against hand-computed cases with explicit device limits."""
from __future__ import annotations

import pytest

from hfuse.runtime.device import DeviceLimits
from hfuse.runtime.occupancy import blocks_by_registers, occupancy, smem_per_block

# Volta (V100) numbers, written out: 64K registers, 96 KB shared memory, 2048 threads.
VOLTA = DeviceLimits(
    name="volta-like", compute_capability=(7, 0), sm_count=80, regs_per_sm=65536, regs_per_block=65536,
    max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=98304, smem_per_block_optin=98304,
    reserved_smem_per_block=0,
)
# H100 SXM numbers, written out: 228 KB shared per SM, 227 KB opt-in per block, 1 KB reserved.
H100 = DeviceLimits(
    name="h100-like", compute_capability=(9, 0), sm_count=132, regs_per_sm=65536, regs_per_block=65536,
    max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=233472, smem_per_block_optin=232448,
    reserved_smem_per_block=1024, l2_bytes=50 * 1024 * 1024,
)


def test_register_bound_exact():
    # 32 regs * 32 lanes = 1024 regs/warp; 16384 regs per sub-partition -> 16 warps each,
    # 64 warps per SM, 8 warps per block -> 8 blocks; threads also allow 8 (tie -> registers).
    occ = occupancy(VOLTA, regs_per_thread=32, block_threads=256)
    assert occ.blocks_per_sm == 8
    assert occ.limited_by == "registers"
    assert occ.occupancy == 1.0


def test_register_granularity_matters():
    # 33 regs: 1056 regs/warp rounds up to 1280; 16384 // 1280 = 12 warps per partition,
    # 48 per SM, 6 blocks of 8 warps. (Without the rounding: 65536 // (33*256) = 7.)
    assert blocks_by_registers(VOLTA, 33, 256) == 6
    occ = occupancy(VOLTA, 33, 256)
    assert (occ.blocks_per_sm, occ.limited_by, occ.occupancy) == (6, "registers", 0.75)


def test_shared_memory_bound_with_volta_granularity():
    # 20000 B rounds up to 256 B units: 20224 B; 98304 // 20224 = 4 blocks.
    assert smem_per_block(VOLTA, 20000) == 20224
    occ = occupancy(VOLTA, regs_per_thread=16, block_threads=256, static_smem=20000)
    assert (occ.blocks_per_sm, occ.limited_by) == (4, "shared_memory")
    assert occ.occupancy == 0.5


def test_thread_bound():
    occ = occupancy(VOLTA, regs_per_thread=16, block_threads=512)
    assert (occ.blocks_per_sm, occ.limited_by, occ.occupancy) == (4, "threads", 1.0)


def test_h100_reserved_shared_memory():
    # 48 KiB dynamic + 1 KiB reserved = 50176 B (a multiple of 128); 233472 // 50176 = 4.
    assert smem_per_block(H100, 0, 49152) == 50176
    occ = occupancy(H100, regs_per_thread=32, block_threads=256, dynamic_smem=49152)
    assert (occ.blocks_per_sm, occ.limited_by, occ.occupancy) == (4, "shared_memory", 0.5)


def test_h100_small_blocks_hit_warp_slots():
    # 128 threads, 16 regs: registers allow 32 blocks, shared memory (1 KiB reserved) 228,
    # the block limit 32, warp slots 64 / 4 = 16.
    occ = occupancy(H100, regs_per_thread=16, block_threads=128)
    assert (occ.blocks_per_sm, occ.limited_by) == (16, "threads")
    assert occ.by_registers == 32 and occ.by_shared_memory == 228 and occ.by_blocks == 32


def test_block_limit():
    # 32 threads, 16 regs: warp slots allow 64 blocks, the SM's block limit is 32.
    occ = occupancy(H100, regs_per_thread=16, block_threads=32)
    assert (occ.blocks_per_sm, occ.limited_by) == (32, "blocks")
    assert occ.occupancy == 0.5


def test_does_not_fit():
    # 255 regs -> 8192 regs/warp; 32 warps need 262144 > 65536 per block.
    assert occupancy(H100, regs_per_thread=255, block_threads=1024).blocks_per_sm == 0
    # 64 regs at 1024 threads exactly fits one block.
    assert occupancy(H100, regs_per_thread=64, block_threads=1024).blocks_per_sm == 1
    # More shared memory than a block may opt in to.
    assert occupancy(H100, 32, 256, dynamic_smem=232449).blocks_per_sm == 0


@pytest.mark.parametrize("regs,expected", [(16, 32), (24, 21), (40, 12), (64, 8), (128, 4)])
def test_register_table_h100(regs, expected):
    # 128 threads = 4 warps. regs*32 rounded up to 256 per warp; 16384 registers per
    # sub-partition hold floor(16384 / that) warps; 4 sub-partitions; 4 warps per block.
    # 24 regs: 768/warp -> 21 warps per partition -> 84 warps -> 21 blocks.
    assert blocks_by_registers(H100, regs, 128) == expected
    assert occupancy(H100, regs, 128).blocks_per_sm == min(expected, 16)
