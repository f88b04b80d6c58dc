"""Inputs and launch configurations of the nine benchmark kernels, and of the hybrid
serving batch's two attention kernels (``prefill``, ``decode``).

Each kernel has a ``Workload``: a function from a size parameter (and a block shape)
to a ``KernelLaunch`` on fresh random device inputs, the default size (about 1-3 ms
alone on an H100) and the sweep of sizes used for the execution-time-ratio experiments.
"""
from __future__ import annotations

from .base import Workload

__all__ = ["Workload", "registry"]


def registry() -> dict[str, Workload]:
    """Every workload by kernel name (lower case: maxpool, batchnorm, ..., blake2b, prefill, decode)."""
    from . import attention, crypto, dl

    return {**dl.WORKLOADS, **crypto.WORKLOADS, **attention.WORKLOADS}
