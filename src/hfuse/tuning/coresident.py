"""The co-resident streams baseline: the unfused kernels on streams of their own, each
grid-stride kernel given ``k`` blocks per SM so that the kernels share every SM.

A user can get part of fusion's overlap without fusing: with full grids one kernel fills
the GPU and the other mostly waits, while with ``k`` blocks per SM each both stay
resident side by side. On the H100 this gave 1.15x (Ethash+SHA256) and 1.25x
(Blake2B+Ethash) over two streams, against fusion's 1.5x, and 0.80-0.93x on the deep
learning pairs. So it is a baseline the decision must beat, and ``k`` is tuned among the
values for which a block of every kernel fits on an SM together.
"""
from __future__ import annotations

from typing import Sequence

from ..spec import Dim3

K_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16)
"""Blocks per SM tried for each grid-stride kernel."""


def resident_ks(blocks_per_sm: Sequence[int]) -> list[int]:
    """The ``k`` for which ``k`` blocks of every kernel fit on one SM together, given how
    many of each fit on an SM alone (a block of kernel i takes ``1/blocks_per_sm[i]`` of it)."""
    if any(b <= 0 for b in blocks_per_sm):
        return []
    return [k for k in K_CHOICES if sum(k / b for b in blocks_per_sm) <= 1.0 + 1e-9]


def co_resident_grids(grids: Sequence[Dim3], grid_free: Sequence[bool], sm_count: int, k: int) -> list[Dim3]:
    """Each grid-stride kernel's grid cut to about ``k`` blocks per SM (y and z kept, never
    more blocks than it had); kernels whose grid is fixed keep it."""
    out = []
    for grid, free in zip(grids, grid_free):
        if not free:
            out.append(grid)
            continue
        per_x = max(1, (k * sm_count) // max(1, grid.y * grid.z))
        out.append(Dim3(min(grid.x, per_x), grid.y, grid.z))
    return out
