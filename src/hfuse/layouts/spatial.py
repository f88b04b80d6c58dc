"""Spatial split: the SMs divided between two kernels, persistent blocks on each.

For pairs whose blocks cannot share an SM (each needs the SM's whole shared memory, say),
``persistent`` cannot mix them; here each SM prefers one kernel for the whole launch: the
first ``percent`` of the SMs (by ``%smid`` against ``%nsmid``) take kernel 1's blocks, the
others kernel 2's (``spatial:30``: 30% of the SMs for kernel 1). It is the persistent
kernel (``persistent.persistent_kernel``) with the preferred part chosen by SM instead of
by ticket, so the same holds: a block whose kernel runs out of blocks takes the other's
(every block of both runs exactly once, whatever the SM ids), and any grid is correct.
The grid is SMs x ``blocks`` blocks per SM (``spatial:30:2``, default 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..codegen.signature import PartSignature
from ..errors import HFuseError
from ..partition import Partition
from ..spec import KernelSpec
from .base import Proposal
from .persistent import Persistent, persistent_kernel

STEP = 10
"""Percent of the SMs between the splits the tuner tries around a winner."""


def by_sm(percent: int) -> list[str]:
    """Thread 0's choice: kernel 1 on the first ``percent`` of the SMs, kernel 2 elsewhere."""
    return [
        "    unsigned hf_sms;",
        '    asm volatile("mov.u32 %0, %%nsmid;" : "=r"(hf_sms));',
        f"    hf_first = hf_sm * 100u < {percent}u * hf_sms ? 0u : 1u;  // {percent}% of the SMs for the first kernel",
    ]


@dataclass(frozen=True)
class Spatial(Persistent):
    """(A persistent layout whose ``mix`` is unused: give ``percent`` and ``blocks`` by name.)"""

    percent: int = 50
    blocks: int = 2
    """Persistent blocks per SM."""
    solo: bool = False
    """Each kernel on its own SMs only: a block never takes the other kernel's blocks, so a
    kernel's time on its share of the SMs can be measured beside an idle partner
    (``colocation.measure_sms_curve``, which checks the outputs). Never a fusion: a kernel's
    blocks would be left undone if no block ran on its share, so it cannot be written as
    text (``parse`` refuses it)."""

    name = "spatial"
    title = "spatial split of the SMs"
    description = ("the SMs split between two kernels (spatial:30: 30% for the first), persistent blocks on each, "
                   "a block taking the other kernel's blocks when its own run out")
    suffix = "__sfused"
    grid_note = ("It runs SMs x blocks-per-SM persistent blocks; those on the first share of the SMs take the first "
                 "kernel's blocks, the others the second's, then any left,")

    def __post_init__(self) -> None:
        if self.mix:  # Spatial(30) would set the inherited mix, not the percent
            raise HFuseError("a spatial split takes percent= and blocks= by name (Spatial(percent=30))")
        if not 1 <= int(self.percent) <= 99 or not 1 <= int(self.blocks) <= 32:
            raise HFuseError(f"a spatial split takes a percent of the SMs from 1 to 99 and 1 to 32 blocks per SM, "
                             f"got {self.percent}% and {self.blocks}")
        object.__setattr__(self, "percent", int(self.percent))
        object.__setattr__(self, "blocks", int(self.blocks))

    def parameters(self) -> list[str]:
        return ([str(self.percent)] + ([str(self.blocks)] if self.blocks != 2 or self.solo else [])
                + (["solo"] if self.solo else []))

    @classmethod
    def parse(cls, parameters: list[str]) -> "Spatial":
        if parameters and parameters[-1] == "solo":
            # work is left undone when no block lands on a kernel's share of the SMs: never a fusion
            raise HFuseError("'solo' spatial splits are for measuring a kernel on part of the SMs "
                             "(hfuse.bench.colocation), not for fused kernels")
        if len(parameters) > 2:
            raise HFuseError("a spatial split is written spatial:PERCENT[:BLOCKS] (spatial:30)")
        try:
            values = [int(p) for p in parameters]
            return cls(percent=values[0] if values else 50, blocks=values[1] if len(values) > 1 else 2)
        except ValueError:
            raise HFuseError(f"a spatial split takes whole numbers, as in spatial:30 (got '{':'.join(parameters)}')") from None

    def blocks_per_sm(self, parts: int) -> int:
        return self.blocks

    def propose(self, specs: Sequence[KernelSpec], *, fused_threads: int | None = None,
                granularity: int = 128) -> list[Proposal]:
        """Half the SMs each, for two kernels (the search refines the split around a winner)."""
        return [Proposal(Spatial(percent=50), tuple(s.block for s in specs))] if len(specs) == 2 else []

    def variants(self, parts: int, fused_threads: int) -> list["Spatial"]:
        return [Spatial(percent=p, blocks=self.blocks, solo=self.solo)
                for p in (self.percent - STEP, self.percent + STEP) if 1 <= p <= 99]

    def validate(self, partition: Partition) -> None:
        if len(partition.parts) != 2:
            raise HFuseError(f"a spatial split divides the SMs between two kernels, not {len(partition.parts)}",
                             hint="use the persistent layout for more")
        super().validate(partition)

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        return persistent_kernel(name, partition, sigs, bodies, launch_bounds, by_sm(self.percent), steal=not self.solo)


SPATIAL = Spatial()
