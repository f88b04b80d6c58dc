"""Horizontal fusion (paper Algorithm 1): each part owns a thread range of every fused block.

A padded part's padding threads skip its body and, nothing running after the parts,
exit, so its named barriers (counted in warps) complete as natively."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..codegen.signature import PartSignature
from ..partition import WARP, Partition, Placement
from ..registers import RegisterPolicy, WarpgroupRegisters
from ..spec import Dim3, KernelSpec
from .base import Layout, Proposal
from .kernel_text import SM90A_ONLY, declaration, in_grid, part_call, set_registers, smem_declaration
from .partitions import even_split, partitions, shape_for


def horizontal_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str], launch_bounds: str,
                      budgets: tuple[tuple[int, ...], int] | None = None) -> str:
    """``budgets``: each part's registers per thread and the entry count, for ``setmaxnreg``
    on entry to each part (whole warpgroups, checked by ``WarpgroupRegisters``)."""
    lines = [SM90A_ONLY] if budgets else []
    lines.append(declaration(name, partition, sigs, launch_bounds) + " {")
    lines.append(smem_declaration(sigs))
    lines.append("  const unsigned hf_block = blockIdx.x;")
    for n, (sig, body) in enumerate(zip(sigs, bodies)):
        part = sig.part
        end = part.offset + part.size
        last = n == len(sigs) - 1
        test = "" if last else f"if (threadIdx.x < {end}u) "
        keyword = "" if n == 0 else "else "
        lines.append(f"  {keyword}{test}{{  // part {part.index}: {part.spec.name}, threads [{part.offset}, {end}), block {part.block}")
        if budgets and (change := set_registers(budgets[0][n], budgets[1])):
            lines.append(change)  # by every thread of the part's warpgroups, before any of them can leave
        lines.append(f"    if ({in_grid(sig)}) {{")
        local = "threadIdx.x" if part.offset == 0 else f"(threadIdx.x - {part.offset}u)"
        lines.append(f"      const unsigned hf_tid = {local};")
        if part.padding:
            lines.append(f"      if (hf_tid < {part.threads}u) {{  // threads [{part.threads}, {part.size}) of the part are padding: they exit")
            lines.append(part_call(sig, body, "hf_tid", "        ").rstrip("\n"))
            lines.append("      }")
        else:
            lines.append(part_call(sig, body, "hf_tid", "      ").rstrip("\n"))
        lines.append("    }")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Horizontal(Layout):
    name = "horizontal"
    title = "HFuse"
    description = "one block of every part per fused block, on disjoint thread ranges"
    placement = Placement.SIDE_BY_SIDE
    return_exits = True
    blocks_add_up = False
    per_part_registers = True
    suffix = "__hfused"
    grid_note = "It runs max(blocks of each grid) blocks; block b runs part i if b < blocks of grid i,"

    balances_grids = True
    refined_around = True

    def propose(self, specs: Sequence[KernelSpec], *, fused_threads: int | None = None,
                granularity: int = 128) -> list[Proposal]:
        """The even split ("naive", the paper's variant without profiling), then every
        partition at ``granularity``, each also under register policies."""
        out = []
        if (split := even_split(specs, fused_threads=fused_threads)) is not None:
            out.append(Proposal(self, split, label="naive"))
        out += [Proposal(self, blocks, registers=True)
                for blocks in partitions(specs, fused_threads=fused_threads, granularity=granularity)]
        return out

    def neighbours(self, blocks: tuple[Dim3, ...], registers: RegisterPolicy | None, specs: Sequence[KernelSpec],
                   *, granularity: int = 32, radius: int = 1) -> list[tuple[Dim3, ...]]:
        """Partitions next to ``blocks``: ``granularity`` threads (up to ``radius`` steps)
        moved from one tunable kernel to another; ``blocks`` itself not included."""
        if isinstance(registers, WarpgroupRegisters):
            return []  # moving a warp would break the warpgroups the budgets are set for
        tunable = [i for i, s in enumerate(specs) if s.tunable]
        out: list[tuple[Dim3, ...]] = []
        for i in tunable:
            for j in tunable:
                if i == j:
                    continue
                for step in range(1, radius + 1):
                    moved = step * granularity
                    sizes = [b.size for b in blocks]
                    sizes[i] += moved
                    sizes[j] -= moved
                    if sizes[j] < WARP or sizes[j] % WARP or sizes[i] % WARP:
                        continue
                    shapes = [shape_for(specs[k].block, sizes[k]) if k in (i, j) else blocks[k]
                              for k in range(len(specs))]
                    if any(s is None for s in shapes):
                        continue
                    out.append(tuple(shapes))
        return [b for b in dict.fromkeys(out) if b != blocks]

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return horizontal_kernel(name, partition, sigs, bodies, launch_bounds, budgets)


HORIZONTAL = Horizontal()
