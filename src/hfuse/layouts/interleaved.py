"""Interleaved inter-block fusion: each fused block runs one block of one part, the parts
taking turns along the fused grid.

Block ranges (``interblock``) start every part's blocks in order of the grid, so the
hardware schedules most of part 1 before part 2 begins. Here consecutive fused blocks
go round the parts that still have blocks: with grids of 3 and 5 blocks the fused grid
runs A B A B A B B B. Each fused block finds its part and block with a short loop over
the parts (at most one pass per part), from the parts' grids in the hidden parameters.
Threads a part does not use leave at once (``one_part.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..codegen.signature import PartSignature
from ..partition import Partition
from .kernel_text import declaration, smem_declaration
from .one_part import OnePartPerBlock, run_chosen_part


def interleaved_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
                       launch_bounds: str) -> str:
    n = len(sigs)
    counts = ", ".join(f"{s.hidden_name('grid_x')} * {s.hidden_name('grid_y')} * {s.hidden_name('grid_z')}" for s in sigs)
    lines = [declaration(name, partition, sigs, launch_bounds) + " {"]
    lines.append(smem_declaration(sigs))
    lines.append(f"  const unsigned hf_counts[{n}] = {{{counts}}};")
    lines.append("  // Rounds: while k parts have blocks left, k consecutive fused blocks give each one")
    lines.append("  // block. Skip whole stretches of rounds until the one holding this fused block.")
    lines.append(f"  unsigned hf_rest = blockIdx.x, hf_round = 0, hf_part = {n}u, hf_index = 0;")
    lines.append(f"  for (unsigned hf_pass = 0; hf_pass < {n}u && hf_part == {n}u; ++hf_pass) {{")
    lines.append("    unsigned hf_active = 0, hf_until = 0xffffffffu;  // parts with blocks left; the next to run out")
    lines.append(f"    for (unsigned hf_i = 0; hf_i < {n}u; ++hf_i)")
    lines.append("      if (hf_counts[hf_i] > hf_round) { ++hf_active; if (hf_counts[hf_i] < hf_until) hf_until = hf_counts[hf_i]; }")
    lines.append("    if (hf_active == 0) return;  // past the last block (not launched so)")
    lines.append("    const unsigned long long hf_span = (unsigned long long)(hf_until - hf_round) * hf_active;")
    lines.append("    if (hf_rest < hf_span) {")
    lines.append("      unsigned hf_slot = hf_rest % hf_active;")
    lines.append("      hf_index = hf_round + hf_rest / hf_active;")
    lines.append(f"      for (unsigned hf_i = 0; hf_i < {n}u; ++hf_i)")
    lines.append("        if (hf_counts[hf_i] > hf_round && hf_slot-- == 0) { hf_part = hf_i; break; }")
    lines.append("    } else {")
    lines.append("      hf_rest -= (unsigned)hf_span;")
    lines.append("      hf_round = hf_until;")
    lines.append("    }")
    lines.append("  }")
    lines += run_chosen_part(sigs, bodies, "hf_part", "hf_index")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Interleaved(OnePartPerBlock):
    name = "interleaved"
    title = "inter-block, interleaved"
    description = "one block of one part per fused block; the parts take turns along the grid"

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return interleaved_kernel(name, partition, sigs, bodies, launch_bounds)


INTERLEAVED = Interleaved()
