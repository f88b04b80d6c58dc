"""Which fusions the tuner tries, as labelled ``Fusion`` values.

For N kernels (2 is the common case, nothing here assumes it), every layout of the
registry proposes its own (``Layout.propose``): horizontal fusion its partitions and the
even split, the others every kernel at its own block (SM-aware dispatch at a few ratios).
Proposals that ask for it are also tried under register policies: the paper's cap b0 (and,
optionally, b0 +- 1) and, on Hopper, per-part budgets. Around a winner: its layout's
neighbours (``refine_around``) and, where parts share a block, grids sized so the parts
finish together (``balance_grids``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from ..errors import HFuseError
from ..fusion import Fusion
from ..layouts import LAYOUTS, Layout
from ..partition import padded
from ..registers import RegisterCap, RegisterPolicy, WarpgroupRegisters
from ..runtime.device import DeviceLimits
from ..runtime.occupancy import blocks_by_threads, smem_per_block
from ..spec import Dim3, KernelSpec
from .regcap import neighbour_caps, paper_cap, warpgroup_budgets

SEARCHED: tuple[Layout, ...] = tuple(LAYOUTS.values())
"""The layouts the tuner searches, in the registry's order (references first)."""


@dataclass(frozen=True)
class Candidate:
    """A fusion the tuner measures, under its label."""

    fusion: Fusion
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.fusion.describe())

    @property
    def blocks(self) -> tuple[Dim3, ...]:
        return self.fusion.blocks

    @property
    def layout(self) -> Layout:
        return self.fusion.layout

    @property
    def register_cap(self) -> RegisterPolicy | None:
        return self.fusion.registers

    @property
    def grids(self) -> tuple[Dim3 | None, ...] | None:
        return self.fusion.grids

    @property
    def fused_threads(self) -> int:
        return self.fusion.fused_threads

    @property
    def key(self) -> Fusion:
        """Identity for deduplication (the label is not part of it)."""
        return self.fusion

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, **self.fusion.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Candidate":
        return cls(Fusion.from_dict(data), data.get("label", ""))


def dedupe(candidates: Sequence[Candidate]) -> list[Candidate]:
    """First occurrence wins (so reference points named first keep their names)."""
    seen: set[tuple] = set()
    out = []
    for c in candidates:
        if c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out


def _caps_for(
    blocks: tuple[Dim3, ...],
    limits: DeviceLimits,
    kernel_registers: Sequence[int],
    smem: int,
    neighbours: bool,
) -> list[RegisterCap]:
    sizes = [b.size for b in blocks]
    fused = sum(padded(s) for s in sizes)
    proposal = paper_cap(limits, sizes, kernel_registers, smem, fused)
    if proposal is None:
        return []
    caps = [proposal.cap]
    if neighbours:
        caps += neighbour_caps(limits, proposal, fused, smem)
    return caps


def _budgets_for(blocks: tuple[Dim3, ...], limits: DeviceLimits, kernel_registers: Sequence[int],
                 smem: int) -> list[WarpgroupRegisters]:
    """Per-part budgets (``setmaxnreg``, Hopper's sm_90a only) at block counts an SM can hold."""
    if limits.compute_capability != (9, 0):
        return []
    sizes = [padded(b.size) for b in blocks]
    fused = sum(sizes)
    most = min(blocks_by_threads(limits, fused), limits.max_blocks_per_sm)
    if smem > 0:
        most = min(most, limits.smem_per_sm // smem_per_block(limits, smem))
    return [p for p in warpgroup_budgets(sizes, kernel_registers, limits.regs_per_sm) if p.min_blocks <= most]


def enumerate_candidates(
    specs: Sequence[KernelSpec],
    *,
    limits: DeviceLimits | None = None,
    kernel_registers: Sequence[int] | None = None,
    fused_smem: int | Callable[[tuple[Dim3, ...]], int] = 0,
    fused_threads: int | None = None,
    granularity: int = 128,
    caps: bool = True,
    neighbours: bool = False,
    warpgroup_registers: bool = False,
    layouts: Sequence[Layout] = SEARCHED,
) -> list[Candidate]:
    """The first candidates for fusing ``specs``: each layout's proposals, references first,
    deduplicated.

    Caps need ``limits`` and ``kernel_registers`` (registers of each original kernel,
    NRegs(S_i)); without them only uncapped candidates are made. ``fused_smem`` is the
    fused block's shared memory in bytes, or a function of the partition.
    """
    if len(specs) < 2:
        raise HFuseError("fusion needs at least two kernels")
    if kernel_registers is not None and len(kernel_registers) != len(specs):
        raise ValueError("kernel_registers needs one entry per kernel")
    smem_of = fused_smem if callable(fused_smem) else (lambda _b, v=int(fused_smem): v)
    known = limits is not None and kernel_registers is not None
    out: list[Candidate] = []
    for layout in layouts:
        for proposal in layout.propose(specs, fused_threads=fused_threads, granularity=granularity):
            out.append(Candidate(Fusion(proposal.blocks, proposal.layout), proposal.label))
            if known and (resident := resident_cap(proposal, limits, kernel_registers)) is not None:
                out.append(Candidate(Fusion(proposal.blocks, proposal.layout, resident)))
            if not (proposal.registers and known):
                continue
            blocks = proposal.blocks
            policies: list = []
            if caps:
                policies += _caps_for(blocks, limits, kernel_registers, smem_of(blocks), neighbours)
            if warpgroup_registers:
                policies += _budgets_for(blocks, limits, kernel_registers, smem_of(blocks))
            out += [Candidate(Fusion(blocks, proposal.layout, policy)) for policy in policies]
    return dedupe(out)


def resident_cap(proposal: Any, limits: DeviceLimits, kernel_registers: Sequence[int]) -> RegisterCap | None:
    """For a persistent layout whose blocks per SM the hungriest part's registers would not
    let stay resident together, the cap that makes them fit (``__launch_bounds__(D, B)``),
    when it leaves a thread at least 32 registers; None otherwise."""
    wanted = proposal.layout.blocks_per_sm(len(proposal.blocks))
    if wanted is None:
        return None
    threads = Fusion(proposal.blocks, proposal.layout).fused_threads
    if max(kernel_registers) * threads * wanted <= limits.regs_per_sm or limits.regs_per_sm // (threads * wanted) < 32:
        return None
    return RegisterCap(min_blocks=wanted)


def refine_around(best: Candidate, specs: Sequence[KernelSpec], *, granularity: int = 32,
                  radius: int = 1) -> list[Candidate]:
    """``best``'s layout's neighbours of its blocks, register policy and grids kept."""
    near = best.layout.neighbours(best.blocks, best.register_cap, specs, granularity=granularity, radius=radius)
    return [c for c in dedupe(Candidate(replace(best.fusion, blocks=b)) for b in near) if c.key != best.key]


def balance_grids(
    times_ms: Sequence[float],
    grids: Sequence[Dim3],
    blocks_fused: Sequence[Dim3],
    grid_free: Sequence[bool],
) -> tuple[Dim3 | None, ...]:
    """Grid sizes for grid-free kernels so the parts of each fused block finish together.

    A fused block lives until its slowest part is done, so every part should get the
    same amount of time's worth of work per block. Model (documented assumptions):

    - kernel i's total work is proportional to ``times_ms[i]``, its time alone (each
      kernel alone filled the GPU, so its time measures its work);
    - a grid-stride kernel spreads that work evenly over the blocks it is given, and a
      part's speed inside a fused block is proportional to its thread count d_i (the
      premise of fusing latency-bound kernels).

    Then part i needs ``t_i ~ T_i / (G_i * d_i)`` per block, and equal t_i means
    ``G_i ~ T_i / d_i``. Kernels whose grid is fixed keep it and set the pace (the
    slowest of them); with no fixed kernel, the heaviest part keeps the largest original
    grid. Grid-free kernels get ``G_i = round(T_i / (d_i * pace))`` blocks in x (at least
    1; y and z kept). Example (the H100 case in the design notes): a fixed kernel with 100
    blocks and a grid-stride kernel with 670, both 2 ms alone, 256 threads each: the
    grid-stride kernel gets 100 blocks, so no fused block runs half empty. Returns None
    for kernels whose grid stays. The tuner measures the proposal like any candidate.
    """
    n = len(times_ms)
    if not (len(grids) == len(blocks_fused) == len(grid_free) == n):
        raise ValueError("balance_grids needs one entry per kernel in every argument")
    if not any(grid_free):
        return tuple(None for _ in range(n))
    per_thread = [t / f.size for t, f in zip(times_ms, blocks_fused)]  # T_i / d_i
    fixed = [i for i in range(n) if not grid_free[i]]
    if fixed:
        pace = max(per_thread[i] / grids[i].size for i in fixed)
    else:
        pace = max(per_thread) / max(g.size for g in grids)
    out: list[Dim3 | None] = []
    for i in range(n):
        if not grid_free[i]:
            out.append(None)
            continue
        plane = grids[i].y * grids[i].z
        total = max(1, round(per_thread[i] / pace)) if pace > 0 else grids[i].size
        out.append(Dim3(max(1, math.ceil(total / plane)), grids[i].y, grids[i].z))
    return tuple(out)


def with_grids(candidate: Candidate, grids: Sequence[Dim3 | None]) -> Candidate:
    """``candidate`` with per-kernel grid overrides (label recomputed)."""
    return Candidate(replace(candidate.fusion, grids=tuple(grids)))
