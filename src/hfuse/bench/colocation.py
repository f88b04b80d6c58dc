"""The fastest any co-location could run a pair, from each kernel's time as a function
of the SM resources it is given (issue 22's bound per pair).

``bound.resource_bound`` says what shared units allow (no co-location beats the sum of
the kernels' busy times on any unit). It does not say whether a kernel can keep its
speed on part of an SM: a memory-bound kernel may need every resident warp of the SM to
hide its latency, a compute-bound one may run at full speed on a quarter of them. So
each kernel is also measured alone with its resources limited:

- ``blocks_per_sm``: its blocks per SM capped (``occupancy_padding``: dynamic shared
  memory that leaves room for only ``k`` blocks), on every SM;
- ``sms``: all its blocks on ``s`` SMs only.

A co-location gives each kernel part of the machine. Two kinds, and the best of either:

- **sharing every SM**: kernel 1 keeps ``k1`` blocks on each SM, kernel 2 ``k2``, as long
  as both fit together (threads, registers, shared memory); if neither slows the other
  beyond what its own share explains, the pair takes ``max(t1(k1), t2(k2))``;
- **splitting the SMs**: kernel 1 on ``s`` SMs, kernel 2 on the other ``N - s``:
  ``max(t1(s), t2(N - s))``.

The pair's bound is the larger of that and the unit bound (shared units cap both kinds),
and ``limit`` says which: a unit's name (DRAM, a pipe, issue slots: the kernels compete
for it), ``latency`` (a kernel needs more of the SM than a co-location leaves it), or
``alone`` (the slower kernel alone).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np

from ..runtime.device import DeviceLimits
from ..runtime.occupancy import blocks_by_registers, blocks_by_threads, regs_per_warp, smem_per_block
from .bound import ALONE, Bound

Resource = Literal["blocks_per_sm", "sms"]
LATENCY = "latency"
"""``limit`` when a kernel's speed on its share of the SMs sets the bound."""


@dataclass(frozen=True)
class Curve:
    """A kernel's time alone (ms) by how much of ``resource`` it is given."""

    kernel: str
    resource: Resource
    points: tuple[tuple[int, float], ...]
    """(amount, ms) measured, by increasing amount."""

    def __post_init__(self) -> None:
        points = tuple(sorted((int(a), float(t)) for a, t in self.points))
        if not points or any(a <= 0 or not t > 0 for a, t in points):
            raise ValueError(f"{self.kernel}: a curve needs positive amounts and times, got {self.points}")
        object.__setattr__(self, "points", points)

    @property
    def full(self) -> float:
        """The time with the most of the resource measured (the kernel as it runs alone)."""
        return self.points[-1][1]

    def at(self, amount: int) -> float:
        """The time with ``amount``: measured, interpolated linearly between measurements,
        and below the least measured amount as if the work spread over what there is (time x
        amount ratio: no better than proportional); above the most, the time with the most."""
        if amount <= 0:
            return math.inf
        (a0, t0), (an, tn) = self.points[0], self.points[-1]
        if amount <= a0:
            return t0 * a0 / amount
        if amount >= an:
            return tn
        for (a, t), (b, u) in zip(self.points, self.points[1:]):
            if a <= amount <= b:
                return t + (u - t) * (amount - a) / (b - a)
        raise AssertionError("unreachable")

    def monotone(self) -> bool:
        """More of the resource never makes it slower (beyond 2% noise): what a GPU test checks."""
        return all(u <= t * 1.02 for (_, t), (_, u) in zip(self.points, self.points[1:]))


@dataclass(frozen=True)
class Share:
    """One co-location and its time: ``kind`` ``shared`` (blocks per SM of each kernel on
    every SM) or ``split`` (SMs of each kernel)."""

    kind: Literal["shared", "split"]
    amounts: tuple[int, ...]
    ms: float


def best_shared(curves: Sequence[Curve], fits: Callable[[tuple[int, ...]], bool]) -> Share | None:
    """The fastest mix of blocks per SM that ``fits`` on one SM (each kernel at least one)."""
    if any(c.resource != "blocks_per_sm" for c in curves) or len(curves) != 2:
        raise ValueError("two blocks-per-SM curves")
    top = [c.points[-1][0] for c in curves]
    best = None
    for k1 in range(1, top[0] + 1):
        for k2 in range(1, top[1] + 1):
            if fits((k1, k2)):
                ms = max(curves[0].at(k1), curves[1].at(k2))
                if best is None or ms < best.ms:
                    best = Share("shared", (k1, k2), ms)
    return best


def best_split(curves: Sequence[Curve], sm_count: int) -> Share | None:
    """The fastest split of ``sm_count`` SMs between two kernels (each at least one)."""
    if any(c.resource != "sms" for c in curves) or len(curves) != 2:
        raise ValueError("two SM-count curves")
    options = [Share("split", (s, sm_count - s), max(curves[0].at(s), curves[1].at(sm_count - s)))
               for s in range(1, sm_count)]
    return min(options, key=lambda o: o.ms) if options else None


@dataclass(frozen=True)
class PairBound:
    ms: float
    limit: str
    """A unit's name, ``latency`` or ``alone``."""
    share: Share | None
    """The co-location that reaches it (None: the unit bound or the slower kernel alone is above every one)."""


def pair_bound(unit: Bound, shared: Share | None, split: Share | None) -> PairBound:
    """The pair's bound: the best co-location, never below what the shared units allow."""
    shares = [s for s in (shared, split) if s is not None]
    best = min(shares, key=lambda s: s.ms) if shares else None
    if best is None or unit.ms >= best.ms:
        return PairBound(unit.ms, unit.unit, None)
    return PairBound(best.ms, LATENCY, best)


def fits_together(limits: DeviceLimits, resources: Sequence[tuple[int, int, int]]) -> Callable[[tuple[int, ...]], bool]:
    """Whether blocks per SM ``(k1, k2, ...)`` of kernels with ``(registers, block threads,
    shared memory per block)`` fit on one SM together."""
    def fits(mix: tuple[int, ...]) -> bool:
        warps = sum(k * -(-threads // limits.warp_size) for k, (_, threads, _) in zip(mix, resources))
        registers = sum(k * -(-threads // limits.warp_size) * regs_per_warp(limits, regs)
                        for k, (regs, threads, _) in zip(mix, resources))
        smem = sum(k * smem_per_block(limits, static, 0) for k, (_, _, static) in zip(mix, resources))
        return (warps <= limits.max_warps_per_sm and registers <= limits.regs_per_sm and smem <= limits.smem_per_sm
                and sum(mix) <= limits.max_blocks_per_sm)
    return fits


def occupancy_padding(limits: DeviceLimits, registers: int, block_threads: int, static_smem: int, dynamic_smem: int,
                      blocks: int) -> int | None:
    """Dynamic shared memory to launch with so that at most ``blocks`` blocks fit per SM (the
    kernel's own ``dynamic_smem`` included); None when the kernel fits no more than that
    anyway (no padding needed) or the padding would exceed what a block may have."""
    natural = min(blocks_by_registers(limits, registers, block_threads), blocks_by_threads(limits, block_threads),
                  limits.max_blocks_per_sm)
    if blocks >= natural or blocks < 1:
        return None
    per_block = limits.smem_per_sm // blocks - limits.reserved_smem_per_block
    per_block = per_block // limits.smem_alloc_unit * limits.smem_alloc_unit  # the allocation granularity
    dynamic = max(dynamic_smem, per_block - static_smem)
    # one more block must not fit: the footprint must exceed smem_per_sm / (blocks + 1)
    while smem_per_block(limits, static_smem, dynamic) * (blocks + 1) <= limits.smem_per_sm:
        dynamic += limits.smem_alloc_unit
    if static_smem + dynamic > limits.smem_per_block_optin:
        return None
    return dynamic


def measure_blocks_curve(launch, blocks: Sequence[int], *, limits: DeviceLimits | None = None,
                         warmup_ms: float = 25.0, rep_ms: float = 100.0) -> Curve:
    """A kernel's blocks-per-SM curve on this GPU: ``launch`` (a ``KernelLaunch``) timed alone
    with dynamic shared memory padded so that at most ``k`` of its blocks share an SM, for
    each ``k`` of ``blocks`` (and unpadded, at its natural occupancy)."""
    from ..api import device_source
    from ..runtime.compile import Compiler
    from ..runtime.timing import Timer

    limits = limits or DeviceLimits.current()
    source = device_source(launch.kernel)
    compiler = Compiler(limits=limits)
    kernel = compiler.get(source.source, source.name_expression)
    resources = kernel.resources
    block, grid, own = launch.kernel.block, launch.grid_for(), launch.smem_for()
    natural = min(blocks_by_registers(limits, resources.registers, block.size), blocks_by_threads(limits, block.size),
                  limits.max_blocks_per_sm)
    timer = Timer(limits, flush_l2=True)
    points = []
    for k in sorted(set(blocks) | {natural}):
        padding = own if k >= natural else occupancy_padding(limits, resources.registers, block.size,
                                                              resources.static_smem, own, k)
        if padding is None:
            continue
        kernel.allow_dynamic_smem(padding)
        timing = timer.time(lambda p=padding: kernel.launch(grid, block, launch.args, p), warmup_ms=warmup_ms,
                            rep_ms=rep_ms)
        points.append((min(k, natural), timing.median_ms))
    return Curve(launch.name, "blocks_per_sm", tuple(points))


IDLE_KERNEL = 'extern "C" __global__ void hfuse_idle_partner(int) {}\n'
"""The partner that holds the other SMs' share while a kernel is measured on its own."""


def measure_sms_curve(launch, percents: Sequence[int], *, blocks_per_sm: int = 2, limits: DeviceLimits | None = None,
                      warmup_ms: float = 25.0, rep_ms: float = 100.0) -> Curve:
    """A kernel's SM-count curve on this GPU: ``launch`` run by persistent blocks on the first
    ``p`` percent of the SMs only (a ``solo`` spatial split beside an idle kernel), for each
    ``p``; each point's outputs are checked against the kernel run alone (a point whose
    blocks did not all run is dropped, not timed)."""
    import cupy

    from ..api import device_source, fuse
    from ..layouts import Spatial
    from ..runtime.compile import Compiler
    from ..runtime.timing import Timer
    from ..spec import Dim3, KernelSpec

    limits = limits or DeviceLimits.current()
    compiler = Compiler(limits=limits)
    timer = Timer(limits, flush_l2=True)
    outputs = [launch.args[o.index] for o in launch.outputs]
    initial = [o.copy() for o in outputs]
    original = device_source(launch.kernel)
    alone = compiler.get(original.source, original.name_expression)
    alone.launch(launch.grid_for(), launch.kernel.block, launch.args, launch.smem_for())
    expected = [cupy.asnumpy(o) for o in outputs]
    idle = KernelSpec(launch.kernel.file.with_name("hfuse_idle_partner.cu"), "hfuse_idle_partner", Dim3(32))
    points = []
    for percent in percents:
        layout = Spatial(percent=percent, blocks=blocks_per_sm, solo=True)
        fused = fuse([launch.kernel, idle], layout=layout, sources={str(idle.file): IDLE_KERNEL})
        kernel = compiler.get(fused.source, fused.name_expression)
        packed = fused.pack([launch.args, [np.int32(0)]], [launch.grid_for(), Dim3(1)], [launch.smem_for(), 0],
                            limits.sm_count)
        kernel.allow_dynamic_smem(packed.shared_mem)
        for o, start in zip(outputs, initial):
            o[...] = start
        kernel.launch(packed.grid, packed.block, packed.args, packed.shared_mem)
        if any(not np.array_equal(cupy.asnumpy(o), e) for o, e in zip(outputs, expected)):
            continue  # some blocks never ran on this share: no time for it
        timing = timer.time(lambda: kernel.launch(packed.grid, packed.block, packed.args, packed.shared_mem),
                            warmup_ms=warmup_ms, rep_ms=rep_ms)
        sms = -(-percent * limits.sm_count // 100)
        points.append((sms, timing.median_ms))
    return Curve(launch.name, "sms", tuple(points))


def colocation_bound(launches, *, limits: DeviceLimits | None = None, blocks: Sequence[int] = (1, 2, 4, 8),
                     percents: Sequence[int] = (10, 25, 50, 75, 90), warmup_ms: float = 10.0,
                     rep_ms: float = 40.0) -> PairBound:
    """Two launches' co-location bound on this GPU: both kinds of curves measured, the best
    shared mix and the best split of the SMs, never below the slower kernel alone."""
    from ..api import device_source
    from ..runtime.compile import Compiler

    if len(launches) != 2:
        raise ValueError("a co-location bound of two launches")
    limits = limits or DeviceLimits.current()
    compiler = Compiler(limits=limits)
    resources = []
    for launch in launches:
        source = device_source(launch.kernel)
        kernel = compiler.get(source.source, source.name_expression)
        resources.append((kernel.resources.registers, launch.kernel.block.size,
                          kernel.resources.static_smem + launch.smem_for()))
    by_blocks = [measure_blocks_curve(l, blocks, limits=limits, warmup_ms=warmup_ms, rep_ms=rep_ms) for l in launches]
    by_sms = [measure_sms_curve(l, percents, limits=limits, warmup_ms=warmup_ms, rep_ms=rep_ms) for l in launches]
    alone = Bound(max(c.full for c in by_blocks), ALONE)
    shared = best_shared(by_blocks, fits_together(limits, resources))
    split = best_split(by_sms, limits.sm_count) if all(c.points for c in by_sms) else None
    return pair_bound(alone, shared, split)


def bound_fields(found: PairBound, best_unfused_ms: float | None, tuned_ms: float | None) -> dict:
    """A results row's co-location columns."""
    from .bound import captured

    share = found.share
    return {
        "colocation_bound_ms": found.ms,
        "colocation_limit": found.limit,
        "colocation_share": f"{share.kind} {':'.join(map(str, share.amounts))}" if share else "",
        "captured_colocation": captured(best_unfused_ms, tuned_ms, found.ms),
    }
