"""Inputs and launch configurations of the nine benchmark kernels.

Each kernel has a ``Workload``: a function from a size parameter (and a block shape)
to a ``KernelLaunch`` on fresh random device inputs, the default size (about 1-3 ms
alone on an H100) and the sweep of sizes used for the execution-time-ratio experiments.
"""
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


def registry() -> dict[str, Workload]:
    """All nine workloads by kernel name (lower case: maxpool, batchnorm, ..., blake2b)."""
    from . import crypto, dl

    return {**dl.WORKLOADS, **crypto.WORKLOADS}
