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


SM90_REGISTERS = 65536
"""Registers of an SM, and the most one block may have (every architecture since sm_50)."""


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

    def violation(self, block_threads: int, regs_per_block: int = SM90_REGISTERS) -> str | None:
        """Why a block of ``block_threads`` cannot launch under this cap (None when it can).
        ``__launch_bounds__`` makes ptxas fit the block; ``__maxnreg__`` alone does not, and
        the driver then refuses the launch ("too many resources requested")."""
        if self.max_registers is None:
            return None
        per_warp = -(-self.max_registers // 8) * 8 * 32  # registers are allocated per warp, 8 per thread at a time
        needed = per_warp * -(-block_threads // 32)
        if needed <= regs_per_block:
            return None
        return (f"a block of {block_threads} threads at {self.max_registers} registers needs {needed:,} registers, "
                f"more than the {regs_per_block:,} a block may have")

    def to_dict(self) -> dict[str, Any]:
        return {"min_blocks": self.min_blocks, "max_registers": self.max_registers}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "RegisterCap | None":
        if not data:
            return None
        if not isinstance(data, dict) or set(data) - {"min_blocks", "max_registers"}:
            raise ValueError("a register cap is a mapping with one of min_blocks or max_registers, e.g. {min_blocks: 2}")
        return cls(min_blocks=data.get("min_blocks"), max_registers=data.get("max_registers"))


WARPGROUP = 128
"""Threads that execute ``setmaxnreg`` together (four warps)."""


def entry_registers(block_threads: int, min_blocks: int, regs_per_sm: int = SM90_REGISTERS) -> int:
    """The registers per thread a kernel has on entry under ``__launch_bounds__(block_threads,
    min_blocks)``: the SM's share per thread, at most 255, rounded down to a multiple of 8
    (``__launch_bounds__(384, 1)`` gives 168)."""
    return min(255, regs_per_sm // (min_blocks * block_threads)) // 8 * 8


@dataclass(frozen=True)
class WarpgroupRegisters:
    """Per-part register budgets on Hopper (sm_90a): each part's warpgroups set their own
    register count with ``setmaxnreg`` on entry, the latency-bound part raising it and the
    light part lowering it, in a block given ``min_blocks`` per SM.

    PTX's rules, which ``violation`` checks: the parts are whole warpgroups (multiples of
    128 threads, so each starts at a multiple of 128); budgets are 24..256 in multiples of
    8; the entry count must be known, which ``__launch_bounds__(d0, min_blocks)`` gives
    (ptxas otherwise ignores setmaxnreg with warning C7508); and the budgets may not add
    up to more than the block had on entry, or a ``.inc`` waits for ever for registers no
    warp frees."""

    min_blocks: int
    budgets: tuple[int, ...]
    """Registers per thread of each part, in part order."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "budgets", tuple(int(b) for b in self.budgets))
        if self.min_blocks < 1:
            raise ValueError(f"WarpgroupRegisters(min_blocks={self.min_blocks}) must be at least 1")
        bad = [b for b in self.budgets if not (24 <= b <= 256 and b % 8 == 0)]
        if bad:
            raise ValueError(f"setmaxnreg counts must be 24..256 in multiples of 8, not {bad}")

    @property
    def label(self) -> str:
        return "wg" + "/".join(str(b) for b in self.budgets) + f"@b{self.min_blocks}"

    def attribute(self, block_threads: int) -> str:
        return f"__launch_bounds__({block_threads}, {self.min_blocks})"

    def entry(self, block_threads: int, regs_per_sm: int = SM90_REGISTERS) -> int:
        return entry_registers(block_threads, self.min_blocks, regs_per_sm)

    def violation(self, part_sizes: Sequence[int], regs_per_sm: int = SM90_REGISTERS) -> str | None:
        """Why these budgets cannot apply to parts of these sizes (None when they can)."""
        if len(part_sizes) != len(self.budgets):
            return f"{len(self.budgets)} budgets for {len(part_sizes)} parts"
        if any(size % WARPGROUP for size in part_sizes):
            return f"parts of {list(part_sizes)} threads are not whole warpgroups (multiples of {WARPGROUP})"
        block = sum(part_sizes)
        entry = self.entry(block, regs_per_sm)
        if entry < 24:
            return f"{self.min_blocks} blocks of {block} threads leave {entry} registers per thread on entry"
        used = sum(size // WARPGROUP * b for size, b in zip(part_sizes, self.budgets))
        have = block // WARPGROUP * entry
        if used > have:
            return (f"the budgets need {used * WARPGROUP} registers per block but {self.min_blocks} blocks of "
                    f"{block} threads have {have * WARPGROUP} (a .inc would wait for ever)")
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"min_blocks": self.min_blocks, "budgets": list(self.budgets)}


RegisterPolicy = RegisterCap | WarpgroupRegisters
"""How a fused kernel's registers are bounded: one cap for every thread, or a budget per part."""


def register_policy_from_dict(data: dict[str, Any] | None) -> RegisterPolicy | None:
    if isinstance(data, dict) and "budgets" in data:
        return WarpgroupRegisters(min_blocks=int(data["min_blocks"]), budgets=tuple(data["budgets"]))
    return RegisterCap.from_dict(data)


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
