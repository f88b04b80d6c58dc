"""Whether a compiled fused kernel can launch at its block: the check ``nvcc -c`` cannot make.

A kernel compiles whatever its register count; the driver refuses the launch when the
block's registers exceed what a block may have ("too many resources requested for
launch"), or when its shared memory exceeds the opt-in limit. hfuse's own output is
bounded so that this never happens (``__launch_bounds__(D)``); the check reports it from
ptxas's own numbers, so a user sees it on the CPU, before any GPU run.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..registers import REGISTERS_PER_BLOCK, block_registers
from .ptxas import Resources
STATIC_SMEM_LIMIT = 48 * 1024
"""Static shared memory a kernel may declare (more only as dynamic memory with the opt-in)."""


@dataclass(frozen=True)
class LaunchCheck:
    """ptxas's numbers for a kernel, judged against one block size."""

    kernel: str
    block_threads: int
    registers: int
    spill_bytes: int
    static_smem: int

    @property
    def block_registers(self) -> int:
        return block_registers(self.registers, self.block_threads)

    @property
    def problems(self) -> list[str]:
        found = []
        if self.block_registers > REGISTERS_PER_BLOCK:
            found.append(f"{self.registers} registers x {self.block_threads} threads need {self.block_registers:,} "
                         f"registers, more than the {REGISTERS_PER_BLOCK:,} a block may have: the launch would fail")
        if self.static_smem > STATIC_SMEM_LIMIT:
            found.append(f"{self.static_smem:,} bytes of static shared memory, more than the {STATIC_SMEM_LIMIT:,} "
                         "a kernel may declare")
        return found

    def describe(self) -> str:
        spills = f", {self.spill_bytes} bytes spilled" if self.spill_bytes else ", no spills"
        verdict = "can launch" if not self.problems else "CANNOT launch"
        return (f"{self.kernel}: {self.registers} registers x {self.block_threads} threads = "
                f"{self.block_registers:,} of {REGISTERS_PER_BLOCK:,}{spills}, {self.static_smem:,} bytes static "
                f"shared memory: {verdict}")


def launch_check(kernel: str, block_threads: int, resources: Resources) -> LaunchCheck:
    return LaunchCheck(kernel, block_threads, resources.registers, resources.spill_stores + resources.spill_loads,
                       resources.static_smem)
