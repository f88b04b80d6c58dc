"""The split of the fused block between kernels, and its validation."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import HFuseError, Location
from ..frontend.model import Function
from ..spec import Dim3, KernelSpec

Strategy = Literal["horizontal", "vertical"]
WARP = 32
MAX_BLOCK_THREADS = 1024
MAX_BARRIER_ID = 15  # barrier 0 belongs to __syncthreads()


@dataclass(frozen=True)
class Part:
    """Kernel ``index`` (1-based) of a fusion: it owns threads [offset, offset + size)."""

    index: int
    spec: KernelSpec
    kernel: Function
    offset: int
    barrier_id: int | None

    @property
    def block(self) -> Dim3:
        return self.spec.block

    @property
    def size(self) -> int:
        return self.spec.block.size


@dataclass(frozen=True)
class Partition:
    parts: tuple[Part, ...]
    strategy: Strategy

    @property
    def block_threads(self) -> int:
        sizes = [p.size for p in self.parts]
        return sum(sizes) if self.strategy == "horizontal" else max(sizes)

    def describe(self) -> str:
        return " + ".join(f"{p.spec.name}[{p.offset}, {p.offset + p.size})" for p in self.parts)


def make_partition(
    specs: list[KernelSpec], kernels: list[Function], needs_barrier: list[bool], strategy: Strategy
) -> Partition:
    """Lay kernels out along the fused block (in the given order) and check the limits."""
    parts: list[Part] = []
    offset, next_id = 0, 1
    for index, (spec, kernel, barrier) in enumerate(zip(specs, kernels, needs_barrier), start=1):
        where = Location(spec.file, kernel.line, spec.name)
        if spec.block.size % WARP:
            raise HFuseError(
                f"block {spec.block} has {spec.block.size} threads, not a multiple of the warp size {WARP}",
                where,
                hint="fused parts must be warp aligned (named barriers count whole warps)",
            )
        if kernel.launch_bounds and spec.block.size > kernel.launch_bounds[0]:
            raise HFuseError(
                f"block {spec.block} has {spec.block.size} threads but the kernel declares "
                f"__launch_bounds__({kernel.launch_bounds[0]}, ...)",
                where,
                hint=f"use at most {kernel.launch_bounds[0]} threads for this kernel",
            )
        barrier_id = None
        if barrier:
            if next_id > MAX_BARRIER_ID:
                raise HFuseError(
                    f"more than {MAX_BARRIER_ID} fused kernels use barriers: the GPU has 16 named barriers and 0 is reserved",
                    where,
                )
            barrier_id, next_id = next_id, next_id + 1
        parts.append(Part(index, spec, kernel, offset if strategy == "horizontal" else 0, barrier_id))
        offset += spec.block.size
    partition = Partition(tuple(parts), strategy)
    if partition.block_threads > MAX_BLOCK_THREADS:
        raise HFuseError(
            f"the fused block would have {partition.block_threads} threads ({partition.describe()}), "
            f"more than the {MAX_BLOCK_THREADS} a CUDA block may have",
            Location(specs[-1].file, kernels[-1].line, specs[-1].name),
            hint="give the kernels smaller blocks",
        )
    return partition
