"""What a layout decides: what a part's ``return`` does, how many blocks the fused grid
has, and the fused kernel's dispatch code. (Where each part's threads sit is still the
partition's, ``transform.partition``: side by side for horizontal, from thread 0 else.)"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..codegen.signature import PartSignature
from ..transform.partition import Partition

Emitter = Callable[[str, Partition, list[PartSignature], list[str], str], str]
"""``(name, partition, signatures, body names, launch bounds) -> the __global__ kernel``."""


@dataclass(frozen=True)
class Layout:
    name: str
    description: str
    return_exits: bool
    """A part's ``return`` may leave the kernel: no later part runs on that thread."""
    blocks_add_up: bool
    """The fused grid has the parts' blocks one after another (else as many as the largest
    grid): what ``codegen.launcher``'s packing and C++ launch helper count."""
    emit: Emitter
