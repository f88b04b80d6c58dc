"""How a set of kernels is fused: one value from request to plan.

A ``Fusion`` is made where it is decided (a ``fuse`` call from its arguments, the
tuner's search from its candidates, a plan from its JSON) and handed down unchanged: the
prepared unit emits the fused kernel for it (``PreparedUnit.emit``), the tuner measures
it under a label (``Candidate``), and the plan keeps the one that won.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .layouts import HORIZONTAL, Layout, layout_of
from .partition import fused_block_threads, padded
from .registers import RegisterPolicy, register_policy_from_dict
from .spec import Dim3


@dataclass(frozen=True)
class Fusion:
    blocks: tuple[Dim3, ...]
    """Each kernel's block inside the fused kernel (for horizontal fusion, the partition)."""
    layout: Layout = HORIZONTAL
    registers: RegisterPolicy | None = None
    """How the fused kernel's registers are bounded (None: by its block only)."""
    grids: tuple[Dim3 | None, ...] | None = None
    """Per-kernel grid to launch with instead of the launch's own (grid-stride kernels only,
    balanced so the parts of a fused block finish together); None keeps every launch's grid."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(Dim3.of(b) for b in self.blocks))
        object.__setattr__(self, "layout", layout_of(self.layout))
        if self.grids is not None:
            object.__setattr__(self, "grids", tuple(None if g is None else Dim3.of(g) for g in self.grids))

    @property
    def fused_threads(self) -> int:
        """Threads of the fused block (a 120-thread block occupies 128)."""
        return fused_block_threads([padded(b.size) for b in self.blocks], self.layout.placement)

    def describe(self) -> str:
        """Short text for tables and labels: ``hfuse 256+256 cap=b3``, ``vertical``, ``dynamic:2:1``."""
        text = self.layout.spec if self.layout != HORIZONTAL else "hfuse " + "+".join(str(b) for b in self.blocks)
        if self.registers is not None:
            text += f" cap={self.registers.label}"
        if self.grids is not None and any(g is not None for g in self.grids):
            text += " grid=" + ",".join("-" if g is None else str(g) for g in self.grids)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout.spec,
            "blocks": [list(b.as_tuple()) for b in self.blocks],
            "register_cap": self.registers.to_dict() if self.registers else None,
            "grids": None if self.grids is None else [None if g is None else list(g.as_tuple()) for g in self.grids],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Fusion":
        grids = data.get("grids")
        return cls(
            blocks=tuple(Dim3.of(b) for b in data["blocks"]),
            layout=layout_of(data.get("layout", data.get("strategy", "horizontal"))),  # "strategy": older plans
            registers=register_policy_from_dict(data.get("register_cap")),
            grids=None if grids is None else tuple(None if g is None else Dim3.of(g) for g in grids),
        )
