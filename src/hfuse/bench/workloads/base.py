"""A benchmark kernel's workload: how to make its inputs at a size, and which sizes to sweep."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...launch import KernelLaunch
from ...spec import Dim3


@dataclass(frozen=True)
class Workload:
    name: str
    make: Callable[..., KernelLaunch]
    """make(size, *, block=None, seed=0, small=False) -> KernelLaunch (needs CuPy and a GPU)."""
    default_size: int
    sweep: tuple[int, ...]
    default_block: Dim3
    tunable: bool
    size_meaning: str
    """What the size parameter counts (e.g. 'channels C of (1, C, 2560, 1000)')."""
    test_sizes: tuple[int, ...] = field(default=())
    """Two small sizes for the GPU correctness checks."""
