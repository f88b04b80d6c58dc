"""Fused-kernel layouts: how the parts share the fused kernel's blocks and threads.

One module per layout, each owning its rules (``Layout``) and its dispatch code:

- ``horizontal``: every fused block runs one block of every part, side by side on
  disjoint thread ranges (the paper's horizontal fusion);
- ``vertical``: every fused block runs one block of every part, one after another on
  the same threads (the paper's baseline);
- ``interblock``: every fused block runs one block of one part; the parts' blocks follow
  each other in the fused grid (block ranges), each part keeping its own block shape
  inside the largest (as ML compilers' combo kernels do);
- ``interleaved``: the same, with the parts taking turns along the fused grid (round robin).

The layout's name is what plans, configs and the command line write (``strategy``).
"""
from __future__ import annotations

from ..errors import HFuseError
from ..transform.partition import Strategy
from .base import Layout
from .horizontal import HORIZONTAL
from .interblock import INTERBLOCK
from .interleaved import INTERLEAVED
from .vertical import VERTICAL

LAYOUTS: dict[str, Layout] = {layout.name: layout for layout in (HORIZONTAL, VERTICAL, INTERBLOCK, INTERLEAVED)}


def layout_of(name: Strategy | str) -> Layout:
    """The layout called ``name``; an unknown name is an ``HFuseError`` listing the known ones."""
    try:
        return LAYOUTS[name]
    except KeyError:
        raise HFuseError(f"unknown strategy '{name}' (known: {', '.join(LAYOUTS)})") from None


__all__ = ["LAYOUTS", "Layout", "layout_of"]
