"""Which fusions the tuner tries: thread-space partitions x register caps, plus references.

For N kernels (2 is the common case, nothing here assumes it):

- a fused block of ``d0`` threads (default: the sum of the original block sizes, at
  most 1024); fixed kernels keep their block, tunable kernels share the rest in steps of
  ``granularity`` (paper: d1 = 128, 256, ... while d1 < d0); a tunable 2-D/3-D block
  keeps its x and z extents and varies y so its thread count hits its share;
- each partition without a cap and with the paper's cap b0 (and, optionally, b0 +- 1);
- ``naive``: the even split, no cap (the paper's "without profiling" variant; for fixed
  kernels it is their own blocks), and ``vertical`` fusion, as reference points;
- ``refine_around``: warp-granular partitions next to a winner;
- ``balance_grids``: grid sizes for grid-free kernels so the parts finish together.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from ..errors import HFuseError
from ..runtime.device import DeviceLimits
from ..spec import Dim3, KernelSpec
from ..layouts import DYNAMIC, HORIZONTAL, INTERBLOCK, INTERLEAVED, VERTICAL, Dynamic, Layout, layout_of
from ..partition import fused_block_threads, padded
from ..runtime.occupancy import blocks_by_threads, smem_per_block
from ..registers import RegisterCap, RegisterPolicy, WarpgroupRegisters, register_policy_from_dict
from .regcap import neighbour_caps, paper_cap, warpgroup_budgets

MAX_BLOCK = 1024
WARP = 32


@dataclass(frozen=True)
class Candidate:
    """One fused kernel to build and measure."""

    blocks: tuple[Dim3, ...]
    """Block shape of each kernel inside the fused block (its partition)."""
    register_cap: RegisterPolicy | None = None
    layout: Layout = HORIZONTAL
    grids: tuple[Dim3 | None, ...] | None = None
    """Per-kernel grid override (grid-free kernels only); None keeps each launch's grid."""
    label: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(Dim3.of(b) for b in self.blocks))
        if self.grids is not None:
            object.__setattr__(self, "grids", tuple(None if g is None else Dim3.of(g) for g in self.grids))
        if not self.label:
            object.__setattr__(self, "label", default_label(self))

    @property
    def fused_threads(self) -> int:
        # a 120-thread block occupies 128
        return fused_block_threads([padded(b.size) for b in self.blocks], self.layout.placement)

    @property
    def key(self) -> tuple:
        """Identity for deduplication (the label is not part of it)."""
        return (self.blocks, self.register_cap, self.layout, self.grids)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "layout": self.layout.spec,
            "blocks": [list(b.as_tuple()) for b in self.blocks],
            "register_cap": self.register_cap.to_dict() if self.register_cap else None,
            "grids": None if self.grids is None else [None if g is None else list(g.as_tuple()) for g in self.grids],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Candidate":
        grids = data.get("grids")
        return cls(
            blocks=tuple(Dim3.of(b) for b in data["blocks"]),
            register_cap=register_policy_from_dict(data.get("register_cap")),
            layout=layout_of(data.get("layout", data.get("strategy", "horizontal"))),  # "strategy": older plans
            grids=None if grids is None else tuple(None if g is None else Dim3.of(g) for g in grids),
            label=data.get("label", ""),
        )


def default_label(c: Candidate) -> str:
    if c.layout != HORIZONTAL:
        text = c.layout.spec
    else:
        text = "hfuse " + "+".join(str(b) for b in c.blocks)
    if c.register_cap is not None:
        text += f" cap={c.register_cap.label}"
    if c.grids is not None and any(g is not None for g in c.grids):
        text += " grid=" + ",".join("-" if g is None else str(g) for g in c.grids)
    return text


def shape_for(block: Dim3, threads: int) -> Dim3 | None:
    """``block`` resized to ``threads`` threads: x for 1-D blocks, else y (x, z kept)."""
    if block.rank == 1:
        return Dim3(threads)
    plane = block.x * block.z
    if threads % plane:
        return None
    return Dim3(block.x, threads // plane, block.z)


def _fused_size(specs: Sequence[KernelSpec], fused_threads: int | None) -> int:
    d0 = fused_threads if fused_threads is not None else sum(padded(s.block.size) for s in specs)
    if d0 > MAX_BLOCK:
        raise HFuseError(
            f"a fused block of {d0} threads exceeds CUDA's {MAX_BLOCK}",
            hint="give a smaller fused block size or smaller blocks for the tunable kernels",
        )
    if d0 % WARP:
        raise HFuseError(f"the fused block size {d0} is not a multiple of {WARP} (warps cannot be split)")
    return d0


def _compositions(total: int, parts: int, step: int) -> list[tuple[int, ...]]:
    """Ways to write ``total`` as ``parts`` sizes: all but the last multiples of ``step``,
    the last one the rest (a positive warp multiple)."""
    if parts == 1:
        return [(total,)] if total >= WARP and total % WARP == 0 else []
    out = []
    for d in range(step, total, step):
        for rest in _compositions(total - d, parts - 1, step):
            out.append((d, *rest))
    return out


def partitions(
    specs: Sequence[KernelSpec], *, fused_threads: int | None = None, granularity: int = 128
) -> list[tuple[Dim3, ...]]:
    """Every partition of the fused block: fixed kernels keep their blocks."""
    if granularity % WARP or granularity <= 0:
        raise HFuseError(f"partition granularity {granularity} is not a positive multiple of {WARP}")
    d0 = _fused_size(specs, fused_threads)
    tunable = [i for i, s in enumerate(specs) if s.tunable]
    fixed_threads = sum(padded(s.block.size) for s in specs if not s.tunable)
    if not tunable:
        return [tuple(s.block for s in specs)] if fixed_threads == d0 else []
    result = []
    for sizes in _compositions(d0 - fixed_threads, len(tunable), granularity):
        blocks = [s.block for s in specs]
        for i, size in zip(tunable, sizes):
            shape = shape_for(specs[i].block, size)
            if shape is None:
                break
            blocks[i] = shape
        else:
            result.append(tuple(blocks))
    return result


def even_split(specs: Sequence[KernelSpec], *, fused_threads: int | None = None) -> tuple[Dim3, ...] | None:
    """The naive partition: tunable kernels share the rest equally (in warps)."""
    d0 = _fused_size(specs, fused_threads)
    tunable = [i for i, s in enumerate(specs) if s.tunable]
    rest = d0 - sum(padded(s.block.size) for s in specs if not s.tunable)
    blocks = [s.block for s in specs]
    if not tunable:
        return tuple(blocks) if rest == 0 else None
    share = (rest // len(tunable)) // WARP * WARP
    for k, i in enumerate(tunable):
        size = share if k < len(tunable) - 1 else rest - share * (len(tunable) - 1)
        shape = shape_for(specs[i].block, size) if size >= WARP else None
        if shape is None:
            return None
        blocks[i] = shape
    return tuple(blocks)


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
    naive: bool = True,
    vertical: bool = True,
    interblock: bool = True,
    warpgroup_registers: bool = False,
) -> list[Candidate]:
    """All candidates for fusing ``specs``, references first, deduplicated.

    Caps need ``limits`` and ``kernel_registers`` (registers of each original kernel,
    NRegs(S_i)); without them only uncapped candidates are made. ``fused_smem`` is the
    fused block's shared memory in bytes, or a function of the partition.
    """
    if len(specs) < 2:
        raise HFuseError("fusion needs at least two kernels")
    if kernel_registers is not None and len(kernel_registers) != len(specs):
        raise ValueError("kernel_registers needs one entry per kernel")
    smem_of = fused_smem if callable(fused_smem) else (lambda _b, v=int(fused_smem): v)
    out: list[Candidate] = []
    if naive and (split := even_split(specs, fused_threads=fused_threads)) is not None:
        out.append(Candidate(split, label="naive"))
    for blocks in partitions(specs, fused_threads=fused_threads, granularity=granularity):
        out.append(Candidate(blocks))
        if caps and limits is not None and kernel_registers is not None:
            for cap in _caps_for(blocks, limits, kernel_registers, smem_of(blocks), neighbours):
                out.append(Candidate(blocks, register_cap=cap))
        if warpgroup_registers and limits is not None and kernel_registers is not None:
            for policy in _budgets_for(blocks, limits, kernel_registers, smem_of(blocks)):
                out.append(Candidate(blocks, register_cap=policy))
    own = tuple(s.block for s in specs)
    if vertical:
        out.append(Candidate(own, layout=VERTICAL))
    if interblock:  # each part's blocks with its own shape: block ranges, taking turns, chosen per SM
        out.append(Candidate(own, layout=INTERBLOCK))
        out.append(Candidate(own, layout=INTERLEAVED))
        out += [Candidate(own, layout=layout) for layout in dispatch_ratios(len(specs))]
    return dedupe(out)


def dispatch_ratios(kernels: int) -> list[Dynamic]:
    """The SM-aware dispatch ratios tried: one block each, and for two kernels 2:1 and 1:2
    (a heavier part's blocks take longer, so equal starts are not equal shares of an SM)."""
    ratios = [DYNAMIC]
    if kernels == 2:
        ratios += [Dynamic((2, 1)), Dynamic((1, 2))]
    return ratios


def refine_around(
    best: Candidate, specs: Sequence[KernelSpec], *, granularity: int = 32, radius: int = 1
) -> list[Candidate]:
    """Partitions next to ``best``: ``granularity`` threads (up to ``radius`` steps) moved
    from one tunable kernel to another; cap and grids kept. ``best`` is not included."""
    if best.layout != HORIZONTAL or isinstance(best.register_cap, WarpgroupRegisters):
        return []  # moving a warp would break the warpgroups the budgets are set for
    tunable = [i for i, s in enumerate(specs) if s.tunable]
    out = []
    for i in tunable:
        for j in tunable:
            if i == j:
                continue
            for step in range(1, radius + 1):
                moved = step * granularity
                sizes = [b.size for b in best.blocks]
                sizes[i] += moved
                sizes[j] -= moved
                if sizes[j] < WARP or sizes[j] % WARP or sizes[i] % WARP:
                    continue
                shapes = [shape_for(specs[k].block, sizes[k]) if k in (i, j) else best.blocks[k]
                          for k in range(len(specs))]
                if any(s is None for s in shapes):
                    continue
                out.append(replace(best, blocks=tuple(shapes), label=""))
    return [c for c in dedupe(out) if c.key != best.key]


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
    return replace(candidate, grids=tuple(grids), label="")
