"""What every rewrite of one fused part needs to know."""
from __future__ import annotations

from dataclasses import dataclass

CTX = "hf_ctx"
"""Name of the hidden per-part context parameter (its type is ``hfuse_ctx``)."""


@dataclass(frozen=True)
class PartContext:
    index: int
    kernel: str
    barrier_id: int | None
    threads: int
    specialised: frozenset[str]
    """Helpers that get a per-part copy (they read built-ins, sync, ...)."""
    extern_shared: tuple[tuple[str, str], ...] = ()
    """File-scope ``extern __shared__`` arrays: (name, element type)."""

    def clone_name(self, helper: str) -> str:
        return f"{helper}__hf{self.index}"

    @property
    def barrier_args(self) -> str:
        return f"{self.barrier_id}, {self.threads}"
