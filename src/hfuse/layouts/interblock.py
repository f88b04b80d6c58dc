"""Inter-block fusion: each fused block runs one block of one part.

The fused grid holds part 1's blocks, then part 2's, and so on; a fused block finds its
part by its index and runs that part's block with the part's own shape, on the first
threads of the fused block (the largest part's size). Threads a part does not use leave
at once, before any of its barriers, which count only the part's threads (named barriers,
as in horizontal fusion). Parts never share a block, so none waits for another's
stragglers; what is shared is the SM, through the scheduler.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..codegen.kernel import SMEM, _declaration, _part_call
from ..codegen.signature import PartSignature
from ..transform.partition import Partition, Placement
from .base import Layout

ONE_PART_PER_BLOCK = "It runs the sum of the grids' blocks; each runs one block of one part,"


def one_part_block(sig: PartSignature, body: str, block: str) -> list[str]:
    """The lines that run block ``block`` of ``sig``'s part on the fused block's first
    threads; the threads the part does not use skip it (and then leave)."""
    return [
        f"    const unsigned hf_block = {block};",
        f"    if (threadIdx.x < {sig.part.threads}u) {{  // the other threads leave at once",
        "      const unsigned hf_tid = threadIdx.x;",
        _part_call(sig, body, "hf_tid", "      ").rstrip("\n"),
        "    }",
    ]


def run_chosen_part(sigs: list[PartSignature], bodies: list[str], part: str, block: str) -> list[str]:
    """The lines that run block ``block`` of part number ``part`` (0-based variables of the
    fused kernel, chosen by its dispatch code)."""
    lines = []
    for number, (sig, body) in enumerate(zip(sigs, bodies)):
        keyword = "if" if number == 0 else "else if"
        lines.append(f"  {keyword} ({part} == {number}u) {{  // part {sig.part.index}: {sig.part.spec.name}, block {sig.part.block}")
        lines += one_part_block(sig, body, block)
        lines.append("  }")
    return lines


def interblock_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
                      launch_bounds: str) -> str:
    lines = [_declaration(name, partition, sigs, launch_bounds) + " {"]
    lines.append(f"  extern __shared__ __align__(16) unsigned char {SMEM}[];")
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
class Interblock(Layout):
    name = "interblock"
    description = "one block of one part per fused block; the parts' blocks one after another in the grid"
    placement = Placement.FROM_ZERO
    return_exits = True
    blocks_add_up = True
    suffix = "__ifused"
    grid_note = ONE_PART_PER_BLOCK

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return interblock_kernel(name, partition, sigs, bodies, launch_bounds)


INTERBLOCK = Interblock()
