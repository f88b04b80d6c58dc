"""What the layouts that run one block of one part per fused block share: the part runs
on the fused block's first threads with its own block shape inside the largest, the
threads it does not use leave at once (before any of its barriers, which count only the
part's threads), and the fused grid holds all the parts' blocks. Parts never share a
block, so none waits for another's stragglers; what is shared is the SM, through the
scheduler. The layouts differ only in how a fused block finds its part: by block ranges
(``interblock``), in turns (``interleaved``) or at run time by SM (``dynamic``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..codegen.signature import PartSignature
from ..partition import Placement
from .base import Layout
from .kernel_text import part_call

ONE_PART_PER_BLOCK = "It runs the sum of the grids' blocks; each runs one block of one part,"


def one_part_block(sig: PartSignature, body: str, block: str) -> list[str]:
    """The lines that run block ``block`` of ``sig``'s part on the fused block's first
    threads; the threads the part does not use skip it (and then leave)."""
    return [
        f"    const unsigned hf_block = {block};",
        f"    if (threadIdx.x < {sig.part.threads}u) {{  // the other threads leave at once",
        "      const unsigned hf_tid = threadIdx.x;",
        part_call(sig, body, "hf_tid", "      ").rstrip("\n"),
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


@dataclass(frozen=True)
class OnePartPerBlock(Layout):
    """Base of the layouts whose fused blocks each run one block of one part."""

    placement = Placement.FROM_ZERO
    keeps_block_whole = True
    return_exits = True
    blocks_add_up = True
    suffix = "__ifused"
    grid_note = ONE_PART_PER_BLOCK
