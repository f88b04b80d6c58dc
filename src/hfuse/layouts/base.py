"""What a layout decides: where each part's threads sit, what a part's ``return`` does,
how many blocks the fused grid has, its own rules, and the fused kernel's dispatch code.

A layout is a value: equal layouts (same kind, same parameters) are the same candidate.
Plans and configs write it as text, its ``spec`` (``horizontal``, ``dynamic:2:1``), which
``hfuse.layouts.layout_of`` reads back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from ..codegen.signature import PartSignature
from ..errors import HFuseError
from ..partition import Partition, Placement
from ..registers import RegisterPolicy
from ..spec import Dim3, KernelSpec


@dataclass(frozen=True)
class Proposal:
    """A fusion a layout asks the tuner to measure: its layout and each kernel's block."""

    layout: "Layout"
    blocks: tuple[Dim3, ...]
    label: str = ""
    """Its name in tables (empty: described from the fusion)."""
    registers: bool = False
    """Also try it under register policies (caps, per-part budgets)."""


@dataclass(frozen=True)
class Layout:
    name: ClassVar[str]
    description: ClassVar[str]
    title: ClassVar[str]
    """Its name in reports and tables ("vertical fusion")."""
    placement: ClassVar[Placement]
    """Where the parts' threads sit in the fused block."""
    return_exits: ClassVar[bool]
    """A part's ``return`` may leave the kernel: no later part runs on that thread."""
    blocks_add_up: ClassVar[bool]
    """The fused grid has the parts' blocks one after another (else as many as the largest
    grid): what ``codegen.launcher``'s packing and C++ launch helper count."""
    per_part_registers: ClassVar[bool] = False
    """Parts own whole warpgroups of every block, so each may set its register budget."""
    suffix: ClassVar[str]
    """Ends the fused kernel's default name (``hist_maxpool__hfused``)."""
    grid_note: ClassVar[str]
    """How the fused grid maps to the parts' blocks, for the fused file's header."""
    balances_grids: ClassVar[bool] = False
    """Parts share each fused block, so the tuner also tries grids that make them finish together."""
    keeps_block_whole: ClassVar[bool] = False
    """A fused block runs one whole block of one kernel, on its first threads, the others
    gone: code that reads the raw ``threadIdx`` or syncs the whole block stays correct."""
    refined_around: ClassVar[bool] = False
    """The tuner searches around this layout's best candidate (its neighbours, balanced grids)."""

    @property
    def spec(self) -> str:
        """The layout as text: its name, then its parameters (``layout_of`` reads it back)."""
        return ":".join([self.name, *self.parameters()])

    def parameters(self) -> list[str]:
        """The layout's parameters as text, in ``spec`` order (none for most layouts)."""
        return []

    @classmethod
    def parse(cls, parameters: list[str]) -> "Layout":
        """The layout of this kind with ``parameters`` (from ``spec``)."""
        if parameters:
            raise HFuseError(f"the {cls.name} layout takes no parameters (got '{':'.join(parameters)}')")
        return cls()

    def propose(self, specs: Sequence[KernelSpec], *, fused_threads: int | None = None,
                granularity: int = 128) -> list[Proposal]:
        """The fusions of this kind the tuner measures first: by default every kernel at its
        own block, in this layout."""
        return [Proposal(self, tuple(s.block for s in specs))]

    def neighbours(self, blocks: tuple[Dim3, ...], registers: RegisterPolicy | None, specs: Sequence[KernelSpec],
                   *, granularity: int = 32, radius: int = 1) -> list[tuple[Dim3, ...]]:
        """Blocks next to a winner's (``granularity`` threads moved, up to ``radius`` steps),
        for the tuner to refine it (none by default)."""
        return []

    def variants(self, parts: int, fused_threads: int) -> list["Layout"]:
        """Layouts of this kind next to this one (other ratios, other mixes), for the tuner
        to try around a winner of this kind (none by default)."""
        return []

    def grid_limit(self, parts: int, sm_count: int | None) -> int | None:
        """The most blocks the fused grid should have on a GPU of ``sm_count`` SMs (None: as
        many as ``blocks_add_up`` says; a persistent layout runs a few per SM)."""
        return None

    def blocks_per_sm(self, parts: int) -> int | None:
        """Persistent blocks per SM (None: the grid is not sized by the GPU)."""
        return None

    def validate(self, partition: Partition) -> None:
        """Raises ``HFuseError`` for a partition this layout cannot run correctly."""

    def emit(self, name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str],
             launch_bounds: str, budgets: tuple[tuple[int, ...], int] | None = None) -> str:
        """The ``__global__`` kernel: ``budgets`` are each part's registers and the entry
        count (``setmaxnreg``), only where ``per_part_registers``."""
        raise NotImplementedError
