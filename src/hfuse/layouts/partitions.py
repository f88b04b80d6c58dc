"""The partitions of a fused block that horizontal fusion can give its kernels.

A fused block of ``d0`` threads (default: the sum of the kernels' blocks, at most 1024);
fixed kernels keep their block, tunable kernels share the rest in steps of
``granularity`` (the paper's d1 = 128, 256, ... while d1 < d0); a tunable 2-D/3-D block
keeps its x and z extents and varies y so its thread count hits its share.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import HFuseError
from ..partition import MAX_BLOCK_THREADS, WARP, padded
from ..spec import Dim3, KernelSpec


def shape_for(block: Dim3, threads: int) -> Dim3 | None:
    """``block`` resized to ``threads`` threads: x for 1-D blocks, else y (x, z kept)."""
    if block.rank == 1:
        return Dim3(threads)
    plane = block.x * block.z
    if threads % plane:
        return None
    return Dim3(block.x, threads // plane, block.z)


def fused_size(specs: Sequence[KernelSpec], fused_threads: int | None) -> int:
    d0 = fused_threads if fused_threads is not None else sum(padded(s.block.size) for s in specs)
    if d0 > MAX_BLOCK_THREADS:
        raise HFuseError(
            f"a fused block of {d0} threads exceeds CUDA's {MAX_BLOCK_THREADS}",
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
    d0 = fused_size(specs, fused_threads)
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
    d0 = fused_size(specs, fused_threads)
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
