"""Horizontal fusion: each part owns a thread range of every fused block."""
from __future__ import annotations

from dataclasses import dataclass

from ..codegen.kernel import horizontal_kernel
from ..codegen.signature import PartSignature
from ..transform.partition import Partition, Placement
from .base import Layout


@dataclass(frozen=True)
class Horizontal(Layout):
    name = "horizontal"
    description = "one block of every part per fused block, on disjoint thread ranges"
    placement = Placement.SIDE_BY_SIDE
    return_exits = True
    blocks_add_up = False
    per_part_registers = True
    suffix = "__hfused"
    grid_note = "It runs max(blocks of each grid) blocks; block b runs part i if b < blocks of grid i,"

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return horizontal_kernel(name, partition, sigs, bodies, launch_bounds, budgets)


HORIZONTAL = Horizontal()
