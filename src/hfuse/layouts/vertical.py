"""Vertical fusion: each fused block runs every part's block in turn on the same threads."""
from __future__ import annotations

from ..codegen.kernel import vertical_kernel
from .base import Layout

VERTICAL = Layout(
    name="vertical",
    description="one block of every part per fused block, one part after another",
    return_exits=False,
    blocks_add_up=False,
    emit=vertical_kernel,
)
