"""The register cap of the paper (Algorithm 2, lines 13-16) and its neighbours.

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
from typing import Any, Sequence

from ..runtime.device import DeviceLimits
from ..runtime.occupancy import blocks_by_threads, smem_per_block


@dataclass(frozen=True)
class RegisterCap:
    """One of: at least ``min_blocks`` blocks per SM, or at most ``max_registers`` per thread."""

    min_blocks: int | None = None
    max_registers: int | None = None

    def __post_init__(self) -> None:
        for key in ("min_blocks", "max_registers"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"RegisterCap({key}={value!r}) must be an integer")
        if (self.min_blocks is None) == (self.max_registers is None):
            raise ValueError("RegisterCap needs exactly one of min_blocks and max_registers")
        if self.min_blocks is not None and self.min_blocks < 1:
            raise ValueError(f"RegisterCap(min_blocks={self.min_blocks}) must be at least 1")
        if self.max_registers is not None and not 16 <= self.max_registers <= 255:
            raise ValueError(f"RegisterCap(max_registers={self.max_registers}) must be within 16..255")

    @property
    def label(self) -> str:
        """Short text for tables and candidate labels: ``b4`` or ``r64``."""
        return f"b{self.min_blocks}" if self.min_blocks is not None else f"r{self.max_registers}"

    def attribute(self, block_threads: int) -> str:
        """The CUDA attribute text that applies this cap to a kernel of ``block_threads``."""
        if self.min_blocks is not None:
            return f"__launch_bounds__({block_threads}, {self.min_blocks})"
        return f"__maxnreg__({self.max_registers})"  # nvcc refuses it together with __launch_bounds__

    def to_dict(self) -> dict[str, Any]:
        return {"min_blocks": self.min_blocks, "max_registers": self.max_registers}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "RegisterCap | None":
        if not data:
            return None
        if not isinstance(data, dict) or set(data) - {"min_blocks", "max_registers"}:
            raise ValueError("a register cap is a mapping with one of min_blocks or max_registers, e.g. {min_blocks: 2}")
        return cls(min_blocks=data.get("min_blocks"), max_registers=data.get("max_registers"))


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
