"""The kernel model: what the front end knows of a source file.

Functions keep their own text (after macro expansion); transformations re-parse that
text and edit it, so the model stays small and every rewrite is a pure function of text.
``line`` fields are 1-based lines in the user's file (macro expansion keeps lines).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping, Sequence

from .constant import evaluate

PTX_BLOCK = re.compile(r"\b(bar|barrier)(?:\.cta)?\.(sync|arrive|red)\b"
                       r"|%(tid|ntid|ctaid|nctaid|warpid|dynamic_smem_size|total_smem_size|aggr_smem_size)\b")
"""Inline PTX that synchronises the block or reads its special registers (``bar.sync``, and
``barrier.cta.sync`` as PTX 8 also spells it; ``%tid.x``, the warp's place in the block, the
block's shared memory sizes); not ``membar`` fences, ``mbarrier`` objects nor ``bar.warp.sync``.
Group 3 is the register."""

BLOCK_SYNC = "synchronises the block"
WHOLE_BLOCK_READS = frozenset({"reads threadIdx", "reads %tid", "reads %warpid", BLOCK_SYNC})
"""What code hfuse does not rewrite (a kept header's, inline PTX) may read or do and stay as the
kernel saw it where a fused block runs one whole block of it on its first threads."""
THREAD_INDEX_READS = frozenset({"reads threadIdx", "reads %tid"})
"""Of ``WHOLE_BLOCK_READS``, the thread's index: as the kernel saw it only if its block is 1-D
too (those layouts' fused block is: ``threadIdx.y`` is 0 there, ``threadIdx.x`` the linear index)."""
OWN_BLOCK_READS = frozenset({"reads blockDim", "reads %ntid"})
"""What stays too where that fused block is also exactly the kernel's own block (PyTorch's
``BlockReduceSum`` counts its warps from ``blockDim.x``)."""


def ptx_block_reads(text: str) -> list[str]:
    """What inline PTX does with the block (``PTX_BLOCK``), in the words of ``WHOLE_BLOCK_READS``:
    ``"reads %tid"``, ``"synchronises the block"``; each once, in order."""
    return list(dict.fromkeys(f"reads %{m.group(3)}" if m.group(3) else BLOCK_SYNC for m in PTX_BLOCK.finditer(text)))


PTX_ENDS_THREAD = re.compile(r"(?<![\w.$%])(?:exit|ret(?:\.uni)?)\s*;")
"""Inline PTX that ends the thread or returns from the function (``exit;``, ``@p ret;``)
outside the C++ control flow hfuse rewrites: fused, the thread would skip what runs
after its part (another part, its next block) and leave its part's barrier short."""

PTX_REGISTERS = re.compile(r"\bsetmaxnreg\b")
"""Inline PTX that moves registers between a warpgroup and its block's pool (``setmaxnreg``,
CUTLASS's ``warpgroup_reg_alloc``): it assumes the kernel's own launch (its register count
and block) and aligned warpgroups of its own, and an increase waits until the pool has the
registers, which a fused block's other parts may hold: it may hang."""
REGISTERS_SET = "sets its warpgroup's registers (setmaxnreg)"

PTX_WARPGROUP = re.compile(r"\bwgmma\.")
"""Inline PTX that runs on a warpgroup (``wgmma.mma_async``, ``wgmma.fence``...): four
warps whose first is a multiple of four in the block. Placed at another thread offset of
a fused block, a part's warpgroups are not the hardware's."""
WARPGROUP_RUN = "runs on warpgroups (wgmma)"

PTX_CLUSTER = re.compile(r"%n?cluster|\bbarrier\.cluster\b|\bmapa\b|multicast::cluster\b")
"""Inline PTX that reads a thread block cluster's registers (``%cluster_ctarank``), waits at
its barrier, maps another block's shared memory (``mapa``) or multicasts to the cluster.
Not the ``.shared::cluster`` state space alone: TMA copies (``cp.async.bulk.tensor...
.shared::cluster``) name it for the block's own shared memory in every launch."""
CLUSTER_READ = "works on the thread block cluster"

FunctionKind = Literal["global", "device", "host"]
Scope = tuple[str, ...]
"""Enclosing namespaces, outermost first; ``""`` stands for an anonymous namespace and
``"inline v2"`` for an inline one (``inline namespace v2 {``)."""
INLINE = "inline "


def scope_names(scope: Scope) -> tuple[str, ...]:
    """The namespaces of ``scope`` that a name's key spells: anonymous and inline ones are
    transparent (a library's ``lib::v2::warp`` is ``lib::warp``, as C++ finds it)."""
    return tuple(s for s in scope if s and not s.startswith(INLINE))


def qualify(scope: Scope, name: str) -> str:
    """The name as it is looked up from file scope (anonymous and inline namespaces are transparent)."""
    return "::".join([*scope_names(scope), name])


def namespace_wrap(scope: Scope, text: str) -> str:
    """``text`` inside its namespaces again (``namespace a { inline namespace b { ... } }``)."""
    for name in reversed(scope):
        head = f"inline namespace {name.removeprefix(INLINE)}" if name.startswith(INLINE) else f"namespace {name}"
        text = f"{head} {{\n{text.rstrip()}\n}}  // namespace {name.removeprefix(INLINE) or '(anonymous)'}"
    return text


@dataclass(frozen=True)
class Param:
    """One parameter: its declaration text and the name declared in it."""

    text: str
    name: str | None
    name_start: int = -1
    """Offset of ``name`` in ``text`` (-1 when unnamed)."""

    @property
    def declaration(self) -> str:
        """The text without a default argument (``int *p = NULL`` -> ``int *p``): wherever
        hfuse re-declares a parameter, more parameters follow it."""
        depth = 0
        for i, ch in enumerate(self.text):
            depth += ch in "<([{"
            depth -= ch in ">)]}"
            if ch == "=" and depth == 0:
                return self.text[:i].rstrip()
        return self.text

    def renamed(self, new_name: str) -> str:
        if self.name is None or self.name_start < 0:
            return f"{self.declaration} {new_name}"
        end = self.name_start + len(self.name)
        return self.text[: self.name_start] + new_name + self.declaration[end:]


INITIALISERS = "(default member initialisers)"
"""The name of the member function that stands for a class's default member initialisers
(``extract._member_initialisers``): no code can name it."""


@dataclass(frozen=True)
class Function:
    """A function definition at file scope: a ``__global__`` kernel or a helper."""

    name: str
    kind: FunctionKind
    file: Path
    line: int
    text: str
    """The whole definition, template header included."""
    params: tuple[Param, ...]
    template_header: str = ""
    """``template <typename T, int N>`` or empty."""
    template_params: tuple[str, ...] = ()
    template_defaults: tuple[str | None, ...] = ()
    """Each template parameter's default argument as written (``T`` of ``class U = T``), or None."""
    template_pack: str | None = None
    """The last template parameter when it is a pack (``Ins`` of ``typename... Ins``)."""
    launch_bounds: tuple[str, ...] | None = None
    """``__launch_bounds__``'s arguments as written (``"(BM * BN) / (TM * TN)"``, ``"1"``)."""
    cluster_dims: str | None = None
    """``__cluster_dims__``'s arguments as written (``"2, 1, 1"``): its blocks run as clusters."""
    max_registers: str | None = None
    """``__maxnreg__``'s argument as written: a register cap for the kernel alone."""
    extern_c: bool = False
    scope: Scope = ()
    owner: str | None = None
    """The struct or class a member function is defined in (None at namespace scope)."""
    hidden_friend: bool = False
    """A friend defined in its class (``friend __device__ int lane(V v) {...}``): no member,
    and no ordinary lookup finds it, only argument-dependent lookup; keyed like a member
    (``V::lane``) so that nothing takes it for the namespace's function of its name."""
    defined_outside: bool = False
    """A member defined outside its class (``__device__ float Tile::swap(int j) const {...}``):
    a file-scope item of its own, and one of its class item's ``members`` too."""

    @property
    def is_template(self) -> bool:
        return bool(self.template_header)

    @property
    def is_explicit_specialisation(self) -> bool:
        """``template <> ... k<float>(...)``: the definition of one instance of template ``k``."""
        return "".join(self.template_header.split()) == "template<>"

    def complete_template_args(self, given: Sequence[str]) -> tuple[str, ...]:
        """``given`` followed by the defaults of the parameters left out, each default's
        mention of an earlier parameter replaced by that parameter's argument
        (``k<half, 1>`` of ``template <class T, int R, class U = T>`` is ``k<half, 1, half>``).
        As given when a parameter left out has no default; all the defaults when none is
        given and every parameter has one (``quantize_rows<>``)."""
        missing = self.template_defaults[len(given):]
        if not missing or any(d is None for d in missing):
            return tuple(given)  # nothing left out, or a parameter left out has no default
        args = list(given)
        for default in missing:
            mapping = dict(zip(self.template_params, args))
            args.append(re.sub(r"\b[A-Za-z_]\w*\b", lambda m: mapping.get(m.group(), m.group()), default))
        return tuple(args)

    def max_threads(self, template_args: Sequence[str] = (), known: Mapping[str, int] | None = None) -> int | None:
        """The block size ``__launch_bounds__`` allows for this instance (None: no bound, or
        one hfuse cannot evaluate); ``known``: values of names and expressions already found
        (``PreparedKernel.constants``)."""
        if not self.launch_bounds:
            return None
        names = dict(known or {})
        for param, arg in zip(self.template_params, template_args):
            value = evaluate(arg)
            if value is not None:
                names[param] = value
        return evaluate(self.launch_bounds[0], names)

    @property
    def key(self) -> str:
        """Its qualified name: how calls resolve to it (overloads share a key)."""
        return qualify(self.scope, f"{self.owner}::{self.name}" if self.owner else self.name)


@dataclass(frozen=True)
class TopLevelItem:
    """One file-scope construct, kept as text."""

    kind: Literal["include", "function", "declaration", "using", "other"]
    text: str
    names: tuple[str, ...]
    file: Path
    line: int
    function: Function | None = None
    scope: Scope = ()
    device: bool = True
    """Whether device code can use it: False for host functions and host variables."""
    references: frozenset[str] = frozenset()
    """Names it mentions (identifiers, types, qualified names as written)."""
    members: tuple[Function, ...] = ()
    """Member functions defined in a struct or class body (for analysis)."""
    classes: tuple["ClassShape", ...] = ()
    """What unqualified lookup from a member function needs of each class it defines."""
    nominates: str | None = None
    """``using namespace X;`` names X; ``namespace A = X;`` names X (kind ``using``)."""

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(qualify(self.scope, n) for n in self.names)


FUNCTION_POINTER = "(*)"
"""A declaration's type, as ``ClassShape.field_types`` records it, when its declarator makes it
a pointer or reference to a function: a call through it runs what it holds."""


@dataclass(frozen=True)
class ClassShape:
    """What a member function's unqualified names may find in its class (``extract._classes``)."""

    name: str
    bases: tuple[str, ...] = ()
    """The bases lookup searches, as written: a dependent one (``Base<T>``) is left out, as C++ does."""
    fields: tuple[str, ...] = ()
    """Its data members (a functor ``lane`` hides a namespace's function ``lane`` in its members)."""
    template_params: tuple[str, ...] = ()
    """The template parameters its members see (its own and enclosing templates'): ``F(x)`` with
    ``template <float (*F)(float)>`` calls what an instance passes, not a macro."""
    field_types: tuple[str, ...] = ()
    """Each data member's type as written, in ``fields``' order; ``FUNCTION_POINTER`` for one
    whose declarator makes it a pointer or reference to a function (``float (*op)(float)``)."""


@dataclass(frozen=True)
class ExternSharedArray:
    """A file-scope ``extern __shared__ T name[];`` (dynamic shared memory)."""

    name: str
    element_type: str


@dataclass(frozen=True)
class UserMacro:
    """A macro the user's own files define (not nvcc's, not ``-D``, not a system header's), as
    it stands at the end of the file: the fused file may keep its uses as written
    (``codegen/macros.py``)."""

    name: str
    params: tuple[str, ...] | None
    """Its parameters (``SQR(x)``: ``("x",)``); None for an object-like macro."""
    value: str
    file: Path
    line: int

    @property
    def definition(self) -> str:
        head = self.name if self.params is None else f"{self.name}({', '.join(self.params)})"
        return f"#define {head} {self.value}".rstrip()

    @property
    def include_guard(self) -> bool:
        """``#define _KMEANS_KERNEL_CU_`` under its ``#ifndef``: empty, and named after its file
        (with the file's extension, or none) or ending as guards do; no header consults it."""
        if self.value.strip() or self.params is not None:
            return False
        squeezed, stem = (re.sub(r"[^a-z0-9]", "", text.lower()) for text in (self.name, self.file.stem))
        named_after_file = bool(stem) and squeezed.startswith(stem) and squeezed[len(stem):] in _GUARD_ENDINGS
        return named_after_file or re.search(r"_(?:H|HPP|CUH|INCLUDED)_*$", self.name) is not None


_GUARD_ENDINGS = frozenset({"", "h", "hh", "hpp", "cu", "cuh", "inc", "included", "hincluded", "cuhincluded"})


@dataclass
class SourceFile:
    path: Path
    text: str
    """The macro-expanded text (user headers inlined)."""
    items: list[TopLevelItem] = field(default_factory=list)
    headers: tuple[Path, ...] = ()
    """User headers read while preprocessing (their text is part of ``text``)."""
    kept_includes: tuple[str, ...] = ()
    """``#include`` lines of toolkit and system headers, left for the compiler."""
    kept_preamble: tuple[str, ...] = ()
    """Those lines with the user's macros they are read with (``PreprocessedSource.kept_preamble``):
    what Clang precompiles for the file."""
    library_macros: frozenset[str] = frozenset()
    """The user's macros above those lines that a library's headers mention (``PreprocessedSource.library_macros``)."""
    library_dirs: tuple[Path, ...] = ()
    """The installed libraries' folders its kept headers were searched in (``preprocess.library_header_dirs``)."""
    value_macros: tuple[tuple[str, str], ...] = ()
    """Macros of those headers the code uses as plain values, known and left as written
    (``PreprocessedSource.value_macros``)."""
    arch_macros: tuple[str, ...] = ()
    """``__CUDA_ARCH__``-family macros its text depends on (``PreprocessedSource.arch_macros``)."""
    arch: str = ""
    """The architecture it was preprocessed for (``sm_90a``)."""
    user_macros: tuple[UserMacro, ...] = ()
    """The macros its own files define (``PreprocessedSource.user_macros``)."""
    instances: dict[str, str] = field(default_factory=dict)
    """Template arguments the request wrote for this file's kernels -> as the compiler reads
    them, the file's macros expanded (``QK4_0`` -> ``32``): what every later step uses."""

    @property
    def functions(self) -> list[Function]:
        return [i.function for i in self.items if i.function is not None]

    @property
    def kernels(self) -> dict[str, Function]:
        """Kernels by qualified name (``mylib::scale``; plain name at file scope); explicit
        specialisations are instances of theirs (``specialisation.py``)."""
        return {f.key: f for f in self.functions if f.kind == "global" and not f.is_explicit_specialisation}
