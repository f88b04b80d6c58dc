"""SM-aware dynamic dispatch: each fused block chooses its part when it starts, from the
SM it runs on, so every SM runs the parts in a chosen ratio.

The static inter-block layouts fix each fused block's part by its index, and the block
scheduler decides where it runs. Here the fused grid has as many blocks as the parts
together (as in ``interblock``), but a block's part is decided at run time (the idea of
POD-Attention, ASPLOS 2025). Thread 0 of each fused block:

1. reads its SM's id (``%smid``) and takes a ticket from that SM's counter; within each
   run of ``sum(weights)`` tickets, ``weights[p]`` of them prefer part ``p``, so the blocks
   starting on one SM follow the ratio whatever the others do;
2. takes the preferred part's next block from that part's global counter; once a part
   has handed out all its blocks, the block takes the next part that has some left.

Every fused block gets exactly one part block: there are as many fused blocks as part
blocks, and a claim fails only when that part is done. Correctness never depends on the
SM ids or the ratio, only speed does (SM ids beyond the table share slots).

The counters are a ``__device__`` array of the fused module, zero when it is loaded.
The last block to claim sets them back to zero, so the next launch on the stream (or in
a graph) starts from zero with nothing for the launcher to reset. Two launches of the
same fused kernel must therefore not run at the same time (on two streams at once):
they would share the counters.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from ..codegen.signature import PartSignature
from ..errors import HFuseError
from ..partition import Partition
from ..spec import KernelSpec
from .base import Proposal
from .kernel_text import declaration, smem_declaration
from .one_part import OnePartPerBlock, run_chosen_part

SM_SLOTS = 256
"""Ticket counters: one per SM id modulo this (an H100 has 132 SMs)."""
MAX_WEIGHT = 64


def next_counts(counts: tuple[int, ...], allowed: Callable[[tuple[int, ...]], bool]) -> list[tuple[int, ...]]:
    """Counts one step from ``counts``: one of them up or down by one (at least one each)."""
    out = []
    for i in range(len(counts)):
        for step in (1, -1):
            moved = tuple(c + step if j == i else c for j, c in enumerate(counts))
            if min(moved) >= 1 and allowed(moved) and moved not in out:
                out.append(moved)
    return out


def counters_name(kernel: str) -> str:
    """The fused module's counter array for kernel ``kernel``."""
    return f"{kernel}_hf_counters"


def dynamic_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
                   launch_bounds: str, weights: tuple[int, ...]) -> str:
    n = len(sigs)
    counts = ", ".join(f"{s.hidden_name('grid_x')} * {s.hidden_name('grid_y')} * {s.hidden_name('grid_z')}" for s in sigs)
    counters = counters_name(name)
    total = sum(weights)
    lines = [
        f"// Per-SM tickets [0, {SM_SLOTS}), each part's next block [{SM_SLOTS}, {SM_SLOTS + n}), blocks that claimed [{SM_SLOTS + n}].",
        "// Zero at load; the last block to claim sets them to zero again for the next launch.",
        "// So two launches of this kernel must not overlap (one stream, or one branch of a graph).",
        f"__device__ unsigned int {counters}[{SM_SLOTS + n + 1}];",
        "",
        declaration(name, partition, sigs, launch_bounds) + " {",
        smem_declaration(sigs),
        "  __shared__ unsigned hf_claim[2];  // the part this block runs, and which of its blocks",
        "  if (threadIdx.x == 0) {",
        f"    const unsigned hf_counts[{n}] = {{{counts}}};",
        f"    const unsigned hf_weights[{n}] = {{{', '.join(f'{w}u' for w in weights)}}};",
        "    unsigned hf_sm;",
        '    asm volatile("mov.u32 %0, %%smid;" : "=r"(hf_sm));',
        f"    unsigned hf_slot = atomicAdd(&{counters}[hf_sm % {SM_SLOTS}u], 1u) % {total}u;",
        "    unsigned hf_first = 0;  // the part this SM's ticket asks for",
        "    while (hf_slot >= hf_weights[hf_first]) hf_slot -= hf_weights[hf_first++];",
        f"    unsigned hf_part = {n}u, hf_index = 0;",
        f"    for (unsigned hf_try = 0; hf_try < {n}u && hf_part == {n}u; ++hf_try) {{  // that part, else the next with blocks left",
        f"      const unsigned hf_p = (hf_first + hf_try) % {n}u;",
        f"      const unsigned hf_b = atomicAdd(&{counters}[{SM_SLOTS}u + hf_p], 1u);",
        "      if (hf_b < hf_counts[hf_p]) { hf_part = hf_p; hf_index = hf_b; }",
        "    }",
        "    hf_claim[0] = hf_part;",
        "    hf_claim[1] = hf_index;",
        "    __threadfence();  // this block's claims happen before it counts itself",
        f"    if (atomicAdd(&{counters}[{SM_SLOTS + n}u], 1u) == gridDim.x * gridDim.y * gridDim.z - 1u) {{",
        f"      for (unsigned hf_i = 0; hf_i <= {SM_SLOTS + n}u; ++hf_i) {counters}[hf_i] = 0u;  // every block has claimed",
        "    }",
        "  }",
        "  __syncthreads();",
        "  const unsigned hf_part = hf_claim[0], hf_index = hf_claim[1];",
    ]
    lines += run_chosen_part(sigs, bodies, "hf_part", "hf_index")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Dynamic(OnePartPerBlock):
    weights: tuple[int, ...] = ()
    """How many of each run of tickets on an SM prefer each part; empty: one each."""

    name = "dynamic"
    title = "SM-aware dispatch (best ratio)"
    description = ("one block of one part per fused block, chosen at run time so every SM runs the parts "
                   "in a ratio (dynamic:2:1 for 2:1)")
    suffix = "__dfused"

    def propose(self, specs: Sequence[KernelSpec], *, fused_threads: int | None = None,
                granularity: int = 128) -> list[Proposal]:
        """One block each, and for two kernels also 2:1 and 1:2 (a heavier part's blocks
        take longer, so equal starts are not equal shares of an SM)."""
        own = tuple(s.block for s in specs)
        ratios = [Dynamic()] + ([Dynamic((2, 1)), Dynamic((1, 2))] if len(specs) == 2 else [])
        return [Proposal(layout, own) for layout in ratios]

    def __post_init__(self) -> None:
        weights = tuple(int(w) for w in self.weights)
        if any(not 1 <= w <= MAX_WEIGHT for w in weights):
            raise HFuseError(f"dynamic dispatch weights must be whole numbers from 1 to {MAX_WEIGHT}, "
                             f"got {':'.join(map(str, self.weights))}")
        object.__setattr__(self, "weights", weights)

    def parameters(self) -> list[str]:
        return [str(w) for w in self.weights]

    @classmethod
    def parse(cls, parameters: list[str]) -> "Dynamic":
        try:
            return cls(tuple(int(p) for p in parameters))
        except ValueError:
            raise HFuseError(f"dynamic dispatch weights must be whole numbers, as in dynamic:2:1 "
                             f"(got '{':'.join(parameters)}')") from None

    def variants(self, parts: int, fused_threads: int) -> list["Dynamic"]:
        """The ratios one step from this one (a weight up or down by one), in lowest terms."""
        steps = next_counts(self.weights_for(parts), lambda w: max(w) <= MAX_WEIGHT)
        # equal weights are the default ratio, written without any
        return [Dynamic(() if len(set(w)) == 1 else w) for w in steps if math.gcd(*w) == 1]

    def weights_for(self, parts: int) -> tuple[int, ...]:
        return self.weights or (1,) * parts

    def validate(self, partition: Partition) -> None:
        if self.weights and len(self.weights) != len(partition.parts):
            raise HFuseError(f"{self.spec} has {len(self.weights)} weight(s) for {len(partition.parts)} fused kernels",
                             hint="give one weight per kernel, in fusion order")

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return dynamic_kernel(name, partition, sigs, bodies, launch_bounds, self.weights_for(len(sigs)))


DYNAMIC = Dynamic()
