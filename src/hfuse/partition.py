"""The split of the fused block between kernels, and its validation.

A kernel whose block is not a multiple of the warp size (120 threads, 10x12) occupies its
size rounded up to a warp multiple (128): its part keeps the kernel's own block shape
(``blockDim`` 120, thread indices 0..119, x fastest) and the last few threads of the
slice are *padding*. Padding threads never run the body: in horizontal fusion they skip
the part and exit. A named barrier counts whole warps, and a warp arrives once all its
*non-exited* threads executed the barrier (PTX ISA, ``barrier``), so the barrier count
is the padded size and the partial warp arrives with its real threads, exactly as a
120-thread block's last warp does natively (full-mask warp shuffles see the same exited
lanes as natively too). In vertical fusion the padded part runs last, so its padding
threads, which skip it, exit as well; two padded parts cannot both be last and are refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Mapping, Sequence

from .errors import HFuseError, Location
from .frontend.model import Function
from .spec import Dim3, KernelSpec



class Placement(Enum):
    """Where a part's threads sit in the fused block: the layout's choice (``hfuse.layouts``)."""

    SIDE_BY_SIDE = "side_by_side"
    """On disjoint thread ranges, one after another: the fused block is their sum."""
    FROM_ZERO = "from_zero"
    """Every part from thread 0: the fused block is the largest part."""

WARP = 32
MAX_BLOCK_THREADS = 1024
MAX_BARRIER_ID = 15  # barrier 0 belongs to __syncthreads()
WHOLE_BLOCK_BARRIER = 0
"""The barrier of a part that runs alone in its fused block: ``__syncthreads()``'s own, over
the whole block. A thread that exits releases it (PTX ISA, ``exit``: barriers waiting on
all threads are released when the exiting threads are the only ones holding them up), so
the threads the part does not use, gone at once, and its own early returns behave exactly
as in the kernel's own launch. A named barrier counts its N threads by warps, and a warp
whose threads all exited never arrives: the horizontal layout needs the early-exit rewrite."""


def padded(threads: int) -> int:
    """``threads`` rounded up to a whole number of warps."""
    return -(-threads // WARP) * WARP


@dataclass(frozen=True)
class Part:
    """Kernel ``index`` (1-based) of a fusion: it owns threads [offset, offset + size) of the
    fused block; the first ``threads`` of them run the kernel, the rest are padding."""

    index: int
    spec: KernelSpec
    kernel: Function
    offset: int
    barrier_id: int | None

    @property
    def block(self) -> Dim3:
        return self.spec.block

    @property
    def threads(self) -> int:
        """Threads the kernel itself runs with (its block's size)."""
        return self.spec.block.size

    @property
    def size(self) -> int:
        """Threads the part occupies in the fused block: ``threads`` rounded up to warps
        (the named barrier's count)."""
        return padded(self.spec.block.size)

    @property
    def padding(self) -> int:
        return self.size - self.threads


@dataclass(frozen=True)
class Partition:
    parts: tuple[Part, ...]
    placement: Placement

    @property
    def block_threads(self) -> int:
        return fused_block_threads([p.size for p in self.parts], self.placement)

    def describe(self) -> str:
        return " + ".join(f"{p.spec.name}[{p.offset}, {p.offset + p.size})" for p in self.parts)

    @property
    def execution_order(self) -> tuple[Part, ...]:
        """The order the fused kernel runs the parts in: a padded part last in vertical fusion
        (its padding threads skip it and must then exit, see the module docstring)."""
        if self.placement is Placement.SIDE_BY_SIDE:
            return self.parts
        return tuple(sorted(self.parts, key=lambda p: p.padding > 0))


def fused_block_threads(sizes: list[int], placement: Placement) -> int:
    """The fused block's threads for parts of ``sizes`` threads (each a warp multiple)."""
    return sum(sizes) if placement is Placement.SIDE_BY_SIDE else max(sizes)


def make_partition(
    specs: list[KernelSpec], kernels: list[Function], needs_barrier: list[bool], placement: Placement,
    constants: Sequence[Mapping[str, int]] = (), whole_blocks: bool = False,
) -> Partition:
    """Lay kernels out in the fused block (in the given order) and check the limits every
    layout has; a layout checks its own rules (``Layout.validate``). ``constants``: each
    instance's known constants (``PreparedKernel.constants``), for its launch bound.
    ``whole_blocks``: each fused block runs one block of one part (``Layout.keeps_block_whole``),
    so a part synchronises with the block's own barrier, ``WHOLE_BLOCK_BARRIER``."""
    parts: list[Part] = []
    offset, next_id = 0, 1
    for index, (spec, kernel, barrier) in enumerate(zip(specs, kernels, needs_barrier), start=1):
        where = Location(spec.file, kernel.line, spec.name)
        bound = kernel.max_threads(spec.template_args, constants[index - 1] if constants else None)
        if bound is not None and spec.block.size > bound:
            raise HFuseError(
                f"block {spec.block} has {spec.block.size} threads but the kernel declares "
                f"__launch_bounds__({kernel.launch_bounds[0]}, ...)" + (f" = {bound}" if str(bound) != kernel.launch_bounds[0] else ""),
                where,
                hint=f"use at most {bound} threads for this kernel",
            )
        barrier_id = None
        if barrier and whole_blocks:
            barrier_id = WHOLE_BLOCK_BARRIER
        elif barrier:
            if next_id > MAX_BARRIER_ID:
                raise HFuseError(
                    f"more than {MAX_BARRIER_ID} fused kernels use barriers: the GPU has 16 named barriers and 0 is reserved",
                    where,
                )
            barrier_id, next_id = next_id, next_id + 1
        parts.append(Part(index, spec, kernel, offset if placement is Placement.SIDE_BY_SIDE else 0, barrier_id))
        offset += padded(spec.block.size)
    partition = Partition(tuple(parts), placement)
    if partition.block_threads > MAX_BLOCK_THREADS:
        raise HFuseError(
            f"the fused block would have {partition.block_threads} threads ({partition.describe()}), "
            f"more than the {MAX_BLOCK_THREADS} a CUDA block may have",
            Location(specs[-1].file, kernels[-1].line, specs[-1].name),
            hint="give the kernels smaller blocks, or fuse them with a layout that runs one kernel's block per "
            "fused block (--layout interblock, interleaved, dynamic or persistent)",
        )
    return partition
