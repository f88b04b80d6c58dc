"""How one kernel is launched on real data: the tuner's and the benchmarks' input.

A ``KernelLaunch`` is Kernel Tuner's idea of a kernel description in one object: the
kernel (``KernelSpec``), how its grid follows from its block (a tunable kernel that
changes its block size must still cover the same work), its arguments, its dynamic
shared memory, and which arguments are outputs and how to compare them.

Arguments are CuPy arrays (device memory) or NumPy scalars (``np.int32(5)``,
``np.float32(0.5)``): the scalar's dtype is the C type the kernel receives. Nothing
here imports CuPy, so it can be built and inspected on a machine without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Sequence

from .spec import Dim3, KernelSpec

Compare = Literal["exact", "unordered", "close"]


@dataclass(frozen=True)
class Output:
    """An argument the kernel writes.

    ``exact``: bit-equal; ``unordered``: equal as multisets (results appended by
    atomics, such as a miner's list of found nonces); ``close``: within ``rtol``/``atol``
    (only where the arithmetic really is order-dependent, e.g. float atomics).
    """

    index: int
    compare: Compare = "exact"
    rtol: float = 0.0
    atol: float = 0.0


GridRule = Callable[[Dim3], Dim3]
SmemRule = Callable[[Dim3], int]


@dataclass
class KernelLaunch:
    """One kernel, its inputs, and how to launch it for a given block shape.

    ``grid`` is either a fixed ``Dim3`` (for kernels whose grid is free, e.g. grid-stride
    loops: the tuner may then also change it, see ``grid_free``) or a function from the
    block shape to the grid. ``dynamic_smem`` likewise is bytes or a function of the block.
    """

    kernel: KernelSpec
    args: Sequence[Any]
    outputs: Sequence[Output]
    grid: Dim3 | GridRule
    dynamic_smem: int | SmemRule = 0
    grid_free: bool = False
    label: str = ""
    source: str | None = field(default=None, repr=False)
    """CUDA text of the kernel's file when it is not on disk (tests); else read from kernel.file."""

    def grid_for(self, block: Dim3 | None = None) -> Dim3:
        block = block or self.kernel.block
        return self.grid(block) if callable(self.grid) else Dim3.of(self.grid)

    def smem_for(self, block: Dim3 | None = None) -> int:
        block = block or self.kernel.block
        return int(self.dynamic_smem(block)) if callable(self.dynamic_smem) else int(self.dynamic_smem)

    def with_block(self, block: Dim3 | int | str | tuple[int, ...]) -> "KernelLaunch":
        return replace(self, kernel=self.kernel.with_block(block))

    def with_grid(self, grid: Dim3 | GridRule) -> "KernelLaunch":
        return replace(self, grid=grid)

    @property
    def name(self) -> str:
        return self.label or self.kernel.name
