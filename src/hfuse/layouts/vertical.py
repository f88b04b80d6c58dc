"""Vertical fusion: each fused block runs every part's block in turn on the same threads."""
from __future__ import annotations

from dataclasses import dataclass

from ..codegen.signature import PartSignature
from ..errors import HFuseError, Location
from ..partition import Partition, Placement
from .base import Layout
from .kernel_text import declaration, in_grid, part_call, smem_declaration


def vertical_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str], launch_bounds: str) -> str:
    lines = [declaration(name, partition, sigs, launch_bounds) + " {"]
    lines.append(smem_declaration(sigs))
    lines.append("  const unsigned hf_block = blockIdx.x;")
    by_part = {sig.part.index: (sig, body) for sig, body in zip(sigs, bodies)}
    for part in partition.execution_order:  # a padded part last: its padding threads then exit
        sig, body = by_part[part.index]
        padding = f" ({part.threads} threads + {part.padding} padding, run last)" if part.padding else ""
        lines.append(f"  // part {part.index}: {part.spec.name}, threads [0, {part.size}), block {part.block}{padding}")
        lines.append(f"  if (threadIdx.x < {part.threads}u && {in_grid(sig)}) {{")
        lines.append("    const unsigned hf_tid = threadIdx.x;")
        lines.append(part_call(sig, body, "hf_tid", "    ").rstrip("\n"))
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Vertical(Layout):
    name = "vertical"
    title = "vertical fusion"
    description = "one block of every part per fused block, one part after another"
    placement = Placement.FROM_ZERO
    return_exits = False
    blocks_add_up = False
    suffix = "__vfused"
    grid_note = "It runs max(blocks of each grid) blocks; block b runs each part i with b < blocks of grid i in turn,"

    def validate(self, partition: Partition) -> None:
        # The padding threads of a padded part's last warp skip it and must then leave the
        # kernel so that its named barriers complete: only the part that runs last can be padded.
        padded_parts = [p for p in partition.parts if p.padding]
        if len(padded_parts) > 1:
            first, second = padded_parts[:2]
            raise HFuseError(
                f"vertical fusion of two kernels whose blocks are not warp multiples ({first.spec.name}: "
                f"{first.block}, {second.spec.name}: {second.block}): the padding threads of a part's last warp "
                "must leave the kernel after that part, and only one part can run last",
                Location(second.spec.file, second.kernel.line, second.spec.name),
                hint="use horizontal fusion (the default), or give all but one kernel a block that is a multiple of 32",
            )

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return vertical_kernel(name, partition, sigs, bodies, launch_bounds)


VERTICAL = Vertical()
