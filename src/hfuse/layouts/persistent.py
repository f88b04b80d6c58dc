"""Persistent co-residency: a few blocks per SM stay for the whole launch, in a tuned mix
of the parts, and each loops over its part's blocks, taking the other part's once its own
run out.

The one-block-per-fused-block layouts (``dynamic`` and the static ones) leave the mix on
an SM to the block scheduler and to when blocks finish. Here the fused grid is exactly
(SMs x blocks per SM) persistent blocks (``persistent:2:2``: two blocks of each part per
SM; the launch helpers size the grid from the device's SM count). Thread 0 of each block:

1. once, reads its SM's id (``%smid``) and takes a ticket from that SM's counter: of each
   run of ``sum(mix)`` tickets, ``mix[p]`` prefer part ``p``, so each SM holds the mix;
2. in a loop, takes its part's next block from that part's global counter (when that part
   has handed out all its blocks, the next part that has some left), runs it with the
   block's index as ``blockIdx`` on the part's threads, and goes again until every part's
   blocks are taken.

The whole block waits at a barrier between two blocks of work, so a part's block starts
on a block whose threads and shared memory are its own again. A part's ``return`` ends
that block of work for the thread, not the thread (as in vertical fusion); its barriers
count only its own threads. Correctness depends neither on SM ids, nor on the grid, nor
on the mix: any grid runs every part's blocks exactly once (only speed changes).

The counters are a ``__device__`` array of the fused module, zero when it is loaded; the
last block to finish sets them back to zero for the next launch on the stream (two
launches of one fused kernel must not run at the same time).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..codegen.signature import PartSignature
from ..errors import HFuseError, Location
from ..partition import Partition, Placement
from ..spec import KernelSpec
from .base import Layout, Proposal
from .dynamic import MAX_WEIGHT, SM_SLOTS, counters_name, next_counts
from .kernel_text import declaration, part_call, smem_declaration

MIXES: tuple[tuple[int, int], ...] = ((1, 1), (2, 2), (2, 1), (1, 2))
"""Blocks per SM of each of two parts that the tuner tries (those that fit 2048 threads)."""


def by_ticket(counters: str, mix: tuple[int, ...]) -> list[str]:
    """Thread 0's choice of the part a block prefers: its SM's ticket, ``mix[p]`` of each
    run of ``sum(mix)`` tickets for part ``p``."""
    return [
        f"    const unsigned hf_mix[{len(mix)}] = {{{', '.join(f'{k}u' for k in mix)}}};",
        f"    unsigned hf_slot = atomicAdd(&{counters}[hf_sm % {SM_SLOTS}u], 1u) % {sum(mix)}u;",
        "    while (hf_slot >= hf_mix[hf_first]) hf_slot -= hf_mix[hf_first++];",
    ]


def persistent_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
                      launch_bounds: str, prefer: list[str], steal: bool = True) -> str:
    """The persistent kernel; ``prefer``: thread 0's lines that set ``hf_first``, the part
    the block takes blocks of first, from ``hf_sm`` (its SM) and the counters; ``steal``:
    once that part has no blocks left, take the others' (else stop: a block runs its part only)."""
    n = len(sigs)
    counts = ", ".join(f"{s.hidden_name('grid_x')} * {s.hidden_name('grid_y')} * {s.hidden_name('grid_z')}" for s in sigs)
    counters = counters_name(name)
    lines = [
        f"// Per-SM tickets [0, {SM_SLOTS}), each part's next block [{SM_SLOTS}, {SM_SLOTS + n}), blocks done [{SM_SLOTS + n}].",
        "// Zero at load; the last block to finish sets them to zero again for the next launch.",
        "// So two launches of this kernel must not overlap (one stream, or one branch of a graph).",
        f"__device__ unsigned int {counters}[{SM_SLOTS + n + 1}];",
        "",
        declaration(name, partition, sigs, launch_bounds) + " {",
        smem_declaration(sigs),
        "  __shared__ unsigned hf_claim[2];  // the part this block runs next, and which of its blocks",
        "  unsigned hf_first = 0;  // the part this block asks for first (thread 0's)",
        "  if (threadIdx.x == 0) {",
        "    unsigned hf_sm;",
        '    asm volatile("mov.u32 %0, %%smid;" : "=r"(hf_sm));',
        *prefer,
        "  }",
        "  for (;;) {",
        "    if (threadIdx.x == 0) {",
        f"      const unsigned hf_counts[{n}] = {{{counts}}};",
        f"      unsigned hf_part = {n}u, hf_index = 0;",
        (f"      for (unsigned hf_try = 0; hf_try < {n}u && hf_part == {n}u; ++hf_try) {{  // its part, else the next with blocks left"
         if steal else "      for (unsigned hf_try = 0; hf_try < 1u; ++hf_try) {  // its part only"),
        f"        const unsigned hf_p = (hf_first + hf_try) % {n}u;",
        f"        const unsigned hf_b = atomicAdd(&{counters}[{SM_SLOTS}u + hf_p], 1u);",
        "        if (hf_b < hf_counts[hf_p]) { hf_part = hf_p; hf_index = hf_b; }",
        "      }",
        "      hf_claim[0] = hf_part;",
        "      hf_claim[1] = hf_index;",
        "    }",
        "    __syncthreads();",
        "    const unsigned hf_part = hf_claim[0], hf_block = hf_claim[1];",
        f"    if (hf_part == {n}u) break;  // every part's blocks are taken",
    ]
    for number, (sig, body) in enumerate(zip(sigs, bodies)):
        keyword = "if" if number == 0 else "else if"
        part = sig.part
        lines.append(f"    {keyword} (hf_part == {number}u) {{  // part {part.index}: {part.spec.name}, block {part.block}")
        lines.append(f"      if (threadIdx.x < {part.threads}u) {{  // the other threads wait for the next block of work")
        lines.append("        const unsigned hf_tid = threadIdx.x;")
        lines.append(part_call(sig, body, "hf_tid", "        ").rstrip("\n"))
        lines.append("      }")
        lines.append("    }")
    lines += [
        "    __syncthreads();  // this block of work is over on every thread before the next claim",
        "  }",
        "  if (threadIdx.x == 0) {",
        "    __threadfence();  // this block's claims happen before it counts itself done",
        f"    if (atomicAdd(&{counters}[{SM_SLOTS + n}u], 1u) == gridDim.x * gridDim.y * gridDim.z - 1u) {{",
        f"      for (unsigned hf_i = 0; hf_i <= {SM_SLOTS + n}u; ++hf_i) {counters}[hf_i] = 0u;  // every block is done",
        "    }",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Persistent(Layout):
    mix: tuple[int, ...] = ()
    """Blocks per SM of each part (``persistent:2:1``); empty: one each."""

    name = "persistent"
    title = "persistent co-resident blocks"
    description = ("SMs x blocks-per-SM persistent blocks in a mix of the parts (persistent:2:2: two of each per "
                   "SM), each looping over its part's blocks, then the others'")
    placement = Placement.FROM_ZERO
    return_exits = False
    blocks_add_up = True
    suffix = "__pfused"
    grid_note = ("It runs SMs x blocks-per-SM persistent blocks (at most the parts' blocks together); each takes "
                 "its SM's share of the mix and loops over that part's blocks, then the others',")

    def __post_init__(self) -> None:
        mix = tuple(int(k) for k in self.mix)
        if any(not 1 <= k <= MAX_WEIGHT for k in mix):
            raise HFuseError(f"persistent blocks per SM must be whole numbers from 1 to {MAX_WEIGHT}, "
                             f"got {':'.join(map(str, self.mix))}")
        object.__setattr__(self, "mix", mix)

    def parameters(self) -> list[str]:
        return [str(k) for k in self.mix]

    @classmethod
    def parse(cls, parameters: list[str]) -> "Persistent":
        try:
            return cls(tuple(int(p) for p in parameters))
        except ValueError:
            raise HFuseError(f"persistent blocks per SM must be whole numbers, as in persistent:2:1 "
                             f"(got '{':'.join(parameters)}')") from None

    def variants(self, parts: int, fused_threads: int) -> list["Persistent"]:
        """The mixes one step from this one (one part's blocks per SM up or down by one) whose
        blocks fit an SM's threads."""
        fits = lambda mix: sum(mix) * fused_threads <= 2048 and max(mix) <= MAX_WEIGHT  # noqa: E731
        return [Persistent(mix) for mix in next_counts(self.mix_for(parts), fits)]

    def mix_for(self, parts: int) -> tuple[int, ...]:
        return self.mix or (1,) * parts

    def blocks_per_sm(self, parts: int) -> int:
        return sum(self.mix_for(parts))

    def grid_limit(self, parts: int, sm_count: int | None) -> int | None:
        """The fused grid's size at most: SMs x blocks per SM (None: the SM count is not known)."""
        return sm_count * self.blocks_per_sm(parts) if sm_count else None

    def propose(self, specs: Sequence[KernelSpec], *, fused_threads: int | None = None,
                granularity: int = 128) -> list[Proposal]:
        """Each kernel at its own block; for two kernels the mixes of ``MIXES`` whose blocks
        fit on an SM by threads (registers and shared memory may hold fewer: still correct)."""
        own = tuple(s.block for s in specs)
        if len(specs) != 2:
            return [Proposal(Persistent(), own)]
        threads = max(-(-s.block.size // 32) * 32 for s in specs)
        return [Proposal(Persistent(mix), own) for mix in MIXES if sum(mix) * threads <= 2048]

    def validate(self, partition: Partition) -> None:
        if self.mix and len(self.mix) != len(partition.parts):
            raise HFuseError(f"{self.spec} has {len(self.mix)} blocks per SM for {len(partition.parts)} fused kernels",
                             hint="give one count per kernel, in fusion order")
        for part in partition.parts:
            if part.padding:  # padding threads stay for the next block of work: a named barrier would miss them
                raise HFuseError(
                    f"persistent fusion needs blocks that are warp multiples ({part.spec.name}: {part.block})",
                    Location(part.spec.file, part.kernel.line, part.spec.name),
                    hint="use the dynamic or interblock layout, or a block that is a multiple of 32")

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return persistent_kernel(name, partition, sigs, bodies, launch_bounds,
                                 by_ticket(counters_name(name), self.mix_for(len(sigs))))


PERSISTENT = Persistent()
