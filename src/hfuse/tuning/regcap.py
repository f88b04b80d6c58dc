"""The register cap of the paper (Algorithm 2, lines 13-16), its neighbours, and per-part
budgets worth trying: which register policies (``hfuse/registers.py``) the tuner tries.

A fused kernel holds, for every thread, the registers of its hungriest part, which can
cut the blocks per SM below what the original kernels reached. The paper asks ptxas for
as many blocks as the originals had:

    b_i = SMNRegs / (d_i * NRegs(K_i))           (blocks kernel i reaches at d_i threads)
    b0  = min(b_1..b_n, SMShMem / ShMem(F), SMNThreads / d0)
    r0  = SMNRegs / (b0 * d0)

(integer floors throughout). We express the cap as ``__launch_bounds__(d0, b0)``, which
lets ptxas apply its own allocation granularity, and also report ``r0`` for the
``__maxnreg__`` form. ``min_blocks=1`` is never produced: it is not "no cap" but a
licence to use up to 255 registers (seen: 148 instead of 52).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..runtime.device import DeviceLimits
from ..registers import SM90_REGISTERS, WARPGROUP, RegisterCap, WarpgroupRegisters, entry_registers
from ..runtime.occupancy import blocks_by_threads, smem_per_block


def warpgroup_budgets(part_sizes: Sequence[int], part_registers: Sequence[int],
                      regs_per_sm: int = SM90_REGISTERS, most_blocks: int = 4) -> list[WarpgroupRegisters]:
    """Budgets worth trying: at each ``min_blocks``, the part that needs the most registers
    keeps what its original kernel used (rounded up to 8) where the uniform entry count
    would cut it, and the other parts share what is left. None when the parts are not
    whole warpgroups, or nothing is left for the others."""
    if len(part_sizes) < 2 or any(s % WARPGROUP for s in part_sizes):
        return []
    block = sum(part_sizes)
    need = [min(256, max(24, -(-r // 8) * 8)) for r in part_registers]
    heavy = max(range(len(need)), key=lambda i: need[i])
    out = []
    for blocks in range(1, most_blocks + 1):
        entry = entry_registers(block, blocks, regs_per_sm)
        if entry < 24 or need[heavy] <= entry:
            continue  # the uniform count already holds the heaviest part
        left = block // WARPGROUP * entry - part_sizes[heavy] // WARPGROUP * need[heavy]
        others = sum(s // WARPGROUP for i, s in enumerate(part_sizes) if i != heavy)
        share = min(256, left // others // 8 * 8)
        if share < 24:
            continue
        policy = WarpgroupRegisters(blocks, tuple(need[heavy] if i == heavy else share for i in range(len(need))))
        if policy.violation(part_sizes, regs_per_sm) is None:
            out.append(policy)
    return out


@dataclass(frozen=True)
class CapProposal:
    """The paper's cap for one partition, with how it was reached."""

    cap: RegisterCap
    """``RegisterCap(min_blocks=b0)``."""
    blocks: int
    """b0."""
    registers: int
    """r0 = SMNRegs / (b0 * d0), at most the per-thread maximum."""
    limited_by: str
    """'registers' (b_i of kernel ``kernel``), 'shared_memory' or 'threads'."""
    per_kernel_blocks: tuple[int, ...] = field(default=())
    """b_1..b_n."""

    @property
    def register_cap(self) -> RegisterCap:
        """The same bound as ``__maxnreg__(r0)``."""
        return RegisterCap(max_registers=max(16, self.registers))


def paper_cap(
    limits: DeviceLimits,
    part_threads: Sequence[int],
    part_registers: Sequence[int],
    fused_smem: int = 0,
    fused_threads: int | None = None,
) -> CapProposal | None:
    """Algorithm 2 lines 13-16 for n kernels.

    ``part_threads`` are the d_i of the partition, ``part_registers`` the registers each
    original kernel uses (NRegs(S_i)), ``fused_smem`` the fused block's shared memory
    (static + dynamic). Returns None when the formula gives fewer than 2 blocks (a cap
    of one block per SM would raise, not lower, the registers).
    """
    if len(part_threads) != len(part_registers) or not part_threads:
        raise ValueError("paper_cap needs one register count per partition")
    d0 = fused_threads if fused_threads is not None else sum(part_threads)
    per_kernel = tuple(
        limits.regs_per_sm // (d * max(1, r)) for d, r in zip(part_threads, part_registers)
    )
    bounds = {"registers": min(per_kernel), "threads": limits.max_threads_per_sm // d0}
    if fused_smem > 0:
        # The paper divides by ShMem(F); we use the block's real footprint, which adds
        # the driver's reserved 1 KiB (sm_80+) and the allocation granularity.
        bounds["shared_memory"] = limits.smem_per_sm // smem_per_block(limits, fused_smem)
    limited_by = min(bounds, key=lambda k: bounds[k])
    b0 = min(bounds[limited_by], limits.max_blocks_per_sm)
    if b0 < 2:
        return None
    r0 = min(limits.max_regs_per_thread, limits.regs_per_sm // (b0 * d0))
    return CapProposal(
        cap=RegisterCap(min_blocks=b0),
        blocks=b0,
        registers=r0,
        limited_by=limited_by,
        per_kernel_blocks=per_kernel,
    )


def neighbour_caps(
    limits: DeviceLimits,
    proposal: CapProposal,
    fused_threads: int,
    fused_smem: int = 0,
    spread: int = 1,
) -> list[RegisterCap]:
    """Caps next to b0: b0-spread..b0+spread, without b0 itself.

    Bounded so each still means something: at least 2 blocks (1 is no cap), no more
    blocks than warp slots, the SM's block limit or shared memory allow (asking ptxas for
    blocks that cannot be resident only spills for nothing), and at least 16 registers.
    """
    most = min(blocks_by_threads(limits, fused_threads), limits.max_blocks_per_sm)
    if fused_smem > 0:
        most = min(most, limits.smem_per_sm // smem_per_block(limits, fused_smem))
    caps = []
    for b in range(proposal.blocks - spread, proposal.blocks + spread + 1):
        if b == proposal.blocks or b < 2 or b > most:
            continue
        if limits.regs_per_sm // (b * fused_threads) < 16:
            continue
        caps.append(RegisterCap(min_blocks=b))
    return caps
