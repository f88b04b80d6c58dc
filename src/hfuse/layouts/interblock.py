"""Inter-block fusion by block ranges: the fused grid holds part 1's blocks, then part 2's,
and so on; a fused block finds its part by its index (see ``one_part.py``)."""
from __future__ import annotations

from dataclasses import dataclass

from ..codegen.signature import PartSignature
from ..partition import Partition
from .kernel_text import declaration, smem_declaration
from .one_part import OnePartPerBlock, one_part_block

def interblock_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
                      launch_bounds: str) -> str:
    lines = [declaration(name, partition, sigs, launch_bounds) + " {"]
    lines.append(smem_declaration(sigs))
    lines.append("  unsigned hf_first = 0;  // the part's first block in the fused grid")
    for sig, body in zip(sigs, bodies):
        part = sig.part
        gx, gy, gz = (sig.hidden_name(w) for w in ("grid_x", "grid_y", "grid_z"))
        blocks = f"{gx} * {gy} * {gz}"
        lines.append(f"  if (blockIdx.x < hf_first + {blocks}) {{  // part {part.index}: {part.spec.name}, block {part.block}")
        lines += one_part_block(sig, body, "blockIdx.x - hf_first")
        lines.append("    return;")
        lines.append("  }")
        lines.append(f"  hf_first += {blocks};")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Interblock(OnePartPerBlock):
    name = "interblock"
    title = "inter-block, block ranges"
    description = "one block of one part per fused block; the parts' blocks one after another in the grid"

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return interblock_kernel(name, partition, sigs, bodies, launch_bounds)


INTERBLOCK = Interblock()
