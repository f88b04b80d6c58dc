"""The paper's register cap (Algorithm 2 lines 13-16) on worked examples.

Limits are Pascal/Volta's, written out: 64K registers, 96 KB shared memory and 2048
threads per SM (no reserved shared memory before sm_80)."""
from __future__ import annotations

import pytest

from hfuse.runtime.device import DeviceLimits
from hfuse.registers import RegisterCap
from hfuse.tuning.regcap import neighbour_caps, paper_cap

VOLTA = DeviceLimits(
    name="volta-like", compute_capability=(7, 0), sm_count=80, regs_per_sm=65536, regs_per_block=65536,
    max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=98304, smem_per_block_optin=98304,
)


def test_two_256_thread_kernels_at_32_and_64_registers():
    # b1 = 65536 / (256*32) = 8, b2 = 65536 / (256*64) = 4, threads 2048/512 = 4
    # -> b0 = 4 (registers and threads tie), r0 = 65536 / (4*512) = 32.
    p = paper_cap(VOLTA, [256, 256], [32, 64])
    assert p.per_kernel_blocks == (8, 4)
    assert (p.blocks, p.registers) == (4, 32)
    assert p.cap == RegisterCap(min_blocks=4) and p.cap.label == "b4"
    assert p.register_cap == RegisterCap(max_registers=32)


def test_register_limited():
    # D = 256: b1 = 65536/(128*64) = 8, b2 = 65536/(128*128) = 4, threads 2048/256 = 8
    # -> b0 = 4 by registers; r0 = 65536/(4*256) = 64.
    p = paper_cap(VOLTA, [128, 128], [64, 128])
    assert (p.blocks, p.registers, p.limited_by) == (4, 64, "registers")


def test_thread_limited():
    # b1 = b2 = 65536/(256*16) = 16, threads 2048/512 = 4 -> b0 = 4, r0 = 32.
    p = paper_cap(VOLTA, [256, 256], [16, 16])
    assert (p.blocks, p.registers, p.limited_by) == (4, 32, "threads")


def test_shared_memory_limited():
    # 48 KB per fused block: 98304 / 49152 = 2 -> b0 = 2, r0 = 65536/(2*512) = 64.
    p = paper_cap(VOLTA, [256, 256], [16, 16], fused_smem=49152)
    assert (p.blocks, p.registers, p.limited_by) == (2, 64, "shared_memory")


def test_one_block_is_no_cap():
    # b1 = 65536/(512*128) = 1: a cap of one block per SM would only raise registers.
    assert paper_cap(VOLTA, [512, 512], [128, 128]) is None


def test_three_kernels():
    # b = 65536/(128*32)=16, 65536/(128*64)=8, 65536/(256*40)=6; threads 2048/512=4 -> 4.
    p = paper_cap(VOLTA, [128, 128, 256], [32, 64, 40])
    assert p.per_kernel_blocks == (16, 8, 6) and p.blocks == 4 and p.registers == 32


def test_neighbours_are_bounded():
    p = paper_cap(VOLTA, [256, 256], [32, 64])
    # b0 = 4: b3 is fine (r = 42); b5 would need more warp slots than the SM has.
    assert neighbour_caps(VOLTA, p, 512) == [RegisterCap(min_blocks=3)]
    p2 = paper_cap(VOLTA, [128, 128], [64, 128])  # b0 = 4 at D = 256
    assert neighbour_caps(VOLTA, p2, 256) == [RegisterCap(min_blocks=3), RegisterCap(min_blocks=5)]
    p3 = paper_cap(VOLTA, [256, 256], [16, 16], fused_smem=49152)  # b0 = 2
    assert neighbour_caps(VOLTA, p3, 512, fused_smem=49152) == []  # b1 is no cap, b3 does not fit


def test_register_cap_forms():
    assert RegisterCap(min_blocks=2).attribute(512) == "__launch_bounds__(512, 2)"
    # nvcc refuses __maxnreg__ together with __launch_bounds__ on one kernel.
    assert RegisterCap(max_registers=64).attribute(512) == "__maxnreg__(64)"
    assert RegisterCap(max_registers=64).label == "r64"
    assert RegisterCap.from_dict(RegisterCap(min_blocks=3).to_dict()) == RegisterCap(min_blocks=3)
    assert RegisterCap.from_dict(None) is None
    with pytest.raises(ValueError):
        RegisterCap()
    with pytest.raises(ValueError):
        RegisterCap(min_blocks=2, max_registers=64)
