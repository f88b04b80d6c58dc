"""What every rewrite of one fused part needs to know."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..frontend.resolve import Resolver
from .program_functions import Helpers

CTX = "hf_ctx"
"""Name of the hidden per-part context parameter (its type is ``hfuse_ctx``)."""


@dataclass(frozen=True)
class BoundParameter:
    """A kernel's template parameter that an instance binds to a block-reading type."""

    name: str
    """The parameter (``Op``)."""
    argument: str
    """What the instance gives it, as written (``Square<float>``)."""
    key: str
    """The type's key (``Square``)."""


HelperConstant = tuple[str, int, str, int]
"""(file, line of a helper's definition, an expression it writes without whitespace, its value)."""


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
    resolver: Resolver = field(default_factory=Resolver, compare=False)
    """Resolves calls in the part's code to the program's functions."""
    known: frozenset[str] = frozenset()
    """Keys of every function of the program (calls resolve among these)."""
    context_types: frozenset[str] = frozenset()
    """Keys of structs whose members read the block: the part uses its own copies."""
    symbols: frozenset[str] = frozenset()
    """Keys of ``__constant__``/``__device__`` symbols the part has its own copy of."""
    offset: int = 0
    """Where the part's threads start in the fused block (a multiple of 32)."""
    block_threads: int = 0
    """Threads of the part's own block (``threads`` is that, padded to warps)."""
    functions: Helpers = field(default_factory=Helpers, compare=False)
    """What the early-exit rewrite may know of the program's functions (``functions_of``)."""
    kernel_constants: tuple[tuple[str, int], ...] = ()
    """The kernel's integer template parameters and their values in this instance
    (``kTile`` = 32 of ``layer_norm<32>``): constants of the kernel's own definition."""
    kernel_at: tuple[str, int] = ("", 0)
    """(file, line) of the kernel's definition, which ``kernel_constants`` belong to."""
    helper_constants: tuple[HelperConstant, ...] = ()
    """What Clang evaluated of the helpers' tile sizes (``instance_constants.helper_questions``)."""
    static_members: frozenset[str] = frozenset()
    """Keys of static member functions of context types that read the block: each part's
    copy of the type declares them with the part's context first, as a helper's copy takes
    it (``Warp__hf2::lane(hf_ctx)``), and every call passes it."""
    made_parameters: tuple[BoundParameter, ...] = ()
    """The kernel's template parameters this instance binds to a context type: objects of
    them the kernel's body makes (``Op op;``) are given the part's view of the block
    (``context_types.made_parameters``)."""
    context_type_aliases: tuple[tuple[str, str], ...] = ()
    """(alias, key): member aliases of context types (``context_types.type_aliases``)."""
    constructed_types: frozenset[str] = frozenset()
    """Keys of context types that declare constructors taking arguments: each copy's
    constructors take the part's context first, and so does every object made with
    arguments (``LaneScale op(hf_ctx, s)``)."""
    host_made: frozenset[str] = frozenset()
    """Keys of context types of which the kernel takes an object from the host (by value):
    their copies are made from a twin of the host's layout."""
    whole_block: bool = False
    """The part runs alone in its fused block (``Layout.keeps_block_whole``): its barriers are
    the block's own (``partition.WHOLE_BLOCK_BARRIER``) and its early returns stay as written."""
    return_exits: bool = False
    """A ``return`` from the part's body ends the thread (horizontal fusion: nothing runs
    after the body), so the early-exit rewrite may let threads exit (see early_exit.py)."""

    @property
    def context_type_names(self) -> frozenset[str]:
        return frozenset(key.split("::")[-1] for key in self.context_types)

    def clone_name(self, helper: str) -> str:
        return f"{helper}__hf{self.index}"

    @property
    def barrier_args(self) -> str:
        return f"{self.barrier_id}, {self.threads}"
