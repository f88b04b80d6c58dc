"""Fused-kernel layouts: how the parts share the fused kernel's blocks and threads.

One module per layout, each owning its rules (``Layout``) and its dispatch code:

- ``horizontal``: every fused block runs one block of every part, side by side on
  disjoint thread ranges (the paper's horizontal fusion);
- ``vertical``: every fused block runs one block of every part, one after another on
  the same threads (the paper's baseline);
- ``interblock``: every fused block runs one block of one part; the parts' blocks follow
  each other in the fused grid (block ranges), each part keeping its own block shape
  inside the largest (as ML compilers' combo kernels do);
- ``interleaved``: the same, with the parts taking turns along the fused grid (round robin);
- ``dynamic``: the same, with each block choosing its part at run time from its SM's
  tickets, so every SM runs the parts in a ratio (``dynamic:2:1``);
- ``persistent``: a few persistent blocks per SM in a mix of the parts
  (``persistent:2:2``), each looping over its part's blocks, then the others';
- ``spatial``: the same with the SMs split between two kernels (``spatial:30``).

Plans, configs and the command line write a layout as its ``spec`` (``dynamic:2:1``).
"""
from __future__ import annotations

from ..errors import HFuseError
from .base import Layout, Proposal
from .dynamic import DYNAMIC, Dynamic
from .horizontal import HORIZONTAL, Horizontal
from .interblock import INTERBLOCK, Interblock
from .interleaved import INTERLEAVED, Interleaved
from .persistent import PERSISTENT, Persistent
from .spatial import SPATIAL, Spatial
from .vertical import VERTICAL, Vertical

LAYOUTS: dict[str, Layout] = {layout.name: layout for layout in (HORIZONTAL, VERTICAL, INTERBLOCK, INTERLEAVED, DYNAMIC,
                                                                 PERSISTENT, SPATIAL)}
"""Each kind of layout by name, with its default parameters: the registry. A new layout is
one module and one entry here; the tuner searches every kind in this order."""


def layout_of(spec: "Layout | str") -> Layout:
    """The layout written ``spec`` (``horizontal``, ``dynamic:2:1``; a ``Layout`` is
    returned as is); an unknown name is an ``HFuseError`` listing the known ones."""
    if isinstance(spec, Layout):
        return spec
    name, *parameters = str(spec).strip().split(":")
    try:
        kind = type(LAYOUTS[name])
    except KeyError:
        raise HFuseError(f"unknown layout '{spec}' (known: {', '.join(LAYOUTS)})") from None
    return kind.parse(parameters)


__all__ = [
    "DYNAMIC", "HORIZONTAL", "INTERBLOCK", "INTERLEAVED", "LAYOUTS", "PERSISTENT", "SPATIAL", "VERTICAL",
    "Dynamic", "Horizontal", "Interblock", "Interleaved", "Layout", "Persistent", "Proposal", "Spatial", "Vertical", "layout_of",
]
