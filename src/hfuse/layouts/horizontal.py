"""Horizontal fusion: each part owns a thread range of every fused block."""
from __future__ import annotations

from ..codegen.kernel import horizontal_kernel
from .base import Layout

HORIZONTAL = Layout(
    name="horizontal",
    description="one block of every part per fused block, on disjoint thread ranges",
    return_exits=True,
    blocks_add_up=False,
    emit=horizontal_kernel,
)
